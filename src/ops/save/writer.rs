//! The writer thread of a save: new chunks and sealed solid blocks arrive from the
//! readers, and the trees and cache records of the directories done from the scan, over
//! a bounded channel; they go into the store in batches of [`BATCH_BYTES`], each full
//! batch committed on its own, so that a big save holds a bounded amount in memory.
//! Everything arrives ready to store: the writer only appends and indexes, so that one
//! thread does not bound a save that reads on every core.
//!
//! A batch commits before the checkpoint does, so what it holds must stand on its own
//! (docs/design.md invariant 2): chunks and trees nothing references yet are garbage gc
//! sweeps, and a directory listing describes the worktree whatever checkpoint follows;
//! a stat cache entry is trusted as soon as it is committed, so it goes into a batch
//! only once every chunk it names is in the store ([`Waiting`]).

use crate::model::dir_cache::DirListing;
use crate::model::stat_cache::FileStat;
use crate::storage::pack::{Delta, SealedBlock};
use crate::storage::{BatchSink, Packer, Store, Transaction};
use crate::{ChunkId, Result, TreeId};

/// Bytes of new chunks per batch; each full batch commits durably on its own, so that a
/// big save holds a bounded amount in memory (docs/design.md invariant 2).
pub(super) const BATCH_BYTES: usize = 64 << 20;

/// A chunk the store lacks, on its way to the writer.
pub(super) struct NewChunk {
    /// Its id.
    pub(super) id: ChunkId,
    /// Its content's length.
    pub(super) raw_len: usize,
    /// Its stored form ([`crate::format::chunk::encode_chunk`] or
    /// [`crate::format::chunk::encode_delta`]).
    pub(super) stored: Vec<u8>,
    /// The base it is compressed against, if it is a delta.
    pub(super) delta: Option<Delta>,
}

/// What the scan sends the writer.
pub(super) enum ToWrite {
    /// A chunk stored on its own: a large one, or a delta.
    Chunk(NewChunk),
    /// Small chunks, compressed together by the reader that filled their block (one
    /// block: a save's are never large enough to be sealed as several).
    Block(Vec<SealedBlock>),
    /// A tree the store may lack: its id, its canonical record, and the tree at its path
    /// in the parent checkpoint, which it may be stored as a delta of.
    Tree {
        id: TreeId,
        encoded: Vec<u8>,
        like: Option<TreeId>,
    },
    /// A file read and settled: its stat cache entry.
    Cached(CachedFile),
    /// A directory listed afresh and settled: its directory cache entry.
    Listing(Vec<u8>, DirListing),
}

/// A stat cache entry on its way to the writer.
pub(super) struct CachedFile {
    pub(super) path: Vec<u8>,
    pub(super) stat: FileStat,
    pub(super) chunks: Vec<ChunkId>,
}

impl ToWrite {
    /// About the bytes it takes in the store.
    fn stored_len(&self) -> usize {
        match self {
            ToWrite::Chunk(chunk) => chunk.stored.len(),
            ToWrite::Block(blocks) => blocks.iter().map(SealedBlock::stored_len).sum(),
            ToWrite::Tree { encoded, .. } => encoded.len(),
            ToWrite::Cached(file) => file.path.len() + 48 + 16 * file.chunks.len(),
            ToWrite::Listing(dir, listing) => {
                dir.len()
                    + 64
                    + listing
                        .entries
                        .iter()
                        .map(|e| e.name.len() + 2)
                        .sum::<usize>()
            }
        }
    }
}

/// Sends new chunks, trees and cache records to the writer.
pub(super) type ChunkSender = crossbeam_channel::Sender<ToWrite>;

/// What the writer did, besides the transaction it hands back.
#[derive(Default)]
pub(super) struct Written {
    /// Stat cache and directory cache records written.
    pub(super) cache_records: usize,
}

/// Writes what arrives on `rx` in bounded batches. Full batches are committed at once;
/// the last, partial one is handed back still open, so that the checkpoint commits in
/// the same transaction and a small save pays for one durable commit, not two.
pub(super) fn write_chunks(
    store: &Store,
    rx: crossbeam_channel::Receiver<ToWrite>,
) -> Result<(Option<Transaction<'_>>, Written)> {
    let mut pending = rx.iter().peekable();
    let mut open = None;
    let mut packer = Packer::default();
    let mut waiting = Waiting::default();
    let mut written = Written::default();
    while pending.peek().is_some() {
        let txn = store.transaction()?;
        let bytes = txn.write_batch(&mut packer, |sink| {
            let mut bytes = 0;
            while bytes < BATCH_BYTES {
                let Some(item) = pending.next() else {
                    break;
                };
                bytes += item.stored_len();
                match item {
                    ToWrite::Chunk(c) => {
                        // A chunk sent twice (its first sending fell out of the readers'
                        // memory of what they sent) is stored once.
                        if !sink.chunks().contains(c.id)? {
                            sink.chunks().add(c.id, &c.stored, c.raw_len, c.delta)?;
                        }
                    }
                    ToWrite::Block(blocks) => {
                        for block in blocks {
                            sink.chunks().add_sealed(block)?;
                        }
                        // What waited for this block's chunks goes in with them.
                        waiting.retry(sink, &mut written)?;
                    }
                    ToWrite::Tree { id, encoded, like } => {
                        sink.add_tree(id, &encoded, like)?;
                    }
                    ToWrite::Cached(file) => waiting.put(sink, file, &mut written)?,
                    ToWrite::Listing(dir, listing) => {
                        sink.put_listing(&dir, &listing)?;
                        written.cache_records += 1;
                    }
                }
            }
            waiting.retry(sink, &mut written)?;
            Ok(bytes)
        })?;
        if bytes >= BATCH_BYTES {
            txn.commit()?;
            crate::fault::point("save-batch-committed");
        } else {
            open = Some(txn);
        }
    }
    // Every chunk has come: an entry still waiting names a chunk no reader sent, and is
    // left out (the file is read again next time).
    Ok((open, written))
}

/// Stat cache entries waiting for a chunk they name: a small chunk rides in a solid
/// block that another file may fill and send later, and a chunk another reader sent
/// first may still be on its way. Few wait at a time (a block's worth of files).
#[derive(Default)]
struct Waiting {
    files: Vec<CachedFile>,
}

impl Waiting {
    /// Records `file` in the stat cache if every chunk it names is in the store, else
    /// keeps it waiting.
    fn put(&mut self, sink: &mut BatchSink, file: CachedFile, written: &mut Written) -> Result<()> {
        if sink.has_chunks(&file.chunks)? {
            sink.put_cached(&file.path, &file.stat, &file.chunks)?;
            written.cache_records += 1;
        } else {
            self.files.push(file);
        }
        Ok(())
    }

    /// Records those of the waiting entries whose chunks have all come.
    fn retry(&mut self, sink: &mut BatchSink, written: &mut Written) -> Result<()> {
        for file in std::mem::take(&mut self.files) {
            self.put(sink, file, written)?;
        }
        Ok(())
    }
}
