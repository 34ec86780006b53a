//! Tree records stored as deltas (issue 15, store size): a long history of small edits
//! restores byte for byte from trees stored as bounded delta chains, gc keeps the bases
//! that kept trees need, a crafted chain (missing base, loop, depth lie) is a clear
//! error, and a store whose trees are all whole records, as builds before deltas wrote
//! them, still reads and takes deltas on top.
//!
//! The delta layout (docs/design.md, "Trees") is written out here, not imported: a
//! change to it must fail these tests.

use crate::common;
use std::collections::BTreeMap;

use common::raw_store::{self, BRANCHES, CHECKPOINTS, CHUNKS, TREES};
use common::{assert_snap_eq, parse_json, Repo, Snap};
use git_checkpoint::format::chunk::encode_chunk;
use git_checkpoint::format::codec;
use git_checkpoint::model::tree::{Entry, Node, Tree};
use git_checkpoint::model::Checkpoint;
use git_checkpoint::{CheckpointId, TreeId};
use redb::{ReadableDatabase, ReadableTable};
use serde_json::Value;

/// First byte of a tree stored as a delta.
const DELTA: u8 = 0xC1;
/// The deepest delta chain.
const MAX_CHAIN: u8 = 16;
/// Where a delta's depth and base id are: after the tag and the 4-byte checksum.
const DEPTH_AT: usize = 5;
const BASE_AT: usize = 6;

/// Writes the files of version `v` of a worktree shaped like a source tree: 120 files at
/// the top, 60 in `lib/` and 30 in `lib/deep/`, each edit appending a line to 3 of them
/// (as `benches/small_edits.sh` does), a file added every 7th version and one removed
/// every 11th.
fn write_version(repo: &Repo, v: usize) {
    if v == 0 {
        for i in 0..120 {
            repo.write(format!("top{i:03}.c"), format!("top {i}\n").as_bytes());
        }
        for i in 0..60 {
            repo.write(format!("lib/l{i:02}.c"), format!("lib {i}\n").as_bytes());
        }
        for i in 0..30 {
            repo.write(
                format!("lib/deep/d{i:02}.c"),
                format!("deep {i}\n").as_bytes(),
            );
        }
        return;
    }
    let targets = [
        format!("top{:03}.c", (v * 37) % 120),
        format!("lib/l{:02}.c", (v * 13) % 60),
        format!("lib/deep/d{:02}.c", (v * 7) % 30),
    ];
    for path in targets {
        let mut data = repo.read(&path);
        data.extend_from_slice(format!("/* edit {v} */\n").as_bytes());
        repo.write(&path, &data);
    }
    if v.is_multiple_of(7) {
        repo.write(format!("new{v:03}.c"), b"added\n");
    }
    if v.is_multiple_of(11) {
        repo.remove(format!("top{:03}.c", (v * 5) % 120));
    }
}

/// Saves `versions` versions; returns each checkpoint's id and the worktree it saved.
fn history(repo: &Repo, versions: usize) -> Vec<(String, Snap)> {
    (0..versions)
        .map(|v| {
            write_version(repo, v);
            let id = repo.save(&format!("v{v}"));
            (id, repo.snapshot())
        })
        .collect()
}

/// The depth of every tree stored as a delta, from the raw table.
fn delta_depths(repo: &Repo) -> Vec<u8> {
    let db = raw_store::open(&repo.store_path());
    let read = db.begin_read().unwrap();
    let trees = read.open_table(TREES).unwrap();
    let mut depths = Vec::new();
    for item in trees.iter().unwrap() {
        let (_, value) = item.unwrap();
        let value = value.value();
        if value[0] == DELTA {
            depths.push(value[DEPTH_AT]);
        } else {
            assert_eq!(value[0], codec::FORMAT_VERSION, "a tree of another form");
        }
    }
    depths
}

fn verify_ok(repo: &Repo) -> Value {
    let report = parse_json(&repo.ok(&["verify", "--json", "--read-data"]), "verify");
    assert_eq!(report["ok"], true, "{report}");
    assert_eq!(report["unreachable_trees"], 0, "{report}");
    report
}

/// Restores every checkpoint of `saved` and compares the worktree with what it saved.
fn restores_exactly(repo: &Repo, saved: &[(String, Snap)]) {
    for (id, snap) in saved.iter().rev() {
        repo.ok(&["restore", id]);
        assert_snap_eq(snap, &repo.snapshot(), &format!("restore {id}"));
    }
}

/// Finding: every save rewrote the root and each directory on the changed paths in
/// full. After 40 small-edit saves the store holds deltas, none deeper than the bound,
/// and chains that reached it (then continued against their whole record); every
/// checkpoint restores byte for byte, `verify --read-data` passes, and `log`, `show` and
/// `diff` read the trees.
#[test]
fn every_checkpoint_of_a_long_small_edit_history_restores_exactly() {
    let repo = Repo::new();
    let saved = history(&repo, 40);
    let depths = delta_depths(&repo);
    // Three directories change per save: nearly every new tree is a delta.
    assert!(
        depths.len() >= 3 * 30,
        "{} deltas: {depths:?}",
        depths.len()
    );
    assert_eq!(depths.iter().max(), Some(&MAX_CHAIN), "{depths:?}");
    verify_ok(&repo);
    let log = repo.log_json(true);
    assert_eq!(log.len(), 40);
    let (first, last) = (&saved[0].0, &saved[39].0);
    let diff = repo.ok(&["diff", first, last, "--name-status"]);
    assert!(diff.stdout.contains("lib/deep/d07.c"), "{diff}");
    let show = repo.ok(&["show", "--name-status", &saved[20].0]);
    assert!(show.stdout.contains("top"), "{show}");
    restores_exactly(&repo, &saved);
}

/// gc that drops old checkpoints (whose trees are the bases of kept ones) keeps every
/// kept checkpoint readable; so does `drop` of a checkpoint in the middle, which sweeps
/// only what lay below it.
#[test]
fn gc_and_drop_keep_the_bases_kept_trees_need() {
    let repo = Repo::new();
    let saved = history(&repo, 30);
    let dropped = &saved[25].0;
    repo.ok(&["drop", dropped]);
    let kept: Vec<(String, Snap)> = saved
        .iter()
        .filter(|(id, _)| id != dropped)
        .cloned()
        .collect();
    verify_ok(&repo);
    let gc = parse_json(&repo.ok(&["gc", "--keep", "8", "--json"]), "gc");
    assert!(gc["trees_removed"].as_u64().unwrap() > 0, "{gc}");
    let kept = &kept[kept.len() - 8..];
    assert_eq!(repo.log_ids(true).len(), 8);
    let report = verify_ok(&repo);
    // The oldest kept roots are deltas of trees only dropped checkpoints reached.
    assert!(
        report["trees"].as_u64().unwrap() > 8 * 3,
        "bases are counted as needed: {report}"
    );
    assert!(!delta_depths(&repo).is_empty());
    restores_exactly(&repo, kept);
    // A second sweep removes nothing more: the bases are live, not garbage.
    let again = parse_json(&repo.ok(&["gc", "--json"]), "gc");
    assert_eq!(again["trees_removed"], 0, "{again}");
    restores_exactly(&repo, kept);
}

/// The root tree of checkpoint `id`, from the raw tables.
fn root_of(db: &redb::Database, id: &str) -> TreeId {
    let read = db.begin_read().unwrap();
    let checkpoints = read.open_table(CHECKPOINTS).unwrap();
    let key = u128::from_str_radix(id, 16).unwrap();
    let record: Checkpoint =
        codec::decode(checkpoints.get(key).unwrap().unwrap().value(), "record").unwrap();
    record.tree
}

/// Rewrites the header of the delta stored for `tree` (depth, base) and reseals it.
fn reseal(db: &redb::Database, tree: TreeId, depth: Option<u8>, base: Option<TreeId>) {
    let txn = db.begin_write().unwrap();
    {
        let mut trees = txn.open_table(TREES).unwrap();
        let mut value = trees.get(tree.0).unwrap().unwrap().value().to_vec();
        assert_eq!(value[0], DELTA, "tree {tree} is not stored as a delta");
        if let Some(depth) = depth {
            value[DEPTH_AT] = depth;
        }
        if let Some(base) = base {
            value[BASE_AT..BASE_AT + 16].copy_from_slice(&base.0.to_le_bytes());
        }
        let sum = blake3::hash(&value[5..]);
        value[1..5].copy_from_slice(&sum.as_bytes()[..4]);
        trees.insert(tree.0, value.as_slice()).unwrap();
    }
    txn.commit().unwrap();
}

/// The base id recorded in the delta stored for `tree`.
fn base_of(db: &redb::Database, tree: TreeId) -> TreeId {
    let read = db.begin_read().unwrap();
    let trees = read.open_table(TREES).unwrap();
    let value = trees.get(tree.0).unwrap().unwrap().value().to_vec();
    assert_eq!(value[0], DELTA, "tree {tree} is not stored as a delta");
    let mut base = [0u8; 16];
    base.copy_from_slice(&value[BASE_AT..BASE_AT + 16]);
    TreeId(u128::from_le_bytes(base))
}

/// A crafted chain is an error naming the tree, never a panic, a hang or wrong bytes:
/// a base that is missing, a loop (two deltas each the other's base, and a delta of
/// itself), and depths that lie (deeper than the bound, zero, or not shallower than the
/// delta naming it).
#[test]
fn a_crafted_delta_chain_is_an_error() {
    let cases: [(&str, &str); 6] = [
        ("missing base", "is missing"),
        ("loop", "does not get shallower"),
        ("itself", "a delta of itself"),
        ("too deep", "deltas are 1 to 16 deep"),
        ("depth zero", "deltas are 1 to 16 deep"),
        ("depth lie", "does not get shallower"),
    ];
    for (case, says) in cases {
        let repo = Repo::new();
        let saved = history(&repo, 3);
        let (middle, last) = (&saved[1].0, &saved[2].0);
        let db = raw_store::open(&repo.store_path());
        let (mid_root, last_root) = (root_of(&db, middle), root_of(&db, last));
        assert_eq!(base_of(&db, last_root), mid_root, "{case}");
        assert_eq!(base_of(&db, mid_root), root_of(&db, &saved[0].0), "{case}");
        match case {
            "missing base" => reseal(&db, last_root, None, Some(TreeId(0x5eed))),
            "loop" => reseal(&db, mid_root, Some(2), Some(last_root)),
            "itself" => reseal(&db, last_root, None, Some(last_root)),
            "too deep" => reseal(&db, last_root, Some(MAX_CHAIN + 1), None),
            "depth zero" => reseal(&db, last_root, Some(0), None),
            // Depth 1 names a whole base, but this base is a delta itself.
            "depth lie" => reseal(&db, last_root, Some(1), None),
            _ => unreachable!(),
        }
        drop(db);
        let out = repo.run(&["verify", "--json"]);
        assert_eq!(out.code, 1, "{case}: {out}");
        let report = parse_json(&out, "verify");
        let problems = report["problems"].as_array().unwrap();
        let named = problems
            .iter()
            .find(|p| p["object"] == format!("tree {last_root}"));
        let message = named
            .and_then(|p| p["problem"].as_str())
            .unwrap_or_else(|| panic!("{case}: verify does not name the tree: {report}"));
        assert!(message.contains(says), "{case}: {message}");
        let broken: Vec<&str> = report["affected_checkpoints"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert!(broken.contains(&last.as_str()), "{case}: {report}");
        let before = repo.snapshot();
        // A restore reads the current checkpoint (the broken one) first.
        for args in [
            &["restore", middle.as_str()][..],
            &["show", "--name-status", last.as_str()],
            &["diff", middle.as_str(), last.as_str()],
        ] {
            let out = repo.run(args);
            common::assert_no_panic(&out, &format!("{case}: {args:?}"));
            assert_ne!(out.code, 0, "{case}: {args:?} {out}");
            assert!(out.stderr.contains("damaged"), "{case}: {out}");
            assert!(out.stderr.contains(says), "{case}: {out}");
            assert_snap_eq(&before, &repo.snapshot(), &format!("{case}: {args:?}"));
        }
        // gc refuses to decide what to delete from a damaged chain.
        let gc = repo.run(&["gc", "--keep", "1"]);
        assert_eq!(gc.code, 1, "{case}: {gc}");
        assert!(gc.stderr.contains(says), "{case}: {gc}");
    }
}

/// A store whose trees are all whole records, as every build before deltas wrote them:
/// a history of 20 checkpoints crafted with a 150-file root. Each checkpoint restores,
/// `verify` passes, and a save on top stores its root as a delta of the whole record.
#[test]
fn a_store_of_whole_tree_records_still_reads_and_takes_deltas() {
    let repo = Repo::new();
    repo.write("seed.txt", b"seed\n");
    let seed = repo.save("seed");
    let hasher = raw_store::hasher(&repo.store_path());
    let content = |i: usize, v: usize| format!("file {i} at version {v}\n").into_bytes();
    let mut crafted: Vec<(String, BTreeMap<String, Vec<u8>>)> = Vec::new();
    {
        let db = raw_store::open(&repo.store_path());
        let txn = db.begin_write().unwrap();
        {
            let mut chunks = txn.open_table(CHUNKS).unwrap();
            let mut trees = txn.open_table(TREES).unwrap();
            let mut checkpoints = txn.open_table(CHECKPOINTS).unwrap();
            let mut parent = CheckpointId(u128::from_str_radix(&seed, 16).unwrap());
            let mut files: BTreeMap<String, Vec<u8>> = (0..150)
                .map(|i| (format!("f{i:03}.txt"), content(i, 0)))
                .collect();
            for v in 0..20 {
                if v > 0 {
                    for i in [v * 7 % 150, v * 31 % 150] {
                        files.insert(format!("f{i:03}.txt"), content(i, v));
                    }
                }
                let mut entries = Vec::new();
                let mut bytes = 0;
                for (name, data) in &files {
                    let chunk = hasher.chunk_id(data);
                    chunks
                        .insert(chunk.0, encode_chunk(data, 3).as_slice())
                        .unwrap();
                    bytes += data.len() as u64;
                    entries.push(Entry {
                        name: name.as_bytes().to_vec(),
                        node: Node::File {
                            size: data.len() as u64,
                            executable: false,
                            chunks: vec![chunk],
                        },
                    });
                }
                let record = codec::encode(&Tree { entries });
                let tree = hasher.tree_id(&record);
                trees.insert(tree.0, record.as_slice()).unwrap();
                let checkpoint = Checkpoint {
                    tree,
                    parents: vec![parent],
                    time_ns: 2_000_000_000_000_000_000 + v as i128,
                    message: format!("old {v}"),
                    branch: Some("main".into()),
                    files: files.len() as u64,
                    bytes,
                    ..Checkpoint::default()
                };
                let encoded = codec::encode(&checkpoint);
                let id = hasher.checkpoint_id(&encoded);
                checkpoints.insert(id.0, encoded.as_slice()).unwrap();
                parent = id;
                crafted.push((id.hex(), files.clone()));
            }
            txn.open_table(BRANCHES)
                .unwrap()
                .insert("main", parent.0)
                .unwrap();
        }
        txn.commit().unwrap();
    }
    assert!(delta_depths(&repo).is_empty());
    verify_ok(&repo);
    for (id, files) in crafted.iter().rev() {
        repo.ok(&["restore", id]);
        let expected: Vec<String> = files
            .iter()
            .map(|(name, data)| format!("{name}={}", String::from_utf8_lossy(data)))
            .collect();
        assert_eq!(repo.files(), expected, "restore {id}");
    }
    repo.ok(&["restore", &crafted[19].0]);
    repo.write("f000.txt", b"edited on top\n");
    let on_top = repo.save("on top");
    assert_eq!(
        delta_depths(&repo),
        [1],
        "the new root is a delta of the whole one"
    );
    verify_ok(&repo);
    let expected = repo.snapshot();
    repo.ok(&["restore", &crafted[0].0]);
    repo.ok(&["restore", &on_top]);
    assert_snap_eq(&expected, &repo.snapshot(), "restore on top");
}
