//! `switch`: going to a branch's tip moves HEAD and the worktree, after saving unsaved
//! work on the branch left, so that nothing is lost; a name that is no branch is refused
//! before anything changes.

use crate::common;
use common::{log_ids, Repo};

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

/// The line of `text` that is exactly `line`, or a failure showing `text`.
#[track_caller]
fn has_line(text: &str, line: &str) {
    assert!(
        text.lines().any(|l| l == line),
        "wanted the line {line:?} in:\n{text}"
    );
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

/// The text says what was saved first and where the worktree went, as
/// docs/commands.md shows it.
#[test]
fn switch_says_what_it_saved_and_where_it_went() {
    let (repo, _c1, _c2, _f1) = main_and_a_fork();
    let main = repo.json_of(&["show", "main"])["short_id"]
        .as_str()
        .unwrap()
        .to_string();
    let clean = repo.ok(&["switch", "main"]).stdout;
    // main's tip has a.txt changed and b.txt, and no c.txt.
    has_line(
        &clean,
        &format!("Switched to branch 'main' at {main}: 2 written, 1 deleted"),
    );
    assert!(!clean.contains("Saved unsaved changes"), "{clean}");

    repo.write("b.txt", b"unsaved on main again\n");
    let out = repo.ok(&["switch", "fork-1"]).stdout;
    let safety = repo.json_of(&["show", "main"])["short_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_ne!(safety, main);
    has_line(
        &out,
        &format!("Saved unsaved changes as checkpoint {safety} (undo with: git checkpoint undo)"),
    );
    let fork = repo.json_of(&["show", "fork-1"])["short_id"]
        .as_str()
        .unwrap()
        .to_string();
    has_line(
        &out,
        &format!("Switched to branch 'fork-1' at {fork}: 2 written, 1 deleted"),
    );
}

/// `--json`: the branch, the tip restored, the safety checkpoint and every path written
/// and deleted, sorted (docs/json.md, "fork, switch").
#[test]
fn switch_json_names_the_branch_its_tip_and_every_path_changed() {
    let (repo, _c1, _c2, f1) = main_and_a_fork();
    let main = repo.id("main");
    let out = repo.json_of(&["switch", "main"]);
    assert_eq!(out["branch"], "main", "{out:#}");
    assert_eq!(out["target"], main.as_str(), "{out:#}");
    assert!(out["safety_checkpoint"].is_null(), "{out:#}");
    assert_eq!(
        out["written"],
        serde_json::json!(["a.txt", "b.txt"]),
        "{out:#}"
    );
    assert_eq!(out["deleted"], serde_json::json!(["c.txt"]), "{out:#}");

    repo.write("z.txt", b"new and unsaved\n");
    let out = repo.json_of(&["switch", "fork-1"]);
    let safety = out["safety_checkpoint"].as_str().unwrap().to_string();
    assert_eq!(repo.id("main"), safety, "{out:#}");
    assert_eq!(out["branch"], "fork-1", "{out:#}");
    assert_eq!(out["target"], f1.as_str(), "{out:#}");
    assert_eq!(
        out["written"],
        serde_json::json!(["a.txt", "c.txt"]),
        "{out:#}"
    );
    assert_eq!(
        out["deleted"],
        serde_json::json!(["b.txt", "z.txt"]),
        "{out:#}"
    );
}

/// HEAD names the branch switched to: the next save goes on it, after its tip, and the
/// branch left stays where it was.
#[test]
fn after_a_switch_saves_go_on_the_branch_switched_to() {
    let (repo, _c1, c2, f1) = main_and_a_fork();
    repo.ok(&["switch", "main"]);
    let main_tip = repo.id("main");
    assert_eq!(repo.parents(&main_tip), [c2.as_str()]);
    repo.write("d.txt", b"on main\n");
    let m1 = repo.save("m1");
    assert_eq!(repo.parents(&m1), [main_tip.as_str()]);
    assert_eq!(repo.json_of(&["show", &m1])["branch"], "main");
    assert_eq!(repo.id("main"), m1);
    assert_eq!(repo.id("fork-1"), f1);
    let log = repo.ok(&["log", "-n", "1"]).stdout;
    assert!(log.contains("(HEAD -> main)"), "{log}");
}

/// Unsaved work on the branch left becomes that branch's tip, on top of its old tip, and
/// switching back gives it back exactly: new, changed and deleted files alike.
#[test]
fn switching_away_saves_unsaved_work_on_the_branch_left() {
    let (repo, _c1, _c2, f1) = main_and_a_fork();
    repo.write("c.txt", b"changed, unsaved\n");
    repo.write("new.txt", b"new, unsaved\n");
    repo.remove("a.txt");
    let unsaved = repo.files();
    let out = repo.json_of(&["switch", "main"]);
    let safety = out["safety_checkpoint"].as_str().unwrap().to_string();
    assert_eq!(repo.id("fork-1"), safety);
    assert_eq!(repo.parents(&safety), [f1.as_str()]);
    assert_eq!(repo.json_of(&["show", &safety])["branch"], "fork-1");
    assert_eq!(repo.files(), ["a.txt=unsaved on main\n", "b.txt=b2\n"]);

    let back = repo.json_of(&["switch", "fork-1"]);
    assert!(back["safety_checkpoint"].is_null(), "{back:#}");
    assert_eq!(back["target"], safety.as_str());
    assert_eq!(repo.files(), unsaved);
}

/// A name that is no branch (a missing one, a checkpoint id, another revision) is
/// refused with one line and exit status 1, before anything is saved or written.
#[test]
fn switch_refuses_what_is_not_a_branch_and_changes_nothing() {
    let (repo, c1, _c2, _f1) = main_and_a_fork();
    repo.write("c.txt", b"unsaved on the fork\n");
    let files = repo.files();
    let listing = log_ids(&repo, &["--all"]);
    for name in ["nosuch", c1.as_str(), "@~1", "main~1"] {
        let out = repo.run(&["switch", name]);
        assert_eq!(out.code, 1, "{name}: {out}");
        assert_eq!(
            out.stderr,
            format!("error: no branch named '{name}'\n"),
            "{name}: {out}"
        );
        assert_eq!(out.stdout, "", "{name}: {out}");
        assert_eq!(repo.files(), files, "{name}");
        assert_eq!(log_ids(&repo, &["--all"]), listing, "{name}");
        assert_eq!(repo.branches(), ["*fork-1", "main"], "{name}");
    }
    let out = repo.run(&["switch"]);
    assert_eq!(out.code, 2, "{out}");
    assert_eq!(repo.files(), files);
}
