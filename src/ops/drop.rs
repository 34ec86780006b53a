//! `drop`: checkpoints taken out of the history, kept for `undo`.
//!
//! The plan is gc's ([`crate::ops::gc::plan_drop`]: what goes, which children are
//! re-linked to the dropped checkpoints' parents, which branches and HEAD move back, the
//! refusals). Carrying it out differs from a gc: the records move to the `dropped` table
//! under their ids and nothing they reach is deleted, so that `undo` puts everything
//! back as it was. A gc after the undo window (docs/undo.md) deletes them and what only
//! they reached.

use crate::model::operation::{NewOperation, OpKind};
use crate::model::Head;
use crate::ops::gc::Plan;
use crate::storage::{Store, StoreRead};
use crate::Result;

/// What became of the checkpoints a drop took.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dropped {
    /// Kept for undo until a gc after the undo window.
    KeptForUndo,
    /// Deleted for good, with what only they reached: one of them is damaged (its tree
    /// or one below it does not load), and keeping it would stop every gc.
    Deleted,
}

/// Carries out `plan` (from [`crate::ops::gc::plan_drop`]) in one transaction, recorded
/// in the operation log.
pub fn drop(store: &Store, plan: &Plan) -> Result<Dropped> {
    let (summary, old_parents) = {
        let snapshot = store.snapshot()?;
        let summary = match plan.removed.as_slice() {
            [one] => format!("drop {}", one.short_id),
            all => format!("drop {} checkpoints", all.len()),
        };
        let damaged = (plan.removed.iter()).any(|r| {
            snapshot
                .tree_graph(std::iter::once(r.checkpoint.tree))
                .is_err()
        });
        if damaged {
            std::mem::drop(snapshot);
            crate::ops::gc::commit_recorded(store, plan, OpKind::Drop, summary)?;
            return Ok(Dropped::Deleted);
        }
        let mut old_parents = Vec::new();
        for (id, _) in &plan.reparented {
            old_parents.push((*id, snapshot.checkpoint(*id)?.parents));
        }
        (summary, old_parents)
    };
    let ids: Vec<_> = plan.removed.iter().map(|removal| removal.id).collect();
    let txn = store.transaction()?;
    let before = txn.view()?;
    for (id, parents) in &plan.reparented {
        txn.set_parents(*id, parents.clone())?;
    }
    txn.drop_checkpoints(&ids)?;
    for (name, tip) in &plan.moved_branches {
        txn.set_branch(name, *tip)?;
    }
    if let Some(id) = plan.moved_head {
        txn.set_head(&Head::Detached(id))?;
    }
    for name in &plan.forgotten_fetched {
        txn.remove_remote_branch(name)?;
    }
    let mut op = NewOperation::new(OpKind::Drop, summary, before);
    op.dropped = ids;
    op.reparented = old_parents;
    txn.record_operation(op)?;
    txn.commit()?;
    Ok(Dropped::KeptForUndo)
}
