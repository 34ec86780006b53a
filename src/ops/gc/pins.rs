//! Pins: checkpoints gc never removes (`pin`, `unpin`).

use crate::storage::{Store, StoreRead};
use crate::{CheckpointId, Result};

/// Pins the checkpoint `rev` names, so that gc never removes it. Returns it and whether
/// it was not pinned before.
pub fn pin(store: &Store, rev: &str) -> Result<(CheckpointId, bool)> {
    set_pin(store, rev, true)
}

/// Unpins the checkpoint `rev` names. Returns it and whether it was pinned.
pub fn unpin(store: &Store, rev: &str) -> Result<(CheckpointId, bool)> {
    set_pin(store, rev, false)
}

fn set_pin(store: &Store, rev: &str, pinned: bool) -> Result<(CheckpointId, bool)> {
    let id = store.snapshot()?.resolve(rev)?;
    let txn = store.transaction()?;
    let changed = txn.set_pinned(id, pinned)?;
    if changed {
        txn.commit()?;
    } else {
        txn.abort()?;
    }
    Ok((id, changed))
}
