//! The values the tool works with, as plain types: checkpoint records, trees, branch
//! names, revisions and stat-cache entries. No I/O.

pub mod branch;
pub mod checkpoint;
pub mod command_checkpoint;
pub mod dir_cache;
#[cfg(test)]
mod encoding_tests;
pub mod operation;
pub mod retention;
pub mod revision;
pub mod session;
pub mod stat_cache;
pub mod tree;

pub use checkpoint::{Attachment, Checkpoint, Head, SkipReason, SkippedFile};
pub use tree::{Node, PendingTrees, Tree};
