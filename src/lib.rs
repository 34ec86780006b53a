//! git-checkpoint: cheap, branching save points of a git worktree, kept outside git's
//! own history in a deduplicating redb store at `<git-dir>/checkpoint/store.redb`.
//!
//! The library holds all logic; the `git-checkpoint` binary only parses arguments and
//! reports. One module per concern:
//!
//! - [`repo`]: finding the worktree and asking git what it knows (config, HEAD).
//! - [`git_index`]: the paths git tracks, read from its index file.
//! - [`store`]: the redb file, its tables, the bounded wait for the writer lock.
//! - [`codec`]: the versioned record encoding shared by every table.
//! - [`chunk`]: content-defined chunking, keyed hashing and compression of content.
//! - [`pack`]: where stored chunks live: the chunk index and the packs.
//! - [`walk`]: the set of files git would see in the worktree.
//! - [`worktree`]: writing the worktree through held directory handles, never a path.
//! - [`stat_cache`]: file metadata that lets a save skip unchanged files.
//! - [`tree`]: directory records and building them from a flat file list.
//! - [`dag`]: checkpoint records, branches, HEAD and revision parsing.
//! - [`save`], [`restore`], [`diff`]: the operations.
//! - [`graph`]: the lanes of `log --graph`.
//! - [`patch`]: changes shown as git shows them (unified diff, `--stat`, names).
//! - [`retention`], [`gc`], [`reach`]: which checkpoints a policy keeps, removing the
//!   rest and sweeping what nothing reaches; [`verify`] and [`stats`] look the store over.
//! - [`output`]: the JSON shapes and human formatting shared by the commands.
//! - [`error`]: the library's error type; [`fault`]: the test hooks (test builds only).
//! - [`trace`]: phase timings for profiling (`GIT_CHECKPOINT_TRACE=1`).
//! - [`config`]: the `checkpoint.*` settings from git's config.
//! - [`progress`]: progress reporting for long operations, and the terminal bar.
//! - [`hooks`]: installing and running the hooks that save around AI agent steps.
//! - [`pager`]: paging long output on a terminal, as git does.

pub mod chunk;
pub mod codec;
pub mod config;
pub mod dag;
pub mod diff;
pub mod error;
pub mod fault;
pub mod gc;
pub mod git_index;
pub mod graph;
pub mod hooks;
pub mod output;
pub mod pack;
pub mod pager;
pub mod patch;
pub mod progress;
pub mod reach;
pub mod repo;
pub mod restore;
pub mod retention;
pub mod save;
pub mod stat_cache;
pub mod stats;
pub mod store;
pub mod trace;
pub mod tree;
pub mod verify;
pub mod walk;
pub mod worktree;

pub use error::{Error, Result};

/// A 128-bit identifier of a chunk, a tree or a checkpoint: a keyed BLAKE3 hash of the
/// bytes it names, truncated to 128 bits. Printed as 32 lowercase hex digits.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct Id(pub u128);

impl Id {
    /// The full 32-digit hex form.
    pub fn hex(self) -> String {
        format!("{:032x}", self.0)
    }
}

impl std::fmt::Display for Id {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:032x}", self.0)
    }
}
