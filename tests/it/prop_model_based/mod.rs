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

macro_rules! ensure {
    ($cond:expr, $($fmt:tt)*) => {
        if !$cond {
            return Err(format!($($fmt)*));
        }
    };
}

mod case;
mod model;
mod restores;
mod undo;

use case::{Case, Failure};

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
