//! The operation log's tables (`operations`, `dropped`) and the references an operation
//! records (docs/design.md, "The operation log"). A record is written by
//! [`Transaction::record_operation`] in the transaction of the change it records; gc
//! keeps what the records of the undo window need ([`Snapshot::undo_holds`]) and settles
//! the rest ([`Transaction::settle_operations`]).

use std::collections::{BTreeSet, HashSet};

use redb::{ReadableTable, TableDefinition, TableHandle};

use super::records;
use super::tables::*;
use super::{Snapshot, Transaction};
use crate::format::codec;
use crate::model::operation::{
    Lost, NewOperation, OpStep, Operation, View, ViewChange, WorktreeChange, KEPT_PAST_WINDOW,
    UNDO_WINDOW_NS,
};
use crate::model::Checkpoint;
use crate::{CheckpointId, Error, Result, TreeId};

/// What the operations of the undo window keep from gc.
#[derive(Debug, Default)]
pub struct UndoHolds {
    /// Checkpoints they need, each with the number of the newest operation needing it.
    pub checkpoints: Vec<(CheckpointId, u64)>,
    /// Dropped checkpoints they can bring back, with their records: gc marks what these
    /// reach as live.
    pub dropped: Vec<(CheckpointId, Checkpoint)>,
}

impl Snapshot<'_> {
    /// The references now: HEAD, branches, pins and fetched branches.
    pub fn view(&self) -> Result<View> {
        let fetched = match self.optional(REMOTE_BRANCHES)? {
            Some(table) => records::branches(&table)?,
            None => Vec::new(),
        };
        Ok(View {
            head: self.head()?,
            branches: self.branches()?,
            pins: self
                .pins()?
                .into_iter()
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect(),
            fetched,
        })
    }

    /// Every record of the operation log, oldest first; a damaged one is an error.
    pub fn operations(&self) -> Result<Vec<(u64, Operation)>> {
        let Some(table) = self.optional(OPERATIONS)? else {
            return Ok(Vec::new());
        };
        load_operations(&table)
    }

    /// The record of a dropped checkpoint that `undo` can still bring back, if the store
    /// keeps it.
    pub fn dropped(&self, id: CheckpointId) -> Result<Option<Checkpoint>> {
        let Some(table) = self.optional(DROPPED)? else {
            return Ok(None);
        };
        let found = table.get(id.0)?;
        found
            .map(|bytes| codec::decode(bytes.value(), &format!("dropped checkpoint {id}")))
            .transpose()
    }

    /// What the operations of the undo window, those made at most
    /// [`UNDO_WINDOW_NS`] before `now_ns`, not marked lost and of a kind that can be
    /// undone (not a gc), keep from gc: every checkpoint one needs, and the dropped
    /// checkpoints they can bring back with the parents those name.
    pub fn undo_holds(&self, now_ns: i128) -> Result<UndoHolds> {
        let mut holds = UndoHolds::default();
        let dropped = self.optional(DROPPED)?;
        for (number, op) in self.operations()? {
            let in_window = op.time_ns >= now_ns - UNDO_WINDOW_NS;
            if !in_window || op.lost.is_some() || !op.kind.undoable() {
                continue;
            }
            holds.checkpoints.extend(op.needs().map(|id| (id, number)));
            let Some(table) = &dropped else { continue };
            for id in &op.dropped {
                if let Some(bytes) = table.get(id.0)? {
                    let record: Checkpoint =
                        codec::decode(bytes.value(), &format!("dropped checkpoint {id}"))?;
                    holds
                        .checkpoints
                        .extend(record.parents.iter().map(|p| (*p, number)));
                    holds.dropped.push((*id, record));
                }
            }
        }
        Ok(holds)
    }
}

/// Every record of `table`, oldest first.
fn load_operations(
    table: &impl ReadableTable<u64, &'static [u8]>,
) -> Result<Vec<(u64, Operation)>> {
    table
        .iter()?
        .map(|item| {
            let (key, value) = item?;
            let number = key.value();
            let op = codec::decode(value.value(), &format!("operation {number}"))?;
            Ok((number, op))
        })
        .collect()
}

/// What [`Transaction::settle_operations`] did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Settled {
    /// Dropped checkpoints deleted for good: past the undo window, or their tree went.
    pub purged: usize,
    /// Records marked as no longer undoable.
    pub lost: usize,
    /// Records deleted: past the undo window and not among the newest kept.
    pub pruned: usize,
}

impl Transaction<'_> {
    /// Whether the store has table `table` yet.
    fn has_table<K: redb::Key + 'static, V: redb::Value + 'static>(
        &self,
        table: TableDefinition<K, V>,
    ) -> Result<bool> {
        Ok(self.txn.list_tables()?.any(|t| t.name() == table.name()))
    }

    /// The references as this transaction sees them.
    pub fn view(&self) -> Result<View> {
        let fetched = match self.has_table(REMOTE_BRANCHES)? {
            true => records::branches(&self.txn.open_table(REMOTE_BRANCHES)?)?,
            false => Vec::new(),
        };
        Ok(View {
            head: self.head()?,
            branches: records::branches(&self.txn.open_table(BRANCHES)?)?,
            pins: records::pins(&self.txn.open_table(PINS)?)?
                .into_iter()
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect(),
            fetched,
        })
    }

    /// Appends `new` to the operation log, with the time, what opened the store and the
    /// references as this transaction leaves them, and returns its number. Call it last,
    /// just before [`Transaction::commit`]: the record and the change it records commit
    /// together or not at all (docs/design.md invariant 27).
    pub fn record_operation(&self, new: NewOperation) -> Result<u64> {
        let after = self.view()?;
        let op = Operation {
            time_ns: crate::clock::now_ns(),
            invocation: self.invocation.clone(),
            kind: new.kind,
            summary: new.summary,
            before: new.before,
            after,
            worktree: new.worktree,
            dropped: new.dropped,
            undropped: new.undropped,
            reparented: new.reparented,
            lost: None,
        };
        let mut table = self.txn.open_table(OPERATIONS)?;
        let number = match table.last()? {
            Some((last, _)) => last.value() + 1,
            None => 1,
        };
        table.insert(number, codec::encode(&op).as_slice())?;
        crate::fault::point("op-recorded");
        Ok(number)
    }

    /// Makes `step`'s change ([`Transaction::apply_change`]) and records the operation,
    /// with `before` the references when it began and `worktree` what it did to the
    /// worktree: what it dropped and brought back, and the parents it changed as they
    /// were, go into the record, so that undoing it can put them back.
    pub fn record_step(
        &self,
        step: OpStep,
        before: View,
        worktree: Option<WorktreeChange>,
    ) -> Result<u64> {
        let mut reparented = Vec::new();
        for (id, _) in &step.change.parents {
            reparented.push((*id, self.checkpoint(*id)?.parents));
        }
        self.apply_change(&step.change)?;
        self.record_operation(NewOperation {
            kind: step.kind,
            summary: step.summary,
            before,
            worktree,
            dropped: step.change.drop,
            undropped: step.change.undrop,
            reparented,
        })
    }

    /// Takes checkpoints out of the history into the `dropped` table, record bytes and
    /// id unchanged, so that `undo` can put them back; their change summaries go (`log`
    /// computes one when it needs it). What they reach stays until a gc after the undo
    /// window.
    pub fn drop_checkpoints(&self, ids: &[CheckpointId]) -> Result<()> {
        let mut checkpoints = self.txn.open_table(CHECKPOINTS)?;
        let mut dropped = self.txn.open_table(DROPPED)?;
        let mut summaries = self.txn.open_table(SUMMARIES)?;
        for id in ids {
            let bytes = match checkpoints.remove(id.0)? {
                Some(bytes) => bytes.value().to_vec(),
                None => return Err(Error::Corrupt(format!("checkpoint {id} is missing"))),
            };
            dropped.insert(id.0, bytes.as_slice())?;
            summaries.remove(id.0)?;
        }
        Ok(())
    }

    /// Brings dropped checkpoints back into the history under their ids.
    pub fn undrop_checkpoints(&self, ids: &[CheckpointId]) -> Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        let mut checkpoints = self.txn.open_table(CHECKPOINTS)?;
        let mut dropped = self.txn.open_table(DROPPED)?;
        for id in ids {
            let bytes = match dropped.remove(id.0)? {
                Some(bytes) => bytes.value().to_vec(),
                None => {
                    return Err(Error::Corrupt(format!(
                        "dropped checkpoint {id} is missing"
                    )))
                }
            };
            checkpoints.insert(id.0, bytes.as_slice())?;
        }
        Ok(())
    }

    /// Makes `change`: brings back and drops checkpoints, gives parents, then points
    /// HEAD, branches, pins and fetched branches as it says. Every checkpoint it points a
    /// reference at must be in the store once the change is made (the caller checked:
    /// else [`Error::Corrupt`]).
    pub fn apply_change(&self, change: &ViewChange) -> Result<()> {
        self.undrop_checkpoints(&change.undrop)?;
        self.drop_checkpoints(&change.drop)?;
        for (id, parents) in &change.parents {
            self.set_parents(*id, parents.clone())?;
        }
        {
            let checkpoints = self.txn.open_table(CHECKPOINTS)?;
            for id in change.targets() {
                if checkpoints.get(id.0)?.is_none() {
                    return Err(Error::Corrupt(format!("checkpoint {id} is missing")));
                }
            }
        }
        if let Some(head) = &change.head {
            self.set_head(head)?;
        }
        {
            let mut branches = self.txn.open_table(BRANCHES)?;
            for (name, tip) in &change.branches {
                match tip {
                    Some(tip) => branches.insert(name.as_str(), tip.0)?,
                    None => branches.remove(name.as_str())?,
                };
            }
        }
        for (id, pinned) in &change.pins {
            self.set_pinned(*id, *pinned)?;
        }
        for (name, tip) in &change.fetched {
            match tip {
                Some(tip) => self.set_remote_branch(name, *tip)?,
                None => self.remove_remote_branch(name)?,
            }
        }
        Ok(())
    }

    /// What a gc does to the operation log, in its own transaction, with `removed` the
    /// checkpoints it removes and `trees` (sorted) the trees it deletes, at `now_ns`:
    /// deletes the dropped checkpoints no operation of the undo window can bring back
    /// any more (and any whose tree goes), marks each record that needs a checkpoint
    /// that goes as lost (so that undo says what went, and when), and deletes the
    /// records past the window but the newest [`KEPT_PAST_WINDOW`].
    pub fn settle_operations(
        &self,
        removed: &HashSet<CheckpointId>,
        trees: &[TreeId],
        now_ns: i128,
    ) -> Result<Settled> {
        let mut settled = Settled::default();
        if !self.has_table(OPERATIONS)? {
            return Ok(settled);
        }
        let ops = load_operations(&self.txn.open_table(OPERATIONS)?)?;
        let window_start = now_ns - UNDO_WINDOW_NS;
        let held: HashSet<CheckpointId> = ops
            .iter()
            .filter(|(_, op)| op.time_ns >= window_start && op.lost.is_none())
            .flat_map(|(_, op)| op.dropped.iter().copied())
            .collect();
        let mut gone: HashSet<CheckpointId> = removed.clone();
        if self.has_table(DROPPED)? {
            let mut dropped = self.txn.open_table(DROPPED)?;
            let mut purge = Vec::new();
            for item in dropped.iter()? {
                let (key, value) = item?;
                let id = CheckpointId(key.value());
                // A record that does not decode cannot be brought back anyway.
                let tree_goes =
                    match codec::decode::<Checkpoint>(value.value(), "dropped checkpoint") {
                        Ok(record) => trees.binary_search(&record.tree).is_ok(),
                        Err(_) => true,
                    };
                if !held.contains(&id) || tree_goes {
                    purge.push(id);
                }
            }
            for id in purge {
                dropped.remove(id.0)?;
                gone.insert(id);
                settled.purged += 1;
            }
        }
        let mut table = self.txn.open_table(OPERATIONS)?;
        let total = ops.len();
        for (at, (number, mut op)) in ops.into_iter().enumerate() {
            if op.time_ns < window_start && total - at > KEPT_PAST_WINDOW {
                table.remove(number)?;
                settled.pruned += 1;
                continue;
            }
            if op.lost.is_some() {
                continue;
            }
            let first_gone = op.needs().find(|id| gone.contains(id));
            if let Some(id) = first_gone {
                op.lost = Some(Lost {
                    id,
                    time_ns: now_ns,
                });
                table.insert(number, codec::encode(&op).as_slice())?;
                settled.lost += 1;
            }
        }
        Ok(settled)
    }
}
