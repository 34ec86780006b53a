//! `op restore <op>`: back (or forward) to the state right after any operation: every
//! reference as that operation left it, the dropped checkpoints that state names
//! brought back, and the worktree restored to the checkpoint that held it then (after
//! saving any unsaved changes, as every restore does).

use super::carry::{self, check_present, moves, Planned, UndoOptions, UndoReport};
use super::history::History;
use crate::git::repo::Repo;
use crate::model::operation::{OpKind, OpStep, ViewChange};
use crate::storage::{Store, StoreRead};
use crate::{Error, Result};

/// Returns the store and the worktree to the state right after operation `number`.
///
/// The worktree goes to the checkpoint that held it whole after the operation: a whole
/// restore's target, or for an operation that left the worktree alone, the checkpoint
/// HEAD named after it. An operation that changed some paths only (a restore of paths,
/// a revert) left a worktree no checkpoint holds: refused, as is one whose checkpoints
/// a gc removed. Checkpoints dropped since stay dropped unless the state names them.
pub fn restore_op(
    repo: &Repo,
    store: &Store,
    number: u64,
    options: &UndoOptions,
) -> Result<UndoReport> {
    let planned = {
        let snapshot = store.snapshot()?;
        let history = History::read(&snapshot)?;
        let entry = history.get(number)?;
        let op = &entry.op;
        if let Some(lost) = &op.lost {
            return Err(Error::CannotUndo {
                op: number,
                why: format!(
                    "cannot be returned to: gc removed checkpoint {} since",
                    lost.id.hex()
                ),
            });
        }
        let worktree = match &op.worktree {
            Some(change) => Some(change.after.ok_or_else(|| Error::CannotUndo {
                op: number,
                why: "cannot be returned to: it changed some paths of the worktree only, and no checkpoint holds the worktree it left ('undo' and 'redo' go back and forth over it)".into(),
            })?),
            None => op.after.current(),
        };
        let now = snapshot.view()?;
        let mut change = ViewChange::towards(&op.after, &now);
        for id in change.targets().chain(worktree).collect::<Vec<_>>() {
            if !snapshot.has_checkpoint(id)? && snapshot.dropped(id)?.is_some() {
                change.undrop.push(id);
            }
        }
        change.undrop.sort();
        change.undrop.dedup();
        check_present(
            &snapshot,
            number,
            "cannot be returned to",
            &change,
            worktree,
        )?;
        let moved = moves(&change, &now, None);
        let head = change.head.clone().map(|head| (now.head.clone(), head));
        Planned {
            target: number,
            target_op: op.clone(),
            step: OpStep {
                kind: OpKind::OpRestore(number),
                summary: format!("op restore to after op {number} ({})", op.summary),
                change,
            },
            worktree: worktree.map(|id| (id, Vec::new())),
            moved,
            head,
        }
    };
    carry::carry(repo, store, planned, options)
}
