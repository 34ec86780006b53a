//! save: output formats, unchanged saves, --allow-empty, special files, and
//! deduplication measured on the store file.

use crate::common;
use std::fs;
use std::time::Duration;

use common::*;
use serde_json::Value;

fn is_rfc3339(s: &str) -> bool {
    // 2026-11-22T04:43:00Z, 2026-11-22T04:43:00.123+01:00, ...
    let b = s.as_bytes();
    if b.len() < 20 {
        return false;
    }
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && (b[10] == b'T' || b[10] == b't')
        && digits(11..13)
        && b[13] == b':'
        && digits(14..16)
        && b[16] == b':'
        && digits(17..19)
        && (s.ends_with('Z') || s.ends_with('z') || {
            let tail = &s[s.len() - 6..];
            (tail.starts_with('+') || tail.starts_with('-')) && tail.as_bytes()[3] == b':'
        })
}

#[test]
fn save_json_fields_and_human_output() {
    let r = Repo::new();
    // No commit yet: git_head is null.
    r.write("a.txt", b"12345");
    r.write("d/b.bin", &[0u8; 1000]);
    let v = r.save_json(&["-m", "first", "--meta", "agent=claude", "--meta", "step=3"]);
    let id = id_of(&v).expect("id");
    assert!(id.len() == 32 && is_hex(&id), "id must be 32 hex: {v}");
    let short = v["short_id"].as_str().expect("short_id");
    assert!(
        short.len() >= 7 && is_hex(short) && id.starts_with(short),
        "{v}"
    );
    assert_eq!(v["parents"], serde_json::json!([]), "{v}");
    assert_eq!(v["branch"].as_str(), Some("main"), "{v}");
    assert_eq!(v["message"].as_str(), Some("first"), "{v}");
    assert!(is_rfc3339(v["time"].as_str().unwrap_or("")), "time: {v}");
    assert!(v["git_head"].is_null(), "no commit yet: {v}");
    assert_eq!(
        v["meta"],
        serde_json::json!({"agent": "claude", "step": "3"}),
        "{v}"
    );
    assert_eq!(v["files"].as_u64(), Some(2), "{v}");
    assert_eq!(v["bytes"].as_u64(), Some(1005), "{v}");
    assert!(
        r.store_path().is_file(),
        "store at .git/checkpoint/store.redb"
    );

    // With a commit on a real branch: git_head and git_branch are recorded.
    r.git(&["add", "-A"]);
    r.git(&["commit", "-q", "-m", "c"]);
    r.git(&["checkout", "-q", "-b", "topic"]);
    let head = r.git(&["rev-parse", "HEAD"]).trim().to_string();
    r.write("a.txt", b"changed");
    let v2 = r.save_json(&["-m", "second"]);
    assert_eq!(v2["git_head"].as_str(), Some(head.as_str()), "{v2}");
    assert_eq!(v2["git_branch"].as_str(), Some("topic"), "{v2}");
    assert_eq!(
        v2["branch"].as_str(),
        Some("main"),
        "checkpoint branch: {v2}"
    );
    assert_eq!(v2["parents"], serde_json::json!([id]), "{v2}");
    assert!(v2["meta"].as_object().is_some_and(|m| m.is_empty()), "{v2}");

    // Human output names the new short id.
    r.write("a.txt", b"changed again");
    let out = r.ok(&["save", "-m", "third"]);
    let cur = r.current();
    assert!(out.stdout.contains(&cur[..7]), "{out}");

    // Global flags before the subcommand; -q silences stdout.
    r.write("a.txt", b"4");
    let out = r.ok(&["-q", "save", "-m", "quiet"]);
    assert!(
        out.stdout.trim().is_empty(),
        "-q must silence stdout\n{out}"
    );
    assert_eq!(r.log_json(false)[0]["message"].as_str(), Some("quiet"));
    r.write("a.txt", b"5");
    let out = r.ok(&["save", "--quiet", "-m", "quiet2"]);
    assert!(out.stdout.trim().is_empty(), "{out}");
    r.write("a.txt", b"6");
    let v = parse_json(
        &r.ok(&["--json", "save", "-m", "json first"]),
        "--json save",
    );
    assert_eq!(v["message"].as_str(), Some("json first"), "{v}");
    r.write("a.txt", b"7");
    let v = parse_json(
        &r.ok(&["-q", "save", "--json", "-m", "q json"]),
        "-q save --json",
    );
    assert_eq!(
        v["message"].as_str(),
        Some("q json"),
        "-q keeps the JSON: {v}"
    );

    // log: newest first, -n, human lines hold short id and message.
    let log = r.log_json(false);
    let msgs: Vec<&str> = log.iter().map(|c| c["message"].as_str().unwrap()).collect();
    assert_eq!(
        msgs,
        [
            "q json",
            "json first",
            "quiet2",
            "quiet",
            "third",
            "second",
            "first"
        ]
    );
    let n2 = r.json(&["log", "-n", "2", "--json"]);
    assert_eq!(n2.as_array().unwrap().len(), 2);
    assert_eq!(n2[0]["id"], log[0]["id"]);
    let n2 = r.json(&["--json", "log", "-n", "2"]);
    assert_eq!(n2.as_array().unwrap().len(), 2);
    let out = r.ok(&["log"]);
    let lines: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| !l.trim().is_empty())
        .collect();
    assert_eq!(lines.len(), log.len(), "one line per checkpoint\n{out}");
    for (line, c) in lines.iter().zip(&log) {
        let id = id_of(c).unwrap();
        assert!(line.contains(&id[..7]), "{line:?} lacks {id}");
        assert!(
            line.contains(c["message"].as_str().unwrap()),
            "{line:?} lacks message"
        );
    }
}

#[test]
fn unchanged_save_makes_nothing_and_allow_empty_does() {
    let r = Repo::new();
    r.write("a.txt", b"a\n");
    let a = r.save("A");
    assert_eq!(r.log_json(true).len(), 1);

    let v = r.save_json(&["-m", "again"]);
    assert!(v["id"].is_null(), "{v}");
    assert_eq!(v["unchanged"], Value::Bool(true), "{v}");
    assert_eq!(v["current"].as_str(), Some(a.as_str()), "{v}");

    let out = r.ok(&["save", "-m", "again"]);
    assert!(
        out.stdout.to_lowercase().contains("nothing changed"),
        "human unchanged message\n{out}"
    );
    assert_eq!(
        r.log_json(true).len(),
        1,
        "unchanged save made a checkpoint"
    );

    // Touching a file without changing it is still "unchanged".
    std::thread::sleep(Duration::from_millis(20));
    r.write("a.txt", b"a\n");
    let v = r.save_json(&[]);
    assert_eq!(
        v["unchanged"],
        Value::Bool(true),
        "rewritten, same bytes: {v}"
    );

    let e = r.save_forced("empty");
    assert_ne!(e, a);
    let log = r.log_json(false);
    assert_eq!(log.len(), 2);
    assert_eq!(log[0]["parents"], serde_json::json!([a]), "{}", log[0]);
    assert_eq!(log[0]["message"].as_str(), Some("empty"));
}

#[test]
fn a_fifo_does_not_hang_save() {
    let r = Repo::new();
    r.write("a.txt", b"a\n");
    let st = std::process::Command::new("mkfifo")
        .arg(r.p("pipe"))
        .status()
        .expect("run mkfifo");
    assert!(st.success(), "mkfifo failed");
    r.write("sub/b.txt", b"b\n");
    let st = std::process::Command::new("mkfifo")
        .arg(r.p("sub/pipe2"))
        .status()
        .expect("run mkfifo");
    assert!(st.success());

    let out = run_cmd(
        r.sb.bin_cmd(&r.dir, &["save", "--json", "-m", "with fifo"]),
        Duration::from_secs(20),
    );
    assert_no_panic(&out, "save with fifo");
    assert_eq!(out.code, 0, "{out}");
    let v = parse_json(&out, "save --json with fifo");
    assert_eq!(v["files"].as_u64(), Some(2), "FIFOs are not captured: {v}");
    assert!(
        !out.stderr.trim().is_empty(),
        "expected a warning about the skipped special files\n{out}"
    );
    let id = id_of(&v).unwrap();

    // Restore does not trip over (or remove) the FIFO either.
    r.write("a.txt", b"changed\n");
    let out = run_cmd(
        r.sb.bin_cmd(&r.dir, &["restore", &id, "--no-save"]),
        Duration::from_secs(20),
    );
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(r.read("a.txt"), b"a\n");
    let snap = r.snapshot();
    assert_eq!(
        snap.get(&b"pipe"[..]),
        Some(&Node::Other),
        "FIFO left alone"
    );
}

/// Allocated bytes of the store file.
fn store_alloc(r: &Repo) -> u64 {
    file_usage(&r.store_path()).1
}

const MIB: u64 = 1 << 20;

#[test]
fn dedup_small_edit_in_large_file() {
    let r = Repo::new();
    let mut data = pseudo_random(32 * MIB as usize, 42);
    r.write("big.bin", &data);
    let first = r.save("big");
    let (len1, alloc1) = file_usage(&r.store_path());
    eprintln!("store after first save: len {len1}, allocated {alloc1}");
    assert!(
        alloc1 >= 30 * MIB,
        "sanity: 32 MiB of random data must occupy the store ({alloc1} bytes allocated)"
    );

    let original = data.clone();
    let mid = data.len() / 2 + 12345;
    for b in &mut data[mid..mid + 100] {
        *b ^= 0xA5;
    }
    r.write("big.bin", &data);
    let second = r.save("edited");
    let (len2, alloc2) = file_usage(&r.store_path());
    eprintln!("store after second save: len {len2}, allocated {alloc2}");
    let growth = alloc2.saturating_sub(alloc1);
    assert!(
        growth < MIB,
        "a 100-byte edit grew the store by {growth} allocated bytes (len {len1} -> {len2})"
    );

    // Both versions come back exactly.
    r.ok(&["restore", &first]);
    assert!(r.read("big.bin") == original, "first version restored");
    r.ok(&["restore", &second]);
    assert!(r.read("big.bin") == data, "second version restored");
}

#[test]
fn dedup_identical_files_cost_one() {
    let data = pseudo_random(10 * MIB as usize, 4242);

    let one = Repo::new();
    one.write("one.bin", &data);
    one.save("one copy");
    let alloc_one = store_alloc(&one);

    let two = Repo::new();
    two.write("one.bin", &data);
    two.write("sub/two.bin", &data);
    let v = two.save_json(&["-m", "two copies"]);
    assert_eq!(v["files"].as_u64(), Some(2), "{v}");
    assert_eq!(v["bytes"].as_u64(), Some(20 * MIB), "{v}");
    let alloc_two = store_alloc(&two);
    eprintln!("store allocated: one copy {alloc_one}, two copies {alloc_two}");
    assert!(
        alloc_one >= 9 * MIB,
        "sanity: 10 MiB of random data in the store ({alloc_one})"
    );
    assert!(
        alloc_two < alloc_one + MIB,
        "two identical 10 MiB files cost {alloc_two} bytes vs {alloc_one} for one"
    );

    // Adding a third copy to an existing store costs (almost) nothing.
    two.write("three.bin", &data);
    two.save("three copies");
    let alloc_three = store_alloc(&two);
    assert!(
        alloc_three < alloc_two + MIB,
        "third identical copy grew the store from {alloc_two} to {alloc_three}"
    );

    // And the copies restore exactly.
    two.remove("sub");
    two.remove("one.bin");
    let id = two.current();
    two.ok(&["restore", &id]);
    assert!(two.read("sub/two.bin") == data && two.read("one.bin") == data);
    let _ = fs::metadata(two.p("three.bin")).expect("three.bin still there");
}

/// A first save leaves a store that occupies little more disk than its data. redb grows
/// the file in doubling steps; the part not yet written is a hole, which takes no space,
/// so the save needs no compaction (which would read and rewrite all of it).
#[test]
fn a_first_save_occupies_little_more_than_its_data() {
    use std::os::unix::fs::MetadataExt;
    let r = Repo::new();
    for i in 0..400 {
        // Varied, partly compressible content, 20-80 KiB a file.
        let mut data = common::pseudo_random(16384 + (i * 331) % 32768, i as u64);
        data.extend(std::iter::repeat_n(b'x', 4096 + (i * 97) % 16384));
        r.write(format!("d{}/f{i}.bin", i % 7), &data);
    }
    r.save("first");
    let stats = r.json(&["stats", "--json"]);
    let live = stats["live_bytes"].as_f64().unwrap();
    let file = fs::metadata(r.store_path()).unwrap().blocks() as f64 * 512.0;
    assert!(
        file <= 1.6 * live + 1_000_000.0,
        "store file occupies {file} bytes for {live} bytes of live data"
    );
}
