//! Where stored chunks live: the chunk index and the packs.
//!
//! Every chunk has an entry in the chunk index (`CHUNKS`, keyed by its id). The entry is
//! either the stored chunk itself (`[FORMAT_VERSION, codec, ...]`, as stores written
//! before packs hold them, and attachments), or its place in a pack:
//! `[PACKED, pack, offset, stored length, content length]`, or, for a delta (a chunk
//! compressed against another chunk's content, its base),
//! `[PACKED_DELTA, pack, offset, stored length, content length, depth, base id]`, or, for
//! a small chunk compressed with others in a solid block (`format::chunk`),
//! `[PACKED_SOLID, pack, block offset, block stored length, content length, start in the
//! block's content, share]`. A pack (`PACKS`, keyed by a sequence number) is stored
//! chunks and blocks laid end to end, one redb value of at most [`PACK_CAPACITY`] bytes.
//!
//! Why packs: redb gives a value that does not share a page a power-of-two number of
//! pages, and rebuilds the neighbours of a key that lands among small values. Chunks
//! stored one by one under their random ids took 1.3 GB of disk for 460 MiB of chunks
//! of a 200,000-file tree, and their inserts held the save back. Packs are appended in
//! key order, which redb stores without touching the previous value, and are filled to
//! just under a power of two; the index holds small entries, dense in its pages.
//!
//! Invariant: an index entry names a pack that exists in the same committed state, and
//! a range inside it. [`PackWriter`] inserts a pack and the entries that point into it in
//! one transaction; gc moves a pack's live chunks to a new pack, repoints their entries
//! and deletes the old pack in one transaction too.
//!
//! Invariant (docs/design.md invariant 18): a delta's base is in the index whenever the
//! delta is, and is itself a full chunk or a delta of a smaller depth, at most
//! [`MAX_DELTA_DEPTH`] deep: reading a chunk decodes at most that many others first.
//! [`remove_chunks`], the one place chunks leave the index, keeps every base that a
//! chunk staying needs, and repacking carries the base along with the entry.

use std::collections::{BTreeMap, HashMap, HashSet};

use redb::{ReadTransaction, ReadableTable, Table};

use super::tables::{CHUNKS, PACKS};
use crate::format::chunk::{self, Hasher, MAX_DELTA_DEPTH};
use crate::format::codec::FORMAT_VERSION;
use crate::{ChunkId, Error, Result};

/// The most bytes of chunks one pack holds. With redb's leaf header a full pack takes
/// exactly 512 KiB of pages; a chunk never exceeds half of that.
pub const PACK_CAPACITY: usize = (512 << 10) - 256;
/// First byte of an index entry that points into a pack. Stored chunks start with
/// [`FORMAT_VERSION`] instead.
const PACKED: u8 = 0xB1;
/// First byte of an index entry that points into a pack at a delta.
const PACKED_DELTA: u8 = 0xB2;
/// First byte of an index entry that points into a pack at a solid block.
const PACKED_SOLID: u8 = 0xB3;
const LOCATION_BYTES: usize = 21;
const DELTA_LOCATION_BYTES: usize = LOCATION_BYTES + 17;
const SOLID_LOCATION_BYTES: usize = LOCATION_BYTES + 8;

/// What a delta is compressed against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Delta {
    /// The base chunk, whose content decodes this one.
    pub base: ChunkId,
    /// How many chunks a read decodes first: 1 for a base that is a full chunk, one
    /// more than the base's own depth otherwise; at most [`MAX_DELTA_DEPTH`].
    pub depth: u8,
}

/// Where a chunk lies in a solid block (docs/design.md section 6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Member {
    /// Where the chunk's content starts in the block's content.
    pub start: u32,
    /// The part of the block's stored bytes charged to this chunk: its content's share
    /// of the block's content. The shares of a block's chunks add up to the block, so
    /// that gc's and stats' stored sizes of chunks stay what the store holds.
    pub share: u32,
}

/// Where a chunk is kept in a pack.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Location {
    /// The pack's key.
    pub pack: u64,
    /// Where the stored chunk (or its solid block) starts in the pack.
    pub offset: u32,
    /// The stored chunk's (or its solid block's) length.
    pub len: u32,
    /// The length of the chunk's content, once decoded.
    pub raw_len: u32,
    /// The base, if the chunk is stored as a delta.
    pub delta: Option<Delta>,
    /// Where the chunk lies in its solid block, if it is in one (then it is no delta).
    pub block: Option<Member>,
}

impl Location {
    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(DELTA_LOCATION_BYTES);
        out.push(match (self.delta, self.block) {
            (Some(_), _) => PACKED_DELTA,
            (None, Some(_)) => PACKED_SOLID,
            (None, None) => PACKED,
        });
        out.extend_from_slice(&self.pack.to_le_bytes());
        out.extend_from_slice(&self.offset.to_le_bytes());
        out.extend_from_slice(&self.len.to_le_bytes());
        out.extend_from_slice(&self.raw_len.to_le_bytes());
        if let Some(delta) = self.delta {
            out.push(delta.depth);
            out.extend_from_slice(&delta.base.0.to_le_bytes());
        } else if let Some(member) = self.block {
            out.extend_from_slice(&member.start.to_le_bytes());
            out.extend_from_slice(&member.share.to_le_bytes());
        }
        out
    }
}

/// A chunk index entry, parsed.
#[derive(Debug)]
pub enum Entry<'a> {
    /// The stored chunk itself.
    Inline(&'a [u8]),
    /// The chunk's place in a pack.
    Packed(Location),
}

impl<'a> Entry<'a> {
    /// Parses an index entry of chunk `id`.
    pub fn parse(id: ChunkId, value: &'a [u8]) -> Result<Entry<'a>> {
        match value {
            [FORMAT_VERSION, ..] => Ok(Entry::Inline(value)),
            [PACKED, rest @ ..] if rest.len() == LOCATION_BYTES - 1 => {
                Ok(Entry::Packed(parse_location(rest, None)))
            }
            [PACKED_SOLID, rest @ ..] if rest.len() == SOLID_LOCATION_BYTES - 1 => {
                let u32_at =
                    |i: usize| u32::from_le_bytes([rest[i], rest[i + 1], rest[i + 2], rest[i + 3]]);
                let at = Location {
                    block: Some(Member {
                        start: u32_at(LOCATION_BYTES - 1),
                        share: u32_at(LOCATION_BYTES + 3),
                    }),
                    ..parse_location(rest, None)
                };
                Ok(Entry::Packed(at))
            }
            [PACKED_DELTA, rest @ ..] if rest.len() == DELTA_LOCATION_BYTES - 1 => {
                let depth = rest[LOCATION_BYTES - 1];
                if !(1..=MAX_DELTA_DEPTH).contains(&depth) {
                    return Err(Error::Corrupt(format!(
                        "chunk {id}: its index entry records a delta of depth {depth} \
                         (at most {MAX_DELTA_DEPTH})"
                    )));
                }
                let mut base = [0u8; 16];
                base.copy_from_slice(&rest[LOCATION_BYTES..]);
                let base = ChunkId(u128::from_le_bytes(base));
                if base == id {
                    return Err(Error::Corrupt(format!("chunk {id} is a delta of itself")));
                }
                Ok(Entry::Packed(parse_location(
                    rest,
                    Some(Delta { base, depth }),
                )))
            }
            _ => Err(Error::Corrupt(format!(
                "chunk {id}: its index entry is not one this build reads"
            ))),
        }
    }

    /// The base, if the chunk is stored as a delta.
    pub fn delta(&self) -> Option<Delta> {
        match self {
            Entry::Inline(_) => None,
            Entry::Packed(at) => at.delta,
        }
    }

    /// Bytes the stored chunk takes (in its pack, or inline); for a chunk in a solid
    /// block, its share of the block.
    pub fn stored_len(&self) -> u64 {
        match self {
            Entry::Inline(stored) => stored.len() as u64,
            Entry::Packed(at) => at.stored_len(),
        }
    }

    /// The length of the chunk's content, if known without reading the pack.
    pub fn raw_len(&self) -> Option<u64> {
        match self {
            Entry::Inline(stored) => chunk::raw_len(stored),
            Entry::Packed(at) => Some(u64::from(at.raw_len)),
        }
    }
}

impl Location {
    /// Bytes the chunk takes in its pack: its share of its solid block if in one.
    fn stored_len(&self) -> u64 {
        u64::from(self.block.map_or(self.len, |member| member.share))
    }
}

/// The fixed fields of a packed entry, after its first byte.
fn parse_location(rest: &[u8], delta: Option<Delta>) -> Location {
    let u32_at = |i: usize| u32::from_le_bytes([rest[i], rest[i + 1], rest[i + 2], rest[i + 3]]);
    let mut pack = [0u8; 8];
    pack.copy_from_slice(&rest[..8]);
    Location {
        pack: u64::from_le_bytes(pack),
        offset: u32_at(8),
        len: u32_at(12),
        raw_len: u32_at(16),
        delta,
        block: None,
    }
}

/// Stored size of every chunk in the index, for gc and stats.
pub fn stored_sizes(
    index: &impl ReadableTable<u128, &'static [u8]>,
) -> Result<HashMap<ChunkId, u64>> {
    let mut sizes = HashMap::new();
    for item in index.iter()? {
        let (key, value) = item?;
        let id = ChunkId(key.value());
        sizes.insert(id, Entry::parse(id, value.value())?.stored_len());
    }
    Ok(sizes)
}

/// The base of every chunk the index holds as a delta, by the delta's id, from the index
/// entries alone.
pub fn delta_bases(
    index: &impl ReadableTable<u128, &'static [u8]>,
) -> Result<HashMap<ChunkId, ChunkId>> {
    let mut bases = HashMap::new();
    for item in index.iter()? {
        let (key, value) = item?;
        let id = ChunkId(key.value());
        if let Some(delta) = Entry::parse(id, value.value())?.delta() {
            bases.insert(id, delta.base);
        }
    }
    Ok(bases)
}

/// The chunk index and the packs, read together.
pub struct Chunks<I, P> {
    /// The chunk index.
    pub index: I,
    /// The packs.
    pub packs: P,
}

/// The chunk tables of a read transaction.
pub type ReadChunks =
    Chunks<redb::ReadOnlyTable<u128, &'static [u8]>, redb::ReadOnlyTable<u64, &'static [u8]>>;

impl ReadChunks {
    /// Opens the chunk index and the packs in `txn`.
    pub fn open(txn: &ReadTransaction) -> Result<ReadChunks> {
        Ok(Chunks {
            index: txn.open_table(CHUNKS)?,
            packs: txn.open_table(PACKS)?,
        })
    }
}

impl<I, P> Chunks<I, P>
where
    I: ReadableTable<u128, &'static [u8]>,
    P: ReadableTable<u64, &'static [u8]>,
{
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

/// The text of an error, without the `Corrupt` wrapper's own words, to nest in another.
fn corrupt_message(e: Error) -> String {
    match e {
        Error::Corrupt(message) => message,
        other => other.to_string(),
    }
}

/// The pack a reader used last, held open, and the solid block it decompressed last.
/// Chunks are mostly read in the order they were written, so most reads find their pack
/// here: redb's cache does not reliably keep a 512 KiB page from one read to the next,
/// and reading it again for every chunk made a full restore 40% slower. Likewise a
/// restore reads a block's chunks one after another, and decompressing the block for
/// each would cost as much as the rest of the restore. Keep one per reading thread; it
/// holds at most one pack and one block ([`chunk::BLOCK_MAX`] bytes).
#[derive(Default)]
pub struct LastPack<'a> {
    pack: Option<(u64, redb::AccessGuard<'a, &'static [u8]>)>,
    /// The content of the block at (pack, offset, stored length).
    block: Option<((u64, u32, u32), Vec<u8>)>,
}

/// Packs new chunks as they come and indexes them. The caller commits.
///
/// Small chunks ([`chunk::SOLID_CHUNK_MAX`]) that are not deltas gather in an open solid
/// block, which is compressed and packed when full or when the pack is finished.
pub struct PackWriter {
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
    pub fn new(packs: &impl ReadableTable<u64, &'static [u8]>) -> Result<PackWriter> {
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
    pub fn holds(&self, id: ChunkId) -> bool {
        self.in_block.contains(&id)
    }

    /// Adds new chunk `id` (stored form `stored`, content length `raw_len`, compressed
    /// against `delta`'s base if given): a small full chunk to the open solid block (to
    /// be indexed when the block is packed), any other as [`Self::add`] does.
    pub fn add_new(
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
    pub fn add(
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
    fn add_to_block(
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
    pub fn finish(
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

/// Removes chunks `ids` from the index, except those a chunk that stays needs as a
/// delta base, then deletes each pack that no longer holds a
/// live chunk, and rewrites each that lost at least half its bytes: its live chunks move
/// to new packs, their entries with them, and it is deleted. All in `txn`, so a crash
/// leaves either the old packs and entries or the new ones.
pub fn remove_chunks(txn: &redb::WriteTransaction, ids: &[ChunkId]) -> Result<()> {
    let mut index = txn.open_table(CHUNKS)?;
    let mut packs = txn.open_table(PACKS)?;
    let ids = without_needed_bases(&index, ids)?;
    let mut dead: BTreeMap<u64, u64> = BTreeMap::new();
    for &id in &ids {
        if let Some(value) = index.remove(id.0)? {
            if let Entry::Packed(at) = Entry::parse(id, value.value())? {
                *dead.entry(at.pack).or_default() += at.stored_len();
            }
        }
    }
    if dead.is_empty() {
        return Ok(());
    }
    let mut live: BTreeMap<u64, Vec<(ChunkId, Location)>> = BTreeMap::new();
    for item in index.iter()? {
        let (key, value) = item?;
        let id = ChunkId(key.value());
        if let Entry::Packed(at) = Entry::parse(id, value.value())? {
            if dead.contains_key(&at.pack) {
                live.entry(at.pack).or_default().push((id, at));
            }
        }
    }
    let mut writer = PackWriter::new(&packs)?;
    for (pack, dead_bytes) in dead {
        let keep = live.remove(&pack).unwrap_or_default();
        let live_bytes: u64 = keep.iter().map(|(_, at)| at.stored_len()).sum();
        if live_bytes > dead_bytes {
            continue;
        }
        if !keep.is_empty() {
            let data = packs
                .get(pack)?
                .ok_or_else(|| Error::Corrupt(format!("pack {pack} is missing")))?
                .value()
                .to_vec();
            // The content of each solid block that still holds a live chunk, by offset.
            let mut blocks: HashMap<u32, Vec<u8>> = HashMap::new();
            for (id, at) in keep {
                let start = at.offset as usize;
                let stored = data.get(start..start + at.len as usize).ok_or_else(|| {
                    Error::Corrupt(format!("chunk {id}: lies outside its pack {pack}"))
                })?;
                let Some(member) = at.block else {
                    writer.add(
                        &mut index,
                        &mut packs,
                        id,
                        stored,
                        at.raw_len as usize,
                        at.delta,
                    )?;
                    continue;
                };
                // A live chunk of a block moves into a new block, without the dead.
                let block = match blocks.entry(at.offset) {
                    std::collections::hash_map::Entry::Occupied(block) => block.into_mut(),
                    std::collections::hash_map::Entry::Vacant(slot) => {
                        slot.insert(chunk::decode_block(stored).map_err(|e| {
                            Error::Corrupt(format!(
                                "chunk {id}: its solid block in pack {pack} is damaged: {e}"
                            ))
                        })?)
                    }
                };
                let start = member.start as usize;
                let content = block
                    .get(start..start + at.raw_len as usize)
                    .ok_or_else(|| {
                        Error::Corrupt(format!(
                            "chunk {id}: lies outside its solid block in pack {pack}"
                        ))
                    })?;
                writer.add_to_block(&mut index, &mut packs, id, content)?;
            }
        }
        packs.remove(pack)?;
    }
    writer.finish(&mut index, &mut packs)
}

/// `ids` less every chunk that a chunk staying in `index` needs to decode: the bases of
/// the deltas that stay, theirs in turn, down each chain.
fn without_needed_bases(
    index: &impl ReadableTable<u128, &'static [u8]>,
    ids: &[ChunkId],
) -> Result<Vec<ChunkId>> {
    let doomed: HashSet<ChunkId> = ids.iter().copied().collect();
    let mut bases: HashMap<ChunkId, ChunkId> = HashMap::new();
    let mut needed: Vec<ChunkId> = Vec::new();
    for item in index.iter()? {
        let (key, value) = item?;
        let id = ChunkId(key.value());
        if let Some(delta) = Entry::parse(id, value.value())?.delta() {
            if doomed.contains(&id) {
                bases.insert(id, delta.base);
            } else {
                needed.push(delta.base);
            }
        }
    }
    let mut spared = HashSet::new();
    while let Some(base) = needed.pop() {
        if doomed.contains(&base) && spared.insert(base) {
            needed.extend(bases.get(&base));
        }
    }
    Ok(ids
        .iter()
        .copied()
        .filter(|id| !spared.contains(id))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_round_trip_and_garbage_is_corrupt() {
        let at = Location {
            pack: 7 << 40,
            offset: 123_456,
            len: 65_000,
            raw_len: 258_048,
            delta: None,
            block: None,
        };
        match Entry::parse(ChunkId(1), &at.encode()).unwrap() {
            Entry::Packed(back) => assert_eq!(back, at),
            other => panic!("{other:?}"),
        }
        let delta = Location {
            delta: Some(Delta {
                base: ChunkId(u128::MAX - 5),
                depth: MAX_DELTA_DEPTH,
            }),
            ..at
        };
        match Entry::parse(ChunkId(1), &delta.encode()).unwrap() {
            Entry::Packed(back) => assert_eq!(back, delta),
            other => panic!("{other:?}"),
        }
        let solid = Location {
            block: Some(Member {
                start: 70_000,
                share: 1_234,
            }),
            ..at
        };
        match Entry::parse(ChunkId(1), &solid.encode()).unwrap() {
            Entry::Packed(back) => {
                assert_eq!(back, solid);
                assert_eq!(back.stored_len(), 1_234);
            }
            other => panic!("{other:?}"),
        }
        assert!(Entry::parse(ChunkId(1), &solid.encode()[..28]).is_err());
        for depth in [0, MAX_DELTA_DEPTH + 1] {
            let mut bad = delta.encode();
            bad[LOCATION_BYTES] = depth;
            assert!(Entry::parse(ChunkId(1), &bad).is_err());
        }
        assert!(Entry::parse(ChunkId(u128::MAX - 5), &delta.encode()).is_err());
        assert!(Entry::parse(ChunkId(1), &delta.encode()[..37]).is_err());
        assert!(Entry::parse(ChunkId(1), &at.encode()[..20]).is_err());
        assert!(Entry::parse(ChunkId(1), &[0xff, 1, 2]).is_err());
        assert!(matches!(
            Entry::parse(ChunkId(1), &[FORMAT_VERSION, 0, 9]).unwrap(),
            Entry::Inline(_)
        ));
    }
}
