//! The chunk-writer thread of a save: new chunks and sealed solid blocks arrive from the
//! readers over a bounded channel and go into packs in batches of [`BATCH_BYTES`], each
//! full batch committed on its own, so that a big save holds a bounded amount in memory.
//! Everything arrives compressed: the writer only appends and indexes, so that one
//! thread does not bound a save that reads on every core.

use crate::storage::pack::{Delta, SealedBlock};
use crate::storage::{Packer, Store, Transaction};
use crate::{ChunkId, Result};

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

/// What the readers send the writer.
pub(super) enum ToWrite {
    /// A chunk stored on its own: a large one, or a delta.
    Chunk(NewChunk),
    /// Small chunks, compressed together by the reader that filled their block.
    Block(SealedBlock),
}

impl ToWrite {
    /// The bytes it takes in a pack.
    fn stored_len(&self) -> usize {
        match self {
            ToWrite::Chunk(chunk) => chunk.stored.len(),
            ToWrite::Block(block) => block.stored_len(),
        }
    }
}

/// Sends new chunks to the writer.
pub(super) type ChunkSender = crossbeam_channel::Sender<ToWrite>;

/// Writes chunks arriving on `rx` in bounded batches.
/// Full batches are committed at once; the last, partial one is handed back still open,
/// so that the checkpoint commits in the same transaction and a small save pays for one
/// durable commit, not two.
pub(super) fn write_chunks(
    store: &Store,
    rx: crossbeam_channel::Receiver<ToWrite>,
) -> Result<Option<Transaction<'_>>> {
    let mut pending = rx.iter().peekable();
    let mut open = None;
    let mut packer = Packer::default();

    while pending.peek().is_some() {
        let txn = store.transaction()?;
        let bytes = txn.pack_chunks(&mut packer, |sink| {
            let mut bytes = 0;
            while bytes < BATCH_BYTES {
                let Some(item) = pending.next() else {
                    break;
                };
                bytes += item.stored_len();
                match item {
                    ToWrite::Chunk(c) => sink.add(c.id, &c.stored, c.raw_len, c.delta)?,
                    ToWrite::Block(block) => sink.add_sealed(block)?,
                }
            }
            Ok(bytes)
        })?;
        if bytes >= BATCH_BYTES {
            txn.commit()?;
            crate::fault::point("save-batch-committed");
        } else {
            open = Some(txn);
        }
    }
    Ok(open)
}
