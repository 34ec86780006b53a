//! What the store holds and what it costs: the file's size, the live data, how much
//! deduplication and compression save, and per checkpoint the bytes only it holds (what
//! removing it alone would free).

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use redb::ReadableTable;

use super::tables::{BRANCHES, CHUNKS, PINS};
use super::Snapshot;
use crate::model::Checkpoint;
use crate::storage::pack;
use crate::{CheckpointId, ChunkId, Error, Result};

/// One checkpoint's share.
#[derive(Clone, Debug)]
pub struct CheckpointStats {
    /// Its id.
    pub id: CheckpointId,
    /// Its record.
    pub checkpoint: Checkpoint,
    /// Stored bytes that only it reaches (its record included): what removing it alone
    /// would free.
    pub exclusive_bytes: u64,
}

/// The store's numbers.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    /// The store file's size on disk.
    pub file_size: u64,
    /// Checkpoints.
    pub checkpoints: usize,
    /// Branches.
    pub branches: usize,
    /// Pinned checkpoints.
    pub pinned: usize,
    /// Stored bytes of everything some checkpoint reaches: records, trees, chunks.
    pub live_bytes: u64,
    /// Stored bytes of trees and chunks nothing reaches (what a plain gc sweeps).
    pub unreachable_bytes: u64,
    /// Trees in the store.
    pub trees: usize,
    /// Chunks in the store.
    pub chunks: usize,
    /// Chunks some checkpoint reaches.
    pub live_chunks: usize,
    /// The sum of every checkpoint's file sizes: what full copies would take.
    pub logical_bytes: u64,
    /// Content bytes of the live chunks before compression: what deduplication leaves.
    pub unique_bytes: u64,
    /// Stored bytes of the live chunks: what compression leaves.
    pub stored_chunk_bytes: u64,
    /// Every checkpoint, newest first.
    pub per_checkpoint: Vec<CheckpointStats>,
}

impl Stats {
    /// Logical bytes per unique content byte (1.0 when nothing is shared).
    pub fn dedup_ratio(&self) -> f64 {
        ratio(self.logical_bytes, self.unique_bytes)
    }

    /// Content bytes per stored byte of the live chunks.
    pub fn compression_ratio(&self) -> f64 {
        ratio(self.unique_bytes, self.stored_chunk_bytes)
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 {
        1.0
    } else {
        a as f64 / b as f64
    }
}

/// Gathers the numbers from one read snapshot of the store in `path`. Reads every
/// chunk's header (for its content length), decompresses nothing.
pub fn collect(snapshot: &Snapshot<'_>, path: &Path) -> Result<Stats> {
    let txn = &snapshot.txn;
    let mut stats = Stats {
        // Blocks, not length: redb grows the file ahead of its data, and the part not yet
        // written takes no space.
        file_size: std::fs::metadata(path)
            .map_err(|e| Error::io(path, e))?
            .blocks()
            * 512,
        ..Stats::default()
    };
    let records = snapshot.checkpoints_with_sizes()?;
    stats.checkpoints = records.len();
    stats.branches = txn.open_table(BRANCHES)?.iter()?.count();
    stats.pinned = txn.open_table(PINS)?.iter()?.count();
    stats.logical_bytes = records.iter().map(|(_, r, _)| r.bytes).sum();

    let tree_sizes = snapshot.tree_sizes()?;
    // What a drop keeps for undo is live until a gc after the undo window, as gc sees it.
    let held = snapshot.undo_holds(crate::clock::now_ns())?.dropped;
    let graph = snapshot.tree_graph(
        (records.iter().map(|(_, r, _)| r.tree)).chain(held.iter().map(|(_, r)| r.tree)),
    )?;
    let list: Vec<&Checkpoint> = records.iter().map(|(_, r, _)| r).collect();
    let mut marked = graph.mark(list.iter().copied().chain(held.iter().map(|(_, r)| r)));
    // The bases of kept deltas are live data, not garbage (docs/design.md invariant 18).
    marked.add_chunk_bases(&snapshot.chunk_bases()?);

    let mut chunk_sizes = HashMap::new();
    for item in txn.open_table(CHUNKS)?.iter()? {
        let (key, value) = item?;
        let id = ChunkId(key.value());
        let entry = pack::Entry::parse(id, value.value())?;
        let stored = entry.stored_len();
        chunk_sizes.insert(id, stored);
        if marked.chunks.contains(&id) {
            stats.live_chunks += 1;
            stats.stored_chunk_bytes += stored;
            stats.unique_bytes += entry.raw_len().unwrap_or(0);
        } else {
            stats.unreachable_bytes += stored;
        }
    }
    stats.chunks = chunk_sizes.len();
    stats.trees = tree_sizes.len();
    for (id, size) in &tree_sizes {
        if !marked.trees.contains(id) {
            stats.unreachable_bytes += size;
        }
    }
    stats.live_bytes = marked.stored_bytes(&tree_sizes, &chunk_sizes)
        + records.iter().map(|(_, _, size)| size).sum::<u64>();

    let exclusive = graph.exclusive(&list);
    for ((id, record, size), only) in records.into_iter().zip(exclusive) {
        let trees: u64 = only.trees.iter().filter_map(|t| tree_sizes.get(t)).sum();
        let chunks: u64 = only.chunks.iter().filter_map(|c| chunk_sizes.get(c)).sum();
        stats.per_checkpoint.push(CheckpointStats {
            id,
            checkpoint: record,
            exclusive_bytes: size + trees + chunks,
        });
    }
    Ok(stats)
}
