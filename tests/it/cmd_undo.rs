//! `undo`, `redo`, `op log` and `op restore`: every operation undone exactly (the
//! worktree, each branch's tip, HEAD, the pins, the history the branches reach), undo
//! twice and back, saves made since, drops kept for undo until a gc after the window,
//! what gc removed named when undo needs it, and refusals that change nothing.

use crate::common;
use common::claude::ClaudeSession;
use common::{assert_snap_eq, parse_json, Node, Repo, Snap};
use serde_json::Value;

/// What an undo must put back exactly.
#[derive(Debug, PartialEq)]
struct State {
    /// Every file of the worktree with its content and mode.
    files: Snap,
    /// Each branch, its tip, and whether HEAD names it.
    branches: Vec<(String, String, bool)>,
    /// The pinned checkpoints.
    pins: Vec<String>,
    /// Every checkpoint a branch reaches, with its parents.
    history: Vec<(String, Vec<String>)>,
}

fn state(r: &Repo) -> State {
    let branches: Vec<(String, String, bool)> = (r.json_of(&["branch"]).as_array().unwrap())
        .iter()
        .map(|b| {
            let text = |key: &str| b[key].as_str().unwrap().to_string();
            (text("name"), text("id"), b["current"].as_bool().unwrap())
        })
        .collect();
    let mut pins: Vec<String> = (r.log_json(true).iter())
        .filter(|c| c["pinned"] == true)
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect();
    pins.sort();
    let mut history = Vec::new();
    for (name, _, _) in &branches {
        for c in r.json_of(&["log", name]).as_array().unwrap() {
            let parents = (c["parents"].as_array().unwrap().iter())
                .map(|p| p.as_str().unwrap().to_string())
                .collect();
            history.push((c["id"].as_str().unwrap().to_string(), parents));
        }
    }
    history.sort();
    history.dedup();
    State {
        files: r.snapshot(),
        branches,
        pins,
        history,
    }
}

#[track_caller]
fn assert_state(expected: &State, r: &Repo, what: &str) {
    let now = assert_refs(expected, r, what);
    assert_eq!(expected.history, now.history, "{what}: history");
}

/// [`assert_state`] but for the history (which a gc changes); returns the state now.
#[track_caller]
fn assert_refs(expected: &State, r: &Repo, what: &str) -> State {
    assert_snap_eq(&expected.files, &r.snapshot(), what);
    let now = state(r);
    assert_eq!(expected.branches, now.branches, "{what}: branches");
    assert_eq!(expected.pins, now.pins, "{what}: pins");
    now
}

/// A repository with three checkpoints on main and no operation yet.
fn three_saves() -> (Repo, [String; 3]) {
    let r = Repo::new();
    let mut ids = Vec::new();
    for n in 1..=3 {
        r.write("a.txt", format!("a{n}\n").as_bytes());
        r.write(format!("f{n}.txt"), b"f\n");
        ids.push(r.save(&format!("c{n}")));
    }
    (r, ids.try_into().unwrap())
}

/// A repository with three checkpoints on main (c1, c2, c3), a second branch, a
/// claude session, and unsaved changes.
fn busy_repo() -> (Repo, [String; 3]) {
    let r = Repo::new();
    r.write("a.txt", b"a1\n");
    r.write("keep.txt", b"kept\n");
    r.write("dir/deep.txt", b"deep1\n");
    let c1 = r.save("c1");
    r.write("a.txt", b"a2\n");
    r.write("b.txt", b"b2\n");
    r.remove("dir/deep.txt");
    let c2 = r.save("c2");
    r.write("a.txt", b"a3\n");
    r.write_exec("run.sh", b"#!/bin/sh\n");
    let c3 = r.save("c3");
    r.ok(&["fork", &c1, "-b", "side"]);
    r.write("side.txt", b"on the side\n");
    r.save("s1");
    r.ok(&["switch", "main"]);
    // Unsaved: a change, a new file, a deletion.
    r.write("a.txt", b"unsaved\n");
    r.write("new.txt", b"new, unsaved\n");
    r.remove("keep.txt");
    (r, [c1, c2, c3])
}

/// One operation of every kind, each undone from the same starting state and redone.
#[test]
fn undo_puts_back_exactly_the_state_before_each_operation_and_redo_the_state_after() {
    type Op = fn(&Repo, &[String; 3]);
    let cases: Vec<(&str, Op)> = vec![
        ("restore", |r, c| {
            r.ok(&["restore", &c[0]]);
        }),
        ("restore of paths", |r, c| {
            r.ok(&["restore", &c[0], "--", "a.txt", "dir"]);
        }),
        ("revert, with a conflict", |r, c| {
            let out = r.run(&["revert", &c[1]]);
            assert_eq!(out.code, 1, "{out}");
            assert!(r.read_string("a.txt").contains("<<<<<<<"), "{out}");
        }),
        ("fork", |r, c| {
            r.ok(&["fork", &c[1]]);
        }),
        ("switch", |r, _| {
            r.ok(&["switch", "side"]);
        }),
        ("drop of a middle checkpoint", |r, c| {
            r.ok(&["drop", &c[1]]);
        }),
        ("drop of the tip", |r, c| {
            r.ok(&["drop", &c[2]]);
        }),
        ("pin", |r, c| {
            r.ok(&["pin", &c[0]]);
        }),
        ("branch -d", |r, _| {
            r.ok(&["branch", "-d", "side"]);
        }),
        ("branch -m of the current branch", |r, _| {
            r.ok(&["branch", "-m", "main", "trunk"]);
        }),
    ];
    for (what, op) in cases {
        let (r, c) = busy_repo();
        let before = state(&r);
        op(&r, &c);
        let after = state(&r);
        assert_ne!(before, after, "{what}: the operation changed nothing");
        let undo = r.ok(&["undo"]);
        assert!(undo.stdout.starts_with("Undid op "), "{what}: {undo}");
        assert_state(&before, &r, &format!("{what}, undone"));
        r.ok(&["redo"]);
        assert_state(&after, &r, &format!("{what}, redone"));
        r.ok(&["undo"]);
        assert_state(&before, &r, &format!("{what}, undone again"));
    }
}

/// An operation that changed some paths only is undone at those paths only: what was
/// changed elsewhere since (saved or not) stays.
#[test]
fn undo_of_a_change_to_some_paths_leaves_the_others_as_they_are_now() {
    for op in [
        &["restore", "@~2", "--", "a.txt", "dir"][..],
        &["revert", "@~1"],
    ] {
        let (r, _) = busy_repo();
        let before = r.snapshot();
        let out = r.run(op);
        assert!(out.code <= 1, "{out}");
        r.write("later.txt", b"made after the operation\n");
        r.write("run.sh", b"changed after the operation\n");
        r.ok(&["undo"]);
        let mut expected = before.clone();
        for (path, data) in [("later.txt", "made after"), ("run.sh", "changed after")] {
            let file = (r.snapshot().remove(path.as_bytes()))
                .unwrap_or_else(|| panic!("{op:?}: the undo deleted {path}, made after"));
            assert!(
                matches!(&file, Node::File { data: d, .. } if d.starts_with(data.as_bytes())),
                "{op:?}: {path} lost what was made after the operation"
            );
            expected.insert(path.as_bytes().to_vec(), file);
        }
        assert_snap_eq(&expected, &r.snapshot(), &format!("{op:?}, undone"));
    }
}

/// `unpin` and `restore --only-session` too: a pin made first, and an agent session
/// whose edits the restore takes back while the user's stay.
#[test]
fn undo_puts_back_an_unpin_and_a_restore_of_one_sessions_paths() {
    let (r, c) = busy_repo();
    r.ok(&["pin", &c[0]]);
    let before = state(&r);
    r.ok(&["unpin", &c[0]]);
    assert_ne!(before, state(&r));
    r.ok(&["undo"]);
    assert_state(&before, &r, "unpin, undone");

    let mut session = ClaudeSession::new(&r, "5e55105e-0000-4000-8000-000000000001");
    session.prompt("edit things");
    session.write("a.txt", b"the agent's\n");
    session.write("agent.txt", b"made by the agent\n");
    r.write("b.txt", b"the user's, unsaved\n");
    let before = state(&r);
    r.ok(&["restore", "5e55105e:prompt1", "--only-session"]);
    assert_eq!(r.read("b.txt"), b"the user's, unsaved\n");
    assert!(!r.exists("agent.txt"));
    r.ok(&["undo"]);
    assert_state(&before, &r, "restore --only-session, undone");
}

#[test]
fn undo_twice_undoes_the_two_newest_and_redo_goes_forward_until_new_work() {
    let (r, c) = three_saves();
    r.write("a.txt", b"unsaved\n");
    let s0 = state(&r);
    r.ok(&["restore", &c[0]]);
    let s1 = state(&r);
    r.ok(&["pin", &c[1]]);
    let s2 = state(&r);
    r.ok(&["undo"]);
    assert_state(&s1, &r, "first undo: the pin");
    r.ok(&["undo"]);
    assert_state(&s0, &r, "second undo: the restore");
    let out = r.run(&["undo"]);
    assert_eq!(out.code, 1, "{out}");
    assert!(out.stderr.contains("nothing to undo"), "{out}");
    r.ok(&["redo"]);
    assert_state(&s1, &r, "redo: the restore");
    // An undo of the newest undo is a redo.
    let log = r.json_of(&["op", "log"]);
    let newest_undo = (log.as_array().unwrap().iter())
        .find(|op| op["kind"] == "undo" && op["acts_on"] == 2)
        .expect("the undo of the pin is in the log")["number"]
        .clone();
    r.ok(&["undo", &newest_undo.to_string()]);
    assert_state(&s2, &r, "undo of the undo: the pin again");
    let out = r.run(&["redo"]);
    assert_eq!(out.code, 1, "{out}");
    assert!(out.stderr.contains("nothing to redo"), "{out}");

    // New work ends what redo could go back to.
    r.ok(&["undo"]);
    r.ok(&["branch", "-m", "main", "trunk"]);
    let out = r.run(&["redo"]);
    assert_eq!(out.code, 1, "{out}");
    assert!(out.stderr.contains("nothing to redo"), "{out}");
    // Only the newest operation in effect can be undone by number.
    let out = r.run(&["undo", "1"]);
    assert_eq!(out.code, common::EXIT_REFUSED, "{out}");
    assert!(out.stderr.contains("op 1 cannot be undone now"), "{out}");
    let newest = r.json_of(&["op", "log", "-n", "1"])[0]["number"].to_string();
    r.ok(&["undo", &newest]);
    assert_eq!(r.branches(), ["*main"]);
}

/// An undo of a redo, by its number, undoes again what the redo brought back, as `undo`
/// would; an undo by number of an operation that is not the newest in effect names the
/// one that is.
#[test]
fn an_undo_of_a_redo_undoes_again_what_it_brought_back() {
    let (r, c) = three_saves();
    r.write("a.txt", b"unsaved\n");
    let before = state(&r);
    r.ok(&["restore", &c[0]]);
    let restore = newest_op(&r);
    let after = state(&r);
    r.ok(&["undo"]);
    r.ok(&["redo"]);
    assert_state(&after, &r, "redo: the restore");
    let redo = newest_op(&r);
    r.ok(&["undo", &redo]);
    assert_state(
        &before,
        &r,
        "undo of the redo: the state before the restore",
    );

    r.ok(&["redo"]);
    r.ok(&["pin", &c[1]]);
    let pin = newest_op(&r);
    let out = r.run(&["undo", &restore]);
    assert_eq!(out.code, common::EXIT_REFUSED, "{out}");
    assert!(
        out.stderr.contains(&format!(
            "op {restore} cannot be undone now: the newest operation in effect is op {pin}"
        )),
        "{out}"
    );
}

/// Saves are not operations: undo goes back to the state before the newest operation,
/// the checkpoints saved since stay, and redo brings the branch back to them.
#[test]
fn undo_after_saves_keeps_them_and_redo_returns_to_them() {
    let (r, c) = busy_repo();
    let before = state(&r);
    r.ok(&["restore", &c[0]]);
    r.write("a.txt", b"saved after the restore\n");
    let saved = r.save("after");
    r.write("a.txt", b"unsaved after that\n");
    let out = r.ok(&["undo"]);
    assert!(
        out.stdout.contains("the checkpoints saved on it since op"),
        "{out}"
    );
    assert_state(&before, &r, "undo past a save");
    assert!(r.log_ids(true).contains(&saved), "the save is kept");
    r.ok(&["redo"]);
    assert_eq!(r.id("main"), saved);
    assert_eq!(r.read("a.txt"), b"unsaved after that\n");
}

/// The number of the newest operation.
fn newest_op(r: &Repo) -> String {
    r.json_of(&["op", "log", "-n", "1"])[0]["number"].to_string()
}

#[test]
fn op_restore_returns_to_the_state_after_any_operation() {
    let (r, c) = busy_repo();
    r.ok(&["restore", &c[1]]);
    let first = newest_op(&r);
    let after_first = state(&r);
    r.ok(&["pin", &c[0]]);
    r.ok(&["fork", &c[2], "-b", "other"]);
    r.write("x.txt", b"unsaved\n");
    let before = state(&r);
    let out = r.ok(&["op", "restore", &first]);
    assert!(
        out.stdout.starts_with(&format!(
            "Returned to the state after op {first}: restore to "
        )),
        "{out}"
    );
    let now = state(&r);
    assert_snap_eq(&after_first.files, &now.files, "op restore: worktree");
    assert_eq!(after_first.pins, now.pins);
    // The fork made after op 1 is gone from the references, kept in the store.
    assert_eq!(after_first.branches, now.branches);
    r.ok(&["undo"]);
    assert_state(&before, &r, "op restore, undone");
    // A restore of some paths left a worktree no checkpoint holds.
    r.ok(&["restore", &c[0], "--", "a.txt"]);
    let out = r.run(&["op", "restore", &newest_op(&r)]);
    assert_eq!(out.code, common::EXIT_REFUSED, "{out}");
    assert!(out.stderr.contains("changed some paths"), "{out}");
    let out = r.run(&["op", "restore", "999"]);
    assert_eq!(out.code, 1, "{out}");
    assert!(out.stderr.contains("no operation '999'"), "{out}");
}

/// Runs `args` with the clock at `when`, which the operation log records and gc's undo
/// window is measured from.
#[track_caller]
fn at(r: &Repo, when: &str, args: &[&str]) -> common::Out {
    r.run_env(args, &[("GIT_CHECKPOINT_NOW", when)])
}

/// [`at`], which must succeed.
#[track_caller]
fn ok_at(r: &Repo, when: &str, args: &[&str]) -> common::Out {
    let out = at(r, when, args);
    assert_eq!(out.code, 0, "{args:?}: {out}");
    out
}

/// [`at`], which must succeed, with stdout as one JSON document.
#[track_caller]
fn json_at(r: &Repo, when: &str, args: &[&str]) -> Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let out = at(r, when, &all);
    assert_eq!(out.code, 0, "{out}");
    parse_json(&out, &format!("{args:?}"))
}

const DAY0: &str = "2026-03-01T10:00:00Z";
/// Eight days after [`DAY0`]: past the undo window of what was done then.
const LATER: &str = "2026-03-09T10:00:00Z";

/// What undo would need is kept by gc for the undo window; after it, a gc may remove it,
/// and undo then says what went and when, and changes nothing.
#[test]
fn gc_keeps_what_undo_needs_for_the_window_and_undo_names_what_it_removed_after() {
    let (r, c) = busy_repo();
    let before = state(&r);
    ok_at(&r, DAY0, &["restore", &c[0]]);
    // A gc within the window: the safety checkpoint the restore made stays, so the
    // restore can still be undone, and undo passes over the gc.
    let gc = at(&r, DAY0, &["gc", "--keep", "1"]);
    assert_eq!(gc.code, 0, "{gc}");
    let after_restore = state(&r);
    ok_at(&r, DAY0, &["undo"]);
    // (The gc removed c2, which no operation needed: the history is shorter.)
    assert_refs(&before, &r, "undo across a gc in the window");
    ok_at(&r, DAY0, &["redo"]);
    assert_state(&after_restore, &r, "redo across a gc in the window");

    // Eight days on, gc removes what the restore started from.
    let gc = at(&r, LATER, &["gc", "--keep", "1"]);
    assert_eq!(gc.code, 0, "{gc}");
    let now = state(&r);
    let out = at(&r, LATER, &["undo"]);
    assert_eq!(out.code, common::EXIT_REFUSED, "{out}");
    assert!(
        out.stderr
            .contains("cannot be undone: gc removed checkpoint")
            && out.stderr.contains("on 2026-03-09"),
        "{out}"
    );
    assert_state(&now, &r, "a refused undo");
    let log = r.ok(&["op", "log"]).stdout;
    assert!(
        log.contains("(cannot be undone: gc removed checkpoint"),
        "{log}"
    );
    assert!(log.contains("gc: removed"), "{log}");
}

#[test]
fn a_drop_keeps_what_it_dropped_until_a_gc_after_the_undo_window() {
    let r = Repo::new();
    r.write("a.txt", b"a\n");
    r.save("first");
    let big = common::pseudo_random(300_000, 7);
    r.write("big.bin", &big);
    let dropped = r.save("big");
    r.remove("big.bin");
    r.save("without it");
    ok_at(&r, DAY0, &["drop", &dropped]);
    assert!(!r.log_ids(true).contains(&dropped));
    // gc within the window keeps the dropped checkpoint and its data.
    ok_at(&r, DAY0, &["gc"]);
    let verify = r.json_of(&["verify", "--read-data"]);
    assert_eq!(verify["unreachable_bytes"], 0, "{verify}");
    ok_at(&r, DAY0, &["undo"]);
    assert!(r.log_ids(true).contains(&dropped));
    ok_at(&r, DAY0, &["restore", &dropped]);
    assert_eq!(r.read("big.bin"), big);
    ok_at(&r, DAY0, &["undo"]);

    // Dropped again; a gc after the window deletes it for good.
    ok_at(&r, DAY0, &["drop", &dropped]);
    let stored = |when: &str| json_at(&r, when, &["stats"])["stored_chunk_bytes"].as_u64();
    let size_before = stored(DAY0).unwrap();
    ok_at(&r, LATER, &["gc"]);
    let size_after = stored(LATER).unwrap();
    assert!(
        size_after + 250_000 < size_before,
        "gc after the window freed too little: {size_before} -> {size_after}"
    );
    let out = at(&r, LATER, &["undo"]);
    assert_eq!(out.code, common::EXIT_REFUSED, "{out}");
    assert!(out.stderr.contains("gc removed checkpoint"), "{out}");
    let verify = r.json_of(&["verify", "--read-data"]);
    assert_eq!(verify["problems"].as_array().unwrap().len(), 0, "{verify}");
}

#[test]
fn op_log_lists_operations_newest_first_with_what_made_them() {
    let (r, c) = busy_repo();
    r.ok(&["restore", &c[0], "--", "a.txt"]);
    r.ok(&["pin", &c[1]]);
    r.ok(&["undo"]);
    let text = r.ok(&["op", "log"]).stdout;
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].contains("undo of op"), "{text}");
    assert_eq!(lines[1].trim(), "git checkpoint undo", "{text}");
    assert!(
        lines[2].contains("pin ") && lines[2].contains("(undone by op"),
        "{text}"
    );
    assert_eq!(
        lines[5].trim(),
        format!("git checkpoint restore {} -- a.txt", c[0]),
        "{text}"
    );
    let log = r.json_of(&["op", "log"]);
    let newest = &log[0];
    assert_eq!(newest["kind"], "undo");
    assert_eq!(newest["invocation"]["type"], "command");
    assert_eq!(newest["invocation"]["args"], serde_json::json!(["undo"]));
    let restore = (log.as_array().unwrap().iter())
        .find(|op| op["kind"] == "restore" && op["summary"].as_str().unwrap().contains("path"))
        .unwrap();
    assert_eq!(restore["worktree"]["paths"], serde_json::json!(["a.txt"]));
    assert!(restore["before"]["branches"].is_array());
    let limited = r.json_of(&["op", "log", "-n", "2"]);
    assert_eq!(limited.as_array().unwrap().len(), 2);
}

/// A refused undo says why in one line, exits 1 and changes nothing: something the
/// restore would overwrite stands where the state before had a file.
#[test]
fn an_undo_its_restore_refuses_changes_nothing() {
    let (r, c) = busy_repo();
    r.ok(&["restore", &c[0]]);
    // b.txt comes back with the undo; an ignored file of the user's now stands there.
    std::fs::write(r.p(".git/info/exclude"), "b.txt\n").unwrap();
    r.write("b.txt", b"ignored, mine\n");
    let now = state(&r);
    let log = r.json_of(&["op", "log"]);
    let checkpoints = r.log_ids(true);
    let out = r.run(&["undo"]);
    assert_eq!(out.code, common::EXIT_REFUSED, "{out}");
    assert_eq!(out.stderr.lines().count(), 1, "{out}");
    assert_state(&now, &r, "refused undo");
    assert_eq!(r.read("b.txt"), b"ignored, mine\n");
    assert_eq!(
        r.json_of(&["op", "log"]),
        log,
        "the refusal recorded nothing"
    );
    assert_eq!(r.log_ids(true), checkpoints, "no safety checkpoint left");
}

#[test]
fn undo_with_nothing_to_undo_and_of_an_unknown_operation_say_so() {
    let r = Repo::new();
    r.write("a.txt", b"a\n");
    r.save("one");
    let out = r.run(&["undo"]);
    assert_eq!(out.code, 1, "{out}");
    assert!(out.stderr.starts_with("error: nothing to undo"), "{out}");
    let out = r.run(&["undo", "x7"]);
    assert_eq!(out.code, 1, "{out}");
    assert!(out.stderr.contains("no operation 'x7'"), "{out}");
    let out = r.run(&["--json", "op", "log"]);
    assert_eq!(parse_json(&out, "op log"), Value::Array(Vec::new()));
}

/// A pull is two operations, the fetch and the fast-forward: two undos put back the
/// worktree (unsaved edits included), the branch and the fetched branch.
#[test]
fn undo_puts_back_a_pull_and_the_fetch_before_it() {
    let a = Repo::new();
    let bare = a.sb.root.join("remote.git");
    a.sb.git(&a.sb.root, &["init", "-q", "--bare", "remote.git"]);
    a.git(&["remote", "add", "origin", bare.to_str().unwrap()]);
    a.write("f.txt", b"one\n");
    a.save("a1");
    a.ok(&["push", "origin"]);
    a.sb.git(
        &a.sb.root,
        &["clone", "-q", "--no-local", bare.to_str().unwrap(), "b"],
    );
    let b = Repo {
        sb: common::Sandbox::new(),
        dir: a.sb.root.join("b"),
    };
    let run_b = |args: &[&str]| a.sb.ok_in(&b.dir, args);
    run_b(&["pull"]);
    a.write("f.txt", b"two\n");
    a.save("a2");
    a.ok(&["push", "origin"]);
    b.write("scratch.txt", b"unsaved\n");
    let fetched = |b: &Repo| {
        let out = a.sb.ok_in(&b.dir, &["--json", "show", "origin/main"]);
        parse_json(&out, "show")["id"].clone()
    };
    let files = b.snapshot();
    let (main, tracked) = (b.id("main"), fetched(&b));
    run_b(&["pull"]);
    assert_eq!(b.read("f.txt"), b"two\n");
    assert_ne!(fetched(&b), tracked);
    let log = parse_json(&run_b(&["--json", "op", "log", "-n", "2"]), "op log");
    assert_eq!(
        (log[0]["kind"].as_str(), log[1]["kind"].as_str()),
        (Some("pull"), Some("fetch"))
    );
    run_b(&["undo"]);
    assert_snap_eq(&files, &b.snapshot(), "the pull undone");
    assert_eq!(b.id("main"), main);
    run_b(&["undo"]);
    assert_eq!(fetched(&b), tracked, "the fetch undone");
    run_b(&["redo"]);
    run_b(&["redo"]);
    assert_eq!(b.read("f.txt"), b"two\n");
    assert_ne!(fetched(&b), tracked);
}

/// A revert saves its result as a checkpoint, and records itself in that save's
/// transaction with the result as the worktree it left: undo puts back exactly the state
/// before it (the result stays in the store, off the branch), redo the state after, and
/// `op restore` returns to the result. The same for a revert of some paths.
#[test]
fn undo_of_a_revert_saved_as_a_checkpoint_puts_back_exactly_the_state_before_it() {
    for limited in [false, true] {
        let r = Repo::new();
        r.write("a.txt", b"a1\n");
        r.save("c1");
        r.write("a.txt", b"a2\n");
        r.write("b.txt", b"b2\n");
        let c2 = r.save("c2");
        r.write("c.txt", b"c3\n");
        r.save("c3");
        // Unsaved, and no path the revert touches.
        r.write("unsaved.txt", b"the user's, unsaved\n");
        let before = state(&r);
        let mut args = vec!["revert", c2.as_str()];
        if limited {
            args.extend(["--", "b.txt"]);
        }
        let out = r.ok(&args);
        let what = if limited { "revert -- b.txt" } else { "revert" };
        assert!(
            out.stdout.contains("Saved the revert as checkpoint"),
            "{what}: {out}"
        );
        assert!(!r.exists("b.txt"), "{what}: {out}");
        let expected_a = if limited { "a2\n" } else { "a1\n" };
        assert_eq!(r.read_string("a.txt"), expected_a, "{what}");
        let result = &r.log_json(false)[0];
        let files = if limited { "1 file" } else { "2 files" };
        let described = match limited {
            true => format!("{c2} -- b.txt"),
            false => c2.clone(),
        };
        assert_eq!(
            result["message"],
            format!("revert of {described} ({files})"),
            "{what}: {result:#}"
        );
        assert_eq!(r.json_of(&["status", "--json"])["clean"], true, "{what}");
        let op = &r.json_of(&["op", "log", "-n", "1"])[0];
        assert_eq!(op["kind"], "revert", "{what}: {op:#}");
        assert_eq!(op["worktree"]["after"], result["id"], "{what}: {op:#}");
        let after = state(&r);

        r.ok(&["undo"]);
        assert_state(&before, &r, &format!("{what}, undone"));
        r.ok(&["redo"]);
        assert_state(&after, &r, &format!("{what}, redone"));
        r.ok(&["undo"]);
        assert_state(&before, &r, &format!("{what}, undone again"));

        // The revert's worktree is held whole by its result: op restore returns to it.
        let revert_op = op["number"].to_string();
        r.ok(&["op", "restore", &revert_op]);
        assert_snap_eq(&after.files, &r.snapshot(), &format!("{what}, op restore"));
    }
}
