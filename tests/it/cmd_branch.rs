//! `branch`: branches listed (the current one marked), deleted without their
//! checkpoints, renamed with HEAD following; bad, taken and missing names refused before
//! anything changes.

use crate::common;
use common::{log_ids, Repo};
#[test]
fn branch_delete_refuses_the_current_branch_and_keeps_the_checkpoints_of_another() {
    let repo = Repo::new();
    repo.write("a.txt", b"a1\n");
    let c1 = repo.save_forced("c1");
    repo.ok(&["fork", &c1, "-b", "exp"]);
    repo.write("b.txt", b"on exp\n");
    repo.save_forced("e1");
    repo.ok(&["fork", &c1]);
    assert_eq!(repo.branches(), ["exp", "*fork-1", "main"]);

    // branch -d refuses the current branch and changes nothing.
    let out = repo.run(&["branch", "-d", "fork-1"]);
    assert_eq!(out.code, 1, "{out}");
    assert!(
        out.stderr.contains("cannot delete branch 'fork-1'"),
        "{out}"
    );
    assert_eq!(repo.branches(), ["exp", "*fork-1", "main"]);
    // Another branch goes; its checkpoints stay in log --all.
    let exp_tip = repo.id("exp");
    repo.ok(&["branch", "-d", "exp"]);
    assert_eq!(repo.branches(), ["*fork-1", "main"]);
    assert!(log_ids(&repo, &["--all"]).contains(&exp_tip));
    let out = repo.run(&["switch", "exp"]);
    assert_eq!(out.code, 1, "{out}");
    assert!(out.stderr.contains("no branch named 'exp'"), "{out}");
}

#[test]
fn branch_rename_of_the_current_branch_takes_head_along() {
    let repo = Repo::new();
    repo.write("a.txt", b"a1\n");
    repo.save_forced("c1");
    repo.ok(&["fork", "@"]);

    // -m renames, and HEAD follows the current branch.
    repo.ok(&["branch", "-m", "fork-1", "parser"]);
    assert_eq!(repo.branches(), ["main", "*parser"]);
    let before = repo.files();
    repo.save_forced("p1");
    assert_eq!(repo.json_of(&["show", "@"])["branch"], "parser");
    assert_eq!(repo.files(), before);
}

#[test]
fn branch_rename_refuses_taken_and_missing_names_before_anything_happens() {
    let repo = Repo::new();
    repo.write("a.txt", b"a1\n");
    repo.save_forced("c1");
    repo.ok(&["fork", "@", "-b", "parser"]);
    repo.save_forced("p1");

    // Bad names and taken names are refused before anything happens.
    for (args, error) in [
        (&["branch", "-m", "main", "parser"][..], "already exists"),
        (
            &["branch", "-m", "nosuch", "x"][..],
            "no branch named 'nosuch'",
        ),
    ] {
        let listing = log_ids(&repo, &["--all"]);
        let out = repo.run(args);
        assert_eq!(out.code, 1, "{args:?}: {out}");
        assert!(out.stderr.contains(error), "{args:?}: {out}");
        assert_eq!(log_ids(&repo, &["--all"]), listing, "{args:?}");
        assert_eq!(repo.branches(), ["main", "*parser"]);
    }
}

#[test]
fn branch_listing_marks_the_current_branch() {
    let repo = Repo::new();
    repo.write("a.txt", b"a\n");
    let c1 = repo.save_forced("first");
    repo.ok(&["fork", &c1, "-b", "side"]);
    let out = repo.ok(&["branch"]);
    let short = &c1[..7];
    assert_eq!(
        out.stdout,
        format!("  main {short} first\n* side {short} first\n")
    );
}
