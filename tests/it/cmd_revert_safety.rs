//! `revert` must not lose or half-do: a revert the worktree cannot take (a directory it
//! may not write) is refused before anything changes; one that fails while it writes
//! says it stopped part-way and names the checkpoint and command that undo it; its dry
//! run agrees with the real run (exit status, refusal, plan); and a step that turned a
//! file into a directory, or the reverse, is undone like any other.
//!
//! The read-only directory stands in for EPERM (an immutable directory, a full disk):
//! root writes anywhere, so as root the revert runs as `nobody` through setpriv(1), as
//! `safety_unreadable` does (skipped knowingly with `GIT_CHECKPOINT_TEST_SKIP_UNREADABLE`).

use crate::common;
use std::os::unix::fs::PermissionsExt;

use common::*;
use serde_json::Value;

/// Three files, a step that changes all three, and `sub/` made read-only for the
/// revert's user (`nobody` when the tests run as root). Returns the worktree as the step
/// left it. `None` when the machine cannot drop root.
fn step_with_a_read_only_directory(r: &Repo) -> Option<Snap> {
    if !prepare_unprivileged(r) {
        return None;
    }
    for (path, text) in [("a.txt", "a0\n"), ("sub/b.txt", "b0\n"), ("c.txt", "c0\n")] {
        r.write(path, text.as_bytes());
    }
    r.save("before the step");
    for (path, text) in [("a.txt", "a1\n"), ("sub/b.txt", "b1\n"), ("c.txt", "c1\n")] {
        r.write(path, text.as_bytes());
    }
    r.save("the step");
    open_up(&r.sb.root);
    Some(r.snapshot())
}

fn read_only(r: &Repo, dir: &str, yes: bool) {
    let mode = if yes { 0o555 } else { 0o777 };
    std::fs::set_permissions(r.p(dir), std::fs::Permissions::from_mode(mode)).unwrap();
}

#[test]
fn a_revert_into_a_directory_it_may_not_write_is_refused_with_nothing_changed() {
    let r = Repo::new();
    let Some(stepped) = step_with_a_read_only_directory(&r) else {
        return;
    };
    let checkpoints = r.log_ids(true);
    read_only(&r, "sub", true);
    let out = run_unprivileged(&r, &["revert", "@"]);
    read_only(&r, "sub", false);
    assert_eq!(out.code, EXIT_REFUSED, "{out}");
    let line = out.stderr.lines().next().unwrap_or_default();
    assert!(
        line.contains("/sub") && line.contains("nothing was changed"),
        "one line naming the directory: {out}"
    );
    assert!(!line.contains(".tmp") && !line.contains(".gcp"), "{out}");
    assert_snap_eq(&stepped, &r.snapshot(), "a refused revert");
    assert_eq!(r.log_ids(true), checkpoints, "no checkpoint left behind");
}

#[test]
fn a_revert_that_fails_part_way_says_so_and_names_the_way_back() {
    let r = Repo::new();
    let Some(stepped) = step_with_a_read_only_directory(&r) else {
        return;
    };
    // Unsaved work, so that the revert makes a safety checkpoint of its own.
    r.write("notes.txt", b"unsaved\n");
    open_up(&r.p("notes.txt"));
    let mut before = stepped.clone();
    before.extend(
        r.snapshot()
            .into_iter()
            .filter(|(p, _)| p.as_slice() == b"notes.txt"),
    );
    // Everything is staged; the directory turns read-only before the renames.
    let child = spawn_paused_cmd(
        &r,
        unprivileged_cmd(&r, &["revert", "@"]),
        "revert-staged",
        3000,
    );
    read_only(&r, "sub", true);
    let out = child.wait_with_output().unwrap();
    read_only(&r, "sub", false);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(r.read("a.txt"), b"a0\n", "the top directory went first");
    assert_eq!(r.read("sub/b.txt"), b"b1\n");
    let line = stderr.lines().next().unwrap_or_default();
    assert!(line.contains("stopped part-way"), "{stderr}");
    assert!(
        line.contains("sub/b.txt"),
        "the path, not a temp file: {stderr}"
    );
    let undo = line
        .split("git checkpoint restore ")
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_hexdigit()).next())
        .unwrap_or_else(|| panic!("no command to undo it: {stderr}"));
    let safety = r
        .log_json(true)
        .into_iter()
        .find(|c| {
            c["message"]
                .as_str()
                .unwrap_or("")
                .starts_with("before revert")
        })
        .unwrap_or_else(|| panic!("no safety checkpoint: {stderr}"));
    assert!(
        id_of(&safety).unwrap().starts_with(undo),
        "{undo} is the safety checkpoint"
    );
    // The command it names puts the worktree back as the revert found it.
    r.ok(&["restore", undo]);
    assert_snap_eq(&before, &r.snapshot(), "after the restore it names");
}

/// A step that changes one line, and the user's own change to the same line since.
fn a_conflicting_line(r: &Repo) {
    r.write("notes.txt", b"a\nb\nc\n");
    r.write("other.txt", b"one\n");
    r.save("start");
    r.write("notes.txt", b"a\nb (agent)\nc\n");
    r.write("other.txt", b"two\n");
    r.save("agent step");
    r.write("notes.txt", b"a\nb (me)\nc\n");
}

/// Each path's status and action, as `--json` lists them.
fn plan_of(report: &Value) -> Vec<(String, String, String)> {
    report["paths"]
        .as_array()
        .unwrap_or_else(|| panic!("no paths: {report}"))
        .iter()
        .map(|p| {
            let field = |k: &str| p[k].as_str().unwrap_or_default().to_string();
            (field("path"), field("status"), field("action"))
        })
        .collect()
}

#[test]
fn a_dry_run_exits_refuses_and_plans_as_the_real_run() {
    let r = Repo::new();
    a_conflicting_line(&r);
    let before = r.snapshot();
    let checkpoints = r.log_ids(true);

    // --no-conflicts: the same refusal, the same status, nothing on stdout.
    let dry = r.run(&["revert", "--dry-run", "--no-conflicts", "@"]);
    let real = r.run(&["revert", "--no-conflicts", "@"]);
    assert_eq!(
        (dry.code, dry.stdout.as_str(), dry.stderr.as_str()),
        (real.code, real.stdout.as_str(), real.stderr.as_str()),
        "dry run:\n{dry}\nreal run:\n{real}"
    );
    assert_eq!(real.code, EXIT_REFUSED, "{real}");
    assert_snap_eq(&before, &r.snapshot(), "a refused revert");

    // Without it: the real run leaves a conflict and exits 1; so does its dry run, which
    // plans the same and says the markers would be written, not that they were.
    let dry = r.run(&["revert", "--dry-run", "@"]);
    assert_eq!(dry.code, 1, "{dry}");
    assert!(
        dry.stdout.contains(
            "conflict  notes.txt (changed on both sides; conflict markers would be written)"
        ),
        "{dry}"
    );
    assert!(!dry.stdout.contains("markers written"), "{dry}");
    assert!(
        dry.stderr.contains("would conflict in 1 path: notes.txt"),
        "{dry}"
    );
    let dry_json = r.run(&["revert", "--dry-run", "--json", "@"]);
    assert_eq!(dry_json.code, 1, "{dry_json}");
    let dry_plan = plan_of(&parse_json(&dry_json, "revert --dry-run --json"));
    assert_snap_eq(&before, &r.snapshot(), "dry runs");
    assert_eq!(r.log_ids(true), checkpoints, "dry runs make no checkpoint");

    let real = r.run(&["revert", "--json", "@"]);
    assert_eq!(real.code, dry_json.code, "{real}");
    assert_eq!(plan_of(&parse_json(&real, "revert --json")), dry_plan);
    assert_eq!(
        dry_plan,
        [
            ("notes.txt".into(), "conflict".into(), "markers".into()),
            ("other.txt".into(), "applied".into(), "write".into())
        ]
    );
}

#[test]
fn a_step_that_turned_a_file_into_a_directory_is_reverted_both_ways() {
    let r = Repo::new();
    r.write("keep.txt", b"keep\n");
    r.write("d", b"a file\n");
    r.save("d is a file");
    r.remove("d");
    r.write("d/f", b"inner\n");
    r.write("d/sub/g", b"deeper\n");
    let as_directory = r.snapshot();
    r.save("d is a directory");

    let out = r.run(&["revert", "--json", "@"]);
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(
        plan_of(&parse_json(&out, "revert --json")),
        [
            ("d".into(), "applied".into(), "write".into()),
            ("d/f".into(), "applied".into(), "delete".into()),
            ("d/sub/g".into(), "applied".into(), "delete".into())
        ]
    );
    assert_eq!(r.read("d"), b"a file\n");
    assert_eq!(r.read("keep.txt"), b"keep\n");

    // The reverse: the revert, a checkpoint of its own, turned the directory back into
    // a file.
    let out = r.run(&["revert", "@"]);
    assert_eq!(out.code, 0, "{out}");
    assert_snap_eq(&as_directory, &r.snapshot(), "the directory is back");

    // An ignored file inside the directory is no checkpoint's: it stays, and so does
    // the directory holding it (a conflict), whatever else is undone.
    r.write(".git/info/exclude", b"*.log\n");
    r.write("d/mine.log", b"ignored\n");
    let out = r.run(&["revert", "@"]);
    assert_eq!(out.code, 1, "{out}");
    assert!(out.stdout.contains("conflict  d ("), "{out}");
    assert_eq!(r.read("d/mine.log"), b"ignored\n");
}
