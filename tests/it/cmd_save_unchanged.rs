//! A save that finds nothing changed writes nothing: the store file keeps its bytes and
//! its mtime, and no sync reaches the disk. It looks read-only first and takes the write
//! path only when something changed, without losing or repeating anything another save
//! did in between; files it could not vouch for by the stat cache are read again next
//! time rather than settled, up to a bound past which a save records them.

use crate::common;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, SystemTime};

use common::{Out, Repo};
use serde_json::Value;

/// The system calls that make data durable; a save that changes nothing makes none.
const SYNC_CALLS: &[&str] = &["fsync", "fdatasync", "sync_file_range", "syncfs", "msync"];

/// Longer than the stat cache's racy margin (two seconds): files written before this
/// wait count as settled afterwards.
const SETTLE: Duration = Duration::from_millis(2300);

/// The sync calls in a trace: lines "<pid> <call>(…" or "<pid> <... <call> resumed>…".
fn syncs(trace: &str) -> Vec<&str> {
    trace
        .lines()
        .filter(|line| {
            let call = line
                .split_once(' ')
                .map_or("", |(_, rest)| rest.trim_start());
            let call = call.strip_prefix("<... ").unwrap_or(call);
            SYNC_CALLS.iter().any(|name| {
                call.strip_prefix(name)
                    .is_some_and(|rest| rest.starts_with('(') || rest.starts_with(" resumed"))
            })
        })
        .collect()
}

/// Whether the traced run opened worktree file `rel`.
fn opened(trace: &str, rel: &str) -> bool {
    let needle = format!("/{rel}\"");
    trace
        .lines()
        .any(|line| line.contains("open") && line.contains(&needle))
}

fn store_path(r: &Repo) -> PathBuf {
    r.p(".git/checkpoint/store.redb")
}

/// The store file's bytes and mtime.
fn store_state(r: &Repo) -> (Vec<u8>, SystemTime) {
    let path = store_path(r);
    let bytes = std::fs::read(&path).unwrap();
    let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
    (bytes, mtime)
}

#[track_caller]
fn assert_store_untouched(r: &Repo, before: &(Vec<u8>, SystemTime), what: &str) {
    let after = store_state(r);
    assert!(
        after.0 == before.0,
        "{what}: the store file's bytes changed"
    );
    assert_eq!(after.1, before.1, "{what}: the store file's mtime changed");
}

#[track_caller]
fn assert_unchanged(out: &Out, what: &str) {
    assert_eq!(out.code, 0, "{what}\n{out}");
    assert!(
        out.stdout.contains("Nothing changed since checkpoint"),
        "{what}: expected no change\n{out}"
    );
}

#[test]
fn a_save_that_finds_nothing_changed_leaves_the_store_file_as_it_was_and_syncs_nothing() {
    let r = Repo::new();
    r.write("a.txt", b"a\n");
    r.write("src/b.rs", b"fn b() {}\n");
    r.write("src/deep/c.rs", b"fn c() {}\n");
    r.symlink("link", "a.txt");
    r.save("base");
    // Settled files, vouched for by the stat cache, and fresh ones it cannot vouch for.
    std::thread::sleep(SETTLE);
    r.ok(&["save", "--allow-empty", "-m", "settles the cache"]);
    r.write("fresh.txt", b"fresh\n");
    r.save("fresh");

    let before = store_state(&r);
    // A later write would give the file a later mtime.
    std::thread::sleep(Duration::from_millis(50));
    let (out, trace) = r.traced(SYNC_CALLS, &["save"]);
    assert_unchanged(&out, "no-change save");
    assert_eq!(
        syncs(&trace),
        Vec::<&str>::new(),
        "a save that changed nothing synced\n{trace}"
    );
    assert_store_untouched(&r, &before, "no-change save");

    // The same tracing sees the syncs of a save that records something: the check above
    // is not blind.
    r.write("a.txt", b"changed\n");
    let (out, trace) = r.traced(SYNC_CALLS, &["save", "-m", "change"]);
    assert_eq!(out.code, 0, "{out}");
    assert!(out.stdout.contains("Saved checkpoint"), "{out}");
    assert!(
        !syncs(&trace).is_empty(),
        "a save that recorded a change made no sync\n{trace}"
    );
    assert_ne!(store_state(&r).0, before.0, "the change was not recorded");
}

#[test]
fn a_change_found_by_the_look_is_recorded_from_the_same_walk() {
    let r = Repo::new();
    for i in 0..10 {
        r.write(format!("f{i}.txt"), format!("{i}\n").as_bytes());
    }
    let base = r.save("base");
    // One small edit: the look reads it, sees a change, and hands its walk on.
    r.write("f3.txt", b"three\n");
    let v = r.save_json(&["-m", "one edit"]);
    let one = v["id"].as_str().expect("a checkpoint").to_string();
    assert_eq!(r.parents(&one), vec![base.clone()]);
    assert_eq!(v["files"], 10, "{v}");
    assert_eq!(r.json(&["status", "--json"])["clean"], true);

    // More changed files than the look reads itself: the write path reads them.
    for i in 0..100 {
        r.write(format!("many/m{i}.txt"), format!("m{i}\n").as_bytes());
    }
    r.remove("f0.txt");
    let v = r.save_json(&["-m", "many"]);
    let many = v["id"].as_str().expect("a checkpoint").to_string();
    assert_eq!(r.parents(&many), vec![one]);
    assert_eq!(v["files"], 109, "{v}");
    assert_eq!(r.json(&["status", "--json"])["clean"], true);
    assert_unchanged(&r.ok(&["save"]), "after the big change");
}

#[test]
fn files_left_out_as_too_large_stay_left_out_when_the_look_hands_its_walk_on() {
    let r = Repo::new();
    r.git(&["config", "checkpoint.maxFileSize", "1k"]);
    r.write("big.bin", &[7u8; 4096]);
    r.write("small.txt", b"small\n");
    r.save("base");
    for i in 0..100 {
        r.write(format!("many/m{i}.txt"), format!("m{i}\n").as_bytes());
    }
    let out = r.ok(&["save", "-m", "many"]);
    assert!(out.stdout.contains("Saved checkpoint"), "{out}");
    assert!(
        out.stderr.contains("skipped big.bin"),
        "the too-large file was not reported\n{out}"
    );
    let show = r.json(&["show", "--json", "@"]);
    let skipped = show["checkpoint"]["skipped"]
        .as_array()
        .or_else(|| show["skipped"].as_array())
        .unwrap_or_else(|| panic!("no skipped list: {show}"));
    assert_eq!(skipped.len(), 1, "{show}");
    let status = r.json(&["status", "--json"]);
    assert_eq!(status["clean"], true, "{status}");
}

#[test]
fn a_file_changed_in_the_racy_window_without_changing_size_or_mtime_is_still_seen() {
    let r = Repo::new();
    r.write("a.txt", b"one\n");
    r.save("base");
    let mtime = std::fs::metadata(r.p("a.txt")).unwrap().modified().unwrap();
    // Same size, same mtime: only the content (and the ctime) differ.
    r.write("a.txt", b"two\n");
    std::fs::File::options()
        .write(true)
        .open(r.p("a.txt"))
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    let out = r.ok(&["save", "-m", "racy edit"]);
    assert!(
        out.stdout.contains("Saved checkpoint"),
        "a change in the racy window was missed\n{out}"
    );
    assert_eq!(r.json(&["status", "--json"])["clean"], true);
}

#[test]
fn a_no_change_save_reads_unsettled_files_again_and_past_a_bound_settles_them() {
    let r = Repo::new();
    r.write("old.txt", b"old\n");
    r.save("base");
    std::thread::sleep(SETTLE);
    r.ok(&["save", "--allow-empty", "-m", "settles old.txt"]);
    // Saved within the racy window: the stat cache may not vouch for it.
    r.write("fresh.txt", b"fresh\n");
    r.save("fresh");
    std::thread::sleep(SETTLE);

    // Settled by now, but a save that changes nothing does not write it down: it reads
    // the file again each time, and the store stays as it was.
    let before = store_state(&r);
    for round in 1..=2 {
        let (out, trace) = r.traced(&["open", "openat", "openat2"], &["save"]);
        assert_unchanged(&out, &format!("round {round}"));
        assert!(
            opened(&trace, "fresh.txt"),
            "round {round}: the unsettled file was not read again\n{trace}"
        );
        assert!(
            !opened(&trace, "old.txt"),
            "round {round}: a file the stat cache vouches for was read\n{trace}"
        );
        assert_store_untouched(&r, &before, &format!("round {round}"));
    }

    // More such files than a look reads: the save takes the write path and records
    // them settled, after which they are not read again.
    for i in 0..100 {
        r.write(format!("many/m{i}.txt"), format!("m{i}\n").as_bytes());
    }
    r.save("many");
    std::thread::sleep(SETTLE);
    let out = r.ok(&["save"]);
    assert_unchanged(&out, "the save that settles");
    let before = store_state(&r);
    let (out, trace) = r.traced(&["open", "openat", "openat2"], &["save"]);
    assert_unchanged(&out, "after settling");
    assert!(
        !opened(&trace, "many/m7.txt") && !opened(&trace, "fresh.txt"),
        "files settled by the last save were read again\n{trace}"
    );
    assert_store_untouched(&r, &before, "after settling");
}

/// Runs a save that finds a.txt changed and pauses after its look, the store let go;
/// meanwhile another save records a.txt and b.txt, then `meanwhile` runs. Returns the
/// checkpoint before, the other save's, and the paused save's JSON.
fn overtaken(r: &Repo, meanwhile: impl FnOnce()) -> (String, String, Value) {
    r.write("a.txt", b"a1\n");
    r.write("b.txt", b"b1\n");
    r.write("c.txt", b"c1\n");
    r.save("base");
    // Settled and in the stat cache: a save that trusted its old walk would take the
    // cache's word for a file changed since.
    std::thread::sleep(SETTLE);
    r.ok(&["save", "--allow-empty", "-m", "settles the cache"]);
    let base = r.current();

    r.write("a.txt", b"a2\n");
    let paused = r.scratch("pause").join("paused");
    let mut first = r.sb.bin_cmd(&r.dir, &["save", "--json", "-m", "first"]);
    first
        .env("GIT_CHECKPOINT_PAUSE", "save-looked:3000")
        .env("GIT_CHECKPOINT_PAUSED_FILE", &paused)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let first = first.spawn().unwrap();
    let waited = std::time::Instant::now();
    while !paused.exists() {
        assert!(
            waited.elapsed() < Duration::from_secs(30),
            "the first save never reached its pause"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    r.write("b.txt", b"b2\n");
    let second = r.save_json(&["-m", "second"]);
    let second = second["id"].as_str().expect("a checkpoint").to_string();
    meanwhile();

    let out = first.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    (base, second, v)
}

#[test]
fn a_save_overtaken_between_its_look_and_its_write_does_not_repeat_the_other_save() {
    let r = Repo::new();
    let (_, second, v) = overtaken(&r, || {});
    // The other save recorded everything this one found: nothing is left to record.
    assert_eq!(v["unchanged"], true, "{v}");
    assert_eq!(v["current"].as_str(), Some(second.as_str()), "{v}");
    assert_eq!(r.log_json(false).len(), 3);
    assert_eq!(r.json(&["status", "--json"])["clean"], true);
}

#[test]
fn a_save_overtaken_between_its_look_and_its_write_loses_nothing_changed_since() {
    let r = Repo::new();
    let (before, second, v) = overtaken(&r, || r.write("c.txt", b"c2\n"));
    assert_eq!(r.parents(&second), vec![before]);
    // Only c.txt is new, on top of the other save.
    let first = v["id"]
        .as_str()
        .unwrap_or_else(|| panic!("the first save recorded nothing: {v}"))
        .to_string();
    assert_eq!(r.parents(&first), vec![second.clone()]);
    assert_eq!(r.log_json(false).len(), 4);
    let changed = r.json(&["diff", "--json", &second, &first]).to_string();
    assert!(
        changed.contains("c.txt") && !changed.contains("a.txt") && !changed.contains("b.txt"),
        "{changed}"
    );
    assert_eq!(r.json(&["status", "--json"])["clean"], true);
}
