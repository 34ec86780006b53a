//! The records checked: checkpoints (decoding, parents, ancestry), the refs, the dropped
//! checkpoints kept for undo and the operation log (decoding), the chunk
//! index and, with `read_data`, every chunk's content, each checkpoint against its tree,
//! and the stat cache.

use std::collections::{HashMap, HashSet};

use rayon::prelude::*;
use redb::{ReadTransaction, ReadableDatabase, ReadableTable};

use super::trees::{check_trees, TreeWalk};
use super::{describe, Findings, Report};
use crate::format::chunk::Hasher;
use crate::format::codec;
use crate::model::operation::Operation;
use crate::model::stat_cache::CacheEntry;
use crate::model::tree::MAX_DEPTH;
use crate::model::{Checkpoint, Head};
use crate::storage::pack::{self, LastPack, ReadChunks};
use crate::storage::tables::{
    BRANCHES, CHECKPOINTS, CHUNKS, DROPPED, OPERATIONS, PINS, STATE, STAT_CACHE, TREES,
};
use crate::storage::Store;
use crate::{CheckpointId, ChunkId, Error, Result};

/// Checks every record of `store` (the module doc of `verify` lists the checks), adding
/// what is wrong to `findings` and the counts to `report`.
pub(super) fn check_records(
    store: &Store,
    read_data: bool,
    report: &mut Report,
    findings: &mut Findings,
) -> Result<()> {
    let txn = store.db.begin_read()?;
    let Checkpoints { mut records, ids } = check_checkpoints(&txn, findings)?;
    report.checkpoints = ids.len();
    check_refs(&txn, &ids, findings)?;
    // Dropped checkpoints kept for undo reach live data too (gc keeps it for them), and
    // their trees must be whole for an undo to bring them back.
    records.extend(dropped_records(&txn, findings)?);
    check_operations(&txn, findings)?;

    let index = ChunkIndex::read(&txn)?;
    report.chunks = index.lengths.len();
    let bad_chunks = damaged_chunks(&txn, &store.hasher, &index, read_data, report, findings)?;
    let mut chunk_ok = |id: ChunkId, findings: &mut Findings| -> bool {
        if !index.lengths.contains_key(&id) {
            findings.add(format!("chunk {id}"), "missing");
            false
        } else {
            !bad_chunks.contains(&id)
        }
    };

    let mut trees = check_trees(
        &txn.open_table(TREES)?,
        &store.hasher,
        records.iter().map(|(_, r)| r.tree),
        &mut chunk_ok,
        &|c| index.lengths.get(&c).and_then(|(_, raw)| *raw),
        findings,
    )?;
    report.trees = trees.reached;
    report.unreachable_trees = trees.unreachable;
    report.unreachable_bytes = trees.unreachable_bytes;
    let mut referenced: HashSet<ChunkId> = std::mem::take(&mut trees.chunks);
    check_against_trees(&records, &trees, &mut referenced, &mut chunk_ok, findings);
    // A referenced chunk stored as a delta needs its bases, down the chain: they are
    // live data, which gc keeps (invariant 18), not garbage.
    crate::storage::reach::add_bases(&mut referenced, &index.deltas.iter().copied().collect());
    for (_, (stored, _)) in index
        .lengths
        .iter()
        .filter(|(id, _)| !referenced.contains(id))
    {
        report.unreachable_chunks += 1;
        report.unreachable_bytes += stored;
    }
    check_stat_cache(&txn, &index.lengths, findings)
}

/// The checkpoints table, read.
struct Checkpoints {
    /// The records that decode.
    records: Vec<(CheckpointId, Checkpoint)>,
    /// Every checkpoint's id, whether its record decodes or not.
    ids: HashSet<CheckpointId>,
}

/// Decodes every checkpoint record and checks that its parents exist and that its
/// ancestry ends.
fn check_checkpoints(txn: &ReadTransaction, findings: &mut Findings) -> Result<Checkpoints> {
    let mut records: Vec<(CheckpointId, Checkpoint)> = Vec::new();
    let mut ids = HashSet::new();
    for item in txn.open_table(CHECKPOINTS)?.iter()? {
        let (key, value) = item?;
        let id = CheckpointId(key.value());
        ids.insert(id);
        match codec::decode::<Checkpoint>(value.value(), &format!("checkpoint {id}")) {
            Ok(record) => records.push((id, record)),
            Err(e) => {
                findings.add(format!("checkpoint {id}"), describe(e));
                findings.affected.insert(id);
            }
        }
    }
    for (id, record) in &records {
        for parent in record.parents.iter().filter(|p| !ids.contains(p)) {
            findings.add(
                format!("checkpoint {id}"),
                format!("its parent {parent} is missing"),
            );
            findings.affected.insert(*id);
        }
    }
    for id in parent_cycles(&records) {
        findings.add(
            format!("checkpoint {id}"),
            "its ancestry holds a parent cycle",
        );
        findings.affected.insert(id);
    }
    Ok(Checkpoints { records, ids })
}

/// The checkpoints `drop` keeps for undo, decoded; one that does not decode is a
/// finding.
fn dropped_records(
    txn: &ReadTransaction,
    findings: &mut Findings,
) -> Result<Vec<(CheckpointId, Checkpoint)>> {
    let table = match txn.open_table(DROPPED) {
        Ok(table) => table,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    let mut records = Vec::new();
    for item in table.iter()? {
        let (key, value) = item?;
        let id = CheckpointId(key.value());
        match codec::decode::<Checkpoint>(value.value(), &format!("dropped checkpoint {id}")) {
            Ok(record) => records.push((id, record)),
            Err(e) => findings.add(format!("dropped checkpoint {id}"), describe(e)),
        }
    }
    Ok(records)
}

/// Every record of the operation log must decode.
fn check_operations(txn: &ReadTransaction, findings: &mut Findings) -> Result<()> {
    let table = match txn.open_table(OPERATIONS) {
        Ok(table) => table,
        Err(redb::TableError::TableDoesNotExist(_)) => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    for item in table.iter()? {
        let (key, value) = item?;
        let number = key.value();
        let decoded = codec::decode::<Operation>(value.value(), &format!("operation {number}"));
        if let Err(e) = decoded {
            findings.add(format!("operation {number}"), describe(e));
        }
    }
    Ok(())
}

/// The chunk index, read once without reading a pack.
struct ChunkIndex {
    /// Each chunk's stored length, for the bytes a gc would free, and its content length
    /// as the index records it (where it does), against which files' sizes are checked
    /// without reading a chunk.
    lengths: HashMap<ChunkId, (u64, Option<u64>)>,
    /// Every chunk in pack order, so that each reading thread goes through the packs in
    /// sequence.
    in_pack_order: Vec<ChunkId>,
    /// Each delta and its base.
    deltas: Vec<(ChunkId, ChunkId)>,
}

impl ChunkIndex {
    /// Reads the chunk index of `txn`; an entry that does not parse counts as a chunk of
    /// no known length (reading it names the damage).
    fn read(txn: &ReadTransaction) -> Result<ChunkIndex> {
        let mut lengths = HashMap::new();
        let mut in_pack_order = Vec::new();
        let mut deltas = Vec::new();
        for item in txn.open_table(CHUNKS)?.iter()? {
            let (key, value) = item?;
            let id = ChunkId(key.value());
            let entry = pack::Entry::parse(id, value.value());
            if let Some(delta) = entry.as_ref().ok().and_then(pack::Entry::delta) {
                deltas.push((id, delta.base));
            }
            let recorded = match &entry {
                Ok(entry) => (entry.stored_len(), entry.raw_len()),
                Err(_) => (0, None),
            };
            lengths.insert(id, recorded);
            let place = match entry {
                Ok(pack::Entry::Packed(at)) => (at.pack, at.offset),
                _ => (u64::MAX, 0),
            };
            in_pack_order.push((place, id));
        }
        in_pack_order.sort_unstable();
        Ok(ChunkIndex {
            lengths,
            in_pack_order: in_pack_order.into_iter().map(|(_, id)| id).collect(),
            deltas,
        })
    }
}

/// The chunks that are damaged: with `read_data`, those that do not read back as their
/// content; without, the deltas whose base is gone.
fn damaged_chunks(
    txn: &ReadTransaction,
    hasher: &Hasher,
    index: &ChunkIndex,
    read_data: bool,
    report: &mut Report,
    findings: &mut Findings,
) -> Result<HashSet<ChunkId>> {
    let mut bad_chunks: HashSet<ChunkId> = HashSet::new();
    // Without reading data, a delta whose base is gone is still found: it cannot decode.
    // (Reading finds it too, with the rest of the chain's damage.)
    for &(id, base) in index.deltas.iter().filter(|_| !read_data) {
        if !index.lengths.contains_key(&base) {
            findings.add(
                format!("chunk {id}"),
                format!("its delta base {base} is missing"),
            );
            bad_chunks.insert(id);
        }
    }
    if read_data {
        let chunks = ReadChunks::open(txn)?;
        let bad = read_chunks(
            &chunks,
            hasher,
            &index.in_pack_order,
            &index.lengths,
            report,
        )?;
        for (id, message) in bad {
            findings.add(format!("chunk {id}"), message);
            bad_chunks.insert(id);
        }
    }
    Ok(bad_chunks)
}

/// Each checkpoint against what its tree holds: its attachments' chunks are sound, and
/// its tree expands to no more than the record says. Adds the attachments' chunks to
/// `referenced`.
fn check_against_trees(
    records: &[(CheckpointId, Checkpoint)],
    trees: &TreeWalk,
    referenced: &mut HashSet<ChunkId>,
    chunk_ok: &mut impl FnMut(ChunkId, &mut Findings) -> bool,
    findings: &mut Findings,
) {
    for (id, record) in records {
        let mut attachments_ok = true;
        for &c in record.attachments.iter().flat_map(|a| &a.chunks) {
            referenced.insert(c);
            attachments_ok &= chunk_ok(c, findings);
        }
        if trees.damaged.contains(&record.tree) || !attachments_ok {
            findings.affected.insert(*id);
        }
        // What the tree expands to, added up once per tree: more than the record says
        // makes every command that expands it stop.
        let size = trees.expansion(record.tree);
        let problem = if size.files > record.files || size.bytes > record.bytes {
            Some(format!(
                "its tree holds {} files and symlinks of {} bytes, more than its record says ({} files, {} bytes)",
                size.files, size.bytes, record.files, record.bytes
            ))
        } else if size.height > MAX_DEPTH {
            Some(format!(
                "its tree nests directories deeper than {MAX_DEPTH}"
            ))
        } else {
            None
        };
        if let Some(problem) = problem {
            findings.add(format!("checkpoint {id}"), problem);
            findings.affected.insert(*id);
        }
    }
}

/// Stat-cache entries must name existing chunks.
fn check_stat_cache(
    txn: &ReadTransaction,
    lengths: &HashMap<ChunkId, (u64, Option<u64>)>,
    findings: &mut Findings,
) -> Result<()> {
    for item in txn.open_table(STAT_CACHE)?.iter()? {
        let (path, value) = item?;
        // An entry that does not decode is only a missed shortcut; one that names a
        // missing chunk would make the next save record that chunk.
        if let Ok(entry) = codec::decode::<CacheEntry>(value.value(), "stat cache entry") {
            if let Some(missing) = entry.chunks.iter().find(|c| !lengths.contains_key(c)) {
                findings.add(
                    format!("stat cache {}", String::from_utf8_lossy(path.value())),
                    format!("names missing chunk {missing} (the next save would record it)"),
                );
            }
        }
    }
    Ok(())
}

/// Branches, HEAD and pins must name existing checkpoints.
fn check_refs(
    txn: &ReadTransaction,
    ids: &HashSet<CheckpointId>,
    findings: &mut Findings,
) -> Result<()> {
    for item in txn.open_table(BRANCHES)?.iter()? {
        let (name, tip) = item?;
        let tip = CheckpointId(tip.value());
        if !ids.contains(&tip) {
            findings.add(
                format!("branch {}", name.value()),
                format!("points at missing checkpoint {tip}"),
            );
        }
    }
    match crate::storage::records::head(&txn.open_table(STATE)?) {
        Ok(Head::Detached(id)) if !ids.contains(&id) => {
            findings.add("HEAD".into(), format!("points at missing checkpoint {id}"))
        }
        Ok(_) => {}
        Err(e) => findings.add("HEAD".into(), describe(e)),
    }
    for item in txn.open_table(PINS)?.iter()? {
        let id = CheckpointId(item?.0.value());
        if !ids.contains(&id) {
            findings.add(format!("pin {id}"), "pins a missing checkpoint");
        }
    }
    Ok(())
}

/// Reads, decompresses and re-hashes the chunks `ids`, in parallel; returns the bad ones.
fn read_chunks(
    chunks: &ReadChunks,
    hasher: &Hasher,
    ids: &[ChunkId],
    lengths: &HashMap<ChunkId, (u64, Option<u64>)>,
    report: &mut Report,
) -> Result<Vec<(ChunkId, String)>> {
    let results: Vec<(u64, Option<(ChunkId, String)>)> = ids
        .par_iter()
        .map_init(
            || (Vec::new(), LastPack::default()),
            |(buf, last), &id| -> Result<_> {
                buf.clear();
                let (stored_len, recorded) = lengths.get(&id).copied().unwrap_or((0, None));
                // Through the reader restore uses, so that a delta is checked with the
                // bases it needs (and a missing or damaged base is this chunk's damage).
                let (len, bad) = match chunks.read(hasher, id, buf, last) {
                    // Files' sizes are checked against the recorded lengths: they must
                    // be the content's.
                    Ok(()) => match recorded.filter(|&n| n != buf.len() as u64) {
                        Some(n) => (
                            stored_len,
                            Some(Error::Corrupt(format!(
                                "holds {} bytes, but its index entry records {n}",
                                buf.len()
                            ))),
                        ),
                        None => (stored_len, None),
                    },
                    // A missing pack or a range outside it: this chunk is damaged.
                    Err(e @ Error::Corrupt(_)) => (0, Some(e)),
                    Err(e) => return Err(e),
                };
                let bad = bad.map(|e| {
                    let message = describe(e);
                    let shorter = message.strip_prefix(&format!("chunk {id} "));
                    (id, shorter.map(str::to_string).unwrap_or(message))
                });
                Ok((len, bad))
            },
        )
        .collect::<Result<_>>()?;
    report.chunks_read = results.len();
    report.bytes_read = results.iter().map(|(n, _)| n).sum();
    Ok(results.into_iter().filter_map(|(_, bad)| bad).collect())
}

/// Checkpoints whose ancestry never ends: on a parent cycle or descending from one, which
/// only a crafted or damaged store can hold (an id is a hash over its parents' ids).
/// Kahn's algorithm: what is left once every checkpoint whose parents are all settled
/// has been settled.
fn parent_cycles(records: &[(CheckpointId, Checkpoint)]) -> Vec<CheckpointId> {
    let known: HashSet<CheckpointId> = records.iter().map(|(id, _)| *id).collect();
    let mut children: HashMap<CheckpointId, Vec<CheckpointId>> = HashMap::new();
    let mut pending: HashMap<CheckpointId, usize> = HashMap::new();
    for (id, record) in records {
        let parents: Vec<CheckpointId> = record
            .parents
            .iter()
            .copied()
            .filter(|p| known.contains(p))
            .collect();
        pending.insert(*id, parents.len());
        for parent in parents {
            children.entry(parent).or_default().push(*id);
        }
    }
    let mut ready: Vec<CheckpointId> = pending
        .iter()
        .filter(|(_, n)| **n == 0)
        .map(|(id, _)| *id)
        .collect();
    while let Some(id) = ready.pop() {
        pending.remove(&id);
        for child in children.get(&id).into_iter().flatten() {
            if let Some(n) = pending.get_mut(child) {
                *n -= 1;
                if *n == 0 {
                    ready.push(*child);
                }
            }
        }
    }
    let mut stuck: Vec<CheckpointId> = pending.into_keys().collect();
    stuck.sort();
    stuck
}
