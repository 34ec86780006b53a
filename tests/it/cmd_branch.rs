//! `branch`: branches listed (the current one marked), deleted without their
//! checkpoints, renamed with HEAD following; bad, taken and missing names refused before
//! anything changes.

use crate::common;
use common::{log_ids, Repo};
use serde_json::json;

/// The line of `text` that is exactly `line`, or a failure showing `text`.
#[track_caller]
fn has_line(text: &str, line: &str) {
    assert!(
        text.lines().any(|l| l == line),
        "wanted the line {line:?} in:\n{text}"
    );
}

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

/// The listing is sorted by name, not by age; `--list` is the same listing; the text
/// shows a tip's first line, `--json` its whole message with the documented fields.
#[test]
fn branch_lists_every_branch_by_name_with_its_tip() {
    let repo = Repo::new();
    repo.write("a.txt", b"a\n");
    let first = repo.save("first");
    repo.ok(&["fork", "@", "-b", "zeta"]);
    repo.write("a.txt", b"on zeta\n");
    let zeta = repo.save("zeta's tip\nwith a second line");
    repo.ok(&["fork", &first, "-b", "alpha"]);
    let short = |id: &str| id[..7].to_string();

    let text = repo.ok(&["branch"]).stdout;
    assert_eq!(
        text,
        format!(
            "* alpha {} first\n  main  {} first\n  zeta  {} zeta's tip\n",
            short(&first),
            short(&first),
            short(&zeta)
        )
    );
    assert_eq!(repo.ok(&["branch", "--list"]).stdout, text);

    let listed = repo.json_of(&["branch"]);
    let row = |name: &str, id: &str, current: bool, message: &str| json!({"name": name, "id": id, "short_id": short(id), "current": current, "message": message});
    assert_eq!(
        listed,
        json!([
            row("alpha", &first, true, "first"),
            row("main", &first, false, "first"),
            row("zeta", &zeta, false, "zeta's tip\nwith a second line"),
        ]),
        "{listed:#}"
    );
    assert_eq!(repo.json_of(&["branch", "--list"]), listed);
}

/// `-d` and `-m` say what they did, in text and in `--json`; renaming another branch
/// leaves HEAD where it is, and deleting one leaves its checkpoints in the store.
#[test]
fn branch_delete_and_rename_say_what_they_did() {
    let repo = Repo::new();
    repo.write("a.txt", b"a\n");
    repo.save("first");
    repo.ok(&["fork", "@", "-b", "side"]);
    repo.write("a.txt", b"on side\n");
    let side = repo.save("on side");
    repo.ok(&["fork", "@", "-b", "other"]);
    repo.ok(&["switch", "main"]);
    let main = repo.id("main");

    let renamed = repo.ok(&["branch", "-m", "side", "parser"]).stdout;
    has_line(&renamed, "Renamed branch side to parser");
    assert_eq!(repo.branches(), ["*main", "other", "parser"]);
    assert_eq!(repo.id("parser"), side);
    assert_eq!(repo.id("@"), main);

    let renamed = repo.json_of(&["branch", "-m", "parser", "lexer"]);
    assert_eq!(
        renamed,
        json!({"renamed": "parser", "to": "lexer", "id": side}),
        "{renamed:#}"
    );
    assert_eq!(repo.branches(), ["lexer", "*main", "other"]);

    let deleted = repo.ok(&["branch", "-d", "lexer"]).stdout;
    has_line(
        &deleted,
        &format!("Deleted branch lexer (was {})", &side[..7]),
    );
    assert_eq!(repo.branches(), ["*main", "other"]);
    let deleted = repo.json_of(&["branch", "-d", "other"]);
    assert_eq!(
        deleted,
        json!({"deleted": "other", "id": side}),
        "{deleted:#}"
    );
    assert_eq!(repo.branches(), ["*main"]);
    assert!(log_ids(&repo, &["--all"]).contains(&side));
    assert_eq!(repo.id(&side[..7]), side);
}

/// Bad input: one line on stderr and exit status 1 (2 for a usage error), and neither
/// a branch nor a checkpoint changed.
#[test]
fn branch_refuses_bad_input_and_changes_nothing() {
    let repo = Repo::new();
    repo.write("a.txt", b"a\n");
    repo.save("first");
    repo.ok(&["fork", "@", "-b", "side"]);
    let branches = repo.branches();
    let listing = repo.json_of(&["log", "--all"]);
    let unchanged = |what: &str| {
        assert_eq!(repo.branches(), branches, "{what}");
        assert_eq!(repo.json_of(&["log", "--all"]), listing, "{what}");
    };
    for (args, error) in [
        (&["branch", "-d", "nosuch"][..], "no branch named 'nosuch'"),
        (&["branch", "-d", "side"][..], "cannot delete branch 'side'"),
        (
            &["branch", "-m", "main", "has space"][..],
            "'has space' is not a valid branch name",
        ),
        (
            &["branch", "-m", "main", "a..b"][..],
            "'a..b' is not a valid branch name",
        ),
        (
            &["branch", "-m", "main", "cafe"][..],
            "looks like a checkpoint id",
        ),
        (&["branch", "-m", "main", "side"][..], "already exists"),
    ] {
        let out = repo.run(args);
        assert_eq!(out.code, 1, "{args:?}: {out}");
        assert_eq!(out.stderr.lines().count(), 1, "{args:?}: {out}");
        assert!(
            out.stderr.starts_with("error: ") && out.stderr.contains(error),
            "{args:?}: {out}"
        );
        assert_eq!(out.stdout, "", "{args:?}: {out}");
        unchanged(&format!("{args:?}"));
    }
    for args in [
        &["branch", "-d", "main", "-m", "main", "x"][..],
        &["branch", "-m", "main"][..],
        &["branch", "--list", "-d", "main"][..],
    ] {
        let out = repo.run(args);
        assert_eq!(out.code, 2, "{args:?}: {out}");
        unchanged(&format!("{args:?}"));
    }
}
