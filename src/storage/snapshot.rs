//! A read view of the store: one read transaction, so everything read through it belongs
//! to the same committed state.

use std::collections::{HashMap, HashSet};

use redb::{ReadOnlyTable, ReadTransaction, ReadableTable, ReadableTableMetadata};

use super::pack::{self, ReadChunks};
use super::reach::{self, Graph, Marked};
use super::records::{self, ChangeSummary};
use super::tables::*;
use super::tree_reader::{TreeReader, TreeTable};
use crate::format::chunk::Hasher;
use crate::format::codec;
use crate::model::branch::BranchName;
use crate::model::dir_cache::{DirListing, DirListings};
use crate::model::stat_cache::CacheEntry;
use crate::model::{Checkpoint, Head, PendingTrees};
use crate::{CheckpointId, ChunkId, Result, TreeId};

/// What a store held at one committed state. Made by [`super::StoreRead::snapshot`];
/// holds nothing that keeps another process out, but holds the store's file open.
pub struct Snapshot<'s> {
    pub(super) txn: ReadTransaction,
    pub(super) hasher: &'s Hasher,
}

impl<'s> Snapshot<'s> {
    pub(super) fn new(txn: ReadTransaction, hasher: &'s Hasher) -> Self {
        Snapshot { txn, hasher }
    }

    /// Names and cuts content with this store's key and parameters.
    pub fn hasher(&self) -> &'s Hasher {
        self.hasher
    }

    /// The record of checkpoint `id`; a missing or damaged one is [`crate::Error::Corrupt`].
    pub fn checkpoint(&self, id: CheckpointId) -> Result<Checkpoint> {
        records::load(&self.txn.open_table(CHECKPOINTS)?, id)
    }

    /// The checkpoint records, their short ids and their kept change summaries through
    /// tables opened once: for reading many of them, as `log` does.
    pub fn checkpoint_reader(&self) -> Result<CheckpointReader> {
        Ok(CheckpointReader {
            checkpoints: self.txn.open_table(CHECKPOINTS)?,
            summaries: self.optional(SUMMARIES)?,
        })
    }

    /// Every checkpoint, in id order; the first damaged record is an error.
    pub fn checkpoints(&self) -> Result<Vec<(CheckpointId, Checkpoint)>> {
        records::load_all(&self.txn.open_table(CHECKPOINTS)?)
    }

    /// Whether the store holds checkpoint `id` (a mapping to a commit can outlive the
    /// checkpoint gc removed).
    pub fn has_checkpoint(&self, id: CheckpointId) -> Result<bool> {
        Ok(self.txn.open_table(CHECKPOINTS)?.get(id.0)?.is_some())
    }

    /// How many checkpoints the store holds.
    pub fn checkpoint_count(&self) -> Result<u64> {
        Ok(self.txn.open_table(CHECKPOINTS)?.len()?)
    }

    /// The highest prompt number `session`'s prompt checkpoints have carried (0 for a
    /// session without one), read from the store's index; `None` when the store has no
    /// index yet (no prompt saved since it was made), and the records must be counted.
    pub fn last_prompt(&self, session: &str) -> Result<Option<u64>> {
        let Some(index) = self.optional(SESSION_PROMPTS)? else {
            return Ok(None);
        };
        let found = index.get(session)?;
        Ok(Some(found.map_or(0, |number| number.value())))
    }

    /// What HEAD names.
    pub fn head(&self) -> Result<Head> {
        records::head(&self.txn.open_table(STATE)?)
    }

    /// The checkpoint HEAD points at; `None` before the first save on HEAD's branch.
    pub fn current(&self) -> Result<Option<CheckpointId>> {
        records::current(
            &self.txn.open_table(STATE)?,
            &self.txn.open_table(BRANCHES)?,
        )
    }

    /// Every branch and its tip, sorted by name.
    pub fn branches(&self) -> Result<Vec<(String, CheckpointId)>> {
        records::branches(&self.txn.open_table(BRANCHES)?)
    }

    /// The tip of branch `name`, if it exists.
    pub fn branch(&self, name: &str) -> Result<Option<CheckpointId>> {
        let branches = self.txn.open_table(BRANCHES)?;
        let tip = branches.get(name)?.map(|v| CheckpointId(v.value()));
        Ok(tip)
    }

    /// The first of `fork-1`, `fork-2`, … that names no branch.
    pub fn next_fork_name(&self) -> Result<BranchName> {
        let branches = self.txn.open_table(BRANCHES)?;
        for n in 1u64.. {
            let name = format!("fork-{n}");
            if branches.get(name.as_str())?.is_none() {
                return BranchName::new(&name);
            }
        }
        unreachable!("some fork-N is free")
    }

    /// The pinned checkpoints.
    pub fn pins(&self) -> Result<HashSet<CheckpointId>> {
        records::pins(&self.txn.open_table(PINS)?)
    }

    /// The target of a restore that started and did not finish, if any.
    pub fn interrupted_restore(&self) -> Result<Option<CheckpointId>> {
        records::restoring(&self.txn.open_table(STATE)?)
    }

    /// The paths the interrupted restore ([`Self::interrupted_restore`]) was limited to;
    /// empty when it restored the whole worktree, or none was interrupted.
    pub fn interrupted_restore_paths(&self) -> Result<Vec<Vec<u8>>> {
        records::restoring_paths(&self.txn.open_table(STATE)?)
    }

    /// The shortest unique prefix of `id`, at least
    /// [`crate::model::revision::MIN_SHORT_ID`] digits.
    pub fn short_id(&self, id: CheckpointId) -> Result<String> {
        records::short_id(&self.txn.open_table(CHECKPOINTS)?, id)
    }

    /// The checkpoint a revision names ([`crate::model::revision`]).
    pub fn resolve(&self, rev: &str) -> Result<CheckpointId> {
        records::resolve(
            &self.txn.open_table(CHECKPOINTS)?,
            &self.txn.open_table(STATE)?,
            &self.txn.open_table(BRANCHES)?,
            &|name| self.remote_branch(name),
            &|| Ok((self.imported()?, self.remote_branches()?)),
            rev,
        )
        .or_else(|error| Err(self.explain_removed(error)?))
    }

    /// A reader of stored trees and, optionally, trees built in memory and not stored.
    /// Each tree is checked as it is read ([`TreeReader::get`]).
    pub fn trees<'a>(&'a self, pending: Option<&'a PendingTrees>) -> Result<TreeReader<'a>> {
        TreeReader::new(
            self.hasher,
            TreeTable::Read(self.txn.open_table(TREES)?),
            pending,
        )
    }

    /// A tree reader that also checks against the rest of the store: each checkpoint's
    /// recorded counts bound the expansion of its tree, and each file's chunks must add
    /// up to its size. For reads that go on to read content.
    pub fn checked_trees<'a>(
        &'a self,
        pending: Option<&'a PendingTrees>,
    ) -> Result<TreeReader<'a>> {
        Ok(self.trees(pending)?.with_store(
            self.txn.open_table(CHUNKS)?,
            self.txn.open_table(CHECKPOINTS)?,
        ))
    }

    /// The chunk index and the packs, for reading content.
    pub fn chunks(&self) -> Result<ReadChunks> {
        ReadChunks::open(&self.txn)
    }

    /// Every checkpoint with the length of its stored record, newest first (ties by id,
    /// highest first); the first damaged record is an error.
    pub fn checkpoints_with_sizes(&self) -> Result<Vec<(CheckpointId, Checkpoint, u64)>> {
        let mut list = Vec::new();
        for item in self.txn.open_table(CHECKPOINTS)?.iter()? {
            let (key, value) = item?;
            let id = CheckpointId(key.value());
            let bytes = value.value();
            let record: Checkpoint = codec::decode(bytes, &format!("checkpoint {id}"))?;
            list.push((id, record, bytes.len() as u64));
        }
        list.sort_by(|a, b| b.1.time_ns.cmp(&a.1.time_ns).then(b.0.cmp(&a.0)));
        Ok(list)
    }

    /// The links of every tree reachable from `roots` (`reach::Graph::load`).
    pub fn tree_graph(&self, roots: impl IntoIterator<Item = TreeId>) -> Result<Graph> {
        Graph::load(&self.txn.open_table(TREES)?, roots)
    }

    /// The stored size of every tree, by id.
    pub fn tree_sizes(&self) -> Result<HashMap<TreeId, u64>> {
        reach::stored_sizes(&self.txn.open_table(TREES)?)
    }

    /// The stored size of every chunk, by id.
    pub fn chunk_sizes(&self) -> Result<HashMap<ChunkId, u64>> {
        pack::stored_sizes(&self.txn.open_table(CHUNKS)?)
    }

    /// Each delta's base, by the delta's id (`pack::delta_bases`).
    pub fn chunk_bases(&self) -> Result<HashMap<ChunkId, ChunkId>> {
        pack::delta_bases(&self.txn.open_table(CHUNKS)?)
    }

    /// The trees and chunks under `checkpoints` that `marked` lacks, with their stored
    /// bytes in all (`reach::unmarked_below`); the chunks as a sweep takes them, with
    /// the delta bases (`bases`, [`Self::chunk_bases`]) nothing else needs
    /// ([`reach::sweepable`]).
    pub fn unmarked_below(
        &self,
        checkpoints: &[&Checkpoint],
        marked: &Marked,
        bases: &HashMap<ChunkId, ChunkId>,
    ) -> Result<(Vec<TreeId>, Vec<ChunkId>, u64)> {
        let trees_table = self.txn.open_table(TREES)?;
        let chunks_table = self.txn.open_table(CHUNKS)?;
        let (trees, chunks) = reach::unmarked_below(&trees_table, checkpoints, marked)?;
        let chunks = reach::sweepable(chunks, marked, bases);
        let mut bytes = 0;
        for id in &trees {
            if let Some(value) = trees_table.get(id.0)? {
                bytes += value.value().len() as u64;
            }
        }
        for id in &chunks {
            if let Some(value) = chunks_table.get(id.0)? {
                bytes += pack::Entry::parse(*id, value.value())?.stored_len();
            }
        }
        Ok((trees, chunks, bytes))
    }

    /// The stat-cache paths whose entry names one of `chunks`, or does not decode.
    pub fn cached_paths_naming(&self, chunks: &HashSet<ChunkId>) -> Result<Vec<Vec<u8>>> {
        let mut out = Vec::new();
        for item in self.txn.open_table(STAT_CACHE)?.iter()? {
            let (path, value) = item?;
            let still_valid = codec::decode::<CacheEntry>(value.value(), "stat cache entry")
                .is_ok_and(|entry| entry.chunks.iter().all(|c| !chunks.contains(c)));
            if !still_valid {
                out.push(path.value().to_vec());
            }
        }
        Ok(out)
    }

    /// The directory cache, read one listing at a time ([`DirListings`]). Empty in a
    /// store no save has written a listing to.
    pub fn dir_cache(&self) -> Result<StoredDirCache> {
        Ok(StoredDirCache {
            table: self.optional(DIR_CACHE)?,
        })
    }

    /// The stat cache read in path order, as a walk in the same order asks for each
    /// path's entry ([`StatCacheCursor`]): one pass over the table, holding nothing of it.
    pub fn stat_cache_cursor(&self) -> Result<StatCacheCursor> {
        Ok(StatCacheCursor {
            entries: self
                .txn
                .open_table(STAT_CACHE)?
                .range::<&[u8]>(..)?
                .peekable(),
        })
    }

    /// Calls `each` with the stat-cache entry of `path` and those of every path below
    /// it (`path/…`), in path order: a point lookup and one range, not a pass over the
    /// whole table, for a save that looks at a few changed paths only.
    pub fn for_each_cached_at_or_below(
        &self,
        path: &[u8],
        mut each: impl FnMut(&[u8], CachedEntry<'_>),
    ) -> Result<()> {
        let table = self.txn.open_table(STAT_CACHE)?;
        if let Some(value) = table.get(path)? {
            crate::trace::CACHE_ENTRIES_READ.add(1);
            each(path, CachedEntry(value.value()));
        }
        // Every path below `path` starts with `path/`, so sorts before `path0`.
        let mut from = path.to_vec();
        from.push(b'/');
        let mut to = path.to_vec();
        to.push(b'0');
        for item in table.range::<&[u8]>(from.as_slice()..to.as_slice())? {
            let (key, value) = item?;
            crate::trace::CACHE_ENTRIES_READ.add(1);
            each(key.value(), CachedEntry(value.value()));
        }
        Ok(())
    }
}

/// Reads checkpoint records with their tables opened once ([`Snapshot::checkpoint_reader`]).
pub struct CheckpointReader {
    checkpoints: ReadOnlyTable<u128, &'static [u8]>,
    /// Absent in stores no save has written a summary to.
    summaries: Option<ReadOnlyTable<u128, &'static [u8]>>,
}

impl CheckpointReader {
    /// The record of checkpoint `id`, as [`Snapshot::checkpoint`].
    pub fn get(&self, id: CheckpointId) -> Result<Checkpoint> {
        records::load(&self.checkpoints, id)
    }

    /// The record of checkpoint `id`, or `None` when the store has no such checkpoint
    /// (a parent `drop` or `gc` removed since a caller last looked).
    pub fn find(&self, id: CheckpointId) -> Result<Option<Checkpoint>> {
        match self.checkpoints.get(id.0)? {
            Some(_) => records::load(&self.checkpoints, id).map(Some),
            None => Ok(None),
        }
    }

    /// The shortest unique prefix of `id`, as [`Snapshot::short_id`].
    pub fn short_id(&self, id: CheckpointId) -> Result<String> {
        records::short_id(&self.checkpoints, id)
    }

    /// What checkpoint `id` changed against its first parent, if a save kept it; `None`
    /// means it must be computed from the trees.
    pub fn summary(&self, id: CheckpointId) -> Result<Option<ChangeSummary>> {
        match &self.summaries {
            Some(table) => records::summary(table, id),
            None => Ok(None),
        }
    }
}

/// The directory cache as a snapshot holds it ([`Snapshot::dir_cache`]): each listing
/// read and decoded when a walk asks for it.
pub struct StoredDirCache {
    /// Absent in stores no save has written a listing to.
    table: Option<ReadOnlyTable<&'static [u8], &'static [u8]>>,
}

impl DirListings for StoredDirCache {
    fn get(&self, dir: &[u8]) -> Option<DirListing> {
        let value = self.table.as_ref()?.get(dir).ok()??;
        codec::decode(value.value(), "directory listing").ok()
    }

    fn each_dir(&self, each: &mut dyn FnMut(&[u8])) -> Result<()> {
        if let Some(table) = &self.table {
            for item in table.iter()? {
                let (path, _) = item?;
                each(path.value());
            }
        }
        Ok(())
    }
}

/// The stat cache read in path-byte order alongside a walk in the same order
/// ([`Snapshot::stat_cache_cursor`]).
pub struct StatCacheCursor {
    entries: std::iter::Peekable<redb::Range<'static, &'static [u8], &'static [u8]>>,
}

impl StatCacheCursor {
    /// The entry of `path` (which must sort after every path asked for before), if it
    /// has one; `passed` gets each cached path sorted before it, which the walk did not
    /// find. An entry that does not decode is `Ok(None)`: only a missed shortcut.
    pub fn entry(
        &mut self,
        path: &[u8],
        passed: &mut dyn FnMut(&[u8]),
    ) -> Result<Option<CacheEntry>> {
        loop {
            let key_order = match self.entries.peek() {
                None => return Ok(None),
                Some(Err(_)) => {
                    return match self.entries.next() {
                        Some(Err(e)) => Err(e.into()),
                        _ => Ok(None),
                    }
                }
                Some(Ok((key, _))) => key.value().cmp(path),
            };
            match key_order {
                std::cmp::Ordering::Greater => return Ok(None),
                std::cmp::Ordering::Less => {
                    if let Some(Ok((key, _))) = self.entries.next() {
                        crate::trace::CACHE_ENTRIES_READ.add(1);
                        passed(key.value());
                    }
                }
                std::cmp::Ordering::Equal => {
                    let Some(Ok((_, value))) = self.entries.next() else {
                        return Ok(None);
                    };
                    crate::trace::CACHE_ENTRIES_READ.add(1);
                    return Ok(CachedEntry(value.value()).decode().ok());
                }
            }
        }
    }

    /// Passes every cached path not asked for yet to `passed`.
    pub fn rest(&mut self, passed: &mut dyn FnMut(&[u8])) -> Result<()> {
        for item in self.entries.by_ref() {
            let (key, _) = item?;
            crate::trace::CACHE_ENTRIES_READ.add(1);
            passed(key.value());
        }
        Ok(())
    }
}

/// A stat-cache entry as stored, decoded on demand.
pub struct CachedEntry<'a>(&'a [u8]);

impl CachedEntry<'_> {
    /// The entry; a damaged one is an error (for a save, only a missed shortcut).
    pub fn decode(&self) -> Result<CacheEntry> {
        codec::decode(self.0, "stat cache entry")
    }
}
