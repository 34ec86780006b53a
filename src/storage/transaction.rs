//! A write transaction on the store: what it writes is seen by others, and survives a
//! crash, only once [`Transaction::commit`] returns (docs/design.md, "Commit protocols").

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use redb::{ReadableTable, TableHandle, WriteTransaction};

use super::pack::{self, Delta, PackWriter, SealedBlock};
use super::records::{self, ChangeSummary};
use super::tables::*;
use super::tree_codec;
use super::tree_reader::{TreeReader, TreeTable};
use crate::format::chunk::Hasher;
use crate::format::codec;
use crate::model::branch::BranchName;
use crate::model::dir_cache::{DirCacheUpdates, DirListing};
use crate::model::operation::Invocation;
use crate::model::retention::GcRemoval;
use crate::model::session::numbered_prompt;
use crate::model::stat_cache::{CacheEntry, FileStat};
use crate::model::{Checkpoint, Head, PendingTrees};
use crate::{CheckpointId, ChunkId, Error, Result, TreeId};

/// Changes to the store, all committed together or not at all. Made by
/// [`super::Store::transaction`]; only one exists at a time.
pub struct Transaction<'s> {
    pub(super) txn: WriteTransaction,
    pub(super) hasher: &'s Hasher,
    /// The store's file, whose generation a commit changes.
    store_path: &'s Path,
    /// What opened the store, for the operation log.
    pub(super) invocation: &'s Invocation,
}

impl<'s> Transaction<'s> {
    pub(super) fn new(
        txn: WriteTransaction,
        hasher: &'s Hasher,
        store_path: &'s Path,
        invocation: &'s Invocation,
    ) -> Self {
        Transaction {
            txn,
            hasher,
            store_path,
            invocation,
        }
    }

    /// Makes everything done durable and visible. The store's generation changes first
    /// (`generation::new_generation`), so that a process that let go of the store
    /// sees that something may have been committed meanwhile.
    pub fn commit(self) -> Result<()> {
        super::generation::new_generation(self.store_path)?;
        Ok(self.txn.commit()?)
    }

    /// Drops everything done; nothing is written.
    pub fn abort(self) -> Result<()> {
        Ok(self.txn.abort()?)
    }

    /// What HEAD names.
    pub fn head(&self) -> Result<Head> {
        records::head(&self.txn.open_table(STATE)?)
    }

    /// The checkpoint HEAD points at.
    pub fn current(&self) -> Result<Option<CheckpointId>> {
        records::current(
            &self.txn.open_table(STATE)?,
            &self.txn.open_table(BRANCHES)?,
        )
    }

    /// The record of checkpoint `id`.
    pub fn checkpoint(&self, id: CheckpointId) -> Result<Checkpoint> {
        records::load(&self.txn.open_table(CHECKPOINTS)?, id)
    }

    /// Stores the trees of `trees` (rooted at `root`) that the store lacks. `like` is a
    /// stored root the new trees resemble, the parent checkpoint's: a new tree at the
    /// same path as one of its trees is stored as a delta against that one when that is
    /// much smaller (`tree_codec::stored_form`).
    pub fn add_trees(
        &self,
        trees: &PendingTrees,
        root: TreeId,
        like: Option<TreeId>,
    ) -> Result<()> {
        let mut table = self.txn.open_table(TREES)?;
        let bases = match like {
            Some(like) => tree_codec::bases(&table, trees, root, like)?,
            None => HashMap::new(),
        };
        for (id, bytes) in trees {
            if table.get(id.0)?.is_none() {
                let base = bases.get(id).copied();
                let stored = tree_codec::stored_form(&table, self.hasher, bytes, base)?;
                table.insert(id.0, stored.as_slice())?;
            }
        }
        Ok(())
    }

    /// A reader of the trees this transaction sees (the store's and those it added) and
    /// of `pending`, checked as [`super::Snapshot::trees`] checks them. Holds the tree
    /// table open: drop it before adding trees.
    pub fn trees<'a>(&'a self, pending: Option<&'a PendingTrees>) -> Result<TreeReader<'a>> {
        TreeReader::new(
            self.hasher,
            TreeTable::Write(self.txn.open_table(TREES)?),
            pending,
        )
    }

    /// Stores a new checkpoint record and returns its id, the hash of the record. A clash
    /// (same tree, parents and nanosecond as another) is resolved by moving its time on,
    /// so `record` may come back with a later `time_ns`.
    pub fn add_checkpoint(&self, record: &mut Checkpoint) -> Result<CheckpointId> {
        let mut checkpoints = self.txn.open_table(CHECKPOINTS)?;
        let id = loop {
            let id = self.hasher.checkpoint_id(&codec::encode(record));
            if checkpoints.get(id.0)?.is_none() {
                break id;
            }
            record.time_ns += 1;
        };
        checkpoints.insert(id.0, codec::encode(record).as_slice())?;
        drop(checkpoints);
        self.index_prompt(record)?;
        Ok(id)
    }

    /// Keeps [`SESSION_PROMPTS`] up to date with a record just added. The transaction
    /// that makes the table fills it from every record (this one included), so that a
    /// missing row always means a session without numbered prompts.
    fn index_prompt(&self, record: &Checkpoint) -> Result<()> {
        let Some((session, number)) = numbered_prompt(record) else {
            return Ok(());
        };
        let exists = self
            .txn
            .list_tables()?
            .any(|table| table.name() == SESSION_PROMPTS.name());
        let mut index = self.txn.open_table(SESSION_PROMPTS)?;
        if !exists {
            let all = records::load_all(&self.txn.open_table(CHECKPOINTS)?)?;
            for (_, earlier) in &all {
                if let Some((session, number)) = numbered_prompt(earlier) {
                    raise(&mut index, session, number)?;
                }
            }
        }
        raise(&mut index, session, number)
    }

    /// Keeps what checkpoint `id` changed against its first parent, for `log`.
    pub fn set_summary(&self, id: CheckpointId, summary: &ChangeSummary) -> Result<()> {
        self.txn
            .open_table(SUMMARIES)?
            .insert(id.0, codec::encode(summary).as_slice())?;
        Ok(())
    }

    /// Appends what a gc removed of each session to its row of the `gc_removals` table.
    pub fn record_gc_removals(&self, removals: &BTreeMap<String, GcRemoval>) -> Result<()> {
        if removals.is_empty() {
            return Ok(());
        }
        let mut table = self.txn.open_table(GC_REMOVALS)?;
        for (session, removal) in removals {
            let mut list: Vec<GcRemoval> = match table.get(session.as_str())? {
                Some(row) => codec::decode(row.value(), "gc removals")?,
                None => Vec::new(),
            };
            list.push(removal.clone());
            table.insert(session.as_str(), codec::encode(&list).as_slice())?;
        }
        Ok(())
    }

    /// Points HEAD's branch (or a detached HEAD) at `id`.
    pub fn move_head(&self, id: CheckpointId) -> Result<()> {
        match self.head()? {
            Head::Branch(name) => {
                self.txn.open_table(BRANCHES)?.insert(name.as_str(), id.0)?;
            }
            Head::Detached(_) => self.set_head(&Head::Detached(id))?,
        }
        Ok(())
    }

    /// Points HEAD at `head`.
    pub fn set_head(&self, head: &Head) -> Result<()> {
        self.txn
            .open_table(STATE)?
            .insert(records::HEAD, codec::encode(head).as_slice())?;
        Ok(())
    }

    /// Creates branch `name` at `tip`; refuses an existing name.
    pub fn create_branch(&self, name: &BranchName, tip: CheckpointId) -> Result<()> {
        let name = name.as_str();
        let mut branches = self.txn.open_table(BRANCHES)?;
        if branches.get(name)?.is_some() {
            return Err(Error::BranchExists(name.to_string()));
        }
        branches.insert(name, tip.0)?;
        Ok(())
    }

    /// Points the existing branch `name` at `tip` (a drop moving a branch whose tip goes).
    pub fn set_branch(&self, name: &str, tip: CheckpointId) -> Result<()> {
        let mut branches = self.txn.open_table(BRANCHES)?;
        if branches.get(name)?.is_none() {
            return Err(Error::UnknownBranch(name.to_string()));
        }
        branches.insert(name, tip.0)?;
        Ok(())
    }

    /// Deletes branch `name` and returns its tip, which stays in the store as an unnamed
    /// head. Refuses the branch HEAD names.
    pub fn delete_branch(&self, name: &str) -> Result<CheckpointId> {
        if self.head()? == Head::Branch(name.to_string()) {
            return Err(Error::CurrentBranch(name.to_string()));
        }
        let mut branches = self.txn.open_table(BRANCHES)?;
        let tip = branches.remove(name)?.map(|v| CheckpointId(v.value()));
        tip.ok_or_else(|| Error::UnknownBranch(name.to_string()))
    }

    /// Renames branch `old` to `new` (HEAD follows if it named `old`) and returns its tip.
    pub fn rename_branch(&self, old: &str, new: &BranchName) -> Result<CheckpointId> {
        let new = new.as_str();
        let tip = {
            let mut branches = self.txn.open_table(BRANCHES)?;
            if branches.get(new)?.is_some() {
                return Err(Error::BranchExists(new.to_string()));
            }
            let tip = branches.remove(old)?.map(|v| CheckpointId(v.value()));
            let tip = tip.ok_or_else(|| Error::UnknownBranch(old.to_string()))?;
            branches.insert(new, tip.0)?;
            tip
        };
        if self.head()? == Head::Branch(old.to_string()) {
            self.set_head(&Head::Branch(new.to_string()))?;
        }
        Ok(tip)
    }

    /// Pins or unpins checkpoint `id`; true if that changed anything.
    pub fn set_pinned(&self, id: CheckpointId, pinned: bool) -> Result<bool> {
        let mut pins = self.txn.open_table(PINS)?;
        Ok(if pinned {
            pins.insert(id.0, ())?.is_none()
        } else {
            pins.remove(id.0)?.is_some()
        })
    }

    /// Records that a restore to `target`, limited to `paths` if any, has started
    /// (docs/design.md invariant 13): running the same restore again finishes it.
    pub fn set_restoring(&self, target: CheckpointId, paths: &[Vec<u8>]) -> Result<()> {
        let mut state = self.txn.open_table(STATE)?;
        state.insert(records::RESTORING, codec::encode(&target.0).as_slice())?;
        if paths.is_empty() {
            state.remove(records::RESTORING_PATHS)?;
        } else {
            state.insert(records::RESTORING_PATHS, codec::encode(&paths).as_slice())?;
        }
        Ok(())
    }

    /// Records that no restore is in progress.
    pub fn clear_restoring(&self) -> Result<()> {
        let mut state = self.txn.open_table(STATE)?;
        state.remove(records::RESTORING)?;
        state.remove(records::RESTORING_PATHS)?;
        Ok(())
    }

    /// Remembers what a save read at `path` (the stat cache).
    pub fn cache(&self, path: &[u8], entry: &CacheEntry) -> Result<()> {
        self.txn
            .open_table(STAT_CACHE)?
            .insert(path, codec::encode(entry).as_slice())?;
        Ok(())
    }

    /// A writer of stat cache entries that holds the table open: a save that read many
    /// files records each as it gathers it, instead of holding a list of them all
    /// until the commit (docs/design.md, "Save", memory).
    pub fn cache_writer(&self) -> Result<CacheWriter<'_>> {
        Ok(CacheWriter {
            table: self.txn.open_table(STAT_CACHE)?,
        })
    }

    /// Writes a walk's changes to the directory cache ([`crate::model::dir_cache`]).
    pub fn update_dir_cache(&self, updates: &DirCacheUpdates) -> Result<()> {
        if updates.is_empty() {
            return Ok(());
        }
        let mut table = self.txn.open_table(DIR_CACHE)?;
        for path in &updates.remove {
            table.remove(path.as_slice())?;
        }
        for (path, listing) in &updates.put {
            table.insert(path.as_slice(), codec::encode(listing).as_slice())?;
        }
        Ok(())
    }

    /// Forgets what the stat cache knows of `paths` (files a restore rewrote or deleted).
    pub fn forget_cached<P: AsRef<[u8]>>(&self, paths: &[P]) -> Result<()> {
        let mut cache = self.txn.open_table(STAT_CACHE)?;
        for path in paths {
            cache.remove(path.as_ref())?;
        }
        Ok(())
    }

    /// Packs and indexes chunks: `add` is called with a sink that takes them. Chunks go
    /// into packs after the last one `packer` (or the store) knows.
    pub fn pack_chunks<T>(
        &self,
        packer: &mut Packer,
        add: impl FnOnce(&mut ChunkSink<'_, '_>) -> Result<T>,
    ) -> Result<T> {
        let mut index = self.txn.open_table(CHUNKS)?;
        let mut packs = self.txn.open_table(PACKS)?;
        let writer = match &mut packer.0 {
            Some(writer) => writer,
            None => packer.0.insert(PackWriter::new(&packs)?),
        };
        let mut sink = ChunkSink {
            index: &mut index,
            packs: &mut packs,
            writer,
        };
        let out = add(&mut sink)?;
        sink.writer.finish(sink.index, sink.packs)?;
        Ok(out)
    }

    /// Writes one batch of a save as it arrives: new chunks into packs (as
    /// [`Transaction::pack_chunks`]), and the trees and cache records that come with
    /// them, every table held open for the batch ([`BatchSink`]).
    pub fn write_batch<T>(
        &self,
        packer: &mut Packer,
        add: impl FnOnce(&mut BatchSink<'_, '_>) -> Result<T>,
    ) -> Result<T> {
        let mut index = self.txn.open_table(CHUNKS)?;
        let mut packs = self.txn.open_table(PACKS)?;
        let mut trees = self.txn.open_table(TREES)?;
        let mut stat_cache = self.txn.open_table(STAT_CACHE)?;
        let mut dir_cache = self.txn.open_table(DIR_CACHE)?;
        let writer = match &mut packer.0 {
            Some(writer) => writer,
            None => packer.0.insert(PackWriter::new(&packs)?),
        };
        let mut sink = BatchSink {
            chunks: ChunkSink {
                index: &mut index,
                packs: &mut packs,
                writer,
            },
            trees: &mut trees,
            stat_cache: &mut stat_cache,
            dir_cache: &mut dir_cache,
            hasher: self.hasher,
        };
        let out = add(&mut sink)?;
        let chunks = sink.chunks;
        chunks.writer.finish(chunks.index, chunks.packs)?;
        Ok(out)
    }

    /// Gives checkpoint `id` new parents (gc re-parents around removed checkpoints; the
    /// id stays, docs/design.md "Ids").
    ///
    /// A kept change summary was against the old first parent: a new one drops it, and
    /// `log` computes the summary against the new parent from the trees.
    pub fn set_parents(&self, id: CheckpointId, parents: Vec<CheckpointId>) -> Result<()> {
        let mut checkpoints = self.txn.open_table(CHECKPOINTS)?;
        let mut record = records::load(&checkpoints, id)?;
        if record.parents.first() != parents.first() {
            self.txn.open_table(SUMMARIES)?.remove(id.0)?;
        }
        record.parents = parents;
        checkpoints.insert(id.0, codec::encode(&record).as_slice())?;
        Ok(())
    }

    /// Removes checkpoint records (not what they reach) and their change summaries.
    pub fn remove_checkpoints(&self, ids: impl IntoIterator<Item = CheckpointId>) -> Result<()> {
        let mut checkpoints = self.txn.open_table(CHECKPOINTS)?;
        let mut summaries = self.txn.open_table(SUMMARIES)?;
        for id in ids {
            checkpoints.remove(id.0)?;
            summaries.remove(id.0)?;
        }
        Ok(())
    }

    /// Removes tree records, except those a staying tree stored as a delta needs, down
    /// its chain (docs/design.md invariant 22): gc marks those as live already, and this
    /// keeps the invariant whatever a caller passes.
    pub fn remove_trees(&self, ids: &[TreeId]) -> Result<()> {
        let mut trees = self.txn.open_table(TREES)?;
        let mut going: HashSet<TreeId> = ids.iter().copied().collect();
        let mut needed = Vec::new();
        for item in trees.iter()? {
            let (key, value) = item?;
            let id = TreeId(key.value());
            // A record that does not parse needs nothing that can be read anyway.
            if let (false, Ok(Some(base))) =
                (going.contains(&id), tree_codec::base_of(id, value.value()))
            {
                needed.push(base);
            }
        }
        while let Some(base) = needed.pop() {
            if going.remove(&base) {
                if let Some(value) = trees.get(base.0)? {
                    if let Ok(Some(below)) = tree_codec::base_of(base, value.value()) {
                        needed.push(below);
                    }
                }
            }
        }
        for id in going {
            trees.remove(id.0)?;
        }
        Ok(())
    }

    /// Removes chunks, repacking what their packs still hold (`pack::remove_chunks`).
    pub fn remove_chunks(&self, ids: &[ChunkId]) -> Result<()> {
        pack::remove_chunks(&self.txn, ids)
    }

    /// Lays the chunks the saves since the last recompression stored into large solid
    /// blocks, smaller (`pack::recompress`).
    pub fn recompress(&self) -> Result<pack::Recompressed> {
        pack::recompress(&self.txn, self.hasher)
    }
}

/// Where the packs written so far end, carried from one transaction to the next.
#[derive(Default)]
pub struct Packer(Option<PackWriter>);

/// Takes new chunks into packs inside one [`Transaction::pack_chunks`].
pub struct ChunkSink<'a, 't> {
    index: &'a mut redb::Table<'t, u128, &'static [u8]>,
    packs: &'a mut redb::Table<'t, u64, &'static [u8]>,
    writer: &'a mut PackWriter,
}

impl ChunkSink<'_, '_> {
    /// Whether the store (with what this transaction added) has chunk `id`.
    pub fn contains(&self, id: ChunkId) -> Result<bool> {
        Ok(self.writer.holds(id) || self.index.get(id.0)?.is_some())
    }

    /// Adds chunk `id`, stored form `stored`, of `raw_len` content bytes; `delta` names
    /// the base a delta was compressed against, which must be in the store.
    pub fn add(
        &mut self,
        id: ChunkId,
        stored: &[u8],
        raw_len: usize,
        delta: Option<Delta>,
    ) -> Result<()> {
        if let Some(delta) = delta {
            if !self.contains(delta.base)? {
                return Err(Error::Internal(format!(
                    "chunk {id}: its delta base {} is not in the store",
                    delta.base
                )));
            }
        }
        self.writer
            .add_new(self.index, self.packs, id, stored, raw_len, delta)
    }

    /// Packs a solid block sealed elsewhere ([`OpenBlock::seal`](crate::storage::pack::OpenBlock::seal))
    /// and indexes its chunks, all in this transaction (docs/design.md invariant 15).
    pub fn add_sealed(&mut self, block: SealedBlock) -> Result<()> {
        self.writer.add_sealed(self.index, self.packs, block)
    }
}

/// Takes a save's batch into one transaction ([`Transaction::write_batch`]): new chunks,
/// the trees the store lacks, and stat and directory cache records.
pub struct BatchSink<'a, 't> {
    chunks: ChunkSink<'a, 't>,
    trees: &'a mut redb::Table<'t, u128, &'static [u8]>,
    stat_cache: &'a mut redb::Table<'t, &'static [u8], &'static [u8]>,
    dir_cache: &'a mut redb::Table<'t, &'static [u8], &'static [u8]>,
    hasher: &'a Hasher,
}

impl<'a, 't> BatchSink<'a, 't> {
    /// The chunks of the batch.
    pub fn chunks(&mut self) -> &mut ChunkSink<'a, 't> {
        &mut self.chunks
    }

    /// Stores tree `id` (its canonical record `encoded`) unless the store has it; `like`
    /// is the tree at the same path in the parent checkpoint, which it is stored as a
    /// delta of when that is much smaller (as [`Transaction::add_trees`] stores trees).
    /// Returns the bytes stored.
    pub fn add_tree(&mut self, id: TreeId, encoded: &[u8], like: Option<TreeId>) -> Result<usize> {
        if self.trees.get(id.0)?.is_some() {
            return Ok(0);
        }
        let stored = tree_codec::stored_form(&*self.trees, self.hasher, encoded, like)?;
        self.trees.insert(id.0, stored.as_slice())?;
        Ok(stored.len())
    }

    /// Whether every chunk of `chunks` is in the store, with what this transaction added.
    pub fn has_chunks(&self, chunks: &[ChunkId]) -> Result<bool> {
        for &id in chunks {
            if !self.chunks.contains(id)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Records in the stat cache that `path`, with metadata `stat`, holds `chunks`, which
    /// must be in the store already (see [`BatchSink::has_chunks`]): a batch commits on
    /// its own, and a stat cache entry is trusted as soon as it is committed.
    pub fn put_cached(&mut self, path: &[u8], stat: &FileStat, chunks: &[ChunkId]) -> Result<()> {
        let entry = CacheEntryRef { stat, chunks };
        self.stat_cache
            .insert(path, codec::encode(&entry).as_slice())?;
        Ok(())
    }

    /// Records the listing of directory `dir` in the directory cache.
    pub fn put_listing(&mut self, dir: &[u8], listing: &DirListing) -> Result<()> {
        self.dir_cache
            .insert(dir, codec::encode(listing).as_slice())?;
        Ok(())
    }
}

/// Writes stat cache entries into a [`Transaction`], the table held open between them
/// ([`Transaction::cache_writer`]).
pub struct CacheWriter<'t> {
    table: redb::Table<'t, &'static [u8], &'static [u8]>,
}

/// A [`CacheEntry`] borrowed: encodes to the same bytes (postcard writes a slice as it
/// writes a `Vec`), without copying the chunk list.
#[derive(serde::Serialize)]
struct CacheEntryRef<'a> {
    stat: &'a FileStat,
    chunks: &'a [ChunkId],
}

impl CacheWriter<'_> {
    /// Records that `path`, with metadata `stat`, holds `chunks` (as
    /// [`Transaction::cache`] records a [`CacheEntry`]).
    pub fn put(&mut self, path: &[u8], stat: &FileStat, chunks: &[ChunkId]) -> Result<()> {
        let entry = CacheEntryRef { stat, chunks };
        self.table.insert(path, codec::encode(&entry).as_slice())?;
        Ok(())
    }
}

/// Sets `session`'s row of [`SESSION_PROMPTS`] to `number` unless it holds more.
fn raise(index: &mut redb::Table<&str, u64>, session: &str, number: u64) -> Result<()> {
    let held = index.get(session)?.map_or(0, |held| held.value());
    if number > held {
        index.insert(session, number)?;
    }
    Ok(())
}

#[cfg(test)]
mod cache_writer_tests {
    use super::*;

    /// What the writer stores decodes as the entry [`Transaction::cache`] would store:
    /// the same bytes.
    #[test]
    fn a_borrowed_entry_encodes_as_the_owned_one() {
        let entry = CacheEntry {
            stat: FileStat {
                size: 12_345,
                mtime_ns: 1_700_000_000_123_456_789,
                ctime_ns: -5,
                ino: 77,
                dev: 2049,
                mode: 0o100644,
            },
            chunks: vec![ChunkId(7), ChunkId(u128::MAX - 3)],
        };
        let borrowed = CacheEntryRef {
            stat: &entry.stat,
            chunks: &entry.chunks,
        };
        assert_eq!(codec::encode(&borrowed), codec::encode(&entry));
    }
}
