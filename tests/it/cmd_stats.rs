//! `stats`: what the store holds and what it costs. Every count is what the store's
//! tables, `log` and `branch` say; live and unreachable data agree with `verify` and
//! `gc`; the bytes each checkpoint alone holds are what dropping it would free.

use crate::common;

use common::raw_store;
use common::{parse_json, pseudo_random, table_sizes, Repo};
use serde_json::Value;

/// stats: live data, dedup and compression ratios, and the bytes each checkpoint alone
/// holds, consistent with what was saved.
#[test]
fn stats_adds_up() {
    let repo = Repo::new();
    let shared = pseudo_random(50_000, 1);
    let text = "a line of text that compresses well\n".repeat(3000);
    repo.write("shared.bin", &shared);
    repo.write("text.txt", text.as_bytes());
    repo.write("u.bin", &pseudo_random(100_000, 2));
    let c1 = repo.save("one");
    repo.write("u.bin", &pseudo_random(80_000, 3));
    let c2 = repo.save("two");
    let out = repo.ok(&["stats", "--json"]);
    let s = parse_json(&out, "stats");
    assert_eq!(s["checkpoints"], 2);
    assert_eq!(s["branches"], 1);
    assert_eq!(s["unreachable_bytes"], 0);
    let logical = s["logical_bytes"].as_u64().unwrap();
    let unique = s["unique_bytes"].as_u64().unwrap();
    let text_len = text.len() as u64;
    assert_eq!(logical, 2 * (50_000 + text_len) + 100_000 + 80_000);
    assert_eq!(unique, 50_000 + text_len + 100_000 + 80_000);
    let dedup = s["dedup_ratio"].as_f64().unwrap();
    assert!((dedup - logical as f64 / unique as f64).abs() < 1e-9);
    assert!(s["compression_ratio"].as_f64().unwrap() > 1.2, "{s}");
    let file = s["file_size"].as_u64().unwrap();
    use std::os::unix::fs::MetadataExt;
    assert_eq!(
        file,
        std::fs::metadata(repo.store_path()).unwrap().blocks() * 512
    );
    assert!(s["live_bytes"].as_u64().unwrap() <= file);
    let per: Vec<&Value> = s["per_checkpoint"].as_array().unwrap().iter().collect();
    assert_eq!(per[0]["id"], c2.as_str());
    assert_eq!(per[1]["id"], c1.as_str());
    let only = |i: usize| per[i]["exclusive_bytes"].as_u64().unwrap();
    // Each holds its own u.bin (stored raw: random bytes) and its root tree and record,
    // nothing of the shared files.
    assert!((80_000..80_000 + 2_000).contains(&only(0)), "{}", only(0));
    assert!((100_000..100_000 + 2_000).contains(&only(1)), "{}", only(1));
    let human = repo.ok(&["stats"]).stdout;
    assert!(human.contains("Deduplication:"), "{human}");
    assert!(
        human.contains(&c1[..7]) && human.contains(&c2[..7]),
        "{human}"
    );
}

/// The line of `text` that starts with `prefix`, or a failure showing `text`.
#[track_caller]
fn line_of<'t>(text: &'t str, prefix: &str) -> &'t str {
    text.lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no line starting {prefix:?} in:\n{text}"))
}

/// Two branches, a pin, content shared between checkpoints: every figure in `--json` is
/// what the store holds, every checkpoint is listed newest first as `log` describes it,
/// and the text says the same numbers.
#[test]
fn stats_counts_are_what_the_store_holds() {
    let repo = Repo::new();
    repo.write("shared.bin", &pseudo_random(40_000, 1));
    repo.write("a.txt", b"one\n");
    let c1 = repo.save("one");
    repo.write("a.txt", b"two\n");
    let c2 = repo.save("two");
    repo.ok(&["fork", &c1, "-b", "side"]);
    repo.write("b.txt", b"on side\n");
    let c3 = repo.save("three\nwith a second line");
    repo.ok(&["pin", &c2]);

    let s = repo.json_of(&["stats"]);
    let [chunks, trees, checkpoints] = table_sizes(&repo);
    assert_eq!(s["path"], repo.store_path().to_str().unwrap(), "{s:#}");
    assert_eq!(s["checkpoints"], checkpoints, "{s:#}");
    assert_eq!(s["checkpoints"], 3, "{s:#}");
    assert_eq!(s["branches"], 2, "{s:#}");
    assert_eq!(s["pinned"], 1, "{s:#}");
    assert_eq!(s["chunks"], chunks, "{s:#}");
    assert_eq!(s["trees"], trees, "{s:#}");
    assert_eq!(s["live_chunks"], chunks, "{s:#}");
    assert_eq!(s["unreachable_bytes"], 0, "{s:#}");
    for field in [
        "file_size",
        "live_bytes",
        "stored_chunk_bytes",
        "unique_bytes",
    ] {
        assert!(s[field].as_u64().unwrap() > 0, "{field}: {s:#}");
    }
    assert!(
        s["dedup_ratio"].is_f64() && s["compression_ratio"].is_f64(),
        "{s:#}"
    );

    // Every checkpoint, newest first, with what `log` says of it.
    let log = repo.log_json(true);
    let per = s["per_checkpoint"].as_array().unwrap();
    let listed: Vec<&str> = per.iter().map(|c| c["id"].as_str().unwrap()).collect();
    assert_eq!(listed, [c3.as_str(), c2.as_str(), c1.as_str()], "{s:#}");
    for row in per {
        let logged = log.iter().find(|c| c["id"] == row["id"]).unwrap();
        for field in ["short_id", "time", "message", "bytes"] {
            assert_eq!(row[field], logged[field], "{field}: {row:#} {logged:#}");
        }
    }
    let logical: u64 = log.iter().map(|c| c["bytes"].as_u64().unwrap()).sum();
    assert_eq!(s["logical_bytes"], logical, "{s:#}");

    // What removing each alone would free is what `drop` would remove (a pinned one
    // cannot be dropped).
    for row in per.iter().filter(|c| c["id"] != c2.as_str()) {
        let id = row["id"].as_str().unwrap();
        let drop = repo.json_of(&["drop", "--dry-run", id]);
        assert_eq!(
            row["exclusive_bytes"], drop["stored_bytes_removed"],
            "{row:#} {drop:#}"
        );
    }

    let text = repo.ok(&["stats", "-v"]).stdout;
    let store = repo.store_path();
    assert!(
        line_of(&text, "Store file:").starts_with(&format!("Store file:    {} (", store.display())),
        "{text}"
    );
    assert_eq!(
        line_of(&text, "Checkpoints:"),
        "Checkpoints:   3 on 2 branches, 1 pinned"
    );
    assert!(
        line_of(&text, "Live data:")
            .ends_with(&format!("({chunks} of {chunks} chunks, {trees} trees)")),
        "{text}"
    );
    assert_eq!(
        line_of(&text, "Unreachable:"),
        "Unreachable:   0 B (git checkpoint gc deletes it)"
    );
    // -v: every checkpoint newest first, one line each whatever its message holds.
    let rows: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("Bytes only each checkpoint holds"))
        .skip(1)
        .collect();
    let shorts: Vec<&str> = rows.iter().map(|l| &l[2..9]).collect();
    assert_eq!(shorts, [&c3[..7], &c2[..7], &c1[..7]], "{text}");
    assert!(rows[0].ends_with("three\\nwith a second line"), "{text}");
}

/// Data no checkpoint reaches is counted as verify counts it, is what gc deletes, and is
/// gone from the figures after.
#[test]
fn stats_counts_unreachable_data_as_verify_does_and_gc_deletes_it() {
    let repo = Repo::new();
    repo.write("a.txt", b"kept\n");
    repo.save("one");
    raw_store::plant_unreachable(&repo.store_path(), b"content nothing reaches");

    let s = repo.json_of(&["stats"]);
    let unreachable = s["unreachable_bytes"].as_u64().unwrap();
    assert!(unreachable > 0, "{s:#}");
    let verify = repo.json_of(&["verify"]);
    assert_eq!(verify["unreachable_bytes"], unreachable, "{verify:#}");
    let [chunks, trees, _] = table_sizes(&repo);
    assert_eq!(s["chunks"], chunks, "{s:#}");
    assert_eq!(s["trees"], trees, "{s:#}");
    assert_eq!(s["live_chunks"], chunks - 1, "{s:#}");
    let text = repo.ok(&["stats"]).stdout;
    assert_ne!(
        line_of(&text, "Unreachable:"),
        "Unreachable:   0 B (git checkpoint gc deletes it)"
    );

    let gc = repo.json_of(&["gc"]);
    assert_eq!(gc["stored_bytes_removed"], unreachable, "{gc:#}");
    let s = repo.json_of(&["stats"]);
    assert_eq!(s["unreachable_bytes"], 0, "{s:#}");
    assert_eq!(s["live_chunks"], s["chunks"], "{s:#}");
    assert_eq!(s["chunks"], chunks - 1, "{s:#}");
}

/// A store without a checkpoint: every figure zero, both ratios 1.0, no list, exit 0.
#[test]
fn stats_of_a_store_without_checkpoints_is_all_zero() {
    let repo = Repo::new();
    let s = repo.json_of(&["stats"]);
    for field in [
        "checkpoints",
        "branches",
        "pinned",
        "live_bytes",
        "unreachable_bytes",
        "trees",
        "chunks",
        "live_chunks",
        "logical_bytes",
        "unique_bytes",
        "stored_chunk_bytes",
    ] {
        assert_eq!(s[field], 0, "{field}: {s:#}");
    }
    // Nothing over nothing is no saving: 1.0, as docs/json.md says, not NaN.
    assert_eq!(s["dedup_ratio"], 1.0, "{s:#}");
    assert_eq!(s["compression_ratio"], 1.0, "{s:#}");
    assert_eq!(s["per_checkpoint"], Value::Array(Vec::new()), "{s:#}");
    let text = repo.ok(&["stats"]).stdout;
    assert_eq!(
        line_of(&text, "Checkpoints:"),
        "Checkpoints:   0 on 0 branches, 0 pinned"
    );
    assert!(
        !text.lines().any(|l| l.starts_with("Checkpoints holding")),
        "{text}"
    );
}
