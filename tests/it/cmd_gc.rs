//! Retention through the real binary: which checkpoints gc keeps (restic's documented
//! examples, tips, HEAD, pins, size budgets), re-linked parents, byte-exact restores of
//! what stays, disk space given back, dry runs that change nothing, the automatic gc
//! after a save, and kill -9 at every stage of a gc.

use crate::common;
use std::collections::{BTreeMap, BTreeSet};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::raw_store::{self, BRANCHES, STAT_CACHE};
use common::{
    assert_no_panic, assert_snap_eq, parse_json, pseudo_random, run_cmd, Out, Repo, Snap,
    DEFAULT_TIMEOUT,
};
use serde_json::Value;

/// Runs the binary with extra environment (always TZ=UTC, so calendar buckets are
/// deterministic).
fn run_env(repo: &Repo, env: &[(&str, &str)], args: &[&str]) -> Out {
    let mut cmd = repo.sb.bin_cmd(&repo.dir, args);
    cmd.env("TZ", "UTC");
    for (key, value) in env {
        cmd.env(key, value);
    }
    let out = run_cmd(cmd, DEFAULT_TIMEOUT);
    assert_no_panic(&out, &format!("{args:?}"));
    out
}

fn ok_env(repo: &Repo, env: &[(&str, &str)], args: &[&str]) -> Out {
    let out = run_env(repo, env, args);
    assert_eq!(out.code, 0, "{args:?}\n{out}");
    out
}

fn json_env(repo: &Repo, env: &[(&str, &str)], args: &[&str]) -> Value {
    parse_json(&ok_env(repo, env, args), &format!("{args:?}"))
}

use common::PAST_THE_UNDO_WINDOW;

/// Saves with the clock set to `time` (RFC 3339) and returns the new id.
fn save_at(repo: &Repo, time: &str, message: &str) -> String {
    let v = json_env(
        repo,
        &[("GIT_CHECKPOINT_NOW", time)],
        &["save", "--json", "-m", message],
    );
    v["id"]
        .as_str()
        .unwrap_or_else(|| panic!("no checkpoint made: {v}"))
        .to_string()
}

fn ids(list: &Value, key: &str) -> Vec<String> {
    list[key]
        .as_array()
        .unwrap_or_else(|| panic!("{key} is not an array: {list}"))
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect()
}

fn set(v: &[String]) -> BTreeSet<String> {
    v.iter().cloned().collect()
}

fn parents_of(repo: &Repo) -> BTreeMap<String, Vec<String>> {
    repo.log_json(true)
        .iter()
        .map(|c| {
            let parents = c["parents"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p.as_str().unwrap().to_string())
                .collect();
            (c["id"].as_str().unwrap().to_string(), parents)
        })
        .collect()
}

/// Restores every listed checkpoint and compares the worktree with what was saved.
fn assert_all_listed_restore_exactly(repo: &Repo, expected: &BTreeMap<String, Snap>) {
    for id in repo.log_ids(true) {
        let want = expected
            .get(&id)
            .unwrap_or_else(|| panic!("checkpoint {id} is listed but was never saved"));
        repo.ok(&["restore", &id]);
        assert_snap_eq(want, &repo.snapshot(), &format!("restore {id}"));
    }
}

fn assert_unknown(repo: &Repo, id: &str) {
    let out = repo.run(&["restore", id, "--dry-run"]);
    assert_eq!(out.code, 1, "{out}");
    assert!(out.stderr.contains("unknown revision"), "{out}");
}

/// restic's documentation: one backup every Sunday for 12 weeks; `--keep-daily 4`
/// keeps the last four Sundays and removes the other eight.
#[test]
fn the_restic_sunday_example_keeps_the_last_four() {
    let repo = Repo::new();
    let mut saved = Vec::new();
    let mut expected = BTreeMap::new();
    let sundays = [
        "2019-09-01",
        "2019-09-08",
        "2019-09-15",
        "2019-09-22",
        "2019-09-29",
        "2019-10-06",
        "2019-10-13",
        "2019-10-20",
        "2019-10-27",
        "2019-11-03",
        "2019-11-10",
        "2019-11-17",
    ];
    for (week, day) in sundays.iter().enumerate() {
        repo.write("notes.txt", format!("week {week}\n").as_bytes());
        repo.write(format!("week{week}.txt"), day.as_bytes());
        let id = save_at(&repo, &format!("{day}T11:00:00Z"), day);
        expected.insert(id.clone(), repo.snapshot());
        saved.push(id);
    }

    let dry = json_env(
        &repo,
        &[],
        &["gc", "--keep-daily", "4", "--dry-run", "--json"],
    );
    assert_eq!(set(&ids(&dry, "removed")), set(&saved[..8]));

    let report = json_env(&repo, &[], &["gc", "--keep-daily", "4", "--json"]);
    assert_eq!(set(&ids(&report, "removed")), set(&saved[..8]));
    assert_eq!(set(&ids(&report, "kept")), set(&saved[8..]));
    assert_eq!(set(&repo.log_ids(true)), set(&saved[8..]));
    // The oldest kept one lost its parent and has none left to point at.
    assert_eq!(parents_of(&repo)[&saved[8]], Vec::<String>::new());
    for removed in &saved[..8] {
        assert_unknown(&repo, removed);
    }
    repo.ok(&["verify", "--read-data"]);
    assert_all_listed_restore_exactly(&repo, &expected);
}

/// Tips, HEAD and pins survive any policy; kept checkpoints are re-linked to their
/// nearest kept ancestor; unpinning lets a checkpoint go.
#[test]
fn tips_head_and_pins_survive_and_parents_are_relinked() {
    let repo = Repo::new();
    let mut c = Vec::new();
    let mut expected = BTreeMap::new();
    for i in 0..8 {
        repo.write("counter.txt", format!("{i}\n").as_bytes());
        repo.write(
            format!("dir{}/f{i}.bin", i % 3),
            &pseudo_random(3000 + i, i as u64),
        );
        let id = save_at(
            &repo,
            &format!("2024-03-0{}T10:00:00Z", i + 1),
            &format!("c{i}"),
        );
        expected.insert(id.clone(), repo.snapshot());
        c.push(id);
    }
    // A branch whose tip is old, made through the library as no command makes one yet.
    {
        let db = raw_store::open(&repo.store_path());
        let txn = db.begin_write().unwrap();
        txn.open_table(BRANCHES)
            .unwrap()
            .insert("feature", u128::from_str_radix(&c[2], 16).unwrap())
            .unwrap();
        txn.commit().unwrap();
    }
    let pinned = repo.ok(&["pin", &c[3]]);
    assert!(pinned.stdout.contains("Pinned checkpoint"), "{pinned}");
    assert!(repo.ok(&["pin", &c[3]]).stdout.contains("already pinned"));
    // HEAD (and main) go back to c5; c6 and c7 stay as an unnamed line.
    repo.ok(&["restore", &c[5]]);
    let log = repo.ok(&["log", "--all"]).stdout;
    let pin_line = log.lines().find(|l| c[3].starts_with(&l[..7])).unwrap();
    assert!(pin_line.contains("[pinned]"), "{log}");
    let log_json = repo.log_json(true);
    let pinned_json: Vec<&str> = log_json
        .iter()
        .filter(|c| c["pinned"] == true)
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(pinned_json, [c[3].as_str()]);

    let report = json_env(&repo, &[], &["gc", "--keep", "1", "--json"]);
    let kept: BTreeMap<String, Vec<String>> = report["kept"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            (
                k["id"].as_str().unwrap().to_string(),
                k["reasons"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| r.as_str().unwrap().to_string())
                    .collect(),
            )
        })
        .collect();
    assert_eq!(
        set(&kept.keys().cloned().collect::<Vec<_>>()),
        set(&[c[2].clone(), c[3].clone(), c[5].clone(), c[7].clone()])
    );
    // The tip main had before the restore is what undoing the restore needs: gc keeps
    // it for the undo window too (docs/undo.md).
    assert_eq!(kept[&c[7]], ["newest", "undo of op 2"]);
    assert!(kept[&c[5]].contains(&"HEAD".to_string()), "{kept:?}");
    assert!(kept[&c[5]].contains(&"branch main".to_string()), "{kept:?}");
    assert_eq!(kept[&c[3]], ["pinned"]);
    assert_eq!(kept[&c[2]], ["branch feature"]);
    for gone in [&c[0], &c[1], &c[4], &c[6]] {
        assert_unknown(&repo, gone);
    }
    let parents = parents_of(&repo);
    assert_eq!(parents[&c[7]], [c[5].clone()]);
    assert_eq!(parents[&c[5]], [c[3].clone()]);
    assert_eq!(parents[&c[3]], [c[2].clone()]);
    assert!(parents[&c[2]].is_empty());
    // `~N` walks the re-linked line.
    let out = repo.ok(&["restore", &format!("{}~2", c[7]), "--dry-run", "--json"]);
    assert_eq!(parse_json(&out, "restore")["target"], c[3].as_str());
    repo.ok(&["verify", "--read-data"]);
    assert_all_listed_restore_exactly(&repo, &expected);

    // Unpinned, c3 goes at the next gc past the undo window (until then, undoing the
    // unpin needs it), and c5 now hangs off c2.
    repo.ok(&["restore", &c[5]]);
    assert!(repo.ok(&["unpin", &c[3]]).stdout.contains("Unpinned"));
    assert!(repo.ok(&["unpin", &c[3]]).stdout.contains("was not pinned"));
    json_env(
        &repo,
        &[PAST_THE_UNDO_WINDOW],
        &["gc", "--keep", "1", "--json"],
    );
    assert_unknown(&repo, &c[3]);
    assert_eq!(parents_of(&repo)[&c[5]], [c[2].clone()]);
    assert_all_listed_restore_exactly(&repo, &expected);
}

/// The file really shrinks when gc removes most of the data, and the report's figure is
/// the measured change in file size.
#[test]
fn disk_space_goes_back_to_the_filesystem() {
    let repo = Repo::new();
    for i in 0..16 {
        repo.write("payload.bin", &pseudo_random(1 << 20, 100 + i));
        save_at(&repo, &format!("2024-01-01T10:{i:02}:00Z"), "payload");
    }
    let before = std::fs::metadata(repo.store_path()).unwrap().len();
    assert!(before > 16 << 20, "{before}");
    let report = json_env(&repo, &[], &["gc", "--keep", "2", "--json"]);
    let after = std::fs::metadata(repo.store_path()).unwrap().len();
    assert_eq!(report["file_size_before"], before);
    assert_eq!(report["file_size_after"], after);
    assert_eq!(report["bytes_freed"], before as i64 - after as i64);
    assert_eq!(report["removed"].as_array().unwrap().len(), 14);
    assert!(
        report["chunks_removed"].as_u64().unwrap() >= 14 * 4,
        "{report}"
    );
    assert!(after < before / 4, "{before} -> {after}");
    assert!(after < 4 << 20, "{after}");
    let human = ok_env(&repo, &[], &["gc"]).stdout;
    assert!(human.contains("Removed 0 of 2 checkpoints"), "{human}");
    assert!(human.contains("freed on disk"), "{human}");
    repo.ok(&["verify", "--read-data"]);
}

/// A dry run (and stats) changes not one byte of the store, and says what a real run
/// then does.
#[test]
fn dry_run_and_stats_leave_the_store_byte_identical() {
    let repo = Repo::new();
    let mut saved = Vec::new();
    for i in 0..6 {
        repo.write("data.bin", &pseudo_random(200_000, i));
        saved.push(save_at(
            &repo,
            &format!("2024-05-0{}T10:00:00Z", i + 1),
            "x",
        ));
    }
    let bytes = std::fs::read(repo.store_path()).unwrap();
    let dry = json_env(&repo, &[], &["gc", "--keep", "2", "--dry-run", "--json"]);
    assert_eq!(dry["dry_run"], true);
    assert_eq!(dry["file_size_after"], Value::Null);
    let human = ok_env(&repo, &[], &["gc", "--keep", "2", "--dry-run"]).stdout;
    assert!(human.contains("Would remove 4 of 6 checkpoints"), "{human}");
    for id in &saved[..4] {
        assert!(human.contains(&id[..7]), "{human}");
    }
    ok_env(&repo, &[], &["stats"]);
    ok_env(&repo, &[], &["stats", "--json"]);
    assert!(
        std::fs::read(repo.store_path()).unwrap() == bytes,
        "a dry run or stats changed the store file"
    );
    assert_eq!(set(&repo.log_ids(true)), set(&saved));

    let real = json_env(&repo, &[], &["gc", "--keep", "2", "--json"]);
    assert_eq!(ids(&real, "removed"), ids(&dry, "removed"));
    assert_eq!(real["chunks_removed"], dry["chunks_removed"]);
    assert_eq!(real["stored_bytes_removed"], dry["stored_bytes_removed"]);
}

/// Without a --keep rule gc removes no checkpoint, only data nothing reaches: here a
/// chunk and a tree written through the library that no checkpoint names, as an
/// interrupted writer of an older version could leave them.
#[test]
fn without_a_rule_gc_only_sweeps_unreachable_data() {
    let repo = Repo::new();
    repo.write("a.txt", b"one\n");
    let first = repo.save("first");
    // A save that crashes after writing its chunks leaves a store that verifies (its
    // chunk batches were never made durable, or are merely unreachable).
    repo.write("big.bin", &pseudo_random(500_000, 7));
    let crashed = run_env(
        &repo,
        &[("GIT_CHECKPOINT_FAULT", "save-chunks-written")],
        &["save"],
    );
    common::assert_aborted(&crashed, "save-chunks-written");
    json_env(&repo, &[], &["verify", "--json"]);
    raw_store::plant_unreachable(&repo.store_path(), b"orphaned content");
    let verify = json_env(&repo, &[], &["verify", "--json"]);
    assert_eq!(verify["ok"], true);
    assert!(
        verify["unreachable_chunks"].as_u64().unwrap() >= 1,
        "{verify}"
    );
    assert_eq!(verify["unreachable_trees"], 1, "{verify}");

    let report = json_env(&repo, &[], &["gc", "--json"]);
    assert_eq!(report["policy"], Value::Null);
    assert!(report["removed"].as_array().unwrap().is_empty());
    assert!(report["chunks_removed"].as_u64().unwrap() >= 1, "{report}");
    assert_eq!(report["trees_removed"], 1, "{report}");
    assert_eq!(repo.log_ids(true), [first.as_str()]);
    let verify = json_env(&repo, &[], &["verify", "--json", "--read-data"]);
    assert_eq!(verify["unreachable_chunks"], 0);
    assert_eq!(verify["unreachable_trees"], 0);
    // Whatever went is written again by the next save, which restores exactly.
    let second = repo.save("second");
    let want = repo.snapshot();
    repo.ok(&["restore", &first]);
    repo.ok(&["restore", &second]);
    assert_snap_eq(&want, &repo.snapshot(), "after sweep");
}

/// `--max-size`: after the rules, the oldest unprotected checkpoints go until the live
/// data fits; pinned and current ones stay even so.
#[test]
fn max_size_evicts_the_oldest_unprotected_checkpoints() {
    let repo = Repo::new();
    let mut saved = Vec::new();
    for i in 0..10 {
        repo.write("blob.bin", &pseudo_random(200_000, 50 + i));
        saved.push(save_at(
            &repo,
            &format!("2024-07-{:02}T10:00:00Z", i + 1),
            "b",
        ));
    }
    repo.ok(&["pin", &saved[0]]);
    let report = json_env(&repo, &[], &["gc", "--max-size", "900K", "--json"]);
    let live = report["live_bytes"].as_u64().unwrap();
    assert!(live <= 900 << 10, "{report}");
    assert_eq!(report["over_budget"], false);
    let removed = ids(&report, "removed");
    // Four 200 KB checkpoints fit in 900 KiB: the pinned oldest and the newest three.
    assert_eq!(set(&removed), set(&saved[1..7]), "{report}");
    assert!(report["removed"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r["for_size"] == true));
    assert_eq!(
        set(&repo.log_ids(true)),
        set(&[
            saved[0].clone(),
            saved[7].clone(),
            saved[8].clone(),
            saved[9].clone()
        ])
    );
    // A budget nothing can meet: everything unprotected goes, and gc says so.
    let out = ok_env(&repo, &[], &["gc", "--max-size", "10K"]);
    assert!(out.stderr.contains("still exceeds --max-size"), "{out}");
    assert_eq!(
        set(&repo.log_ids(true)),
        set(&[saved[0].clone(), saved[9].clone()])
    );
    repo.ok(&["verify", "--read-data"]);
}

/// `checkpoint.gc.*` makes every save apply the policy when it is exceeded; bad values
/// are a warning, never a failed save.
#[test]
fn configured_retention_runs_after_each_save() {
    let repo = Repo::new();
    repo.git(&["config", "checkpoint.gc.keep", "3"]);
    let mut saved = Vec::new();
    for i in 0..3 {
        repo.write("n.txt", format!("{i}").as_bytes());
        let out = ok_env(&repo, &[], &["save", "-m", "s"]);
        assert!(!out.stdout.contains("gc ("), "{out}");
        saved.push(repo.current());
    }
    for i in 3..6 {
        repo.write("n.txt", format!("{i}").as_bytes());
        let out = ok_env(&repo, &[], &["save", "-m", "s"]);
        assert!(
            out.stdout
                .contains("gc (keep 3 newest): removed 1 checkpoint"),
            "{out}"
        );
        saved.push(repo.current());
        assert_eq!(set(&repo.log_ids(true)), set(&saved[i - 2..]));
    }
    // --json keeps stdout one document.
    repo.write("n.txt", b"json");
    let v = repo.save_json(&[]);
    assert!(v["id"].is_string());
    assert_eq!(repo.log_ids(true).len(), 3);
    // The automatic gc deletes everything the removed checkpoints alone held.
    let verify = json_env(&repo, &[], &["verify", "--read-data", "--json"]);
    assert_eq!(verify["unreachable_chunks"], 0, "{verify}");
    assert_eq!(verify["unreachable_trees"], 0, "{verify}");

    // Dropping a checkpoint that holds most of the file compacts it at once.
    repo.write("big.bin", &pseudo_random(4 << 20, 11));
    repo.save("big");
    repo.remove("big.bin");
    for i in 0..2 {
        repo.write("n.txt", format!("small {i}").as_bytes());
        repo.save("small");
    }
    let before = std::fs::metadata(repo.store_path()).unwrap().len();
    assert!(before > 4 << 20, "{before}");
    repo.write("n.txt", b"drops big");
    let out = ok_env(&repo, &[], &["save"]);
    assert!(out.stdout.contains("freed on disk"), "{out}");
    let after = std::fs::metadata(repo.store_path()).unwrap().len();
    assert!(after < before / 2, "{before} -> {after}");
    assert_eq!(repo.log_ids(true).len(), 3);

    repo.git(&["config", "checkpoint.gc.keep", "lots"]);
    repo.write("n.txt", b"x");
    let out = ok_env(&repo, &[], &["save"]);
    assert!(
        out.stderr
            .contains("checkpoint.gc.keep must be a whole number"),
        "{out}"
    );
    assert_eq!(repo.log_ids(true).len(), 4);

    repo.git(&["config", "--unset", "checkpoint.gc.keep"]);
    repo.git(&["config", "checkpoint.gc.keepWithin", "1d"]);
    repo.write("n.txt", b"y");
    ok_env(&repo, &[], &["save"]);
    // Everything is from today: nothing goes.
    assert_eq!(repo.log_ids(true).len(), 5);
    repo.ok(&["verify"]);
}

/// Builds a store for the crash tests: `n` checkpoints with shared and unique content,
/// and what each one held.
fn crash_fixture(n: usize) -> (Repo, BTreeMap<String, Snap>) {
    let repo = Repo::new();
    let mut expected = BTreeMap::new();
    for i in 0..n {
        repo.write("shared/common.bin", &pseudo_random(300_000, 1));
        repo.write(
            format!("step{}.bin", i % 4),
            &pseudo_random(150_000, 1000 + i as u64),
        );
        repo.write("log.txt", format!("step {i}\n").repeat(i + 1).as_bytes());
        if i % 5 == 4 {
            repo.remove(format!("step{}.bin", (i + 1) % 4));
        }
        let id = save_at(&repo, &format!("2024-02-{:02}T09:00:00Z", i + 1), "step");
        expected.insert(id, repo.snapshot());
    }
    (repo, expected)
}

/// After a crash: the store verifies, every listed checkpoint restores exactly, and a
/// second gc finishes the job.
fn check_after_crash(repo: &Repo, expected: &BTreeMap<String, Snap>, what: &str) {
    let verify = repo.run(&["verify", "--read-data"]);
    assert_eq!(verify.code, 0, "{what}: verify after the crash\n{verify}");
    let listed = repo.log_ids(true);
    assert!(
        listed.len() == expected.len() || listed.len() == 3,
        "{what}: {} listed",
        listed.len()
    );
    assert_all_listed_restore_exactly(repo, expected);
    // Back to the newest, so that HEAD is one of the three the next gc keeps; that gc
    // runs past the undo window, so that it need not keep what undoing the restore
    // would need.
    repo.ok(&["restore", &listed[0]]);
    json_env(
        repo,
        &[PAST_THE_UNDO_WINDOW],
        &["gc", "--keep", "3", "--json"],
    );
    repo.ok(&["verify", "--read-data"]);
    assert_eq!(repo.log_ids(true).len(), 3, "{what}");
    assert_all_listed_restore_exactly(repo, expected);
}

/// A gc aborted at each of its stages, as a crash would stop it.
#[test]
fn a_gc_crashing_at_any_stage_leaves_a_store_that_verifies_and_restores() {
    let (repo, expected) = crash_fixture(12);
    let store = std::fs::read(repo.store_path()).unwrap();
    let current = repo.current();
    for (point, all_listed) in [
        ("gc-planned", true),
        ("gc-before-commit", true),
        ("gc-committed", false),
        ("gc-compacting", false),
    ] {
        std::fs::write(repo.store_path(), &store).unwrap();
        repo.ok(&["restore", "--no-save", &current]);
        let out = run_env(
            &repo,
            &[("GIT_CHECKPOINT_FAULT", point)],
            &["gc", "--keep", "3"],
        );
        common::assert_aborted(&out, point);
        let listed = repo.log_ids(true).len();
        assert_eq!(listed, if all_listed { 12 } else { 3 }, "{point}");
        check_after_crash(&repo, &expected, point);
    }
}

/// kill -9 of a real gc process at moments spread over its run.
#[test]
fn kill_9_at_any_moment_of_a_gc_leaves_a_store_that_verifies_and_restores() {
    let (repo, expected) = crash_fixture(16);
    let store = std::fs::read(repo.store_path()).unwrap();
    let current = repo.current();
    // How long an uninterrupted gc takes here, to spread the kills over it.
    let timed = ok_env(&repo, &[], &["gc", "--keep", "3"]);
    let full = timed.elapsed();
    for step in 0..8u32 {
        std::fs::write(repo.store_path(), &store).unwrap();
        repo.ok(&["restore", "--no-save", &current]);
        let delay = full * step / 7;
        let mut cmd = repo.sb.bin_cmd(&repo.dir, &["gc", "--keep", "3"]);
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let started = Instant::now();
        let mut child = cmd.spawn().unwrap();
        std::thread::sleep(delay);
        child.kill().unwrap(); // SIGKILL
        let status = child.wait().unwrap();
        let what = format!(
            "kill -9 after {:?} of {full:?} ({})",
            started.elapsed(),
            if status.success() {
                "had finished"
            } else {
                "killed"
            }
        );
        eprintln!("{what}: {} listed", repo.log_ids(true).len());
        check_after_crash(&repo, &expected, &what);
    }
}

/// A stat-cache entry that names chunks only a removed checkpoint holds must go with
/// them, or the next save would trust it and record chunks that are gone. The normal
/// paths keep the cache in step with the current checkpoint, which gc keeps, so the
/// entry is put back by hand: the one a.bin had when its first version was saved.
#[test]
fn gc_forgets_stat_cache_entries_whose_chunks_it_deletes() {
    let repo = Repo::new();
    repo.write("a.bin", &pseudo_random(200_000, 21));
    repo.write("b.txt", b"steady\n");
    // Only files older than the cache's racy margin (2 s, ctime included) get entries.
    std::thread::sleep(Duration::from_millis(2_100));
    let first = repo.save("v1");
    let cache_entry = |repo: &Repo| -> Vec<u8> {
        let db = raw_store::open(&repo.store_path());
        let txn = redb::ReadableDatabase::begin_read(&db).unwrap();
        let table = txn.open_table(STAT_CACHE).unwrap();
        let entry = table.get(b"a.bin".as_slice()).unwrap().unwrap();
        entry.value().to_vec()
    };
    let first_entry = cache_entry(&repo);
    repo.write("a.bin", &pseudo_random(200_000, 22));
    repo.save("v2");
    {
        let db = raw_store::open(&repo.store_path());
        let txn = db.begin_write().unwrap();
        txn.open_table(STAT_CACHE)
            .unwrap()
            .insert(b"a.bin".as_slice(), first_entry.as_slice())
            .unwrap();
        txn.commit().unwrap();
    }
    repo.ok(&["gc", "--keep", "1"]);
    assert!(!repo.log_ids(true).contains(&first));
    let verify = repo.run(&["verify", "--read-data"]);
    assert_eq!(
        verify.code, 0,
        "gc kept a cache entry naming deleted chunks\n{verify}"
    );
}

/// gc keeps the target of an interrupted restore, which `status` tells the user to
/// finish by running the restore again.
#[test]
fn gc_keeps_the_target_of_an_interrupted_restore() {
    let repo = Repo::new();
    for i in 0..30 {
        repo.write(format!("f{i}.txt"), format!("first {i}\n").as_bytes());
    }
    let first = repo.save("first");
    let want = repo.snapshot();
    for i in 0..30 {
        repo.write(format!("f{i}.txt"), format!("second {i}\n").as_bytes());
    }
    repo.save("second");
    let crashed = run_env(
        &repo,
        &[("GIT_CHECKPOINT_FAULT", "restore-mid-write")],
        &["restore", &first],
    );
    common::assert_aborted(&crashed, "restore-mid-write");
    repo.ok(&["gc", "--keep", "1"]);
    assert!(
        repo.log_ids(true).contains(&first),
        "gc removed the restore's target"
    );
    repo.ok(&["restore", &first]);
    assert_snap_eq(&want, &repo.snapshot(), "the finished restore");
}
