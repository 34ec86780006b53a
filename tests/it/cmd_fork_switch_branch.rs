//! `fork`, `switch` and `branch`: moving between branches with the worktree following,
//! branches listed, renamed and deleted, every tip kept.

use crate::common;
use common::{log_ids, Repo};

#[test]
fn fork_switch_and_branch_move_the_worktree_and_keep_every_tip() {
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

    // switch back: the worktree is main's tip, unsaved work included.
    repo.ok(&["switch", "main"]);
    assert_eq!(repo.files(), ["a.txt=unsaved on main\n", "b.txt=b2\n"]);
    assert_eq!(repo.branches(), ["fork-1", "*main"]);
    assert_eq!(repo.id("fork-1"), f1);

    // A named fork; then back to fork-1.
    let named = repo.json_of(&["fork", &c2, "-b", "exp"]);
    assert_eq!(named["branch"], "exp");
    assert!(named["safety_checkpoint"].is_null(), "{named}");
    assert_eq!(repo.files(), ["a.txt=a2\n", "b.txt=b2\n"]);
    repo.ok(&["switch", "fork-1"]);
    assert_eq!(repo.files(), ["a.txt=a1\n", "c.txt=on the fork\n"]);
    assert_eq!(repo.branches(), ["exp", "*fork-1", "main"]);

    // Switching to the current branch keeps unsaved work (it is saved, not undone).
    repo.write("c.txt", b"more\n");
    let out = repo.json_of(&["switch", "fork-1"]);
    assert!(out["safety_checkpoint"].is_string());
    assert_eq!(repo.read("c.txt"), b"more\n");

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

    // -m renames, and HEAD follows the current branch.
    repo.ok(&["branch", "-m", "fork-1", "parser"]);
    assert_eq!(repo.branches(), ["main", "*parser"]);
    let before = repo.files();
    repo.save_forced("p1");
    assert_eq!(repo.json_of(&["show", "@"])["branch"], "parser");
    assert_eq!(repo.files(), before);

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
