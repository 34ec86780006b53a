//! gc's recompression: the chunks a save stored fast, each large one alone at the save's
//! level and the small ones in 256 KiB blocks, laid again into large solid blocks
//! (`format::chunk`, codec 4) at [`chunk::RECOMPRESS_LEVEL`], where a larger frame at a
//! higher level shares more between neighbouring chunks (docs/performance.md, "Store
//! size"). A save stays fast; the store is made small by the next `git checkpoint gc`.
//!
//! The store remembers in `meta` (`recompressed_below`) the key of the first pack written
//! after the last recompression: the packs below it are done and never read again by
//! this pass, so each gc recompresses only what the saves since the last one wrote (and
//! what a gc's repacking moved up).

use redb::{ReadableTable, WriteTransaction};

use super::entry::{Entry, Location};
use super::write::PackWriter;
use crate::format::chunk::{self, Hasher};
use crate::storage::tables::{CHUNKS, LARGE_BLOCKS_FORMAT, META, META_FORMAT, PACKS};
use crate::{ChunkId, Error, Result};

/// A solid block of a pack being recompressed, as its chunks are read in turn.
struct OldBlock {
    /// Where it lies in its pack.
    offset: u32,
    /// Its content; `None` when it does not decompress.
    content: Option<Vec<u8>>,
    /// Where it was moved as it is, when one of its chunks is damaged.
    moved_to: Option<Location>,
}

/// The `meta` key of the first pack a recompression has not gone over (a `u64`, little
/// endian); absent in a store never recompressed.
const META_RECOMPRESSED_BELOW: &str = "recompressed_below";

/// What a recompression did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Recompressed {
    /// Packs deleted: rewritten, or holding nothing live.
    pub packs: usize,
    /// Their stored bytes before.
    pub bytes_before: u64,
    /// The stored bytes of the packs written instead.
    pub bytes_after: u64,
}

/// Rewrites every pack at or above the store's `recompressed_below` mark, all in `txn`:
/// full chunks go, content verified, into large solid blocks (a damaged one, or the
/// block it is in, is moved as it is, for verify to find); deltas are copied as they
/// are (their bases keep their ids, wherever their bytes go, invariant 18); each entry is
/// repointed and the old packs deleted in the same transaction (invariant 15). Then the
/// mark moves past the packs written, and the store's format becomes
/// [`LARGE_BLOCKS_FORMAT`] if a large block was written.
pub(in crate::storage) fn recompress(
    txn: &WriteTransaction,
    hasher: &Hasher,
) -> Result<Recompressed> {
    let mut index = txn.open_table(CHUNKS)?;
    let mut packs = txn.open_table(PACKS)?;
    let mut meta = txn.open_table(META)?;
    let from = match meta.get(META_RECOMPRESSED_BELOW)? {
        None => 0,
        Some(value) => match <[u8; 8]>::try_from(value.value()) {
            Ok(bytes) => u64::from_le_bytes(bytes),
            Err(_) => {
                return Err(Error::Corrupt(format!(
                    "the meta record '{META_RECOMPRESSED_BELOW}' is not 8 bytes"
                )))
            }
        },
    };
    let mut moving: Vec<(ChunkId, Location)> = Vec::new();
    for item in index.iter()? {
        let (key, value) = item?;
        let id = ChunkId(key.value());
        if let Entry::Packed(at) = Entry::parse(id, value.value())? {
            if at.pack >= from {
                moving.push((id, at));
            }
        }
    }
    let mut done = Recompressed::default();
    // In the order they were written: a file's chunks, and the files of a directory,
    // stay neighbours in the blocks.
    moving.sort_by_key(|(_, at)| (at.pack, at.offset, at.block.map_or(0, |m| m.start)));
    let mut writer = PackWriter::recompressing(&packs)?;
    let first_new = writer.next_pack();
    let mut pack: Option<(u64, Vec<u8>)> = None;
    let mut block: Option<OldBlock> = None;
    let mut content = Vec::new();
    for (id, at) in moving {
        if pack.as_ref().is_none_or(|(key, _)| *key != at.pack) {
            let data = packs
                .get(at.pack)?
                .ok_or_else(|| {
                    Error::Corrupt(format!("chunk {id}: its pack {} is missing", at.pack))
                })?
                .value()
                .to_vec();
            done.bytes_before += data.len() as u64;
            pack = Some((at.pack, data));
            block = None;
        }
        let Some((_, data)) = &pack else {
            continue;
        };
        let start = at.offset as usize;
        let stored = data.get(start..start + at.len as usize).ok_or_else(|| {
            Error::Corrupt(format!("chunk {id}: lies outside its pack {}", at.pack))
        })?;
        let raw_len = at.raw_len as usize;
        match (at.block, at.delta) {
            (Some(member), _) => {
                let old = match &mut block {
                    Some(old) if old.offset == at.offset => old,
                    slot => slot.insert(OldBlock {
                        offset: at.offset,
                        content: chunk::decode_block(stored).ok(),
                        moved_to: None,
                    }),
                };
                let start = member.start as usize;
                let piece = old
                    .content
                    .as_deref()
                    .and_then(|content| content.get(start..start + raw_len))
                    .filter(|piece| hasher.chunk_id(piece) == id);
                match piece {
                    Some(piece) => writer.add_to_block(&mut index, &mut packs, id, piece)?,
                    // Damaged: the block moves as it is, once, and the chunk stays in it,
                    // where verify still finds it.
                    None => {
                        let moved = match old.moved_to {
                            Some(moved) => moved,
                            None => *old
                                .moved_to
                                .insert(writer.append(&mut packs, id, stored, 0)?),
                        };
                        let entry = Location {
                            pack: moved.pack,
                            offset: moved.offset,
                            ..at
                        };
                        index.insert(id.0, entry.encode().as_slice())?;
                    }
                }
            }
            (None, None) if raw_len <= chunk::BLOCK_MAX => {
                content.clear();
                match chunk::decode_chunk(hasher, id, stored, &mut content) {
                    // An entry may understate the content (only a crafted one does).
                    Ok(()) if content.len() <= chunk::BLOCK_MAX => {
                        writer.add_to_block(&mut index, &mut packs, id, &content)?
                    }
                    // Damaged: moved as it is, where verify still finds it.
                    _ => writer.add(&mut index, &mut packs, id, stored, raw_len, None)?,
                }
            }
            // A delta is copied as it is; so is content larger than a block's share of a
            // large one (only a store with a larger chunk maximum has it).
            (None, delta) => writer.add(&mut index, &mut packs, id, stored, raw_len, delta)?,
        }
    }
    writer.finish(&mut index, &mut packs)?;
    let written = writer.next_pack();
    // Every entry that named a pack from `from` on names a new one now.
    let old: Vec<u64> = packs
        .range(from..first_new)?
        .map(|item| item.map(|(key, _)| key.value()))
        .collect::<std::result::Result<_, _>>()?;
    for key in old {
        packs.remove(key)?;
        done.packs += 1;
    }
    for item in packs.range(first_new..written)? {
        done.bytes_after += item?.1.value().len() as u64;
    }
    meta.insert(META_RECOMPRESSED_BELOW, written.to_le_bytes().as_slice())?;
    if writer.packed_large() {
        meta.insert(META_FORMAT, [LARGE_BLOCKS_FORMAT].as_slice())?;
    }
    Ok(done)
}
