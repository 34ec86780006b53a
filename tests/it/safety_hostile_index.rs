//! git's index is a file that anything with write access to `.git` can craft, and a
//! tracked directory can be replaced by a symlink in ordinary use. Neither may lead a
//! save out of the worktree, nor make it allocate what the file's header claims.

use crate::common;
use common::Repo;
use serde_json::json;

/// A version-2 index holding one entry per name (mode 100644, no object), as git writes
/// them: fixed stat fields, a 20-byte object name, flags with the name's length, the name
/// and 1 to 8 NULs of padding; then a trailer (not checked by git-checkpoint).
fn crafted_index(names: &[&[u8]]) -> Vec<u8> {
    let mut index = b"DIRC".to_vec();
    index.extend_from_slice(&2u32.to_be_bytes());
    index.extend_from_slice(&(names.len() as u32).to_be_bytes());
    for name in names {
        let start = index.len();
        let mut stat = [0u8; 40];
        stat[24..28].copy_from_slice(&0o100644u32.to_be_bytes());
        index.extend_from_slice(&stat);
        index.extend_from_slice(&[0u8; 20]);
        index.extend_from_slice(&(name.len() as u16).to_be_bytes());
        index.extend_from_slice(name);
        let len = index.len() - start;
        index.resize(start + (len + 1).next_multiple_of(8), 0);
    }
    index.extend_from_slice(&[0u8; 20]);
    index
}

#[test]
fn index_entries_that_leave_the_worktree_are_never_read() {
    let repo = Repo::new();
    repo.write("a.txt", b"a\n");
    let outside = repo.scratch("outside");
    std::fs::write(outside.join("secret.txt"), b"outside the worktree\n").unwrap();
    let absolute = outside.join("secret.txt");
    std::fs::write(
        repo.git_dir().join("index"),
        crafted_index(&[
            b"../outside/secret.txt",
            std::os::unix::ffi::OsStrExt::as_bytes(absolute.as_os_str()),
            b"a.txt",
        ]),
    )
    .unwrap();
    let saved = repo.save_json(&["-m", "crafted index"]);
    assert_eq!(saved["files"], 1, "{saved}");
    let out = repo.ok(&["show", "@", "--name-status"]);
    assert!(!out.stdout.contains("secret"), "{out}");
    // The checkpoint restores: it holds no name a restore would refuse.
    repo.write("a.txt", b"changed\n");
    repo.ok(&["restore", "@"]);
    assert_eq!(repo.read("a.txt"), b"a\n");
}

#[test]
fn a_tracked_directory_replaced_by_a_symlink_is_not_read_through() {
    let repo = Repo::new();
    repo.write("a.txt", b"a\n");
    repo.write("dir/secret.txt", b"tracked, inside\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-qm", "dir is a directory"]);
    let outside = repo.scratch("outside");
    std::fs::write(outside.join("secret.txt"), b"outside the worktree\n").unwrap();
    repo.remove("dir");
    repo.symlink("dir", &outside);

    let saved = repo.save_json(&["-m", "dir is a symlink"]);
    // a.txt and the symlink: git add -A would report dir/secret.txt deleted.
    assert_eq!(saved["files"], 2, "{saved}");
    let id = saved["id"].as_str().unwrap().to_string();
    let out = repo.ok(&["show", &id, "--name-status"]);
    assert!(!out.stdout.contains("dir/secret.txt"), "{out}");
    // It restores, and nothing outside changed.
    repo.remove("dir");
    repo.write("a.txt", b"changed\n");
    repo.ok(&["restore", &id]);
    assert!(std::fs::symlink_metadata(repo.p("dir"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(
        std::fs::read(outside.join("secret.txt")).unwrap(),
        b"outside the worktree\n"
    );
}

/// An entry count of 0xFFFFFFFF in a short file: every command that reads the index
/// fails with a clear error (or git's), and the agent hook still exits 0.
#[test]
fn an_index_claiming_four_billion_entries_is_a_clear_error() {
    let repo = Repo::new();
    repo.write("a.txt", b"a\n");
    repo.git(&["add", "-A"]);
    let index_path = repo.git_dir().join("index");
    let mut index = std::fs::read(&index_path).unwrap();
    index[8..12].copy_from_slice(&u32::MAX.to_be_bytes());
    std::fs::write(&index_path, &index).unwrap();

    for args in [&["save"][..], &["status"]] {
        let out = repo.run(args);
        assert!(out.signal.is_none(), "{args:?}: {out}");
        assert_eq!(out.code, 1, "{args:?}: {out}");
        assert!(out.stderr.starts_with("error: "), "{args:?}: {out}");
        assert_eq!(out.stderr.trim().lines().count(), 1, "{args:?}: {out}");
    }
    let payload = json!({"session_id": "s", "cwd": repo.dir, "hook_event_name": "Stop"});
    let mut hook = repo.sb.bin_cmd(&repo.dir, &["hooks", "run", "claude"]);
    hook.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = hook.spawn().unwrap();
    std::io::Write::write_all(
        &mut child.stdin.take().unwrap(),
        payload.to_string().as_bytes(),
    )
    .unwrap();
    let done = child.wait_with_output().unwrap();
    assert_eq!(done.status.code(), Some(0), "{done:?}");
}
