//! Retention: deciding which checkpoints go, re-linking the ones that stay, sweeping the
//! trees and chunks nothing kept reaches, and giving the space back to the filesystem.
//! Also pins, which retention never removes, and the automatic run after a save.
//!
//! A gc keeps the union of: what the policy selects ([`crate::model::retention`], local
//! and fetched checkpoints ranked apart), every branch
//! tip, the current checkpoint and every pinned checkpoint. With no policy it keeps every
//! checkpoint and only sweeps data nothing reaches (a save that died after committing
//! some of its chunk batches leaves them, until a save of the same content reuses them;
//! an older version, a tool using the library or a bug might leave more). With a
//! size budget it then also drops the oldest checkpoints that nothing else protects until
//! the live data fits.
//!
//! Order of operations, chosen so that a crash (kill -9, power loss) at any instant
//! leaves a store in which every listed checkpoint restores exactly:
//!
//! 1. Plan from one read snapshot: which checkpoints go, the new parent lists of the kept
//!    checkpoints whose parents go, and by marking from the kept roots (each shared tree
//!    visited once, no chunk data read) which trees and chunks nothing kept reaches (in
//!    the whole store for `git checkpoint gc`, under the removed checkpoints for the
//!    automatic run), and which stat-cache entries name such chunks. The store's file
//!    lock is held throughout, so nothing changes between this snapshot and step 2.
//! 2. One redb write transaction rewrites the re-parented records in place (ids do not
//!    change), deletes the removed checkpoint records, the unreachable trees and chunks,
//!    and the stat-cache entries that name deleted chunks, and commits durably. redb's
//!    commit is atomic: before it nothing has changed, after it everything has, so there
//!    is no moment in which a kept checkpoint names a missing parent, tree or chunk, or
//!    in which a save could reuse a cached chunk id whose chunk is gone. (restic writes
//!    its new index before deleting packs for the same reason; here the two are one
//!    commit.)
//! 3. Only then compact the file (the automatic gc after a save does so only when it
//!    removed a real share of the file), which moves live pages down and truncates it. Each
//!    compaction step is a redb two-phase commit; a crash in the middle leaves the
//!    committed state of step 2 intact (the next open repairs the allocator), and the
//!    next gc finishes the shrinking.
//!
//! `plan.rs` makes the plan (step 1, for gc and for `drop`),
//! `apply.rs` carries it out (steps 2 and 3), `auto.rs` is the run
//! after a save, `pins.rs` the checkpoints it never removes.

mod apply;
mod auto;
mod pins;
mod plan;

use std::collections::BTreeMap;
use std::time::Instant;

use crate::model::operation::OpKind;
use crate::model::retention::{GcOptions, GcRemoval};
use crate::model::Checkpoint;
use crate::storage::{Store, StoreRead};
use crate::{CheckpointId, ChunkId, Result, TreeId};

pub use apply::{apply, commit, commit_recorded};
pub use auto::{after_save, auto, AutoGc};
pub use pins::{pin, unpin};
pub use plan::{plan, plan_drop};

/// A checkpoint the plan removes.
#[derive(Clone, Debug)]
pub struct Removal {
    /// Its id.
    pub id: CheckpointId,
    /// Its abbreviation while it still exists.
    pub short_id: String,
    /// Its record.
    pub checkpoint: Checkpoint,
    /// Whether the size budget, not the policy, removes it.
    pub for_size: bool,
}

/// What a gc does (or, in a dry run, would do).
#[derive(Clone, Debug, Default)]
pub struct Plan {
    /// Checkpoints in the store before.
    pub total: usize,
    /// Checkpoints that go, newest first.
    pub removed: Vec<Removal>,
    /// Checkpoints that stay, newest first, with why.
    pub kept: Vec<(CheckpointId, Vec<String>)>,
    /// Kept checkpoints whose parents change, with the new parents.
    pub reparented: Vec<(CheckpointId, Vec<CheckpointId>)>,
    /// Trees nothing kept reaches.
    pub trees: Vec<TreeId>,
    /// Chunks nothing kept reaches.
    pub chunks: Vec<ChunkId>,
    /// Stat-cache paths whose entries name chunks that go.
    pub stat_cache: Vec<Vec<u8>>,
    /// Stored bytes of everything that goes (records, trees, chunks).
    pub removed_bytes: u64,
    /// Stored bytes of everything that stays, when the plan looked at the whole store.
    pub live_bytes: Option<u64>,
    /// The budget could not be met: tips, the current checkpoint and pins alone need
    /// more.
    pub over_budget: bool,
    /// Branches whose tip goes ([`plan_drop`]), each with the tip it moves to: the
    /// nearest first-parent ancestor that stays. gc never removes a tip.
    pub moved_branches: Vec<(String, CheckpointId)>,
    /// Where a detached HEAD moves, when the checkpoint it names goes ([`plan_drop`]).
    pub moved_head: Option<CheckpointId>,
    /// Fetched branches whose tip goes ([`plan_drop`] with them released): forgotten.
    pub forgotten_fetched: Vec<String>,
    /// What a gc (not a drop) removes of each agent session, recorded when it commits,
    /// so that a turn it removed says so, and when.
    pub session_removals: BTreeMap<String, GcRemoval>,
}

/// What applying a plan measured.
#[derive(Clone, Copy, Debug, Default)]
pub struct Outcome {
    /// The store file's size before.
    pub file_before: u64,
    /// The store file's size after compaction.
    pub file_after: u64,
    /// Wall time of the whole gc, planning included.
    pub seconds: f64,
    /// What the recompression did (`git checkpoint gc` only).
    pub recompressed: Option<crate::storage::pack::Recompressed>,
}

impl Outcome {
    /// Bytes given back to the filesystem (negative if the file grew).
    pub fn freed(&self) -> i64 {
        self.file_before as i64 - self.file_after as i64
    }
}

/// Plans and applies a gc, recorded in the operation log.
pub fn run(store: &mut Store, options: &GcOptions) -> Result<(Plan, Outcome)> {
    let started = Instant::now();
    let plan = plan(&store.snapshot()?, options, crate::clock::now_ns())?;
    let summary = format!("gc: removed {} checkpoint(s)", plan.removed.len());
    let outcome = apply::apply_as(
        store,
        &plan,
        started,
        |_| true,
        Some((OpKind::Gc, summary)),
        apply::Upkeep::Recompress,
    )?;
    Ok((plan, outcome))
}
