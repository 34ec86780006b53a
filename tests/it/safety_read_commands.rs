//! Read commands never change the store: not a byte, not its modification time, and they
//! work on a store they may not write (a read-only copy, another user's worktree).

use crate::common;
use std::os::unix::fs::PermissionsExt;

use common::{is_root, open_up, run_unprivileged, Repo};

const READS: &[&[&str]] = &[
    &["log"],
    &["log", "--all", "--json", "--graph"],
    &["show", "@"],
    &["show", "@~1", "--stat"],
    &["status"],
    &["diff"],
    &["diff", "@~1", "@", "--stat"],
    &["attachment", "@", "notes.txt"],
    &["stats"],
    &["verify"],
    &["verify", "--read-data"],
];

fn history() -> Repo {
    let repo = Repo::new();
    repo.write("a.txt", b"one\n");
    repo.save("first");
    repo.write("a.txt", b"two\n");
    repo.write("notes.txt", b"attached\n");
    repo.ok(&["save", "-m", "second", "--attach", "notes.txt"]);
    // Unsaved work, so that status and diff have something to say.
    repo.write("a.txt", b"three\n");
    repo
}

#[test]
fn read_commands_leave_the_store_byte_identical() {
    let repo = history();
    let store = repo.store_path();
    let before = (
        std::fs::read(&store).unwrap(),
        std::fs::metadata(&store).unwrap().modified().unwrap(),
    );
    for args in READS {
        repo.ok(args);
        let after = (
            std::fs::read(&store).unwrap(),
            std::fs::metadata(&store).unwrap().modified().unwrap(),
        );
        assert!(after.0 == before.0, "{args:?} changed the store's bytes");
        assert_eq!(after.1, before.1, "{args:?} changed the store's mtime");
    }
}

#[test]
fn read_commands_work_on_a_store_they_may_not_write() {
    let repo = history();
    if is_root() {
        if let Err(e) = std::process::Command::new("setpriv")
            .arg("--version")
            .output()
        {
            common::skip_only_if_allowed(
                "READ_ONLY",
                &format!("running as root, and setpriv (to drop root) cannot run: {e}"),
            );
            return;
        }
        std::fs::write(repo.sb.home.join(".gitconfig"), "[safe]\n\tdirectory = *\n").unwrap();
    }
    open_up(&repo.sb.root);
    let checkpoint_dir = repo.git_dir().join("checkpoint");
    for entry in std::fs::read_dir(&checkpoint_dir).unwrap() {
        let path = entry.unwrap().path();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
    }
    std::fs::set_permissions(&checkpoint_dir, std::fs::Permissions::from_mode(0o555)).unwrap();
    for args in READS {
        let out = run_unprivileged(&repo, args);
        assert_eq!(out.code, 0, "{args:?} on a read-only store: {out}");
    }
    let out = run_unprivileged(&repo, &["save"]);
    assert_eq!(out.code, 1, "a save cannot work here: {out}");
}
