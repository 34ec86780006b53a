//! `git checkpoint drop`: checkpoints named, or a whole agent session, go with what only
//! they hold; their children are re-linked, a branch whose tip goes moves back, the
//! worktree is never touched, and pinned checkpoints are refused.

use crate::common;
use common::*;
use serde_json::json;

#[test]
fn dropping_relinks_children_moves_tips_and_leaves_the_worktree_alone() {
    let r = Repo::new();
    r.write("a.txt", b"one\n");
    let c1 = r.save("one");
    r.write("big.bin", &pseudo_random(300_000, 7));
    let c2 = r.save("two");
    r.remove("big.bin");
    r.write("a.txt", b"three\n");
    let c3 = r.save("three");

    // A checkpoint in the middle: its child is re-linked to its parent, and the content
    // only it held goes.
    let dry = r.json_of(&["drop", &c2, "--dry-run"]);
    assert_eq!(dry["removed"].as_array().unwrap().len(), 1, "{dry}");
    assert_eq!(r.log_ids(true).len(), 3, "a dry run changes nothing");
    let dropped = r.json_of(&["drop", &c2]);
    assert!(
        dropped["stored_bytes_removed"].as_u64().unwrap() > 250_000,
        "{dropped}"
    );
    assert_eq!(r.log_ids(true), [c3.clone(), c1.clone()]);
    assert_eq!(r.parents(&c3), std::slice::from_ref(&c1));
    assert_eq!(r.ok(&["verify"]).code, 0);

    // The tip: the branch moves back; the worktree stays as it is.
    let before = r.snapshot();
    let out = r.ok(&["drop", &c3]);
    assert!(out.stdout.contains("Branch main moved back to"), "{out}");
    assert_eq!(r.current(), c1);
    assert_snap_eq(&before, &r.snapshot(), "drop never touches the worktree");
    let status = r.json_of(&["status"]);
    assert_eq!(status["clean"], false, "{status}");

    // Nothing may be left without a checkpoint, and pins are kept.
    let out = r.run(&["drop", &c1]);
    assert_eq!(out.code, 1, "{out}");
    assert!(out.stderr.contains("without a checkpoint"), "{out}");
    r.ok(&["pin", &c1]);
    r.write("a.txt", b"four\n");
    r.save("four");
    let out = r.run(&["drop", &c1]);
    assert_eq!(out.code, 1, "{out}");
    assert!(out.stderr.contains("pinned"), "{out}");
    assert_eq!(r.log_ids(true).len(), 2);
}

#[test]
fn a_whole_agent_session_can_be_dropped_once_its_work_is_kept() {
    let r = Repo::new();
    r.write("a.txt", b"before the agent\n");
    let before = r.save("before the agent");
    let session = "d00d5e55-0000-4000-8000-000000000001";
    for n in 1..=3 {
        let prompt = json!({"session_id": session, "cwd": r.dir,
                            "hook_event_name": "UserPromptSubmit", "prompt": format!("step {n}")});
        run_hook(&r.sb, &r.dir, prompt.to_string().as_bytes());
        r.write("a.txt", format!("agent step {n}\n").as_bytes());
        let tool = json!({"session_id": session, "cwd": r.dir, "hook_event_name": "PostToolUse",
                          "tool_name": "Write", "tool_use_id": format!("t{n}"),
                          "tool_input": {"file_path": "a.txt"}});
        run_hook(&r.sb, &r.dir, tool.to_string().as_bytes());
    }
    assert_eq!(r.log_ids(true).len(), 7);

    let dry = r.ok(&["drop", "--session", "d00d5e55", "--dry-run"]);
    assert!(dry.stdout.contains("Would drop 6 checkpoints"), "{dry}");
    assert_eq!(r.log_ids(true).len(), 7);
    r.ok(&["drop", "--session", "d00d5e55"]);
    assert_eq!(r.log_ids(true), std::slice::from_ref(&before));
    assert_eq!(r.current(), before);
    assert_eq!(
        r.read("a.txt"),
        b"agent step 3\n",
        "the worktree keeps the work"
    );
    let sessions = r.json_of(&["sessions"]);
    assert_eq!(sessions, json!([]));
    assert_eq!(r.ok(&["verify"]).code, 0);
    let out = r.run(&["drop", "--session", "d00d5e55"]);
    assert_eq!(out.code, 1, "{out}");
    assert!(
        out.stderr.contains("no agent session id starts with"),
        "{out}"
    );
}
