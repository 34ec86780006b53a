//! Model-based test: random sequences of worktree edits, ignore-rule changes, large
//! files, saves with and without the watcher, whole and path-limited restores (with and
//! without `--no-save`), fork, switch, drop and gc, each checked against a model after
//! every step.
//!
//! The model is git itself: a checkpoint holds exactly what `git add -A` would see at
//! save time (`git ls-files --cached --others --exclude-standard`, read from the
//! worktree), minus the files over `checkpoint.maxFileSize`, which it records as skipped.
//! A restore makes the covered paths equal to the target, except files no checkpoint
//! holds (ignored, too large now or skipped by the target), which stay as they are; when
//! one of those is in the way the restore is refused, and a refused restore changes
//! nothing at all (worktree, branches, HEAD). After every step the worktree, the
//! checkpoint set, the branches and HEAD are compared with the model, and every new
//! checkpoint's tree is compared with the model's copy through `diff <parent> <new>`.
//!
//! Environment:
//! - `GIT_CHECKPOINT_MODEL_SEED=<n>`: the seed, or `random` for a new one (printed);
//!   without it a fixed seed, so that CI's verdict does not depend on the draw. A failure
//!   prints the seed of its sequence, which replays it alone.
//! - `GIT_CHECKPOINT_MODEL_OPS=<n>`: operations in all (default 240), in sequences of
//!   `GIT_CHECKPOINT_MODEL_SEQ=<n>` (default 40), each in a new repository.
//! - `GIT_CHECKPOINT_MODEL_EXCLUDE=kind,kind`: operation kinds never generated (the
//!   kinds are [`KINDS`]).
//! - `GIT_CHECKPOINT_MODEL_KEEP_GOING=1`: report every failing sequence (shrunk to a
//!   minimal one when `GIT_CHECKPOINT_MODEL_SHRINK=1`) and go on; fail at the end.
//!
//! CI runs the default; a long run by hand: `GIT_CHECKPOINT_MODEL_SEED=random
//! GIT_CHECKPOINT_MODEL_OPS=5000 GIT_CHECKPOINT_MODEL_KEEP_GOING=1
//! GIT_CHECKPOINT_MODEL_SHRINK=1 cargo test --test it model_based -- --nocapture`.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{OsStr, OsString};
use std::fmt::Write as _;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::Instant;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use common::{Node, Out, Repo, Snap};

/// Files larger than this are skipped by a save (`checkpoint.maxFileSize`).
const MAX_FILE_SIZE: usize = 64 * 1024;

/// Paths the edits write: files that become directories and back (`d1`, `d1/sub`,
/// `x y`), names that are not UTF-8, names the ignore rules below match.
const PATHS: &[&[u8]] = &[
    b"a.txt",
    b"b.log",
    b"run.sh",
    b"d1",
    b"d1/f",
    b"d1/g.log",
    b"d1/sub",
    b"d1/sub/h",
    b"d2/k.tmp",
    b"d2/m",
    b"x y",
    b"x y/n.txt",
    b"caf\xe9.txt",
    b"d1/caf\xe9/q",
    b"e/ign/z",
    b"build.log",
    b"d1/sub/h2.tmp",
];

/// Where symlinks point: inside, a directory, outside the worktree, nowhere.
const LINK_TARGETS: &[&[u8]] = &[
    b"a.txt",
    b"d1",
    b"x y",
    b"../outside",
    b"nonexistent",
    b"d1/f",
];

/// Ignore files the rules go into.
const IGNORE_FILES: &[&[u8]] = &[b".gitignore", b"d1/.gitignore", b".git/info/exclude"];

/// Rules added and removed.
const RULES: &[&[u8]] = &[
    b"*.log", b"*.tmp", b"d2", b"sub/", b"x y", b"b*", b"!b.log", b"/a.txt", b"caf*", b"e/ign",
    b"*.bin", b"d1", b"h*",
];

/// Rules that only the kinds `ignore-nonutf8`, `ignore-bang` and `ignore-nul` add.
const RULES_NON_UTF8: &[&[u8]] = &[b"# r\xe9sum\xe9", b"r\xe9sum\xe9*"];
const RULES_BANG: &[&[u8]] = &[b"!"];
/// git reads a rule up to its first NUL byte (`d1`, `x y`, `*.txt`).
const RULES_NUL: &[&[u8]] = &[b"d1\x00x", b"x y\x00z", b"*.txt\x00.bak"];

/// Every operation kind, as `GIT_CHECKPOINT_MODEL_EXCLUDE` names them, with how often it
/// is drawn: edits dominate, then saves and restores.
const KINDS: &[(&str, u32)] = &[
    ("write", 30),
    ("delete", 8),
    ("symlink", 5),
    ("chmod", 3),
    ("big", 3),
    ("ignore", 8),
    ("ignore-nonutf8", 1),
    ("ignore-bang", 1),
    ("ignore-nul", 1),
    ("save", 14),
    ("watch", 2),
    ("restore", 5),
    ("restore-no-save", 3),
    ("path-restore", 3),
    ("path-restore-no-save", 3),
    ("fork", 2),
    ("switch", 2),
    ("drop", 2),
    ("gc", 1),
];

/// One step of a sequence. Indices are taken modulo what exists when the step runs, so
/// any subsequence of a sequence is a sequence too (which shrinking relies on).
#[derive(Clone, Debug)]
enum Op {
    /// Writes a small file at `PATHS[path]` (whatever was there, or at a parent, goes).
    Write {
        path: usize,
        content: u8,
        exec: bool,
    },
    /// Removes whatever is at `PATHS[path]` or, with `parent`, its top directory.
    Delete { path: usize, parent: bool },
    /// Makes `PATHS[path]` a symlink to `LINK_TARGETS[target]`.
    Symlink { path: usize, target: usize },
    /// Flips the executable bit of the file at `PATHS[path]`.
    Chmod { path: usize },
    /// Writes a file over `checkpoint.maxFileSize` at `PATHS[path]`.
    Big { path: usize, extra: u8 },
    /// Adds `rule` to the ignore file `IGNORE_FILES[file]` (at its top with `top`).
    IgnoreAdd {
        kind: &'static str,
        file: usize,
        rule: Vec<u8>,
        top: bool,
    },
    /// Removes the `line`-th line of `IGNORE_FILES[file]`.
    IgnoreRemove { file: usize, line: usize },
    /// `git checkpoint save`.
    Save,
    /// Starts the watcher, or stops it when it runs.
    Watch,
    /// `restore <checkpoint number target>`, perhaps `--no-save`, perhaps limited to
    /// `PATHS[p]` (a directory when `p`'s path has one) for each `p` of `paths`.
    Restore {
        target: usize,
        no_save: bool,
        paths: Vec<(usize, bool)>,
    },
    /// `fork <checkpoint number target> -b m<n>`.
    Fork { target: usize },
    /// `switch <branch number branch>`.
    Switch { branch: usize },
    /// `drop <checkpoint number target>`.
    Drop { target: usize },
    /// `gc --keep <keep>`, then a second `gc` and `verify`.
    Gc { keep: usize },
}

impl Op {
    fn kind(&self) -> &'static str {
        match self {
            Op::Write { .. } => "write",
            Op::Delete { .. } => "delete",
            Op::Symlink { .. } => "symlink",
            Op::Chmod { .. } => "chmod",
            Op::Big { .. } => "big",
            Op::IgnoreAdd { kind, .. } => kind,
            Op::IgnoreRemove { .. } => "ignore",
            Op::Save => "save",
            Op::Watch => "watch",
            Op::Restore { no_save, paths, .. } => match (paths.is_empty(), no_save) {
                (true, false) => "restore",
                (true, true) => "restore-no-save",
                (false, false) => "path-restore",
                (false, true) => "path-restore-no-save",
            },
            Op::Fork { .. } => "fork",
            Op::Switch { .. } => "switch",
            Op::Drop { .. } => "drop",
            Op::Gc { .. } => "gc",
        }
    }
}

/// Draws one operation of a kind not in `excluded`.
fn random_op(rng: &mut StdRng, excluded: &BTreeSet<String>) -> Op {
    let allowed: Vec<_> = KINDS
        .iter()
        .filter(|(k, _)| !excluded.contains(*k))
        .collect();
    assert!(!allowed.is_empty(), "every operation kind is excluded");
    let total: u32 = allowed.iter().map(|(_, w)| w).sum();
    let mut pick = rng.random_range(0..total);
    let kind = allowed
        .iter()
        .find(|(_, w)| {
            if pick < *w {
                true
            } else {
                pick -= w;
                false
            }
        })
        .map(|(k, _)| *k)
        .unwrap_or("write");
    let path = rng.random_range(0..PATHS.len());
    let target = rng.random_range(0..1000);
    match kind {
        "write" => Op::Write {
            path,
            content: rng.random_range(0..4),
            exec: rng.random_bool(0.2),
        },
        "delete" => Op::Delete {
            path,
            parent: rng.random_bool(0.3),
        },
        "symlink" => Op::Symlink {
            path,
            target: rng.random_range(0..LINK_TARGETS.len()),
        },
        "chmod" => Op::Chmod { path },
        "big" => Op::Big {
            path,
            extra: rng.random_range(0..3),
        },
        "ignore" if rng.random_bool(0.35) => Op::IgnoreRemove {
            file: rng.random_range(0..IGNORE_FILES.len()),
            line: rng.random_range(0..8),
        },
        "ignore" | "ignore-nonutf8" | "ignore-bang" | "ignore-nul" => {
            let pool = match kind {
                "ignore" => RULES,
                "ignore-nonutf8" => RULES_NON_UTF8,
                "ignore-bang" => RULES_BANG,
                _ => RULES_NUL,
            };
            Op::IgnoreAdd {
                kind,
                file: rng.random_range(0..IGNORE_FILES.len()),
                rule: pool[rng.random_range(0..pool.len())].to_vec(),
                top: rng.random_bool(0.5),
            }
        }
        "save" => Op::Save,
        "watch" => Op::Watch,
        "restore" | "restore-no-save" | "path-restore" | "path-restore-no-save" => {
            let paths = if kind.starts_with("path") {
                (0..rng.random_range(1..=2))
                    .map(|_| (rng.random_range(0..PATHS.len()), rng.random_bool(0.3)))
                    .collect()
            } else {
                Vec::new()
            };
            Op::Restore {
                target,
                no_save: kind.ends_with("no-save"),
                paths,
            }
        }
        "fork" => Op::Fork { target },
        "switch" => Op::Switch { branch: target },
        "drop" => Op::Drop { target },
        _ => Op::Gc {
            keep: rng.random_range(1..5),
        },
    }
}

/// A path or text for a bash command line (`$'…'` with escapes where needed).
fn sh(bytes: &[u8]) -> String {
    let plain = !bytes.is_empty()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || b"./_-@:".contains(b));
    if plain {
        return String::from_utf8_lossy(bytes).into_owned();
    }
    let mut s = String::from("$'");
    for &b in bytes {
        match b {
            b'\'' => s.push_str("\\'"),
            b'\\' => s.push_str("\\\\"),
            b'\n' => s.push_str("\\n"),
            0x20..=0x7e => s.push(b as char),
            _ => {
                let _ = write!(s, "\\x{b:02x}");
            }
        }
    }
    s.push('\'');
    s
}

/// A `printf` format that prints exactly `bytes` (NUL bytes included).
fn printf_of(bytes: &[u8]) -> String {
    let mut s = String::from("printf '");
    for &b in bytes {
        match b {
            b'\'' => s.push_str("'\\''"),
            b'\\' => s.push_str("\\\\"),
            b'%' => s.push_str("%%"),
            b'\n' => s.push_str("\\n"),
            0x20..=0x7e => s.push(b as char),
            _ => {
                let _ = write!(s, "\\{b:03o}");
            }
        }
    }
    s.push('\'');
    s
}

/// The path `PATHS[path]` or, with `dir`, its directory when it has one.
fn pick_path(path: usize, dir: bool) -> Vec<u8> {
    let p = PATHS[path % PATHS.len()];
    if dir {
        if let Some(slash) = p.iter().rposition(|&b| b == b'/') {
            return p[..slash].to_vec();
        }
    }
    p.to_vec()
}

fn content_of(variant: u8) -> Vec<u8> {
    format!("v{variant}\n").into_bytes()
}

/// A checkpoint of the model: exactly what `git add -A` saw, and the files too large.
#[derive(Clone, Debug)]
struct Cp {
    id: String,
    tree: Snap,
    skipped: BTreeSet<Vec<u8>>,
    parent: Option<String>,
}

/// What the store should hold: checkpoints in the order they were made, branches, HEAD.
#[derive(Default)]
struct Model {
    cps: Vec<Cp>,
    branches: BTreeMap<String, String>,
    head: String,
    forks: usize,
}

impl Model {
    fn get(&self, id: &str) -> &Cp {
        self.cps
            .iter()
            .find(|c| c.id == id)
            .unwrap_or_else(|| panic!("the model has no checkpoint {id}"))
    }

    fn tip(&self) -> Option<&Cp> {
        self.branches.get(&self.head).map(|id| self.get(id))
    }

    fn pick(&self, n: usize) -> Option<String> {
        if self.cps.is_empty() {
            None
        } else {
            Some(self.cps[n % self.cps.len()].id.clone())
        }
    }

    /// Adds a checkpoint the tool made from `capture`, child of the current tip.
    fn add(&mut self, id: &str, capture: &Capture) {
        let parent = self.tip().map(|c| c.id.clone());
        self.cps.push(Cp {
            id: id.to_string(),
            tree: capture.tree.clone(),
            skipped: capture.skipped.clone(),
            parent,
        });
    }

    /// Removes `gone`: children re-linked to the nearest ancestor that stays, branches
    /// whose tip goes moved back there. `None` when a branch would be left empty.
    fn remove(&self, gone: &BTreeSet<String>) -> Option<Model> {
        let stays = |id: &Option<String>| -> Option<String> {
            let mut at = id.clone();
            while let Some(id) = at {
                if !gone.contains(&id) {
                    return Some(id);
                }
                at = self.get(&id).parent.clone();
            }
            None
        };
        let mut branches = BTreeMap::new();
        for (name, tip) in &self.branches {
            branches.insert(name.clone(), stays(&Some(tip.clone()))?);
        }
        let cps = self
            .cps
            .iter()
            .filter(|c| !gone.contains(&c.id))
            .map(|c| Cp {
                parent: stays(&c.parent),
                ..c.clone()
            })
            .collect();
        Some(Model {
            cps,
            branches,
            head: self.head.clone(),
            forks: self.forks,
        })
    }
}

/// What `git add -A` would see now, per git itself.
#[derive(Clone, Debug, PartialEq)]
struct Capture {
    tree: Snap,
    skipped: BTreeSet<Vec<u8>>,
}

/// Whether every proper ancestor of `rel` below `root` is a real directory.
fn parents_are_dirs(root: &Path, rel: &[u8]) -> bool {
    let mut at = 0;
    while let Some(i) = rel[at..].iter().position(|&b| b == b'/') {
        let prefix = &rel[..at + i];
        match std::fs::symlink_metadata(root.join(OsStr::from_bytes(prefix))) {
            Ok(m) if m.file_type().is_dir() => {}
            _ => return false,
        }
        at += i + 1;
    }
    true
}

fn capture(repo: &Repo) -> Capture {
    let listed = common::run_cmd(
        repo.sb.git_cmd(
            &repo.dir,
            &[
                "ls-files",
                "-z",
                "--cached",
                "--others",
                "--exclude-standard",
            ],
        ),
        common::DEFAULT_TIMEOUT,
    );
    assert_eq!(listed.code, 0, "git ls-files\n{listed}");
    let mut tree = Snap::new();
    let mut skipped = BTreeSet::new();
    for rel in listed
        .stdout_raw
        .split(|&b| b == 0)
        .filter(|p| !p.is_empty())
    {
        if !parents_are_dirs(&repo.dir, rel) {
            continue;
        }
        let full = repo.dir.join(OsStr::from_bytes(rel));
        let Ok(meta) = std::fs::symlink_metadata(&full) else {
            continue;
        };
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&full).unwrap();
            tree.insert(
                rel.to_vec(),
                Node::Link(target.as_os_str().as_bytes().to_vec()),
            );
        } else if meta.file_type().is_file() {
            if meta.len() > MAX_FILE_SIZE as u64 {
                skipped.insert(rel.to_vec());
            } else {
                let data = std::fs::read(&full).unwrap();
                tree.insert(
                    rel.to_vec(),
                    Node::File {
                        data,
                        exec: meta.mode() & 0o111 != 0,
                    },
                );
            }
        }
    }
    Capture { tree, skipped }
}

/// The files and symlinks of the worktree (directories are not captured).
fn leaves(repo: &Repo) -> Snap {
    repo.snapshot()
        .into_iter()
        .filter(|(_, n)| n.is_captured_kind())
        .collect()
}

/// Whether `path` is one of `filter` or below one (no filter: everything).
fn covers(filter: &[Vec<u8>], path: &[u8]) -> bool {
    filter.is_empty()
        || filter
            .iter()
            .any(|p| path.starts_with(p) && (path.len() == p.len() || path[p.len()] == b'/'))
}

/// What a restore of `target` (limited to `filter`) should leave, or `None` when a
/// file no checkpoint holds is in the way, so that the restore must be refused.
fn expected_restore(
    now: &Snap,
    captured: &Capture,
    target: &Cp,
    filter: &[Vec<u8>],
) -> Option<Snap> {
    // Never written nor deleted: files that are not captured now (ignored, too large)
    // and files the target skipped.
    let spared = |p: &[u8]| {
        !captured.tree.contains_key(p) || captured.skipped.contains(p) || target.skipped.contains(p)
    };
    let mut expected = Snap::new();
    for (p, n) in now {
        if !covers(filter, p) || spared(p) {
            expected.insert(p.clone(), n.clone());
        }
    }
    for (p, n) in &target.tree {
        if !covers(filter, p) {
            continue;
        }
        match expected.get(p) {
            Some(_) if captured.skipped.contains(p) || target.skipped.contains(p) => {}
            // An ignored file the restore would have to overwrite, unless it already
            // holds exactly what the target has.
            Some(there) if there != n => return None,
            Some(_) => {}
            None => {
                expected.insert(p.clone(), n.clone());
            }
        }
    }
    // A file kept where the result needs a directory.
    for p in expected.keys() {
        for (i, &b) in p.iter().enumerate() {
            if b == b'/' && expected.contains_key(&p[..i]) {
                return None;
            }
        }
    }
    Some(expected)
}

/// Names the files no checkpoint holds that the target has byte for byte, which a
/// restore has no reason to refuse.
fn identical_in_the_way(now: &Snap, captured: &Capture, target: &Cp, filter: &[Vec<u8>]) -> String {
    let same: Vec<String> = now
        .iter()
        .filter(|(p, n)| {
            covers(filter, p) && !captured.tree.contains_key(*p) && target.tree.get(*p) == Some(n)
        })
        .map(|(p, _)| common::show_path(p))
        .collect();
    if same.is_empty() {
        String::new()
    } else {
        format!(
            " (not captured now, but identical in the target: {})",
            same.join(", ")
        )
    }
}

fn show_snap(s: &Snap) -> String {
    s.iter()
        .map(|(p, n)| format!("  {}: {n:?}", common::show_path(p)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The paths whose entries differ between two trees, lossy UTF-8 as JSON prints them.
fn changed_paths(a: &Snap, b: &Snap) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (p, n) in a {
        if b.get(p) != Some(n) {
            out.insert(String::from_utf8_lossy(p).into_owned());
        }
    }
    for p in b.keys() {
        if !a.contains_key(p) {
            out.insert(String::from_utf8_lossy(p).into_owned());
        }
    }
    out
}

/// A discrepancy between the tool and the model.
type Failure = String;

/// One sequence running against its own repository.
struct Case {
    repo: Repo,
    model: Model,
    watcher: Option<u32>,
    log: Vec<String>,
    outside: Snap,
    /// The output of the last command, for a failure found after it.
    last: Option<Out>,
}

impl Drop for Case {
    fn drop(&mut self) {
        if let Some(pid) = self.watcher.take() {
            let _ = self.repo.run(&["watch", "--stop"]);
            let _ = std::process::Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .stderr(std::process::Stdio::null())
                .status();
        }
    }
}

fn clone_out(out: &Out) -> Out {
    Out {
        code: out.code,
        signal: out.signal,
        stdout: out.stdout.clone(),
        stderr: out.stderr.clone(),
        stdout_raw: out.stdout_raw.clone(),
        started: out.started,
        finished: out.finished,
    }
}

fn args_os(args: &[&[u8]]) -> Vec<OsString> {
    args.iter()
        .map(|a| OsStr::from_bytes(a).to_os_string())
        .collect()
}

macro_rules! ensure {
    ($cond:expr, $($fmt:tt)*) => {
        if !$cond {
            return Err(format!($($fmt)*));
        }
    };
}

impl Case {
    fn new() -> Case {
        let repo = Repo::new();
        repo.git(&["config", "checkpoint.maxFileSize", "64k"]);
        // A few tracked files, one of them matched by the ignore rules later.
        repo.write("a.txt", b"tracked\n");
        repo.write("b.log", b"tracked log\n");
        repo.write("d1/f", b"tracked f\n");
        repo.git(&["add", "-A"]);
        repo.git(&["commit", "-q", "-m", "start"]);
        std::fs::write(repo.git_dir().join("info/exclude"), b"").unwrap();
        let outside = repo.scratch("outside");
        std::fs::write(outside.join("keep.txt"), b"outside the worktree\n").unwrap();
        let outside = common::snapshot(&outside, false);
        Case {
            repo,
            model: Model {
                head: "main".into(),
                ..Model::default()
            },
            watcher: None,
            log: vec![
                "git init -q -b main repo && cd repo && git config checkpoint.maxFileSize 64k"
                    .into(),
                "mkdir d1 ../outside; echo tracked > a.txt; echo tracked log > b.log; echo tracked f > d1/f; echo outside the worktree > ../outside/keep.txt; git add -A; git commit -qm start; : > .git/info/exclude".into(),
            ],
            outside,
            last: None,
        }
    }

    fn p(&self, rel: &[u8]) -> std::path::PathBuf {
        self.repo.dir.join(OsStr::from_bytes(rel))
    }

    fn run(&mut self, args: &[&[u8]]) -> Out {
        let shown: Vec<String> = args.iter().map(|a| sh(a)).collect();
        self.log.push(format!("git checkpoint {}", shown.join(" ")));
        let out = self.repo.run(&args_os(args));
        // The ids a command printed, so that the steps can be followed by hand.
        if let Ok(v) = serde_json::from_str::<serde_json::Value>(out.stdout.trim()) {
            let made: Vec<&str> = ["id", "safety_checkpoint"]
                .iter()
                .filter_map(|k| v.get(*k).and_then(|x| x.as_str()))
                .collect();
            if !made.is_empty() {
                if let Some(line) = self.log.last_mut() {
                    let _ = write!(line, "    # made {}", made.join(", "));
                }
            }
        }
        if out.code != 0 {
            if let Some(line) = self.log.last_mut() {
                let _ = write!(
                    line,
                    "    # exit {}: {}",
                    out.code,
                    out.stderr.lines().next().unwrap_or("")
                );
            }
        }
        self.last = Some(clone_out(&out));
        out
    }

    /// Removes whatever is at `rel` and every non-directory at its parents, then
    /// creates the parents.
    fn clear_for(&self, rel: &[u8]) {
        for (i, &b) in rel.iter().enumerate() {
            if b == b'/' {
                let parent = self.p(&rel[..i]);
                if std::fs::symlink_metadata(&parent).is_ok_and(|m| !m.is_dir()) {
                    std::fs::remove_file(&parent).unwrap();
                }
            }
        }
        common::remove_any(&self.p(rel));
        if let Some(parent) = self.p(rel).parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
    }

    /// Applies an edit to the worktree; `Ok(false)` when it did not apply.
    fn edit(&mut self, op: &Op) -> bool {
        match op {
            Op::Write {
                path,
                content,
                exec,
            } => {
                let rel = pick_path(*path, false);
                self.clear_for(&rel);
                common::write_file(&self.p(&rel), &content_of(*content), *exec);
                self.log.push(format!(
                    "rm -rf {0}; mkdir -p \"$(dirname {0})\"; printf 'v{content}\\n' > {0}; chmod {1} {0}",
                    sh(&rel),
                    if *exec { 755 } else { 644 }
                ));
            }
            Op::Big { path, extra } => {
                let rel = pick_path(*path, false);
                self.clear_for(&rel);
                let len = MAX_FILE_SIZE + 30_000 + usize::from(*extra);
                common::write_file(&self.p(&rel), &vec![b'B'; len], false);
                self.log.push(format!(
                    "rm -rf {0}; mkdir -p \"$(dirname {0})\"; head -c {len} /dev/zero | tr '\\0' B > {0}",
                    sh(&rel)
                ));
            }
            Op::Delete { path, parent } => {
                let rel = pick_path(*path, false);
                let rel = if *parent {
                    rel.split(|&b| b == b'/').next().unwrap_or(&rel).to_vec()
                } else {
                    rel
                };
                if std::fs::symlink_metadata(self.p(&rel)).is_err() {
                    return false;
                }
                common::remove_any(&self.p(&rel));
                self.log.push(format!("rm -rf {}", sh(&rel)));
            }
            Op::Symlink { path, target } => {
                let rel = pick_path(*path, false);
                let to = LINK_TARGETS[target % LINK_TARGETS.len()];
                self.clear_for(&rel);
                std::os::unix::fs::symlink(OsStr::from_bytes(to), self.p(&rel)).unwrap();
                self.log.push(format!(
                    "rm -rf {0}; mkdir -p \"$(dirname {0})\"; ln -s {1} {0}",
                    sh(&rel),
                    sh(to)
                ));
            }
            Op::Chmod { path } => {
                let rel = pick_path(*path, false);
                let full = self.p(&rel);
                let Ok(meta) = std::fs::symlink_metadata(&full) else {
                    return false;
                };
                if !meta.is_file() {
                    return false;
                }
                let exec = meta.mode() & 0o111 == 0;
                self.repo.set_exec(OsStr::from_bytes(&rel), exec);
                self.log.push(format!(
                    "chmod {} {}",
                    if exec { 755 } else { 644 },
                    sh(&rel)
                ));
            }
            Op::IgnoreAdd {
                file, rule, top, ..
            } => {
                let rel = IGNORE_FILES[file % IGNORE_FILES.len()];
                let full = self.p(rel);
                if !parents_are_dirs(&self.repo.dir, rel)
                    || std::fs::symlink_metadata(&full).is_ok_and(|m| !m.is_file())
                {
                    return false;
                }
                let mut text = std::fs::read(&full).unwrap_or_default();
                if !text.is_empty() && !text.ends_with(b"\n") {
                    text.push(b'\n');
                }
                let mut line = rule.clone();
                line.push(b'\n');
                if *top {
                    line.extend_from_slice(&text);
                    text = line;
                } else {
                    text.extend_from_slice(&line);
                }
                std::fs::write(&full, &text).unwrap();
                self.log.push(format!("{} > {}", printf_of(&text), sh(rel)));
            }
            Op::IgnoreRemove { file, line } => {
                let rel = IGNORE_FILES[file % IGNORE_FILES.len()];
                let full = self.p(rel);
                if !std::fs::symlink_metadata(&full).is_ok_and(|m| m.is_file()) {
                    return false;
                }
                let text = std::fs::read(&full).unwrap();
                let mut lines: Vec<&[u8]> = text.split(|&b| b == b'\n').collect();
                if lines.last() == Some(&&b""[..]) {
                    lines.pop();
                }
                if lines.is_empty() {
                    return false;
                }
                lines.remove(line % lines.len());
                let mut out = Vec::new();
                for l in lines {
                    out.extend_from_slice(l);
                    out.push(b'\n');
                }
                std::fs::write(&full, &out).unwrap();
                self.log.push(format!("{} > {}", printf_of(&out), sh(rel)));
            }
            _ => unreachable!("not an edit: {op:?}"),
        }
        true
    }

    /// Checks that the store holds exactly the model's checkpoints, branches and HEAD,
    /// that no restore is left interrupted, and that nothing outside changed.
    fn check_store(&mut self) -> Result<(), Failure> {
        let outside = common::snapshot(&self.repo.sb.root.join("outside"), false);
        ensure!(
            outside == self.outside,
            "the directory outside the worktree changed:\n{}",
            common::snap_diff(&self.outside, &outside).join("\n")
        );
        let status = self.repo.run(&["status", "--json"]);
        ensure!(status.code == 0, "status failed\n{status}");
        let status = common::parse_json(&status, "status");
        ensure!(
            status["interrupted_restore"].is_null(),
            "status reports an interrupted restore: {status}"
        );
        if self.model.cps.is_empty() {
            return Ok(());
        }
        let log = self.repo.run(&["log", "--all", "--json"]);
        ensure!(log.code == 0, "log --all failed\n{log}");
        let listed: BTreeSet<String> = common::parse_json(&log, "log")
            .as_array()
            .unwrap()
            .iter()
            .filter_map(common::id_of)
            .collect();
        let modelled: BTreeSet<String> = self.model.cps.iter().map(|c| c.id.clone()).collect();
        ensure!(
            listed == modelled,
            "the store's checkpoints differ from the model's:\n  only in the store: {:?}\n  only in the model: {:?}",
            listed.difference(&modelled).collect::<Vec<_>>(),
            modelled.difference(&listed).collect::<Vec<_>>()
        );
        let branches = self.repo.json_of(&["branch"]);
        let mut found = BTreeMap::new();
        let mut head = None;
        for b in branches.as_array().unwrap() {
            let name = b["name"].as_str().unwrap().to_string();
            if b["current"].as_bool() == Some(true) {
                head = Some(name.clone());
            }
            found.insert(name, b["id"].as_str().unwrap().to_string());
        }
        ensure!(
            found == self.model.branches && head.as_deref() == Some(self.model.head.as_str()),
            "branches differ from the model's:\n  store: {found:?}, HEAD {head:?}\n  model: {:?}, HEAD {}",
            self.model.branches,
            self.model.head
        );
        Ok(())
    }

    /// Checks a checkpoint the tool just made against the model's copy: its file count
    /// and skipped files, and its tree through `diff <parent> <id>`.
    fn check_checkpoint(&mut self, id: &str) -> Result<(), Failure> {
        let cp = self.model.get(id).clone();
        let show = self.repo.json_of(&["show", id]);
        let files = show["files"].as_u64();
        ensure!(
            files == Some(cp.tree.len() as u64),
            "checkpoint {id} holds {files:?} files, the model {}:\n{}",
            cp.tree.len(),
            show_snap(&cp.tree)
        );
        let skipped: BTreeSet<String> = show["skipped"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["path"].as_str().unwrap().to_string())
            .collect();
        let expected: BTreeSet<String> = cp
            .skipped
            .iter()
            .map(|p| String::from_utf8_lossy(p).into_owned())
            .collect();
        ensure!(
            skipped == expected,
            "checkpoint {id} records skipped {skipped:?}, the model {expected:?}"
        );
        let Some(parent) = cp.parent else {
            return Ok(());
        };
        let base = self.model.get(&parent).tree.clone();
        let diff = self.repo.json_of(&["diff", &parent, id]);
        let listed: BTreeSet<String> = diff["changes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["path"].as_str().unwrap().to_string())
            .collect();
        let expected = changed_paths(&base, &cp.tree);
        ensure!(
            listed == expected,
            "diff {parent} {id} lists {listed:?}, the model {expected:?}\nmodel tree:\n{}",
            show_snap(&cp.tree)
        );
        Ok(())
    }

    /// `save` (with the watcher if it runs): a checkpoint exactly when the capture
    /// differs from the tip.
    fn save(&mut self) -> Result<(), Failure> {
        let captured = capture(&self.repo);
        let out = self.run(&[b"save", b"--json"]);
        ensure!(out.code == 0, "save failed\n{out}");
        let v = common::parse_json(&out, "save");
        let tip = self.model.tip().cloned();
        match common::id_of(&v) {
            Some(id) => {
                if let Some(tip) = &tip {
                    ensure!(
                        tip.tree != captured.tree,
                        "save made checkpoint {id} although nothing changed since {}",
                        tip.id
                    );
                }
                self.model.add(&id, &captured);
                self.model
                    .branches
                    .insert(self.model.head.clone(), id.clone());
                self.check_checkpoint(&id)?;
            }
            None => {
                let tip_tree = tip.as_ref().map(|t| t.tree.clone()).unwrap_or_default();
                ensure!(
                    tip_tree == captured.tree,
                    "save said nothing changed, but what git add -A sees differs from the tip:\n{}",
                    common::snap_diff(&tip_tree, &captured.tree).join("\n")
                );
            }
        }
        Ok(())
    }

    fn watch(&mut self) -> Result<(), Failure> {
        match self.watcher.take() {
            Some(_) => {
                let out = self.run(&[b"watch", b"--stop"]);
                ensure!(out.code == 0, "watch --stop failed\n{out}");
            }
            None => {
                let out = self.run(&[b"watch", b"--daemon"]);
                ensure!(out.code == 0, "watch --daemon failed\n{out}");
                let pid = std::fs::read_to_string(self.repo.git_dir().join("checkpoint/watch/pid"))
                    .ok()
                    .and_then(|s| s.trim().parse().ok());
                ensure!(pid.is_some(), "watch --daemon left no pid file\n{out}");
                self.watcher = pid;
            }
        }
        Ok(())
    }

    /// A restore, fork or switch: `args` run once with `--dry-run` and once for real;
    /// `target` is what it restores and `filter` the paths it covers. Returns the
    /// safety checkpoint, if the tool made one and the restore went through.
    fn restore_like(
        &mut self,
        args: &[&[u8]],
        no_save: bool,
        target_of: impl Fn(&Model, Option<&str>) -> String,
        filter: &[Vec<u8>],
    ) -> Result<(bool, Option<String>), Failure> {
        let before_leaves = leaves(&self.repo);
        let captured = capture(&self.repo);
        let before_model_ids: BTreeSet<String> =
            self.model.cps.iter().map(|c| c.id.clone()).collect();
        let tip = self.model.tip().cloned();
        let will_save = !no_save && tip.as_ref().map(|t| &t.tree) != Some(&captured.tree);

        // Only `restore` has a dry run; it must refuse exactly when the restore does.
        let dry = if args[0] == b"restore" {
            let mut dry: Vec<&[u8]> = args.to_vec();
            dry.insert(1, b"--dry-run");
            let dry = self.run(&dry);
            if no_save {
                ensure!(
                    !dry.stdout.contains("Would first save")
                        && !dry.stderr.contains("Would first save"),
                    "a --no-save dry run says it would save first\n{dry}"
                );
            }
            ensure!(
                leaves(&self.repo) == before_leaves,
                "a dry run changed the worktree:\n{}",
                common::snap_diff(&before_leaves, &leaves(&self.repo)).join("\n")
            );
            Some(dry)
        } else {
            None
        };
        let mut real: Vec<&[u8]> = args.to_vec();
        real.insert(1, b"--json");
        let out = self.run(&real);
        let after = leaves(&self.repo);
        if let Some(dry) = dry {
            ensure!(
                dry.code == out.code,
                "the dry run exited {} and the restore {}\n--- dry run ---\n{dry}\n--- restore ---\n{out}",
                dry.code,
                out.code
            );
        }
        // A safety checkpoint may be made (whether the restore goes through or not): it
        // holds what was captured, as a child of the tip.
        let log = self.repo.log_ids(true);
        let new: Vec<String> = log
            .into_iter()
            .filter(|id| !before_model_ids.contains(id))
            .collect();
        ensure!(
            new.len() <= usize::from(will_save),
            "the restore made checkpoints {new:?} (expected {} safety checkpoint)",
            usize::from(will_save)
        );
        let safety = new.first().cloned();
        if let Some(id) = &safety {
            self.model.add(id, &captured);
        }
        let target = target_of(&self.model, safety.as_deref());
        let target_cp = self.model.get(&target).clone();
        let expected = expected_restore(&before_leaves, &captured, &target_cp, filter);
        if out.code != 0 {
            ensure!(
                out.code == 1 && out.stderr.starts_with("error: "),
                "the restore failed oddly\n{out}"
            );
            ensure!(
                after == before_leaves,
                "a refused restore changed the worktree:\n{}\n{out}",
                common::snap_diff(&before_leaves, &after).join("\n")
            );
            ensure!(
                expected.is_none(),
                "the restore was refused, but nothing that no checkpoint holds is in the way{}\n{out}",
                identical_in_the_way(&before_leaves, &captured, &target_cp, filter)
            );
            if let Some(id) = &safety {
                // A refused restore leaves the safety checkpoint as an unnamed head.
                self.check_checkpoint(id)?;
            }
            return Ok((false, None));
        }
        let v = common::parse_json(&out, "restore");
        let reported = v["safety_checkpoint"].as_str().map(str::to_string);
        ensure!(
            reported == safety,
            "the restore reports safety checkpoint {reported:?}, the store gained {safety:?}"
        );
        // A restore that changes no file has nothing to undo: it keeps no safety
        // checkpoint, even where the worktree differs from the tip. (fork and switch
        // keep theirs: it is where their branch starts.)
        let changed_files = ["written", "deleted"]
            .iter()
            .any(|key| v[key].as_array().is_some_and(|list| !list.is_empty()));
        let discarded = args[0] == b"restore" && !changed_files;
        ensure!(
            (will_save && !discarded) == safety.is_some(),
            "will_save {will_save}, files changed {changed_files}, but safety checkpoint {safety:?}\n{out}"
        );
        let Some(expected) = expected else {
            return Err(format!(
                "the restore went through although a file no checkpoint holds was in the way; worktree now:\n{}\n{out}",
                show_snap(&after)
            ));
        };
        ensure!(
            after == expected,
            "the worktree after restoring {target} differs from the model ({} entries):\n{}\nbefore:\n{}\ntarget:\n{}\n{out}",
            common::snap_diff(&expected, &after).len(),
            common::snap_diff(&expected, &after).join("\n"),
            show_snap(&before_leaves),
            show_snap(&target_cp.tree)
        );
        if let Some(id) = &safety {
            self.check_checkpoint(id)?;
        }
        Ok((true, safety))
    }

    fn restore(
        &mut self,
        target: usize,
        no_save: bool,
        paths: &[(usize, bool)],
    ) -> Result<(), Failure> {
        let Some(id) = self.model.pick(target) else {
            return Ok(());
        };
        let mut filter: Vec<Vec<u8>> = paths.iter().map(|(p, d)| pick_path(*p, *d)).collect();
        filter.sort();
        filter.dedup();
        let mut args: Vec<&[u8]> = vec![b"restore", id.as_bytes()];
        if no_save {
            args.push(b"--no-save");
        }
        if !filter.is_empty() {
            args.push(b"--");
            args.extend(filter.iter().map(Vec::as_slice));
        }
        let branches = self.model.branches.clone();
        let restored_tip = self.model.tip().map(|c| c.id.clone());
        let (done, _) = self.restore_like(&args, no_save, |_, _| id.clone(), &filter)?;
        if done && filter.is_empty() {
            self.model
                .branches
                .insert(self.model.head.clone(), id.clone());
        } else {
            // A refused or path-limited restore leaves every branch where it was.
            self.model.branches = branches;
        }
        if done && !filter.is_empty() && restored_tip.as_deref() == Some(id.as_str()) {
            // The restored paths are now as the current checkpoint has them.
            let spared = self.model.get(&id).skipped.clone();
            let status = self.repo.json_of(&["status"]);
            // A path the checkpoint holds that git ignores now is left alone by the
            // restore (ignored files are never touched) and so still shows as deleted.
            let ignored_now = |path: &str| {
                let out = common::run_cmd(
                    self.repo
                        .sb
                        .git_cmd(&self.repo.dir, &["check-ignore", "-q", "--no-index", path]),
                    common::DEFAULT_TIMEOUT,
                );
                out.code == 0
            };
            let dirty: Vec<&str> = status["changes"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|c| c["path"].as_str())
                // A file the checkpoint skipped is left as it is, so it may still differ.
                .filter(|p| covers(&filter, p.as_bytes()) && !spared.contains(p.as_bytes()))
                .filter(|p| !ignored_now(p))
                .collect();
            ensure!(
                dirty.is_empty(),
                "after restoring {:?} from the tip, status still lists {dirty:?}",
                filter
                    .iter()
                    .map(|p| String::from_utf8_lossy(p))
                    .collect::<Vec<_>>()
            );
        }
        Ok(())
    }

    fn fork(&mut self, target: usize) -> Result<(), Failure> {
        let Some(id) = self.model.pick(target) else {
            return Ok(());
        };
        self.model.forks += 1;
        let name = format!("m{}", self.model.forks);
        let branches = self.model.branches.clone();
        let head = self.model.head.clone();
        let args: Vec<&[u8]> = vec![b"fork", id.as_bytes(), b"-b", name.as_bytes()];
        let (done, safety) = self.restore_like(&args, false, |_, _| id.clone(), &[])?;
        self.model.branches = branches;
        if done {
            if let Some(s) = safety {
                // The unsaved changes are saved on the branch being left.
                self.model.branches.insert(head, s);
            }
            self.model.branches.insert(name.clone(), id.clone());
            self.model.head = name;
        }
        Ok(())
    }

    fn switch(&mut self, branch: usize) -> Result<(), Failure> {
        if self.model.branches.is_empty() {
            return Ok(());
        }
        let names: Vec<String> = self.model.branches.keys().cloned().collect();
        let name = names[branch % names.len()].clone();
        let branches = self.model.branches.clone();
        let head = self.model.head.clone();
        let args: Vec<&[u8]> = vec![b"switch", name.as_bytes()];
        let target_name = name.clone();
        let left = head.clone();
        let (done, safety) = self.restore_like(
            &args,
            false,
            move |m, safety| match safety {
                Some(s) if target_name == left => s.to_string(),
                _ => m.branches[&target_name].clone(),
            },
            &[],
        )?;
        self.model.branches = branches;
        if done {
            if let Some(s) = safety {
                self.model.branches.insert(head, s);
            }
            self.model.head = name;
        }
        Ok(())
    }

    fn drop_checkpoint(&mut self, target: usize) -> Result<(), Failure> {
        let Some(id) = self.model.pick(target) else {
            return Ok(());
        };
        let before = leaves(&self.repo);
        let out = self.run(&[b"drop", id.as_bytes()]);
        let gone = BTreeSet::from([id.clone()]);
        match self.model.remove(&gone) {
            Some(next) => {
                ensure!(out.code == 0, "drop {id} failed\n{out}");
                self.model = next;
            }
            None => ensure!(
                out.code == 1,
                "drop {id} would leave a branch without a checkpoint, yet it went through\n{out}"
            ),
        }
        ensure!(
            leaves(&self.repo) == before,
            "drop changed the worktree:\n{}",
            common::snap_diff(&before, &leaves(&self.repo)).join("\n")
        );
        Ok(())
    }

    fn gc(&mut self, keep: usize) -> Result<(), Failure> {
        if self.model.cps.is_empty() {
            return Ok(());
        }
        let before = leaves(&self.repo);
        let out = self.run(&[b"gc", b"--json", b"--keep", keep.to_string().as_bytes()]);
        ensure!(out.code == 0, "gc failed\n{out}");
        let mut kept: BTreeSet<String> = self.model.branches.values().cloned().collect();
        kept.extend(self.model.cps.iter().rev().take(keep).map(|c| c.id.clone()));
        let gone: BTreeSet<String> = self
            .model
            .cps
            .iter()
            .map(|c| c.id.clone())
            .filter(|id| !kept.contains(id))
            .collect();
        self.model = self
            .model
            .remove(&gone)
            .ok_or("gc: the model lost a branch")?;
        // A second gc finds nothing left to delete, and verify no garbage.
        let again = self.run(&[b"gc", b"--json"]);
        ensure!(again.code == 0, "the second gc failed\n{again}");
        let v = common::parse_json(&again, "gc");
        ensure!(
            v["chunks_removed"].as_u64() == Some(0) && v["trees_removed"].as_u64() == Some(0),
            "a second gc deleted more: {v}"
        );
        let verify = self.run(&[b"verify", b"--json"]);
        ensure!(verify.code == 0, "verify failed after gc\n{verify}");
        let v = common::parse_json(&verify, "verify");
        ensure!(
            v["unreachable_bytes"].as_u64().unwrap_or(0) == 0,
            "verify reports garbage after two gcs: {v}"
        );
        ensure!(leaves(&self.repo) == before, "gc changed the worktree");
        Ok(())
    }

    fn step(&mut self, op: &Op) -> Result<(), Failure> {
        match op {
            Op::Save => self.save()?,
            Op::Watch => self.watch()?,
            Op::Restore {
                target,
                no_save,
                paths,
            } => self.restore(*target, *no_save, paths)?,
            Op::Fork { target } => self.fork(*target)?,
            Op::Switch { branch } => self.switch(*branch)?,
            Op::Drop { target } => self.drop_checkpoint(*target)?,
            Op::Gc { keep } => self.gc(*keep)?,
            edit => {
                // Edits change no checkpoint; the store is checked after the next
                // command, which is cheaper than after every edit.
                self.edit(edit);
                return Ok(());
            }
        }
        self.check_store().map_err(|f| match &self.last {
            Some(out) => format!("{f}\n--- the last command ---\n{out}"),
            None => f,
        })
    }
}

/// Runs `ops` in a new repository; the first discrepancy, with the step it came at.
fn run_sequence(ops: &[Op]) -> Result<(), (usize, Failure, Vec<String>)> {
    let mut case = Case::new();
    for (i, op) in ops.iter().enumerate() {
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| case.step(op)));
        let failure = match result {
            Ok(Ok(())) => continue,
            Ok(Err(f)) => f,
            Err(panic) => panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "a panic".into()),
        };
        return Err((i, failure, case.log.clone()));
    }
    // One last save, and a restore of the current checkpoint: nothing may be lost.
    let end = [
        Op::Save,
        Op::Restore {
            target: usize::MAX,
            no_save: false,
            paths: Vec::new(),
        },
    ];
    for op in &end {
        if let Err(f) = case.step(op) {
            return Err((ops.len(), f, case.log.clone()));
        }
    }
    Ok(())
}

fn generate(seed: u64, len: usize, excluded: &BTreeSet<String>) -> Vec<Op> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..len).map(|_| random_op(&mut rng, excluded)).collect()
}

/// Drops steps from a failing sequence while it still fails with a message that starts
/// the same way (its first line up to a digit or quote).
fn shrink(ops: Vec<Op>, first_line: &str) -> Vec<Op> {
    let key: String = first_line
        .chars()
        .take_while(|c| !c.is_ascii_digit() && *c != '"' && *c != '{' && *c != '[')
        .collect();
    let still_fails = |ops: &[Op]| match run_sequence(ops) {
        Err((_, f, _)) => f.starts_with(&key),
        Ok(()) => false,
    };
    let mut ops = ops;
    let mut chunk = ops.len().div_ceil(2).max(1);
    loop {
        let mut i = 0;
        let mut removed = false;
        while i < ops.len() {
            let mut candidate = ops.clone();
            candidate.drain(i..(i + chunk).min(ops.len()));
            if still_fails(&candidate) {
                ops = candidate;
                removed = true;
            } else {
                i += chunk;
            }
        }
        if chunk == 1 && !removed {
            return ops;
        }
        chunk = (chunk / 2).max(1);
    }
}

fn signature_of(line: &str) -> String {
    let mut out = String::new();
    let mut quoted = false;
    for c in line.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                if quoted {
                    out.push_str("\"…\"");
                }
            }
            _ if quoted => {}
            c if c.is_ascii_hexdigit() && c.is_ascii_digit() => {
                if !out.ends_with('#') {
                    out.push('#');
                }
            }
            c => out.push(c),
        }
    }
    // Checkpoint ids: runs of hex letters left between the digits.
    out.split(' ')
        .map(|w| {
            if w.len() > 8 && w.chars().all(|c| c == '#' || c.is_ascii_hexdigit()) {
                "<id>"
            } else {
                w
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn env_usize(name: &str, default: usize) -> usize {
    match std::env::var(name) {
        Ok(v) => v
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a number")),
        Err(_) => default,
    }
}

/// The seed CI runs with (see [`random_sequences_match_the_model`]).
const DEFAULT_SEED: u64 = 0x6769_7463_6b70_7421;

#[test]
fn random_sequences_match_the_model() {
    let seed: u64 = match std::env::var("GIT_CHECKPOINT_MODEL_SEED") {
        Ok(v) if v.trim() == "random" => rand::rng().random(),
        Ok(v) => v.trim().parse().unwrap_or_else(|_| {
            panic!("GIT_CHECKPOINT_MODEL_SEED={v:?} is neither a number nor 'random'")
        }),
        // CI runs the same sequences every time, so that its verdict is the code's, not
        // the draw's; new sequences are for the long runs by hand.
        Err(_) => DEFAULT_SEED,
    };
    let total = env_usize("GIT_CHECKPOINT_MODEL_OPS", 240);
    let per_sequence = env_usize("GIT_CHECKPOINT_MODEL_SEQ", 40).max(1);
    let excluded: BTreeSet<String> = std::env::var("GIT_CHECKPOINT_MODEL_EXCLUDE")
        .unwrap_or_default()
        .split(',')
        .map(|k| k.trim().to_string())
        .filter(|k| !k.is_empty())
        .collect();
    for k in &excluded {
        assert!(
            KINDS.iter().any(|(kind, _)| kind == k),
            "unknown operation kind {k:?}; kinds: {KINDS:?}"
        );
    }
    let keep_going = std::env::var_os("GIT_CHECKPOINT_MODEL_KEEP_GOING").is_some();
    let shrinking = std::env::var_os("GIT_CHECKPOINT_MODEL_SHRINK").is_some();
    eprintln!(
        "model-based test: GIT_CHECKPOINT_MODEL_SEED={seed} GIT_CHECKPOINT_MODEL_OPS={total} GIT_CHECKPOINT_MODEL_SEQ={per_sequence} excluded {excluded:?}"
    );
    let started = Instant::now();
    let mut failures = Vec::new();
    let mut signatures = BTreeSet::new();
    let mut done = 0;
    let mut sequence = 0u64;
    while done < total {
        let len = per_sequence.min(total - done);
        let seq_seed = seed.wrapping_add(sequence);
        sequence += 1;
        done += len;
        let ops = generate(seq_seed, len, &excluded);
        let Err((step, failure, log)) = run_sequence(&ops) else {
            continue;
        };
        let mut report = format!(
            "sequence seed {seq_seed} (replay alone: GIT_CHECKPOINT_MODEL_SEED={seq_seed} GIT_CHECKPOINT_MODEL_OPS={len} GIT_CHECKPOINT_MODEL_SEQ={len}), step {step} ({}: {:?}):\n{failure}\n--- steps run (bash) ---\n{}\n",
            ops.get(step).map_or("final save", Op::kind),
            ops.get(step),
            log.join("\n")
        );
        // Shrunk once per kind of discrepancy: its step's kind and first line, with
        // ids, numbers and quoted names left out.
        let signature = format!(
            "{} {}",
            ops.get(step).map_or("final save", Op::kind),
            signature_of(failure.lines().next().unwrap_or(""))
        );
        let _ = writeln!(report, "--- signature: {signature}");
        if shrinking && signatures.insert(signature) {
            let first = failure.lines().next().unwrap_or("").to_string();
            let small = shrink(ops[..(step + 1).min(ops.len())].to_vec(), &first);
            if let Err((step, failure, log)) = run_sequence(&small) {
                let _ = write!(
                    report,
                    "--- shrunk to {} steps, fails at step {step}: ---\n{failure}\n--- steps (bash) ---\n{}\n--- ops ---\n{small:#?}\n",
                    small.len(),
                    log.join("\n")
                );
            }
        }
        if !keep_going {
            panic!("{report}");
        }
        eprintln!("FAILURE {report}");
        failures.push(report);
    }
    let secs = started.elapsed().as_secs_f64();
    eprintln!(
        "model-based test: {done} operations in {sequence} sequences, {secs:.1} s ({:.1} operations/s), {} failing sequences",
        done as f64 / secs,
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {sequence} sequences failed:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}
