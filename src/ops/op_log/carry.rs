//! Carrying out an undo, a redo or an `op restore` once it is planned: the references
//! moved, dropped checkpoints brought back or dropped again, and the worktree restored
//! (its unsaved changes saved first, as every restore does), all recorded as one
//! operation in the transaction that ends it.

use std::sync::Arc;

use crate::git::repo::Repo;
use crate::model::operation::{OpKind, OpStep, Operation, View, ViewChange};
use crate::ops::restore::{self, HeadUpdate, RestoreOptions, RestoreReport};
use crate::progress::Progress;
use crate::settings::Settings;
use crate::storage::{Snapshot, Store};
use crate::{CheckpointId, Error, Result};

/// How an undo, a redo or an `op restore` runs.
#[derive(Clone, Debug, Default)]
pub struct UndoOptions {
    /// The `checkpoint.*` settings its restore's safety save applies, from the caller's
    /// [`crate::ops::workspace::Workspace`].
    pub settings: Settings,
    /// Where its restore reports progress, if anywhere.
    pub progress: Option<Arc<dyn Progress>>,
}

/// A branch an undo, a redo or an `op restore` moved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Moved {
    /// The branch.
    pub name: String,
    /// Its tip before (`None`: it did not exist).
    pub from: Option<CheckpointId>,
    /// Its tip after (`None`: it was deleted).
    pub to: Option<CheckpointId>,
    /// Whether checkpoints were saved on it since the operation undone: the branch no
    /// longer reaches them, and `redo` brings them back.
    pub saved_since: bool,
}

/// What an undo, a redo or an `op restore` did.
#[derive(Debug)]
pub struct UndoReport {
    /// What it was: an undo, a redo or an `op restore`.
    pub kind: OpKind,
    /// The number of the operation it acted on.
    pub target: u64,
    /// That operation's record.
    pub target_op: Operation,
    /// The number the operation log gave it.
    pub operation: u64,
    /// The branches it moved, created or deleted.
    pub moved: Vec<Moved>,
    /// What HEAD named before and after, when that changed.
    pub head: Option<(crate::model::Head, crate::model::Head)>,
    /// Checkpoints it brought back from a drop.
    pub undropped: Vec<CheckpointId>,
    /// Checkpoints it took out of the history again.
    pub dropped: Vec<CheckpointId>,
    /// The restore that put the worktree back, when the worktree was to change.
    pub restore: Option<RestoreReport>,
}

/// An undo, a redo or an `op restore`, planned and checked, not yet carried out.
pub(super) struct Planned {
    /// The operation it acts on.
    pub target: u64,
    /// Its record.
    pub target_op: Operation,
    /// How it is recorded and what it changes besides the worktree.
    pub step: OpStep,
    /// The checkpoint the worktree goes back to, limited to these paths (none: all).
    pub worktree: Option<(CheckpointId, Vec<Vec<u8>>)>,
    /// The branches it moves.
    pub moved: Vec<Moved>,
    /// What HEAD names before and after, when that changes.
    pub head: Option<(crate::model::Head, crate::model::Head)>,
}

/// Checks that everything `change` points a reference at, and `worktree`, will be in
/// the store: each is there now and not dropped by the change, or is a dropped
/// checkpoint the change brings back. Otherwise operation `op` `cannot` (be undone,
/// be returned to), and says which checkpoint is gone.
pub(super) fn check_present(
    snapshot: &Snapshot,
    op: u64,
    cannot: &str,
    change: &ViewChange,
    worktree: Option<CheckpointId>,
) -> Result<()> {
    let gone = |id: CheckpointId| Error::CannotUndo {
        op,
        why: format!(
            "{cannot}: checkpoint {} is no longer in the store",
            id.hex()
        ),
    };
    for id in &change.undrop {
        if snapshot.dropped(*id)?.is_none() {
            return Err(gone(*id));
        }
    }
    let wanted = change
        .targets()
        .chain(worktree)
        .chain(change.parents.iter().map(|(id, _)| *id));
    for id in wanted {
        let present = snapshot.has_checkpoint(id)? && !change.drop.contains(&id);
        if !present && !change.undrop.contains(&id) {
            return Err(gone(id));
        }
    }
    Ok(())
}

/// The branches `change` moves from `now`, each with `saved_since` when its tip now is
/// not the one `left` (the operation's after-view) gave it.
pub(super) fn moves(change: &ViewChange, now: &View, left: Option<&View>) -> Vec<Moved> {
    let tip = |view: &View, name: &str| {
        (view.branches.iter())
            .find(|(n, _)| n == name)
            .map(|(_, id)| *id)
    };
    (change.branches.iter())
        .map(|(name, to)| {
            let from = tip(now, name);
            Moved {
                name: name.clone(),
                from,
                to: *to,
                saved_since: left.is_some_and(|left| tip(left, name) != from),
            }
        })
        .collect()
}

/// Carries out `planned`: a restore of the worktree whose final transaction makes the
/// change and records the operation, or, when the worktree stays, one transaction
/// that does both.
pub(super) fn carry(
    repo: &Repo,
    store: &Store,
    planned: Planned,
    options: &UndoOptions,
) -> Result<UndoReport> {
    let kind = planned.step.kind;
    let undropped = planned.step.change.undrop.clone();
    let dropped = planned.step.change.drop.clone();
    let (operation, restore) = match planned.worktree {
        Some((target, paths)) => {
            let restore_options = RestoreOptions {
                paths,
                settings: options.settings.clone(),
                progress: options.progress.clone(),
                head: HeadUpdate::Keep,
                operation: Some(planned.step),
                ..RestoreOptions::default()
            };
            let report = restore::restore(repo, store, &target.hex(), &restore_options)?;
            let number = report.operation.ok_or_else(|| {
                Error::Internal("a restore asked to record an operation recorded none".into())
            })?;
            (number, Some(report))
        }
        None => {
            let txn = store.transaction()?;
            let before = txn.view()?;
            let number = txn.record_step(planned.step, before, None)?;
            txn.commit()?;
            (number, None)
        }
    };
    Ok(UndoReport {
        kind,
        target: planned.target,
        target_op: planned.target_op,
        operation,
        moved: planned.moved,
        head: planned.head,
        undropped,
        dropped,
        restore,
    })
}
