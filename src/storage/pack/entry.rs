//! An index entry's bytes: what the first byte says, and the fixed fields of a place in a
//! pack (the layouts are listed in the [parent module](super)).

use crate::format::chunk::{self, MAX_DELTA_DEPTH};
use crate::format::codec::FORMAT_VERSION;
use crate::{ChunkId, Error, Result};

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
    pub(super) fn encode(&self) -> Vec<u8> {
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
    pub(super) fn stored_len(&self) -> u64 {
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
