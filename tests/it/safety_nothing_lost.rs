//! Nothing lost, nothing leaked (issue 21): read commands never write the store; gc
//! reports exactly what it deletes and leaves no garbage behind, delta bases included;
//! a refused restore changes nothing at all (no file, no marker, no branch move), and a
//! path-limited restore leaves the branch where it is.

use crate::common;

use std::collections::BTreeMap;

use common::{parse_json, pseudo_random, Repo};
use proptest::prelude::*;

/// Lines of hex text: compresses as text does, and no two seeds alike.
fn text(len: usize, seed: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 64);
    for (i, b) in pseudo_random(len / 2, seed).iter().enumerate() {
        out.extend_from_slice(format!("{b:02x}").as_bytes());
        if i % 32 == 31 {
            out.push(b'\n');
        }
    }
    out
}

/// Saves once the files written are past the filesystem clock's racy window, so that the
/// stat cache keeps their entries and the next version of each is stored as a delta of
/// this one (docs/design.md, "Chunks").
fn save_settled(repo: &Repo, message: &str) -> String {
    std::thread::sleep(std::time::Duration::from_millis(2100));
    repo.save(message)
}

/// The store file's bytes and modification time.
fn store_state(repo: &Repo) -> (Vec<u8>, std::time::SystemTime) {
    let store = repo.store_path();
    (
        std::fs::read(&store).unwrap(),
        std::fs::metadata(&store).unwrap().modified().unwrap(),
    )
}

#[test]
fn read_commands_leave_the_store_byte_identical_the_branch_listing_too() {
    let repo = Repo::new();
    repo.write("a.txt", b"one\n");
    repo.save("first");
    repo.ok(&["fork", "@", "-b", "side"]);
    repo.write("a.txt", b"two\n");
    repo.write("notes.txt", b"attached\n");
    repo.ok(&["save", "-m", "second", "--attach", "notes.txt"]);
    repo.write("a.txt", b"unsaved\n");
    let before = store_state(&repo);
    let reads: &[&[&str]] = &[
        &["branch"],
        &["branch", "--list"],
        &["--json", "branch"],
        &["sessions"],
        &["--json", "sessions"],
        &["log", "--all"],
        &["show", "@"],
        &["status"],
        &["diff"],
        &["stats"],
        &["verify"],
        &["attachment", "@", "notes.txt"],
        &["restore", "--dry-run", "@~1"],
        &["restore", "--no-save", "--dry-run", "@"],
    ];
    for args in reads {
        repo.ok(args);
        let after = store_state(&repo);
        assert!(after.0 == before.0, "{args:?} changed the store's bytes");
        assert_eq!(after.1, before.1, "{args:?} changed the store's mtime");
    }
}

/// `gc --json` with `args`; returns (chunks, trees) it deleted.
fn gc(repo: &Repo, args: &[&str]) -> (u64, u64) {
    let mut all = vec!["--json", "gc"];
    all.extend_from_slice(args);
    let v = repo.json(&all);
    (
        v["chunks_removed"].as_u64().expect("chunks_removed"),
        v["trees_removed"].as_u64().unwrap_or(0),
    )
}

/// `verify --json`: it passed, and the unreachable chunks and trees it counted.
fn garbage(repo: &Repo) -> (u64, u64) {
    let v = repo.json(&["--json", "verify"]);
    assert_eq!(v["ok"], true, "verify: {v}");
    (
        v["unreachable_chunks"].as_u64().unwrap(),
        v["unreachable_trees"].as_u64().unwrap(),
    )
}

/// A 12 KiB file (one chunk) saved, then appended a line to and saved `edits` times, each
/// save settled so that each version is a delta of the one before, four deep at most.
/// Returns each checkpoint with the file's content.
fn delta_history(repo: &Repo, edits: usize) -> Vec<(String, Vec<u8>)> {
    let mut content = text(12 << 10, 7);
    repo.write("f.txt", &content);
    let mut saved = vec![(save_settled(repo, "f"), content.clone())];
    for i in 0..edits {
        content.extend_from_slice(format!("edit {i}\n").as_bytes());
        repo.write("f.txt", &content);
        saved.push((save_settled(repo, &format!("edit {i}")), content.clone()));
    }
    saved
}

#[test]
fn gc_keeps_and_does_not_report_the_bases_a_kept_delta_needs() {
    let repo = Repo::new();
    let saved = delta_history(&repo, 4);
    // The newest version is a delta four deep: its chain needs every older version.
    let (chunks, _) = gc(&repo, &["--keep", "1"]);
    assert_eq!(
        chunks, 0,
        "gc reported deleting the delta bases the kept checkpoint needs"
    );
    assert_eq!(
        gc(&repo, &[]),
        (0, 0),
        "a second gc still deleted something"
    );
    assert_eq!(
        garbage(&repo),
        (0, 0),
        "verify counts needed bases as garbage"
    );
    let (last, content) = saved.last().unwrap();
    repo.remove("f.txt");
    repo.ok(&["restore", "--no-save", last]);
    assert!(
        repo.read("f.txt") == *content,
        "the kept checkpoint restores"
    );
    repo.ok(&["verify", "--read-data"]);
}

#[test]
fn the_automatic_gc_deletes_the_bases_once_no_kept_delta_needs_them() {
    let repo = Repo::new();
    repo.git(&["config", "checkpoint.gc.keep", "1"]);
    // Versions 1 to 4 are deltas; version 5, rewritten whole with bytes no delta
    // shrinks, is stored whole: after its save, nothing needs versions 0 to 4, though
    // each went while a kept delta still needed it.
    let mut saved = delta_history(&repo, 4);
    let rewritten = pseudo_random(12 << 10, 99);
    repo.write("f.txt", &rewritten);
    saved.push((save_settled(&repo, "rewritten"), rewritten));
    assert_eq!(repo.log_ids(true).len(), 1);
    assert_eq!(garbage(&repo), (0, 0), "the automatic gc left bases behind");
    assert_eq!(gc(&repo, &[]), (0, 0), "the automatic gc left bases behind");
    let (last, content) = saved.last().unwrap();
    repo.remove("f.txt");
    repo.ok(&["restore", "--no-save", last]);
    assert!(repo.read("f.txt") == *content);
}

/// One step of a history for the gc property.
#[derive(Clone, Debug)]
enum GcStep {
    /// Append to file `n` (of 3) and save, settled (deltas) or not.
    Save { file: usize, settled: bool },
    /// Drop the checkpoint this far from the oldest (never the current one).
    Drop(usize),
    /// `gc --keep N`.
    Gc(usize),
}

fn gc_step() -> impl Strategy<Value = GcStep> {
    prop_oneof![
        4 => (0..3usize, prop::bool::weighted(0.6))
            .prop_map(|(file, settled)| GcStep::Save { file, settled }),
        1 => (0..4usize).prop_map(GcStep::Drop),
        1 => (1..4usize).prop_map(GcStep::Gc),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 3,
        max_shrink_iters: 4,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// After any sequence of saves (with deltas), drops and gcs, with or without an
    /// automatic gc: a gc, then a second gc deletes nothing and verify counts no garbage,
    /// and every checkpoint left restores what was saved.
    #[test]
    fn after_saves_drops_and_gcs_a_second_gc_deletes_nothing(
        steps in prop::collection::vec(gc_step(), 4..8),
        auto_keep in prop::option::of(1..3usize),
    ) {
        let repo = Repo::new();
        if let Some(keep) = auto_keep {
            repo.git(&["config", "checkpoint.gc.keep", &keep.to_string()]);
        }
        let mut files: Vec<Vec<u8>> = (0..3).map(|i| text(12 << 10, 100 + i)).collect();
        for (i, content) in files.iter().enumerate() {
            repo.write(format!("f{i}.txt"), content);
        }
        let mut saved: BTreeMap<String, Vec<Vec<u8>>> = BTreeMap::new();
        saved.insert(save_settled(&repo, "start"), files.clone());
        for (n, step) in steps.iter().enumerate() {
            match step {
                GcStep::Save { file, settled } => {
                    files[*file].extend_from_slice(format!("step {n}\n").as_bytes());
                    repo.write(format!("f{file}.txt"), &files[*file]);
                    let id = match settled {
                        true => save_settled(&repo, &format!("step {n}")),
                        false => repo.save(&format!("step {n}")),
                    };
                    saved.insert(id, files.clone());
                }
                GcStep::Drop(k) => {
                    let mut ids = repo.log_ids(true);
                    ids.reverse();
                    let current = repo.current();
                    if let Some(id) = ids.iter().filter(|id| **id != current).nth(*k) {
                        repo.ok(&["drop", id.as_str()]);
                    }
                }
                GcStep::Gc(keep) => {
                    gc(&repo, &["--keep", &keep.to_string()]);
                }
            }
        }
        gc(&repo, &[]);
        prop_assert_eq!(gc(&repo, &[]), (0, 0), "a second gc deleted something");
        prop_assert_eq!(garbage(&repo), (0, 0), "verify found garbage after a gc");
        for id in repo.log_ids(true) {
            repo.ok(&["restore", "--no-save", id.as_str()]);
            let want = &saved[&id];
            for (i, content) in want.iter().enumerate() {
                prop_assert!(repo.read(format!("f{i}.txt")) == *content, "{} f{}", id, i);
            }
        }
    }
}

#[test]
fn a_path_limited_restore_leaves_the_branch_where_it_is() {
    let repo = Repo::new();
    repo.write("a.txt", b"one\n");
    repo.write("b.txt", b"b\n");
    let tip = repo.save("first");
    repo.write("a.txt", b"one\nx\n");
    repo.write("b.txt", b"b, unsaved\n");
    repo.ok(&["restore", "@", "--", "a.txt"]);
    assert_eq!(
        repo.id("@"),
        tip,
        "the path-limited restore moved the branch"
    );
    assert_eq!(repo.read("a.txt"), b"one\n");
    assert_eq!(repo.read("b.txt"), b"b, unsaved\n");
    let status = repo.json(&["--json", "status"]);
    let changed: Vec<&str> = status["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["path"].as_str().unwrap())
        .collect();
    assert_eq!(changed, ["b.txt"], "status after the restore: {status}");
    // Run again, it changes nothing: no file, no checkpoint, no branch.
    let checkpoints = repo.log_ids(true);
    let files = repo.files();
    repo.ok(&["restore", "@", "--", "a.txt"]);
    assert_eq!(
        repo.files(),
        files,
        "the same restore run again changed files"
    );
    assert_eq!(repo.log_ids(true), checkpoints);
    assert_eq!(repo.id("@"), tip);
}

/// The worktree's files (outside `.git`), as `Repo::files` shows them, with whether a
/// restore is recorded as interrupted.
fn everything(repo: &Repo) -> (Vec<String>, bool) {
    let status = repo.ok(&["--json", "status"]);
    let interrupted = !parse_json(&status, "status")["interrupted_restore"].is_null();
    (repo.files(), interrupted)
}

/// Runs `restore <args>` with and without `--dry-run`: both must be refused, and leave
/// every file, the store's checkpoints and HEAD's branch as they were, and no restore to
/// finish.
#[track_caller]
fn refused_alike(repo: &Repo, args: &[&str], what: &str) {
    let before = (everything(repo), repo.log_ids(true), repo.id("@"));
    let mut dry = vec!["restore", "--dry-run"];
    dry.extend_from_slice(args);
    let dry = repo.run(&dry);
    let mut real = vec!["restore"];
    real.extend_from_slice(args);
    let out = repo.run(&real);
    assert_eq!(
        out.code,
        common::EXIT_REFUSED,
        "{what}: the restore was not refused\n{out}"
    );
    assert_eq!(
        (dry.code, dry.stderr.as_str()),
        (common::EXIT_REFUSED, out.stderr.as_str()),
        "{what}: the dry run did not refuse as the restore did\n{dry}"
    );
    let after = (everything(repo), repo.log_ids(true), repo.id("@"));
    assert_eq!(
        after, before,
        "{what}: the refused restore changed something"
    );
}

#[test]
fn a_file_or_symlink_where_a_directory_belongs_refuses_before_any_change() {
    // An ignored file where the checkpoint has a directory (the steps).
    let repo = Repo::new();
    repo.write("d1/f", b"s\n");
    repo.save("d1 is a directory");
    repo.remove("d1");
    repo.write(".gitignore", b"d1\n");
    repo.write("d1", b"ignored\n");
    repo.write("notes.txt", b"precious\n");
    refused_alike(&repo, &["--no-save", "@"], "an ignored file");
    refused_alike(&repo, &["@"], "an ignored file, saving first");
    assert_eq!(repo.read("notes.txt"), b"precious\n");

    // An ignored symlink where the checkpoint has a directory.
    repo.remove("d1");
    repo.symlink("d1", "elsewhere");
    refused_alike(&repo, &["--no-save", "@"], "an ignored symlink");

    // A file too large to be saved where the checkpoint has a directory.
    let repo = Repo::new();
    repo.write("d1/f", b"s\n");
    repo.save("d1 is a directory");
    repo.git(&["config", "checkpoint.maxFileSize", "1k"]);
    repo.remove("d1");
    repo.write("d1", &[b'x'; 4096]);
    repo.write("notes.txt", b"precious\n");
    refused_alike(&repo, &["--no-save", "@"], "a skipped file");
    refused_alike(&repo, &["@"], "a skipped file, saving first");
}

#[test]
fn a_path_limited_restore_below_a_symlink_refuses_first_and_its_advice_names_the_paths() {
    let repo = Repo::new();
    repo.write("x y/old.txt", b"old\n");
    repo.write("d1/sub/f", b"f\n");
    // Two files to write, so that the fault point half-way through the writes fires.
    repo.write("d1/sub/g", b"g\n");
    repo.write("top.txt", b"top\n");
    repo.save("d1 is a directory");
    repo.remove("d1");
    repo.symlink("d1", "x y");
    repo.write("x y/new.txt", b"new\n");
    refused_alike(
        &repo,
        &["--no-save", "@", "--", "x y", "d1/sub"],
        "below a symlink",
    );
    assert_eq!(repo.read("x y/new.txt"), b"new\n");

    // An interrupted path-limited restore is finished by the same paths, not the whole
    // worktree.
    repo.remove("d1");
    repo.write("top.txt", b"top, unsaved\n");
    let out = repo.run_env(
        &["restore", "--no-save", "@", "--", "x y", "d1/sub"],
        &[("GIT_CHECKPOINT_FAULT", "restore-mid-write")],
    );
    common::assert_aborted(&out, "restore");
    let status = repo.ok(&["status"]);
    let advice = "git checkpoint restore ";
    let at = status
        .stderr
        .find(advice)
        .unwrap_or_else(|| panic!("no advice: {status}"));
    let line = status.stderr[at + advice.len()..].lines().next().unwrap();
    let (short, rest) = line.split_once(' ').unwrap_or((line, ""));
    assert_eq!(
        rest, "-- 'x y' d1/sub",
        "the advice does not name the paths: {status}"
    );
    assert!(repo.id("@").starts_with(short), "{status}");
    repo.ok(&["restore", "--no-save", short, "--", "x y", "d1/sub"]);
    assert_eq!(repo.read("top.txt"), b"top, unsaved\n");
    assert!(!repo.exists("x y/new.txt"));
    assert_eq!(repo.read("d1/sub/f"), b"f\n");
    assert!(!everything(&repo).1);
}

#[test]
fn a_refused_restore_leaves_the_branch_and_a_retry_restores_the_same_checkpoint() {
    let repo = Repo::new();
    repo.write("foo.log", b"captured\n");
    repo.write("a.txt", b"a1\n");
    repo.save("one");
    repo.write(".gitignore", b"*.log\n");
    repo.write("foo.log", b"precious ignored work\n");
    repo.write("a.txt", b"a2\n");
    let tip = repo.save("two");
    repo.write("a.txt", b"a3, unsaved\n");
    refused_alike(&repo, &["@~1"], "an ignored file in the way");
    assert_eq!(repo.id("@"), tip);
    std::fs::rename(repo.p("foo.log"), repo.p("foo.log.bak")).unwrap();
    repo.ok(&["restore", "@~1"]);
    assert_eq!(
        repo.read("a.txt"),
        b"a1\n",
        "the retry restored another checkpoint"
    );
    assert_eq!(repo.read("foo.log"), b"captured\n");
}

#[test]
fn a_file_in_the_way_that_holds_the_same_bytes_does_not_stop_a_restore() {
    let repo = Repo::new();
    repo.write("foo.log", b"same\n");
    repo.symlink("link", "target");
    repo.write("a.txt", b"a1\n");
    let first = repo.save("one");
    // Undone by a restore: the .gitignore edit that made them ignored.
    repo.write(".gitignore", b"*.log\nlink\n");
    repo.write("a.txt", b"a2\n");
    repo.save("two");
    repo.ok(&["restore", "--dry-run", &first]);
    repo.ok(&["restore", &first]);
    assert!(!repo.exists(".gitignore"));
    assert_eq!(repo.read("foo.log"), b"same\n");
    assert_eq!(repo.read("a.txt"), b"a1\n");
    assert_eq!(repo.id("@"), first);
    // Different bytes still stop it.
    repo.write(".gitignore", b"*.log\n");
    repo.save("three");
    repo.write("foo.log", b"different\n");
    refused_alike(&repo, &[&first], "different bytes");
}

#[test]
fn a_dry_run_without_saving_does_not_say_it_would_save() {
    let repo = Repo::new();
    repo.write("a.txt", b"one\n");
    repo.save("one");
    repo.write("a.txt", b"unsaved\n");
    let out = repo.ok(&["restore", "--no-save", "--dry-run", "@"]);
    assert!(!out.stdout.contains("Would first save"), "{out}");
    assert!(out.stdout.contains("write a.txt"), "{out}");
    let v = repo.json(&["--json", "restore", "--no-save", "--dry-run", "@"]);
    assert_eq!(v["would_save"], false, "{v}");
    let out = repo.ok(&["restore", "--dry-run", "@"]);
    assert!(out.stdout.contains("Would first save"), "{out}");
}

/// Worktree files for the path-restore property: a few names, some in a directory.
const NAMES: [&str; 5] = ["a", "b", "d/c", "d/e", "f/g/h"];

/// The worktree's files as the model keeps them: name to content.
type Files = BTreeMap<String, String>;

fn files_strategy() -> impl Strategy<Value = Files> {
    prop::collection::btree_map(
        prop::sample::select(NAMES.to_vec()).prop_map(str::to_string),
        "[a-z]{1,6}",
        1..5,
    )
}

fn set_files(repo: &Repo, files: &Files) {
    for name in NAMES {
        repo.remove(name);
    }
    common::prune_empty_dirs(&repo.dir);
    for (name, content) in files {
        repo.write(name, content.as_bytes());
    }
}

fn worktree_files(repo: &Repo) -> Files {
    repo.files()
        .into_iter()
        .filter_map(|line| {
            let (name, content) = line.split_once('=')?;
            Some((name.to_string(), content.to_string()))
        })
        .collect()
}

/// Whether worktree path `name` is `path` or below it.
fn under(name: &str, path: &str) -> bool {
    name == path || name.starts_with(&format!("{path}/"))
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 12,
        max_shrink_iters: 16,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// After a path-limited restore (saving first or not), the branch tip is unchanged,
    /// the given paths hold what the checkpoint holds and everything else is as it was;
    /// restoring `@` leaves `status` clean for those paths; run again, it changes nothing.
    #[test]
    fn a_path_limited_restore_restores_those_paths_and_moves_no_branch(
        history in prop::collection::vec(files_strategy(), 1..3),
        unsaved in files_strategy(),
        paths in prop::collection::btree_set(
            prop::sample::select(vec!["a", "b", "d", "d/c", "f/g", "f"]),
            1..3,
        ),
        back in 0..2usize,
        no_save in any::<bool>(),
    ) {
        let repo = Repo::new();
        let mut saved = Vec::new();
        for (i, files) in history.iter().enumerate() {
            set_files(&repo, files);
            repo.save_forced(&format!("state {i}"));
            saved.push(files.clone());
        }
        let back = back.min(saved.len() - 1);
        let target = &saved[saved.len() - 1 - back];
        set_files(&repo, &unsaved);
        let tip = repo.id("@");
        let rev = format!("@~{back}");
        let mut args = vec!["restore", rev.as_str()];
        if no_save {
            args.push("--no-save");
        }
        args.push("--");
        args.extend(paths.iter().copied());
        let selected = |name: &str| paths.iter().any(|p| under(name, p));
        // A path that names no file of the target nor of the worktree fails, as git's
        // pathspec does, and changes nothing.
        let names_nothing = |worktree: &Files| {
            paths.iter().any(|p| !target.keys().chain(worktree.keys()).any(|name| under(name, p)))
        };
        if names_nothing(&unsaved) {
            let checkpoints = repo.log_ids(true);
            let out = repo.run(&args);
            prop_assert_eq!(out.code, 1, "{}", out);
            prop_assert!(out.stderr.contains("did not match any file"), "{}", out);
            prop_assert_eq!(worktree_files(&repo), unsaved.clone());
            prop_assert_eq!(repo.log_ids(true), checkpoints);
            return Ok(());
        }
        repo.ok(&args);
        prop_assert_eq!(repo.id("@"), tip.clone(), "the branch moved");
        let mut want: Files = unsaved
            .iter()
            .filter(|(name, _)| !selected(name))
            .map(|(n, c)| (n.clone(), c.clone()))
            .collect();
        want.extend(
            target
                .iter()
                .filter(|(name, _)| selected(name))
                .map(|(n, c)| (n.clone(), c.clone())),
        );
        prop_assert_eq!(worktree_files(&repo), want.clone());
        if back == 0 {
            let status = repo.json(&["--json", "status"]);
            for change in status["changes"].as_array().unwrap() {
                let path = change["path"].as_str().unwrap();
                prop_assert!(!selected(path), "status shows {} after its restore", path);
            }
        }
        let checkpoints = repo.log_ids(true);
        // Run again, it changes nothing (a path the first run deleted names nothing now:
        // refused, as git refuses it).
        let out = repo.run(&args);
        prop_assert_eq!(out.code, i32::from(names_nothing(&want)), "{}", out);
        prop_assert_eq!(worktree_files(&repo), want);
        prop_assert_eq!(repo.id("@"), tip);
        if back == 0 {
            prop_assert_eq!(repo.log_ids(true), checkpoints, "the second run saved again");
        }
    }
}
