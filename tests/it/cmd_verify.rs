//! `verify` on healthy and damaged stores (a chunk or a tree deleted through the library,
//! flipped bytes in the file, a truncated file): damage is named with the checkpoints it
//! breaks, the exit status is 1, and nothing panics.

use crate::common;
use std::collections::BTreeSet;

use common::raw_store::{self, CHECKPOINTS, CHUNKS, TREES};
use common::{parse_json, pseudo_random, Repo};
use git_checkpoint::format::codec;
use git_checkpoint::model::tree::{Node, Tree};
use git_checkpoint::model::Checkpoint;
use redb::ReadableTable;
use serde_json::Value;

/// Runs `verify --json` (plus `extra`), expecting exit status `code`.
fn verify_json(repo: &Repo, extra: &[&str], code: i32) -> Value {
    let mut args = vec!["verify", "--json"];
    args.extend_from_slice(extra);
    let out = repo.run(&args);
    assert_eq!(out.code, code, "{out}");
    parse_json(&out, "verify --json")
}

fn affected(report: &Value) -> BTreeSet<String> {
    report["affected_checkpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
}

fn problems(report: &Value) -> Vec<(String, String)> {
    report["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["object"].as_str().unwrap().to_string(),
                p["problem"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn a_healthy_store_verifies_with_and_without_reading_data() {
    let repo = Repo::new();
    repo.write("a.txt", b"alpha\n");
    repo.write("big.bin", &pseudo_random(600_000, 3));
    repo.save("one");
    repo.write("a.txt", b"beta\n");
    repo.save("two");
    let out = repo.ok(&["verify"]);
    assert!(out.stdout.contains("Checked 2 checkpoints"), "{out}");
    assert!(out.stdout.contains("No problems found"), "{out}");
    let report = verify_json(&repo, &["--read-data"], 0);
    assert_eq!(report["ok"], true);
    assert!(report["chunks"].as_u64().unwrap() >= 5, "{report}");
    assert_eq!(report["chunks_read"], report["chunks"]);
    assert!(
        report["bytes_read"].as_u64().unwrap() >= 600_000,
        "{report}"
    );
}

/// Three checkpoints: `a.bin` is in the first two only. Deleting its chunk breaks
/// exactly those two; the third still restores.
#[test]
fn a_deleted_chunk_is_named_with_the_checkpoints_it_breaks() {
    let repo = Repo::new();
    let a = pseudo_random(10_000, 1);
    repo.write("a.bin", &a);
    let c1 = repo.save("one");
    repo.write("b.txt", b"b\n");
    let c2 = repo.save("two");
    repo.remove("a.bin");
    let c3 = repo.save("three");
    let chunk = {
        let id = raw_store::hasher(&repo.store_path()).chunk_id(&a);
        let db = raw_store::open(&repo.store_path());
        let txn = db.begin_write().unwrap();
        assert!(txn
            .open_table(CHUNKS)
            .unwrap()
            .remove(id.0)
            .unwrap()
            .is_some());
        txn.commit().unwrap();
        id
    };
    let report = verify_json(&repo, &[], 1);
    assert_eq!(report["ok"], false);
    assert_eq!(
        problems(&report),
        [(format!("chunk {chunk}"), "missing".to_string())]
    );
    assert_eq!(affected(&report), BTreeSet::from([c1.clone(), c2.clone()]));
    let out = repo.run(&["verify"]);
    assert_eq!(out.code, 1);
    assert!(
        out.stderr
            .contains(&format!("damaged: chunk {chunk}: missing")),
        "{out}"
    );
    assert!(
        out.stderr.contains(&c1) && out.stderr.contains(&c2),
        "{out}"
    );
    assert!(out.stderr.contains("error: the store is damaged"), "{out}");
    // The damage stops a restore of a broken checkpoint with a clear error; the
    // healthy one still restores.
    let broken = repo.run(&["restore", &c1]);
    assert_eq!(broken.code, 1, "{broken}");
    assert!(
        broken.stderr.contains("damaged") || broken.stderr.contains("missing"),
        "{broken}"
    );
    repo.ok(&["restore", &c3]);
    assert!(!repo.exists("a.bin"));
}

/// Deleting the tree of `sub/` as the first checkpoint saw it breaks that checkpoint
/// only. gc refuses to sweep while a checkpoint it keeps is damaged (it cannot tell what
/// that one needs), and removing the damaged checkpoint heals the store.
#[test]
fn a_deleted_tree_is_named_and_gc_refuses_to_run_on_the_damage() {
    let repo = Repo::new();
    repo.write("sub/x.txt", b"x1\n");
    repo.write("top.txt", b"top\n");
    let c1 = repo.save("one");
    repo.write("sub/x.txt", b"x2\n");
    let c2 = repo.save("two");
    let sub = {
        let db = raw_store::open(&repo.store_path());
        let txn = db.begin_write().unwrap();
        let sub = {
            let checkpoints = txn.open_table(CHECKPOINTS).unwrap();
            let id = u128::from_str_radix(&c1, 16).unwrap();
            let record: Checkpoint =
                codec::decode(checkpoints.get(id).unwrap().unwrap().value(), "c1").unwrap();
            let root = record.tree;
            let mut trees = txn.open_table(TREES).unwrap();
            let tree: Tree =
                codec::decode(trees.get(root.0).unwrap().unwrap().value(), "root").unwrap();
            let sub = tree
                .entries
                .iter()
                .find_map(|e| match (&e.name[..], &e.node) {
                    (b"sub", Node::Dir { tree }) => Some(*tree),
                    _ => None,
                })
                .unwrap();
            assert!(trees.remove(sub.0).unwrap().is_some());
            sub
        };
        txn.commit().unwrap();
        sub
    };
    let report = verify_json(&repo, &["--read-data"], 1);
    assert_eq!(
        problems(&report),
        [(format!("tree {sub}"), "missing".to_string())]
    );
    assert_eq!(affected(&report), BTreeSet::from([c1.clone()]));
    repo.ok(&["pin", &c1]);
    let gc = repo.run(&["gc", "--keep", "1"]);
    assert_eq!(gc.code, 1, "{gc}");
    assert!(
        gc.stderr.contains(&format!("tree {sub} is missing")),
        "{gc}"
    );
    assert_eq!(repo.log_ids(true).len(), 2);
    assert_eq!(problems(&verify_json(&repo, &[], 1)).len(), 1);
    repo.ok(&["unpin", &c1]);
    let gc = parse_json(
        &repo.ok_past_the_undo_window(&["gc", "--keep", "1", "--json"]),
        "gc",
    );
    assert_eq!(gc["removed"][0]["id"], c1.as_str());
    assert_eq!(verify_json(&repo, &["--read-data"], 0)["ok"], true);
    // The second checkpoint has its own sub/ tree and still restores.
    repo.ok(&["restore", &c2]);
    assert_eq!(repo.read("sub/x.txt"), b"x2\n");
}

/// Flipped bytes inside stored content: found, reported, exit 1, no panic.
#[test]
fn flipped_bytes_in_the_file_are_found() {
    let repo = Repo::new();
    let content = pseudo_random(120_000, 9);
    repo.write("data.bin", &content);
    repo.write("other.txt", b"other\n");
    let c1 = repo.save("one");
    repo.remove("data.bin");
    let c2 = repo.save("two");
    let path = repo.store_path();
    let mut bytes = std::fs::read(&path).unwrap();
    let needle = &content[50_000..50_064];
    let mut hits = 0;
    let mut at = 0;
    while let Some(pos) = bytes[at..].windows(64).position(|w| w == needle) {
        bytes[at + pos + 32] ^= 0x10;
        at += pos + 64;
        hits += 1;
    }
    assert!(hits >= 1, "the content is not in the file as stored");
    std::fs::write(&path, &bytes).unwrap();
    for extra in [&[][..], &["--read-data"][..]] {
        let report = verify_json(&repo, extra, 1);
        assert_eq!(report["ok"], false, "{report}");
        // Whether redb's page checksums or the chunk's own hash catch it first, the
        // damaged chunk is named with the one checkpoint that holds it.
        assert!(
            problems(&report)
                .iter()
                .any(|(object, message)| object.starts_with("chunk ")
                    && message == "does not match its hash"),
            "{report}"
        );
        assert_eq!(affected(&report), BTreeSet::from([c1.clone()]), "{report}");
        assert!(!affected(&report).contains(&c2));
    }
    let out = repo.run(&["verify"]);
    assert_eq!(out.code, 1, "{out}");
    assert!(out.stderr.contains("damaged"), "{out}");
}

/// A truncated file, and an emptied one: reported, exit 1, no panic.
#[test]
fn a_truncated_file_is_found() {
    let repo = Repo::new();
    repo.write("data.bin", &pseudo_random(300_000, 4));
    repo.save("one");
    let path = repo.store_path();
    let full = std::fs::read(&path).unwrap();
    for len in [full.len() / 2, full.len() - 4096, 4096, 100, 0] {
        std::fs::write(&path, &full[..len]).unwrap();
        let report = verify_json(&repo, &[], 1);
        assert_eq!(report["ok"], false, "{len}: {report}");
        let (object, message) = &problems(&report)[0];
        assert_eq!(object, "file", "{len}: {report}");
        assert!(
            message.contains("truncated") || message.contains("does not open"),
            "{len}: {message}"
        );
        let out = repo.run(&["verify"]);
        assert_eq!(out.code, 1, "{out}");
        assert!(out.stderr.contains("damaged: file:"), "{out}");
    }
}
