//! `fork`: a new branch at any checkpoint, named or numbered, with the worktree restored
//! to it and unsaved work saved first on the branch left; bad and taken names are refused
//! before anything happens.

use crate::common;
use common::{log_ids, Repo};

#[test]
fn fork_starts_a_branch_at_an_older_checkpoint_and_the_branch_left_keeps_its_tip() {
    let repo = Repo::new();
    repo.write("a.txt", b"a1\n");
    let c1 = repo.save_forced("c1");
    repo.write("a.txt", b"a2\n");
    repo.write("b.txt", b"b2\n");
    let c2 = repo.save_forced("c2");
    assert_eq!(repo.branches(), ["*main"]);

    // fork from an older checkpoint, default name fork-1, with unsaved changes.
    repo.write("a.txt", b"unsaved on main\n");
    let forked = repo.json_of(&["fork", &c1]);
    assert_eq!(forked["branch"], "fork-1");
    assert_eq!(forked["target"], c1.as_str());
    let safety = forked["safety_checkpoint"].as_str().unwrap().to_string();
    assert_eq!(repo.files(), ["a.txt=a1\n"]);
    assert_eq!(repo.branches(), ["*fork-1", "main"]);
    // The old branch kept its tip, which is now the safety save of the unsaved work.
    assert_eq!(repo.id("main"), safety);
    assert_eq!(repo.parents(&safety), [c2.as_str()]);

    // Saving continues on the fork.
    repo.write("c.txt", b"on the fork\n");
    let f1 = repo.save_forced("f1");
    assert_eq!(repo.json_of(&["show", &f1])["branch"], "fork-1");
    assert_eq!(repo.parents(&f1), [c1.as_str()]);
    assert_eq!(repo.id("fork-1"), f1);
}

#[test]
fn a_named_fork_of_a_clean_worktree_saves_nothing_first() {
    let repo = Repo::new();
    repo.write("a.txt", b"a1\n");
    repo.save_forced("c1");
    repo.write("a.txt", b"a2\n");
    repo.write("b.txt", b"b2\n");
    let c2 = repo.save_forced("c2");
    repo.write("a.txt", b"a3\n");
    repo.save_forced("c3");

    let named = repo.json_of(&["fork", &c2, "-b", "exp"]);
    assert_eq!(named["branch"], "exp");
    assert!(named["safety_checkpoint"].is_null(), "{named}");
    assert_eq!(repo.files(), ["a.txt=a2\n", "b.txt=b2\n"]);
}

#[test]
fn fork_refuses_bad_and_taken_names_before_anything_happens() {
    let repo = Repo::new();
    repo.write("a.txt", b"a1\n");
    repo.save_forced("c1");
    repo.ok(&["fork", "@", "-b", "parser"]);
    repo.save_forced("p1");

    // Bad names and taken names are refused before anything happens.
    for (args, error) in [
        (&["fork", "@", "-b", "main"][..], "already exists"),
        (
            &["fork", "@", "-b", "has space"][..],
            "not a valid branch name",
        ),
        (
            &["fork", "@", "-b", "cafe"][..],
            "looks like a checkpoint id",
        ),
        (&["fork", "@", "-b", "a~1"][..], "not a valid branch name"),
    ] {
        let listing = log_ids(&repo, &["--all"]);
        let out = repo.run(args);
        assert_eq!(out.code, 1, "{args:?}: {out}");
        assert!(out.stderr.contains(error), "{args:?}: {out}");
        assert_eq!(log_ids(&repo, &["--all"]), listing, "{args:?}");
        assert_eq!(repo.branches(), ["main", "*parser"]);
    }
}

/// A refused fork saves nothing first: the unsaved work stays unsaved, in the worktree,
/// and the store has no checkpoint it did not have.
#[test]
fn a_refused_fork_leaves_unsaved_work_where_it_was() {
    let repo = Repo::new();
    repo.write("a.txt", b"a1\n");
    repo.save_forced("c1");
    repo.write("a.txt", b"unsaved\n");
    let listing = log_ids(&repo, &["--all"]);
    for args in [
        &["fork", "@", "-b", "main"][..],
        &["fork", "@", "-b", "has space"],
        &["fork", "nosuch", "-b", "new"],
    ] {
        let out = repo.run(args);
        assert_eq!(out.code, 1, "{args:?}: {out}");
        assert_eq!(out.stderr.lines().count(), 1, "{args:?}: {out}");
        assert_eq!(log_ids(&repo, &["--all"]), listing, "{args:?}");
        assert_eq!(repo.files(), ["a.txt=unsaved\n"], "{args:?}");
        assert_eq!(repo.branches(), ["*main"], "{args:?}");
    }
}
