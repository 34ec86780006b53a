//! git-checkpoint: cheap, branching save points of a git worktree, kept outside git's
//! own history in a deduplicating redb store at `<git-dir>/checkpoint/store.redb`.
//!
//! The library holds all logic; the `git-checkpoint` binary (`src/bin/git-checkpoint/`)
//! only parses arguments and reports. Its layers, each importing only from those below it
//! (docs/design.md, "Layout"):
//!
//! - [`ops`]: the operations (save, restore, log, gc and retention, verify, stats), and
//!   [`diff`]: changes between trees, shown as git shows them; [`agents`]: the hooks that
//!   save around AI agent steps.
//! - [`watch`]: the per-worktree watcher and the save's side of it (the changed paths
//!   since a token instead of a walk); it reads the store, never writes it.
//! - [`storage`]: the redb file and its tables, behind [`storage::Snapshot`] (reads)
//!   and [`storage::Transaction`] (writes); the only module that names redb.
//! - [`worktree`]: the files a checkpoint holds, and writing them back through held
//!   directory handles; [`git`]: the repository, git's index and config.
//! - [`model`]: checkpoint records, trees, branch names, revisions, as plain types;
//!   [`format`](mod@format): the record encoding and content chunking, hashing and compression.
//! - [`clock`]: the one clock (test builds can set it); [`error`], [`fault`] (test hooks, test builds only), [`trace`] (phase timings,
//!   `GIT_CHECKPOINT_TRACE=1`), [`progress`] (the trait long operations report to).

#![forbid(unsafe_code)]

pub mod agents;
pub mod clock;
pub mod complete;
pub mod diff;
pub mod error;
pub mod fault;
pub mod format;
pub mod git;
pub mod model;
pub mod ops;
pub mod progress;
pub mod remote;
pub mod storage;
pub mod trace;
pub mod watch;
pub mod worktree;

pub use error::{Error, Result};
pub use model::id::{CheckpointId, ChunkId, TreeId};
