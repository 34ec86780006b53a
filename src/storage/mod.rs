//! The storage layer: the one redb file per worktree and everything that reads or writes
//! its tables. Nothing outside this module names redb or a table (`.ci/run` checks):
//! other modules read through a [`Snapshot`] (one read transaction) and write through a
//! [`Transaction`], which keep the invariants of docs/design.md sections 2 and 3.

mod engine_errors;
mod file;
mod generation;
mod operations;
pub mod pack;
pub mod reach;
mod records;
mod remote;
mod snapshot;
pub mod stats;
mod store;
mod tables;
mod transaction;
mod tree_codec;
mod tree_reader;
mod turn;
pub mod verify;

pub use operations::{Settled, UndoHolds};
pub use pack::LastPack;
pub use records::ChangeSummary;
pub use snapshot::{CachedEntry, CheckpointReader, Snapshot, StatCacheCursor, StoredDirCache};
pub(in crate::storage) use store::hold_read_only;
pub use store::{OpenedStore, ReadStore, Store, StoreRead};
pub use transaction::{BatchSink, CacheWriter, ChunkSink, Packer, Transaction};
pub use tree_reader::TreeReader;
pub use turn::{ChangeRange, Turn};
