//! Solid blocks before they are packed: an [`OpenBlock`] gathers small chunks' content,
//! [`OpenBlock::seal`] compresses it into a [`SealedBlock`], which `PackWriter` appends
//! and indexes.
//!
//! Sealing is apart from packing so that the costly step, compression, can run on any
//! thread: a save's reader threads fill and seal blocks and hand the writer thread only
//! sealed ones, which it appends (docs/design.md section 4, "Save"), while gc and
//! attachments fill the writer's own open block, sealed where it is packed.

use std::collections::HashSet;

use crate::format::chunk;
use crate::{ChunkId, Error, Result};

/// Chunks' content laid end to end, not yet compressed, and where each chunk lies in
/// it: at most [`chunk::BLOCK_MAX`] bytes (a save's blocks), or
/// [`chunk::LARGE_BLOCK_MAX`] for gc's recompression ([`OpenBlock::large`]).
#[derive(Clone)]
pub struct OpenBlock {
    /// The most content it takes.
    max: usize,
    /// The chunks' content end to end.
    content: Vec<u8>,
    /// Each chunk: its id, where its content starts in `content`, and its length.
    members: Vec<(ChunkId, u32, u32)>,
    /// The ids in `members`, which the index has not got yet.
    ids: HashSet<ChunkId>,
}

impl Default for OpenBlock {
    fn default() -> Self {
        OpenBlock::with_max(chunk::BLOCK_MAX)
    }
}

/// The most stored bytes one sealed block takes: half a pack, so that it fits in any
/// pack that is not more than half full. A larger one is sealed as two halves.
const SEALED_MAX: usize = super::PACK_CAPACITY / 2;

impl OpenBlock {
    /// An empty block of at most [`chunk::LARGE_BLOCK_MAX`] bytes of content.
    pub fn large() -> OpenBlock {
        OpenBlock::with_max(chunk::LARGE_BLOCK_MAX)
    }

    fn with_max(max: usize) -> OpenBlock {
        OpenBlock {
            max,
            content: Vec::new(),
            members: Vec::new(),
            ids: HashSet::new(),
        }
    }

    /// The block as it is, leaving this one empty, of the same size.
    pub fn take(&mut self) -> OpenBlock {
        std::mem::replace(self, OpenBlock::with_max(self.max))
    }

    /// Whether chunk `id` is in the block.
    pub fn holds(&self, id: ChunkId) -> bool {
        self.ids.contains(&id)
    }

    /// The length of the content it holds.
    pub fn content_len(&self) -> usize {
        self.content.len()
    }

    /// How many chunks it holds.
    pub fn len(&self) -> usize {
        self.members.len()
    }

    /// Splits the block after its first chunks whose content ends at or before `at`
    /// (the first chunk at least, so that the block keeps one): the rest is returned, as
    /// a block of the same size, in order.
    pub fn split_off(&mut self, at: usize) -> OpenBlock {
        let keep = self
            .members
            .iter()
            .take_while(|(_, start, len)| (start + len) as usize <= at)
            .count()
            .max(1)
            .min(self.members.len());
        let mut rest = OpenBlock::with_max(self.max);
        let cut = self
            .members
            .get(keep)
            .map_or(self.content.len(), |m| m.1 as usize);
        for (id, start, len) in self.members.drain(keep..) {
            self.ids.remove(&id);
            // Offsets only shrink.
            rest.members.push((id, start - cut as u32, len));
            rest.ids.insert(id);
        }
        rest.content = self.content.split_off(cut);
        rest
    }

    /// Appends `other`'s chunks after this block's; the caller keeps the sum within
    /// the block's size.
    pub fn append(&mut self, other: OpenBlock) {
        let base = self.content.len() as u32;
        for (id, start, len) in other.members {
            if self.ids.insert(id) {
                self.members.push((id, base + start, len));
            }
        }
        self.content.extend_from_slice(&other.content);
    }

    /// Whether the block holds no chunk.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Whether `len` more bytes of content fit in the block.
    pub fn fits(&self, len: usize) -> bool {
        self.content.len() + len <= self.max
    }

    /// Adds chunk `id` of content `content`, unless the block holds it. The caller checks
    /// [`Self::fits`] first: a chunk that does not fit is refused.
    pub fn push(&mut self, id: ChunkId, content: &[u8]) -> Result<()> {
        if self.ids.contains(&id) {
            return Ok(());
        }
        let too_big = || Error::Internal(format!("chunk {id} is too big for a solid block"));
        if !self.fits(content.len()) {
            return Err(too_big());
        }
        let start = u32::try_from(self.content.len()).map_err(|_| too_big())?;
        let len = u32::try_from(content.len()).map_err(|_| too_big())?;
        self.content.extend_from_slice(content);
        self.members.push((id, start, len));
        self.ids.insert(id);
        Ok(())
    }

    /// The block compressed as one frame at zstd level `level` (a save's
    /// [`chunk::block_level`]); a block of one chunk, or one that zstd cannot shrink,
    /// becomes its chunks stored one by one. A block whose frame would take more than
    /// half a pack (only a large one can) is sealed as two blocks, each half its chunks.
    pub fn seal(self, level: i32) -> Vec<SealedBlock> {
        let mut sealed = Vec::new();
        self.seal_into(level, &mut sealed);
        sealed
    }

    fn seal_into(self, level: i32, sealed: &mut Vec<SealedBlock>) {
        let OpenBlock {
            max,
            content,
            mut members,
            ..
        } = self;
        let stored = match members.len() {
            0 | 1 => None,
            _ => chunk::encode_block(&content, level),
        };
        match stored {
            Some(stored) if stored.len() > SEALED_MAX => {
                let second = members.split_off(members.len() / 2);
                for half in [members, second] {
                    // Each half is smaller than the whole, whose offsets fitted a u32.
                    let mut block = OpenBlock::with_max(max);
                    for (id, start, len) in half {
                        let piece = content
                            .get(start as usize..(start + len) as usize)
                            .unwrap_or_default();
                        block.members.push((id, block.content.len() as u32, len));
                        block.content.extend_from_slice(piece);
                    }
                    block.seal_into(level, sealed);
                }
            }
            Some(stored) => sealed.push(SealedBlock::Solid {
                stored,
                content_len: content.len() as u64,
                members,
            }),
            None => sealed.push(SealedBlock::Singles(
                members
                    .into_iter()
                    .map(|(id, start, len)| {
                        let content = content
                            .get(start as usize..(start + len) as usize)
                            .unwrap_or_default();
                        (id, chunk::encode_chunk(content, level), content.len())
                    })
                    .collect(),
            )),
        }
    }
}

/// An [`OpenBlock`] compressed, ready to be packed and indexed.
pub enum SealedBlock {
    /// One solid block.
    Solid {
        /// The block's stored form ([`chunk::encode_block`]).
        stored: Vec<u8>,
        /// The length of its content.
        content_len: u64,
        /// Each chunk: its id, where its content starts in the block's content, and its
        /// length.
        members: Vec<(ChunkId, u32, u32)>,
    },
    /// Chunks stored one by one: id, stored form ([`chunk::encode_chunk`]), content
    /// length.
    Singles(Vec<(ChunkId, Vec<u8>, usize)>),
}

impl SealedBlock {
    /// The bytes it takes in a pack.
    pub fn stored_len(&self) -> usize {
        match self {
            SealedBlock::Solid { stored, .. } => stored.len(),
            SealedBlock::Singles(chunks) => chunks.iter().map(|(_, s, _)| s.len()).sum(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_seals_whole_or_as_its_chunks() {
        let text = |i: u8| format!("fn item_{i}() {{ {i} }}\n").repeat(40).into_bytes();
        let mut block = OpenBlock::default();
        for i in 0..5 {
            block.push(ChunkId(u128::from(i)), &text(i)).unwrap();
        }
        // Twice the same chunk is held once.
        block.push(ChunkId(0), &text(0)).unwrap();
        assert!(block.holds(ChunkId(4)) && !block.holds(ChunkId(5)));
        match block.seal(chunk::BLOCK_LEVEL).as_slice() {
            [SealedBlock::Solid {
                members,
                content_len,
                ..
            }] => {
                assert_eq!(members.len(), 5);
                assert_eq!(*content_len, 5 * text(0).len() as u64);
                assert_eq!(members[1].1, text(0).len() as u32);
            }
            _ => panic!("compressible text was not sealed as one block"),
        }
        // One chunk alone is stored as a chunk.
        let mut one = OpenBlock::default();
        one.push(ChunkId(9), &text(9)).unwrap();
        assert!(matches!(
            one.seal(chunk::BLOCK_LEVEL).as_slice(),
            [SealedBlock::Singles(c)] if c.len() == 1
        ));
        // A chunk that would overflow the block is refused.
        let mut full = OpenBlock::default();
        let piece = vec![b'x'; chunk::SOLID_CHUNK_MAX - 1];
        let mut i = 0;
        while full.fits(piece.len()) {
            full.push(ChunkId(i), &piece).unwrap();
            i += 1;
        }
        assert!(full.push(ChunkId(i), &piece).is_err());
    }

    /// A large block whose frame would take more than half a pack is sealed as smaller
    /// blocks, each within half a pack, holding every chunk once between them.
    #[test]
    fn a_large_block_is_sealed_within_half_a_pack() {
        let mut block = OpenBlock::large();
        let mut i = 0;
        // Barely compressible: a megabyte of it does not fit half a pack compressed.
        let piece = |i: u64| {
            let mut piece = chunk::pseudo_random(12 << 10, i + 1);
            piece[..2048].fill(b'a');
            piece
        };
        while block.fits(12 << 10) {
            block.push(ChunkId(u128::from(i)), &piece(i)).unwrap();
            i += 1;
        }
        assert!(i > 80, "{i} chunks");
        let sealed = block.seal(1);
        assert!(sealed.len() > 1);
        let mut held = 0;
        for block in &sealed {
            assert!(block.stored_len() <= SEALED_MAX, "{}", block.stored_len());
            let SealedBlock::Solid {
                stored, members, ..
            } = block
            else {
                panic!("a block of several chunks was stored as singles");
            };
            let content = chunk::decode_block(stored).unwrap();
            for (id, start, len) in members {
                let start = *start as usize;
                assert_eq!(content[start..start + *len as usize], piece(id.0 as u64));
            }
            held += members.len();
        }
        assert_eq!(held as u64, i);
    }

    /// A block split after a point and joined again holds each chunk where it was.
    #[test]
    fn a_split_block_keeps_its_chunks_in_order() {
        let piece = |i: u8| vec![i; 1000 + usize::from(i)];
        let mut block = OpenBlock::large();
        for i in 0..6 {
            block.push(ChunkId(u128::from(i)), &piece(i)).unwrap();
        }
        let whole = block.clone();
        // Chunks 0 and 1 end at 1000 and 2001: a cut at 2500 keeps both.
        let mut rest = block.split_off(2500);
        assert_eq!((block.len(), rest.len()), (2, 4));
        assert!(block.holds(ChunkId(1)) && !block.holds(ChunkId(2)) && rest.holds(ChunkId(2)));
        // A cut before the first chunk's end keeps the first chunk.
        let tail = rest.split_off(0);
        assert_eq!((rest.len(), tail.len()), (1, 3));
        rest.append(tail);
        block.append(rest);
        assert_eq!(block.content, whole.content);
        assert_eq!(block.members, whole.members);
    }
}
