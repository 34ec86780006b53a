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

/// Small chunks' content laid end to end, at most [`chunk::BLOCK_MAX`] bytes, not yet
/// compressed, and where each chunk lies in it.
#[derive(Default)]
pub struct OpenBlock {
    /// The chunks' content end to end.
    content: Vec<u8>,
    /// Each chunk: its id, where its content starts in `content`, and its length.
    members: Vec<(ChunkId, u32, u32)>,
    /// The ids in `members`, which the index has not got yet.
    ids: HashSet<ChunkId>,
}

impl OpenBlock {
    /// Whether chunk `id` is in the block.
    pub fn holds(&self, id: ChunkId) -> bool {
        self.ids.contains(&id)
    }

    /// Whether the block holds no chunk.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty()
    }

    /// Whether `len` more bytes of content fit in the block.
    pub fn fits(&self, len: usize) -> bool {
        self.content.len() + len <= chunk::BLOCK_MAX
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
    /// becomes its chunks stored one by one.
    pub fn seal(self, level: i32) -> SealedBlock {
        let OpenBlock {
            content, members, ..
        } = self;
        let stored = match members.len() {
            0 | 1 => None,
            _ => chunk::encode_block(&content, level),
        };
        match stored {
            Some(stored) => SealedBlock::Solid {
                stored,
                content_len: content.len() as u64,
                members,
            },
            None => SealedBlock::Singles(
                members
                    .into_iter()
                    .map(|(id, start, len)| {
                        let content = content
                            .get(start as usize..(start + len) as usize)
                            .unwrap_or_default();
                        (id, chunk::encode_chunk(content, level), content.len())
                    })
                    .collect(),
            ),
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
        match block.seal(chunk::BLOCK_LEVEL) {
            SealedBlock::Solid {
                members,
                content_len,
                ..
            } => {
                assert_eq!(members.len(), 5);
                assert_eq!(content_len, 5 * text(0).len() as u64);
                assert_eq!(members[1].1, text(0).len() as u32);
            }
            SealedBlock::Singles(_) => panic!("compressible text was not sealed as a block"),
        }
        // One chunk alone is stored as a chunk.
        let mut one = OpenBlock::default();
        one.push(ChunkId(9), &text(9)).unwrap();
        assert!(matches!(one.seal(chunk::BLOCK_LEVEL), SealedBlock::Singles(c) if c.len() == 1));
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
}
