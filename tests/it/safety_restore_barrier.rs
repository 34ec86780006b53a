//! A restore's barriers, seen in its system calls (`strace`): every file it wrote and
//! every directory whose entries it changed is durable before the first rename over an
//! old file, and the renames are durable before the final commit clears the restore's
//! marker (docs/design.md, section 4, "Restore"). A restore of few files syncs just
//! those (no `syncfs`, which would wait for other processes' dirty data too); one of
//! many syncs the filesystem once.

use crate::common;
use common::Repo;

/// The calls the barriers are made of, and the renames they must come before.
const CALLS: &[&str] = &[
    "fsync",
    "fdatasync",
    "syncfs",
    "sync",
    "rename",
    "renameat",
    "renameat2",
];

/// One finished system call of an `strace -f -y` trace: its name and the path of its
/// first argument, when that is a descriptor (`-y` shows it as `fd<path>`).
#[derive(Debug)]
struct Call {
    name: String,
    fd_path: Option<String>,
}

/// The calls of `trace` that returned 0, in the order they finished. A call another
/// thread interrupted shows as "<pid> name(args <unfinished ...>" and later as
/// "<pid> <... name resumed>rest"; it is taken where it finished.
fn finished_calls(trace: &str) -> Vec<Call> {
    let mut pending = std::collections::HashMap::new();
    let mut calls = Vec::new();
    for line in trace.lines() {
        let (pid, call) = line.split_once(' ').unwrap_or(("", line));
        let call = call.trim_start();
        if let Some(start) = call.strip_suffix("<unfinished ...>") {
            pending.insert(pid.to_string(), start.to_string());
            continue;
        }
        let whole = match call.strip_prefix("<... ") {
            Some(resumed) => {
                let rest = resumed.split_once(" resumed>").map_or("", |(_, rest)| rest);
                format!("{}{rest}", pending.remove(pid).unwrap_or_default())
            }
            None => call.to_string(),
        };
        if !whole.trim_end().ends_with("= 0") {
            continue;
        }
        let Some((name, args)) = whole.split_once('(') else {
            continue;
        };
        let fd_path = args
            .split_once('<')
            .and_then(|(fd, rest)| fd.chars().all(|c| c.is_ascii_digit()).then_some(rest))
            .and_then(|rest| rest.split_once('>'))
            .map(|(path, _)| path.to_string());
        calls.push(Call {
            name: name.to_string(),
            fd_path,
        });
    }
    calls
}

fn is_rename(call: &Call) -> bool {
    call.name.starts_with("rename")
}

/// Where in `calls` the first sync (`fsync` or `fdatasync`) of the descriptor shown as
/// `path` finished, looking from `from` on.
fn synced_at(calls: &[Call], from: usize, path: &str) -> Option<usize> {
    calls[from..]
        .iter()
        .position(|c| {
            (c.name == "fsync" || c.name == "fdatasync") && c.fd_path.as_deref() == Some(path)
        })
        .map(|i| from + i)
}

#[test]
fn a_small_restore_syncs_each_file_and_directory_it_changed_before_renaming_and_before_finishing() {
    let repo = Repo::new();
    repo.write("a.txt", b"a1\n");
    repo.write("sub/b.txt", b"b1\n");
    repo.write("gone/d.txt", b"d1\n");
    let base = repo.save("base");
    repo.write("a.txt", b"a2\n");
    repo.write("sub/b.txt", b"b2\n");
    std::fs::remove_dir_all(repo.p("gone")).unwrap();
    repo.write("extra.txt", b"added later\n");

    let (out, trace) = repo.traced(CALLS, &["restore", &base]);
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(repo.read("a.txt"), b"a1\n");
    assert_eq!(repo.read("gone/d.txt"), b"d1\n");
    let calls = finished_calls(&trace);
    let top = repo.dir.canonicalize().unwrap();
    let top = top.to_str().unwrap();
    let first_rename = calls
        .iter()
        .position(is_rename)
        .unwrap_or_else(|| panic!("no rename over a.txt and sub/b.txt\n{trace}"));
    // The files: two under temporary names beside their targets, one at its own name.
    let staged: Vec<&str> = calls[..first_rename]
        .iter()
        .filter(|c| c.name == "fdatasync")
        .filter_map(|c| c.fd_path.as_deref())
        .filter(|p| p.starts_with(top) && !p.contains("/.git/"))
        .collect();
    for (dir, name) in [("", "a.txt"), ("/sub", "b.txt")] {
        assert!(
            staged.iter().any(|p| {
                p.strip_prefix(&format!("{top}{dir}/.checkpoint-tmp-"))
                    .is_some_and(|rest| !rest.contains('/'))
            }),
            "the temporary file of {name} was not synced before the first rename: {staged:?}\n{trace}"
        );
    }
    let in_place = format!("{top}/gone/d.txt");
    assert!(
        staged.contains(&in_place.as_str()),
        "{in_place} was not synced before the first rename: {staged:?}\n{trace}"
    );
    // The directories: the top (a temporary name, `gone` made, `extra.txt` deleted),
    // `sub` (a temporary name) and `gone` (a new file).
    for dir in [top.to_string(), format!("{top}/sub"), format!("{top}/gone")] {
        assert!(
            synced_at(&calls[..first_rename], 0, &dir).is_some(),
            "the directory {dir} was not synced before the first rename\n{trace}"
        );
    }
    // The renames, durable before the final commit (the store's last sync) clears the
    // marker.
    let last_rename = calls.iter().rposition(is_rename).unwrap();
    let store = format!("{top}/.git/checkpoint");
    let marker_cleared = calls
        .iter()
        .rposition(|c| c.fd_path.as_deref().is_some_and(|p| p.starts_with(&store)))
        .unwrap_or_else(|| panic!("the store was never synced\n{trace}"));
    for dir in [top.to_string(), format!("{top}/sub")] {
        let synced = synced_at(&calls, last_rename, &dir);
        assert!(
            synced.is_some_and(|at| at < marker_cleared),
            "the renames in {dir} were not synced before the marker was cleared\n{trace}"
        );
    }
    assert!(
        !calls.iter().any(|c| c.name == "syncfs" || c.name == "sync"),
        "a restore of 3 files synced the whole filesystem, which waits for every other process's dirty data there\n{trace}"
    );
}

#[test]
fn a_restore_of_many_files_syncs_the_filesystem_once_before_renaming_and_once_before_finishing() {
    let repo = Repo::new();
    // More files than a restore syncs one by one (`EACH_ENTRY_MAX` in
    // src/ops/restore/apply.rs).
    let files = 300;
    for i in 0..files {
        repo.write(format!("d/f{i}.txt"), format!("old {i}\n").as_bytes());
    }
    let base = repo.save("base");
    for i in 0..files {
        repo.write(format!("d/f{i}.txt"), format!("new {i}\n").as_bytes());
    }

    let (out, trace) = repo.traced(CALLS, &["restore", &base]);
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(repo.read("d/f7.txt"), b"old 7\n");
    let calls = finished_calls(&trace);
    let top = repo.dir.canonicalize().unwrap();
    let top = top.to_str().unwrap();
    let first_rename = calls.iter().position(is_rename).unwrap();
    let last_rename = calls.iter().rposition(is_rename).unwrap();
    let store = format!("{top}/.git/checkpoint");
    let marker_cleared = calls
        .iter()
        .rposition(|c| c.fd_path.as_deref().is_some_and(|p| p.starts_with(&store)))
        .unwrap();
    let syncfs_at: Vec<usize> = (0..calls.len())
        .filter(|&i| calls[i].name == "syncfs" && calls[i].fd_path.as_deref() == Some(top))
        .collect();
    assert!(
        syncfs_at.len() == 2
            && syncfs_at[0] < first_rename
            && last_rename < syncfs_at[1]
            && syncfs_at[1] < marker_cleared,
        "not one syncfs of the worktree before the {files} renames and one after them, before the marker was cleared: at {syncfs_at:?}, renames {first_rename}..={last_rename}, marker cleared at {marker_cleared}\n{trace}"
    );
    let worktree_file_syncs = calls
        .iter()
        .filter(|c| c.name == "fdatasync")
        .filter(|c| {
            c.fd_path
                .as_deref()
                .is_some_and(|p| p.starts_with(top) && !p.starts_with(&store))
        })
        .count();
    assert_eq!(worktree_file_syncs, 0, "{trace}");
}
