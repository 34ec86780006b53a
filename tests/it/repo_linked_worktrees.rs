//! Paths in the worktree that are not the worktree's own: the linked worktrees of the same
//! repository (`claude --worktree` makes them under `.claude/worktrees/`) and the agent's
//! settings files. No checkpoint holds them and no restore changes them; a nested
//! independent repository is still captured and restored.

use crate::common;
use std::path::PathBuf;

use common::*;
use serde_json::Value;

const LINKED: &str = ".claude/worktrees/agent-1";

/// A repository with one commit (`a.txt`), so that `git worktree add` has a branch point.
fn committed_repo() -> Repo {
    let r = Repo::new();
    r.write("a.txt", b"a v1\n");
    r.git(&["add", "a.txt"]);
    r.git(&["commit", "-q", "-m", "init"]);
    r
}

fn add_linked_worktree(r: &Repo) -> PathBuf {
    r.git(&["worktree", "add", "-q", LINKED, "-b", "agent-1"]);
    let linked = r.p(LINKED);
    assert!(linked.join(".git").is_file(), "git made a .git file");
    linked
}

/// Every path any of the checkpoints lists, as `show --json` and `log --json` print them.
fn listed_text(r: &Repo) -> String {
    let mut text = serde_json::to_string(&r.log_json(true)).unwrap();
    for id in r.log_ids(true) {
        text.push_str(&r.json_of(&["show", &id]).to_string());
    }
    text
}

fn changed_paths(r: &Repo, id: &str) -> Vec<String> {
    r.json_of(&["show", id])["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["path"].as_str().unwrap().to_string())
        .collect()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap_or_else(|| panic!("not an array: {v}"))
        .iter()
        .map(|s| s.as_str().unwrap().to_string())
        .collect()
}

fn restore_json(r: &Repo, id: &str) -> Value {
    r.json_of(&["restore", id])
}

#[test]
fn a_linked_worktree_is_neither_captured_nor_touched_by_restore() {
    let r = committed_repo();
    let linked = add_linked_worktree(&r);
    let first = r.save("before the agent works");

    // The agent works in its worktree, uncommitted; the user works in the main one.
    write_file(&linked.join("a.txt"), b"agent's edit\n", false);
    write_file(&linked.join("src/new.rs"), b"fn agent() {}\n", false);
    r.write("a.txt", b"a v2\n");
    r.write("notes.txt", b"mine\n");
    let second = r.save("after");
    let before = snapshot(&linked, false);

    let report = restore_json(&r, &first);
    assert_eq!(r.read("a.txt"), b"a v1\n", "the main worktree is restored");
    assert!(!r.exists("notes.txt"));
    assert_snap_eq(
        &before,
        &snapshot(&linked, false),
        "the linked worktree after restoring the first checkpoint",
    );
    for list in ["written", "deleted"] {
        assert!(
            strings(&report[list])
                .iter()
                .all(|p| !p.starts_with(".claude/")),
            "{report}"
        );
    }

    // And back: the restore's own safety save did not pick the worktree up either.
    r.ok(&["restore", &second]);
    assert_snap_eq(&before, &snapshot(&linked, false), "after restoring back");
    let text = listed_text(&r);
    assert!(!text.contains(".claude/worktrees"), "{text}");
    assert!(changed_paths(&r, &second).contains(&"notes.txt".to_string()));
    // The linked worktree is not reported as a change either.
    let status = r.ok(&["status"]);
    assert!(!status.stdout.contains(".claude"), "{status}");
}

#[test]
fn nested_independent_repositories_are_still_captured_and_restored() {
    let r = committed_repo();
    // The repository has a linked worktree (outside this one), so linked worktrees are
    // looked for, and these must not be taken for one.
    let other = r.sb.root.join("other");
    r.git(&[
        "worktree",
        "add",
        "-q",
        other.to_str().unwrap(),
        "-b",
        "other",
    ]);
    // A repository of its own, and one whose `.git` file points at a git dir elsewhere
    // (as a submodule's points into `.git/modules/`): neither is a worktree of this one.
    let sub = r.p("sub");
    std::fs::create_dir_all(&sub).unwrap();
    r.sb.git(&sub, &["init", "-q"]);
    let separate = r.p("separate");
    std::fs::create_dir_all(&separate).unwrap();
    let elsewhere = r.scratch("separate-git-dir");
    r.sb.git(
        &separate,
        &[
            "init",
            "-q",
            "--separate-git-dir",
            elsewhere.to_str().unwrap(),
        ],
    );
    assert!(separate.join(".git").is_file());
    r.write("sub/f.txt", b"sub v1\n");
    r.write("separate/f.txt", b"separate v1\n");
    let first = r.save("one");
    r.write("sub/f.txt", b"sub v2\n");
    r.write("sub/g.txt", b"new\n");
    r.write("separate/f.txt", b"separate v2\n");
    r.save("two");

    r.ok(&["restore", &first]);
    assert_eq!(r.read("sub/f.txt"), b"sub v1\n");
    assert!(!r.exists("sub/g.txt"));
    assert_eq!(r.read("separate/f.txt"), b"separate v1\n");
    assert!(
        sub.join(".git").is_dir(),
        "the nested repository's .git stays"
    );
    assert!(separate.join(".git").is_file());
    let paths = changed_paths(&r, &first);
    assert!(paths.contains(&"sub/f.txt".to_string()), "{paths:?}");
    assert!(paths.contains(&"separate/f.txt".to_string()), "{paths:?}");
}

#[test]
fn an_older_checkpoint_holding_files_where_a_linked_worktree_now_is_leaves_it_alone() {
    let r = committed_repo();
    // What an older build captured: plain files at the path the worktree is added at later.
    r.write(format!("{LINKED}/x"), b"old x\n");
    r.write(format!("{LINKED}/old-only"), b"old\n");
    let old = r.save("plain files there");
    assert!(changed_paths(&r, &old).contains(&format!("{LINKED}/x")));
    r.remove(".claude");
    let linked = add_linked_worktree(&r);
    write_file(&linked.join("x"), b"the agent's x\n", false);
    write_file(&linked.join("work.rs"), b"uncommitted\n", false);
    r.write("b.txt", b"b\n");
    r.save("the worktree is there now");
    let before = snapshot(&linked, false);

    for args in [vec!["restore", "--dry-run", &old], vec!["restore", &old]] {
        let report = r.json_of(&args);
        assert_snap_eq(&before, &snapshot(&linked, false), &format!("{args:?}"));
        let untouched = strings(&report["untouched"]);
        for path in ["x", "old-only"] {
            assert!(
                untouched.contains(&format!("{LINKED}/{path}")),
                "{args:?}: {report}"
            );
        }
        for list in ["written", "deleted"] {
            assert!(
                strings(&report[list])
                    .iter()
                    .all(|p| !p.starts_with(LINKED)),
                "{args:?}: {report}"
            );
        }
    }
    assert!(!r.exists("b.txt"), "the rest of the worktree is restored");
    let human = r.ok(&["restore", "--dry-run", &old]);
    assert!(
        human.stdout.contains(&format!("Left {LINKED}/x untouched")),
        "{human}"
    );
}

fn settings_files(r: &Repo) -> Vec<(String, Vec<u8>)> {
    [".claude/settings.json", ".claude/settings.local.json"]
        .into_iter()
        .filter(|p| r.exists(p))
        .map(|p| (p.to_string(), r.read(p)))
        .collect()
}

#[test]
fn restoring_a_checkpoint_from_before_hooks_install_keeps_the_hooks() {
    let r = Repo::new();
    r.write("a.txt", b"v1\n");
    let before_install = r.save("before install");

    r.ok(&["hooks", "install", "claude", "--shared"]);
    assert!(r.exists(".claude/settings.json"));
    r.write(".claude/settings.local.json", b"{\"model\": \"opus\"}\n");
    // Even tracked by git, the settings are the agent's, not a checkpoint's.
    r.git(&["add", ".claude/settings.json"]);
    r.git(&["commit", "-q", "-m", "share the hooks"]);
    // Other settings in `.claude/` and other files in a nested `.claude/` are ordinary
    // files; a nested `settings.json` is where `hooks install claude` run in `sub/`
    // writes (Claude Code reads a project's settings where it starts), so it is the
    // agent's too.
    r.write(".claude/commands/review.md", b"review it\n");
    r.write("sub/.claude/commands/fix.md", b"fix it\n");
    r.write("sub/.claude/settings.json", b"{}\n");
    r.write("a.txt", b"v2\n");
    let after = r.save("after install");
    let settings = settings_files(&r);
    assert_eq!(settings.len(), 2);

    let paths = changed_paths(&r, &after);
    assert!(
        paths.iter().all(|p| !p.starts_with(".claude/settings")),
        "{paths:?}"
    );
    assert!(paths.contains(&".claude/commands/review.md".to_string()));
    assert!(paths.contains(&"sub/.claude/commands/fix.md".to_string()));
    assert!(!paths.contains(&"sub/.claude/settings.json".to_string()));

    r.ok(&["restore", &before_install]);
    assert_eq!(r.read("a.txt"), b"v1\n");
    assert!(!r.exists(".claude/commands/review.md"));
    assert!(!r.exists("sub/.claude/commands/fix.md"));
    assert_eq!(r.read("sub/.claude/settings.json"), b"{}\n");
    assert_eq!(settings_files(&r), settings, "the settings are unchanged");
    let text = listed_text(&r);
    assert!(!text.contains("\"path\":\".claude/settings"), "{text}");
}

/// A checkpoint an older build made, which holds the settings file as an ordinary file:
/// restoring it neither writes its copy over the settings nor refuses because of them.
#[test]
fn settings_an_older_checkpoint_holds_are_left_alone() {
    let r = Repo::new();
    r.write("a.txt", b"v1\n");
    r.save("one");
    raw_store::plant(&r.store_path(), Some(b".claude"), b"settings.json");
    r.ok(&["hooks", "install", "claude"]);
    let settings = settings_files(&r);
    assert_eq!(settings.len(), 1);

    let report = r.json_of(&["restore", "evil"]);
    assert_eq!(settings_files(&r), settings, "{report}");
    assert!(!r.exists("a.txt"), "the rest is restored: {report}");
    assert_eq!(
        strings(&report["untouched"]),
        [".claude/settings.json"],
        "{report}"
    );
}
