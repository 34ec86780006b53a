//! The operation log and the change it records commit in one transaction: a crash with
//! the record written and not committed (the fault point `op-recorded` aborting the
//! real process, or `kill -9` while it is paused there) leaves neither the record nor
//! the references the operation was moving, and the same command run again makes
//! both. A damaged record is named, never followed.

use crate::common;
use common::claude::ClaudeSession;
use common::raw_store::{self, DROPPED, OPERATIONS};
use common::{assert_aborted, Repo};
use serde_json::Value;

/// What the operation log and the references hold.
#[derive(Debug, PartialEq)]
struct Seen {
    /// `op log --json`.
    ops: Value,
    /// `branch --json`.
    branches: Value,
    /// The pinned checkpoints, as `log --all --json` marks them.
    pins: Vec<String>,
}

fn seen(r: &Repo) -> Seen {
    Seen {
        ops: r.json_of(&["op", "log"]),
        branches: r.json_of(&["branch"]),
        pins: (r.log_json(true).iter())
            .filter(|c| c["pinned"] == true)
            .map(|c| c["id"].as_str().unwrap().to_string())
            .collect(),
    }
}

/// How many records the operation log holds.
fn op_count(r: &Repo) -> usize {
    r.json_of(&["op", "log"]).as_array().unwrap().len()
}

fn three_saves() -> (Repo, Vec<String>) {
    let r = Repo::new();
    let mut ids = Vec::new();
    for n in 1..=3 {
        r.write("a.txt", format!("a{n}\n").as_bytes());
        r.write(format!("f{n}.txt"), b"f\n");
        ids.push(r.save(&format!("c{n}")));
    }
    (r, ids)
}

/// Every kind of operation, aborted with its record in the transaction: nothing of it is
/// committed, and running it again records it once.
#[test]
fn an_operation_that_dies_before_its_commit_leaves_neither_its_record_nor_its_change() {
    let (r, c) = three_saves();
    let steps: Vec<Vec<&str>> = vec![
        vec!["pin", &c[0]],
        vec!["unpin", &c[0]],
        vec!["branch", "-m", "main", "trunk"],
        vec!["branch", "-m", "trunk", "main"],
        vec!["fork", &c[0], "-b", "side"],
        vec!["switch", "main"],
        vec!["branch", "-d", "side"],
        vec!["restore", &c[1]],
        vec!["drop", &c[2]],
        vec!["undo"],
        vec!["redo"],
        vec!["gc"],
        vec!["op", "restore", "1"],
    ];
    for args in steps {
        let before = seen(&r);
        let mut cmd = r.sb.bin_cmd(&r.dir, &args);
        cmd.env("GIT_CHECKPOINT_FAULT", "op-recorded");
        let out = common::run_cmd(cmd, common::DEFAULT_TIMEOUT);
        assert_aborted(&out, &format!("{args:?}"));
        assert_eq!(before, seen(&r), "{args:?}: the crash committed something");
        r.ok(&args);
        assert_eq!(
            op_count(&r),
            before.ops.as_array().unwrap().len() + 1,
            "{args:?} run again"
        );
    }
}

/// A revert changes the worktree before its last transaction, the save of its result:
/// killed there, it leaves the worktree reverted and the safety checkpoint it made first,
/// but neither its record nor its result's checkpoint, which commit together.
#[test]
fn a_revert_killed_before_its_commit_records_nothing() {
    let (r, c) = three_saves();
    r.write("f1.txt", b"unsaved\n");
    let ops = r.json_of(&["op", "log"]);
    let mut child = common::spawn_paused(&r, &["revert", &c[1]], "op-recorded", 20_000);
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(r.json_of(&["op", "log"]), ops);
    // The revert's worktree writes were made; its record and its result were not.
    assert!(!r.exists("f2.txt"));
    assert_no_result(&r, "revert of");
}

/// The same for `restore --only-session`, whose record commits with its result too.
#[test]
fn a_session_restore_killed_before_its_commit_records_nothing() {
    let (r, _) = three_saves();
    let mut session = ClaudeSession::new(&r, "5e55105e-0000-4000-8000-000000000002");
    session.prompt("edit things");
    session.write("agent.txt", b"made by the agent\n");
    let ops = r.json_of(&["op", "log"]);
    let args = ["restore", "5e55105e:prompt1", "--only-session"];
    let mut child = common::spawn_paused(&r, &args, "op-recorded", 20_000);
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(r.json_of(&["op", "log"]), ops);
    assert!(
        !r.exists("agent.txt"),
        "the restore's worktree writes were made"
    );
    assert_no_result(&r, "restore of");
}

/// No checkpoint's message starts with `message`, the name of a command's result.
#[track_caller]
fn assert_no_result(r: &Repo, message: &str) {
    let results: Vec<Value> = (r.log_json(true).into_iter())
        .filter(|c| {
            c["message"]
                .as_str()
                .is_some_and(|m| m.starts_with(message))
        })
        .collect();
    assert!(
        results.is_empty(),
        "the kill committed a result: {results:#?}"
    );
}

/// `kill -9` inside the commit of a restore and of a drop.
#[test]
fn kill_9_between_the_record_and_the_commit_leaves_neither() {
    let (r, c) = three_saves();
    for args in [vec!["restore", c[0].as_str()], vec!["drop", c[1].as_str()]] {
        let before = seen(&r);
        let mut child = common::spawn_paused(&r, &args, "op-recorded", 20_000);
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(before, seen(&r), "{args:?}: the kill committed something");
        r.ok(&args);
        assert_eq!(op_count(&r), before.ops.as_array().unwrap().len() + 1);
    }
}

/// A record of the log or a dropped checkpoint that does not decode: `op log` and `undo`
/// stop with one line naming it and change nothing; `verify` names both.
#[test]
fn a_damaged_record_of_the_log_is_named_and_never_followed() {
    let (r, c) = three_saves();
    r.ok(&["pin", &c[0]]);
    r.ok(&["drop", &c[1]]);
    {
        let db = raw_store::open(&r.store_path());
        let txn = db.begin_write().unwrap();
        txn.open_table(OPERATIONS)
            .unwrap()
            .insert(1u64, b"not a record".as_slice())
            .unwrap();
        let id = u128::from_str_radix(&c[1], 16).unwrap();
        txn.open_table(DROPPED)
            .unwrap()
            .insert(id, b"nor this".as_slice())
            .unwrap();
        txn.commit().unwrap();
    }
    let files = r.snapshot();
    for args in [vec!["op", "log"], vec!["undo"]] {
        let out = r.run(&args);
        assert_eq!(out.code, 1, "{out}");
        assert_eq!(out.stderr.lines().count(), 1, "{out}");
        assert!(out.stderr.contains("operation 1"), "{out}");
    }
    common::assert_snap_eq(&files, &r.snapshot(), "a refused undo");
    let verify = r.run(&["verify"]);
    assert_eq!(verify.code, 1, "{verify}");
    assert!(verify.stderr.contains("damaged: operation 1:"), "{verify}");
    assert!(
        (verify.stderr).contains(&format!("damaged: dropped checkpoint {}:", c[1])),
        "{verify}"
    );
}
