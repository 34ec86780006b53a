//! A save without a watcher after edits (issue 25): its read-only look walks, matches
//! the stat cache, reads the few files the cache cannot vouch for and builds the tree;
//! the write path then reads again only what the look read and keeps the look's tree
//! (spliced where a file changed in between), instead of matching the stat cache and
//! building the tree over every file a second time. It records exactly what a save
//! that looks afresh records, for every kind of change.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use crate::cmd_watch::{ran, traced_save};
use crate::cmd_watch_changes::{
    apply, copy_without_watcher, counts, edit, every_kind_of_change, recorded, small_tree_saved,
    start_for_every_kind_of_change,
};
use crate::common;
use common::Repo;
use proptest::prelude::*;

/// The phase a write path that goes on from its look runs (the trace's span).
const AFTER_LOOK: &str = "read again what the look read, splice";

/// A save in `dir` whose write path looks at the worktree afresh (the hook that turns
/// the hand-over off).
fn save_afresh(repo: &Repo, dir: &Path, msg: &str) -> common::Out {
    let mut cmd = repo.sb.bin_cmd(dir, &["save", "-m", msg]);
    cmd.env("GIT_CHECKPOINT_SAVE_AFTER_LOOK", "off")
        .env("GIT_CHECKPOINT_TRACE", "1");
    let out = common::run_cmd(cmd, Duration::from_secs(60));
    assert_eq!(out.code, 0, "{out}");
    assert!(
        !ran(&out, AFTER_LOOK),
        "the hook did not turn it off\n{out}"
    );
    out
}

/// Saves the worktree as it now is twice: going on from the look, and in a copy made
/// first, looking afresh; both must record the same. Returns the first save's output.
#[track_caller]
fn assert_save_matches_a_fresh_look(repo: &Repo, step: &str) -> common::Out {
    let copy = copy_without_watcher(repo, &format!("fresh-{}", step.replace(' ', "-")));
    let save = traced_save(repo, step).out;
    let fresh = save_afresh(repo, &copy, step);
    let saved = save.stdout.contains("Saved checkpoint");
    assert_eq!(
        saved,
        fresh.stdout.contains("Saved checkpoint"),
        "{step}: one save made a checkpoint, the other did not\n{save}\n{fresh}"
    );
    if saved {
        assert!(ran(&save, AFTER_LOOK), "{step}: not from the look\n{save}");
    }
    assert_eq!(
        recorded(repo, &repo.dir),
        recorded(repo, &copy),
        "{step}: going on from the look and looking afresh recorded different checkpoints"
    );
    common::remove_any(&copy);
    save
}

#[test]
fn every_kind_of_change_saved_after_the_look_matches_a_fresh_look() {
    let repo = Repo::new();
    start_for_every_kind_of_change(&repo);
    repo.save("start");
    for (step, change) in &every_kind_of_change() {
        change(&repo);
        assert_save_matches_a_fresh_look(&repo, step);
    }
    assert_eq!(repo.json(&["status", "--json"])["clean"], true);
}

/// After one edit in a tree of 300 files, the save reads each file's stat cache entry
/// once (in its look), not once more in its write path.
#[test]
fn a_save_after_one_edit_matches_the_stat_cache_once() {
    let repo = Repo::new();
    for d in 0..10 {
        for f in 0..30 {
            repo.write(format!("d{d}/f{f:02}.txt"), format!("{d} {f}\n").as_bytes());
        }
    }
    repo.save("start");
    // Settled, so that the stat cache vouches for every file.
    std::thread::sleep(Duration::from_millis(2300));
    repo.ok(&["save", "--allow-empty", "-m", "settles the cache"]);
    repo.write("d3/f07.txt", b"edited\n");
    let out = repo.run_env(
        &["save", "-m", "one edit"],
        &[("GIT_CHECKPOINT_TRACE", "1")],
    );
    assert!(out.stdout.contains("Saved checkpoint"), "{out}");
    assert!(ran(&out, AFTER_LOOK), "{out}");
    let [_, entries, _] = counts(&out);
    // Looking afresh reads them all twice.
    assert!(
        (300..=302).contains(&entries),
        "read {entries} stat cache entries for 300 files\n{out}"
    );
}

/// A file the look read that changes before the write path reads it is recorded as the
/// write path read it, as a save that looked afresh records it.
#[test]
fn a_file_changed_between_the_look_and_the_save_is_recorded_as_it_then_is() {
    let repo = Repo::new();
    repo.write("a/one.txt", b"one\n");
    repo.write("a/two.txt", b"two\n");
    repo.write("b/three.txt", b"three\n");
    repo.save("start");
    repo.write("a/one.txt", b"one, edited\n");
    repo.write("new.txt", b"new\n");
    let copy = copy_without_watcher(&repo, "fresh");

    let paused = repo.scratch("pause").join("paused");
    let mut cmd = repo.sb.bin_cmd(&repo.dir, &["save", "-m", "edits"]);
    cmd.env("GIT_CHECKPOINT_PAUSE", "save-looked:3000")
        .env("GIT_CHECKPOINT_PAUSED_FILE", &paused)
        .env("GIT_CHECKPOINT_TRACE", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let save = cmd.spawn().unwrap();
    let waited = std::time::Instant::now();
    while !paused.exists() {
        assert!(
            waited.elapsed() < Duration::from_secs(30),
            "the save never reached its pause"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    // The look read both; one now changes again, with another size, the other goes.
    for dir in [repo.dir.as_path(), copy.as_path()] {
        common::write_file(
            &dir.join("a/one.txt"),
            b"one, edited again: longer\n",
            false,
        );
        common::remove_any(&dir.join("new.txt"));
    }
    let out = save.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("splice what changed since the look"),
        "{stderr}"
    );
    let fresh = save_afresh(&repo, &copy, "edits");
    assert!(fresh.stdout.contains("Saved checkpoint"), "{fresh}");
    assert_eq!(recorded(&repo, &repo.dir), recorded(&repo, &copy));
    repo.ok(&["restore", "@", "--no-save"]);
    assert_eq!(repo.read("a/one.txt"), b"one, edited again: longer\n");
    assert!(!repo.exists("new.txt"));
    assert_eq!(repo.json(&["status", "--json"])["clean"], true);
}

/// Random sequences of changes, each followed by a save going on from its look that
/// must record what a save looking afresh records, and leave the worktree clean (the
/// store's tree is the worktree).
#[test]
fn random_change_sequences_saved_after_the_look_match_a_fresh_look() {
    let config = ProptestConfig {
        cases: 6,
        max_shrink_iters: 8,
        source_file: Some(file!()),
        ..ProptestConfig::default()
    };
    let mut runner = proptest::test_runner::TestRunner::new(config);
    let result = runner.run(&prop::collection::vec(edit(), 1..10), |edits| {
        let repo = small_tree_saved();
        for (i, edit) in edits.iter().enumerate() {
            apply(&repo, edit);
            assert_save_matches_a_fresh_look(&repo, &format!("step {i}"));
            let status = repo.json(&["status", "--json"]);
            prop_assert_eq!(&status["clean"], true, "step {}: {}", i, status);
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}\n{runner}");
    }
}
