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
//! chunks and blocks laid end to end, one redb value of at most `PACK_CAPACITY` bytes.
//!
//! Why packs: redb gives a value that does not share a page a power-of-two number of
//! pages, and rebuilds the neighbours of a key that lands among small values. Chunks
//! stored one by one under their random ids took 1.3 GB of disk for 460 MiB of chunks
//! of a 200,000-file tree, and their inserts held the save back. Packs are appended in
//! key order, which redb stores without touching the previous value, and are filled to
//! just under a power of two; the index holds small entries, dense in its pages.
//!
//! Invariant (docs/design.md invariant 15): an index entry names a pack that exists in
//! the same committed state, and a range inside it. `PackWriter` inserts a pack and
//! the entries that point into it in one transaction; gc moves a pack's live chunks to a
//! new pack, repoints their entries and deletes the old pack in one transaction too.
//!
//! Invariant (docs/design.md invariant 18): a delta's base is in the index whenever the
//! delta is, and is itself a full chunk or a delta of a smaller depth, at most
//! [`MAX_DELTA_DEPTH`](crate::format::chunk::MAX_DELTA_DEPTH) deep: reading a chunk decodes at most that many others first.
//! `sweep::remove_chunks`, the one place chunks leave the index, keeps every base that a
//! chunk staying needs, and repacking carries the base along with the entry.
//!
//! The files split the job: `entry.rs` (an index entry's bytes, `Entry` and
//! `Location`), `read.rs` ([`ReadChunks`], which reads chunks back, and [`LastPack`]),
//! `write.rs` (`PackWriter`, which packs new chunks), `block.rs` ([`OpenBlock`] and
//! [`SealedBlock`], a solid block before it is packed: sealed on any thread), `sweep.rs` (removing chunks and
//! repacking what their packs still hold) and `recompress.rs` (gc laying what saves
//! stored fast into large solid blocks). Only this module names the tables they use.

mod block;
mod entry;
mod read;
mod recompress;
mod sweep;
mod write;

pub use block::{OpenBlock, SealedBlock};
pub use entry::Delta;
pub(super) use entry::Entry;
pub(super) use read::{delta_bases, stored_sizes};
pub use read::{LastPack, ReadChunks};
pub(super) use recompress::recompress;
pub use recompress::Recompressed;
pub(super) use sweep::remove_chunks;
pub(in crate::storage) use write::PackWriter;

use crate::Error;

/// The most bytes of chunks one pack holds. With redb's leaf header a full pack takes
/// exactly 512 KiB of pages; a chunk never exceeds half of that.
pub(super) const PACK_CAPACITY: usize = (512 << 10) - 256;

/// The text of an error, without the `Corrupt` wrapper's own words, to nest in another.
pub(super) fn corrupt_message(e: Error) -> String {
    match e {
        Error::Corrupt(message) => message,
        other => other.to_string(),
    }
}
