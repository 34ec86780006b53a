//! Steps 2 and 3 of a gc (see [`super`]): the plan carried out in one write
//! transaction, then the file compacted.

use std::path::Path;
use std::time::Instant;

use super::{Outcome, Plan};
use crate::model::operation::{NewOperation, OpKind};
use crate::model::Head;
use crate::storage::pack::Recompressed;
use crate::storage::Store;
use crate::{Error, Result};

/// Carries out `plan` on `store` (see the module comment for the order), compacting the
/// file if `compact` says so given its size before, and measures the file before and
/// after. Not itself an operation of the operation log (the automatic gc is part of the
/// save it follows); [`super::run`] is.
pub fn apply(
    store: &mut Store,
    plan: &Plan,
    started: Instant,
    compact: impl FnOnce(u64) -> bool,
) -> Result<Outcome> {
    apply_as(store, plan, started, compact, None, Upkeep::Sweep)
}

/// [`commit`], recorded in the operation log as an operation of `kind` (a `drop` of
/// damaged checkpoints, which nothing could bring back: they go for good).
pub fn commit_recorded(store: &Store, plan: &Plan, kind: OpKind, summary: String) -> Result<()> {
    write(store, plan, OpLog::Recorded(kind, summary), Upkeep::Sweep).map(|_| ())
}

/// [`apply`], recorded in the operation log as `operation` (a kind and a summary) when
/// one is given, with the chunks recompressed in the same transaction if `upkeep` says
/// so.
pub(super) fn apply_as(
    store: &mut Store,
    plan: &Plan,
    started: Instant,
    compact: impl FnOnce(u64) -> bool,
    operation: Option<(OpKind, String)>,
    upkeep: Upkeep,
) -> Result<Outcome> {
    let file_before = file_size(&store.path)?;
    crate::fault::point("gc-planned");
    let log = match operation {
        Some((kind, summary)) => OpLog::Recorded(kind, summary),
        None => OpLog::Settled,
    };
    let recompressed = write(store, plan, log, upkeep)?;
    crate::fault::point("gc-committed");
    if compact(file_before) {
        while store.compact()? {
            crate::fault::point("gc-compacting");
        }
    }
    Ok(Outcome {
        file_before,
        file_after: file_size(&store.path)?,
        seconds: started.elapsed().as_secs_f64(),
        recompressed,
    })
}

/// Step 2 of the module comment: carries out `plan` in one transaction, without
/// compacting the file. For taking back a checkpoint an operation has just made and
/// not recorded (a refused restore's safety checkpoint): the operation log is left as
/// it is.
pub fn commit(store: &Store, plan: &Plan) -> Result<()> {
    write(store, plan, OpLog::Untouched, Upkeep::Sweep).map(|_| ())
}

/// What a gc's transaction does to the chunks that stay.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Upkeep {
    /// Nothing: only the packs its removals emptied are rewritten (the automatic gc
    /// after a save, and `drop`, which must stay quick).
    Sweep,
    /// Recompresses what the saves since the last recompression stored
    /// (`git checkpoint gc`; docs/design.md, "Packs and the chunk index").
    Recompress,
}

/// What a gc's transaction does to the operation log.
enum OpLog {
    /// Nothing: it takes back what no operation recorded yet.
    Untouched,
    /// Settles it for what goes ([`crate::storage::Transaction::settle_operations`]).
    Settled,
    /// Settles it and records the gc as this operation.
    Recorded(OpKind, String),
}

/// [`commit`], doing `log` to the operation log and `upkeep` to the chunks in the same
/// transaction; what a recompression did, if it ran.
fn write(store: &Store, plan: &Plan, log: OpLog, upkeep: Upkeep) -> Result<Option<Recompressed>> {
    let txn = store.transaction()?;
    let before = txn.view()?;
    for (id, new_parents) in &plan.reparented {
        txn.set_parents(*id, new_parents.clone())?;
    }
    txn.remove_checkpoints(plan.removed.iter().map(|removal| removal.id))?;
    txn.remove_trees(&plan.trees)?;
    txn.remove_chunks(&plan.chunks)?;
    let recompressed = match upkeep {
        Upkeep::Sweep => None,
        Upkeep::Recompress => Some(txn.recompress()?),
    };
    txn.forget_cached(&plan.stat_cache)?;
    for (name, tip) in &plan.moved_branches {
        txn.set_branch(name, *tip)?;
    }
    if let Some(id) = plan.moved_head {
        txn.set_head(&Head::Detached(id))?;
    }
    for name in &plan.forgotten_fetched {
        txn.remove_remote_branch(name)?;
    }
    txn.record_gc_removals(&plan.session_removals)?;
    // The operation log: what gc removed may be what an old operation needs.
    if !matches!(log, OpLog::Untouched) {
        let removed = plan.removed.iter().map(|removal| removal.id).collect();
        txn.settle_operations(&removed, &plan.trees, crate::clock::now_ns())?;
    }
    if let OpLog::Recorded(kind, summary) = log {
        txn.record_operation(NewOperation::new(kind, summary, before))?;
    }
    crate::fault::point("gc-before-commit");
    txn.commit()?;
    Ok(recompressed)
}

/// The store file's size.
pub(super) fn file_size(path: &Path) -> Result<u64> {
    Ok(std::fs::metadata(path)
        .map_err(|e| Error::io(path, e))?
        .len())
}
