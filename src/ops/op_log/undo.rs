//! `undo` and `redo`: back to the state before the newest operation in effect, and
//! forward again (an undo of the undo).
//!
//! Undoing an operation puts back what it changed and nothing else: each reference it
//! moved (HEAD, a branch, a pin, a fetched branch) takes the value it had before it,
//! whatever saves did since (saves are not operations: the checkpoints they made stay,
//! and the undo's own record names them, so `redo` returns to them); what it dropped
//! comes back and what it brought back goes again, with the parents it changed; and when
//! it changed the worktree, the worktree is restored to the checkpoint that held it
//! before (its safety checkpoint), limited to the paths it changed, after saving any
//! unsaved changes, as every restore does. References it did not change stay as they
//! are.

use super::carry::{self, check_present, moves, Planned, UndoOptions, UndoReport};
use super::history::{Entry, History};
use crate::git::repo::Repo;
use crate::model::operation::{OpKind, OpStep, ViewChange};
use crate::storage::{Snapshot, Store, StoreRead};
use crate::{Error, Result};

/// Undoes the newest operation in effect (passing over a gc, which nothing undoes).
pub fn undo(repo: &Repo, store: &Store, options: &UndoOptions) -> Result<UndoReport> {
    let planned = {
        let snapshot = store.snapshot()?;
        let history = History::read(&snapshot)?;
        let entry = history.next_undo()?;
        go_back(&snapshot, entry, OpKind::Undo(entry.number))?
    };
    carry::carry(repo, store, planned, options)
}

/// Goes forward again over the newest undo since the last operation: undoes that undo.
pub fn redo(repo: &Repo, store: &Store, options: &UndoOptions) -> Result<UndoReport> {
    let planned = {
        let snapshot = store.snapshot()?;
        let history = History::read(&snapshot)?;
        let (undone, undo) = history.next_redo()?;
        let mut planned = go_back(&snapshot, undo, OpKind::Redo(undone.number))?;
        planned.step.summary = format!("redo of op {} ({})", undone.number, undone.op.summary);
        planned.target = undone.number;
        planned.target_op = undone.op.clone();
        planned
    };
    carry::carry(repo, store, planned, options)
}

/// Undoes operation `number`, which must be the one `undo` would undo, an undo that
/// `redo` would go back on (an undo of an undo is a redo), or a redo of the operation
/// `undo` would undo (an undo of a redo undoes again what it brought back).
pub fn undo_op(
    repo: &Repo,
    store: &Store,
    number: u64,
    options: &UndoOptions,
) -> Result<UndoReport> {
    let planned = {
        let snapshot = store.snapshot()?;
        let history = History::read(&snapshot)?;
        let entry = history.get(number)?;
        if let OpKind::Undo(_) = entry.op.kind {
            match history.next_redo() {
                Ok((_, undo)) if undo.number == number => {}
                _ => return Err(not_newest(number, "undo", "an undo that came since")),
            }
            drop(snapshot);
            return redo(repo, store, options);
        }
        if let Some(why) = entry.refusal() {
            return Err(Error::CannotUndo { op: number, why });
        }
        // A redo is undone by undoing again the operation it brought back.
        let target = match entry.op.kind {
            OpKind::Redo(of) => of,
            _ => number,
        };
        match history.next_undo() {
            Ok(newest) if newest.number == target => {}
            Ok(newest) => {
                let newest = format!("the newest operation in effect is op {}", newest.number);
                return Err(not_newest(number, "undone", &newest));
            }
            Err(_) => return Err(not_newest(number, "undone", "it is undone already")),
        }
        go_back(&snapshot, history.get(target)?, OpKind::Undo(target))?
    };
    carry::carry(repo, store, planned, options)
}

/// The refusal of an undo of an operation that is not the newest in effect.
fn not_newest(op: u64, undone: &str, why: &str) -> Error {
    Error::CannotUndo {
        op,
        why: format!(
            "cannot be {undone} now: {why}; undo goes back one operation at a time, and 'git checkpoint op restore <op>' returns to the state after any"
        ),
    }
}

/// Plans going back to the state before `entry`'s operation, recorded as `kind` (a
/// redo names itself after it is planned).
fn go_back(snapshot: &Snapshot, entry: &Entry, kind: OpKind) -> Result<Planned> {
    if let Some(why) = entry.refusal() {
        return Err(Error::CannotUndo {
            op: entry.number,
            why,
        });
    }
    let op = &entry.op;
    let mut change = ViewChange::towards(&op.before, &op.after);
    change.undrop = op.dropped.clone();
    change.drop = op.undropped.clone();
    change.parents = op.reparented.clone();
    let worktree = op.worktree.as_ref().map(|w| (w.before, w.paths.clone()));
    check_present(
        snapshot,
        entry.number,
        "cannot be undone",
        &change,
        worktree.as_ref().map(|(id, _)| *id),
    )?;
    let now = snapshot.view()?;
    let moved = moves(&change, &now, Some(&op.after));
    let head = change.head.clone().map(|head| (now.head.clone(), head));
    Ok(Planned {
        target: entry.number,
        target_op: op.clone(),
        step: OpStep {
            kind,
            summary: format!("undo of op {} ({})", entry.number, op.summary),
            change,
        },
        worktree,
        moved,
        head,
    })
}
