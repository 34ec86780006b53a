//! Reading chunks back: from the index entry to the stored bytes in a pack (or inline), a
//! delta's bases first, a solid block decompressed once for a run of reads.

use std::collections::HashMap;

use redb::{ReadOnlyTable, ReadTransaction, ReadableTable};

use super::corrupt_message;
use super::entry::{Delta, Entry, Location, Member};
use crate::format::chunk::{self, Hasher, MAX_DELTA_DEPTH};
use crate::storage::tables::{CHUNKS, PACKS};
use crate::{ChunkId, Error, Result};

/// Stored size of every chunk in the index, for gc and stats.
pub(in crate::storage) fn stored_sizes(
    index: &impl ReadableTable<u128, &'static [u8]>,
) -> Result<HashMap<ChunkId, u64>> {
    let mut sizes = HashMap::new();
    each_entry(index, |id, entry| {
        sizes.insert(id, entry.stored_len());
    })?;
    Ok(sizes)
}

/// The base of every chunk the index holds as a delta, by the delta's id, from the index
/// entries alone.
pub(in crate::storage) fn delta_bases(
    index: &impl ReadableTable<u128, &'static [u8]>,
) -> Result<HashMap<ChunkId, ChunkId>> {
    let mut bases = HashMap::new();
    each_entry(index, |id, entry| {
        if let Some(delta) = entry.delta() {
            bases.insert(id, delta.base);
        }
    })?;
    Ok(bases)
}

/// Calls `each` on every chunk of the index with its entry, parsed; an entry that does
/// not parse ends the pass with its error.
fn each_entry(
    index: &impl ReadableTable<u128, &'static [u8]>,
    mut each: impl FnMut(ChunkId, Entry<'_>),
) -> Result<()> {
    for item in index.iter()? {
        let (key, value) = item?;
        let id = ChunkId(key.value());
        each(id, Entry::parse(id, value.value())?);
    }
    Ok(())
}

/// The chunk index and the packs of one read transaction ([`crate::storage::Snapshot::chunks`]),
/// read together. Its tables stay private: what lies in them is read through its methods.
pub struct ReadChunks {
    index: ReadOnlyTable<u128, &'static [u8]>,
    packs: ReadOnlyTable<u64, &'static [u8]>,
}

impl ReadChunks {
    /// Opens the chunk index and the packs in `txn`.
    pub(in crate::storage) fn open(txn: &ReadTransaction) -> Result<ReadChunks> {
        Ok(ReadChunks {
            index: txn.open_table(CHUNKS)?,
            packs: txn.open_table(PACKS)?,
        })
    }

    /// Whether the store has chunk `id`.
    pub fn contains(&self, id: ChunkId) -> Result<bool> {
        Ok(self.index.get(id.0)?.is_some())
    }

    /// Calls `with` on the stored bytes at `at` in its pack (a chunk, or a solid block).
    /// `last` keeps the pack read last, for the next call.
    fn in_pack<'a, T>(
        &'a self,
        id: ChunkId,
        at: &Location,
        last: &mut LastPack<'a>,
        with: impl FnOnce(&[u8]) -> Result<T>,
    ) -> Result<T> {
        let pack = match last.pack.take() {
            Some((key, pack)) if key == at.pack => pack,
            _ => self.packs.get(at.pack)?.ok_or_else(|| {
                Error::Corrupt(format!("chunk {id}: its pack {} is missing", at.pack))
            })?,
        };
        let start = at.offset as usize;
        let result = match pack.value().get(start..start + at.len as usize) {
            Some(stored) => with(stored),
            None => Err(Error::Corrupt(format!(
                "chunk {id}: lies outside its pack {}",
                at.pack
            ))),
        };
        last.pack = Some((at.pack, pack));
        result
    }

    /// Appends the verified content of chunk `id`, which lies in the solid block at `at`,
    /// to `out`. The block is decompressed once for a run of reads in it (`last`).
    fn read_member<'a>(
        &'a self,
        hasher: &Hasher,
        id: ChunkId,
        at: &Location,
        member: Member,
        out: &mut Vec<u8>,
        last: &mut LastPack<'a>,
    ) -> Result<()> {
        // The length too: an entry that misstates it must not be served from the cache.
        let key = (at.pack, at.offset, at.len);
        if !matches!(&last.block, Some((cached, _)) if *cached == key) {
            last.block = None;
            let content = self.in_pack(id, at, last, |stored| {
                chunk::decode_block(stored).map_err(|e| {
                    Error::Corrupt(format!(
                        "chunk {id}: its solid block in pack {} is damaged: {e}",
                        at.pack
                    ))
                })
            })?;
            last.block = Some((key, content));
        }
        let Some((_, block)) = &last.block else {
            return Err(Error::Corrupt(format!(
                "chunk {id}: its solid block is gone"
            )));
        };
        let start = member.start as usize;
        let content = block
            .get(start..start + at.raw_len as usize)
            .ok_or_else(|| {
                Error::Corrupt(format!(
                    "chunk {id}: lies outside its solid block in pack {}",
                    at.pack
                ))
            })?;
        if hasher.chunk_id(content) != id {
            return Err(Error::Corrupt(format!(
                "chunk {id} does not match its hash (its solid block in pack {} is damaged)",
                at.pack
            )));
        }
        out.extend_from_slice(content);
        Ok(())
    }

    /// The base of chunk `id` if it is stored as a delta; `None` for a full chunk or
    /// one the index lacks.
    pub fn delta_of(&self, id: ChunkId) -> Result<Option<Delta>> {
        match self.index.get(id.0)? {
            Some(value) => Ok(Entry::parse(id, value.value())?.delta()),
            None => Ok(None),
        }
    }

    /// Reads chunk `id` and appends its verified content to `out`; a delta's bases are
    /// read (and verified) first.
    pub fn read<'a>(
        &'a self,
        hasher: &Hasher,
        id: ChunkId,
        out: &mut Vec<u8>,
        last: &mut LastPack<'a>,
    ) -> Result<()> {
        self.read_below(hasher, id, out, last, MAX_DELTA_DEPTH + 1)
    }

    /// [`Self::read`] of a chunk whose depth must be below `limit`: each base down a
    /// chain must be shallower than the delta that names it, so that a crafted chain
    /// (a cycle, or one deeper than it says) ends in an error after a few reads.
    fn read_below<'a>(
        &'a self,
        hasher: &Hasher,
        id: ChunkId,
        out: &mut Vec<u8>,
        last: &mut LastPack<'a>,
        limit: u8,
    ) -> Result<()> {
        let value = self
            .index
            .get(id.0)?
            .ok_or_else(|| Error::Corrupt(format!("chunk {id} is missing")))?;
        let at = match Entry::parse(id, value.value())? {
            Entry::Inline(stored) => return chunk::decode_chunk(hasher, id, stored, out),
            Entry::Packed(at) => at,
        };
        if let Some(member) = at.block {
            return self.read_member(hasher, id, &at, member, out, last);
        }
        let base = match at.delta {
            Some(delta) if delta.depth >= limit => {
                return Err(Error::Corrupt(format!(
                    "chunk {id}: its chain of delta bases is deeper than its index entries \
                     say (a cycle, or more than {MAX_DELTA_DEPTH} deep)"
                )))
            }
            Some(delta) => {
                let mut base = Vec::new();
                self.read_below(hasher, delta.base, &mut base, last, delta.depth)
                    .map_err(|e| {
                        Error::Corrupt(format!(
                            "chunk {id}: its delta base {}: {}",
                            delta.base,
                            corrupt_message(e)
                        ))
                    })?;
                Some(base)
            }
            None => None,
        };
        self.in_pack(id, &at, last, |stored| {
            chunk::decode_chunk_on(hasher, id, stored, base.as_deref(), out)
        })
    }
}

/// The pack a reader used last, held open, and the solid block it decompressed last.
/// Chunks are mostly read in the order they were written, so most reads find their pack
/// here: redb's cache does not reliably keep a 512 KiB page from one read to the next,
/// and reading it again for every chunk made a full restore 40% slower. Likewise a
/// restore reads a block's chunks one after another, and decompressing the block for
/// each would cost as much as the rest of the restore. Keep one per reading thread; it
/// holds at most one pack and one block ([`chunk::LARGE_BLOCK_MAX`] bytes).
#[derive(Default)]
pub struct LastPack<'a> {
    pack: Option<(u64, redb::AccessGuard<'a, &'static [u8]>)>,
    /// The content of the block at (pack, offset, stored length).
    block: Option<((u64, u32, u32), Vec<u8>)>,
}
