//! Model-based test: random sequences of worktree edits (files turned into directories
//! and back among them; hard links, in the worktree and made from outside it, written
//! through in place), ignore-rule changes (patterns that are not UTF-8 among them),
//! large files, git commands that change the index (`add -f`, `rm --cached`, `commit`, of
//! tracked and ignored files alike: the index decides what a save captures), saves with
//! and without the watcher, whole and path-limited restores (with and without `--no-save`, with paths
//! that name nothing), fork, switch, drop and gc, two agent sessions' prompts and tool
//! calls (through their hooks) with the user's edits between and during them,
//! `restore --only-session`, and `revert` of a step, a range and a turn, for all paths
//! or some (a path that matches nothing among them too), each checked against a model
//! after every step. Every dry run is compared with its real run: the
//! same exit status, the same plan.
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
//! For agent sessions the model also knows who wrote each session path (the agent's
//! tool call, or the user), which `restore --only-session` may never contradict: it
//! puts back no path whose last writer since its target is not the session. And it
//! keeps the hooks' record (prompts, tool calls, the file each names, the before-tool
//! hooks), from which it predicts what the restore puts back. A revert is predicted per
//! path from the model's trees (the change's two sides and the worktree), as
//! docs/revert.md states the merge: applied (the parent's content back), unchanged, or
//! a conflict, with what each leaves in the worktree; no other path changes. A revert
//! that wrote and left no conflict, and a `restore --only-session` that wrote, is a
//! checkpoint of its own, HEAD's branch moved to it; gc keeps the last checkpoint of a
//! kept prompt's turn, and a turn ends where it ended though gc removed the next
//! prompt's checkpoint.
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
/// `x y`), names that are not UTF-8, names the ignore rules below match, and names that
/// sort around a directory's (`d1-x/`, `d1.txt` and `d10` sort before, between and after
/// the files of `d1/` by path bytes, the order a save walks in).
const PATHS: &[&[u8]] = &[
    b"a.txt",
    b"d1.txt",
    b"d1-x/y",
    b"d10",
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
const RULES_NON_UTF8: &[&[u8]] = &[
    b"# r\xe9sum\xe9",
    b"r\xe9sum\xe9*",
    b"caf\xe9*",
    b"d1/caf\xe9",
    b"*\xe9.txt",
];
const RULES_BANG: &[&[u8]] = &[b"!"];
/// git reads a rule up to its first NUL byte (`d1`, `x y`, `*.txt`).
const RULES_NUL: &[&[u8]] = &[b"d1\x00x", b"x y\x00z", b"*.txt\x00.bak"];

/// Paths only agent sessions and the user's edits between and during their tool calls
/// write: no ignore rule above matches them, and no other edit touches them.
const SESSION_PATHS: &[&[u8]] = &[b"s/p.rs", b"s/q.rs", b"r.md"];

/// The agent sessions (Claude Code's session ids; their first 8 characters tell them
/// apart).
const SESSIONS: &[&str] = &[
    "aaaa0001-0000-4000-8000-000000000001",
    "bbbb0002-0000-4000-8000-000000000002",
];

/// Paths that `flip` turns from a file into a directory and back.
const FLIP_PATHS: &[&[u8]] = &[b"d1/sub", b"x y", b"fd"];

/// A path no edit ever makes, which a path-limited restore sometimes names.
const MISSING_PATH: &[u8] = b"no/such.c";

/// Every operation kind, as `GIT_CHECKPOINT_MODEL_EXCLUDE` names them, with how often it
/// is drawn: edits dominate, then saves and restores.
const KINDS: &[(&str, u32)] = &[
    ("write", 30),
    ("delete", 8),
    ("symlink", 5),
    ("chmod", 3),
    ("hardlink", 3),
    ("link-edit", 3),
    ("big", 3),
    ("ignore", 8),
    ("ignore-nonutf8", 1),
    ("ignore-bang", 1),
    ("ignore-nul", 1),
    ("save", 14),
    ("watch", 2),
    ("git-index", 6),
    ("restore", 5),
    ("restore-no-save", 3),
    ("path-restore", 3),
    ("path-restore-no-save", 3),
    ("fork", 2),
    ("switch", 2),
    ("drop", 2),
    ("gc", 1),
    ("flip", 4),
    ("flip-revert", 3),
    ("user-edit", 6),
    ("agent-prompt", 6),
    ("agent-edit", 10),
    ("agent-shell", 8),
    ("only-session", 8),
    ("revert-step", 6),
    ("revert-range", 3),
    ("revert-turn", 4),
    ("revert-paths", 4),
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
    /// Makes `PATHS[path]` a second name (a hard link) of the file at `PATHS[target]`.
    Hardlink { path: usize, target: usize },
    /// Writes `content` into the file at `PATHS[path]` in place, through a name of its
    /// own: in the worktree (every other link of it changes too), or with `outside`
    /// through a hard link made outside the worktree and removed again, which no event
    /// of the worktree's reports.
    LinkEdit {
        path: usize,
        content: u8,
        outside: bool,
    },
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
    /// A git command that changes the index: `git add -f`, or with `remove` `git rm
    /// --cached`, of `PATHS[path]`, then with `commit` a `git commit` (any of them may
    /// fail: the path may be missing or untracked, the index unchanged).
    GitIndex {
        path: usize,
        remove: bool,
        commit: bool,
    },
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
    /// Turns `FLIP_PATHS[path]` into a directory holding a file, or back into a file.
    Flip { path: usize, content: u8 },
    /// A flip, a save, and `revert @`: the step that turned a file into a directory (or
    /// back) undone.
    FlipRevert { path: usize, content: u8 },
    /// The user writes `SESSION_PATHS[path]`, between the agents' steps.
    UserEdit { path: usize, content: u8 },
    /// `SESSIONS[session]` gets a prompt (its `UserPromptSubmit` hook).
    AgentPrompt { session: usize },
    /// A file tool of `SESSIONS[session]` writes `SESSION_PATHS[path]`, which its
    /// `PostToolUse` names; with `user`, the user writes another session path meanwhile.
    AgentEdit {
        session: usize,
        path: usize,
        content: u8,
        user: Option<(usize, u8)>,
    },
    /// A shell command of `SESSIONS[session]` writes `writes` and names none. With
    /// `hooked_before`, a `PreToolUse` hook brackets it (the user's `user` edit comes
    /// before that hook); without, the user's edit lands while it runs.
    AgentShell {
        session: usize,
        writes: Vec<(usize, u8)>,
        hooked_before: bool,
        user: Option<(usize, u8)>,
    },
    /// `restore <session>:prompt<N> --only-session`, a dry run first.
    OnlySession { session: usize, prompt: usize },
    /// `revert` of `what`, a dry run first, with `--no-conflicts` when `strict`, limited
    /// to the paths `paths` picks among those the change touched, when it picks any
    /// (`usize::MAX`: [`MISSING_PATH`], which matches none).
    Revert {
        what: RevertOf,
        strict: bool,
        paths: Vec<(usize, bool)>,
    },
}

/// What a `revert` undoes; indices are taken modulo what exists.
#[derive(Clone, Debug)]
enum RevertOf {
    /// A checkpoint's change against its parent: `target`, or the current one (`@`,
    /// the step just made, the common case) when `None`.
    Step { target: Option<usize> },
    /// `A..B`, or `A..` (the current checkpoint) when `to` is `None`.
    Range { from: usize, to: Option<usize> },
    /// `<session>:turn<N>`.
    Turn { session: usize, prompt: usize },
}

impl Op {
    fn kind(&self) -> &'static str {
        match self {
            Op::Write { .. } => "write",
            Op::Delete { .. } => "delete",
            Op::Symlink { .. } => "symlink",
            Op::Chmod { .. } => "chmod",
            Op::Hardlink { .. } => "hardlink",
            Op::LinkEdit { .. } => "link-edit",
            Op::Big { .. } => "big",
            Op::IgnoreAdd { kind, .. } => kind,
            Op::IgnoreRemove { .. } => "ignore",
            Op::Save => "save",
            Op::Watch => "watch",
            Op::GitIndex { .. } => "git-index",
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
            Op::Flip { .. } => "flip",
            Op::FlipRevert { .. } => "flip-revert",
            Op::UserEdit { .. } => "user-edit",
            Op::AgentPrompt { .. } => "agent-prompt",
            Op::AgentEdit { .. } => "agent-edit",
            Op::AgentShell { .. } => "agent-shell",
            Op::OnlySession { .. } => "only-session",
            Op::Revert { paths, .. } if !paths.is_empty() => "revert-paths",
            Op::Revert { what, .. } => match what {
                RevertOf::Step { .. } => "revert-step",
                RevertOf::Range { .. } => "revert-range",
                RevertOf::Turn { .. } => "revert-turn",
            },
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
        "hardlink" => Op::Hardlink {
            path,
            target: rng.random_range(0..PATHS.len()),
        },
        "link-edit" => Op::LinkEdit {
            path,
            content: rng.random_range(0..4),
            outside: rng.random_bool(0.5),
        },
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
        "git-index" => Op::GitIndex {
            path,
            remove: rng.random_bool(0.4),
            commit: rng.random_bool(0.4),
        },
        "restore" | "restore-no-save" | "path-restore" | "path-restore-no-save" => {
            let paths = if kind.starts_with("path") {
                (0..rng.random_range(1..=2))
                    .map(|_| match rng.random_bool(0.1) {
                        // MISSING_PATH (see `pick_path`).
                        true => (usize::MAX, false),
                        false => (rng.random_range(0..PATHS.len()), rng.random_bool(0.3)),
                    })
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
        "gc" => Op::Gc {
            keep: rng.random_range(1..5),
        },
        _ => random_session_op(rng, kind, target),
    }
}

/// Draws one operation of a kind added for sessions and undo (flip, the agents' steps,
/// `restore --only-session`, `revert`).
fn random_session_op(rng: &mut StdRng, kind: &str, target: usize) -> Op {
    // One write of a session path: which, and its content.
    let write = |rng: &mut StdRng| {
        (
            rng.random_range(0..SESSION_PATHS.len()),
            rng.random_range(0..4),
        )
    };
    let session = rng.random_range(0..SESSIONS.len());
    let (path, content) = write(rng);
    let user = rng.random_bool(0.4).then(|| write(rng));
    let prompt = rng.random_range(0..1000);
    let count = rng.random_range(1..=2);
    let writes = (0..count).map(|_| write(rng)).collect();
    let (coin, strict, to) = (
        rng.random_bool(0.5),
        rng.random_bool(0.25),
        rng.random_range(0..1000),
    );
    match kind {
        "flip" => Op::Flip {
            path: path % FLIP_PATHS.len(),
            content,
        },
        "flip-revert" => Op::FlipRevert {
            path: path % FLIP_PATHS.len(),
            content,
        },
        "user-edit" => Op::UserEdit { path, content },
        "agent-prompt" => Op::AgentPrompt { session },
        "agent-edit" => Op::AgentEdit {
            session,
            path,
            content,
            user,
        },
        "agent-shell" => Op::AgentShell {
            session,
            writes,
            hooked_before: coin,
            user,
        },
        "only-session" => Op::OnlySession { session, prompt },
        _ => Op::Revert {
            what: match kind {
                "revert-step" => RevertOf::Step {
                    target: coin.then_some(target),
                },
                "revert-range" => RevertOf::Range {
                    from: target,
                    to: coin.then_some(to),
                },
                "revert-paths" if coin => RevertOf::Step {
                    target: rng.random_bool(0.5).then_some(target),
                },
                _ => RevertOf::Turn { session, prompt },
            },
            strict,
            paths: match kind {
                "revert-paths" => (0..rng.random_range(1..=2))
                    .map(|_| match rng.random_bool(0.15) {
                        true => (usize::MAX, false),
                        false => (rng.random_range(0..1000), rng.random_bool(0.3)),
                    })
                    .collect(),
                _ => Vec::new(),
            },
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
mod sessions;
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
