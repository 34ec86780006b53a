//! A new user's first hour: the help and manual read right, an empty store says what to
//! run, long lists are summarised, and errors with a likely cause name it and the next
//! command.

use crate::common;
use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use common::{is_root, open_up, parse_json, run_unprivileged, Repo};

#[test]
fn the_manual_synopsis_keeps_the_value_of_dash_c_and_setup_commands_come_last() {
    let page = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("man/git-checkpoint.1"),
    )
    .unwrap();
    let synopsis = page
        .lines()
        .skip_while(|l| *l != ".SH SYNOPSIS")
        .nth(1)
        .unwrap();
    assert!(synopsis.contains("<path>"), "{synopsis}");
    assert!(!synopsis.contains("\\-C \\fR]"), "{synopsis}");

    let repo = Repo::new();
    let help = repo.ok(&["--help"]).stdout;
    let order: Vec<&str> = help
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    let at = |name: &str| order.iter().position(|c| *c == name).unwrap();
    assert!(at("completions") > at("watch"), "{order:?}");
    assert!(at("install-man") > at("watch"), "{order:?}");
    assert!(at("hooks") > at("sessions"), "{order:?}");
}

#[test]
fn restore_help_names_every_revision_form() {
    let repo = Repo::new();
    let help = repo.ok(&["restore", "--help"]).stdout;
    for form in [
        "<session>:prompt<N>",
        "<remote>/<branch>",
        "<tool-call-id>",
        "~N",
    ] {
        assert!(help.contains(form), "restore --help lacks {form}:\n{help}");
    }
}

#[test]
fn an_empty_store_says_what_to_run_and_status_counts_instead_of_listing() {
    let repo = Repo::new();
    for i in 0..30 {
        repo.write(format!("src/f{i}.txt"), b"x\n");
    }
    for command in [&["log"][..], &["branch"], &["sessions"]] {
        let out = repo.ok(command);
        assert_eq!(out.stdout, "", "{command:?}: {out}");
        assert!(
            out.stderr
                .contains("no checkpoints yet: run 'git checkpoint save'"),
            "{command:?}: {out}"
        );
    }
    let status = repo.ok(&["status"]);
    assert_eq!(status.stdout, "30 paths to save\n", "{status}");
    assert!(status.stderr.contains("git checkpoint save"), "{status}");
    // Scripts still get every path, and nothing on stderr.
    let json = repo.ok(&["status", "--json"]);
    assert_eq!(json.stderr, "", "{json}");
    assert_eq!(
        parse_json(&json, "status")["changes"]
            .as_array()
            .unwrap()
            .len(),
        30
    );

    repo.save("first");
    let sessions = repo.ok(&["sessions"]);
    assert!(
        sessions.stderr.contains("hooks install"),
        "no hint at the hooks: {sessions}"
    );
    assert!(!repo.ok(&["log"]).stderr.contains("no checkpoints"));

    // Another branch made current before it has a checkpoint: say which one is empty.
    repo.ok(&["fork", "@", "-b", "side"]);
    let branches = repo.ok(&["branch", "--json"]);
    assert!(branches.stdout.contains("side"), "{branches}");
}

/// `stats` and `gc` print a summary by default, every checkpoint with `-v`, and every one
/// in `--json` always.
#[test]
fn stats_and_gc_summarise_long_lists_unless_verbose() {
    let repo = Repo::new();
    for i in 0..9 {
        repo.write("f.txt", format!("version {i}\n").as_bytes());
        repo.save(&format!("save {i}"));
    }
    let rows = |text: &str| text.lines().filter(|l| l.contains(" save ")).count();

    let stats = repo.ok(&["stats"]).stdout;
    assert_eq!(rows(&stats), 5, "{stats}");
    assert!(
        stats.contains("... and 4 more (-v lists every checkpoint)"),
        "{stats}"
    );
    let verbose = repo.ok(&["stats", "-v"]).stdout;
    assert_eq!(rows(&verbose), 9, "{verbose}");
    assert!(!verbose.contains("more (-v"), "{verbose}");
    let json = repo.json(&["stats", "--json"]);
    assert_eq!(json["per_checkpoint"].as_array().unwrap().len(), 9);

    let dry = repo.ok(&["gc", "--keep", "1", "--dry-run"]).stdout;
    assert!(dry.starts_with("Would remove 8 of 9 checkpoints"), "{dry}");
    assert_eq!(rows(&dry), 5, "{dry}");
    assert!(dry.contains("... and 3 more (-v lists every one)"), "{dry}");
    let all = repo.ok(&["gc", "--keep", "1", "-v"]).stdout;
    assert_eq!(rows(&all), 8, "{all}");
    assert_eq!(repo.log_ids(true).len(), 1, "gc -v removed what it listed");
}

#[test]
fn git_revision_habits_get_a_hint_at_the_checkpoint_form() {
    let repo = Repo::new();
    repo.write("f.txt", b"1\n");
    repo.save("one");
    for (rev, suggestion) in [("HEAD", "'@'"), ("HEAD~1", "'@~1'"), ("HEAD^", "'@^'")] {
        let out = repo.run(&["show", rev]);
        assert_eq!(out.code, 1, "{out}");
        assert!(
            out.stderr.contains(&format!("unknown revision '{rev}'"))
                && out.stderr.contains(&format!("try {suggestion}")),
            "{out}"
        );
        assert_eq!(out.stderr.lines().count(), 1, "{out}");
    }
}

/// A branch fetched in another worktree of the same repository is not in this one's store:
/// the error says so and what to run, instead of a bare "unknown revision".
#[test]
fn a_branch_fetched_by_another_worktree_is_hinted_at() {
    let origin = Repo::new();
    origin.write("f.txt", b"shared\n");
    origin.save("shared");
    let bare = origin.sb.root.join("remote.git");
    origin
        .sb
        .git(&origin.sb.root, &["init", "-q", "--bare", "remote.git"]);
    origin.git(&["remote", "add", "origin", bare.to_str().unwrap()]);
    origin.ok(&["push", "origin", "main"]);

    let clone = origin.sb.root.join("clone");
    origin.sb.git(
        &origin.sb.root,
        &["clone", "-q", bare.to_str().unwrap(), "clone"],
    );
    origin
        .sb
        .git(&clone, &["commit", "-q", "--allow-empty", "-m", "base"]);
    origin
        .sb
        .git(&clone, &["worktree", "add", "-q", "../linked"]);
    origin.sb.ok_in(&clone, &["fetch", "origin"]);

    let linked = origin.sb.root.join("linked");
    let out = origin
        .sb
        .run_in(&linked, &["export", "origin/main", "-b", "promoted"]);
    assert_eq!(out.code, 1, "{out}");
    assert!(
        out.stderr.contains("unknown revision 'origin/main'")
            && out.stderr.contains("another worktree")
            && out.stderr.contains("git checkpoint fetch origin"),
        "{out}"
    );
    // Following the hint works.
    origin.sb.ok_in(&linked, &["fetch", "origin"]);
    origin.sb.ok_in(&linked, &["show", "origin/main"]);
}

/// A store this user cannot write: the error says whose it is and what to do, instead of a
/// bare "Permission denied". As root the binary runs as `nobody` (setpriv), so that
/// permissions apply.
#[test]
fn a_store_of_another_user_names_its_owner() {
    let repo = Repo::new();
    if !is_root() {
        common::skip_only_if_allowed(
            "UNREADABLE",
            "a store owned by another user needs root to make",
        );
        return;
    }
    if !common::prepare_unprivileged(&repo) {
        return;
    }
    repo.write("f.txt", b"1\n");
    repo.save("one");
    open_up(&repo.sb.root);
    let checkpoint_dir = repo.git_dir().join("checkpoint");
    for entry in std::fs::read_dir(&checkpoint_dir).unwrap() {
        let path = entry.unwrap().path();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    std::fs::set_permissions(&checkpoint_dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    repo.write("f.txt", b"2\n");
    open_up(&repo.p("f.txt"));

    for command in [&["save"][..], &["gc"]] {
        let out = run_unprivileged(&repo, command);
        assert_eq!(out.code, 1, "{command:?}: {out}");
        assert!(
            out.stderr.contains("Permission denied")
                && out.stderr.contains("belongs to uid 0, not to you")
                && out.stderr.contains("run git checkpoint as its owner"),
            "{command:?}: {out}"
        );
    }
    // Reading is still fine.
    let log = run_unprivileged(&repo, &["log"]);
    assert_eq!(log.code, 0, "{log}");
}

/// git refuses a repository owned by someone else and says which command allows it, on a
/// line indented by a tab: the tab must reach the user as a tab, not as `\t`.
#[test]
fn the_dubious_ownership_advice_keeps_its_tab() {
    let repo = Repo::new();
    if !is_root() || Command::new("setpriv").arg("--version").output().is_err() {
        common::skip_only_if_allowed(
            "UNREADABLE",
            "a repository owned by another user needs root and setpriv",
        );
        return;
    }
    open_up(&repo.sb.root);
    let out = run_unprivileged(&repo, &["status"]);
    assert_eq!(out.code, 128, "{out}");
    assert!(out.stderr.contains("dubious ownership"), "{out}");
    assert!(
        out.stderr
            .contains("\n\tgit config --global --add safe.directory"),
        "{out}"
    );
    assert!(!out.stderr.contains("\\t"), "{out}");
}

/// `hooks install claude` writes `.claude/settings.local.json`, Claude Code's personal,
/// not committed file: it is kept out of `git status` through the repository's
/// `info/exclude`, and uninstall takes out exactly that line.
#[test]
fn claudes_personal_settings_stay_out_of_git_status() {
    let repo = Repo::new();
    repo.write("a.txt", b"a\n");
    let exclude = repo.git_dir().join("info/exclude");
    std::fs::create_dir_all(exclude.parent().unwrap()).unwrap();
    let mine = b"# my own\n*.swp";
    std::fs::write(&exclude, mine).unwrap();
    repo.git(&["add", "a.txt"]);
    repo.git(&["commit", "-q", "-m", "a"]);

    let install = repo.ok(&["hooks", "install", "claude"]);
    assert!(install.stdout.contains("info/exclude"), "{install}");
    assert!(repo.p(".claude/settings.local.json").exists());
    assert_eq!(
        repo.git(&["status", "--porcelain"]),
        "",
        "git sees the personal file"
    );
    // Installing again adds nothing twice.
    repo.ok(&["hooks", "install", "claude"]);
    let text = std::fs::read_to_string(&exclude).unwrap();
    assert_eq!(
        text.matches("/.claude/settings.local.json").count(),
        1,
        "{text}"
    );

    let uninstall = repo.ok(&["hooks", "uninstall", "claude"]);
    assert!(uninstall.stdout.contains("info/exclude"), "{uninstall}");
    let text = std::fs::read(&exclude).unwrap();
    // The user's last line had no newline; one was added before our lines and stays.
    assert_eq!(
        text,
        b"# my own\n*.swp\n",
        "{}",
        String::from_utf8_lossy(&text)
    );

    // The shared file is the project's: no exclude line for it.
    repo.ok(&["hooks", "install", "claude", "--shared"]);
    assert!(!std::fs::read_to_string(&exclude)
        .unwrap()
        .contains(".claude"));
}

/// Events a user hooks by hand: `PreToolUse` is saved as what it is ("before Edit"), never
/// answers the tool call's revision in place of the checkpoint after it, and `Stop`, which
/// names no step, makes a checkpoint only when something changed. Files are named from the
/// worktree's top wherever the agent runs.
#[test]
fn hand_hooked_claude_events_say_what_they_are() {
    use common::run_hook;
    use serde_json::json;
    let repo = Repo::new();
    repo.write("sub/dir/parse.c", b"int a;\n");
    let file = repo.p("sub/dir/parse.c");
    let event = |name: &str| {
        json!({
            "session_id": "s-1",
            "cwd": repo.p("sub"),
            "hook_event_name": name,
            "tool_name": "Edit",
            "tool_use_id": "toolu_1",
            "tool_input": {"file_path": file},
        })
        .to_string()
    };
    let out = run_hook(&repo.sb, &repo.dir, event("PreToolUse").as_bytes());
    assert_eq!(out.code, 0, "{out}");
    repo.write("sub/dir/parse.c", b"int b;\n");
    run_hook(&repo.sb, &repo.dir, event("PostToolUse").as_bytes());
    let log = repo.log_json(false);
    assert_eq!(log[1]["message"], "before Edit: sub/dir/parse.c", "{log:?}");
    assert_eq!(log[1]["meta"]["kind"], "before-tool");
    assert_eq!(log[0]["message"], "after Edit: sub/dir/parse.c", "{log:?}");
    assert_eq!(log[0]["meta"]["path"], "sub/dir/parse.c");
    let after = repo.id("s-1:toolu_1");
    assert_eq!(
        after,
        log[0]["id"].as_str().unwrap(),
        "the revision names the checkpoint after the call"
    );

    let stop = json!({"session_id": "s-1", "cwd": repo.dir, "hook_event_name": "Stop"}).to_string();
    run_hook(&repo.sb, &repo.dir, stop.as_bytes());
    assert_eq!(repo.log_json(false).len(), 2, "an empty Stop checkpoint");
    repo.write("late.txt", b"late\n");
    run_hook(&repo.sb, &repo.dir, stop.as_bytes());
    let log = repo.log_json(false);
    assert_eq!(log.len(), 3);
    assert_eq!(log[0]["message"], "claude Stop");
}

/// `show` takes the summaries `diff` takes, `--name-only` included, and refuses two at
/// once as a usage error.
#[test]
fn show_prints_changes_as_diff_does() {
    let repo = Repo::new();
    repo.write("a.txt", b"1\n");
    repo.write("b.txt", b"1\n");
    repo.save("one");
    repo.write("b.txt", b"2\n");
    repo.write("c.txt", b"new\n");
    repo.save("two");
    let shown = repo.ok(&["show", "--name-only"]).stdout;
    let diffed = repo.ok(&["diff", "--name-only", "@~1", "@"]).stdout;
    assert_eq!(diffed, "b.txt\nc.txt\n");
    assert!(shown.ends_with(&diffed), "{shown}");
    let status = repo.ok(&["show", "--name-status", "@"]).stdout;
    assert!(status.ends_with("M\tb.txt\nA\tc.txt\n"), "{status}");
    let both = repo.run(&["show", "--stat", "--name-only"]);
    assert_eq!(both.code, 2, "{both}");
}

/// `^` and `^N` name parents as git's do, chained with `~` in any order.
#[test]
fn caret_names_parents_as_in_git() {
    let repo = Repo::new();
    for i in 0..3 {
        repo.write("f.txt", format!("{i}\n").as_bytes());
        repo.save(&format!("save {i}"));
    }
    assert_eq!(repo.id("@^"), repo.id("@~1"));
    assert_eq!(repo.id("@^^"), repo.id("@~2"));
    assert_eq!(repo.id("@^1~1"), repo.id("@~2"));
    assert_eq!(repo.id("@^0"), repo.id("@"));
    assert_eq!(repo.id("main^"), repo.id("@~1"));
    let second = repo.run(&["show", "@^2"]);
    assert_eq!(second.code, 1, "{second}");
    assert!(
        second.stderr.contains("asks for parent 2 of checkpoint")
            && second.stderr.contains("which has only 1"),
        "{second}"
    );
    let bad = repo.run(&["show", "@^x"]);
    assert!(
        bad.stderr.contains("'^' must be followed by a number"),
        "{bad}"
    );
}
