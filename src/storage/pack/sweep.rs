//! Chunks leaving the store: removed from the index (keeping every delta base a chunk
//! that stays needs, invariant 18), and the packs they leave mostly empty rewritten.

use std::collections::{BTreeMap, HashMap, HashSet};

use redb::ReadableTable;

use super::entry::{Entry, Location};
use super::write::PackWriter;
use crate::format::chunk;
use crate::storage::tables::{CHUNKS, PACKS};
use crate::{ChunkId, Error, Result};

/// Removes chunks `ids` from the index, except those a chunk that stays needs as a
/// delta base, then deletes each pack that no longer holds a
/// live chunk, and rewrites each that lost at least half its bytes: its live chunks move
/// to new packs, their entries with them, and it is deleted. All in `txn`, so a crash
/// leaves either the old packs and entries or the new ones.
pub(in crate::storage) fn remove_chunks(
    txn: &redb::WriteTransaction,
    ids: &[ChunkId],
) -> Result<()> {
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
    for (id, base) in super::delta_bases(index)? {
        if doomed.contains(&id) {
            bases.insert(id, base);
        } else {
            needed.push(base);
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
