//! The automatic gc after a save: the retention `checkpoint.gc.*` configures, in work
//! proportional to what it removes, never failing the save it follows.

use std::time::Instant;

use super::apply::{apply, file_size};
use super::plan::{finish_plan, keep_by_policy, load_records, with_session_removals, Sweep};
use super::{Outcome, Plan};
use crate::model::retention::{GcOptions, Policy};
use crate::settings::Settings;
use crate::storage::{Store, StoreRead};
use crate::{Error, Result};

/// The automatic gc compacts the file when it removed at least 1/COMPACT_SHARE of it.
const COMPACT_SHARE: u64 = 8;

/// The automatic gc after a save: runs `options` only when they would remove a
/// checkpoint. The usual case, nothing to remove, costs a look at the table's length or
/// the file's size, or at worst decoding the checkpoint records (no tree, no chunk).
/// When something goes, only the data under what goes is looked at (without a size
/// budget), so the work is in proportion to what is removed; the file is compacted only
/// when that is a real share of it.
pub fn auto(store: &mut Store, options: &GcOptions) -> Result<Option<(Plan, Outcome)>> {
    let started = Instant::now();
    let over_size = match options.max_size {
        Some(budget) => file_size(&store.path)? > budget,
        None => false,
    };
    let plan = {
        let snapshot = store.snapshot()?;
        let policy = &options.policy;
        let only_last = Policy {
            last: policy.last,
            ..Policy::default()
        } == *policy;
        if !over_size
            && (policy.is_empty()
                || only_last && snapshot.checkpoint_count()? <= policy.last.unwrap_or(0) as u64)
        {
            return Ok(None);
        }
        let records = load_records(&snapshot)?;
        let now_ns = crate::clock::now_ns();
        let kept = keep_by_policy(&records, policy, now_ns);
        if !over_size && kept.len() == records.len() {
            return Ok(None);
        }
        let plan = finish_plan(&snapshot, &records, kept, options, Sweep::RemovedOnly)?;
        if plan.removed.is_empty() {
            return Ok(None);
        }
        with_session_removals(plan, &records, now_ns)
    };
    // Compaction rewrites much of the file (about 0.13 s on a 50 MB store), too much for
    // every save of a steady "keep N": freed pages are reused by the next saves anyway, so
    // the file is compacted only when what went is a real share of it, or it is over
    // budget.
    let outcome = apply(store, &plan, started, |file| {
        over_size || plan.removed_bytes.saturating_mul(COMPACT_SHARE) >= file
    })?;
    Ok(Some((plan, outcome)))
}

/// What the automatic gc after a save did, when `checkpoint.gc.*` asks for one.
#[derive(Debug)]
pub enum AutoGc {
    /// It removed checkpoints by these options.
    Ran {
        /// The configured retention.
        options: GcOptions,
        /// What went.
        plan: Box<Plan>,
        /// What applying it measured.
        outcome: Outcome,
    },
    /// `checkpoint.gc.*` could not be read, so nothing was removed.
    Skipped(Error),
    /// It failed part-way; the commit protocol leaves the store as it was or as planned.
    Failed(Error),
}

/// Runs the retention `checkpoint.gc.*` configures, after a save made a checkpoint.
/// Returns `None` when nothing is configured or nothing goes. Never fails: the save it
/// follows is durable whatever happens here, so a problem is part of the result.
pub fn after_save(settings: &Settings, store: &mut Store) -> Option<AutoGc> {
    let options = match settings.gc.get() {
        Ok(Some(options)) => options,
        Ok(None) => return None,
        Err(e) => return Some(AutoGc::Skipped(e)),
    };
    match auto(store, &options) {
        Ok(Some((plan, outcome))) => Some(AutoGc::Ran {
            options,
            plan: Box::new(plan),
            outcome,
        }),
        Ok(None) => None,
        Err(e) => Some(AutoGc::Failed(e)),
    }
}
