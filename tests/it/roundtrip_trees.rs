//! Exact save → mutate → restore round trips: exotic trees, random trees
//! (proptest), and kind changes (file ↔ dir ↔ symlink).

use crate::common;
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use common::*;
use proptest::prelude::*;

fn non_utf8_name() -> PathBuf {
    PathBuf::from(OsStr::from_bytes(b"bad\xff\xfename.txt"))
}

fn deep_path() -> String {
    let mut p = String::from("deep");
    for i in 1..=20 {
        p.push_str(&format!("/l{i:02}"));
    }
    p.push_str("/leaf.txt");
    p
}

/// Builds the exotic tree. Returns the relative paths that must NOT be captured
/// (ignored, untracked files).
fn build_exotic_tree(r: &Repo) -> Vec<Vec<u8>> {
    // Tracked-but-ignored files: committed, then matched by .gitignore.
    r.write(".gitignore", b"*.log\nbuild/\n");
    r.write("debug.log", b"tracked but ignored\n");
    r.write(
        "build/tracked.txt",
        b"tracked inside an ignored directory\n",
    );
    r.write("text.txt", b"hello\nworld\n");
    r.git(&[
        "add",
        "-f",
        ".gitignore",
        "debug.log",
        "build/tracked.txt",
        "text.txt",
    ]);
    r.git(&["commit", "-q", "-m", "init"]);

    // Untracked ignored files: never captured, never touched.
    r.write("ignored.log", b"ignored, untracked\n");
    r.write("build/artifact.o", &pseudo_random(3000, 99));

    let mut bin: Vec<u8> = (0..=255u8).collect();
    bin.extend(pseudo_random(150_000, 7)); // several CDC chunks
    bin.extend([0u8; 1000]);
    r.write("binary.bin", &bin);
    r.write("empty", b"");
    r.write("dir1/empty-inside", b"");
    r.write_exec("exec.sh", b"#!/bin/sh\necho hi\n");
    r.write_exec("bin/tool", b"#!/bin/sh\nexit 0\n");
    r.write("dir1/inner.txt", b"inner\n");
    r.symlink("link_rel", "text.txt");
    r.symlink("link_abs", r.p("text.txt"));
    r.symlink("link_dir", "dir1");
    r.symlink("dangling", "does/not/exist");
    r.symlink("dir1/up", "../text.txt");
    r.write(non_utf8_name(), b"non-utf8 name\n");
    r.write("with space.txt", b"spaces\n");
    r.write("new\nline.txt", b"newline in name\n");
    r.write("-dash.txt", b"leading dash\n");
    r.write("ünïcödé ✓.txt", b"unicode name\n");
    r.write(deep_path(), b"twenty levels down\n");
    r.write(".hidden", b"dot file\n");
    r.write(".config/settings.json", b"{\"a\": 1}\n");
    r.write(".dotdir/.inner", b"dot in dot\n");

    // A nested repository: its files are captured, its .git is not.
    r.write("nested/file.txt", b"nested file\n");
    r.write("nested/sub/y.txt", b"nested sub\n");
    let nested = r.p("nested");
    r.sb.git(&nested, &["init", "-q", "-b", "main"]);
    r.sb.git(&nested, &["add", "-A"]);
    r.sb.git(&nested, &["commit", "-q", "-m", "nested"]);

    vec![b"ignored.log".to_vec(), b"build/artifact.o".to_vec()]
}

#[test]
fn exotic_tree_round_trips_exactly() {
    let r = Repo::new();
    let not_captured = build_exotic_tree(&r);
    let original = r.snapshot();

    // What must be captured: every file and symlink outside any .git, minus the
    // untracked ignored ones.
    let captured: Vec<Vec<u8>> = original
        .iter()
        .filter(|(k, v)| v.is_captured_kind() && !in_dot_git(k) && !not_captured.contains(k))
        .map(|(k, _)| k.clone())
        .collect();
    assert!(
        original.keys().any(|k| k.starts_with(b"nested/.git/")),
        "test setup: nested .git exists"
    );

    let saved = r.save_json(&["-m", "exotic"]);
    let id = id_of(&saved).expect("save made a checkpoint");
    assert_eq!(
        saved["files"].as_u64(),
        Some(captured.len() as u64),
        "save --json files count must be exactly the captured files (no .git content, no ignored files): {saved}"
    );
    let log = r.log_json(false);
    assert_eq!(id_of(&log[0]).as_deref(), Some(id.as_str()));
    assert_eq!(
        log[0]["files"].as_u64(),
        Some(captured.len() as u64),
        "log --json files count: {}",
        log[0]
    );
    // Saving did not change the worktree at all.
    assert_snap_eq(&original, &r.snapshot(), "after save");

    // Mutate or delete everything captured.
    for (i, rel) in captured.iter().enumerate() {
        let p = r.p(OsStr::from_bytes(rel));
        match (i % 3, &original[rel]) {
            (0, Node::File { data, exec }) => {
                let mut d = data.clone();
                d.extend_from_slice(b"MUTATED");
                write_file(&p, &d, !exec);
            }
            (0, Node::Link(_)) => write_file(&p, b"was a symlink", false),
            (2, Node::File { exec, .. }) => r.set_exec(OsStr::from_bytes(rel), !exec),
            (2, Node::Link(_)) => {
                remove_any(&p);
                std::os::unix::fs::symlink("somewhere/else", &p).unwrap();
            }
            _ => remove_any(&p),
        }
    }
    r.remove("dir1");
    r.write("zz_extra.txt", b"new file restore must delete\n");
    r.write("newdir/a/b.txt", b"in a new directory\n");
    let mutated = r.snapshot();
    assert!(
        snap_diff(&original, &mutated).len() >= captured.len(),
        "test setup: mutation touched everything"
    );

    let res = r.json(&["restore", &id, "--json"]);
    assert_eq!(res["target"].as_str(), Some(id.as_str()), "{res}");
    assert_snap_eq(&original, &r.snapshot(), "after restore of the exotic tree");

    // The restored worktree is exactly the checkpoint: saving now changes nothing.
    let again = r.save_json(&[]);
    assert_eq!(
        again["unchanged"],
        serde_json::Value::Bool(true),
        "save after restore should find nothing changed: {again}"
    );
    assert_eq!(again["current"].as_str(), Some(id.as_str()), "{again}");
}

// ---------------------------------------------------------------------------
// Property test over random trees.

/// Cases of the property test: each builds a repository and runs two saves and three
/// restores (about 0.5 s in a debug build).
const CASES: u32 = 80;

/// Names at each depth of the path slots: ASCII, a dot file, and names that are not
/// UTF-8 (a lone 0xff or 0xfe, Latin-1 0xe9), which Linux takes as the bytes they are.
const NAMES: [&[&[u8]]; 3] = [
    &[b"a", b".h", b"\xff", b"caf\xe9", b"d"],
    &[b"b", b"\xe9t\xe9", b"c"],
    &[b"f", b"g\xfe"],
];

const LINK_TARGETS: &[&[u8]] = &[
    b"a",
    b"../b",
    b"a/b",
    b"/nonexistent/abs",
    b"missing",
    b"\xff",
    b"caf\xe9/c",
];

/// One possible path: a name below its parent slot (none at the top).
struct Slot {
    path: Vec<u8>,
    parent: Option<usize>,
    depth: usize,
}

/// Every path the trees draw from, parents before children: 5 + 15 + 30 slots.
fn slots() -> Vec<Slot> {
    let mut out: Vec<Slot> = Vec::new();
    let mut level: Vec<Option<usize>> = vec![None];
    for (depth, names) in NAMES.iter().enumerate() {
        let mut next = Vec::new();
        for parent in level {
            for name in names.iter() {
                let mut path = match parent {
                    Some(p) => {
                        let mut path = out[p].path.clone();
                        path.push(b'/');
                        path
                    }
                    None => Vec::new(),
                };
                path.extend_from_slice(name);
                next.push(Some(out.len()));
                out.push(Slot {
                    path,
                    parent,
                    depth,
                });
            }
        }
        level = next;
    }
    out
}

#[derive(Debug, Clone, PartialEq)]
enum Content {
    /// Less than one chunk.
    Small(Vec<u8>),
    /// `len` pseudo-random bytes from `seed`: several chunks (the chunker cuts at 16 KiB
    /// at least, 64 KiB on average, 252 KiB at most), some files more than the largest.
    /// `flip` xors one byte, at an offset modulo `len`: an edit inside one chunk.
    Big {
        len: usize,
        seed: u64,
        flip: Option<(usize, u8)>,
    },
}

impl Content {
    fn bytes(&self) -> Vec<u8> {
        match self {
            Content::Small(bytes) => bytes.clone(),
            Content::Big { len, seed, flip } => {
                let mut bytes = pseudo_random(*len, *seed);
                if let Some((at, x)) = flip {
                    bytes[at % len] ^= x;
                }
                bytes
            }
        }
    }
}

/// What a slot holds. A slot's children exist only while it is a `Dir`; a `Dir` with no
/// children is no directory at all (saves keep no empty directories).
#[derive(Debug, Clone, PartialEq)]
enum PNode {
    File(Content, bool),
    Link(&'static [u8]),
    Dir,
}

#[derive(Debug, Clone)]
enum Op {
    Keep,
    Delete,
    Set(PNode),
    Chmod,
    /// A small file gets these bytes; a big one has one byte flipped (offset, nonzero xor).
    Edit(Vec<u8>, usize, u8),
}

fn content() -> impl Strategy<Value = Content> {
    prop_oneof![
        3 => prop::collection::vec(any::<u8>(), 0..48).prop_map(Content::Small),
        1 => (100_000usize..400_000, any::<u64>())
            .prop_map(|(len, seed)| Content::Big { len, seed, flip: None }),
    ]
}

/// A node for a slot at `depth`: no `Dir` at the deepest level, where it would be empty.
fn pnode(depth: usize) -> BoxedStrategy<PNode> {
    let file = (content(), any::<bool>()).prop_map(|(c, x)| PNode::File(c, x));
    let link = prop::sample::select(LINK_TARGETS).prop_map(PNode::Link);
    if depth + 1 < NAMES.len() {
        prop_oneof![3 => file, 2 => link, 3 => Just(PNode::Dir)].boxed()
    } else {
        prop_oneof![4 => file, 2 => link].boxed()
    }
}

fn ptree() -> impl Strategy<Value = Vec<Option<PNode>>> {
    slots()
        .iter()
        .map(|slot| prop::option::weighted(0.65, pnode(slot.depth)))
        .collect::<Vec<_>>()
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    slots()
        .iter()
        .map(|slot| {
            prop_oneof![
                2 => Just(Op::Keep),
                1 => Just(Op::Delete),
                4 => pnode(slot.depth).prop_map(Op::Set),
                1 => Just(Op::Chmod),
                5 => (prop::collection::vec(any::<u8>(), 0..48), any::<usize>(), 1..=255u8)
                    .prop_map(|(bytes, at, x)| Op::Edit(bytes, at, x)),
            ]
        })
        .collect::<Vec<_>>()
}

fn apply(t: &Option<PNode>, op: &Op) -> Option<PNode> {
    match (t, op) {
        (_, Op::Delete) => None,
        (_, Op::Set(n)) => Some(n.clone()),
        (Some(PNode::File(c, x)), Op::Chmod) => Some(PNode::File(c.clone(), !x)),
        (Some(PNode::File(Content::Small(_), x)), Op::Edit(bytes, _, _)) => {
            Some(PNode::File(Content::Small(bytes.clone()), *x))
        }
        (Some(PNode::File(Content::Big { len, seed, .. }, x)), Op::Edit(_, at, flip)) => {
            Some(PNode::File(
                Content::Big {
                    len: *len,
                    seed: *seed,
                    flip: Some((*at, *flip)),
                },
                *x,
            ))
        }
        (t, _) => t.clone(),
    }
}

/// The files and symlinks a slot tree makes: those whose every parent slot is a `Dir`.
fn leaves(slots: &[Slot], tree: &[Option<PNode>]) -> BTreeMap<Vec<u8>, PNode> {
    let mut present = vec![false; slots.len()];
    let mut out = BTreeMap::new();
    for (i, slot) in slots.iter().enumerate() {
        present[i] = tree[i].is_some()
            && slot
                .parent
                .is_none_or(|p| tree[p] == Some(PNode::Dir) && present[p]);
        match &tree[i] {
            Some(node @ (PNode::File(..) | PNode::Link(_))) if present[i] => {
                out.insert(slot.path.clone(), node.clone());
            }
            _ => {}
        }
    }
    out
}

/// Each path's kind in a tree of leaves, directories included.
fn kinds(leaves: &BTreeMap<Vec<u8>, PNode>) -> BTreeMap<Vec<u8>, &'static str> {
    let mut out = BTreeMap::new();
    for (path, node) in leaves {
        for (i, &b) in path.iter().enumerate() {
            if b == b'/' {
                out.insert(path[..i].to_vec(), "dir");
            }
        }
        let kind = match node {
            PNode::File(..) => "file",
            PNode::Link(_) => "link",
            PNode::Dir => unreachable!("leaves hold no directories"),
        };
        out.insert(path.clone(), kind);
    }
    out
}

/// Turns the worktree holding `old` into one holding `new`, touching only what differs
/// (so that unchanged files keep their metadata, and the stat cache vouches for them).
fn transform(r: &Repo, old: &BTreeMap<Vec<u8>, PNode>, new: &BTreeMap<Vec<u8>, PNode>) {
    // All removals first: none then runs through a symlink made below.
    for (path, node) in old {
        if new.get(path) != Some(node) {
            r.remove(OsStr::from_bytes(path));
        }
    }
    for (path, node) in new {
        if old.get(path) == Some(node) {
            continue;
        }
        let rel = OsStr::from_bytes(path);
        // A directory may stand where the leaf goes.
        r.remove(rel);
        match node {
            PNode::File(content, exec) => write_file(&r.p(rel), &content.bytes(), *exec),
            PNode::Link(target) => r.symlink(rel, OsStr::from_bytes(target)),
            PNode::Dir => unreachable!("leaves hold no directories"),
        }
    }
    prune_empty_dirs(&r.dir);
}

/// What the cases of a run exercised, summed.
#[derive(Debug, Default)]
struct Coverage {
    /// A path that is a file in one tree and a directory in the other.
    file_dir: usize,
    /// A symlink in one, a directory in the other.
    link_dir: usize,
    /// A file in one, a symlink in the other.
    file_link: usize,
    /// Paths that are not UTF-8.
    non_utf8: usize,
    /// Files of several chunks, and ones bigger than the largest chunk.
    multi_chunk: usize,
    over_max_chunk: usize,
    /// A multi-chunk file with one byte changed between the trees.
    edited_in_place: usize,
}

fn random_trees_case(t1: Vec<Option<PNode>>, ops: Vec<Op>) -> Coverage {
    let slots = slots();
    let t2: Vec<Option<PNode>> = t1.iter().zip(&ops).map(|(t, o)| apply(t, o)).collect();
    let (leaves1, leaves2) = (leaves(&slots, &t1), leaves(&slots, &t2));

    let mut coverage = Coverage::default();
    let (kinds1, kinds2) = (kinds(&leaves1), kinds(&leaves2));
    for (path, k1) in &kinds1 {
        match (*k1, kinds2.get(path).copied()) {
            ("file", Some("dir")) | ("dir", Some("file")) => coverage.file_dir += 1,
            ("link", Some("dir")) | ("dir", Some("link")) => coverage.link_dir += 1,
            ("file", Some("link")) | ("link", Some("file")) => coverage.file_link += 1,
            _ => {}
        }
    }
    for (path, node) in leaves1.iter().chain(&leaves2) {
        coverage.non_utf8 += usize::from(std::str::from_utf8(path).is_err());
        if let PNode::File(Content::Big { len, .. }, _) = node {
            coverage.multi_chunk += 1;
            coverage.over_max_chunk += usize::from(*len > 258_048);
        }
    }
    for (path, node) in &leaves2 {
        if let (
            Some(PNode::File(Content::Big { flip: None, .. }, _)),
            PNode::File(Content::Big { flip: Some(_), .. }, _),
        ) = (leaves1.get(path), node)
        {
            coverage.edited_in_place += 1;
        }
    }

    let r = Repo::new();
    transform(&r, &BTreeMap::new(), &leaves1);
    let snap1 = r.snapshot();
    let id1 = r.save_forced("first");

    transform(&r, &leaves1, &leaves2);
    let snap2 = r.snapshot();
    let id2 = r.save_forced("second");
    assert_ne!(id1, id2);

    r.ok(&["restore", &id1]);
    assert_snap_eq(&snap1, &r.snapshot(), "restore of the first checkpoint");
    r.ok(&["restore", &id2]);
    assert_snap_eq(&snap2, &r.snapshot(), "restore of the second checkpoint");
    r.ok(&["restore", &id1]);
    assert_snap_eq(
        &snap1,
        &r.snapshot(),
        "restore of the first checkpoint again",
    );
    coverage
}

/// Random pairs of trees round-trip byte for byte through save and restore, in both
/// directions: paths that change kind (file, directory with children, symlink), names
/// that are not UTF-8, files of many chunks edited in place.
#[test]
fn random_trees_round_trip() {
    let config = ProptestConfig {
        cases: CASES,
        max_shrink_iters: 40,
        source_file: Some(file!()),
        ..ProptestConfig::default()
    };
    let mut runner = proptest::test_runner::TestRunner::new(config);
    let total = std::cell::RefCell::new(Coverage::default());
    let result = runner.run(&(ptree(), ops()), |(t1, ops)| {
        let c = random_trees_case(t1, ops);
        let mut total = total.borrow_mut();
        total.file_dir += c.file_dir;
        total.link_dir += c.link_dir;
        total.file_link += c.file_link;
        total.non_utf8 += c.non_utf8;
        total.multi_chunk += c.multi_chunk;
        total.over_max_chunk += c.over_max_chunk;
        total.edited_in_place += c.edited_in_place;
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}\n{runner}");
    }
    // The generator really makes what the test is about: each count is over 10 in a run
    // (edits in place and symlink <-> directory the rarest, 12 to 26 in trials), so a
    // generator that stopped making one fails here, and a fair one practically never does.
    let total = total.into_inner();
    eprintln!("{CASES} cases exercised: {total:?}");
    for (what, count) in [
        ("file <-> directory", total.file_dir),
        ("symlink <-> directory", total.link_dir),
        ("file <-> symlink", total.file_link),
        ("non-UTF-8 paths", total.non_utf8),
        ("multi-chunk files", total.multi_chunk),
        ("files over the largest chunk", total.over_max_chunk),
        ("multi-chunk files edited in place", total.edited_in_place),
    ] {
        assert!(
            count >= 3,
            "only {count} {what} in {CASES} cases: {total:?}"
        );
    }
}

// ---------------------------------------------------------------------------
// Directories and kind changes.

#[test]
fn restore_removes_emptied_dirs_but_keeps_dirs_with_ignored_files() {
    let r = Repo::new();
    r.write(".gitignore", b"*.tmp\n");
    r.write("keep.txt", b"keep\n");
    let a = r.save("only keep.txt");
    let snap_a = r.snapshot();

    r.write("gone/sub/x.txt", b"x\n");
    r.write("gone/y.txt", b"y\n");
    r.write("mixed/y.txt", b"y\n");
    r.write("mixed/cache.tmp", b"ignored cache\n");
    r.save("more");

    r.ok(&["restore", &a]);
    assert!(
        !r.exists("gone"),
        "restore must remove the directory it emptied"
    );
    assert_eq!(
        r.read("mixed/cache.tmp"),
        b"ignored cache\n",
        "ignored file kept"
    );
    assert!(!r.exists("mixed/y.txt"));
    let mut expected = snap_a.clone();
    expected.insert(b"mixed".to_vec(), Node::Dir);
    expected.insert(
        b"mixed/cache.tmp".to_vec(),
        Node::File {
            data: b"ignored cache\n".to_vec(),
            exec: false,
        },
    );
    assert_snap_eq(&expected, &r.snapshot(), "after restore");
}

#[test]
fn restore_handles_kind_changes() {
    let r = Repo::new();
    // State B.
    r.write("p", b"p is a file\n");
    r.write("q/inner.txt", b"q is a dir\n");
    r.symlink("r", "p");
    r.write("s/t/u.txt", b"s is a dir\n");
    r.write_exec("x", b"exec file\n");
    let snap_b = r.snapshot();
    let b = r.save("B");

    // State C: every kind flipped. `s` becomes a symlink to a directory, so a
    // restore of B that followed it would write into p/.
    r.remove("p");
    r.write("p/inner.txt", b"p is a dir\n");
    r.remove("q");
    r.write("q", b"q is a file\n");
    r.remove("r");
    r.write("r", b"r is a file\n");
    r.remove("s");
    r.symlink("s", "p");
    r.remove("x");
    r.symlink("x", "q");
    let snap_c = r.snapshot();
    let c = r.save("C");

    r.ok(&["restore", &b]);
    assert_snap_eq(&snap_b, &r.snapshot(), "restore B over C");
    r.ok(&["restore", &c]);
    assert_snap_eq(&snap_c, &r.snapshot(), "restore C over B");
    r.ok(&["restore", &b]);
    assert_snap_eq(&snap_b, &r.snapshot(), "restore B over C again");
}

/// A symlink to a directory that becomes a directory holding the same names: restoring
/// over the symlink must replace it, not look through it and take the files it finds in
/// the directory it points to for unsaved ones (found by `random_trees_round_trip`).
#[test]
fn restore_replaces_a_symlink_to_a_directory_by_a_directory() {
    let r = Repo::new();
    r.write("real/sub/file.txt", b"in the real directory\n");
    r.symlink("alias", "real");
    let snap_link = r.snapshot();
    let link = r.save("alias is a symlink");
    r.remove("alias");
    r.write("alias/sub/file.txt", b"alias is a directory now\n");
    let snap_dir = r.snapshot();
    let dir = r.save("alias is a directory");

    r.ok(&["restore", &link]);
    assert_snap_eq(&snap_link, &r.snapshot(), "restore of the symlink");
    r.ok(&["restore", &dir]);
    assert_snap_eq(
        &snap_dir,
        &r.snapshot(),
        "restore of the directory over the symlink",
    );
    r.ok(&["restore", &link]);
    assert_snap_eq(&snap_link, &r.snapshot(), "restore of the symlink again");
}
