//! `stats`: what the store holds and what it costs.

use crate::common;

use common::{parse_json, pseudo_random, Repo};
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
