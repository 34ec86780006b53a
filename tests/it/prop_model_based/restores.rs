//! Restores of every kind (whole, of paths, `--no-save`), fork, switch, drop and gc,
//! each checked against the model.

use super::case::*;
use super::model::*;
use super::*;

/// A clock past the undo window of every operation of a sequence.
const PAST_THE_UNDO_WINDOW: (&str, &str) = ("GIT_CHECKPOINT_NOW", "2100-01-01T00:00:00Z");

impl Case {
    /// A restore, fork or switch: `args` run once with `--dry-run` and once for real;
    /// `target` is what it restores and `filter` the paths it covers. Returns the
    /// safety checkpoint, if the tool made one and the restore went through.
    pub(super) fn restore_like(
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
            self.record(id, &captured, None);
        }
        let target = target_of(&self.model, safety.as_deref());
        let target_cp = self.model.get(&target).clone();
        let expected = expected_restore(&before_leaves, &captured, &target_cp, filter);
        if out.code != 0 {
            ensure!(
                out.code == common::EXIT_REFUSED && out.stderr.starts_with("error: "),
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

    pub(super) fn restore(
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
        if let Some(unmatched) = self.unmatched_path(&id, &filter) {
            return self.refused_pathspec(&args, &unmatched);
        }
        let branches = self.model.branches.clone();
        let restored_tip = self.model.tip().map(|c| c.id.clone());
        let (pending, before) = (self.pending.clone(), leaves(&self.repo));
        let (done, _) = self.restore_like(&args, no_save, |_, _| id.clone(), &filter)?;
        self.after_restoring(pending, &before, done && filter.is_empty());
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

    /// The first path of `filter` (sorted) that names no file of checkpoint `id` nor of
    /// the worktree (what a save would capture, or skip as too large): a restore of it
    /// fails as git's pathspec does.
    pub(super) fn unmatched_path(&self, id: &str, filter: &[Vec<u8>]) -> Option<Vec<u8>> {
        let target = self.model.get(id);
        let captured = capture(&self.repo);
        let known: Vec<&Vec<u8>> = target
            .tree
            .keys()
            .chain(&target.skipped)
            .chain(captured.tree.keys())
            .chain(&captured.skipped)
            .collect();
        filter
            .iter()
            .find(|p| !known.iter().any(|k| covers(std::slice::from_ref(*p), k)))
            .cloned()
    }

    /// A restore (`args`, run dry and for real) whose path `unmatched` names nothing:
    /// refused with git's words, the same way both times, nothing changed and no
    /// checkpoint made.
    pub(super) fn refused_pathspec(
        &mut self,
        args: &[&[u8]],
        unmatched: &[u8],
    ) -> Result<(), Failure> {
        let before = leaves(&self.repo);
        let checkpoints = self.repo.log_ids(true);
        let mut dry: Vec<&[u8]> = args.to_vec();
        dry.insert(1, b"--dry-run");
        let wanted = format!(
            "error: pathspec '{}' did not match",
            String::from_utf8_lossy(unmatched)
        );
        for args in [dry, args.to_vec()] {
            let out = self.run(&args);
            ensure!(
                out.code == 1 && out.stderr.starts_with(&wanted),
                "a restore of a path that names nothing must fail with {wanted:?}\n{out}"
            );
            ensure!(
                leaves(&self.repo) == before,
                "a restore refused for its pathspec changed the worktree:\n{}",
                common::snap_diff(&before, &leaves(&self.repo)).join("\n")
            );
            ensure!(
                self.repo.log_ids(true) == checkpoints,
                "a restore refused for its pathspec made a checkpoint\n{out}"
            );
        }
        Ok(())
    }

    pub(super) fn fork(&mut self, target: usize) -> Result<(), Failure> {
        let Some(id) = self.model.pick(target) else {
            return Ok(());
        };
        self.model.forks += 1;
        let name = format!("m{}", self.model.forks);
        let branches = self.model.branches.clone();
        let head = self.model.head.clone();
        let args: Vec<&[u8]> = vec![b"fork", id.as_bytes(), b"-b", name.as_bytes()];
        let (pending, before) = (self.pending.clone(), leaves(&self.repo));
        let (done, safety) = self.restore_like(&args, false, |_, _| id.clone(), &[])?;
        self.after_restoring(pending, &before, done);
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

    pub(super) fn switch(&mut self, branch: usize) -> Result<(), Failure> {
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
        let (pending, before) = (self.pending.clone(), leaves(&self.repo));
        let (done, safety) = self.restore_like(
            &args,
            false,
            move |m, safety| match safety {
                Some(s) if target_name == left => s.to_string(),
                _ => m.branches[&target_name].clone(),
            },
            &[],
        )?;
        self.after_restoring(pending, &before, done);
        self.model.branches = branches;
        if done {
            if let Some(s) = safety {
                self.model.branches.insert(head, s);
            }
            self.model.head = name;
        }
        Ok(())
    }

    /// What is pending after a restore, fork or switch that was pending before it
    /// (`pending`, the worktree `before`): nothing once the worktree is a checkpoint's
    /// whole (`whole`); else what was, and the session paths the restore wrote (the
    /// safety checkpoint took the writes, but it is not on the line).
    pub(super) fn after_restoring(
        &mut self,
        pending: Vec<(Vec<u8>, Writer)>,
        before: &Snap,
        whole: bool,
    ) {
        self.pending = if whole { Vec::new() } else { pending };
        if !whole {
            let after = leaves(&self.repo);
            self.pending.extend(
                session_paths_changed(before, &after)
                    .into_iter()
                    .map(|p| (p, Writer::User)),
            );
        }
    }

    /// The writes of the checkpoints `gone` takes from the top of HEAD's line: the
    /// worktree is as it was, so their changes are unsaved again.
    pub(super) fn orphaned_writes(&self, gone: &BTreeSet<String>) -> Vec<(Vec<u8>, Writer)> {
        let mut writes = Vec::new();
        if let Some(tip) = self.model.tip() {
            for cp in self.model.line(&tip.id) {
                if !gone.contains(&cp.id) {
                    break;
                }
                writes.splice(0..0, cp.writes.iter().cloned());
            }
        }
        writes
    }

    pub(super) fn drop_checkpoint(&mut self, target: usize) -> Result<(), Failure> {
        let Some(id) = self.model.pick(target) else {
            return Ok(());
        };
        let before = leaves(&self.repo);
        let out = self.run(&[b"drop", id.as_bytes()]);
        let gone = BTreeSet::from([id.clone()]);
        match self.model.remove(&gone) {
            Some(next) => {
                ensure!(out.code == 0, "drop {id} failed\n{out}");
                let orphaned = self.orphaned_writes(&gone);
                self.pending.splice(0..0, orphaned);
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

    pub(super) fn gc(&mut self, keep: usize) -> Result<(), Failure> {
        if self.model.cps.is_empty() {
            return Ok(());
        }
        let before = leaves(&self.repo);
        // The model keeps no operation log: its gc runs past the undo window, when gc
        // no longer keeps what undoing an operation would need (docs/undo.md).
        let out = self.run_with(
            &[b"gc", b"--json", b"--keep", keep.to_string().as_bytes()],
            &[PAST_THE_UNDO_WINDOW],
        );
        ensure!(out.code == 0, "gc failed\n{out}");
        let mut kept: BTreeSet<String> = self.model.branches.values().cloned().collect();
        kept.extend(self.model.cps.iter().rev().take(keep).map(|c| c.id.clone()));
        // A kept prompt's turn stays addressable: its last checkpoint stays too.
        let ends: Vec<String> = (self.model.cps.iter())
            .filter(|c| kept.contains(&c.id))
            .filter_map(|c| match &c.hook {
                Some(Hook {
                    session,
                    step: HookStep::Prompt { .. },
                    ..
                }) => Some(self.turn_end(*session, &c.id)),
                _ => None,
            })
            .collect();
        kept.extend(ends);
        let gone: BTreeSet<String> = self
            .model
            .cps
            .iter()
            .map(|c| c.id.clone())
            .filter(|id| !kept.contains(id))
            .collect();
        let orphaned = self.orphaned_writes(&gone);
        self.pending.splice(0..0, orphaned);
        self.model = self
            .model
            .remove(&gone)
            .ok_or("gc: the model lost a branch")?;
        // A second gc finds nothing left to delete, and verify no garbage.
        let again = self.run_with(&[b"gc", b"--json"], &[PAST_THE_UNDO_WINDOW]);
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
}
