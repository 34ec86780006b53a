//! `revert` in the model (of a step, a range, a session's turn), and the edit that turns a
//! file into a directory and back, which reverts must undo whole.

use serde_json::Value;

use super::case::*;
use super::model::*;
use super::sessions::changed;
use super::*;

/// What the model says a revert does to one path (docs/revert.md, "What is merged").
#[derive(Clone, Debug, PartialEq)]
enum Planned {
    /// Written as this file or symlink.
    Write(Node),
    /// Deleted.
    Delete,
    /// Already as before the change, or the merge gives what the worktree holds.
    Unchanged,
    /// A conflict left as the worktree has it.
    Left,
    /// A text conflict, written with git's conflict markers.
    Markers,
}

impl Planned {
    /// `status` and `action` as `revert --json` names them.
    fn named(&self) -> (&'static str, &'static str) {
        match self {
            Planned::Write(_) => ("applied", "write"),
            Planned::Delete => ("applied", "delete"),
            Planned::Unchanged => ("unchanged", "none"),
            Planned::Left => ("conflict", "left"),
            Planned::Markers => ("conflict", "markers"),
        }
    }
}

/// The trees before and after the change a revert undoes, or the error it must fail
/// with.
type Undone = Result<(Snap, Snap), &'static str>;

/// A revert's plan as `--json` lists it: (path, status, action) per path.
fn listed_plan(v: &Value) -> Vec<(String, String, String)> {
    v["paths"]
        .as_array()
        .map(|paths| {
            paths
                .iter()
                .map(|p| {
                    let field = |k: &str| p[k].as_str().unwrap_or_default().to_string();
                    (field("path"), field("status"), field("action"))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The model's plan of undoing the change from `theirs` to `base`, for the paths
/// `filter` covers (all, when empty), in a worktree that holds `ours` (captured) on a
/// disk that holds `disk` (ignored files, directories and all).
fn plan_revert(
    theirs: &Snap,
    base: &Snap,
    ours: &Capture,
    disk: &Snap,
    filter: &[Vec<u8>],
) -> BTreeMap<Vec<u8>, Planned> {
    let o_tree = &ours.tree;
    let mut plan = BTreeMap::new();
    for path in changed(theirs, base)
        .into_iter()
        .filter(|p| covers(filter, p))
    {
        let (t, b, o) = (theirs.get(&path), base.get(&path), o_tree.get(&path));
        let mut below = path.clone();
        below.push(b'/');
        let directory_here = o_tree
            .iter()
            .any(|(q, n)| q.starts_with(&below) && base.get(q) != Some(n));
        let planned = if ours.skipped.contains(&path) || directory_here {
            Planned::Left
        } else if o == t {
            Planned::Unchanged
        } else if o == b {
            match t {
                None => Planned::Delete,
                Some(node) => Planned::Write(node.clone()),
            }
        } else {
            merge(b, o, t)
        };
        plan.insert(path, planned);
    }
    // What stands where a path is to be recreated goes only if the revert removes it.
    let deleted: BTreeSet<Vec<u8>> = plan
        .iter()
        .filter(|(_, p)| **p == Planned::Delete)
        .map(|(path, _)| path.clone())
        .collect();
    let blocked: Vec<Vec<u8>> = plan
        .iter()
        .filter(|(path, p)| matches!(p, Planned::Write(_)) && !o_tree.contains_key(*path))
        .filter(|(path, _)| in_the_way(path, disk, &deleted))
        .map(|(path, _)| path.clone())
        .collect();
    for path in blocked {
        plan.insert(path, Planned::Left);
    }
    plan
}

/// The merge of a path both the change and the worktree changed: files on all three
/// sides merge their executable bit and content apart (one-line files that differ on
/// all three sides conflict, with markers); anything else is left.
fn merge(b: Option<&Node>, o: Option<&Node>, t: Option<&Node>) -> Planned {
    let (
        Some(Node::File { data: bd, exec: be }),
        Some(Node::File { data: od, exec: oe }),
        Some(Node::File { data: td, exec: te }),
    ) = (b, o, t)
    else {
        return Planned::Left;
    };
    let exec = if oe == be {
        *te
    } else if te == be || oe == te {
        *oe
    } else {
        return Planned::Left;
    };
    let data = if od == bd {
        td
    } else if td == bd || od == td {
        od
    } else {
        return Planned::Markers;
    };
    if data == od && exec == *oe {
        Planned::Unchanged
    } else {
        Planned::Write(Node::File {
            data: data.clone(),
            exec,
        })
    }
}

/// Whether something the revert does not delete stands where `path` is to be made: a
/// file above it, a file at it, or a directory holding anything still there.
fn in_the_way(path: &[u8], disk: &Snap, deleted: &BTreeSet<Vec<u8>>) -> bool {
    for (i, _) in path.iter().enumerate().filter(|(_, &b)| b == b'/') {
        match disk.get(&path[..i]) {
            Some(Node::Dir) => {}
            Some(_) => return !deleted.contains(&path[..i]),
            None => return false,
        }
    }
    let mut below = path.to_vec();
    below.push(b'/');
    match disk.get(path) {
        None => false,
        Some(Node::Dir) => disk
            .iter()
            .any(|(q, n)| q.starts_with(&below) && !matches!(n, Node::Dir) && !deleted.contains(q)),
        Some(_) => true,
    }
}

impl Case {
    /// Turns `FLIP_PATHS[path]` into a directory holding one file, or a directory (or
    /// nothing) back into a file.
    pub(super) fn flip(&mut self, path: usize, content: u8) {
        let rel = FLIP_PATHS[path % FLIP_PATHS.len()];
        let is_dir = std::fs::symlink_metadata(self.p(rel)).is_ok_and(|m| m.is_dir());
        self.clear_for(rel);
        let file = if is_dir {
            rel.to_vec()
        } else {
            [rel, b"/in"].concat()
        };
        common::write_file(&self.p(&file), &content_of(content), false);
        self.log.push(format!(
            "rm -rf {0}; mkdir -p \"$(dirname {1})\"; printf 'v{content}\\n' > {1}",
            sh(rel),
            sh(&file)
        ));
    }

    /// Makes `FLIP_PATHS[path]` a saved file if it is not one, turns it into a directory,
    /// saves, and reverts that step (`revert @`).
    pub(super) fn flip_revert(&mut self, path: usize, content: u8) -> Result<(), Failure> {
        let rel = FLIP_PATHS[path % FLIP_PATHS.len()];
        if !std::fs::symlink_metadata(self.p(rel)).is_ok_and(|m| m.is_file()) {
            self.flip(path, content);
            if !std::fs::symlink_metadata(self.p(rel)).is_ok_and(|m| m.is_file()) {
                self.flip(path, content);
            }
            self.save()?;
        }
        self.flip(path, content.wrapping_add(1));
        self.save()?;
        self.revert(&RevertOf::Step { target: None }, false, &[])
    }

    /// The paths a revert of the change from `theirs` to `base` is limited to: each of
    /// `picks` is a path the change touched (an index into them), or its directory, or
    /// with `usize::MAX` a path no edit makes.
    fn revert_paths(theirs: &Snap, base: &Snap, picks: &[(usize, bool)]) -> Vec<Vec<u8>> {
        let touched: Vec<Vec<u8>> = changed(theirs, base).into_iter().collect();
        let mut paths: Vec<Vec<u8>> = Vec::new();
        for &(pick, dir) in picks {
            let path = match pick {
                usize::MAX => MISSING_PATH.to_vec(),
                _ if touched.is_empty() => continue,
                _ => {
                    let path = touched[pick % touched.len()].clone();
                    match path.iter().rposition(|&b| b == b'/') {
                        Some(slash) if dir => path[..slash].to_vec(),
                        _ => path,
                    }
                }
            };
            if !paths.contains(&path) {
                paths.push(path);
            }
        }
        paths
    }

    /// The last checkpoint of `SESSIONS[session]`'s turn that starts at `start`: its
    /// checkpoints in the order they were saved, up to its next prompt or one numbered
    /// for another prompt (whose prompt checkpoint gc removed).
    pub(super) fn turn_end(&self, session: usize, start: &str) -> String {
        let mut end = start.to_string();
        let from = self.model.cps.iter().position(|c| c.id == start);
        let number = from.and_then(|i| self.model.cps[i].hook.as_ref().map(|h| h.prompt));
        for cp in self.model.cps.iter().skip(from.map_or(0, |i| i + 1)) {
            match &cp.hook {
                Some(h) if h.session == session => match h.step {
                    HookStep::Prompt { .. } => break,
                    _ if Some(h.prompt) != number => break,
                    _ => end = cp.id.clone(),
                },
                _ => {}
            }
        }
        end
    }

    /// The revision `what` names and the change it undoes (the trees before and after),
    /// or the error a revert of it must fail with; `None` when there is nothing to name.
    fn undo_of(&self, what: &RevertOf, tip: &Cp) -> Option<(String, Undone)> {
        let tree = |id: &str| self.model.get(id).tree.clone();
        Some(match what {
            RevertOf::Step { target } => {
                let id = match target {
                    Some(target) => self.model.pick(*target)?,
                    None => tip.id.clone(),
                };
                let change = match &self.model.get(&id).parent {
                    Some(parent) => Ok((tree(parent), tree(&id))),
                    None => Err("is a first checkpoint"),
                };
                (id, change)
            }
            RevertOf::Range { from, to } => {
                let a = self.model.pick(*from)?;
                let (b, rev) = match to {
                    Some(to) => {
                        let b = self.model.pick(*to)?;
                        let rev = format!("{a}..{b}");
                        (b, rev)
                    }
                    None => (tip.id.clone(), format!("{a}..")),
                };
                (rev, Ok((tree(&a), tree(&b))))
            }
            RevertOf::Turn { session, prompt } => {
                let session = session % SESSIONS.len();
                let prompts = self.prompts_of(session);
                let (number, start) = prompts.get(prompt % prompts.len().max(1))?.clone();
                let end = self.turn_end(session, &start);
                let rev = format!("{}:turn{number}", &SESSIONS[session][..8]);
                (rev, Ok((tree(&start), tree(&end))))
            }
        })
    }

    /// `revert` of `what` (with `--no-conflicts` when `strict`), limited to the paths
    /// `picks` pick when there are any ([`Case::revert_paths`]), its dry run first: both
    /// exit the same and list the same plan, which is the model's; the worktree then
    /// holds what the plan says, and nothing else changed; a refusal changes nothing. A
    /// revert that wrote and left no conflict is saved as a checkpoint of its own.
    pub(super) fn revert(
        &mut self,
        what: &RevertOf,
        strict: bool,
        picks: &[(usize, bool)],
    ) -> Result<(), Failure> {
        let Some(tip) = self.model.tip().cloned() else {
            return Ok(());
        };
        let Some((rev, change)) = self.undo_of(what, &tip) else {
            return Ok(());
        };
        let filter = match &change {
            Ok((theirs, base)) if !picks.is_empty() => Self::revert_paths(theirs, base, picks),
            _ => Vec::new(),
        };
        let before = leaves(&self.repo);
        let (captured, disk) = (capture(&self.repo), self.repo.snapshot());
        let checkpoints = self.repo.log_ids(true);
        let mut args: Vec<&[u8]> = vec![b"revert", b"--json"];
        if strict {
            args.push(b"--no-conflicts");
        }
        args.push(rev.as_bytes());
        if !filter.is_empty() {
            args.push(b"--");
            args.extend(filter.iter().map(Vec::as_slice));
        }
        let mut dry_args = args.clone();
        dry_args.insert(1, b"--dry-run");
        let dry = self.run(&dry_args);
        ensure!(
            leaves(&self.repo) == before && self.repo.log_ids(true) == checkpoints,
            "a dry run changed the worktree or the store\n{dry}"
        );
        let out = self.run(&args);
        let after = leaves(&self.repo);
        ensure!(
            dry.code == out.code,
            "the dry run exited {} and the revert {}\n--- dry run ---\n{dry}\n--- revert ---\n{out}",
            dry.code,
            out.code
        );
        let unchanged =
            |out: &Out, after: &Snap, checkpoints_now: Vec<String>| -> Result<(), Failure> {
                ensure!(
                    *after == before && checkpoints_now == checkpoints,
                    "a refused revert changed the worktree or the store:\n{}\n{out}",
                    common::snap_diff(&before, after).join("\n")
                );
                Ok(())
            };
        let (theirs, base) = match change {
            Ok(change) => change,
            Err(wanted) => {
                ensure!(
                    out.code == 1 && out.stderr.contains(wanted) && dry.stderr.contains(wanted),
                    "revert {rev} must fail: {wanted}\n{out}"
                );
                return unchanged(&out, &after, self.repo.log_ids(true));
            }
        };
        // A path that matches nothing the change touched fails, as git's pathspecs do.
        let touched = changed(&theirs, &base);
        if let Some(unmatched) = filter
            .iter()
            .find(|f| !touched.iter().any(|p| covers(std::slice::from_ref(*f), p)))
        {
            let wanted = format!(
                "pathspec '{}' did not match any file that {rev} changed; nothing was changed",
                String::from_utf8_lossy(unmatched)
            );
            ensure!(
                out.code == 1 && out.stderr.contains(&wanted) && dry.stderr.contains(&wanted),
                "revert {rev} must fail: {wanted}\n{out}"
            );
            return unchanged(&out, &after, self.repo.log_ids(true));
        }
        let plan = plan_revert(&theirs, &base, &captured, &disk, &filter);
        let conflicts = plan
            .values()
            .any(|p| matches!(p, Planned::Left | Planned::Markers));
        if strict && conflicts {
            // A refusal: its own exit status, and the error document of kind "refused".
            let refused = |out: &Out| {
                out.code == common::EXIT_REFUSED
                    && serde_json::from_str::<Value>(&out.stdout)
                        .is_ok_and(|document| document["kind"] == "refused")
            };
            ensure!(
                refused(&out) && refused(&dry) && out.stdout == dry.stdout
                    && out.stderr == dry.stderr && out.stderr.contains("would conflict"),
                "--no-conflicts with conflicts must refuse, dry run and real run alike\n--- dry run ---\n{dry}\n--- revert ---\n{out}"
            );
            return unchanged(&out, &after, self.repo.log_ids(true));
        }
        let wanted: Vec<(String, String, String)> = plan
            .iter()
            .map(|(path, planned)| {
                let (status, action) = planned.named();
                let path = String::from_utf8_lossy(path).into_owned();
                (path, status.to_string(), action.to_string())
            })
            .collect();
        let (v, d) = (
            common::parse_json(&out, "revert --json"),
            common::parse_json(&dry, "revert --dry-run --json"),
        );
        ensure!(
            listed_plan(&v) == wanted && listed_plan(&d) == wanted,
            "revert {rev}: the plan differs from the model's\n  revert:  {:?}\n  dry run: {:?}\n  model:   {wanted:?}\ntheirs:\n{}\nbase:\n{}\nworktree:\n{}",
            listed_plan(&v),
            listed_plan(&d),
            show_snap(&theirs),
            show_snap(&base),
            show_snap(&captured.tree)
        );
        ensure!(
            out.code == i32::from(conflicts),
            "revert {rev}: conflicts {conflicts}, exit {}\n{out}",
            out.code
        );
        let mut expected = before.clone();
        for (path, planned) in &plan {
            match planned {
                Planned::Write(node) => {
                    expected.insert(path.clone(), node.clone());
                }
                Planned::Delete => {
                    expected.remove(path);
                }
                Planned::Markers => {
                    let marked = match after.get(path) {
                        Some(Node::File { data, .. }) => {
                            data.windows(17).any(|w| w == b"<<<<<<< worktree\n")
                        }
                        _ => false,
                    };
                    ensure!(
                        marked,
                        "revert {rev}: {} has no conflict markers\n{out}",
                        String::from_utf8_lossy(path)
                    );
                    match after.get(path) {
                        Some(node) => expected.insert(path.clone(), node.clone()),
                        None => expected.remove(path),
                    };
                }
                Planned::Unchanged | Planned::Left => {}
            }
        }
        ensure!(
            after == expected,
            "the worktree after revert {rev} differs from the model:\n{}\n{out}",
            common::snap_diff(&expected, &after).join("\n")
        );
        let wrote = plan
            .values()
            .any(|p| matches!(p, Planned::Write(_) | Planned::Delete | Planned::Markers));
        let will_save = captured.tree != tip.tree;
        let mut made: Vec<&str> = Vec::new();
        match v["safety_checkpoint"].as_str() {
            Some(safety) => {
                ensure!(
                    wrote && will_save,
                    "revert {rev} kept a safety checkpoint it needs not\n{out}"
                );
                self.record(safety, &captured, None);
                self.model
                    .branches
                    .insert(self.model.head.clone(), safety.to_string());
                self.check_checkpoint(safety)?;
                made.push(safety);
            }
            None => ensure!(
                !(wrote && will_save),
                "revert {rev}: unsaved changes {will_save}, writes {wrote}, but no safety checkpoint\n{out}"
            ),
        }
        let written = session_paths_changed(&before, &after);
        self.pending
            .extend(written.into_iter().map(|p| (p, Writer::User)));
        // A revert that wrote and left nothing to resolve is a checkpoint of its own,
        // HEAD's branch moved to it.
        match v["checkpoint"].as_str() {
            Some(result) => {
                ensure!(
                    wrote && !conflicts,
                    "revert {rev} saved {result} (writes {wrote}, conflicts {conflicts})\n{out}"
                );
                self.record_result(result)?;
                made.push(result);
            }
            None => ensure!(
                !wrote || conflicts,
                "revert {rev} wrote and left no conflict, but saved no checkpoint\n{out}"
            ),
        }
        // As sets: `log --all` may order the lines of several branches anew.
        let mut now = self.repo.log_ids(true);
        now.retain(|id| !made.contains(&id.as_str()));
        let as_set = |ids: &[String]| ids.iter().cloned().collect::<BTreeSet<String>>();
        ensure!(
            as_set(&now) == as_set(&checkpoints),
            "revert {rev} made checkpoints it does not report\n{out}"
        );
        Ok(())
    }
}
