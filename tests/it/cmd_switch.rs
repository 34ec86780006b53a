//! `switch`: going to a branch's tip moves HEAD and the worktree, after saving unsaved
//! work on the branch left, so that nothing is lost; a name that is no branch is refused
//! before anything changes.

use crate::common;
use common::Repo;

/// Two checkpoints on main, and a branch fork-1 from the first with a checkpoint of its
/// own, made while main had unsaved work: returns (c1, c2, f1). HEAD is on fork-1.
fn main_and_a_fork() -> (Repo, String, String, String) {
    let repo = Repo::new();
    repo.write("a.txt", b"a1\n");
    let c1 = repo.save_forced("c1");
    repo.write("a.txt", b"a2\n");
    repo.write("b.txt", b"b2\n");
    let c2 = repo.save_forced("c2");
    repo.write("a.txt", b"unsaved on main\n");
    repo.ok(&["fork", &c1]);
    repo.write("c.txt", b"on the fork\n");
    let f1 = repo.save_forced("f1");
    (repo, c1, c2, f1)
}

#[test]
fn switch_goes_to_a_branch_tip_and_every_branch_keeps_its_own() {
    let (repo, _c1, c2, f1) = main_and_a_fork();

    // switch back: the worktree is main's tip, unsaved work included.
    repo.ok(&["switch", "main"]);
    assert_eq!(repo.files(), ["a.txt=unsaved on main\n", "b.txt=b2\n"]);
    assert_eq!(repo.branches(), ["fork-1", "*main"]);
    assert_eq!(repo.id("fork-1"), f1);

    // A named fork; then back to fork-1.
    repo.ok(&["fork", &c2, "-b", "exp"]);
    repo.ok(&["switch", "fork-1"]);
    assert_eq!(repo.files(), ["a.txt=a1\n", "c.txt=on the fork\n"]);
    assert_eq!(repo.branches(), ["exp", "*fork-1", "main"]);
}

#[test]
fn switching_to_the_current_branch_keeps_unsaved_work() {
    let repo = Repo::new();
    repo.write("c.txt", b"on the fork\n");
    repo.save_forced("c1");
    repo.ok(&["fork", "@"]);

    // Switching to the current branch keeps unsaved work (it is saved, not undone).
    repo.write("c.txt", b"more\n");
    let out = repo.json_of(&["switch", "fork-1"]);
    assert!(out["safety_checkpoint"].is_string());
    assert_eq!(repo.read("c.txt"), b"more\n");
}
