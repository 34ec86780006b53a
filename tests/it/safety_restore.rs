//! Restore never loses what no checkpoint holds: ignored files in its way stop it before
//! anything changes, and a directory swapped for a symlink is never written through.

use crate::common;
use common::Repo;

#[test]
fn an_ignored_file_in_the_way_stops_the_restore_before_any_change() {
    let repo = Repo::new();
    repo.write("foo.log", b"captured version\n");
    repo.write("a.txt", b"a1\n");
    let first = repo.save("with foo.log captured");
    // Now *.log is ignored and foo.log holds work that no checkpoint has.
    repo.write(".gitignore", b"*.log\n");
    repo.write("foo.log", b"precious ignored work\n");
    repo.write("a.txt", b"a2\n");
    repo.save("foo.log ignored");

    // A dry run predicts the refusal, with the same error and exit status.
    let dry = repo.run(&["restore", &first, "--dry-run"]);
    let out = repo.run(&["restore", &first]);
    assert_eq!(out.code, common::EXIT_REFUSED, "{out}");
    assert!(out.stderr.contains("foo.log"), "{out}");
    common::assert_no_panic(&out, "restore");
    assert_eq!(
        (dry.code, dry.stderr.as_str()),
        (common::EXIT_REFUSED, out.stderr.as_str()),
        "{dry}"
    );
    // A refused restore changed nothing, so there is no restore to finish.
    let status = repo.ok(&["status", "--json"]);
    assert!(!status.stderr.contains("interrupted"), "{status}");
    assert!(common::parse_json(&status, "status")["interrupted_restore"].is_null());
    assert_eq!(repo.read("foo.log"), b"precious ignored work\n");
    // Nothing else was applied either.
    assert_eq!(repo.read("a.txt"), b"a2\n");
    assert_eq!(repo.read(".gitignore"), b"*.log\n");

    // Once the file is moved away, the same restore goes through.
    std::fs::rename(repo.p("foo.log"), repo.p("foo.log.bak")).unwrap();
    repo.ok(&["restore", &first]);
    assert_eq!(repo.read("foo.log"), b"captured version\n");
    assert_eq!(repo.read("a.txt"), b"a1\n");
    assert!(!repo.exists(".gitignore"));
}

#[test]
fn a_directory_replaced_by_a_symlink_to_outside_is_never_written_through() {
    let repo = Repo::new();
    repo.write("sub/file.txt", b"inside\n");
    let first = repo.save("sub is a directory");
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("other.txt"), b"outside\n").unwrap();
    std::fs::remove_dir_all(repo.p("sub")).unwrap();
    std::os::unix::fs::symlink(outside.path(), repo.p("sub")).unwrap();

    for extra in [&["--no-save"][..], &[][..]] {
        let mut args = vec!["restore", first.as_str()];
        args.extend_from_slice(extra);
        repo.ok(&args);
        // The outside directory is exactly as it was.
        let names: Vec<_> = std::fs::read_dir(outside.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["other.txt"], "{extra:?}");
        let meta = std::fs::symlink_metadata(repo.p("sub")).unwrap();
        assert!(meta.is_dir() && !meta.file_type().is_symlink());
        assert_eq!(repo.read("sub/file.txt"), b"inside\n");
        // Put the symlink back for the second round.
        std::fs::remove_dir_all(repo.p("sub")).unwrap();
        std::os::unix::fs::symlink(outside.path(), repo.p("sub")).unwrap();
    }
}

/// A path-limited restore leaves the rest of the worktree alone, so a directory that is a
/// symlink in the current checkpoint too is not deleted first: writing below it must be
/// refused by the parent check itself, and nothing may appear outside the worktree.
#[test]
fn a_path_limited_restore_below_a_symlinked_directory_is_refused() {
    let repo = Repo::new();
    repo.write("sub/file.txt", b"inside\n");
    repo.write("top.txt", b"top\n");
    let first = repo.save("sub is a directory");
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("other.txt"), b"outside\n").unwrap();
    std::fs::remove_dir_all(repo.p("sub")).unwrap();
    std::os::unix::fs::symlink(outside.path(), repo.p("sub")).unwrap();
    repo.save("sub is a symlink to outside");

    for extra in [&["--no-save"][..], &[][..]] {
        let mut args = vec!["restore", first.as_str()];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--", "sub/file.txt"]);
        let out = repo.run(&args);
        assert_eq!(out.code, common::EXIT_REFUSED, "{args:?}: {out}");
        assert!(out.stderr.contains("symlink"), "{out}");
        let names: Vec<_> = std::fs::read_dir(outside.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(
            names,
            ["other.txt"],
            "{args:?}: written outside the worktree"
        );
        assert!(std::fs::symlink_metadata(repo.p("sub"))
            .unwrap()
            .file_type()
            .is_symlink());
    }
}

/// Files named like restore's temporary files are the user's unless a restore is
/// recorded as interrupted: saved, restored, and never deleted, even one git tracks and
/// one whose name matches the generated pattern exactly.
#[test]
fn files_named_like_temporary_files_are_the_users_outside_an_interrupted_restore() {
    let repo = Repo::new();
    let names = [
        ".checkpoint-tmp-notes.md",
        "sub/.checkpoint-tmp-abcdefghijklmnop",
        ".checkpoint-tmp-abcdef",
    ];
    for name in names {
        repo.write(name, format!("mine: {name}\n").as_bytes());
    }
    repo.write("a.txt", b"one\n");
    repo.git(&["add", ".checkpoint-tmp-notes.md"]);
    let first = repo.save_json(&["-m", "first"]);
    assert_eq!(first["files"], 4, "{first}");
    repo.write("a.txt", b"two\n");
    let second = repo.save("second");
    repo.ok(&["restore", first["id"].as_str().unwrap()]);
    repo.ok(&["restore", &second]);
    for name in names {
        assert_eq!(
            repo.read(name),
            format!("mine: {name}\n").as_bytes(),
            "{name}"
        );
    }
    assert_eq!(repo.read("a.txt"), b"two\n");
}

/// Where the checkpoint has a file and the worktree a directory that also holds a file
/// no checkpoint has (an ignored cache), the restore stops before any change: it never
/// deletes the captured files of that directory and then fails half-way.
#[test]
fn a_directory_holding_unsaved_files_where_a_file_belongs_stops_the_restore_first() {
    let repo = Repo::new();
    repo.write("x", b"x is a file\n");
    repo.write("other.txt", b"one\n");
    let first = repo.save("x is a file");
    repo.remove("x");
    repo.write("x/a.txt", b"captured\n");
    repo.write(".gitignore", b"*.tmp\n");
    repo.write("x/cache.tmp", b"ignored, in no checkpoint\n");
    repo.write("other.txt", b"two\n");
    repo.save("x is a directory");
    let before = repo.snapshot();
    for args in [
        &["restore", first.as_str(), "--dry-run"][..],
        &["restore", first.as_str()],
    ] {
        let out = repo.run(args);
        assert_eq!(out.code, common::EXIT_REFUSED, "{args:?}: {out}");
        assert!(out.stderr.contains("x/cache.tmp"), "{args:?}: {out}");
        common::assert_snap_eq(&before, &repo.snapshot(), &format!("{args:?}"));
    }
}
