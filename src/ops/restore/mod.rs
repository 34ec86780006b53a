//! Restoring: make the worktree equal to a checkpoint (or some of its paths), writing
//! only the files that differ.
//!
//! Order of work, chosen so that nothing is lost and nothing escapes the worktree
//! (docs/design.md invariants 1, 3, 8 and 13):
//! 1. Unless told not to, save the worktree first, so the restore can be undone; the
//!    diff is then taken from exactly what was saved. The safety checkpoint is made
//!    beside HEAD's branch, which does not move yet.
//! 2. Check the whole plan before anything changes (the preflight): nothing in the way
//!    that no checkpoint holds (also where a directory is to be made), names a
//!    filesystem takes, room for the new bytes. A refused restore (and `--dry-run`)
//!    stops here, before the restore is recorded; the safety checkpoint goes again, so
//!    a refused restore changes nothing at all, HEAD's branch included.
//! 3. Record the restore as started, with its paths (the marker `status` reports until
//!    it is done); HEAD's branch moves to the safety checkpoint, as a save would have
//!    moved it, unless the restore is limited to paths.
//! 4. Delete captured files the target lacks. Only paths that are in the current
//!    snapshot are ever deleted, so ignored files are never touched.
//! 5. Create missing directories and clear directories that become files.
//! 6. Write files in parallel: a path that held nothing at its own name, a file that
//!    replaces another under a temporary name beside it; sync the filesystem once; if
//!    there were temporary names, rename each over its target and sync once more.
//! 7. Remove directories that step 4 emptied (also when a later step failed).
//! 8. Move the branch to the target (not for a path-limited restore, which leaves it where
//!    it was; for `fork` and `switch`, make a branch or point HEAD at one), clear the
//!    marker and drop the rewritten paths from the stat cache, in one commit.
//!
//! Steps 4 to 7 go through handles of the directories they change ([`crate::worktree`]),
//! never through a path string below the worktree's top.
//!
//! This file holds steps 1, 3 and 8 (and the dry run); `plan.rs` makes and `preflight.rs`
//! checks the plan (step 2); `apply.rs` carries it out (steps 4 to 7).

mod apply;
mod plan;
mod preflight;

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::diff::PathFilter;
use crate::git::repo::Repo;
use crate::model::branch::BranchName;
use crate::model::{Head, PendingTrees, SkippedFile};
use crate::ops::save::{self, Warning};
use crate::progress::Progress;
use crate::settings::Settings;
use crate::storage::{Snapshot, Store, StoreRead};
use crate::{CheckpointId, Error, Result, TreeId};
use apply::apply;
use plan::plan;
pub(crate) use preflight::{check_directories_writable, check_names_and_room, holds_nothing_else};

/// How a restore runs.
#[derive(Clone, Debug, Default)]
pub struct RestoreOptions {
    /// Print the plan only.
    pub dry_run: bool,
    /// Do not save the worktree first.
    pub no_save: bool,
    /// Restore only these root-relative paths (and what is below them).
    pub paths: Vec<Vec<u8>>,
    /// The `checkpoint.*` settings the safety save applies (and a look without one
    /// uses), from the caller's [`crate::ops::workspace::Workspace`].
    pub settings: Settings,
    /// Where to report progress, if anywhere.
    pub progress: Option<Arc<dyn Progress>>,
    /// Where HEAD goes once the worktree is restored.
    pub head: HeadUpdate,
    /// What the safety checkpoint's message calls the restore (`before <it>`): the
    /// restore as the caller named it; `None`, `restore to <short id>`.
    pub named: Option<String>,
}

/// What a restore does with HEAD, in the same transaction that ends it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum HeadUpdate {
    /// The current branch moves to the restored checkpoint (not with paths).
    #[default]
    MoveBranch,
    /// A new branch is made at the restored checkpoint and HEAD names it (`fork`); the
    /// current branch keeps its tip.
    NewBranch(BranchName),
    /// HEAD names this existing branch, whose tip is what is restored (`switch`).
    SwitchBranch(String),
}

/// What a restore did (or, in a dry run, would do).
#[derive(Debug, Default)]
pub struct RestoreReport {
    /// The checkpoint restored.
    pub target: Option<CheckpointId>,
    /// The checkpoint the worktree was saved as first, if it had unsaved changes.
    pub safety_checkpoint: Option<CheckpointId>,
    /// The checkpoint holding the worktree as the restore found it, so that restoring
    /// it undoes the restore: the safety checkpoint, or the current one when nothing was
    /// unsaved. `None` when nothing was saved first (a dry run, `--no-save`) or nothing
    /// was written.
    pub worktree: Option<CheckpointId>,
    /// Whether a dry run found unsaved changes that a real run would save first.
    pub would_save: bool,
    /// Paths written (files and symlinks), sorted.
    pub written: Vec<Vec<u8>>,
    /// Paths deleted, sorted.
    pub deleted: Vec<Vec<u8>>,
    /// Whether nothing was changed because this was a dry run.
    pub dry_run: bool,
    /// Things the user should hear about.
    pub warnings: Vec<Warning>,
    /// Paths left as they are, sorted: files in the worktree that no checkpoint holds
    /// because they are larger than `checkpoint.maxFileSize` or were unreadable (now, or
    /// when the target was saved), and the paths of [`RestoreReport::exempt`].
    pub untouched: Vec<Vec<u8>>,
    /// Of `untouched`, the paths the target or the current snapshot has inside the
    /// repository's own git dirs or a linked worktree of it, or at an agent settings file
    /// ([`crate::worktree::exempt`]): a checkpoint an older build made may hold them, and
    /// a restore never writes or deletes them.
    pub exempt: Vec<Vec<u8>>,
}

/// Restores the checkpoint named by `rev` into the worktree. A dry run is [`dry_run`].
pub fn restore(
    repo: &Repo,
    store: &Store,
    rev: &str,
    options: &RestoreOptions,
) -> Result<RestoreReport> {
    if options.dry_run {
        return dry_run(repo, store, rev, options);
    }
    let before = store.snapshot()?;
    let mut target = Target::of(&before, rev, options)?;
    let mut report = RestoreReport {
        target: Some(target.id),
        ..RestoreReport::default()
    };
    let now = Current::take(repo, store, before, &mut target, options, &mut report)?;

    // What the restore reads from here on does not change until it is done: the store is
    // held, and the restore's own marker touches no tree or chunk.
    let snapshot = store.snapshot()?;
    let filter = PathFilter::new(options.paths.clone());
    let planned = plan(
        repo,
        &snapshot,
        &store.hasher,
        (now.tree, now.scanned_trees.as_ref(), &now.skipped),
        &target,
        &options.paths,
        &mut report,
    );
    let changes = match planned {
        Ok(changes) => changes,
        Err(refused) => {
            drop(snapshot);
            if let Some(safety) = report.safety_checkpoint {
                // The worktree is as it was, so the safety checkpoint protects nothing;
                // it goes, so that a refused restore leaves the store as it found it
                // too. Should that fail, it stays beside the branch, which is harmless.
                let _ = discard(store, safety);
            }
            return Err(refused);
        }
    };
    if changes.is_empty() && now.leftovers.is_empty() {
        // Nothing written: nothing to undo.
        report.worktree = None;
    }
    // A restore that changes no file needs no way back, and a path-limited one leaves
    // the branch where it is: run twice, the second run changes nothing at all.
    if let (true, HeadUpdate::MoveBranch, Some(safety)) = (
        changes.is_empty() && now.leftovers.is_empty(),
        &options.head,
        report.safety_checkpoint,
    ) {
        drop(snapshot);
        if discard(store, safety).is_ok() {
            report.safety_checkpoint = None;
        }
        finish(store, target.id, &filter, options, &report)?;
        return Ok(report);
    }
    record_start(store, target.id, &filter, options, &report)?;
    {
        let _span = crate::trace::span("restore: change the worktree");
        let chunks = snapshot.chunks()?;
        apply(
            &repo.root,
            &store.hasher,
            &chunks,
            &changes,
            &now.leftovers,
            options.progress.as_deref(),
        )?;
    }

    drop(snapshot);
    finish(store, target.id, &filter, options, &report)?;
    Ok(report)
}

/// The worktree as it is when a restore begins: saved first, or only scanned.
struct Current {
    /// Its tree.
    tree: TreeId,
    /// The trees of a worktree only scanned, not in the store.
    scanned_trees: Option<PendingTrees>,
    /// The files the save or scan left out.
    skipped: Vec<SkippedFile>,
    /// An interrupted restore's temporary files, removed before anything else.
    leftovers: Vec<Vec<u8>>,
}

impl Current {
    /// Saves the worktree (the safety checkpoint, into `report`), or only scans it with
    /// `--no-save`. The safety checkpoint is made beside HEAD's branch, which moves only
    /// once the restore has started (or not at all, for a path-limited one): a refused
    /// restore leaves it where it was. A switch to the current branch then restores
    /// what was just saved, its tip, so `target` becomes that.
    fn take(
        repo: &Repo,
        store: &Store,
        before: Snapshot<'_>,
        target: &mut Target,
        options: &RestoreOptions,
        report: &mut RestoreReport,
    ) -> Result<Current> {
        if options.no_save {
            let scan =
                save::look_by_walking(repo, &options.settings, store, options.progress.as_deref())?;
            report.warnings.extend(scan.warnings);
            return Ok(Current {
                tree: scan.root,
                scanned_trees: Some(scan.trees),
                skipped: scan.skipped,
                leftovers: scan.leftovers,
            });
        }
        let short = before.short_id(target.id)?;
        let message = match &options.head {
            HeadUpdate::MoveBranch => match &options.named {
                Some(named) => format!("before {named}"),
                None => format!("before restore to {short}"),
            },
            HeadUpdate::NewBranch(name) => format!("before fork {name} at {short}"),
            HeadUpdate::SwitchBranch(name) => format!("before switch to {name}"),
        };
        let head = before.head()?;
        drop(before);
        let saved = save::save_before_change(
            repo,
            store,
            message,
            &options.settings,
            options.progress.clone(),
        )?;
        report.warnings.extend(saved.report.warnings);
        report.safety_checkpoint = saved.made;
        report.worktree = Some(saved.worktree);
        let id = saved.worktree;
        let record = store.snapshot()?.checkpoint(id)?;
        if let HeadUpdate::SwitchBranch(name) = &options.head {
            // Switching to the current branch: its tip is the worktree as saved now.
            if head == Head::Branch(name.clone()) {
                *target = Target {
                    id,
                    tree: record.tree,
                    skipped: record.skipped,
                };
                report.target = Some(id);
            }
        }
        Ok(Current {
            tree: record.tree,
            scanned_trees: None,
            skipped: saved.report.skipped,
            leftovers: saved.report.leftovers,
        })
    }
}

/// Records the restore as started, durably, so that a crash in the middle is reported
/// and can be finished by running the restore again (with the same paths). Until then,
/// HEAD's branch holds the safety checkpoint, as a save would have left it; a
/// path-limited restore never moves it.
fn record_start(
    store: &Store,
    target: CheckpointId,
    filter: &PathFilter,
    options: &RestoreOptions,
    report: &RestoreReport,
) -> Result<()> {
    let _span = crate::trace::span("restore: record the restore as started");
    let txn = store.transaction()?;
    txn.set_restoring(target, &options.paths)?;
    let moves = !matches!(options.head, HeadUpdate::MoveBranch) || filter.is_everything();
    if let (true, Some(safety)) = (moves, report.safety_checkpoint) {
        txn.move_head(safety)?;
    }
    txn.commit()
}

/// What [`restore`] would do, changing nothing: not the worktree, not the store, which
/// may be open only for reading. Refuses exactly what the restore would.
pub fn dry_run(
    repo: &Repo,
    store: &impl StoreRead,
    rev: &str,
    options: &RestoreOptions,
) -> Result<RestoreReport> {
    let before = store.snapshot()?;
    let target = Target::of(&before, rev, options)?;
    let scan = save::look_by_walking(repo, &options.settings, store, options.progress.as_deref())?;
    let current_tree = match before.current()? {
        Some(id) => Some(before.checkpoint(id)?.tree),
        None => None,
    };
    let mut report = RestoreReport {
        target: Some(target.id),
        would_save: !options.no_save && current_tree != Some(scan.root),
        dry_run: true,
        warnings: scan.warnings,
        ..RestoreReport::default()
    };
    plan(
        repo,
        &before,
        store.hasher(),
        (scan.root, Some(&scan.trees), &scan.skipped),
        &target,
        &options.paths,
        &mut report,
    )?;
    Ok(report)
}

/// The checkpoint a restore restores.
struct Target {
    id: CheckpointId,
    tree: TreeId,
    skipped: Vec<SkippedFile>,
}

impl Target {
    /// The checkpoint `rev` names (the branch, for a switch), once the HEAD update
    /// `options` asks for is known to be possible.
    fn of(snapshot: &Snapshot, rev: &str, options: &RestoreOptions) -> Result<Target> {
        check_head_update(snapshot, &options.head, &options.paths)?;
        let rev = match &options.head {
            HeadUpdate::SwitchBranch(name) => name.as_str(),
            _ => rev,
        };
        let id = snapshot.resolve(rev)?;
        let record = snapshot.checkpoint(id)?;
        Ok(Target {
            id,
            tree: record.tree,
            skipped: record.skipped,
        })
    }
}

/// The final transaction of a restore: clears the marker, moves HEAD as `options` ask, and
/// forgets the stat-cache entries of the paths written and deleted.
fn finish(
    store: &Store,
    target: CheckpointId,
    filter: &PathFilter,
    options: &RestoreOptions,
    report: &RestoreReport,
) -> Result<()> {
    let _span = crate::trace::span("restore: record the restore as done");
    let txn = store.transaction()?;
    txn.clear_restoring()?;
    match &options.head {
        HeadUpdate::MoveBranch if filter.is_everything() => txn.move_head(target)?,
        HeadUpdate::MoveBranch => {}
        HeadUpdate::NewBranch(name) => {
            txn.create_branch(name, target)?;
            txn.set_head(&Head::Branch(name.to_string()))?;
        }
        HeadUpdate::SwitchBranch(name) => txn.set_head(&Head::Branch(name.clone()))?,
    }
    txn.forget_cached(&report.written)?;
    txn.forget_cached(&report.deleted)?;
    txn.commit()
}

/// Removes the safety checkpoint `id` that a restore made and no longer needs, with the
/// data only it holds, as `drop` would. Nothing points at it: it was saved beside HEAD's
/// branch, and it has no children.
fn discard(store: &Store, id: CheckpointId) -> Result<()> {
    let plan =
        crate::ops::gc::plan_drop(&store.snapshot()?, &BTreeSet::from([id]), &BTreeSet::new())?;
    crate::ops::gc::commit(store, &plan)
}

/// Refuses, before anything changes, a HEAD update that the final transaction would
/// refuse: a taken or invalid new branch name, a missing branch, or paths with either.
fn check_head_update(snapshot: &Snapshot, head: &HeadUpdate, paths: &[Vec<u8>]) -> Result<()> {
    match head {
        HeadUpdate::MoveBranch => return Ok(()),
        HeadUpdate::NewBranch(name) => {
            if snapshot.branch(name.as_str())?.is_some() {
                return Err(Error::BranchExists(name.to_string()));
            }
        }
        HeadUpdate::SwitchBranch(name) => {
            if snapshot.branch(name)?.is_none() {
                return Err(Error::UnknownBranch(name.clone()));
            }
        }
    }
    if !paths.is_empty() {
        return Err(Error::InvalidArgument(
            "a fork or switch restores the whole worktree, not paths".into(),
        ));
    }
    Ok(())
}
