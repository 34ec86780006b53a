//! The shapes of the commands that look after the store: `drop`, `gc`, `pin`, `unpin`,
//! `stats` and `verify`.

use serde::Serialize;

use git_checkpoint::clock::rfc3339;
use git_checkpoint::ops::drop::Dropped;
use git_checkpoint::ops::gc::{Outcome, Plan};
use git_checkpoint::storage::stats::{CheckpointStats, Stats};
use git_checkpoint::storage::verify;
use git_checkpoint::CheckpointId;

use super::hexes;

/// `drop`.
#[derive(Debug, Serialize)]
pub struct DropJson {
    /// Whether nothing was changed.
    pub dry_run: bool,
    /// The checkpoints that go, newest first.
    pub removed: Vec<DroppedJson>,
    /// How many kept checkpoints were re-linked to the dropped ones' parents.
    pub reparented: usize,
    /// Branches whose tip went, each with the tip it moved back to.
    pub moved_branches: Vec<MovedBranchJson>,
    /// Where a detached HEAD moved, when the checkpoint it named went.
    pub moved_head: Option<String>,
    /// Fetched branches whose tip went: forgotten.
    pub forgotten_fetched: Vec<String>,
    /// Stored bytes of everything that goes.
    pub stored_bytes_removed: u64,
    /// Whether the checkpoints are kept for `undo` until a gc after the undo window
    /// (false for a dry run, and for a drop of a damaged checkpoint, which goes for good).
    pub kept_for_undo: bool,
}

/// A checkpoint `drop` removes.
#[derive(Debug, Serialize)]
pub struct DroppedJson {
    /// Full id.
    pub id: String,
    /// Its abbreviation while it still existed.
    pub short_id: String,
    /// Its message.
    pub message: String,
}

/// A branch `drop` moved back.
#[derive(Debug, Serialize)]
pub struct MovedBranchJson {
    /// The branch.
    pub branch: String,
    /// Its new tip.
    pub tip: String,
}

impl DropJson {
    /// The JSON view of a drop's plan; `applied` (what became of the checkpoints) is
    /// `None` for a dry run.
    pub fn new(plan: &Plan, applied: Option<Dropped>) -> Self {
        DropJson {
            dry_run: applied.is_none(),
            kept_for_undo: applied == Some(Dropped::KeptForUndo),
            removed: plan
                .removed
                .iter()
                .map(|r| DroppedJson {
                    id: r.id.hex(),
                    short_id: r.short_id.clone(),
                    message: r.checkpoint.message.clone(),
                })
                .collect(),
            reparented: plan.reparented.len(),
            moved_branches: plan
                .moved_branches
                .iter()
                .map(|(name, tip)| MovedBranchJson {
                    branch: name.clone(),
                    tip: tip.hex(),
                })
                .collect(),
            moved_head: plan.moved_head.map(CheckpointId::hex),
            forgotten_fetched: plan.forgotten_fetched.clone(),
            stored_bytes_removed: plan.removed_bytes,
        }
    }
}

/// `gc`.
#[derive(Debug, Serialize)]
pub struct GcJson {
    /// Whether nothing was changed.
    pub dry_run: bool,
    /// The rules in words ("keep 10 newest, 7 daily"); null without a `--keep` rule.
    pub policy: Option<String>,
    /// `--max-size` in bytes, if given.
    pub max_size: Option<u64>,
    /// Checkpoints in the store before.
    pub checkpoints_before: usize,
    /// The checkpoints that go, newest first.
    pub removed: Vec<CollectedJson>,
    /// The checkpoints that stay, newest first, with why.
    pub kept: Vec<KeptJson>,
    /// Kept checkpoints re-linked to their nearest kept ancestors.
    pub reparented: Vec<ReparentedJson>,
    /// Trees deleted.
    pub trees_removed: usize,
    /// Chunks deleted.
    pub chunks_removed: usize,
    /// Stat-cache entries dropped with them.
    pub stat_cache_entries_removed: usize,
    /// Stored bytes of everything that goes.
    pub stored_bytes_removed: u64,
    /// Stored bytes of everything that stays, when the plan looked at the whole store.
    pub live_bytes: Option<u64>,
    /// Whether `--max-size` could not be met.
    pub over_budget: bool,
    /// The store file's size before; null for a dry run.
    pub file_size_before: Option<u64>,
    /// The store file's size after compaction; null for a dry run.
    pub file_size_after: Option<u64>,
    /// Bytes given back to the filesystem (negative if the file grew); null for a dry
    /// run.
    pub bytes_freed: Option<i64>,
    /// What the recompression did; null for a dry run.
    pub recompressed: Option<RecompressedJson>,
    /// Wall time in seconds.
    pub seconds: f64,
}

/// A checkpoint `gc` removes.
#[derive(Debug, Serialize)]
pub struct CollectedJson {
    /// Full id.
    pub id: String,
    /// Its abbreviation while it still existed.
    pub short_id: String,
    /// When it was made.
    pub time: String,
    /// Its message.
    pub message: String,
    /// Whether `--max-size`, not a rule, removes it.
    pub for_size: bool,
}

/// A checkpoint `gc` keeps, and why.
#[derive(Debug, Serialize)]
pub struct KeptJson {
    /// Full id.
    pub id: String,
    /// Each rule or protection that keeps it (`last`, `daily`, `branch main`, `pinned`,
    /// …).
    pub reasons: Vec<String>,
}

/// A kept checkpoint whose parents changed.
#[derive(Debug, Serialize)]
pub struct ReparentedJson {
    /// Full id.
    pub id: String,
    /// Its new parents.
    pub parents: Vec<String>,
}

impl GcJson {
    /// The JSON view of a gc's plan, and of what applying it measured (`None`: a dry
    /// run).
    pub fn new(
        policy: Option<String>,
        max_size: Option<u64>,
        plan: &Plan,
        outcome: Option<&Outcome>,
        seconds: f64,
    ) -> Self {
        GcJson {
            dry_run: outcome.is_none(),
            policy,
            max_size,
            checkpoints_before: plan.total,
            removed: plan
                .removed
                .iter()
                .map(|r| CollectedJson {
                    id: r.id.hex(),
                    short_id: r.short_id.clone(),
                    time: rfc3339(r.checkpoint.time_ns),
                    message: r.checkpoint.message.clone(),
                    for_size: r.for_size,
                })
                .collect(),
            kept: plan
                .kept
                .iter()
                .map(|(id, why)| KeptJson {
                    id: id.hex(),
                    reasons: why.clone(),
                })
                .collect(),
            reparented: plan
                .reparented
                .iter()
                .map(|(id, parents)| ReparentedJson {
                    id: id.hex(),
                    parents: hexes(parents),
                })
                .collect(),
            trees_removed: plan.trees.len(),
            chunks_removed: plan.chunks.len(),
            stat_cache_entries_removed: plan.stat_cache.len(),
            stored_bytes_removed: plan.removed_bytes,
            live_bytes: plan.live_bytes,
            over_budget: plan.over_budget,
            file_size_before: outcome.map(|o| o.file_before),
            file_size_after: outcome.map(|o| o.file_after),
            bytes_freed: outcome.map(Outcome::freed),
            recompressed: outcome
                .and_then(|o| o.recompressed)
                .map(|r| RecompressedJson {
                    packs: r.packs,
                    stored_bytes_before: r.bytes_before,
                    stored_bytes_after: r.bytes_after,
                }),
            seconds,
        }
    }
}

/// What `gc`'s recompression did (docs/design.md, "Packs and the chunk index").
#[derive(Debug, Serialize)]
pub struct RecompressedJson {
    /// Packs it rewrote or found empty, and deleted.
    pub packs: usize,
    /// Their stored bytes.
    pub stored_bytes_before: u64,
    /// The stored bytes of the packs it wrote instead.
    pub stored_bytes_after: u64,
}

/// `pin` and `unpin`.
#[derive(Debug, Serialize)]
pub struct PinJson {
    /// Full id.
    pub id: String,
    /// Whether it is pinned now.
    pub pinned: bool,
    /// Whether this command changed that.
    pub changed: bool,
}

/// `stats`.
#[derive(Debug, Serialize)]
pub struct StatsJson {
    /// The store file.
    pub path: String,
    /// Its size on disk.
    pub file_size: u64,
    /// Checkpoints.
    pub checkpoints: usize,
    /// Branches.
    pub branches: usize,
    /// Pinned checkpoints.
    pub pinned: usize,
    /// Stored bytes of everything some checkpoint reaches.
    pub live_bytes: u64,
    /// Stored bytes nothing reaches (what a gc deletes).
    pub unreachable_bytes: u64,
    /// Trees in the store.
    pub trees: usize,
    /// Chunks in the store.
    pub chunks: usize,
    /// Chunks some checkpoint reaches.
    pub live_chunks: usize,
    /// The sum of every checkpoint's file sizes.
    pub logical_bytes: u64,
    /// Content bytes of the live chunks before compression.
    pub unique_bytes: u64,
    /// Stored bytes of the live chunks.
    pub stored_chunk_bytes: u64,
    /// `logical_bytes / unique_bytes` (1.0 when nothing is shared).
    pub dedup_ratio: f64,
    /// `unique_bytes / stored_chunk_bytes`.
    pub compression_ratio: f64,
    /// Every checkpoint, newest first.
    pub per_checkpoint: Vec<CheckpointCostJson>,
}

/// One checkpoint of `stats`.
#[derive(Debug, Serialize)]
pub struct CheckpointCostJson {
    /// Full id.
    pub id: String,
    /// Shortest unique abbreviation.
    pub short_id: String,
    /// When it was made.
    pub time: String,
    /// Its message.
    pub message: String,
    /// Total bytes of its files.
    pub bytes: u64,
    /// Stored bytes only it reaches: what removing it alone would free.
    pub exclusive_bytes: u64,
}

impl StatsJson {
    /// The JSON view of the store at `path`; `per_checkpoint` pairs each checkpoint with
    /// its short id.
    pub fn new(path: String, stats: &Stats, per_checkpoint: &[(String, &CheckpointStats)]) -> Self {
        StatsJson {
            path,
            file_size: stats.file_size,
            checkpoints: stats.checkpoints,
            branches: stats.branches,
            pinned: stats.pinned,
            live_bytes: stats.live_bytes,
            unreachable_bytes: stats.unreachable_bytes,
            trees: stats.trees,
            chunks: stats.chunks,
            live_chunks: stats.live_chunks,
            logical_bytes: stats.logical_bytes,
            unique_bytes: stats.unique_bytes,
            stored_chunk_bytes: stats.stored_chunk_bytes,
            dedup_ratio: stats.dedup_ratio(),
            compression_ratio: stats.compression_ratio(),
            per_checkpoint: per_checkpoint
                .iter()
                .map(|(short, c)| CheckpointCostJson {
                    id: c.id.hex(),
                    short_id: short.clone(),
                    time: rfc3339(c.checkpoint.time_ns),
                    message: c.checkpoint.message.clone(),
                    bytes: c.checkpoint.bytes,
                    exclusive_bytes: c.exclusive_bytes,
                })
                .collect(),
        }
    }
}

/// `verify`.
#[derive(Debug, Serialize)]
pub struct VerifyJson {
    /// Whether nothing is damaged.
    pub ok: bool,
    /// Whether the records could be read and checked at all.
    pub opened: bool,
    /// Every problem, sorted.
    pub problems: Vec<ProblemJson>,
    /// Checkpoints that are damaged, reach damage, or lost a parent, sorted.
    pub affected_checkpoints: Vec<String>,
    /// Checkpoints checked.
    pub checkpoints: usize,
    /// Trees checked.
    pub trees: usize,
    /// Chunks in the store.
    pub chunks: usize,
    /// Chunks read and re-hashed (`--read-data`).
    pub chunks_read: usize,
    /// Stored bytes read for that.
    pub bytes_read: u64,
    /// Trees no checkpoint reaches (garbage, not damage).
    pub unreachable_trees: usize,
    /// Chunks nothing references (garbage, not damage).
    pub unreachable_chunks: usize,
    /// Stored bytes of those: what a gc would free.
    pub unreachable_bytes: u64,
}

/// One problem `verify` found.
#[derive(Debug, Serialize)]
pub struct ProblemJson {
    /// What is damaged: `chunk <id>`, `tree <id>`, `checkpoint <id>`, `branch <name>`,
    /// `HEAD`, `pin <id>`, `stat cache <path>`, `file` or `records`.
    pub object: String,
    /// What is wrong with it.
    pub problem: String,
}

impl VerifyJson {
    /// The JSON view of a verify's report.
    pub fn new(report: &verify::Report) -> Self {
        VerifyJson {
            ok: report.ok(),
            opened: report.opened,
            problems: report
                .problems
                .iter()
                .map(|p| ProblemJson {
                    object: p.object.clone(),
                    problem: p.message.clone(),
                })
                .collect(),
            affected_checkpoints: hexes(&report.affected),
            checkpoints: report.checkpoints,
            trees: report.trees,
            chunks: report.chunks,
            chunks_read: report.chunks_read,
            bytes_read: report.bytes_read,
            unreachable_trees: report.unreachable_trees,
            unreachable_chunks: report.unreachable_chunks,
            unreachable_bytes: report.unreachable_bytes,
        }
    }
}
