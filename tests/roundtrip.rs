//! Exact save → mutate → restore round trips: exotic trees, random trees
//! (proptest), and kind changes (file ↔ dir ↔ symlink).

mod common;

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

const UNIVERSE: &[&str] = &[
    "f0",
    "f1",
    ".f2",
    "d0/f0",
    "d0/f1",
    "d0/d1/f0",
    "d0/d1/f3",
    "d0/d1/d2/f4",
    "d3/f0",
    "d3/.f5",
    "d4/d5/f6",
];

const LINK_TARGETS: &[&str] = &[
    "f0",
    "../f1",
    "d0",
    "/nonexistent/abs",
    "missing",
    "d0/d1/f0",
];

#[derive(Debug, Clone, PartialEq)]
enum PNode {
    File(Vec<u8>, bool),
    Link(&'static str),
}

#[derive(Debug, Clone)]
enum Op {
    Keep,
    Delete,
    Set(PNode),
    Chmod,
    Edit(Vec<u8>),
}

fn pnode() -> impl Strategy<Value = PNode> {
    prop_oneof![
        4 => (prop::collection::vec(any::<u8>(), 0..48), any::<bool>())
            .prop_map(|(c, x)| PNode::File(c, x)),
        1 => prop::sample::select(LINK_TARGETS).prop_map(PNode::Link),
    ]
}

fn ptree() -> impl Strategy<Value = Vec<Option<PNode>>> {
    prop::collection::vec(prop::option::weighted(0.6, pnode()), UNIVERSE.len())
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => Just(Op::Keep),
        2 => Just(Op::Delete),
        2 => pnode().prop_map(Op::Set),
        2 => Just(Op::Chmod),
        3 => prop::collection::vec(any::<u8>(), 0..48).prop_map(Op::Edit),
    ]
}

fn apply(t: &Option<PNode>, op: &Op) -> Option<PNode> {
    match (t, op) {
        (_, Op::Delete) => None,
        (_, Op::Set(n)) => Some(n.clone()),
        (Some(PNode::File(c, x)), Op::Chmod) => Some(PNode::File(c.clone(), !x)),
        (Some(PNode::File(_, x)), Op::Edit(n)) => Some(PNode::File(n.clone(), *x)),
        (t, _) => t.clone(),
    }
}

fn materialize(r: &Repo, path: &str, n: &Option<PNode>) {
    r.remove(path);
    match n {
        None => {}
        Some(PNode::File(c, x)) => write_file(&r.p(path), c, *x),
        Some(PNode::Link(t)) => r.symlink(path, t),
    }
}

fn random_trees_case(t1: Vec<Option<PNode>>, ops: Vec<Op>) {
    let r = Repo::new();
    for (path, n) in UNIVERSE.iter().zip(&t1) {
        materialize(&r, path, n);
    }
    let snap1 = r.snapshot();
    let id1 = r.save_forced("first");

    let t2: Vec<Option<PNode>> = t1.iter().zip(&ops).map(|(t, o)| apply(t, o)).collect();
    for ((path, a), b) in UNIVERSE.iter().zip(&t1).zip(&t2) {
        if a != b {
            materialize(&r, path, b);
        }
    }
    prune_empty_dirs(&r.dir);
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
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 12,
        max_shrink_iters: 40,
        ..ProptestConfig::default()
    })]

    #[test]
    fn random_trees_round_trip(t1 in ptree(), ops in prop::collection::vec(op(), UNIVERSE.len())) {
        random_trees_case(t1, ops);
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
