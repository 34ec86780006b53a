//! `git checkpoint mcp`: rmcp's own client drives the real binary over stdio, as an
//! agent would, on real repositories; every effect is checked on disk and against the
//! CLI.

use crate::common;
use std::path::Path;

use common::claude::ClaudeSession;
use common::mcp::*;
use common::*;
use rmcp::model::{CallToolRequestParams, JsonObject};
use serde_json::{json, Value};

/// Every tool the server offers, and the ones `--read-only` keeps.
const ALL_TOOLS: [&str; 11] = [
    "list_checkpoints",
    "list_sessions",
    "show",
    "diff",
    "op_log",
    "save",
    "restore",
    "revert",
    "pin",
    "undo",
    "redo",
];
const READING_TOOLS: [&str; 5] = [
    "list_checkpoints",
    "list_sessions",
    "show",
    "diff",
    "op_log",
];
/// The tools that may overwrite work.
const DESTRUCTIVE_TOOLS: [&str; 4] = ["restore", "revert", "undo", "redo"];

/// The short id `log` gives checkpoint `id`.
fn short_id(r: &Repo, id: &str) -> String {
    let log = r.log_json(true);
    let entry = log.iter().find(|c| c["id"] == id).expect("in the log");
    entry["short_id"].as_str().unwrap().to_string()
}

/// A repository with three checkpoints: a.txt is 1, then 2, then 3.
fn three_steps() -> Repo {
    let r = Repo::new();
    for n in 1..=3 {
        r.write("a.txt", format!("{n}\n").as_bytes());
        r.write(format!("step{n}.txt"), b"x\n");
        r.save(&format!("step {n}"));
    }
    r
}

#[test]
fn handshake_and_tool_list_follow_the_protocol() {
    let r = Repo::new();
    runtime().block_on(async {
        let client = connect(&r.sb, &r.dir, &["mcp"]).await;
        let info = client.peer_info().expect("the server's answer");
        assert_eq!(
            info.server_info.as_ref().expect("server info").name,
            "git-checkpoint"
        );
        assert!(info.capabilities.tools.is_some());
        let tools = client.list_all_tools().await.unwrap();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(names, ALL_TOOLS);
        for tool in &tools {
            let name = tool.name.as_ref();
            assert!(
                (1..=64).contains(&name.len())
                    && name
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'),
                "{name}"
            );
            assert_eq!(
                tool.input_schema.get("type"),
                Some(&json!("object")),
                "{name}"
            );
            assert!(tool.input_schema.get("properties").is_some(), "{name}");
            assert!(
                tool.description.as_ref().is_some_and(|d| d.len() > 80),
                "{name}"
            );
            let hints = tool.annotations.as_ref().expect("annotations");
            let reading = READING_TOOLS.contains(&name);
            assert_eq!(hints.read_only_hint, Some(reading), "{name}");
            assert_eq!(
                hints.destructive_hint,
                Some(DESTRUCTIVE_TOOLS.contains(&name)),
                "{name}"
            );
        }
        // Required arguments are in the schema.
        let restore = tools.iter().find(|t| t.name == "restore").unwrap();
        assert_eq!(restore.input_schema.get("required"), Some(&json!(["rev"])));
        client.cancel().await.unwrap();
    });
}

#[test]
fn read_only_offers_no_writing_tool() {
    let r = three_steps();
    runtime().block_on(async {
        let client = connect(&r.sb, &r.dir, &["mcp", "--read-only"]).await;
        let tools = client.list_all_tools().await.unwrap();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        // The reading tools, and the two whose dry run changes nothing, for it alone.
        assert_eq!(names, [&READING_TOOLS[..], &["restore", "revert"]].concat());
        for tool in &tools {
            let hints = tool.annotations.as_ref().expect("annotations");
            assert_eq!(hints.read_only_hint, Some(true), "{}", tool.name);
        }
        let arguments: JsonObject = serde_json::from_value(json!({"message": "not here"})).unwrap();
        let refused = client
            .call_tool(CallToolRequestParams::new("save").with_arguments(arguments))
            .await;
        let message = refused.expect_err("save is not offered").to_string();
        assert!(message.contains("--read-only"), "{message}");
        let real = tool_error(&call(&client, "restore", json!({"rev": "@~1"})).await);
        assert!(real.contains("--read-only"), "{real}");
        // Reading still works, and nothing was restored.
        let listed = ok(&call(&client, "list_checkpoints", json!({})).await);
        assert_eq!(listed["checkpoints"].as_array().unwrap().len(), 3);
        client.cancel().await.unwrap();
    });
    assert_eq!(r.read_string("a.txt"), "3\n");
}

#[test]
fn save_list_show_and_pin_act_on_the_store() {
    let r = three_steps();
    r.write("b.txt", b"new\n");
    runtime().block_on(async {
        let client = connect(&r.sb, &r.dir, &["mcp"]).await;
        let saved = ok(&call(
            &client,
            "save",
            json!({"message": "before the refactor", "meta": {"by": "model"}}),
        )
        .await);
        let id = saved["id"].as_str().unwrap().to_string();
        assert_eq!(id, r.current());
        let log = r.log_json(false);
        assert_eq!(log[0]["message"], "before the refactor");
        assert_eq!(log[0]["meta"]["by"], "model");
        // A second save with nothing changed makes nothing.
        let again = call(&client, "save", json!({"message": "again"})).await;
        assert_eq!(ok(&again)["unchanged"], true);
        assert!(text(&again).contains("Nothing changed"), "{}", text(&again));
        assert_eq!(r.log_ids(true).len(), 4);

        let listed = call(&client, "list_checkpoints", json!({"limit": 2})).await;
        let page = ok(&listed);
        let ids: Vec<&str> = page["checkpoints"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["short_id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, [short_id(&r, &r.id("@")), short_id(&r, &r.id("@~1"))]);
        assert_eq!(page["next_offset"], 2);
        assert!(text(&listed).contains("before the refactor"));
        let rest = ok(&call(&client, "list_checkpoints", json!({"offset": 2})).await);
        assert_eq!(rest["checkpoints"].as_array().unwrap().len(), 2);
        assert_eq!(rest["next_offset"], Value::Null);
        // Only the checkpoints that changed a path.
        let touched = ok(&call(&client, "list_checkpoints", json!({"path": "step2.txt"})).await);
        let touched: Vec<&str> = touched["checkpoints"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["message"].as_str().unwrap())
            .collect();
        assert_eq!(touched, ["step 2"]);

        let shown = call(&client, "show", json!({"rev": "@"})).await;
        let record = ok(&shown);
        assert_eq!(record["id"], id.as_str());
        assert_eq!(record["changes"][0]["path"], "b.txt");
        assert_eq!(record["changes"][0]["status"], "A");
        // The text is `show --stat`'s (but for the age in the date, which moves on).
        let undated = |text: &str| -> Vec<String> {
            text.lines()
                .filter(|line| !line.starts_with("Date:"))
                .map(str::to_string)
                .collect()
        };
        let cli = r.ok(&["show", "--stat", "@"]).stdout;
        assert_eq!(undated(&text(&shown)), undated(&cli));
        assert!(
            text(&shown).contains("Meta:   by=model"),
            "{}",
            text(&shown)
        );

        let pinned = ok(&call(&client, "pin", json!({"rev": "@~1"})).await);
        assert_eq!(pinned["changed"], true);
        client.cancel().await.unwrap();
    });
    let log = r.log_json(false);
    assert_eq!(log[1]["pinned"], true);
    assert_eq!(log[0]["pinned"], false);
}

#[test]
fn restore_through_mcp_leaves_what_the_cli_leaves_and_a_safety_checkpoint() {
    let r = three_steps();
    r.write("a.txt", b"unsaved\n");
    r.write("scratch.txt", b"unsaved too\n");
    let before_ids = r.log_ids(true);
    let store_before = std::fs::read(r.store_path()).unwrap();
    let worktree_before = r.snapshot();
    let (target, safety) = runtime().block_on(async {
        let client = connect(&r.sb, &r.dir, &["mcp"]).await;
        // A dry run says what would change and changes nothing, the store included.
        let dry = call(&client, "restore", json!({"rev": "@~2", "dry_run": true})).await;
        let report = ok(&dry);
        assert_eq!(report["dry_run"], true);
        assert_eq!(report["would_save"], true);
        assert_eq!(report["written"], json!(["a.txt"]));
        assert_eq!(
            report["deleted"],
            json!(["scratch.txt", "step2.txt", "step3.txt"])
        );
        assert!(text(&dry).contains("delete step3.txt"), "{}", text(&dry));
        assert_eq!(r.snapshot(), worktree_before);
        assert_eq!(std::fs::read(r.store_path()).unwrap(), store_before);

        let done = call(&client, "restore", json!({"rev": "@~2"})).await;
        let report = ok(&done);
        let safety = report["safety_checkpoint"].as_str().unwrap().to_string();
        assert!(
            text(&done).contains(&format!(
                "Saved unsaved changes as checkpoint {} (undo with: undo)",
                short_id(&r, &safety)
            )),
            "{}",
            text(&done)
        );
        client.cancel().await.unwrap();
        (report["target"].as_str().unwrap().to_string(), safety)
    });
    assert_eq!(target, before_ids[2]);
    assert_eq!(r.current(), target);
    assert_eq!(r.read_string("a.txt"), "1\n");
    assert!(!r.exists("scratch.txt") && !r.exists("step3.txt"));
    let through_mcp = r.snapshot();
    // The safety checkpoint holds the unsaved work: restoring it brings it back.
    assert!(r.log_ids(true).contains(&safety));
    r.ok(&["restore", &safety]);
    assert_eq!(r.snapshot(), worktree_before);
    // The CLI's restore of the same checkpoint leaves the same worktree.
    r.ok(&["restore", &target]);
    assert_eq!(r.snapshot(), through_mcp);
}

#[test]
fn a_path_limited_restore_touches_only_those_paths() {
    let r = three_steps();
    runtime().block_on(async {
        let client = connect(&r.sb, &r.dir, &["mcp"]).await;
        let report = ok(&call(
            &client,
            "restore",
            json!({"rev": "@~2", "paths": ["a.txt"]}),
        )
        .await);
        assert_eq!(report["written"], json!(["a.txt"]));
        client.cancel().await.unwrap();
    });
    assert_eq!(r.read_string("a.txt"), "1\n");
    assert!(r.exists("step3.txt"));
}

#[test]
fn bad_arguments_and_unknown_revisions_are_tool_errors_with_the_cli_line() {
    let r = three_steps();
    runtime().block_on(async {
        let client = connect(&r.sb, &r.dir, &["mcp"]).await;
        let missing = tool_error(&call(&client, "restore", json!({})).await);
        assert!(
            missing.contains("invalid arguments") && missing.contains("rev"),
            "{missing}"
        );
        let unknown_field = tool_error(&call(&client, "show", json!({"revision": "@"})).await);
        assert!(unknown_field.contains("revision"), "{unknown_field}");
        let wrong_type =
            tool_error(&call(&client, "list_checkpoints", json!({"limit": "ten"})).await);
        assert!(wrong_type.contains("invalid arguments"), "{wrong_type}");
        let zero = tool_error(&call(&client, "list_checkpoints", json!({"limit": 0})).await);
        assert!(zero.contains("limit"), "{zero}");
        let lone_prompt =
            tool_error(&call(&client, "list_checkpoints", json!({"prompt": 2})).await);
        assert!(lone_prompt.contains("session"), "{lone_prompt}");
        // The same line as the CLI's.
        let no_such = tool_error(&call(&client, "restore", json!({"rev": "nosuchrev"})).await);
        let cli = r.run(&["restore", "nosuchrev"]);
        assert_eq!(cli.code, 1);
        assert_eq!(no_such, cli.stderr.trim_end());
        let outside = tool_error(&call(&client, "diff", json!({"paths": ["../elsewhere"]})).await);
        assert!(outside.starts_with("error: "), "{outside}");
        // The server is still there.
        ok(&call(&client, "list_checkpoints", json!({"limit": 1})).await);
        client.cancel().await.unwrap();
    });
    assert_eq!(r.read_string("a.txt"), "3\n");
}

#[test]
fn a_diff_over_the_budget_is_cut_with_a_note() {
    let r = three_steps();
    let big: String = (0..400)
        .map(|n| format!("line {n} of the first file\n"))
        .collect();
    r.write("big.txt", big.as_bytes());
    r.write("later.txt", b"the second file\n");
    runtime().block_on(async {
        let client = connect(&r.sb, &r.dir, &["mcp"]).await;
        let whole = call(&client, "diff", json!({"max_bytes": 1_000_000})).await;
        let all = ok(&whole);
        assert_eq!(all["cut"], false);
        assert!(text(&whole).contains("+the second file"));
        assert_eq!(text(&whole), r.ok(&["diff"]).stdout);

        let cut = call(&client, "diff", json!({"max_bytes": 2000})).await;
        let summary = ok(&cut);
        assert_eq!(summary["cut"], true);
        assert_eq!(
            summary["left_out"],
            json!(["the rest of big.txt", "later.txt"])
        );
        // Every changed file is still summarised.
        assert_eq!(summary["changes"].as_array().unwrap().len(), 2);
        let shown = text(&cut);
        let (patch, note) = shown.split_once("\n[diff cut").unwrap();
        assert!(patch.len() <= 2000, "{}", patch.len());
        assert!(patch.ends_with('\n') && patch.starts_with("diff --git a/big.txt"));
        assert!(
            note.contains("later.txt") && note.contains("paths"),
            "{note}"
        );
        // The note's advice works.
        let rest = call(
            &client,
            "diff",
            json!({"paths": ["later.txt"], "max_bytes": 2000}),
        )
        .await;
        assert_eq!(ok(&rest)["cut"], false);
        assert!(text(&rest).contains("+the second file"));
        // Between two checkpoints.
        let between = call(&client, "diff", json!({"from": "@~1", "to": "@"})).await;
        assert!(text(&between).contains("-2\n+3"), "{}", text(&between));
        client.cancel().await.unwrap();
    });
}

#[test]
fn an_idle_server_never_keeps_a_hook_waiting() {
    let r = three_steps();
    // A hook that cannot have the store at once gives up and logs it.
    r.git(&["config", "checkpoint.hookLockTimeout", "0"]);
    r.git(&["config", "checkpoint.lockTimeout", "0"]);
    let session = "9a8b7c6d-0000-4000-8000-000000000001";
    runtime().block_on(async {
        let client = connect(&r.sb, &r.dir, &["mcp"]).await;
        ok(&call(&client, "list_checkpoints", json!({})).await);
        ok(&call(&client, "pin", json!({"rev": "@"})).await);
        // The server is idle now, still connected.
        r.write("a.txt", b"by the agent\n");
        let payload = json!({"session_id": session, "cwd": r.dir,
                             "hook_event_name": "UserPromptSubmit", "prompt": "go on"});
        hook_answers(&r.sb, &r.dir, "claude", payload.to_string().as_bytes(), "");
        r.write("b.txt", b"written by a tool\n");
        let payload = json!({"session_id": session, "cwd": r.dir,
                             "hook_event_name": "PostToolUse", "tool_name": "Write",
                             "tool_use_id": "toolu_idle_1",
                             "tool_input": {"file_path": r.p("b.txt"), "content": ""},
                             "tool_response": {}});
        hook_answers(&r.sb, &r.dir, "claude", payload.to_string().as_bytes(), "");
        r.write("a.txt", b"by the agent, again\n");
        r.ok(&["save", "-m", "by hand"]);
        // The hook's checkpoint is there, and the server sees it and its session.
        let sessions = call(&client, "list_sessions", json!({})).await;
        let list = ok(&sessions);
        assert_eq!(list["sessions"][0]["id"], session);
        assert!(text(&sessions).contains("go on"), "{}", text(&sessions));
        let of_session = ok(&call(
            &client,
            "list_checkpoints",
            json!({"session": &session[..8], "prompt": 1}),
        )
        .await);
        assert_eq!(of_session["checkpoints"].as_array().unwrap().len(), 2);
        client.cancel().await.unwrap();
    });
    let log = r.log_json(false);
    assert_eq!(log[0]["message"], "by hand");
    assert_eq!(log[1]["meta"]["session"], session);
    assert_eq!(log[1]["meta"]["tool_use_id"], "toolu_idle_1");
    let hooks_log =
        std::fs::read_to_string(r.git_dir().join("checkpoint/hooks.log")).unwrap_or_default();
    assert!(!hooks_log.contains("busy"), "{hooks_log}");
}

/// The session of [`session_with_two_turns`].
const SESSION: &str = "5e55a0b1-0000-4000-8000-000000000024";

/// A repository where a Claude Code session's first turn wrote a.txt and b.txt and its
/// second wrote c.txt; then the user changed u.txt, unsaved.
fn session_with_two_turns() -> Repo {
    let r = Repo::new();
    r.write("u.txt", b"the user's\n");
    r.save("before the session");
    let mut session = ClaudeSession::new(&r, SESSION);
    session.prompt("add a and b");
    session.write("a.txt", b"a\n");
    session.write("b.txt", b"b\n");
    session.prompt("add c");
    session.write("c.txt", b"c\n");
    r.write("u.txt", b"the user's, changed\n");
    r
}

#[test]
fn show_and_diff_take_a_prompts_turn() {
    let r = session_with_two_turns();
    let turn = format!("{}:turn1", &SESSION[..8]);
    runtime().block_on(async {
        let client = connect(&r.sb, &r.dir, &["mcp"]).await;
        let shown = call(&client, "show", json!({"rev": &turn})).await;
        let record = ok(&shown);
        let paths: Vec<&str> = record["changes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["path"].as_str().unwrap())
            .collect();
        assert_eq!(paths, ["a.txt", "b.txt"]);
        let message = record["message"].as_str().unwrap();
        assert!(message.ends_with("add a and b"), "{message}");
        assert!(record["turn_end"].is_string(), "{record}");
        // The same document as the CLI's.
        assert_eq!(record, r.json(&["show", &turn, "--json"]));
        let diff = call(&client, "diff", json!({"from": &turn})).await;
        let patch = text(&diff);
        assert!(patch.contains("+a\n") && patch.contains("+b\n"), "{patch}");
        assert!(
            !patch.contains("c.txt") && !patch.contains("u.txt"),
            "{patch}"
        );
        assert_eq!(patch, r.ok(&["diff", &turn]).stdout);
        client.cancel().await.unwrap();
    });
}

#[test]
fn revert_undoes_a_turn_and_keeps_what_came_after_with_a_safety_checkpoint() {
    let r = session_with_two_turns();
    let turn = format!("{}:turn1", &SESSION[..8]);
    let before = r.snapshot();
    let safety = runtime().block_on(async {
        let client = connect(&r.sb, &r.dir, &["mcp"]).await;
        let dry = ok(&call(&client, "revert", json!({"rev": &turn, "dry_run": true})).await);
        assert_eq!(
            (dry["dry_run"].clone(), dry["applied"].clone()),
            (json!(true), json!(2))
        );
        assert_eq!(r.snapshot(), before, "a dry run changes nothing");
        let done = call(&client, "revert", json!({"rev": &turn})).await;
        let report = ok(&done);
        assert_eq!(report["applied"], 2, "{}", text(&done));
        assert!(
            text(&done).contains("(undo the revert with: undo)"),
            "{}",
            text(&done)
        );
        client.cancel().await.unwrap();
        report["safety_checkpoint"].as_str().unwrap().to_string()
    });
    // The turn's files are gone; the second turn's and the user's stay.
    assert!(!r.exists("a.txt") && !r.exists("b.txt"));
    assert_eq!(r.read_string("c.txt"), "c\n");
    assert_eq!(r.read_string("u.txt"), "the user's, changed\n");
    // The safety checkpoint holds the worktree as it was, and restoring it undoes all.
    r.ok(&["restore", &safety]);
    assert_eq!(r.snapshot(), before);
}

#[test]
fn restore_only_session_puts_back_the_sessions_files_and_keeps_the_users() {
    let r = session_with_two_turns();
    let prompt = format!("{}:prompt2", &SESSION[..8]);
    let before = r.snapshot();
    let safety = runtime().block_on(async {
        let client = connect(&r.sb, &r.dir, &["mcp"]).await;
        let dry = call(
            &client,
            "restore",
            json!({"rev": &prompt, "only_session": true, "dry_run": true}),
        )
        .await;
        assert_eq!(ok(&dry)["deleted"], json!(["c.txt"]), "{}", text(&dry));
        assert_eq!(r.snapshot(), before, "a dry run changes nothing");
        let misused =
            tool_error(&call(&client, "restore", json!({"rev": &prompt, "force": true})).await);
        assert!(misused.contains("only_session"), "{misused}");
        let done = call(
            &client,
            "restore",
            json!({"rev": &prompt, "only_session": true}),
        )
        .await;
        let report = ok(&done);
        assert_eq!(report["session"], SESSION);
        assert_eq!(report["deleted"], json!(["c.txt"]));
        client.cancel().await.unwrap();
        report["safety_checkpoint"].as_str().unwrap().to_string()
    });
    assert!(!r.exists("c.txt"));
    assert_eq!(r.read_string("a.txt"), "a\n");
    assert_eq!(r.read_string("u.txt"), "the user's, changed\n");
    r.ok(&["restore", &safety]);
    assert_eq!(r.snapshot(), before);
}

#[test]
fn a_server_started_in_the_root_directory_works_on_the_clients_root() {
    let r = three_steps();
    std::fs::create_dir_all(r.p("my dir")).unwrap();
    let root = format!("file://{}/my%20dir", r.dir.display());
    runtime().block_on(async {
        let client = connect_with_roots(&r.sb, Path::new("/"), &["mcp"], &[root]).await;
        let listed = call(&client, "list_checkpoints", json!({"limit": 5})).await;
        assert_eq!(ok(&listed)["checkpoints"].as_array().unwrap().len(), 3);
        r.write("a.txt", b"4\n");
        ok(&call(&client, "save", json!({"message": "through the root"})).await);
        client.cancel().await.unwrap();
        // Without roots and outside any worktree: a tool error that names the fix.
        let client = connect(&r.sb, Path::new("/"), &["mcp"]).await;
        let refused = tool_error(&call(&client, "list_checkpoints", json!({})).await);
        assert!(
            refused.contains("not a git repository") && refused.contains("-C"),
            "{refused}"
        );
        client.cancel().await.unwrap();
    });
    assert_eq!(r.log_json(false)[0]["message"], "through the root");
}
