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

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::Path;
use std::time::Instant;

use crate::model::retention::{self, GcOptions, Policy};
use crate::model::{Checkpoint, Head};
use crate::settings::Settings;
use crate::storage::{Snapshot, Store, StoreRead};
use crate::{CheckpointId, ChunkId, Error, Result, TreeId};

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
}

impl Outcome {
    /// Bytes given back to the filesystem (negative if the file grew).
    pub fn freed(&self) -> i64 {
        self.file_before as i64 - self.file_after as i64
    }
}

/// Every checkpoint record, with what protects some of them.
struct Records {
    list: Vec<(CheckpointId, Checkpoint, u64)>,
    protected: BTreeMap<CheckpointId, Vec<String>>,
    /// The checkpoints fetched from a remote, whose times are the remote's word.
    imported: HashSet<CheckpointId>,
}

fn load_records(snapshot: &Snapshot) -> Result<Records> {
    let list = snapshot.checkpoints_with_sizes()?;
    let mut protected: BTreeMap<CheckpointId, Vec<String>> = BTreeMap::new();
    for (name, tip) in snapshot.branches()? {
        protected
            .entry(tip)
            .or_default()
            .push(format!("branch {name}"));
    }
    for (name, tip) in snapshot.remote_branches()? {
        protected
            .entry(tip)
            .or_default()
            .push(format!("fetched branch {name}"));
    }
    if let Some(current) = snapshot.current()? {
        protected.entry(current).or_default().push("HEAD".into());
    }
    for id in snapshot.pins()? {
        protected.entry(id).or_default().push("pinned".into());
    }
    // `status` tells the user to finish an interrupted restore by running it again,
    // which needs its target.
    if let Some(target) = snapshot.interrupted_restore()? {
        protected
            .entry(target)
            .or_default()
            .push("interrupted restore".into());
    }
    Ok(Records {
        list,
        protected,
        imported: snapshot.imported()?,
    })
}

/// The checkpoints the policy and the protections keep, with why. An empty policy
/// keeps everything.
fn keep_by_policy(
    records: &Records,
    policy: &Policy,
    now_ns: i128,
) -> BTreeMap<CheckpointId, Vec<String>> {
    let mut kept: BTreeMap<CheckpointId, Vec<String>> = if policy.is_empty() {
        records
            .list
            .iter()
            .map(|(id, _, _)| (*id, vec!["no policy".to_string()]))
            .collect()
    } else {
        let (fetched, local): (Vec<_>, Vec<_>) = records
            .list
            .iter()
            .map(|(id, record, _)| (*id, retention::local_time(record.time_ns)))
            .partition(|(id, _)| records.imported.contains(id));
        retention::select_apart(policy, &local, &fetched, retention::local_time(now_ns))
            .into_iter()
            .map(|(id, reasons)| (id, reasons.iter().map(ToString::to_string).collect()))
            .collect()
    };
    let exists: HashSet<CheckpointId> = records.list.iter().map(|(id, _, _)| *id).collect();
    for (id, why) in &records.protected {
        if exists.contains(id) {
            kept.entry(*id).or_default().extend(why.iter().cloned());
        }
    }
    kept
}

/// Plans a gc from one read snapshot; changes nothing. `now_ns` decides which
/// checkpoints lie in the future for the `within` rule.
pub fn plan(snapshot: &Snapshot, options: &GcOptions, now_ns: i128) -> Result<Plan> {
    let records = load_records(snapshot)?;
    let kept = keep_by_policy(&records, &options.policy, now_ns);
    finish_plan(snapshot, &records, kept, options, Sweep::Everything)
}

/// Plans removing exactly the checkpoints `ids` (`drop`), with what they alone reach.
/// Their children are re-parented as gc re-parents them, and a branch (or a detached
/// HEAD) whose tip goes moves to the nearest first-parent ancestor that stays; the
/// worktree is never touched. Refuses pinned checkpoints, the target of an interrupted
/// restore, and a drop that would leave a branch or HEAD with no checkpoint.
///
/// A fetched branch's tip stays (it mirrors the remote) unless `released` names the
/// branch: the caller found its remote gone or its tip damaged. Such a branch is then
/// forgotten, and a fetch brings it back if the remote still has it.
pub fn plan_drop(
    snapshot: &Snapshot,
    ids: &BTreeSet<CheckpointId>,
    released: &BTreeSet<String>,
) -> Result<Plan> {
    let records = load_records(snapshot)?;
    let by_id: HashMap<CheckpointId, &Checkpoint> =
        records.list.iter().map(|(id, r, _)| (*id, r)).collect();
    for id in ids {
        let protected = records.protected.get(id).map(Vec::as_slice).unwrap_or(&[]);
        let short = snapshot.short_id(*id)?;
        if protected.iter().any(|why| why == "pinned") {
            return Err(Error::InvalidArgument(format!(
                "checkpoint {short} is pinned; unpin it first (git checkpoint unpin {short})"
            )));
        }
        if protected.iter().any(|why| why == "interrupted restore") {
            return Err(Error::InvalidArgument(format!(
                "checkpoint {short} is the target of an interrupted restore; finish it first (git checkpoint restore {short})"
            )));
        }
        // A fetched branch mirrors the remote; moving it here would make it lie.
        if let Some(why) = protected.iter().find(|why| {
            why.strip_prefix("fetched branch ")
                .is_some_and(|name| !released.contains(name))
        }) {
            return Err(Error::InvalidArgument(format!(
                "checkpoint {short} is the tip of {why}; it mirrors the remote, so it stays"
            )));
        }
    }
    // The nearest first-parent ancestor of `tip` that stays.
    let survivor = |tip: CheckpointId| -> Option<CheckpointId> {
        let mut seen = HashSet::new();
        let mut at = tip;
        while ids.contains(&at) {
            if !seen.insert(at) {
                return None;
            }
            at = *by_id.get(&at)?.parents.first()?;
        }
        Some(at)
    };
    let mut moved_branches = Vec::new();
    for (name, tip) in snapshot.branches()? {
        if !ids.contains(&tip) {
            continue;
        }
        match survivor(tip) {
            Some(new_tip) => moved_branches.push((name, new_tip)),
            None => {
                return Err(Error::InvalidArgument(format!(
                    "dropping these would leave branch {name} without a checkpoint; delete the branch first (git checkpoint branch -d {name}), or keep one of its checkpoints"
                )))
            }
        }
    }
    let moved_head = match snapshot.head()? {
        Head::Detached(id) if ids.contains(&id) => Some(survivor(id).ok_or_else(|| {
            Error::InvalidArgument(
                "dropping these would leave the detached HEAD without a checkpoint; switch to a branch first".into(),
            )
        })?),
        _ => None,
    };
    let kept: BTreeMap<CheckpointId, Vec<String>> = records
        .list
        .iter()
        .filter(|(id, _, _)| !ids.contains(id))
        .map(|(id, _, _)| (*id, vec!["not dropped".to_string()]))
        .collect();
    let mut plan = finish_plan(
        snapshot,
        &records,
        kept,
        &GcOptions::default(),
        Sweep::RemovedOnly,
    )?;
    plan.moved_branches = moved_branches;
    plan.moved_head = moved_head;
    plan.forgotten_fetched = snapshot
        .remote_branches()?
        .into_iter()
        .filter(|(_, tip)| ids.contains(tip))
        .map(|(name, _)| name)
        .collect();
    Ok(plan)
}

/// How much of the store a plan looks at for data to delete.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Sweep {
    /// Every tree and chunk in the store: also finds data that no checkpoint, removed or
    /// kept, names. Touches every page of the chunk table (decoding nothing), and gives
    /// the live data's size.
    Everything,
    /// Only the trees and chunks under the removed checkpoints: work in proportion to
    /// what goes, for the automatic gc after a save.
    RemovedOnly,
}

fn finish_plan(
    snapshot: &Snapshot,
    records: &Records,
    mut kept: BTreeMap<CheckpointId, Vec<String>>,
    options: &GcOptions,
    sweep: Sweep,
) -> Result<Plan> {
    // A size budget needs every live chunk's size.
    let sweep = if options.max_size.is_some() {
        Sweep::Everything
    } else {
        sweep
    };
    let by_id: HashMap<CheckpointId, (&Checkpoint, u64)> = records
        .list
        .iter()
        .map(|(id, record, size)| (*id, (record, *size)))
        .collect();
    let graph = snapshot.tree_graph(kept.keys().map(|id| by_id[id].0.tree))?;

    // A kept chunk stored as a delta keeps its bases: they are live, neither listed for
    // deletion nor reported as freed (docs/design.md invariant 18).
    let bases = snapshot.chunk_bases()?;
    let mut for_size = HashSet::new();
    let mut over_budget = false;
    let (tree_sizes, chunk_sizes) = match sweep {
        Sweep::Everything => (snapshot.tree_sizes()?, snapshot.chunk_sizes()?),
        Sweep::RemovedOnly => Default::default(),
    };
    if let Some(budget) = options.max_size {
        let live = |kept: &BTreeMap<CheckpointId, Vec<String>>| -> u64 {
            let mut marked = graph.mark(kept.keys().map(|id| by_id[id].0));
            marked.add_chunk_bases(&bases);
            let records: u64 = kept.keys().map(|id| by_id[id].1).sum();
            marked.stored_bytes(&tree_sizes, &chunk_sizes) + records
        };
        // The candidates the budget may take, in the order it takes them: fetched ones
        // first (a remote's times cannot make them outlast local history, and the remote
        // keeps them), then oldest first.
        let mut candidates: Vec<CheckpointId> = records
            .list
            .iter()
            .rev()
            .map(|(id, _, _)| *id)
            .filter(|id| kept.contains_key(id) && !records.protected.contains_key(id))
            .collect();
        candidates.sort_by_key(|id| !records.imported.contains(id));
        let without = |n: usize| {
            let mut trial = kept.clone();
            for id in &candidates[..n] {
                trial.remove(id);
            }
            trial
        };
        // Live data only shrinks as more go, so the fewest removals that fit are found by
        // bisection, a handful of in-memory marks.
        if live(&kept) > budget {
            let (mut low, mut high) = (0, candidates.len());
            if live(&without(high)) > budget {
                over_budget = true;
                low = high;
            }
            while low < high {
                let mid = (low + high) / 2;
                if live(&without(mid)) <= budget {
                    high = mid;
                } else {
                    low = mid + 1;
                }
            }
            for_size.extend(candidates[..low].iter().copied());
            kept = without(low);
        }
    }

    let mut marked = graph.mark(kept.keys().map(|id| by_id[id].0));
    marked.add_chunk_bases(&bases);
    let mut plan = Plan {
        total: records.list.len(),
        over_budget,
        ..Plan::default()
    };
    let mut live_bytes = 0;
    let mut removed_roots = Vec::new();
    for (id, record, size) in &records.list {
        match kept.get(id) {
            Some(why) => {
                plan.kept.push((*id, why.clone()));
                live_bytes += size;
            }
            None => {
                plan.removed.push(Removal {
                    id: *id,
                    short_id: snapshot.short_id(*id)?,
                    checkpoint: record.clone(),
                    for_size: for_size.contains(id),
                });
                plan.removed_bytes += size;
                removed_roots.push(record);
            }
        }
    }
    plan.reparented = reparent(records, &kept);
    match sweep {
        Sweep::Everything => {
            for (id, size) in &tree_sizes {
                if marked.trees.contains(id) {
                    live_bytes += size;
                } else {
                    plan.trees.push(*id);
                    plan.removed_bytes += size;
                }
            }
            for (id, size) in &chunk_sizes {
                if marked.chunks.contains(id) {
                    live_bytes += size;
                } else {
                    plan.chunks.push(*id);
                    plan.removed_bytes += size;
                }
            }
            plan.live_bytes = Some(live_bytes);
        }
        Sweep::RemovedOnly => {
            let (trees, chunks, bytes) =
                snapshot.unmarked_below(&removed_roots, &marked, &bases)?;
            plan.removed_bytes += bytes;
            plan.trees = trees;
            plan.chunks = chunks;
        }
    }
    plan.trees.sort_unstable();
    plan.chunks.sort_unstable();
    let deleted: HashSet<ChunkId> = plan.chunks.iter().copied().collect();
    plan.stat_cache = snapshot.cached_paths_naming(&deleted)?;
    Ok(plan)
}

/// New parent lists for kept checkpoints with a removed parent: each removed parent is
/// replaced by its nearest kept ancestors (first parents first), so the graph stays
/// connected. Parents that are not in the store at all are left as they are.
fn reparent(
    records: &Records,
    kept: &BTreeMap<CheckpointId, Vec<String>>,
) -> Vec<(CheckpointId, Vec<CheckpointId>)> {
    let parents: HashMap<CheckpointId, &[CheckpointId]> = records
        .list
        .iter()
        .map(|(id, record, _)| (*id, record.parents.as_slice()))
        .collect();
    let removed = |p: CheckpointId| parents.contains_key(&p) && !kept.contains_key(&p);
    let mut out = Vec::new();
    for (id, record, _) in &records.list {
        if !kept.contains_key(id) || !record.parents.iter().any(|&p| removed(p)) {
            continue;
        }
        let mut new_parents: Vec<CheckpointId> = Vec::new();
        let mut seen = HashSet::new();
        let mut stack: Vec<CheckpointId> = record.parents.iter().rev().copied().collect();
        while let Some(p) = stack.pop() {
            if !seen.insert(p) {
                continue;
            }
            if removed(p) {
                stack.extend(parents[&p].iter().rev());
            } else {
                new_parents.push(p);
            }
        }
        out.push((*id, new_parents));
    }
    out
}

/// Carries out `plan` on `store` (see the module comment for the order), compacting the
/// file if `compact` says so given its size before, and measures the file before and
/// after.
pub fn apply(
    store: &mut Store,
    plan: &Plan,
    started: Instant,
    compact: impl FnOnce(u64) -> bool,
) -> Result<Outcome> {
    let file_before = file_size(&store.path)?;
    crate::fault::point("gc-planned");
    commit(store, plan)?;
    crate::fault::point("gc-committed");
    if compact(file_before) {
        while store.compact()? {
            crate::fault::point("gc-compacting");
        }
    }
    Ok(Outcome {
        file_before,
        file_after: file_size(&store.path)?,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// Step 2 of the module comment: carries out `plan` in one transaction, without
/// compacting the file.
pub fn commit(store: &Store, plan: &Plan) -> Result<()> {
    let txn = store.transaction()?;
    for (id, new_parents) in &plan.reparented {
        txn.set_parents(*id, new_parents.clone())?;
    }
    txn.remove_checkpoints(plan.removed.iter().map(|removal| removal.id))?;
    txn.remove_trees(&plan.trees)?;
    txn.remove_chunks(&plan.chunks)?;
    txn.forget_cached(&plan.stat_cache)?;
    for (name, tip) in &plan.moved_branches {
        txn.set_branch(name, *tip)?;
    }
    if let Some(id) = plan.moved_head {
        txn.set_head(&Head::Detached(id))?;
    }
    for name in &plan.forgotten_fetched {
        txn.remove_remote_branch(name)?;
    }
    crate::fault::point("gc-before-commit");
    txn.commit()
}

/// Plans and applies a gc.
pub fn run(store: &mut Store, options: &GcOptions) -> Result<(Plan, Outcome)> {
    let started = Instant::now();
    let plan = plan(&store.snapshot()?, options, crate::clock::now_ns())?;
    let outcome = apply(store, &plan, started, |_| true)?;
    Ok((plan, outcome))
}

fn file_size(path: &Path) -> Result<u64> {
    Ok(std::fs::metadata(path)
        .map_err(|e| Error::io(path, e))?
        .len())
}

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
        let kept = keep_by_policy(&records, policy, crate::clock::now_ns());
        if !over_size && kept.len() == records.list.len() {
            return Ok(None);
        }
        let plan = finish_plan(&snapshot, &records, kept, options, Sweep::RemovedOnly)?;
        if plan.removed.is_empty() {
            return Ok(None);
        }
        plan
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

/// Pins the checkpoint `rev` names, so that gc never removes it. Returns it and whether
/// it was not pinned before.
pub fn pin(store: &Store, rev: &str) -> Result<(CheckpointId, bool)> {
    set_pin(store, rev, true)
}

/// Unpins the checkpoint `rev` names. Returns it and whether it was pinned.
pub fn unpin(store: &Store, rev: &str) -> Result<(CheckpointId, bool)> {
    set_pin(store, rev, false)
}

fn set_pin(store: &Store, rev: &str, pinned: bool) -> Result<(CheckpointId, bool)> {
    let id = store.snapshot()?.resolve(rev)?;
    let txn = store.transaction()?;
    let changed = txn.set_pinned(id, pinned)?;
    if changed {
        txn.commit()?;
    } else {
        txn.abort()?;
    }
    Ok((id, changed))
}
