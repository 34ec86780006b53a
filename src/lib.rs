//! git-checkpoint: cheap, branching save points of a git worktree, kept outside git's
//! own history in a deduplicating redb store at `<git-dir>/checkpoint/store.redb`.
//!
//! The library holds all logic; the `git-checkpoint` binary (`src/bin/git-checkpoint/`)
//! only parses arguments and reports. Its layers, each importing only from those below it
//! (docs/design.md, "Layout"):
//!
//! - [`doctor`]: what would keep checkpoints from being made, read from the set-up of
//!   the agents and the store; above the operations and the agents it inspects.
//! - [`ops`]: the operations (save, restore, log, gc and retention, verify, stats) and
//!   the [`ops::workspace::Workspace`] (a worktree, its settings, the one door to its
//!   store), and
//!   [`diff`]: changes between trees, shown as git shows them; [`agents`]: the hooks that
//!   save around AI agent steps.
//! - [`watch`]: the per-worktree watcher; it only reports the paths changed since a
//!   token (the save that uses them instead of a walk is in [`ops::save`]), and never
//!   opens the store.
//! - [`storage`]: the redb file and its tables, behind [`storage::Snapshot`] (reads)
//!   and [`storage::Transaction`] (writes); the only module that names redb.
//! - [`settings`]: every `checkpoint.*` key, typed and parsed once from git's config.
//! - [`worktree`]: the files a checkpoint holds, and writing them back through held
//!   directory handles; [`git`]: the repository, git's index and config.
//! - [`model`]: checkpoint records, trees, branch names, revisions, as plain types;
//!   [`format`](mod@format): the record encoding and content chunking, hashing and compression.
//! - [`id`]: the typed ids, which import nothing of ours, so that [`format`](mod@format)
//!   and [`model`] both build on them; [`clock`]: the one clock (test builds can set it); [`error`], [`fault`] (test hooks, test builds only), [`trace`] (phase timings,
//!   `GIT_CHECKPOINT_TRACE=1`), [`progress`] (the trait long operations report to),
//!   [`text`] (text from people and agents escaped for a terminal, nouns counted).

// No `unsafe` but in the macOS event source (`watch/platform/macos.rs`: FSEvents has
// only a C interface), which allows it for itself; scripts/layers.py holds every other
// file to none.
#![deny(unsafe_code)]
#![deny(missing_docs)]

pub mod agents;
pub mod clock;
pub mod complete;
pub mod diff;
pub mod doctor;
pub mod error;
pub mod fault;
pub mod format;
pub mod git;
pub mod id;
pub mod model;
pub mod ops;
pub mod progress;
pub mod remote;
pub mod settings;
pub mod storage;
pub mod text;
pub mod trace;
pub mod watch;
pub mod worktree;

pub use error::{Error, Result};
pub use id::{CheckpointId, ChunkId, TreeId};
