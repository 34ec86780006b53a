//! What the MCP server answers, beside what the CLI prints for the same operation: one
//! rendering for both front ends, structured content cut to what an agent acts on
//! (Claude Code and Codex hand the model that, not the text), errors that carry their
//! kind and read as one sentence, JSON-RPC errors that say what exists, and the dry runs
//! a `--read-only` server may make.

use crate::common;

use common::claude::ClaudeSession;
use common::mcp::*;
use common::*;
use rmcp::model::{ClientRequest, CustomRequest};
use serde_json::{json, Value};

/// The session of [`eight_hook_checkpoints`].
const SESSION: &str = "5e55a0b1-0000-4000-8000-000000000038";

/// A repository with a git commit (so every checkpoint records git's HEAD) where a
/// Claude Code session made eight checkpoints: two prompts of three tool calls each,
/// and the one its hooks' install would have made before, as a real session leaves
/// them (transcript paths and all).
fn eight_hook_checkpoints() -> Repo {
    let r = Repo::new();
    r.write("README", b"a project\n");
    r.git(&["add", "README"]);
    r.git(&["commit", "-q", "-m", "start"]);
    r.save("before the session");
    let mut session = ClaudeSession::new(&r, SESSION);
    session.prompt("add the parser, with tests");
    for n in 1..=3 {
        session.write(&format!("src/parser_{n}.rs"), b"fn parse() {}\n");
    }
    session.prompt("now the renderer");
    for n in 1..=2 {
        session.write(&format!("src/render_{n}.rs"), b"fn render() {}\n");
    }
    r
}

/// Bytes of `value` as a client hands it to the model (`JSON.stringify`: compact).
fn bytes(value: &Value) -> usize {
    serde_json::to_vec(value).unwrap().len()
}

#[test]
fn list_checkpoints_hands_the_model_what_it_acts_on_and_the_rest_on_request() {
    let r = eight_hook_checkpoints();
    let log = r.json(&["log", "-n", "8", "--json"]);
    assert_eq!(log.as_array().unwrap().len(), 8);
    runtime().block_on(async {
        let client = connect(&r.sb, &r.dir, &["mcp"]).await;
        let listed = call(&client, "list_checkpoints", json!({"limit": 8})).await;
        let page = ok(&listed);
        let size = bytes(&page);
        eprintln!(
            "list_checkpoints of 8 hook checkpoints: {size} bytes of structured content, {} of text",
            text(&listed).len()
        );
        // 5,214 bytes before they were cut to what an agent acts on.
        assert!(size <= 1_500, "{size} bytes: {page:#}");
        let entries = page["checkpoints"].as_array().unwrap();
        assert_eq!(entries.len(), 8, "{page:#}");
        // What an agent acts on: which checkpoint (a revision it can pass on), what it
        // was, when, and which prompt of which session made it.
        let newest = &entries[0];
        assert_eq!(newest["short_id"], log[0]["short_id"], "{newest:#}");
        assert_eq!(newest["message"], log[0]["message"], "{newest:#}");
        assert_eq!(newest["time"], log[0]["time"], "{newest:#}");
        assert_eq!(newest["current"], true, "{newest:#}");
        assert_eq!(newest["session"], &SESSION[..8], "{newest:#}");
        assert_eq!(newest["prompt"], 2, "{newest:#}");
        for entry in entries {
            for bulky in ["transcript", "git_head", "parents", "meta", "skipped"] {
                assert!(entry.get(bulky).is_none(), "{bulky} in {entry:#}");
            }
        }
        // The rest on request: `verbose` gives `log --json`'s records.
        let full = ok(&call(
            &client,
            "list_checkpoints",
            json!({"limit": 8, "verbose": true}),
        )
        .await);
        assert_eq!(full["checkpoints"], log, "{full:#}");
        client.cancel().await.unwrap();
    });
}

#[test]
fn each_tool_says_what_the_cli_says() {
    let r = Repo::new();
    for n in 1..=3 {
        r.write("a.txt", format!("{n}\n").as_bytes());
        r.write(format!("step{n}.txt"), b"x\n");
        r.save(&format!("step {n}"));
    }
    r.write("scratch.txt", b"unsaved\n");
    r.ok(&["pin", "@~1"]);
    let cli = |args: &[&str]| r.ok(args).stdout.trim_end().to_string();
    runtime().block_on(async {
        let client = connect(&r.sb, &r.dir, &["mcp"]).await;
        let restore = call(&client, "restore", json!({"rev": "@~2", "dry_run": true})).await;
        assert_eq!(text(&restore), cli(&["restore", "@~2", "--dry-run"]));
        let revert = call(&client, "revert", json!({"rev": "@", "dry_run": true})).await;
        assert_eq!(text(&revert), cli(&["revert", "@", "--dry-run"]));
        let pin = call(&client, "pin", json!({"rev": "@~1"})).await;
        assert_eq!(text(&pin), cli(&["pin", "@~1"]));
        r.ok(&["save", "-m", "saved by hand"]);
        let save = call(&client, "save", json!({"message": "again"})).await;
        assert_eq!(text(&save), cli(&["save", "-m", "again"]));
        client.cancel().await.unwrap();
    });
}

#[test]
fn a_tool_error_carries_its_kind() {
    let r = Repo::new();
    r.write("a.txt", b"a\n");
    r.save("one");
    r.git(&["config", "checkpoint.lockTimeout", "0"]);
    runtime().block_on(async {
        let client = connect(&r.sb, &r.dir, &["mcp"]).await;
        let unknown = call(&client, "restore", json!({"rev": "nosuchrev"})).await;
        tool_error(&unknown);
        let error = unknown
            .structured_content
            .clone()
            .expect("structured content");
        assert_eq!(error["kind"], "input", "{error:#}");
        assert_eq!(
        error["error"],
        "unknown revision 'nosuchrev'; 'git checkpoint log --all' lists every checkpoint, 'git checkpoint sessions' every agent session",
        "{error:#}"
    );
        // A store another process holds: "busy", worth a retry.
        let mut holder = spawn_paused(
            &r,
            &["save", "--allow-empty", "-m", "holder"],
            "locked",
            4000,
        );
        let busy = call(&client, "save", json!({"message": "meanwhile"})).await;
        holder.wait().unwrap();
        tool_error(&busy);
        let error = busy.structured_content.clone().expect("structured content");
        assert_eq!(error["kind"], "busy", "{error:#}");
        client.cancel().await.unwrap();
    });
}

#[test]
fn an_error_outside_a_worktree_reads_as_one_sentence() {
    let sb = Sandbox::new();
    let plain = sb.root.join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    runtime().block_on(async {
        let client = connect(&sb, &plain, &["mcp"]).await;
        let refused = call(&client, "list_checkpoints", json!({})).await;
        let line = tool_error(&refused);
        assert!(line.starts_with("error: not a git repository"), "{line:?}");
        assert!(!line.contains("fatal:"), "{line:?}");
        assert_eq!(line.lines().count(), 1, "{line:?}");
        assert!(line.contains("-C"), "{line:?}");
        let error = refused
            .structured_content
            .clone()
            .expect("structured content");
        assert_eq!(error["kind"], "input", "{error:#}");
        client.cancel().await.unwrap();
    });
}

#[test]
fn an_unknown_method_or_tool_names_itself_and_what_exists() {
    let r = Repo::new();
    runtime().block_on(async {
        let client = connect(&r.sb, &r.dir, &["mcp"]).await;
        let resources = client.list_resources(None).await.expect_err("no resources");
        let message = resources.to_string();
        assert!(
            message.contains("resources/list")
                && message.contains("tools/list")
                && message.contains("tools/call"),
            "{message}"
        );
        let custom = ClientRequest::CustomRequest(CustomRequest::new("checkpoints/undo", None));
        let message = client
            .send_request(custom)
            .await
            .expect_err("no such method")
            .to_string();
        assert!(
            message.contains("checkpoints/undo") && message.contains("tools/call"),
            "{message}"
        );
        let arguments = serde_json::from_value(json!({})).unwrap();
        let no_tool = client
            .call_tool(rmcp::model::CallToolRequestParams::new("rewind").with_arguments(arguments))
            .await
            .expect_err("no such tool")
            .to_string();
        assert!(
            no_tool.contains("'rewind'") && no_tool.contains("list_checkpoints, "),
            "{no_tool}"
        );
        client.cancel().await.unwrap();
    });
}

#[test]
fn read_only_makes_dry_runs_and_refuses_what_would_write() {
    let r = Repo::new();
    for n in 1..=3 {
        r.write("a.txt", format!("{n}\n").as_bytes());
        r.save(&format!("step {n}"));
    }
    r.write("scratch.txt", b"unsaved\n");
    let store = std::fs::read(r.store_path()).unwrap();
    let worktree = r.snapshot();
    runtime().block_on(async {
        let client = connect(&r.sb, &r.dir, &["mcp", "--read-only"]).await;
        let dry = ok(&call(&client, "restore", json!({"rev": "@~2", "dry_run": true})).await);
        assert_eq!(
            (&dry["dry_run"], &dry["written"]),
            (&json!(true), &json!(["a.txt"]))
        );
        let dry = ok(&call(&client, "revert", json!({"rev": "@", "dry_run": true})).await);
        assert_eq!(dry["dry_run"], true, "{dry:#}");
        for (tool, arguments) in [
            ("restore", json!({"rev": "@~2"})),
            ("revert", json!({"rev": "@"})),
        ] {
            let refused = call(&client, tool, arguments).await;
            let line = tool_error(&refused);
            assert!(
                line.contains("--read-only") && line.contains("dry_run"),
                "{line}"
            );
            let error = refused
                .structured_content
                .clone()
                .expect("structured content");
            assert_eq!(error["kind"], "refused", "{error:#}");
        }
        client.cancel().await.unwrap();
    });
    assert_eq!(std::fs::read(r.store_path()).unwrap(), store);
    assert_eq!(r.snapshot(), worktree);
}

/// A step that changed `a.txt` and `b.txt`, and `scratch.txt` left unsaved after it.
fn a_step_of_two_files() -> Repo {
    let r = Repo::new();
    r.write("a.txt", b"a\n");
    r.write("b.txt", b"b\n");
    r.save("start");
    r.write("a.txt", b"a, changed\n");
    r.write("b.txt", b"b, changed\n");
    r.save("the step");
    r.write("scratch.txt", b"unsaved\n");
    r
}

/// `said` with each checkpoint of `r` named by its place in `log --all` (newest first)
/// instead of its short id, so that what two repositories made alike reads alike.
fn ids_by_place(r: &Repo, said: &str) -> String {
    r.log_ids(true)
        .iter()
        .enumerate()
        .fold(said.to_string(), |said, (place, id)| {
            said.replace(&id[..7], &format!("<checkpoint {place}>"))
        })
}

#[test]
fn an_mcp_revert_of_one_path_undoes_the_step_for_that_file_and_says_what_the_cli_says() {
    let (r, by_cli) = (a_step_of_two_files(), a_step_of_two_files());
    let step = r.current();
    let reverted = runtime().block_on(async {
        let client = connect(&r.sb, &r.dir, &["mcp"]).await;
        let dry = call(
            &client,
            "revert",
            json!({"rev": "@", "paths": ["b.txt"], "dry_run": true}),
        )
        .await;
        assert_eq!(
            text(&dry),
            by_cli
                .ok(&["revert", "--dry-run", "@", "--", "b.txt"])
                .stdout
                .trim_end()
        );
        let reverted = call(&client, "revert", json!({"rev": "@", "paths": ["b.txt"]})).await;
        client.cancel().await.unwrap();
        reverted
    });
    let report = ok(&reverted);
    assert_eq!(r.read("b.txt"), b"b\n", "{report:#}");
    assert_eq!(r.read("a.txt"), b"a, changed\n", "not named: kept");
    assert_eq!(r.read("scratch.txt"), b"unsaved\n");
    let made = report["checkpoint"].as_str().expect("a checkpoint made");
    let shown = r.json(&["show", "--json", made]);
    assert_eq!(
        shown["message"], "revert of @ -- b.txt (1 file)",
        "{shown:#}"
    );
    assert_eq!(r.parents(&r.parents(made)[0]), [step]);
    // The same revert on the command line, in a repository made alike: the same
    // words, but for how each front end says to undo it.
    let cli = by_cli.ok(&["revert", "@", "--", "b.txt"]).stdout;
    assert_eq!(
        ids_by_place(&r, &text(&reverted)),
        ids_by_place(&by_cli, cli.trim_end()).replace("git checkpoint undo", "undo"),
        "{cli}"
    );
}
