//! Steps 2 and 3 of a gc (see [`super`]): the plan carried out in one write
//! transaction, then the file compacted.

use std::path::Path;
use std::time::Instant;

use super::{Outcome, Plan};
use crate::model::Head;
use crate::storage::Store;
use crate::{Error, Result};

/// Carries out `plan` on `store` (see the module comment for the order), compacting the
/// file if `compact` says so given its size before, and measures the file before and
/// after.
pub fn apply(
    store: &mut Store,
    plan: &Plan,
    started: Instant,
    compact: impl FnOnce(u64) -> bool,
) -> Result<Outcome> {
    let file_before = file_size(&store.path)?;
    crate::fault::point("gc-planned");
    commit(store, plan)?;
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
    })
}

/// Step 2 of the module comment: carries out `plan` in one transaction, without
/// compacting the file.
pub fn commit(store: &Store, plan: &Plan) -> Result<()> {
    let txn = store.transaction()?;
    for (id, new_parents) in &plan.reparented {
        txn.set_parents(*id, new_parents.clone())?;
    }
    txn.remove_checkpoints(plan.removed.iter().map(|removal| removal.id))?;
    txn.remove_trees(&plan.trees)?;
    txn.remove_chunks(&plan.chunks)?;
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
    crate::fault::point("gc-before-commit");
    txn.commit()
}

/// The store file's size.
pub(super) fn file_size(path: &Path) -> Result<u64> {
    Ok(std::fs::metadata(path)
        .map_err(|e| Error::io(path, e))?
        .len())
}
