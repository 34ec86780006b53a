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
//!    filesystem takes, no two names it takes for one (`collisions.rs`), room for the
//!    new bytes. A refused restore (and `--dry-run`) stops here, before the restore
//!    is recorded; the safety checkpoint goes again, so
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
mod collisions;
mod plan;
mod preflight;

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::diff::PathFilter;
use crate::git::repo::Repo;
use crate::model::branch::BranchName;
use crate::model::operation::{NewOperation, OpKind, OpStep, View, ViewChange, WorktreeChange};
use crate::model::{Head, PendingTrees, SkippedFile};
use crate::ops::save::{self, Warning};
use crate::progress::Progress;
use crate::settings::Settings;
use crate::storage::{Snapshot, Store, StoreRead};
use crate::text::counted;
use crate::{CheckpointId, Error, Result, TreeId};
use apply::apply;
pub(crate) use collisions::check_no_collisions;
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
    /// How the operation log records this restore, and what its final transaction also
    /// changes (an undo, a redo, an `op restore`, a pull); `None`: a restore, fork or
    /// switch as `head` says.
    pub operation: Option<OpStep>,
    /// What a restore that moves no branch elsewhere is called, as its caller names it
    /// (`restore of <session>'s files to <rev>`): the safety checkpoint is saved
    /// `before <it>`, and the operation log records it so; `None`: `restore to <short
    /// id>`.
    pub named: Option<String>,
    /// Leave the operation log's record to the caller, which saves what the restore
    /// made of the worktree and records the restore in that save's transaction (a
    /// session-limited restore, [`crate::ops::session_restore`]): when the restore
    /// wrote something, its final transaction moves HEAD's branch to the safety
    /// checkpoint (the result's parent, as a save would have moved it) and records
    /// nothing, and [`RestoreReport::unrecorded`] holds the record. Not with
    /// `operation`.
    pub record_with_result: bool,
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
    /// HEAD and every branch stay where they are, also while the restore runs: the
    /// operation's own change ([`RestoreOptions::operation`]) says where they go (an
    /// undo, a redo, an `op restore`).
    Keep,
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
    /// The number the operation log gave the restore, when it changed anything.
    pub operation: Option<u64>,
    /// With [`RestoreOptions::record_with_result`], the record the caller is to commit
    /// with the restore's result, when the restore wrote something.
    pub unrecorded: Option<NewOperation>,
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
    let view_before = before.view()?;
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
    if let (true, HeadUpdate::MoveBranch | HeadUpdate::Keep, Some(safety)) = (
        changes.is_empty() && now.leftovers.is_empty(),
        &options.head,
        report.safety_checkpoint,
    ) {
        drop(snapshot);
        if discard(store, safety).is_ok() {
            report.safety_checkpoint = None;
        }
        finish(store, target.id, &filter, options, &mut report, view_before)?;
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
    finish(store, target.id, &filter, options, &mut report, view_before)?;
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
        let message = match (&options.operation, &options.head, &options.named) {
            (Some(step), _, _) => format!("before {}", step.summary),
            (None, HeadUpdate::MoveBranch | HeadUpdate::Keep, Some(named)) => {
                format!("before {named}")
            }
            (None, HeadUpdate::MoveBranch | HeadUpdate::Keep, None) => {
                format!("before restore to {short}")
            }
            (None, HeadUpdate::NewBranch(name), _) => format!("before fork {name} at {short}"),
            (None, HeadUpdate::SwitchBranch(name), _) => format!("before switch to {name}"),
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
                    for_operation: target.for_operation,
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
    let moves = match options.head {
        HeadUpdate::Keep => false,
        HeadUpdate::MoveBranch => filter.is_everything(),
        HeadUpdate::NewBranch(_) | HeadUpdate::SwitchBranch(_) => true,
    };
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
    /// Whether an undo, a redo or an `op restore` restores it, whose paths may name
    /// nothing any more.
    for_operation: bool,
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
        // An `op restore` may return to a checkpoint that its final transaction brings
        // back from a drop: named by its full id, read from where the drop keeps it.
        let undropped = (options.operation.iter())
            .flat_map(|step| &step.change.undrop)
            .find(|id| id.hex() == rev);
        let (id, record) = match undropped {
            Some(id) => match snapshot.dropped(*id)? {
                Some(record) => (*id, record),
                None => return Err(Error::UnknownRevision(rev.to_string())),
            },
            None => {
                let id = snapshot.resolve(rev)?;
                (id, snapshot.checkpoint(id)?)
            }
        };
        Ok(Target {
            id,
            tree: record.tree,
            skipped: record.skipped,
            for_operation: options.operation.is_some(),
        })
    }
}

/// The final transaction of a restore: clears the marker, moves HEAD as `options` ask,
/// forgets the stat-cache entries of the paths written and deleted, and records the
/// operation (with `view_before`, the references when the restore began) when it
/// changed anything, or was asked to by an undo, a redo or an `op restore`: its number
/// goes into `report`. With [`RestoreOptions::record_with_result`], a restore that
/// wrote something leaves the record to its caller ([`RestoreReport::unrecorded`]).
fn finish(
    store: &Store,
    target: CheckpointId,
    filter: &PathFilter,
    options: &RestoreOptions,
    report: &mut RestoreReport,
    view_before: View,
) -> Result<()> {
    let _span = crate::trace::span("restore: record the restore as done");
    let step = match &options.operation {
        Some(step) => step.clone(),
        None => default_step(&store.snapshot()?, target, options)?,
    };
    let txn = store.transaction()?;
    txn.clear_restoring()?;
    match &options.head {
        HeadUpdate::MoveBranch if filter.is_everything() => txn.move_head(target)?,
        HeadUpdate::MoveBranch | HeadUpdate::Keep => {}
        HeadUpdate::NewBranch(name) => {
            txn.create_branch(name, target)?;
            txn.set_head(&Head::Branch(name.to_string()))?;
        }
        HeadUpdate::SwitchBranch(name) => txn.set_head(&Head::Branch(name.clone()))?,
    }
    txn.forget_cached(&report.written)?;
    txn.forget_cached(&report.deleted)?;
    // The operation log (docs/undo.md): in this same transaction, or not at all.
    let wrote = !(report.written.is_empty() && report.deleted.is_empty());
    let worktree = match report.worktree.or(view_before.current()) {
        Some(before) if wrote => Some(WorktreeChange {
            before,
            after: options.paths.is_empty().then_some(target),
            paths: options.paths.clone(),
        }),
        _ => None,
    };
    let deferred = options.record_with_result && options.operation.is_none();
    if let (true, Some(_)) = (deferred, &worktree) {
        // The caller saves the result, a child of the safety checkpoint, and records
        // the restore in that save's transaction.
        if let Some(safety) = report.safety_checkpoint {
            txn.move_head(safety)?;
        }
        let mut operation = NewOperation::new(step.kind, step.summary, view_before);
        operation.worktree = worktree;
        report.unrecorded = Some(operation);
        return txn.commit();
    }
    let changed = worktree.is_some() || txn.view()? != view_before;
    report.operation = match options.operation.is_some() || changed {
        true => Some(txn.record_step(step, view_before, worktree)?),
        false => None,
    };
    txn.commit()
}

/// How the operation log records a restore, fork or switch that no caller described.
fn default_step(
    snapshot: &Snapshot,
    target: CheckpointId,
    options: &RestoreOptions,
) -> Result<OpStep> {
    let short = snapshot.short_id(target)?;
    let (kind, summary) = match &options.head {
        HeadUpdate::MoveBranch | HeadUpdate::Keep => match &options.named {
            Some(named) => (OpKind::Restore, named.clone()),
            None if options.paths.is_empty() => (OpKind::Restore, format!("restore to {short}")),
            None => (
                OpKind::Restore,
                format!(
                    "restore of {} to {short}",
                    counted(options.paths.len(), "path")
                ),
            ),
        },
        HeadUpdate::NewBranch(name) => (OpKind::Fork, format!("fork {name} at {short}")),
        HeadUpdate::SwitchBranch(name) => (OpKind::Switch, format!("switch to {name}")),
    };
    Ok(OpStep {
        kind,
        summary,
        change: ViewChange::default(),
    })
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
        HeadUpdate::MoveBranch | HeadUpdate::Keep => return Ok(()),
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
