//! The operation log through the MCP server: a tool call's operation is recorded as
//! that call, and the `undo`, `redo` and `op_log` tools answer what the commands answer.

use crate::common;

use common::mcp::*;
use common::*;
use serde_json::{json, Value};

/// Three checkpoints of `a.txt` ("1", "2", "3", each step adding `stepN.txt`), and
/// `scratch.txt` unsaved in the worktree.
fn three_steps() -> Repo {
    let r = Repo::new();
    for n in 1..=3 {
        r.write("a.txt", format!("{n}\n").as_bytes());
        r.write(format!("step{n}.txt"), b"x\n");
        r.save(&format!("step {n}"));
    }
    r.write("scratch.txt", b"unsaved\n");
    r
}

#[test]
fn an_mcp_tool_calls_operation_is_recorded_as_that_call() {
    let r = three_steps();
    runtime().block_on(async {
        let client = connect(&r.sb, &r.dir, &["mcp"]).await;
        ok(&call(&client, "restore", json!({"rev": "@~2"})).await);
        client.cancel().await.unwrap();
    });
    let log = r.json(&["op", "log", "--json"]);
    assert_eq!(
        log[0]["invocation"],
        json!({"type": "mcp", "tool": "restore", "arguments": r#"{"rev":"@~2"}"#}),
        "{log:#}"
    );
    let text = r.ok(&["op", "log"]).stdout;
    assert!(
        text.contains(r#"      mcp restore {"rev":"@~2"}"#),
        "{text}"
    );
}

/// Every path of the worktree but `.git`, with its bytes.
fn worktree(r: &Repo) -> Vec<(String, Vec<u8>)> {
    let mut files = Vec::new();
    let mut dirs = vec![r.dir.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.file_name().is_some_and(|name| name == ".git") {
                continue;
            }
            if path.is_dir() {
                dirs.push(path);
            } else {
                let name = path.strip_prefix(&r.dir).unwrap().display().to_string();
                files.push((name, std::fs::read(&path).unwrap()));
            }
        }
    }
    files.sort();
    files
}

#[test]
fn an_agents_restore_is_undone_by_the_undo_tool_and_redone_by_redo() {
    let r = three_steps();
    let before = worktree(&r);
    let branch_before = r.current();
    runtime().block_on(async {
        let client = connect(&r.sb, &r.dir, &["mcp"]).await;
        ok(&call(&client, "restore", json!({"rev": "@~2"})).await);
        assert_eq!(r.read_string("a.txt"), "1\n");
        assert!(!r.exists("scratch.txt"));
        let restored = worktree(&r);

        // The undo tool says what the CLI's undo says, and puts everything back.
        let undone = call(&client, "undo", json!({})).await;
        let answer = ok(&undone);
        let said = text(&undone);
        assert!(said.starts_with("Undid op 1: restore to "), "{said}");
        assert_eq!(answer["kind"], "undo", "{answer:#}");
        assert_eq!(answer["target"], 1, "{answer:#}");
        assert_eq!(worktree(&r), before);
        assert_eq!(r.current(), branch_before);

        // op_log shows both, newest first, each with the call that made it.
        let page = call(&client, "op_log", json!({"limit": 1})).await;
        let listed = ok(&page);
        assert_eq!(
            listed["operations"].as_array().unwrap().len(),
            1,
            "{listed:#}"
        );
        assert_eq!(listed["operations"][0]["number"], 2, "{listed:#}");
        assert_eq!(
            listed["operations"][0]["invocation"], "mcp undo {}",
            "{listed:#}"
        );
        // Brief: what an agent acts on, the references before and after on request.
        assert!(
            listed["operations"][0].get("before").is_none(),
            "{listed:#}"
        );
        assert_eq!(listed["next_offset"], 1, "{listed:#}");
        assert!(
            text(&page).ends_with("More: call op_log again with offset=1."),
            "{}",
            text(&page)
        );
        let rest = ok(&call(&client, "op_log", json!({"offset": 1})).await);
        assert_eq!(rest["operations"][0]["number"], 1, "{rest:#}");
        assert_eq!(rest["operations"][0]["undone_by"], 2, "{rest:#}");
        assert_eq!(rest["next_offset"], Value::Null, "{rest:#}");
        let whole = ok(&call(&client, "op_log", json!({"verbose": true})).await);
        assert_eq!(
            whole["operations"],
            r.json(&["op", "log", "--json"]),
            "{whole:#}"
        );

        // An undo of the undo: redo brings the restore back.
        let redone = call(&client, "redo", json!({})).await;
        assert!(
            text(&redone).starts_with("Redid op 1: restore to "),
            "{}",
            text(&redone)
        );
        assert_eq!(ok(&redone)["kind"], "redo");
        assert_eq!(worktree(&r), restored);
        // ... and undo, given its number (the restore is in effect again), undoes it
        // again.
        ok(&call(&client, "undo", json!({"op": 1})).await);
        assert_eq!(worktree(&r), before);
        client.cancel().await.unwrap();
    });
    // The op log the CLI prints tells the same story, the MCP calls named.
    let log = r.ok(&["op", "log"]).stdout;
    assert!(log.contains("      mcp redo {}"), "{log}");
    assert!(log.contains(r#"      mcp undo {"op":1}"#), "{log}");
}

/// The tools' answers are the commands': the same undo of the same operation says the
/// same lines through either.
#[test]
fn undo_and_redo_say_what_the_cli_says() {
    let r = three_steps();
    r.ok(&["pin", "@~1"]);
    let cli = |args: &[&str]| r.ok(args).stdout.trim_end().to_string();
    runtime().block_on(async {
        let client = connect(&r.sb, &r.dir, &["mcp"]).await;
        let undone = text(&call(&client, "undo", json!({})).await);
        let redone = text(&call(&client, "redo", json!({})).await);
        assert!(undone.starts_with("Undid op 1: pin "), "{undone}");
        assert!(redone.starts_with("Redid op 1: pin "), "{redone}");
        // The pin is in effect again: the CLI undoes and redoes it the same way.
        assert_eq!(cli(&["undo"]), undone);
        assert_eq!(cli(&["redo"]), redone);
        client.cancel().await.unwrap();
    });
}

#[test]
fn read_only_offers_op_log_and_refuses_undo() {
    let r = three_steps();
    r.ok(&["restore", "@~1"]);
    runtime().block_on(async {
        let client = connect(&r.sb, &r.dir, &["mcp", "--read-only"]).await;
        let tools = client.list_all_tools().await.unwrap();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert!(names.contains(&"op_log"), "{names:?}");
        assert!(
            !names.contains(&"undo") && !names.contains(&"redo"),
            "{names:?}"
        );
        let listed = ok(&call(&client, "op_log", json!({})).await);
        assert_eq!(
            listed["operations"].as_array().unwrap().len(),
            1,
            "{listed:#}"
        );
        client.cancel().await.unwrap();
    });
    assert_eq!(r.read_string("a.txt"), "2\n");
}

#[test]
fn op_log_and_undo_on_a_worktree_without_a_store_create_none() {
    let r = Repo::new();
    runtime().block_on(async {
        let client = connect(&r.sb, &r.dir, &["mcp"]).await;
        let listed = call(&client, "op_log", json!({}));
        let listed = listed.await;
        assert_eq!(ok(&listed)["operations"], json!([]));
        assert!(
            text(&listed).starts_with("no operations yet"),
            "{}",
            text(&listed)
        );
        let refused = tool_error(&call(&client, "undo", json!({})).await);
        assert!(refused.contains("no checkpoints yet"), "{refused}");
        client.cancel().await.unwrap();
    });
    assert!(!r.dir.join(".git/checkpoint").exists());
}
