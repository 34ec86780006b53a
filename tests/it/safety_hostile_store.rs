//! Stores crafted through the library to make commands do far more work than the
//! records admit (issue 12, findings 5 and 6): trees that share one subtree at every
//! level and so expand exponentially, a file record listing one big chunk thousands of
//! times, trees whose names are duplicated or out of order, and a tree stored under a
//! key that is not its hash. Every command must stop with a clear one-line error (exit 1)
//! in bounded memory and time, restore must change nothing, and `verify` must name the
//! damage.
//!
//! Each command runs under a 1 GiB address-space limit and a 256 MiB file-size limit, so
//! that a build without the bounds fails the test quickly instead of eating the machine
//! or the disk; the test then asserts a much lower peak resident size.

use crate::common;
use std::time::Duration;

use common::raw_store::{self, BRANCHES, CHECKPOINTS, CHUNKS, PACKS, TREES};
use common::{assert_snap_eq, parse_json, Out, Repo};
use git_checkpoint::format::chunk::{encode_chunk, Hasher};
use git_checkpoint::format::codec;
use git_checkpoint::model::tree::{Entry, Node, Tree};
use git_checkpoint::model::Checkpoint;
use git_checkpoint::{CheckpointId, ChunkId, TreeId};
use redb::ReadableDatabase;
use redb::ReadableTable;

/// Peak resident size a bounded command may reach.
const MAX_RSS_KIB: u64 = 200 << 10;
/// How long a bounded command may take: a debug build on a 2-core machine busy with the
/// rest of the suite took up to 19 s for the deepest chain's `verify`; what this catches
/// (a walk that never ends, or grows exponentially with a crafted store) takes far longer.
const MAX_TIME: Duration = Duration::from_secs(60);
/// Safety nets for a build without the bounds: allocations past this fail (abort)...
const ADDRESS_SPACE_LIMIT: u64 = 1 << 30;
/// ...and so do writes past this (SIGXFSZ), instead of a 1 GB restore.
const FILE_SIZE_LIMIT: u64 = 256 << 20;

/// The output of a command run under the limits, and its peak resident size.
struct Bounded {
    out: Out,
    max_rss_kib: u64,
}

/// Runs the binary with `args` in the worktree under the address-space and file-size
/// limits, with two rayon threads whatever the machine (so the memory figure does not
/// depend on the core count), measured by [`common::run_limited_measuring_peak`]; kills
/// it and fails after [`MAX_TIME`].
fn run_bounded(repo: &Repo, args: &[&str]) -> Bounded {
    let mut cmd = repo.sb.bin_cmd(&repo.dir, args);
    cmd.env("RAYON_NUM_THREADS", "2");
    let limits = common::ChildLimits {
        address_space: ADDRESS_SPACE_LIMIT,
        file_size: FILE_SIZE_LIMIT,
    };
    let (out, peak) = common::run_limited_measuring_peak(cmd, None, Some(limits), MAX_TIME);
    let max_rss_kib = peak / 1024;
    // Printed with the test's output: the margins, when a limit is near.
    eprintln!(
        "{args:?}: exit {}, peak {max_rss_kib} KiB, {:?}",
        out.code,
        out.finished - out.started
    );
    Bounded { out, max_rss_kib }
}

/// Runs `args` bounded and asserts a clear one-line error (exit 1) that contains every
/// one of `says`, within the memory and time limits.
#[track_caller]
fn refuses(repo: &Repo, args: &[&str], says: &[&str]) -> Out {
    let run = run_bounded(repo, args);
    let out = run.out;
    common::assert_no_panic(&out, &format!("{args:?}"));
    assert_eq!(out.code, 1, "{args:?}: {out}");
    let lines: Vec<&str> = out.stderr.trim_end().lines().collect();
    assert_eq!(
        lines.len(),
        1,
        "{args:?}: one line of error expected\n{out}"
    );
    assert!(lines[0].starts_with("error: "), "{args:?}: {out}");
    for word in says {
        assert!(
            lines[0].contains(word),
            "{args:?}: {word:?} expected\n{out}"
        );
    }
    assert!(
        run.max_rss_kib < MAX_RSS_KIB,
        "{args:?}: peak resident size {} KiB (limit {MAX_RSS_KIB} KiB)",
        run.max_rss_kib
    );
    assert!(out.elapsed() < MAX_TIME, "{args:?}: {:?}", out.elapsed());
    out
}

/// `verify --json` (plus `extra`), bounded, expected to fail; returns the report.
#[track_caller]
fn verify_fails(repo: &Repo, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["verify", "--json"];
    args.extend_from_slice(extra);
    let run = run_bounded(repo, &args);
    common::assert_no_panic(&run.out, &format!("{args:?}"));
    assert_eq!(run.out.code, 1, "{args:?}: {}", run.out);
    assert!(
        run.max_rss_kib < MAX_RSS_KIB,
        "{args:?}: peak resident size {} KiB",
        run.max_rss_kib
    );
    parse_json(&run.out, "verify --json")
}

/// The problem `verify` reports for `object`, if any.
fn problem<'a>(report: &'a serde_json::Value, object: &str) -> Option<&'a str> {
    report["problems"]
        .as_array()
        .expect("problems")
        .iter()
        .find(|p| p["object"] == object)
        .map(|p| p["problem"].as_str().expect("problem text"))
}

fn affected(report: &serde_json::Value) -> Vec<String> {
    report["affected_checkpoints"]
        .as_array()
        .expect("affected")
        .iter()
        .map(|v| v.as_str().expect("id").to_string())
        .collect()
}

/// Writes records straight into a store, as a hostile or damaged store would hold them.
struct Crafter {
    /// Names records with the store's key, as the store would.
    hasher: Hasher,
    /// The store file, opened raw.
    db: redb::Database,
    txn: Option<redb::WriteTransaction>,
}

impl Crafter {
    fn open(repo: &Repo) -> Crafter {
        let hasher = raw_store::hasher(&repo.store_path());
        let db = raw_store::open(&repo.store_path());
        let txn = db.begin_write().unwrap();
        Crafter {
            hasher,
            db,
            txn: Some(txn),
        }
    }

    fn txn(&self) -> &redb::WriteTransaction {
        self.txn.as_ref().unwrap()
    }

    /// Stores `tree` under its hash; returns the id.
    fn tree(&self, tree: &Tree) -> TreeId {
        let bytes = codec::encode(tree);
        let id = self.hasher.tree_id(&bytes);
        self.tree_under(id, tree);
        id
    }

    /// Stores `tree` under `key`, whatever its hash.
    fn tree_under(&self, key: TreeId, tree: &Tree) {
        self.txn()
            .open_table(TREES)
            .unwrap()
            .insert(key.0, codec::encode(tree).as_slice())
            .unwrap();
    }

    /// Stores `data` as one chunk in the index itself (as stores before packs did).
    fn chunk(&self, data: &[u8]) -> ChunkId {
        let id = self.hasher.chunk_id(data);
        self.txn()
            .open_table(CHUNKS)
            .unwrap()
            .insert(id.0, encode_chunk(data, 3).as_slice())
            .unwrap();
        id
    }

    /// Stores `data` as one chunk in a pack of its own, with `raw_len` recorded as its
    /// length: the index entry written byte by byte (tag `0xB1`, pack, offset, stored
    /// length, raw length), as the format on disk has it.
    fn packed_chunk(&self, data: &[u8], raw_len: usize) -> ChunkId {
        let id = self.hasher.chunk_id(data);
        let mut index = self.txn().open_table(CHUNKS).unwrap();
        let mut packs = self.txn().open_table(PACKS).unwrap();
        let pack = packs.last().unwrap().map_or(0, |(key, _)| key.value() + 1);
        let stored = encode_chunk(data, 3);
        packs.insert(pack, stored.as_slice()).unwrap();
        let mut entry = vec![0xB1];
        entry.extend_from_slice(&pack.to_le_bytes());
        entry.extend_from_slice(&0u32.to_le_bytes());
        entry.extend_from_slice(&(stored.len() as u32).to_le_bytes());
        entry.extend_from_slice(&(raw_len as u32).to_le_bytes());
        index.insert(id.0, entry.as_slice()).unwrap();
        id
    }

    /// Stores a checkpoint of `tree` recording `files` and `bytes`, on top of `parent`,
    /// and points branch `branch` at it; returns its id in hex.
    fn checkpoint(
        &self,
        tree: TreeId,
        parent: Option<&str>,
        files: u64,
        bytes: u64,
        branch: &str,
    ) -> String {
        let record = Checkpoint {
            tree,
            parents: parent
                .map(|p| CheckpointId(u128::from_str_radix(p, 16).unwrap()))
                .into_iter()
                .collect(),
            time_ns: 2_000_000_000_000_000_000,
            message: format!("crafted {branch}"),
            files,
            bytes,
            ..Checkpoint::default()
        };
        let bytes = codec::encode(&record);
        let id = self.hasher.checkpoint_id(&bytes).0;
        self.txn()
            .open_table(CHECKPOINTS)
            .unwrap()
            .insert(id, bytes.as_slice())
            .unwrap();
        self.txn()
            .open_table(BRANCHES)
            .unwrap()
            .insert(branch, id)
            .unwrap();
        format!("{id:032x}")
    }

    fn commit(mut self) {
        self.txn.take().unwrap().commit().unwrap();
    }
}

fn file(size: u64, chunks: Vec<ChunkId>) -> Node {
    Node::File {
        size,
        executable: false,
        chunks,
    }
}

fn entry(name: &str, node: Node) -> Entry {
    Entry {
        name: name.as_bytes().to_vec(),
        node,
    }
}

/// A worktree with a few files, saved once; returns the repo and the checkpoint id.
fn saved_repo() -> (Repo, String) {
    let repo = Repo::new();
    repo.write("a.txt", b"alpha\n");
    repo.write("b.txt", b"beta\n");
    repo.write("sub/c.txt", b"gamma\n");
    let base = repo.save("base");
    (repo, base)
}

/// Eight levels of trees, each holding 20 entries that all name the tree below; the
/// lowest holds 20 one-byte files: 20^8 paths from 8 stored trees. The record says 1
/// file of 1 byte.
fn plant_tree_bomb(repo: &Repo, parent: &str) -> (String, TreeId) {
    let craft = Crafter::open(repo);
    let chunk = craft.chunk(b"x");
    let mut id = craft.tree(&Tree {
        entries: (0..20)
            .map(|i| entry(&format!("f{i:02}"), file(1, vec![chunk])))
            .collect(),
    });
    for _ in 1..8 {
        id = craft.tree(&Tree {
            entries: (0..20)
                .map(|i| entry(&format!("d{i:02}"), Node::Dir { tree: id }))
                .collect(),
        });
    }
    let bomb = craft.checkpoint(id, Some(parent), 1, 1, "bomb");
    craft.commit();
    (bomb, id)
}

/// Finding 5: the tree bomb. Every command that expands a checkpoint's tree stops as
/// soon as it holds more than its record says; verify names the checkpoint without
/// expanding anything.
#[test]
fn a_tree_bomb_is_refused_by_every_command_in_bounded_memory() {
    let (repo, base) = saved_repo();
    let (bomb, _) = plant_tree_bomb(&repo, &base);
    let before = repo.snapshot();
    let says = [
        "the store is damaged",
        "more files than its checkpoint records",
    ];
    for args in [
        &["log", "--all"][..],
        &["show", "bomb"],
        &["show", "--stat", "bomb"],
        &["show", "--name-status", "bomb"],
        &["diff", "bomb"],
        &["diff", &base, "bomb"],
        &["diff", "bomb", &base, "--stat"],
    ] {
        refuses(&repo, args, &says);
    }
    assert_snap_eq(&before, &repo.snapshot(), "after the refused commands");

    for extra in [&[][..], &["--read-data"]] {
        let report = verify_fails(&repo, extra);
        let message = problem(&report, &format!("checkpoint {bomb}"))
            .unwrap_or_else(|| panic!("verify does not name the bomb: {report}"));
        assert!(message.contains("more than"), "{message}");
        assert_eq!(affected(&report), [bomb.as_str()], "{report}");
        // Eight trees, each read once, plus the base checkpoint's two.
        assert_eq!(report["trees"], 10, "{report}");
    }
}

/// Finding 5, restore: `restore` of the tree bomb (a dry run and a real one) is refused
/// before anything changes.
///
/// Ignored on this branch: restore.rs (owned by another change) diffs the two trees
/// without the target's record. It passes once its reader is made with
/// `TreeReader::new(...).with_store(&read)?`, which looks up each root's record.
#[test]
fn restoring_a_tree_bomb_is_refused_in_bounded_memory() {
    let (repo, base) = saved_repo();
    plant_tree_bomb(&repo, &base);
    let before = repo.snapshot();
    let says = [
        "the store is damaged",
        "more files than its checkpoint records",
    ];
    for args in [&["restore", "bomb", "--dry-run"][..], &["restore", "bomb"]] {
        refuses(&repo, args, &says);
        assert_snap_eq(&before, &repo.snapshot(), &format!("after {args:?}"));
    }
}

/// Finding 5, the chunk-list bomb: a one-byte file listing one 252 KiB chunk 4,000 times
/// (1 GB of content). Every command refuses it from the tree alone, without reading a
/// chunk; verify names the tree, with and without reading data.
#[test]
fn a_chunk_list_bomb_is_refused_without_reading_it() {
    let (repo, base) = saved_repo();
    let craft = Crafter::open(&repo);
    let max = craft.hasher.params().max;
    let chunk = craft.chunk(&vec![b'z'; max]);
    let root = craft.tree(&Tree {
        entries: vec![entry("big.bin", file(1, vec![chunk; 4000]))],
    });
    craft.checkpoint(root, Some(&base), 1, 1, "chunks");
    craft.commit();
    let before = repo.snapshot();
    let says = ["the store is damaged", "big.bin", "4000 chunks"];
    for args in [
        &["show", "--stat", "chunks"][..],
        &["show", "chunks"],
        &["diff", &base, "chunks"],
        &["log", "--all"],
        &["restore", "chunks", "--dry-run"],
        &["restore", "chunks"],
    ] {
        refuses(&repo, args, &says);
        assert_snap_eq(&before, &repo.snapshot(), &format!("after {args:?}"));
    }
    for extra in [&[][..], &["--read-data"]] {
        let report = verify_fails(&repo, extra);
        let message = problem(&report, &format!("tree {root:032x}"))
            .unwrap_or_else(|| panic!("verify does not name the tree: {report}"));
        assert!(message.contains("big.bin"), "{message}");
    }
}

/// Finding 5, a chunk list whose length `size` allows but whose chunks hold far more:
/// 64 chunks of 252 KiB under a recorded size of 64 x 16 KiB. verify, show and diff add
/// up the chunk lengths from the index and refuse before reading a chunk.
#[test]
fn chunks_that_hold_more_than_the_recorded_size_are_refused() {
    let (repo, base) = saved_repo();
    let craft = Crafter::open(&repo);
    let params = craft.hasher.params();
    let chunk = craft.chunk(&vec![b'y'; params.max]);
    let size = 64 * params.min as u64;
    let root = craft.tree(&Tree {
        entries: vec![entry("big.bin", file(size, vec![chunk; 64]))],
    });
    craft.checkpoint(root, Some(&base), 1, size, "overrun");
    craft.commit();
    // The reader adds the lengths up from the index before any chunk is read, so the
    // error gives the whole sum.
    let sum = (64 * params.max).to_string();
    for args in [
        &["show", "--stat", "overrun"][..],
        &["show", "overrun"],
        &["diff", &base, "overrun", "--stat"],
    ] {
        refuses(
            &repo,
            args,
            &["the store is damaged", "big.bin", "size", &sum],
        );
    }
    let report = verify_fails(&repo, &[]);
    let message = problem(&report, &format!("tree {root:032x}"))
        .unwrap_or_else(|| panic!("verify does not name the tree: {report}"));
    assert!(message.contains("big.bin"), "{message}");
}

/// A chunk whose index entry records a length other than its content's: 64 chunks of
/// 252 KiB whose entries each say 16 KiB, under a size of 64 x 16 KiB, so the lengths
/// add up. verify --read-data names the chunk; show stops reading once the content
/// passes the recorded size.
#[test]
fn a_chunk_whose_recorded_length_lies_is_caught_when_read() {
    let (repo, base) = saved_repo();
    let craft = Crafter::open(&repo);
    let params = craft.hasher.params();
    let chunk = craft.packed_chunk(&vec![b'w'; params.max], params.min);
    let size = 64 * params.min as u64;
    let root = craft.tree(&Tree {
        entries: vec![entry("w.bin", file(size, vec![chunk; 64]))],
    });
    craft.checkpoint(root, Some(&base), 1, size, "liar");
    craft.commit();
    for args in [&["show", "--stat", "liar"][..], &["diff", &base, "liar"]] {
        refuses(&repo, args, &["the store is damaged", "w.bin", "size"]);
    }
    // Restore writes no more than the recorded size, and puts nothing in place.
    refuses(
        &repo,
        &["restore", "liar"],
        &["the store is damaged", "w.bin", "size"],
    );
    assert!(!repo.exists("w.bin"));
    let report = verify_fails(&repo, &["--read-data"]);
    let message = problem(&report, &format!("chunk {chunk:032x}"))
        .unwrap_or_else(|| panic!("verify does not name the chunk: {report}"));
    assert!(message.contains(&params.max.to_string()), "{message}");
}

/// Finding 6: duplicate and unsorted names in a tree stored under its true hash.
/// Restore refuses before deleting anything (the worktree is unchanged afterwards, and
/// on a retry); verify names the tree.
#[test]
fn duplicate_or_unsorted_names_are_refused_before_anything_changes() {
    for (case, names, says) in [
        ("duplicate", ["x.txt", "x.txt"], "twice"),
        ("unsorted", ["y.txt", "x.txt"], "order"),
    ] {
        let (repo, base) = saved_repo();
        let craft = Crafter::open(&repo);
        let one = craft.chunk(b"one\n");
        let two = craft.chunk(b"two\n");
        let root = craft.tree(&Tree {
            entries: vec![
                entry(names[0], file(4, vec![one])),
                entry(names[1], file(4, vec![two])),
            ],
        });
        craft.checkpoint(root, Some(&base), 2, 8, case);
        craft.commit();
        let before = repo.snapshot();
        for args in [
            &["restore", case, "--dry-run"][..],
            &["restore", case],
            &["restore", case],
            &["show", case],
            &["diff", case],
            &["log", "--all"],
            &["stats"],
            &["gc", "--dry-run"],
        ] {
            refuses(&repo, args, &["the store is damaged", says]);
            assert_snap_eq(
                &before,
                &repo.snapshot(),
                &format!("{case}: after {args:?}"),
            );
        }
        let report = verify_fails(&repo, &[]);
        let message = problem(&report, &format!("tree {root:032x}"))
            .unwrap_or_else(|| panic!("{case}: verify does not name the tree: {report}"));
        assert!(message.contains(says), "{case}: {message}");
    }
}

/// Finding 6: a tree stored under a key that is not its hash (here `sub/`'s tree
/// replaced by another, well-formed one). verify names it; restore refuses it.
#[test]
fn a_tree_under_a_key_that_is_not_its_hash_is_named_by_verify() {
    let (repo, base) = saved_repo();
    let sub = {
        let craft = Crafter::open(&repo);
        let root: Tree = {
            let read = craft.db.begin_read().unwrap();
            let checkpoints = read.open_table(CHECKPOINTS).unwrap();
            let id = u128::from_str_radix(&base, 16).unwrap();
            let record: Checkpoint =
                codec::decode(checkpoints.get(id).unwrap().unwrap().value(), "base").unwrap();
            let trees = read.open_table(TREES).unwrap();
            let value = trees.get(record.tree.0).unwrap().unwrap();
            codec::decode(value.value(), "root").unwrap()
        };
        let sub = root
            .entries
            .iter()
            .find_map(|e| match (&e.name[..], &e.node) {
                (b"sub", Node::Dir { tree }) => Some(*tree),
                _ => None,
            })
            .unwrap();
        let other = craft.chunk(b"swapped\n");
        craft.tree_under(
            sub,
            &Tree {
                entries: vec![entry("c.txt", file(8, vec![other]))],
            },
        );
        craft.commit();
        sub
    };
    let report = verify_fails(&repo, &[]);
    let message = problem(&report, &format!("tree {sub:032x}"))
        .unwrap_or_else(|| panic!("verify does not name the tree: {report}"));
    assert!(message.contains("does not match its id"), "{message}");
    assert_eq!(affected(&report), [base.as_str()], "{report}");
    repo.remove("sub/c.txt");
    refuses(
        &repo,
        &["restore", &base, "--dry-run"],
        &["does not match its id"],
    );
}

/// A chain of nested directories far deeper than any path a save can record (a
/// worktree path is at most 4096 bytes): every walk stops at the depth bound with an
/// error instead of overflowing the stack, and verify names the checkpoint. A chain
/// exactly at the bound still shows.
#[test]
fn a_chain_of_trees_deeper_than_any_path_is_refused() {
    use git_checkpoint::model::tree::MAX_DEPTH;
    let (repo, base) = saved_repo();
    let craft = Crafter::open(&repo);
    let chunk = craft.chunk(b"x");
    let mut id = craft.tree(&Tree {
        entries: vec![entry("f", file(1, vec![chunk]))],
    });
    let mut at_bound = None;
    for depth in 1..=100_000 {
        id = craft.tree(&Tree {
            entries: vec![entry("d", Node::Dir { tree: id })],
        });
        if depth == MAX_DEPTH {
            at_bound = Some(id);
        }
    }
    let deep = craft.checkpoint(id, Some(&base), 1, 1, "deep");
    craft.checkpoint(at_bound.unwrap(), Some(&base), 1, 1, "bound");
    craft.commit();
    let before = repo.snapshot();
    for args in [
        &["show", "--name-status", "deep"][..],
        &["log", "--all"],
        &["diff", &base, "deep"],
        &["restore", "deep", "--dry-run"],
        &["restore", "deep"],
    ] {
        refuses(&repo, args, &["the store is damaged", "deeper than"]);
        assert_snap_eq(&before, &repo.snapshot(), &format!("after {args:?}"));
    }
    let out = run_bounded(&repo, &["show", "--name-status", "bound"]).out;
    assert_eq!(out.code, 0, "{out}");
    assert!(out.stdout.contains(&"d/".repeat(MAX_DEPTH)), "{out}");
    let report = verify_fails(&repo, &[]);
    let message = problem(&report, &format!("checkpoint {deep}"))
        .unwrap_or_else(|| panic!("verify does not name the chain: {report}"));
    assert!(message.contains("deeper than"), "{message}");
    assert_eq!(affected(&report), [deep.as_str()], "{report}");
}

/// `tree` encoded with one byte more after its fields, under a valid checksum: the
/// same tree to a decoder, but other bytes and so another id.
fn padded(tree: &Tree) -> Vec<u8> {
    let canonical = codec::encode(tree);
    let mut body = canonical[5..].to_vec();
    body.push(0);
    let mut out = vec![canonical[0]];
    out.extend_from_slice(&blake3::hash(&body).as_bytes()[..4]);
    out.extend_from_slice(&body);
    out
}

/// Walks that find no change: directories whose trees differ by id but not by content
/// (each tree stored twice, the second time with a byte of padding), and empty trees
/// named as directories, both shared at every level. A diff or show would enter 20^8
/// directory pairs without yielding anything, so no count of yielded files bounds them:
/// the reader refuses both kinds of tree, and verify names them.
#[test]
fn trees_that_expand_to_nothing_but_work_are_refused() {
    let (repo, base) = saved_repo();
    let craft = Crafter::open(&repo);
    let chunk = craft.chunk(b"x");
    let put = |tree: &Tree, pad: bool| -> TreeId {
        if !pad {
            return craft.tree(tree);
        }
        let bytes = padded(tree);
        let id = craft.hasher.tree_id(&bytes);
        craft
            .txn()
            .open_table(TREES)
            .unwrap()
            .insert(id.0, bytes.as_slice())
            .unwrap();
        id
    };
    let leaf = Tree {
        entries: (0..20)
            .map(|i| entry(&format!("f{i:02}"), file(1, vec![chunk])))
            .collect(),
    };
    let (mut plain, mut twin) = (put(&leaf, false), put(&leaf, true));
    let mut empty = put(&Tree::default(), false);
    let level = |below: TreeId| Tree {
        entries: (0..20)
            .map(|i| entry(&format!("d{i:02}"), Node::Dir { tree: below }))
            .collect(),
    };
    for _ in 1..8 {
        plain = put(&level(plain), false);
        twin = put(&level(twin), true);
        empty = put(&level(empty), false);
    }
    // Honest counts: nothing but the walks' own work is out of bounds.
    let all = 20u64.pow(8);
    craft.checkpoint(plain, Some(&base), all, all, "plain");
    let twins = craft.checkpoint(twin, Some(&base), all, all, "twin");
    let empties = craft.checkpoint(empty, Some(&base), 0, 0, "empty");
    craft.commit();
    refuses(
        &repo,
        &["diff", "plain", "twin", "--name-status"],
        &[
            "the store is damaged",
            "not encoded the way saves encode trees",
        ],
    );
    refuses(
        &repo,
        &["show", "--name-status", "empty"],
        &["the store is damaged", "empty"],
    );
    let report = verify_fails(&repo, &[]);
    let message = problem(&report, &format!("tree {twin:032x}"))
        .unwrap_or_else(|| panic!("verify does not name the padded tree: {report}"));
    assert!(message.contains("not encoded"), "{message}");
    let named_empty = report["problems"].as_array().unwrap().iter().any(|p| {
        p["problem"]
            .as_str()
            .unwrap()
            .contains("names the empty tree")
    });
    assert!(named_empty, "{report}");
    let hit = affected(&report);
    assert!(hit.contains(&twins) && hit.contains(&empties), "{report}");
    assert!(!hit.contains(&base), "{report}");
}
