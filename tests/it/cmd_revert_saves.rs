//! A revert, and a `restore --only-session`, is a checkpoint of its own (issue 36, item
//! 3): the result is saved with a message that names what was undone as the user wrote
//! it and metadata that names it by id, so `status` is clean after it and `log` tells
//! the story. Made through our MCP server by an agent, it is filed under the agent's
//! turn by the hook that runs after the call, so the agent's own undo can itself be
//! undone by turn, by tool call and by `--only-session`.

use crate::common;

use common::claude::ClaudeSession;
use common::mcp::{call, connect, ok, runtime};
use common::*;
use serde_json::{json, Value};

const SESSION: &str = "aaaa1111-0000-4000-8000-000000000001";

/// A session of two prompts: the first edits `a.txt`, the second creates `c.txt`.
fn two_prompts(r: &Repo) -> ClaudeSession<'_> {
    r.write("a.txt", b"one\n");
    r.write("b.txt", b"two\n");
    let mut s = ClaudeSession::new(r, SESSION);
    s.prompt("Edit a");
    s.write("a.txt", b"one (agent)\n");
    s.prompt("Add c");
    s.write("c.txt", b"three\n");
    s
}

/// The line of `out`'s stdout that starts with `start`.
#[track_caller]
fn line<'o>(out: &'o Out, start: &str) -> &'o str {
    out.stdout
        .lines()
        .find(|line| line.starts_with(start))
        .unwrap_or_else(|| panic!("a line starting {start:?} in {out}"))
}

fn status_is_clean(r: &Repo) -> bool {
    r.json(&["status", "--json"])["clean"] == true
}

fn meta<'v>(checkpoint: &'v Value, key: &str) -> &'v Value {
    &checkpoint["meta"][key]
}

#[test]
fn a_revert_is_saved_as_a_checkpoint_named_as_typed() {
    let r = Repo::new();
    two_prompts(&r);
    let turn = r.json(&["show", "--json", "aaaa1111:turn2"]);
    let (start, end) = (turn["id"].clone(), turn["turn_end"].clone());
    r.write("b.txt", b"two (mine, unsaved)\n");
    let out = r.ok(&["revert", "aaaa1111:turn2"]);
    assert!(!r.exists("c.txt"), "{out}");
    let saved = line(&out, "Saved the revert as checkpoint ");
    assert!(
        saved.ends_with(": revert of aaaa1111:turn2 (1 file)"),
        "{out}"
    );
    assert!(status_is_clean(&r), "the result is saved: {out}");

    let log = r.log_json(false);
    let (revert, safety) = (&log[0], &log[1]);
    assert_eq!(revert["message"], "revert of aaaa1111:turn2 (1 file)");
    assert_eq!(safety["message"], "before revert of aaaa1111:turn2");
    assert_eq!(revert["parents"], json!([safety["id"]]), "{revert:#}");
    assert_eq!(r.current(), revert["id"].as_str().unwrap());
    assert_eq!(meta(revert, "kind"), "revert");
    assert_eq!(meta(revert, "revision"), "aaaa1111:turn2");
    assert_eq!(
        meta(revert, "reverted"),
        &json!(format!(
            "{}..{}",
            start.as_str().unwrap(),
            end.as_str().unwrap()
        ))
    );
    assert_eq!(meta(revert, "path"), "c.txt", "{revert:#}");
    assert!(
        meta(revert, "session").is_null(),
        "no hook made it: {revert:#}"
    );
    // The user's unsaved edit is in the safety checkpoint, and stays.
    assert_eq!(r.read("b.txt"), b"two (mine, unsaved)\n");
}

#[test]
fn with_nothing_unsaved_the_revert_is_a_child_of_the_current_checkpoint() {
    let r = Repo::new();
    two_prompts(&r);
    let current = r.current();
    let report = r.json(&["revert", "--json", "aaaa1111:toolu_aaaa_1"]);
    assert!(report["safety_checkpoint"].is_null(), "{report:#}");
    let made = report["checkpoint"]
        .as_str()
        .expect("the revert's checkpoint");
    assert_eq!(r.current(), made);
    assert_eq!(r.parents(made), [current]);
    assert_eq!(r.read("a.txt"), b"one\n");
    assert!(status_is_clean(&r));
    let shown = r.json(&["show", "--json", made]);
    assert_eq!(
        shown["message"], "revert of aaaa1111:toolu_aaaa_1 (1 file)",
        "{shown:#}"
    );
    // A dry run saves nothing, and says so.
    r.write("c.txt", b"three, edited\n");
    let dry = r.json(&["revert", "--json", "--dry-run", "aaaa1111:turn1"]);
    assert!(dry["checkpoint"].is_null(), "{dry:#}");
}

#[test]
fn a_revert_that_leaves_conflicts_is_not_saved_until_they_are_resolved() {
    let r = Repo::new();
    r.write("n.txt", b"a\nb\nc\n");
    r.write("x.txt", b"x\n");
    r.save("start");
    r.write("n.txt", b"a\nB\nc\n");
    r.write("x.txt", b"x, changed\n");
    r.save("step");
    r.write("n.txt", b"a\nB, mine\nc\n");
    r.save("mine");
    let before = r.log_ids(true);
    let out = r.run(&["revert", "--json", "@~1"]);
    assert_eq!(out.code, 1, "n.txt conflicts: {out}");
    let report = parse_json(&out, "revert --json");
    assert!(report["checkpoint"].is_null(), "{report:#}");
    assert_eq!(r.log_ids(true), before, "nothing saved: {out}");
    assert!(r.read_string("n.txt").contains("<<<<<<< worktree"));
    assert_eq!(r.read("x.txt"), b"x\n");
    assert!(
        !status_is_clean(&r),
        "the markers are for the user to resolve, then save"
    );
}

#[test]
fn restore_only_session_is_saved_as_a_checkpoint_named_as_typed() {
    let r = Repo::new();
    two_prompts(&r);
    let target = r.id("aaaa1111:prompt2");
    r.write("b.txt", b"two (mine, unsaved)\n");
    let out = r.ok(&["restore", "aaaa1111:prompt2", "--only-session"]);
    assert!(!r.exists("c.txt"), "{out}");
    let saved = line(&out, "Saved the restore as checkpoint ");
    assert!(
        saved.ends_with(": restore of aaaa1111's files to aaaa1111:prompt2 (1 file)"),
        "{out}"
    );
    assert!(status_is_clean(&r), "{out}");
    // HEAD's branch takes the result, after the safety checkpoint: `log` shows both.
    let log = r.log_json(false);
    assert_eq!(
        log[0]["message"],
        "restore of aaaa1111's files to aaaa1111:prompt2 (1 file)"
    );
    assert_eq!(
        log[1]["message"],
        "before restore of aaaa1111's files to aaaa1111:prompt2"
    );
    assert_eq!(log[0]["parents"], json!([log[1]["id"]]));
    assert_eq!(meta(&log[0], "kind"), "restore");
    assert_eq!(meta(&log[0], "restored"), &json!(target));
    assert_eq!(meta(&log[0], "restored_session"), SESSION);
    assert_eq!(meta(&log[0], "revision"), "aaaa1111:prompt2");
    assert_eq!(r.read("b.txt"), b"two (mine, unsaved)\n");
    // Run again, nothing to put back: nothing saved.
    let ids = r.log_ids(true);
    r.ok(&["restore", "aaaa1111:prompt2", "--only-session"]);
    assert_eq!(r.log_ids(true), ids);
}

/// Prompt 3 of the session asks the agent to undo its turn 2, which it does through our
/// MCP server's `revert`; Claude Code's `PostToolUse` hook runs after the call.
/// Returns the call's id.
fn agent_reverts_its_turn_2(r: &Repo) -> String {
    let mut s = two_prompts(r);
    s.prompt("Undo your second turn");
    let rev = "aaaa1111:turn2";
    s.mcp("revert", json!({"rev": rev}), |r| {
        runtime().block_on(async {
            let client = connect(&r.sb, &r.dir, &["mcp"]).await;
            let answer = ok(&call(&client, "revert", json!({"rev": rev})).await);
            assert_eq!(answer["applied"], 1, "{answer:#}");
            client.cancel().await.unwrap();
        })
    })
}

#[test]
fn the_agents_mcp_revert_is_filed_under_its_turn_by_the_hook_after_it() {
    let r = Repo::new();
    let call_id = agent_reverts_its_turn_2(&r);
    assert!(!r.exists("c.txt"));
    assert!(status_is_clean(&r));
    let log = r.log_json(false);
    // The hook's checkpoint of the call, then the revert's own.
    let (step, revert) = (&log[0], &log[1]);
    assert_eq!(meta(revert, "kind"), "revert", "{log:#?}");
    assert_eq!(meta(step, "tool"), "mcp__checkpoint__revert");
    assert_eq!(meta(step, "prompt"), "3");
    assert_eq!(meta(step, "made_checkpoint"), &revert["id"], "{step:#}");
    assert_eq!(meta(step, "path"), "c.txt", "{step:#}");
    assert_eq!(step["parents"], json!([revert["id"]]));

    assert_eq!(meta(step, "tool_use_id"), &json!(call_id));
    // Turn 3 is the revert.
    let diff = r.ok(&["diff", "aaaa1111:turn3"]).stdout;
    assert!(
        diff.contains("deleted file mode") && diff.contains("-three"),
        "{diff}"
    );
}

#[test]
fn the_agents_mcp_revert_is_undone_by_turn() {
    let r = Repo::new();
    agent_reverts_its_turn_2(&r);
    let out = r.ok(&["revert", "aaaa1111:turn3"]);
    assert_eq!(r.read("c.txt"), b"three\n", "{out}");
    assert_eq!(r.read("a.txt"), b"one (agent)\n");
}

#[test]
fn the_agents_mcp_revert_is_undone_by_its_tool_call() {
    let r = Repo::new();
    let call_id = agent_reverts_its_turn_2(&r);
    let out = r.ok(&["revert", &format!("aaaa1111:{call_id}")]);
    assert_eq!(r.read("c.txt"), b"three\n", "{out}");
}

#[test]
fn the_agents_mcp_revert_is_the_sessions_own_for_only_session() {
    let r = Repo::new();
    agent_reverts_its_turn_2(&r);
    let report = r.json(&["restore", "--json", "aaaa1111:prompt3", "--only-session"]);
    assert_eq!(report["changed_by_session"], json!(["c.txt"]), "{report:#}");
    assert_eq!(report["conflicts"], json!([]), "{report:#}");
    assert_eq!(r.read("c.txt"), b"three\n");
}

#[test]
fn a_revert_the_user_made_between_tool_calls_is_not_the_agents() {
    let r = Repo::new();
    let mut s = two_prompts(&r);
    s.prompt("Go on");
    // The user reverts on the command line; the agent then edits another file.
    r.ok(&["revert", "aaaa1111:turn2"]);
    s.write("d.txt", b"four\n");
    let log = r.log_json(false);
    assert!(meta(&log[0], "made_checkpoint").is_null(), "{:#}", log[0]);
    let report = r.json(&[
        "restore",
        "--json",
        "--dry-run",
        "aaaa1111:prompt3",
        "--only-session",
    ]);
    assert_eq!(report["changed_by_session"], json!(["d.txt"]), "{report:#}");
}

/// A step that changed `a.txt`, `b.txt` and `dir/c.txt` and `dir/d.txt`.
fn one_step_of_four_files(r: &Repo) {
    for (path, data) in [
        ("a.txt", "a\n"),
        ("b.txt", "b\n"),
        ("dir/c.txt", "c\n"),
        ("dir/d.txt", "d\n"),
    ] {
        r.write(path, data.as_bytes());
    }
    r.save("start");
    for path in ["a.txt", "b.txt", "dir/c.txt", "dir/d.txt"] {
        r.write(path, format!("{path}, changed\n").as_bytes());
    }
    r.save("the step");
}

/// (path, status, action) of each path a `revert --json` report lists.
fn plan(report: &Value) -> Vec<(String, String, String)> {
    report["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let field = |k: &str| p[k].as_str().unwrap().to_string();
            (field("path"), field("status"), field("action"))
        })
        .collect()
}

#[test]
fn a_revert_of_some_paths_undoes_the_step_for_those_only() {
    let r = Repo::new();
    one_step_of_four_files(&r);
    let step = r.current();
    let args = ["revert", "--json", "@", "--", "a.txt", "dir"];
    let dry = r.json(&[&args[..2], &["--dry-run"], &args[2..]].concat());
    let report = r.json(&args);
    let wanted: Vec<(String, String, String)> = ["a.txt", "dir/c.txt", "dir/d.txt"]
        .iter()
        .map(|p| (p.to_string(), "applied".to_string(), "write".to_string()))
        .collect();
    assert_eq!(plan(&dry), wanted, "{dry:#}");
    assert_eq!(plan(&report), wanted, "{report:#}");
    assert_eq!(r.read("a.txt"), b"a\n");
    assert_eq!(r.read("dir/c.txt"), b"c\n");
    assert_eq!(r.read("dir/d.txt"), b"d\n");
    assert_eq!(r.read("b.txt"), b"b.txt, changed\n", "not named: kept");
    let made = report["checkpoint"].as_str().unwrap();
    let shown = r.json(&["show", "--json", made]);
    assert_eq!(shown["message"], "revert of @ -- a.txt dir (3 files)");
    assert_eq!(meta(&shown, "reverted_paths"), "a.txt\ndir");
    assert_eq!(r.parents(made), [step]);
}

#[test]
fn revert_paths_are_relative_to_the_current_directory() {
    let r = Repo::new();
    one_step_of_four_files(&r);
    r.sb.ok_in(&r.p("dir"), &["revert", "@", "--", "c.txt"]);
    assert_eq!(r.read("dir/c.txt"), b"c\n");
    assert_eq!(r.read("dir/d.txt"), b"dir/d.txt, changed\n");
    assert_eq!(r.read("a.txt"), b"a.txt, changed\n");
}

#[test]
fn a_revert_path_the_step_did_not_change_fails_and_changes_nothing() {
    let r = Repo::new();
    one_step_of_four_files(&r);
    r.write("e.txt", b"unsaved, not in the step\n");
    let (before, ids) = (r.snapshot(), r.log_ids(true));
    for dry_run in [true, false] {
        let mut args = vec!["revert", "@", "--", "a.txt", "e.txt"];
        if dry_run {
            args.insert(1, "--dry-run");
        }
        let out = r.run(&args);
        assert_eq!(out.code, 1, "{out}");
        assert_eq!(
            out.stderr,
            "error: pathspec 'e.txt' did not match any file that @ changed; nothing was changed\n",
            "{out}"
        );
        assert_snap_eq(&before, &r.snapshot(), "nothing changed");
        assert_eq!(r.log_ids(true), ids, "no checkpoint made: {out}");
    }
}

#[test]
fn an_agents_mcp_restore_to_an_older_revert_files_nothing() {
    let r = Repo::new();
    let mut s = two_prompts(&r);
    // The user's own revert, then the agent works on, then restores the whole worktree
    // to that revert's checkpoint through our MCP server.
    r.ok(&["revert", "aaaa1111:toolu_aaaa_1"]);
    let old = r.current();
    s.prompt("Go on");
    s.write("d.txt", b"four\n");
    s.mcp("restore", json!({"rev": old}), |r| {
        r.ok(&["restore", &old]);
    });
    let log = r.log_json(true);
    let step = checkpoint_with(&log, &[("tool", "mcp__checkpoint__restore")]);
    assert!(meta(step, "made_checkpoint").is_null(), "{step:#}");
    assert_eq!(step["parents"], json!([old]));
}
