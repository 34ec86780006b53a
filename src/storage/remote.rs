//! The tables that tie checkpoints to git commits (docs/design.md, "Sharing through
//! git"): which commit a checkpoint was exported as or imported from, the id an imported
//! checkpoint had where it was saved, and the fetched branches. Stores made before these
//! tables existed lack them until the first write; a missing table reads as empty.

use std::collections::HashSet;

use redb::{ReadOnlyTable, ReadableTable, TableDefinition};

use super::tables::*;
use super::{Snapshot, Transaction};
use crate::{CheckpointId, Result};

impl Snapshot<'_> {
    /// Opens a table that older stores lack; `None` when it is absent.
    pub(super) fn optional<K: redb::Key + 'static, V: redb::Value + 'static>(
        &self,
        table: TableDefinition<K, V>,
    ) -> Result<Option<ReadOnlyTable<K, V>>> {
        match self.txn.open_table(table) {
            Ok(t) => Ok(Some(t)),
            Err(redb::TableError::TableDoesNotExist(_)) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// The git commit checkpoint `id` was exported as or imported from, if any.
    pub fn commit_of(&self, id: CheckpointId) -> Result<Option<String>> {
        let Some(table) = self.optional(COMMIT_OF)? else {
            return Ok(None);
        };
        let found = table.get(id.0)?;
        Ok(found.map(|v| String::from_utf8_lossy(v.value()).into_owned()))
    }

    /// The checkpoint git commit `commit` (full hex) is the export of, if any.
    pub fn checkpoint_of(&self, commit: &str) -> Result<Option<CheckpointId>> {
        let Some(table) = self.optional(CHECKPOINT_OF)? else {
            return Ok(None);
        };
        let found = table.get(commit.as_bytes())?;
        Ok(found.map(|v| CheckpointId(v.value())))
    }

    /// For an imported checkpoint, the id it had in the store it was saved in.
    pub fn origin(&self, id: CheckpointId) -> Result<Option<CheckpointId>> {
        let Some(table) = self.optional(ORIGINS)? else {
            return Ok(None);
        };
        let found = table.get(id.0)?;
        Ok(found.map(|v| CheckpointId(v.value())))
    }

    /// Every checkpoint that came from a remote (an `origins` row names it); the others
    /// were saved here. Their times are the remote's word, so retention and session
    /// revisions keep the two apart.
    pub fn imported(&self) -> Result<HashSet<CheckpointId>> {
        let Some(table) = self.optional(ORIGINS)? else {
            return Ok(HashSet::new());
        };
        let mut out = HashSet::new();
        for item in table.iter()? {
            out.insert(CheckpointId(item?.0.value()));
        }
        Ok(out)
    }

    /// Every fetched branch (`<remote>/<branch>`) and its tip, sorted by name.
    pub fn remote_branches(&self) -> Result<Vec<(String, CheckpointId)>> {
        match self.optional(REMOTE_BRANCHES)? {
            Some(table) => super::records::branches(&table),
            None => Ok(Vec::new()),
        }
    }

    /// Every local branch, then every fetched branch (`<remote>/<branch>`), with their
    /// tips: what `log` and `show` label checkpoints with.
    pub fn branches_and_fetched(&self) -> Result<Vec<(String, CheckpointId)>> {
        let mut all = self.branches()?;
        all.extend(self.remote_branches()?);
        Ok(all)
    }

    /// The tip of fetched branch `name` (`<remote>/<branch>`), if it exists.
    pub fn remote_branch(&self, name: &str) -> Result<Option<CheckpointId>> {
        let Some(table) = self.optional(REMOTE_BRANCHES)? else {
            return Ok(None);
        };
        let found = table.get(name)?;
        Ok(found.map(|v| CheckpointId(v.value())))
    }
}

impl Transaction<'_> {
    /// Records that checkpoint `id` and git commit `commit` (full hex) are the same save
    /// point, in both directions.
    pub fn map_commit(&self, id: CheckpointId, commit: &str) -> Result<()> {
        self.txn
            .open_table(COMMIT_OF)?
            .insert(id.0, commit.as_bytes())?;
        self.txn
            .open_table(CHECKPOINT_OF)?
            .insert(commit.as_bytes(), id.0)?;
        Ok(())
    }

    /// Forgets the commit of checkpoint `id` (it is gone from the repository, so the next
    /// export writes it again).
    pub fn unmap_commit(&self, id: CheckpointId) -> Result<()> {
        let old = self
            .txn
            .open_table(COMMIT_OF)?
            .remove(id.0)?
            .map(|v| v.value().to_vec());
        if let Some(commit) = old {
            self.txn
                .open_table(CHECKPOINT_OF)?
                .remove(commit.as_slice())?;
        }
        Ok(())
    }

    /// Records that the imported checkpoint `id` had id `original` where it was saved.
    pub fn set_origin(&self, id: CheckpointId, original: CheckpointId) -> Result<()> {
        self.txn.open_table(ORIGINS)?.insert(id.0, original.0)?;
        Ok(())
    }

    /// Points fetched branch `name` (`<remote>/<branch>`) at `tip`.
    pub fn set_remote_branch(&self, name: &str, tip: CheckpointId) -> Result<()> {
        self.txn.open_table(REMOTE_BRANCHES)?.insert(name, tip.0)?;
        Ok(())
    }

    /// Forgets fetched branch `name` (it is gone from the remote).
    pub fn remove_remote_branch(&self, name: &str) -> Result<()> {
        self.txn.open_table(REMOTE_BRANCHES)?.remove(name)?;
        Ok(())
    }
}
