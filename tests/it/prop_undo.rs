//! Property test of `undo` and `redo`: random sequences of operations (whole and
//! path-limited restores, fork, switch, drop, pin, unpin, branch renames and deletions,
//! reverts) with edits and saves between them, and `undo` and `redo` interleaved.
//!
//! The model is what each operation did, observed: the state before and after it (the
//! worktree's files, every branch tip, HEAD, the pins) and what its record says it did to
//! the worktree (nothing, all of it, or some paths). An undo of an operation must put
//! back, of the state before it, exactly what it changed and leave the rest as it is
//! now: each branch it moved gets its old tip and the others keep theirs (saves since
//! included), HEAD likewise, each pin it made or removed, what it dropped back in the
//! history, and the worktree's files (all of them, or those of its paths) as they were
//! before it, the others as they are. A redo is the same check of the undo it undoes.
//! `undo` with nothing left, and `redo` with nothing undone since the last operation,
//! are refused and change nothing.
//!
//! `GIT_CHECKPOINT_UNDO_SEED=<n>` (or `random`) and `GIT_CHECKPOINT_UNDO_OPS=<n>`
//! (default 150, in sequences of 30, each in a new repository) make a longer run; a
//! failure prints its sequence's seed and the commands run.

use std::collections::{BTreeMap, BTreeSet};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::Value;

use crate::common;
use common::{Node, Repo, Snap};

/// The files the edits write (a directory among them, and an executable).
const PATHS: &[&str] = &["a.txt", "b.txt", "d/c.txt", "d/e.txt", "x.sh"];
/// What a path-limited restore may name: files, and the directory.
const RESTORE_PATHS: &[&str] = &["a.txt", "b.txt", "d", "d/e.txt", "x.sh"];

/// The state an operation changes.
#[derive(Clone, Debug, PartialEq)]
struct State {
    /// The worktree's files and symlinks (directories left out: a restore removes the
    /// ones it empties).
    files: Snap,
    /// Each branch and its tip.
    branches: BTreeMap<String, String>,
    /// The branch HEAD names.
    head: String,
    /// The pinned checkpoints.
    pins: BTreeSet<String>,
    /// Every checkpoint `log --all` lists.
    all: BTreeSet<String>,
}

fn observe(r: &Repo) -> State {
    let mut branches = BTreeMap::new();
    let mut head = String::new();
    for b in r.json_of(&["branch"]).as_array().unwrap() {
        let name = b["name"].as_str().unwrap().to_string();
        if b["current"] == true {
            head = name.clone();
        }
        branches.insert(name, b["id"].as_str().unwrap().to_string());
    }
    let log = r.log_json(true);
    State {
        files: (r.snapshot().into_iter())
            .filter(|(_, node)| !matches!(node, Node::Dir))
            .collect(),
        branches,
        head,
        pins: (log.iter())
            .filter(|c| c["pinned"] == true)
            .map(|c| c["id"].as_str().unwrap().to_string())
            .collect(),
        all: log
            .iter()
            .map(|c| c["id"].as_str().unwrap().to_string())
            .collect(),
    }
}

/// What an operation's record says it did to the worktree.
#[derive(Clone, Debug)]
enum Scope {
    Untouched,
    Whole,
    Paths(Vec<String>),
}

/// An operation as observed.
#[derive(Clone, Debug)]
struct Done {
    number: u64,
    before: State,
    after: State,
    scope: Scope,
    dropped: Vec<String>,
}

/// One sequence against its own repository.
struct Case {
    repo: Repo,
    rng: StdRng,
    done: Vec<Done>,
    /// Operations undone, each with its undo, newest last.
    undone: Vec<(Done, Done)>,
    log: Vec<String>,
    names: usize,
    /// Operations recorded, undos and redos that went through, refusals checked.
    counts: [usize; 4],
}

impl Case {
    fn new(seed: u64) -> Case {
        let repo = Repo::new();
        repo.write("a.txt", b"a0\n");
        repo.write("d/c.txt", b"c0\n");
        repo.save("start");
        Case {
            repo,
            rng: StdRng::seed_from_u64(seed),
            done: Vec::new(),
            undone: Vec::new(),
            log: Vec::new(),
            names: 0,
            counts: [0; 4],
        }
    }

    /// Runs `args`, logged; no panic allowed.
    fn run(&mut self, args: &[&str]) -> common::Out {
        self.log.push(format!("git checkpoint {}", args.join(" ")));
        let out = self.repo.run(args);
        if out.code != 0 {
            let first = out.stderr.lines().next().unwrap_or("").to_string();
            if let Some(line) = self.log.last_mut() {
                line.push_str(&format!("    # exit {}: {first}", out.code));
            }
        }
        out
    }

    /// The newest record of the operation log, if any.
    fn newest(&self) -> Option<Value> {
        let log = self.repo.json_of(&["op", "log", "-n", "1"]);
        log.as_array().unwrap().first().cloned()
    }

    /// A checkpoint `log --all` lists, picked at random.
    fn some_checkpoint(&mut self, state: &State) -> String {
        let all: Vec<&String> = state.all.iter().collect();
        all[self.rng.random_range(0..all.len())].clone()
    }

    /// A branch, picked at random.
    fn some_branch(&mut self, state: &State) -> String {
        let names: Vec<&String> = state.branches.keys().collect();
        names[self.rng.random_range(0..names.len())].clone()
    }

    /// One random step; `Err` is a discrepancy.
    fn step(&mut self) -> Result<(), String> {
        let state = observe(&self.repo);
        let roll = self.rng.random_range(0..100);
        let path = PATHS[self.rng.random_range(0..PATHS.len())];
        match roll {
            0..=24 => {
                if self.rng.random_bool(0.2) {
                    self.log.push(format!("rm -f {path}"));
                    let _ = std::fs::remove_file(self.repo.p(path));
                } else {
                    let content = format!("{path} {}\n", self.rng.random_range(0..5));
                    self.log
                        .push(format!("echo '{}' > {path}", content.trim_end()));
                    match path {
                        "x.sh" => self.repo.write_exec(path, content.as_bytes()),
                        _ => self.repo.write(path, content.as_bytes()),
                    }
                }
                return Ok(());
            }
            25..=32 => {
                self.run(&["save", "-q"]);
                return Ok(());
            }
            33..=47 => return self.undo(state),
            48..=55 => return self.redo(state),
            _ => {}
        }
        self.names += 1;
        let name = format!("b{}", self.names);
        let target = self.some_checkpoint(&state);
        let branch = self.some_branch(&state);
        let args: Vec<String> = match roll {
            56..=61 => vec!["restore".into(), target],
            62..=67 => {
                let mut args = vec!["restore".into(), target, "--".into()];
                let count = self.rng.random_range(1..=2);
                for _ in 0..count {
                    let p = RESTORE_PATHS[self.rng.random_range(0..RESTORE_PATHS.len())];
                    args.push(p.into());
                }
                args
            }
            68..=71 => vec!["fork".into(), target, "-b".into(), name],
            72..=75 => vec!["switch".into(), branch],
            76..=79 => vec!["drop".into(), target],
            80..=82 => vec!["pin".into(), target],
            83..=84 => vec!["unpin".into(), target],
            85..=88 => vec!["branch".into(), "-m".into(), branch, name],
            89..=90 => vec!["branch".into(), "-d".into(), branch],
            _ => vec!["revert".into(), target],
        };
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        self.operation(&args, state)
    }

    /// An operation: if it was recorded, what it did is observed and kept for undo.
    fn operation(&mut self, args: &[&str], before: State) -> Result<(), String> {
        let newest = self.newest().map(|op| op["number"].as_u64().unwrap());
        let out = self.run(args);
        if out.code != 0 && out.code != 1 {
            return Err(format!("{args:?} exited {}\n{out}", out.code));
        }
        let Some(record) = self.newest() else {
            return Ok(());
        };
        let number = record["number"].as_u64().unwrap();
        if Some(number) == newest {
            if out.code == 0 && observe(&self.repo) != before {
                return Err(format!("{args:?} changed the state and recorded nothing"));
            }
            return Ok(());
        }
        let after = observe(&self.repo);
        let done = Done {
            number,
            before,
            after,
            scope: scope_of(&record),
            dropped: strings(&record["dropped"]),
        };
        self.done.push(done);
        self.undone.clear();
        self.counts[0] += 1;
        Ok(())
    }

    fn undo(&mut self, now: State) -> Result<(), String> {
        let out = self.run(&["--json", "undo"]);
        let Some(op) = self.done.pop() else {
            self.counts[3] += 1;
            return refused(&out, "nothing to undo", &now, &observe(&self.repo));
        };
        self.counts[1] += 1;
        let undo = self.checked(&out, &op, &now)?;
        if out_target(&out) != Some(op.number) {
            return Err(format!(
                "undo acted on {:?}, not op {}",
                out_target(&out),
                op.number
            ));
        }
        self.undone.push((op, undo));
        Ok(())
    }

    fn redo(&mut self, now: State) -> Result<(), String> {
        let out = self.run(&["--json", "redo"]);
        let Some((op, undo)) = self.undone.pop() else {
            self.counts[3] += 1;
            return refused(&out, "nothing to redo", &now, &observe(&self.repo));
        };
        self.counts[2] += 1;
        // The operation is in effect again: a later undo undoes it by its own record.
        self.checked(&out, &undo, &now)?;
        if out_target(&out) != Some(op.number) {
            return Err(format!(
                "redo acted on {:?}, not op {}",
                out_target(&out),
                op.number
            ));
        }
        self.done.push(op);
        Ok(())
    }

    /// Checks that the undo (or redo) `out` of `gone` (the operation, or for a redo the
    /// undo it undoes) put back what `gone` changed and left the rest as in `now`.
    /// Returns the undo as an operation of its own.
    fn checked(&mut self, out: &common::Out, gone: &Done, now: &State) -> Result<Done, String> {
        if out.code != 0 {
            return Err(format!("undo of op {} failed\n{out}", gone.number));
        }
        let after = observe(&self.repo);
        let (was, did) = (&gone.before, &gone.after);
        let mut names: BTreeSet<&String> = was.branches.keys().collect();
        names.extend(did.branches.keys());
        names.extend(now.branches.keys());
        names.extend(after.branches.keys());
        for name in names {
            let expected = match was.branches.get(name) != did.branches.get(name) {
                true => was.branches.get(name),
                false => now.branches.get(name),
            };
            if after.branches.get(name) != expected {
                return Err(format!(
                    "after undoing op {}, branch {name} is at {:?}, expected {expected:?}\n{out}",
                    gone.number,
                    after.branches.get(name)
                ));
            }
        }
        let head = match was.head != did.head {
            true => &was.head,
            false => &now.head,
        };
        if &after.head != head {
            return Err(format!("HEAD names {}, expected {head}\n{out}", after.head));
        }
        let pins = (was.pins.symmetric_difference(&did.pins)).chain(now.pins.union(&after.pins));
        for id in pins {
            let expected = match was.pins.contains(id) != did.pins.contains(id) {
                true => was.pins.contains(id),
                false => now.pins.contains(id),
            };
            if after.pins.contains(id) != expected {
                return Err(format!("pin of {id} is {}, expected {expected}", !expected));
            }
        }
        for id in &gone.dropped {
            if !after.all.contains(id) {
                return Err(format!("the dropped checkpoint {id} did not come back"));
            }
        }
        let expected: Snap = match &gone.scope {
            Scope::Untouched => now.files.clone(),
            Scope::Whole => was.files.clone(),
            Scope::Paths(paths) => {
                let covered = |path: &[u8]| {
                    paths.iter().any(|p| {
                        let p = p.as_bytes();
                        path == p || (path.starts_with(p) && path.get(p.len()) == Some(&b'/'))
                    })
                };
                (now.files.iter())
                    .filter(|(path, _)| !covered(path))
                    .chain(was.files.iter().filter(|(path, _)| covered(path)))
                    .map(|(path, node)| (path.clone(), node.clone()))
                    .collect()
            }
        };
        if after.files != expected {
            return Err(format!(
                "after undoing op {} ({:?}), the worktree differs:\n{}\n{out}",
                gone.number,
                gone.scope,
                common::snap_diff(&expected, &after.files).join("\n")
            ));
        }
        let record = self.newest().ok_or("the undo recorded nothing")?;
        Ok(Done {
            number: record["number"].as_u64().unwrap(),
            before: now.clone(),
            after,
            scope: scope_of(&record),
            dropped: strings(&record["dropped"]),
        })
    }
}

/// The operation an `undo --json` or `redo --json` acted on.
fn out_target(out: &common::Out) -> Option<u64> {
    serde_json::from_str::<Value>(out.stdout.trim())
        .ok()
        .and_then(|v| v["target"].as_u64())
}

/// A refusal: exit 1 with `words`, nothing changed.
fn refused(out: &common::Out, words: &str, before: &State, after: &State) -> Result<(), String> {
    if out.code != 1 || !out.stderr.contains(words) {
        return Err(format!("expected a refusal saying {words:?}\n{out}"));
    }
    if before != after {
        return Err(format!("a refused undo or redo changed the state\n{out}"));
    }
    Ok(())
}

fn scope_of(record: &Value) -> Scope {
    match &record["worktree"] {
        Value::Null => Scope::Untouched,
        worktree => match strings(&worktree["paths"]) {
            paths if paths.is_empty() => Scope::Whole,
            paths => Scope::Paths(paths),
        },
    }
}

fn strings(list: &Value) -> Vec<String> {
    (list.as_array().into_iter().flatten())
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn undo_and_redo_put_back_what_each_operation_changed() {
    let seed: u64 = match std::env::var("GIT_CHECKPOINT_UNDO_SEED") {
        Ok(v) if v.trim() == "random" => rand::rng().random(),
        Ok(v) => v
            .trim()
            .parse()
            .expect("GIT_CHECKPOINT_UNDO_SEED is a number"),
        Err(_) => 0x756e_646f,
    };
    let total: usize = std::env::var("GIT_CHECKPOINT_UNDO_OPS")
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(150);
    let per_sequence = 30;
    let (mut steps, mut sequences) = (0, 0);
    let mut counts = [0; 4];
    while steps < total {
        let seq_seed = seed.wrapping_add(sequences);
        sequences += 1;
        let mut case = Case::new(seq_seed);
        for _ in 0..per_sequence.min(total - steps) {
            steps += 1;
            if let Err(failure) = case.step() {
                panic!(
                    "sequence seed {seq_seed} (GIT_CHECKPOINT_UNDO_SEED={seq_seed} GIT_CHECKPOINT_UNDO_OPS={per_sequence}):\n{failure}\n--- steps run ---\n{}",
                    case.log.join("\n")
                );
            }
        }
        for (total, n) in counts.iter_mut().zip(case.counts) {
            *total += n;
        }
    }
    let [operations, undos, redos, refusals] = counts;
    eprintln!(
        "undo property test: {steps} steps in {sequences} sequences: {operations} operations recorded, {undos} undone, {redos} redone, {refusals} undos or redos refused with nothing to do"
    );
}
