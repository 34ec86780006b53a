//! Crashes at every phase boundary of save and restore (fault points that abort the real
//! process) and `kill -9` inside running saves and restores: afterwards the store opens,
//! every checkpoint listed before the crash restores byte-exact, and the worktree holds
//! no temporary files once a restore has been finished.
//!
//! Every crash is checked to have landed where it was aimed: a fault point must end the
//! process with SIGABRT, a kill with SIGKILL while the process was still running, and the
//! state left behind must show the phase (committed chunk batches, a half-renamed tree).

use crate::common;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::Duration;

use common::{assert_aborted, assert_snap_eq, pseudo_random, Out, Repo, Snap};
use serde_json::Value;

/// A save writes its chunks in durable batches of this many stored bytes (`BATCH_BYTES`
/// in src/save.rs); only data beyond it makes a save commit before its checkpoint.
const BATCH_BYTES: u64 = 64 << 20;

/// Writes `files` files of `size` pseudo-random bytes, contents chosen by `seed`.
fn fill(repo: &Repo, files: usize, size: usize, seed: u64) {
    for i in 0..files {
        repo.write(
            format!("d{}/f{i}.bin", i % 5),
            &pseudo_random(size, seed * 1000 + i as u64),
        );
    }
}

/// Temporary files of a restore below `dir` (outside `.git`).
fn count_temp_files(dir: &Path) -> usize {
    let mut count = 0;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            if e.file_name()
                .to_string_lossy()
                .starts_with(".checkpoint-tmp-")
            {
                count += 1;
            }
            if e.file_type().unwrap().is_dir() && e.file_name() != ".git" {
                stack.push(e.path());
            }
        }
    }
    count
}

fn no_temp_files(dir: &Path) -> bool {
    count_temp_files(dir) == 0
}

/// The store passes a full check, every chunk re-read and re-hashed; returns the report.
#[track_caller]
fn assert_verifies(repo: &Repo, what: &str) -> Value {
    let out = repo.run(&["verify", "--read-data", "--json"]);
    assert_eq!(out.code, 0, "{what}: verify failed\n{out}");
    common::parse_json(&out, what)
}

/// Runs the binary with a fault point armed; it must die by that fault's abort.
fn crash_at(repo: &Repo, point: &str, args: &[&str]) -> Out {
    let mut cmd = repo.sb.bin_cmd(&repo.dir, args);
    cmd.env("GIT_CHECKPOINT_FAULT", point);
    let out = common::run_cmd(cmd, common::DEFAULT_TIMEOUT);
    assert_aborted(&out, point);
    out
}

/// A save that dies after some of its chunks were committed in full batches (and, for
/// `save-chunks-written`, after all of them): no checkpoint appears, every earlier one
/// restores exactly, the committed chunks are garbage that `verify` counts (not damage),
/// and the next save of the same files reuses them instead of storing them again.
#[test]
fn a_save_that_dies_after_committing_chunk_batches_leaves_every_checkpoint_as_it_was() {
    for point in ["save-batch-committed", "save-chunks-written"] {
        let repo = Repo::new();
        fill(&repo, 20, 30_000, 1);
        let first = repo.save("first");
        let first_snap = repo.snapshot();
        // Incompressible, so that the stored bytes pass one full batch.
        for i in 0..4u64 {
            repo.write(format!("big/{i}.bin"), &pseudo_random(20 << 20, 50 + i));
        }
        crash_at(&repo, point, &["save", "-m", "dies"]);
        assert_eq!(repo.log_ids(true), vec![first.clone()], "{point}");

        // The crash came after a durable batch: its chunks are in the store, unreachable.
        let report = assert_verifies(&repo, point);
        let garbage = report["unreachable_bytes"].as_u64().unwrap();
        assert!(
            report["unreachable_chunks"].as_u64().unwrap() > 0 && garbage >= BATCH_BYTES / 10 * 9,
            "{point}: no committed batch was left behind, so the crash came before any: {report}"
        );
        let text = repo.ok(&["verify"]).stdout;
        assert!(
            text.contains("Garbage, not damage") && text.contains("gc would free"),
            "{text}"
        );

        let second_snap = repo.snapshot();
        // What the save writes to the store file, not how long the file grows: the
        // engine may lengthen the file by more than it writes.
        let (out, trace) = repo.traced(&["pwrite64", "write"], &["save", "-m", "second"]);
        assert_eq!(out.code, 0, "{point}: {out}");
        let second = repo.current();
        let report = assert_verifies(&repo, point);
        assert_eq!(report["unreachable_chunks"], 0, "{point}: {report}");
        let written = bytes_written_to(&trace, "store.redb>");
        assert!(
            written > 0 && written < BATCH_BYTES / 2,
            "{point}: the save stored the committed chunks again ({written} bytes written)"
        );
        repo.ok(&["restore", &first]);
        assert_snap_eq(&first_snap, &repo.snapshot(), "first after crash");
        repo.ok(&["restore", &second]);
        assert_snap_eq(&second_snap, &repo.snapshot(), "second after crash");
    }
}

/// A restore that dies while staging files (none renamed yet) or half-way through putting
/// them in place: status names the unfinished restore, a save says so and captures no
/// temporary file, and running the restore again finishes it exactly.
#[test]
fn an_interrupted_restore_is_reported_and_finishes_when_run_again() {
    for point in ["restore-mid-write", "restore-mid-rename"] {
        let repo = Repo::new();
        fill(&repo, 40, 20_000, 3);
        let first = repo.save("first");
        let first_snap = repo.snapshot();
        fill(&repo, 40, 20_000, 4);
        repo.save("second");
        let second_snap = repo.snapshot();

        crash_at(&repo, point, &["restore", &first]);
        assert_verifies(&repo, point);
        // Where the crash landed shows in the worktree: staged files are not in place yet;
        // half-way through the renames, the tree is part old, part new.
        let files = |snap: &Snap, of: &Snap| {
            snap.iter()
                .filter(|(path, node)| node.is_captured_kind() && of.get(*path) == Some(node))
                .count()
        };
        let now = repo.snapshot();
        let (new, old) = (files(&now, &first_snap), files(&now, &second_snap));
        if point == "restore-mid-rename" {
            assert!(
                new >= 10 && old >= 10,
                "{point}: {new} new, {old} old files"
            );
        } else {
            assert_eq!(
                new, 0,
                "{point}: files were put in place before the renames"
            );
            // About half the 40 files were staged when the fault fired.
            let staged = count_temp_files(&repo.dir);
            assert!(
                (15..=40).contains(&staged),
                "{point}: {staged} files staged"
            );
        }

        // status says which restore is unfinished.
        let out = repo.ok(&["status", "--json"]);
        assert!(out.stderr.contains("interrupted"), "{out}");
        let status = common::parse_json(&out, "status");
        let target = status["interrupted_restore"].as_str().unwrap_or_default();
        assert!(target.len() >= 7 && first.starts_with(target), "{status}");
        // The store still opens; a save says what happened and captures no temporary file.
        let out = repo.ok(&["save", "-m", "after the crash"]);
        assert!(out.stderr.contains("interrupted"), "{out}");
        let latest = repo.log_json(false);
        assert!(
            latest[0]["files"].as_u64().unwrap() <= 40,
            "temporary files were captured: {}",
            latest[0]
        );

        repo.ok(&["restore", &first]);
        assert_snap_eq(&first_snap, &repo.snapshot(), "restore run again");
        assert!(no_temp_files(&repo.dir), "temporary files left behind");
        let out = repo.ok(&["save", "--allow-empty", "-m", "clean"]);
        assert!(!out.stderr.contains("interrupted"), "{out}");
        let status = repo.json(&["status", "--json"]);
        assert!(status["interrupted_restore"].is_null(), "{status}");
    }
}

/// A restore into an emptied worktree writes every file at its own name (nothing was
/// there to keep whole) and one that also replaces files stages only those: killed
/// half-way through the writes, the paths that held nothing already hold the target's
/// files (whole, but for those being written when the process died: a beginning of them),
/// no replaced file is new yet, no temporary file stands for a path that held nothing;
/// the restore is reported as interrupted and finishes exactly when run again.
#[test]
fn an_interrupted_restore_of_new_paths_leaves_whole_files_and_finishes_when_run_again() {
    for (point, emptied) in [
        ("restore-mid-write", true),
        ("restore-mid-write", false),
        ("restore-mid-rename", false),
    ] {
        let what = format!("{point}, emptied tree: {emptied}");
        let repo = Repo::new();
        fill(&repo, 40, 20_000, 5);
        let first = repo.save("first");
        let first_snap = repo.snapshot();
        if emptied {
            for d in 0..5 {
                std::fs::remove_dir_all(repo.p(format!("d{d}"))).unwrap();
            }
        } else {
            // Half the files change (replaced on restore), half are gone (new on restore).
            for i in 0..40 {
                let path = format!("d{}/f{i}.bin", i % 5);
                match i % 2 {
                    0 => repo.write(&path, &pseudo_random(20_000, 6000 + i as u64)),
                    _ => repo.remove(&path),
                }
            }
        }
        repo.save("second");

        crash_at(&repo, point, &["restore", &first]);
        let now = repo.snapshot();
        let (mut whole, mut partial, mut replaced_new) = (0, 0, 0);
        for (path, node) in &now {
            if !node.is_captured_kind() {
                continue;
            }
            let name = String::from_utf8_lossy(path);
            if name.contains(".checkpoint-tmp-") {
                continue;
            }
            let index: u64 = name
                .rsplit('f')
                .next()
                .unwrap()
                .trim_end_matches(".bin")
                .parse()
                .unwrap();
            let is_new_path = emptied || index % 2 == 1;
            if is_new_path {
                // Written at its name: whole, or (another thread was writing it when the
                // process died) a beginning of the target's bytes, never anything else.
                let bytes = repo.read(&*name);
                let target = pseudo_random(20_000, 5000 + index);
                assert!(
                    target.starts_with(&bytes),
                    "{what}: {name} holds other bytes"
                );
                match bytes.len() == target.len() {
                    true => whole += 1,
                    false => partial += 1,
                }
            } else if first_snap.get(path) == Some(node) {
                replaced_new += 1;
            }
        }
        let staged = count_temp_files(&repo.dir);
        let new_paths = if emptied { 40 } else { 20 };
        if point == "restore-mid-write" {
            assert!(
                whole >= 5,
                "{what}: {whole} new paths written at their names"
            );
            assert_eq!(
                replaced_new, 0,
                "{what}: a replaced file is new before the renames"
            );
            // Temporary files stand only for replaced paths.
            assert!(staged <= 40 - new_paths, "{what}: {staged} temporary files");
        } else {
            // Every new path is written and synced before the first rename.
            assert_eq!((whole, partial), (new_paths, 0), "{what}");
            assert!(
                replaced_new >= 5 && staged >= 5,
                "{what}: {replaced_new} renamed, {staged} staged"
            );
        }

        let status = repo.json(&["status", "--json"]);
        assert!(!status["interrupted_restore"].is_null(), "{what}: {status}");
        repo.ok(&["restore", &first]);
        assert_snap_eq(&first_snap, &repo.snapshot(), &what);
        assert!(
            no_temp_files(&repo.dir),
            "{what}: temporary files left behind"
        );
        let status = repo.json(&["status", "--json"]);
        assert!(status["interrupted_restore"].is_null(), "{what}: {status}");
        assert_verifies(&repo, &what);
    }
}

/// Where one killed process is stopped.
#[derive(Debug, Clone, Copy)]
enum KillAt {
    /// Inside a pause at a named fault point, known to be reached.
    Point(&'static str),
    /// This share of the time a clean run of the same operation took.
    Share(f64),
}

/// Sends SIGKILL and returns whether it ended the process (rather than the process
/// having exited already), with what it printed.
fn kill_9(mut child: Child) -> (bool, std::process::Output) {
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    let landed = std::os::unix::process::ExitStatusExt::signal(&out.status) == Some(9);
    (landed, out)
}

/// Runs `args` and kills it at `at`; returns whether the kill landed in a live process
/// and the id of the checkpoint if a save finished first.
fn run_and_kill(
    repo: &Repo,
    args: &[&str],
    at: KillAt,
    clean_run: Duration,
) -> (bool, Option<String>) {
    let child = match at {
        KillAt::Point(point) => common::spawn_paused(repo, args, point, 30_000),
        KillAt::Share(share) => {
            let child = repo
                .sb
                .bin_cmd(&repo.dir, args)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            std::thread::sleep(clean_run.mul_f64(share));
            child
        }
    };
    let (landed, out) = kill_9(child);
    let id = if args[0] == "save" && out.status.success() {
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        v["id"].as_str().map(str::to_owned)
    } else {
        None
    };
    (landed, id)
}

/// Kills saves and restores with SIGKILL inside the operation: at each of their pause
/// points, and at spread-out shares of a clean run's time. Every kill must land in a live
/// process; every checkpoint that completed before it stays listed and restores exactly.
#[test]
fn kill_9_inside_saves_and_restores_never_loses_a_checkpoint() {
    let repo = Repo::new();
    fill(&repo, 60, 60_000, 10);
    let mut known: BTreeMap<String, Snap> = BTreeMap::new();
    let base = repo.save("base");
    known.insert(base.clone(), repo.snapshot());
    let save_args = ["save", "--json", "-m", "killed"];
    let restore_args = ["restore", base.as_str(), "--json"];

    // How long a clean save and a clean restore of this much change take here.
    fill(&repo, 30, 60_000, 99);
    let before = repo.snapshot();
    let timed = repo.ok(&save_args);
    known.insert(
        common::id_of(&common::parse_json(&timed, "save")).unwrap(),
        before,
    );
    let save_time = timed.elapsed();
    let restore_time = repo.ok(&["restore", &base]).elapsed();

    let mut rounds: Vec<(bool, KillAt)> = Vec::new();
    for point in ["locked", "save-chunks-written"] {
        rounds.push((true, KillAt::Point(point)));
    }
    for point in ["locked", "restore-mid-write", "restore-mid-rename"] {
        rounds.push((false, KillAt::Point(point)));
    }
    for share in [0.2, 0.4, 0.6] {
        rounds.push((true, KillAt::Share(share)));
        rounds.push((false, KillAt::Share(share)));
    }

    for (round, (is_save, at)) in rounds.into_iter().enumerate() {
        let what = format!(
            "round {round}: {} killed at {at:?}",
            if is_save { "save" } else { "restore" }
        );
        let (args, clean_run): (&[&str], Duration) = if is_save {
            (&save_args, save_time)
        } else {
            (&restore_args, restore_time)
        };
        // A timed kill can miss on a machine that is suddenly faster; then try earlier,
        // with fresh changes (the missed run saved or restored the last ones).
        let mut at = at;
        let mut landed = false;
        for attempt in 0..4u64 {
            fill(&repo, 30, 60_000, 100 + round as u64 * 10 + attempt);
            let before = repo.snapshot();
            let (hit, id) = run_and_kill(&repo, args, at, clean_run);
            if let Some(id) = id {
                known.insert(id, before);
            }
            landed = hit;
            match at {
                KillAt::Share(share) if !hit => at = KillAt::Share(share / 2.0),
                _ => break,
            }
        }
        assert!(landed, "{what}: the process had finished before the kill");

        // The store passes verify and still lists every checkpoint known to have completed.
        assert_verifies(&repo, &what);
        let listed = repo.log_ids(true);
        for id in known.keys() {
            assert!(listed.contains(id), "{what}: {id} lost");
        }
        if !is_save {
            // Finish whatever the killed restore started.
            repo.ok(&["restore", &base]);
            assert_snap_eq(&known[&base], &repo.snapshot(), &what);
        }
    }
    for (id, snap) in &known {
        repo.ok(&["restore", id, "--no-save"]);
        assert_snap_eq(snap, &repo.snapshot(), id);
        assert!(no_temp_files(&repo.dir));
    }
}

/// The bytes that the `write`/`pwrite64` calls of an `strace -f -y` trace wrote to files
/// whose shown path ends with `path_end`. A call another thread interrupted shows as
/// "<pid> …write…(fd<path>, … <unfinished ...>" and later "<pid> <... write resumed>) = n".
fn bytes_written_to(trace: &str, path_end: &str) -> u64 {
    let mut pending = std::collections::HashSet::new();
    let mut total = 0;
    for line in trace.lines() {
        let (pid, call) = line.split_once(' ').unwrap_or(("", line));
        let to_file = call.contains("write") && call.contains(path_end);
        if call.ends_with("<unfinished ...>") {
            if to_file {
                pending.insert(pid.to_string());
            }
            continue;
        }
        let counted = if call.trim_start().starts_with("<...") {
            pending.remove(pid)
        } else {
            to_file
        };
        if counted {
            total += call
                .rsplit_once(") = ")
                .and_then(|(_, n)| n.trim().parse::<u64>().ok())
                .unwrap_or(0);
        }
    }
    total
}
