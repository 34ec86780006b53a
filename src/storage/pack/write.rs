//! Writing new chunks: appended to the open pack, small ones gathered into a solid block
//! first, each indexed where it lands.

use std::collections::HashSet;

use redb::{ReadableTable, Table};

use super::corrupt_message;
use super::entry::{Delta, Location, Member};
use super::PACK_CAPACITY;
use crate::format::chunk;
use crate::{ChunkId, Error, Result};

/// Packs new chunks as they come and indexes them. The caller commits.
///
/// Small chunks ([`chunk::SOLID_CHUNK_MAX`]) that are not deltas gather in an open solid
/// block, which is compressed and packed when full or when the pack is finished.
pub(in crate::storage) struct PackWriter {
    next: u64,
    buf: Vec<u8>,
    /// The open solid block's content: its chunks' content end to end.
    block: Vec<u8>,
    /// The open block's chunks: id, where its content starts in `block`, and its length.
    members: Vec<(ChunkId, u32, u32)>,
    /// The ids in `members`, which the index has not got yet.
    in_block: HashSet<ChunkId>,
}

impl PackWriter {
    /// A writer that appends after the last pack in `packs`.
    pub(in crate::storage) fn new(
        packs: &impl ReadableTable<u64, &'static [u8]>,
    ) -> Result<PackWriter> {
        let next = match packs.last()? {
            Some((key, _)) => key.value() + 1,
            None => 0,
        };
        Ok(PackWriter {
            next,
            buf: Vec::with_capacity(PACK_CAPACITY),
            block: Vec::new(),
            members: Vec::new(),
            in_block: HashSet::new(),
        })
    }

    /// Whether chunk `id` waits in the open solid block (it is not in the index yet).
    pub(in crate::storage) fn holds(&self, id: ChunkId) -> bool {
        self.in_block.contains(&id)
    }

    /// Adds new chunk `id` (stored form `stored`, content length `raw_len`, compressed
    /// against `delta`'s base if given): a small full chunk to the open solid block (to
    /// be indexed when the block is packed), any other as [`Self::add`] does.
    pub(in crate::storage) fn add_new(
        &mut self,
        index: &mut Table<u128, &'static [u8]>,
        packs: &mut Table<u64, &'static [u8]>,
        id: ChunkId,
        stored: &[u8],
        raw_len: usize,
        delta: Option<Delta>,
    ) -> Result<()> {
        if delta.is_none() && raw_len < chunk::SOLID_CHUNK_MAX {
            let content = chunk::content_of(stored, chunk::SOLID_CHUNK_MAX)
                .map_err(|e| Error::Internal(format!("chunk {id}: {}", corrupt_message(e))))?;
            return self.add_to_block(index, packs, id, &content);
        }
        self.add(index, packs, id, stored, raw_len, delta)
    }

    /// Adds chunk `id` (stored form `stored`, content length `raw_len`, compressed
    /// against `delta`'s base if given) to the open pack as it is, first closing the pack
    /// if the chunk does not fit, and indexes it there.
    pub(in crate::storage) fn add(
        &mut self,
        index: &mut Table<u128, &'static [u8]>,
        packs: &mut Table<u64, &'static [u8]>,
        id: ChunkId,
        stored: &[u8],
        raw_len: usize,
        delta: Option<Delta>,
    ) -> Result<()> {
        let at = self.append(packs, id, stored, raw_len)?;
        index.insert(id.0, Location { delta, ..at }.encode().as_slice())?;
        Ok(())
    }

    /// Adds small chunk `id`, of content `content`, to the open solid block, first
    /// packing the block if the chunk does not fit.
    pub(super) fn add_to_block(
        &mut self,
        index: &mut Table<u128, &'static [u8]>,
        packs: &mut Table<u64, &'static [u8]>,
        id: ChunkId,
        content: &[u8],
    ) -> Result<()> {
        if self.in_block.contains(&id) {
            return Ok(());
        }
        if self.block.len() + content.len() > chunk::BLOCK_MAX {
            self.close_block(index, packs)?;
        }
        let too_big = || Error::Internal(format!("chunk {id} is too big for a solid block"));
        let start = u32::try_from(self.block.len()).map_err(|_| too_big())?;
        let len = u32::try_from(content.len()).map_err(|_| too_big())?;
        self.block.extend_from_slice(content);
        self.members.push((id, start, len));
        self.in_block.insert(id);
        Ok(())
    }

    /// Compresses the open solid block, packs it and indexes its chunks in it. A block
    /// of one chunk, or one that zstd cannot shrink, is packed as its chunks one by one.
    fn close_block(
        &mut self,
        index: &mut Table<u128, &'static [u8]>,
        packs: &mut Table<u64, &'static [u8]>,
    ) -> Result<()> {
        let members = std::mem::take(&mut self.members);
        let block = std::mem::take(&mut self.block);
        self.in_block.clear();
        let stored = match members.len() {
            0 => return Ok(()),
            1 => None,
            _ => chunk::encode_block(&block, chunk::BLOCK_LEVEL),
        };
        let Some(stored) = stored else {
            for (id, start, len) in members {
                let content = block
                    .get(start as usize..(start + len) as usize)
                    .unwrap_or_default();
                let stored = chunk::encode_chunk(content, chunk::BLOCK_LEVEL);
                let at = self.append(packs, id, &stored, content.len())?;
                index.insert(id.0, at.encode().as_slice())?;
            }
            return Ok(());
        };
        let Some(&(first, _, _)) = members.first() else {
            return Ok(());
        };
        let at = self.append(packs, first, &stored, 0)?;
        // Each chunk is charged the block's stored bytes in proportion to its content,
        // rounded so that the shares add up to the whole block.
        let total = block.len() as u64;
        let stored_len = stored.len() as u64;
        let charged = |end: u64| (stored_len * end).checked_div(total).unwrap_or(0);
        for (id, start, len) in members {
            let end = u64::from(start) + u64::from(len);
            let share = charged(end) - charged(u64::from(start));
            let member = Member {
                start,
                // At most the block's length, itself a u32.
                share: u32::try_from(share).unwrap_or(at.len),
            };
            let entry = Location {
                raw_len: len,
                block: Some(member),
                ..at
            };
            index.insert(id.0, entry.encode().as_slice())?;
        }
        Ok(())
    }

    /// Appends `stored` (chunk `id`'s, or a block whose first chunk is `id`) to the open
    /// pack, first closing the pack if it does not fit; returns where it lies.
    fn append(
        &mut self,
        packs: &mut Table<u64, &'static [u8]>,
        id: ChunkId,
        stored: &[u8],
        raw_len: usize,
    ) -> Result<Location> {
        if self.buf.len() + stored.len() > PACK_CAPACITY {
            self.write_pack(packs)?;
        }
        let too_big = || Error::Internal(format!("chunk {id} is too big for a pack"));
        let location = Location {
            pack: self.next,
            offset: u32::try_from(self.buf.len()).map_err(|_| too_big())?,
            len: u32::try_from(stored.len()).map_err(|_| too_big())?,
            raw_len: u32::try_from(raw_len).map_err(|_| too_big())?,
            delta: None,
            block: None,
        };
        self.buf.extend_from_slice(stored);
        Ok(location)
    }

    /// Writes the open solid block and the open pack, if they hold anything. Call before
    /// committing.
    pub(in crate::storage) fn finish(
        &mut self,
        index: &mut Table<u128, &'static [u8]>,
        packs: &mut Table<u64, &'static [u8]>,
    ) -> Result<()> {
        self.close_block(index, packs)?;
        self.write_pack(packs)
    }

    /// Writes the open pack, if it holds anything.
    fn write_pack(&mut self, packs: &mut Table<u64, &'static [u8]>) -> Result<()> {
        if !self.buf.is_empty() {
            packs.insert(self.next, self.buf.as_slice())?;
            self.next += 1;
            self.buf.clear();
        }
        Ok(())
    }
}
