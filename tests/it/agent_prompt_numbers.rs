//! How a hook numbers an agent session's prompts: from the store's index of prompt
//! numbers, so that a hook run reads a few checkpoint records whatever the history holds,
//! and so that a number is never given twice in a session, even after its earlier
//! checkpoints were dropped.

use crate::common;
use common::*;
use serde_json::{json, Value};

const SESSION: &str = "a9e0c1d2-7b3f-4c5d-8e9f-0a1b2c3d4e5f";

fn prompt(r: &Repo, text: &str) {
    let payload = json!({"session_id": SESSION, "cwd": r.dir,
                         "hook_event_name": "UserPromptSubmit", "prompt": text});
    let out = run_hook(&r.sb, &r.dir, payload.to_string().as_bytes());
    assert_eq!(out.code, 0, "{out}");
}

/// A tool call's hook run with tracing on: its trace's counts line.
fn traced_tool_call(r: &Repo, id: &str) -> Out {
    let payload = json!({"session_id": SESSION, "cwd": r.dir, "hook_event_name": "PostToolUse",
                         "tool_name": "Write", "tool_use_id": id,
                         "tool_input": {"file_path": "a.txt"}, "tool_response": {}});
    let mut cmd = r.sb.bin_cmd(&r.dir, &["hooks", "run", "claude"]);
    cmd.env("GIT_CHECKPOINT_TRACE", "1");
    let out = run_cmd_with_input(cmd, Some(payload.to_string().as_bytes()), DEFAULT_TIMEOUT);
    assert_eq!(out.code, 0, "{out}");
    out
}

/// The `checkpoint records read` count of a traced run.
fn records_read(out: &Out) -> u64 {
    trace_count(out, "checkpoint records read")
}

/// A repository of one file with the Claude Code hooks installed (which saves it).
fn installed() -> Repo {
    let r = Repo::new();
    r.write("a.txt", b"start\n");
    r.ok(&["hooks", "install", "claude"]);
    r
}

/// The newest checkpoint's metadata.
fn newest_meta(r: &Repo) -> Value {
    r.log_json(true)[0]["meta"].clone()
}

#[test]
fn a_hook_run_reads_as_many_records_with_a_long_history_as_with_a_short_one() {
    let r = installed();
    prompt(&r, "first");
    r.write("a.txt", b"one\n");
    let short = records_read(&traced_tool_call(&r, "t1"));
    assert_eq!(newest_meta(&r)["prompt"], "1");

    // 60 more checkpoints of other work: the next tool call of the session must not
    // read them to know which prompt it belongs to.
    for n in 0..60 {
        r.write("other.txt", format!("{n}\n").as_bytes());
        r.save(&format!("other {n}"));
    }
    r.write("a.txt", b"two\n");
    let long = records_read(&traced_tool_call(&r, "t2"));
    assert_eq!(newest_meta(&r)["prompt"], "1");
    assert_eq!(
        long, short,
        "a hook run read {long} checkpoint records with 60 more in the history, {short} without"
    );
    assert!(short < 10, "{short} records read for one tool call");
}

#[test]
fn a_prompt_number_is_never_given_twice_in_a_session() {
    let r = installed();
    prompt(&r, "first");
    let first = r.log_ids(true)[0].clone();
    r.write("a.txt", b"one\n");
    prompt(&r, "second");
    assert_eq!(newest_meta(&r)["prompt"], "2");

    // The first prompt's checkpoint goes: the next prompt is the third, not a second
    // "prompt 2" that `<session>:prompt2` could no longer tell apart.
    r.ok(&["drop", &first]);
    r.write("a.txt", b"two\n");
    prompt(&r, "third");
    let meta = newest_meta(&r);
    assert_eq!(meta["prompt"], "3", "{meta}");
    let named = r.ok(&["show", &format!("{SESSION}:prompt3"), "--json"]);
    assert!(named.stdout.contains("third"), "{named}");
}

#[test]
fn prompts_saved_before_the_index_existed_are_counted_once_then_indexed() {
    let r = installed();
    // Prompt checkpoints without a number (saved by hand, as a script or an older build
    // may have) make no index: the first hook prompt counts them.
    for n in 1..=2 {
        r.write("a.txt", format!("by hand {n}\n").as_bytes());
        r.ok(&[
            "save",
            "-m",
            &format!("prompt by hand {n}"),
            "--meta",
            &format!("session={SESSION}"),
            "--meta",
            "kind=prompt",
        ]);
    }
    prompt(&r, "after two by hand");
    assert_eq!(newest_meta(&r)["prompt"], "3");
    prompt(&r, "next");
    assert_eq!(newest_meta(&r)["prompt"], "4");
    assert_eq!(r.ok(&["verify"]).code, 0);
}
