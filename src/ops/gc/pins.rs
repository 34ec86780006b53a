//! Pins: checkpoints gc never removes (`pin`, `unpin`).

use crate::model::operation::{NewOperation, OpKind};
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
    let (id, short) = {
        let snapshot = store.snapshot()?;
        let id = snapshot.resolve(rev)?;
        (id, snapshot.short_id(id)?)
    };
    let txn = store.transaction()?;
    let before = txn.view()?;
    let changed = txn.set_pinned(id, pinned)?;
    if changed {
        let (kind, verb) = match pinned {
            true => (OpKind::Pin, "pin"),
            false => (OpKind::Unpin, "unpin"),
        };
        txn.record_operation(NewOperation::new(kind, format!("{verb} {short}"), before))?;
        txn.commit()?;
    } else {
        txn.abort()?;
    }
    Ok((id, changed))
}
