//! Retention draws the lines between days in the local time zone (`TZ`), not in UTC.
//!
//! The real binary runs with `TZ` set to POSIX zone strings (`UTC0`, `JST-9`, `HST10`),
//! which the C library understands without any tzdata installed, and with the test clock
//! `GIT_CHECKPOINT_NOW` fixing when each checkpoint was made. Setting `TZ` inside the
//! test process instead would race with its other threads.

use crate::common;
use std::collections::BTreeSet;

use common::{parse_json, Repo};

/// Five checkpoints over two UTC days, chosen so that UTC, UTC+9 and UTC-10 each put a
/// different pair of them on the same day as a newer one.
const CHECKPOINTS: [(&str, &str); 5] = [
    ("A", "2024-03-10T01:00:00Z"),
    ("B", "2024-03-10T10:30:00Z"),
    ("C", "2024-03-10T20:00:00Z"),
    ("D", "2024-03-11T03:00:00Z"),
    ("E", "2024-03-11T12:00:00Z"),
];

/// gc's clock: after every checkpoint, so none is in the future.
const NOW: &str = "2024-03-12T00:00:00Z";

fn run_in_zone(repo: &Repo, tz: &str, now: &str, args: &[&str]) -> common::Out {
    repo.run_env(args, &[("TZ", tz), ("GIT_CHECKPOINT_NOW", now)])
}

/// The messages of the checkpoints `gc --keep-daily 10` would remove with `TZ=tz`.
fn removed_by_keep_daily(repo: &Repo, tz: &str) -> BTreeSet<String> {
    let args = ["gc", "--keep-daily", "10", "--dry-run", "--json"];
    let out = run_in_zone(repo, tz, NOW, &args);
    assert_eq!(out.code, 0, "TZ={tz} {args:?}\n{out}");
    let plan = parse_json(&out, &format!("TZ={tz} {args:?}"));
    plan["removed"]
        .as_array()
        .unwrap_or_else(|| panic!("no removed list: {plan}"))
        .iter()
        .map(|c| c["message"].as_str().unwrap().to_string())
        .collect()
}

fn set(labels: &[&str]) -> BTreeSet<String> {
    labels.iter().map(|l| l.to_string()).collect()
}

/// `--keep-daily 10` keeps the newest checkpoint of each local day (and the oldest
/// overall, as counts are left), so what it removes names the days the zone drew:
///
/// | zone   | A          | B          | C          | D          | E          | removed |
/// |--------|------------|------------|------------|------------|------------|---------|
/// | UTC    | 10th 01:00 | 10th 10:30 | 10th 20:00 | 11th 03:00 | 11th 12:00 | B, D    |
/// | UTC+9  | 10th 10:00 | 10th 19:30 | 11th 05:00 | 11th 12:00 | 11th 21:00 | C, D    |
/// | UTC-10 |  9th 15:00 | 10th 00:30 | 10th 10:00 | 10th 17:00 | 11th 02:00 | B, C    |
///
/// Were the zone ignored, all three would remove B and D; were its offset applied the
/// wrong way round, UTC+9 and UTC-10 would swap answers.
#[test]
fn daily_retention_buckets_by_the_local_day_of_tz() {
    let repo = Repo::new();
    for (label, time) in CHECKPOINTS {
        let out = run_in_zone(
            &repo,
            "UTC0",
            time,
            &["save", "--allow-empty", "-q", "-m", label],
        );
        assert_eq!(out.code, 0, "save {label}\n{out}");
    }
    assert_eq!(repo.log_ids(true).len(), CHECKPOINTS.len());

    assert_eq!(
        removed_by_keep_daily(&repo, "UTC0"),
        set(&["B", "D"]),
        "UTC"
    );
    assert_eq!(
        removed_by_keep_daily(&repo, "JST-9"),
        set(&["C", "D"]),
        "UTC+9"
    );
    assert_eq!(
        removed_by_keep_daily(&repo, "HST10"),
        set(&["B", "C"]),
        "UTC-10"
    );

    // And a real gc in UTC+9 removes what its dry run named.
    let out = run_in_zone(&repo, "JST-9", NOW, &["gc", "--keep-daily", "10", "-q"]);
    assert_eq!(out.code, 0, "{out}");
    let left: BTreeSet<String> = repo
        .log_json(true)
        .iter()
        .map(|c| c["message"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(left, set(&["A", "B", "E"]));
}
