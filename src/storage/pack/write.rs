//! Writing new chunks: appended to the open pack, small ones gathered into a solid block
//! first, each indexed where it lands.

use redb::{ReadableTable, Table};

use super::block::{OpenBlock, SealedBlock};
use super::corrupt_message;
use super::entry::{Delta, Location, Member};
use super::PACK_CAPACITY;
use crate::format::chunk;
use crate::{ChunkId, Error, Result};

/// Packs new chunks as they come and indexes them. The caller commits.
///
/// Small chunks ([`chunk::SOLID_CHUNK_MAX`]) that are not deltas gather in an open solid
/// block, which is compressed and packed when full or when the pack is finished; a block
/// sealed elsewhere (a save's reader threads seal their own) is packed as it comes
/// ([`Self::add_sealed`]).
pub(in crate::storage) struct PackWriter {
    next: u64,
    buf: Vec<u8>,
    /// The open solid block, whose chunks the index has not got yet.
    block: OpenBlock,
    /// The zstd level the open block is sealed at.
    level: i32,
    /// When recompressing: the content and stored bytes of the blocks sealed so far,
    /// from which the next block's compressed size is guessed ([`Self::would_overflow`]).
    sealed_so_far: Option<(u64, u64)>,
    /// Whether it packed a large solid block (codec 4).
    packed_large: bool,
}

/// The room left in a pack below which a recompressing writer fills a new pack instead:
/// a block of less content than this compresses poorly.
const LEAST_ROOM: usize = 48 << 10;

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
            block: OpenBlock::default(),
            level: chunk::BLOCK_LEVEL,
            sealed_so_far: None,
            packed_large: false,
        })
    }

    /// A writer that appends after the last pack in `packs` and gathers the chunks
    /// given to [`Self::add_to_block`], large ones too, into large solid blocks at
    /// [`chunk::RECOMPRESS_LEVEL`]: gc's recompression.
    pub(super) fn recompressing(
        packs: &impl ReadableTable<u64, &'static [u8]>,
    ) -> Result<PackWriter> {
        Ok(PackWriter {
            block: OpenBlock::large(),
            level: chunk::RECOMPRESS_LEVEL,
            // A first guess: source code compresses about 3:1.
            sealed_so_far: Some((3, 1)),
            ..PackWriter::new(packs)?
        })
    }

    /// Whether it packed a large solid block (codec 4).
    pub(super) fn packed_large(&self) -> bool {
        self.packed_large
    }

    /// The key the next pack written takes.
    pub(super) fn next_pack(&self) -> u64 {
        self.next
    }

    /// Whether chunk `id` waits in the open solid block (it is not in the index yet).
    pub(in crate::storage) fn holds(&self, id: ChunkId) -> bool {
        self.block.holds(id)
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

    /// Adds small chunk `id` (any chunk when recompressing), of content `content`, to
    /// the open solid block, first packing the block if the chunk does not fit.
    pub(super) fn add_to_block(
        &mut self,
        index: &mut Table<u128, &'static [u8]>,
        packs: &mut Table<u64, &'static [u8]>,
        id: ChunkId,
        content: &[u8],
    ) -> Result<()> {
        if self.block.holds(id) {
            return Ok(());
        }
        if self.sealed_so_far.is_some() {
            while !self.block.is_empty()
                && (!self.block.fits(content.len()) || self.would_overflow(content.len()))
            {
                self.fill_pack(index, packs)?;
            }
        } else if !self.block.fits(content.len()) {
            self.close_block(index, packs)?;
        }
        self.block.push(id, content)
    }

    /// The room left in the open pack for a recompressing writer's next block, writing
    /// the pack first when less than [`LEAST_ROOM`] is left.
    fn room(&mut self, packs: &mut Table<u64, &'static [u8]>) -> Result<usize> {
        // A chunk larger than a pack (a store of larger chunking parameters) overfills it.
        if PACK_CAPACITY.saturating_sub(self.buf.len()) < LEAST_ROOM {
            self.write_pack(packs)?;
        }
        Ok(PACK_CAPACITY - self.buf.len())
    }

    /// Recompressing: seals as much of the open block, from its first chunk, as fills
    /// the room left in the open pack, and packs it; the rest stays open. A block whose
    /// frame overflows the room is cut where the room should end, guessed from its own
    /// ratio, and sealed again, until it fits or is one chunk (which takes a new pack).
    fn fill_pack(
        &mut self,
        index: &mut Table<u128, &'static [u8]>,
        packs: &mut Table<u64, &'static [u8]>,
    ) -> Result<()> {
        let room = self.room(packs)?;
        let mut head = self.block.take();
        let mut rest = self.block.take();
        let sealed = loop {
            let sealed = head.clone().seal(self.level);
            let stored: usize = sealed.iter().map(SealedBlock::stored_len).sum();
            if stored <= room || head.len() <= 1 {
                break sealed;
            }
            // A little under the guess: a frame is not quite proportional to its content.
            let keep =
                (head.content_len() as u64 * room as u64 / stored as u64 * 97 / 100) as usize;
            let mut tail = head.split_off(keep);
            tail.append(rest);
            rest = tail;
        };
        if let Some((content, stored)) = &mut self.sealed_so_far {
            *content += head.content_len() as u64;
            *stored += sealed.iter().map(|s| s.stored_len() as u64).sum::<u64>();
        }
        for sealed in sealed {
            self.add_sealed(index, packs, sealed)?;
        }
        self.block = rest;
        Ok(())
    }

    /// When recompressing, whether the open block with `more` bytes of content would,
    /// compressed as well as the blocks before it, overflow the room left in the open
    /// pack (or a new one, when little is left): a pack is one redb value of a
    /// power-of-two number of pages, whose room a block that does not fit leaves unused,
    /// so large blocks are cut to fill packs rather than at their largest.
    fn would_overflow(&self, more: usize) -> bool {
        let Some((content, stored)) = self.sealed_so_far else {
            return false;
        };
        if self.block.is_empty() {
            return false;
        }
        let room = match PACK_CAPACITY.saturating_sub(self.buf.len()) {
            room if room < LEAST_ROOM => PACK_CAPACITY,
            room => room,
        };
        let guess = (self.block.content_len() + more) as u64 * stored / content.max(1);
        // A block that overflows after all is cut to fit ([`Self::fill_pack`]).
        guess > room as u64
    }

    /// Compresses the open solid block, packs it and indexes its chunks in it. gc and
    /// attachments, which fill this block, do not know the save's level: theirs is
    /// [`chunk::BLOCK_LEVEL`], or [`chunk::RECOMPRESS_LEVEL`] when recompressing.
    fn close_block(
        &mut self,
        index: &mut Table<u128, &'static [u8]>,
        packs: &mut Table<u64, &'static [u8]>,
    ) -> Result<()> {
        if self.sealed_so_far.is_some() {
            while !self.block.is_empty() {
                self.fill_pack(index, packs)?;
            }
            return Ok(());
        }
        let block = self.block.take();
        if block.is_empty() {
            return Ok(());
        }
        for sealed in block.seal(self.level) {
            self.add_sealed(index, packs, sealed)?;
        }
        Ok(())
    }

    /// Packs a sealed solid block and indexes its chunks in it: a block's members
    /// charged its stored bytes in proportion to their content, chunks stored one by one
    /// each where it lands.
    pub(in crate::storage) fn add_sealed(
        &mut self,
        index: &mut Table<u128, &'static [u8]>,
        packs: &mut Table<u64, &'static [u8]>,
        sealed: SealedBlock,
    ) -> Result<()> {
        let (stored, total, members) = match sealed {
            SealedBlock::Singles(chunks) => {
                for (id, stored, raw_len) in chunks {
                    let at = self.append(packs, id, &stored, raw_len)?;
                    index.insert(id.0, at.encode().as_slice())?;
                }
                return Ok(());
            }
            SealedBlock::Solid {
                stored,
                content_len,
                members,
            } => (stored, content_len, members),
        };
        let Some(&(first, _, _)) = members.first() else {
            return Ok(());
        };
        self.packed_large |= total > chunk::BLOCK_MAX as u64;
        let at = self.append(packs, first, &stored, 0)?;
        // Each chunk is charged the block's stored bytes in proportion to its content,
        // rounded so that the shares add up to the whole block.
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
    /// pack, first closing the pack if it does not fit; returns where it lies. The caller
    /// indexes what it appended.
    pub(super) fn append(
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
