//! Crashes at every phase boundary of save and restore (fault points that abort the real
//! process) and `kill -9` at spread-out moments: afterwards the store opens, every
//! checkpoint listed before the crash restores byte-exact, and the worktree holds no
//! temporary files once a restore has been finished.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use common::{assert_snap_eq, pseudo_random, Repo, Snap};

/// Writes `files` files of `size` pseudo-random bytes, contents chosen by `seed`.
fn fill(repo: &Repo, files: usize, size: usize, seed: u64) {
    for i in 0..files {
        repo.write(
            format!("d{}/f{i}.bin", i % 5),
            &pseudo_random(size, seed * 1000 + i as u64),
        );
    }
}

fn no_temp_files(dir: &Path) -> bool {
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            if e.file_name()
                .to_string_lossy()
                .starts_with(".checkpoint-tmp-")
            {
                return false;
            }
            if e.file_type().unwrap().is_dir() && e.file_name() != ".git" {
                stack.push(e.path());
            }
        }
    }
    true
}

/// The store passes a full check, every chunk re-read and re-hashed.
fn assert_verifies(repo: &Repo, what: &str) {
    let out = repo.run(&["verify", "--read-data"]);
    assert_eq!(out.code, 0, "{what}: verify failed\n{out}");
}

/// Runs the binary with a fault point armed; it must die, not exit normally.
fn crash_at(repo: &Repo, point: &str, args: &[&str]) {
    let mut cmd = repo.sb.bin_cmd(&repo.dir, args);
    cmd.env("GIT_CHECKPOINT_FAULT", point);
    let out = common::run_cmd(cmd, common::DEFAULT_TIMEOUT);
    assert_ne!(out.code, 0, "{point}: the fault point did not fire\n{out}");
}

#[test]
fn a_save_that_dies_after_writing_chunks_leaves_the_store_as_it_was() {
    let repo = Repo::new();
    fill(&repo, 20, 30_000, 1);
    let first = repo.save("first");
    let first_snap = repo.snapshot();
    fill(&repo, 20, 30_000, 2);
    crash_at(&repo, "save-chunks-written", &["save", "-m", "dies"]);
    assert_verifies(&repo, "after a save died");

    assert_eq!(repo.log_ids(true), vec![first.clone()]);
    let second_snap = repo.snapshot();
    let second = repo.save("second");
    repo.ok(&["restore", &first]);
    assert_snap_eq(&first_snap, &repo.snapshot(), "first after crash");
    repo.ok(&["restore", &second]);
    assert_snap_eq(&second_snap, &repo.snapshot(), "second after crash");
}

#[test]
fn an_interrupted_restore_is_reported_and_finishes_when_run_again() {
    let repo = Repo::new();
    fill(&repo, 40, 20_000, 3);
    let first = repo.save("first");
    let first_snap = repo.snapshot();
    fill(&repo, 40, 20_000, 4);
    repo.save("second");

    crash_at(&repo, "restore-mid-write", &["restore", &first]);
    assert_verifies(&repo, "after a restore died");
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

/// Kills saves and restores with SIGKILL at spread-out moments. Every checkpoint that
/// completed before a kill must stay listed and restore exactly.
#[test]
fn kill_9_at_spread_out_moments_never_loses_a_checkpoint() {
    let repo = Repo::new();
    fill(&repo, 60, 60_000, 10);
    let mut known: BTreeMap<String, Snap> = BTreeMap::new();
    let base = repo.save("base");
    known.insert(base.clone(), repo.snapshot());

    for round in 0..10u64 {
        fill(&repo, 30, 60_000, 100 + round);
        let (args, delay): (Vec<&str>, u64) = if round % 3 == 2 {
            (vec!["restore", base.as_str(), "--json"], 5 + round * 7)
        } else {
            (vec!["save", "--json", "-m", "killed maybe"], 5 + round * 9)
        };
        let before = repo.snapshot();
        let mut child = repo
            .sb
            .bin_cmd(&repo.dir, &args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(delay));
        let _ = child.kill();
        let out = child.wait_with_output().unwrap();
        if out.status.success() && args[0] == "save" {
            let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            if let Some(id) = v["id"].as_str() {
                known.insert(id.to_string(), before);
            }
        }
        // The store passes verify and still lists every checkpoint known to have completed.
        assert_verifies(&repo, &format!("round {round}"));
        let listed = repo.log_ids(true);
        for id in known.keys() {
            assert!(listed.contains(id), "round {round}: {id} lost");
        }
        if args[0] == "restore" {
            // Finish whatever the killed restore started.
            repo.ok(&["restore", &base]);
            assert_snap_eq(&known[&base], &repo.snapshot(), "finished restore");
        }
    }
    for (id, snap) in &known {
        repo.ok(&["restore", id, "--no-save"]);
        assert_snap_eq(snap, &repo.snapshot(), id);
        assert!(no_temp_files(&repo.dir));
    }
}
