//! Step 1 of a gc (see [`super`]): the plan, from one read snapshot. Which checkpoints
//! go (by the policy, the size budget, or `drop`'s list), the new parents of those that
//! stay, and, by marking from the kept roots, the trees, chunks and stat-cache entries
//! nothing kept reaches.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use super::{Plan, Removal};
use crate::model::retention::{self, GcOptions, GcRemoval, Policy, Turns};
use crate::model::{Checkpoint, Head};
use crate::storage::Snapshot;
use crate::{CheckpointId, ChunkId, Error, Result};

/// Every checkpoint record, with what protects some of them.
pub(super) struct Records {
    /// Each checkpoint with its record and its record's stored size, oldest first.
    list: Vec<(CheckpointId, Checkpoint, u64)>,
    /// Why each protected checkpoint (a tip, HEAD, a pin, a restore's target) stays.
    protected: BTreeMap<CheckpointId, Vec<String>>,
    /// The checkpoints fetched from a remote, whose times are the remote's word.
    imported: HashSet<CheckpointId>,
    /// Dropped checkpoints an operation of the undo window can bring back: what they
    /// reach is live (docs/undo.md).
    held: Vec<Checkpoint>,
}

impl Records {
    /// How many checkpoints the store holds.
    pub(super) fn len(&self) -> usize {
        self.list.len()
    }

    /// The agent sessions and prompts' turns of the checkpoints `which` takes.
    fn turns(&self, which: impl Fn(CheckpointId) -> bool) -> Turns<'_> {
        Turns::of(
            (self.list.iter())
                .filter(|(id, _, _)| which(*id))
                .map(|(id, record, _)| (*id, record)),
        )
    }
}

/// Every checkpoint record of `snapshot`, and what protects some of them.
pub(super) fn load_records(snapshot: &Snapshot) -> Result<Records> {
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
    // Undo and redo within the undo window need what the operation log names; said
    // only of what nothing above keeps already.
    let holds = snapshot.undo_holds(crate::clock::now_ns())?;
    let newest: BTreeMap<CheckpointId, u64> = holds.checkpoints.into_iter().collect();
    for (id, op) in newest {
        protected
            .entry(id)
            .or_insert_with(|| vec![format!("undo of op {op}")]);
    }
    Ok(Records {
        list,
        protected,
        imported: snapshot.imported()?,
        held: holds
            .dropped
            .into_iter()
            .map(|(_, record)| record)
            .collect(),
    })
}

/// The checkpoints the policy and the protections keep, with why. An empty policy
/// keeps everything.
pub(super) fn keep_by_policy(
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
        let mut kept =
            retention::select_apart(policy, &local, &fetched, retention::local_time(now_ns));
        // Prompts and sessions too are ranked apart: a fetched prompt's time is the
        // remote's word.
        for imported in [false, true] {
            let turns = records.turns(|id| records.imported.contains(&id) == imported);
            for (id, reasons) in turns.select(policy.prompts, policy.sessions) {
                kept.entry(id).or_default().extend(reasons);
            }
        }
        kept.into_iter()
            .map(|(id, reasons)| (id, reasons.iter().map(ToString::to_string).collect()))
            .collect()
    };
    let exists: HashSet<CheckpointId> = records.list.iter().map(|(id, _, _)| *id).collect();
    for (id, why) in &records.protected {
        if exists.contains(id) {
            kept.entry(*id).or_default().extend(why.iter().cloned());
        }
    }
    if kept.len() == records.len() {
        return kept;
    }
    // Whatever kept a prompt's checkpoint keeps its turn's last one: the turn can still
    // be shown, diffed and reverted.
    let turns = records.turns(|_| true);
    for end in turns.ends_of_kept_turns(|id| kept.contains_key(&id)) {
        kept.entry(end)
            .or_default()
            .push(retention::Reason::TurnEnd.to_string());
    }
    kept
}

/// Plans a gc from one read snapshot; changes nothing. `now_ns` decides which
/// checkpoints lie in the future for the `within` rule.
pub fn plan(snapshot: &Snapshot, options: &GcOptions, now_ns: i128) -> Result<Plan> {
    let records = load_records(snapshot)?;
    let kept = keep_by_policy(&records, &options.policy, now_ns);
    let plan = finish_plan(snapshot, &records, kept, options, Sweep::Everything)?;
    Ok(with_session_removals(plan, &records, now_ns))
}

/// `plan` with what it removes of each agent session ([`Plan::session_removals`]),
/// dated `now_ns`. A `drop` records none: the user named what goes.
pub(super) fn with_session_removals(mut plan: Plan, records: &Records, now_ns: i128) -> Plan {
    let kept: HashSet<CheckpointId> = plan.kept.iter().map(|(id, _)| *id).collect();
    plan.session_removals = GcRemoval::of(
        plan.removed.iter().map(|removal| &removal.checkpoint),
        (records.list.iter())
            .filter(|(id, _, _)| kept.contains(id))
            .map(|(_, record, _)| record),
        now_ns,
    );
    plan
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
pub(super) enum Sweep {
    /// Every tree and chunk in the store: also finds data that no checkpoint, removed or
    /// kept, names. Touches every page of the chunk table (decoding nothing), and gives
    /// the live data's size.
    Everything,
    /// Only the trees and chunks under the removed checkpoints: work in proportion to
    /// what goes, for the automatic gc after a save.
    RemovedOnly,
}

pub(super) fn finish_plan(
    snapshot: &Snapshot,
    records: &Records,
    kept: BTreeMap<CheckpointId, Vec<String>>,
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
    let graph = snapshot.tree_graph(
        (kept.keys().map(|id| by_id[id].0.tree)).chain(records.held.iter().map(|r| r.tree)),
    )?;
    // A kept chunk stored as a delta keeps its bases: they are live, neither listed for
    // deletion nor reported as freed (docs/design.md invariant 18).
    let bases = snapshot.chunk_bases()?;
    let sizes = match sweep {
        Sweep::Everything => (snapshot.tree_sizes()?, snapshot.chunk_sizes()?),
        Sweep::RemovedOnly => Default::default(),
    };
    let live = |kept: &BTreeMap<CheckpointId, Vec<String>>| -> u64 {
        let mut marked = graph.mark(kept.keys().map(|id| by_id[id].0).chain(&records.held));
        marked.add_chunk_bases(&bases);
        let records: u64 = kept.keys().map(|id| by_id[id].1).sum();
        marked.stored_bytes(&sizes.0, &sizes.1) + records
    };
    let fit = match options.max_size {
        Some(budget) => fit_budget(records, kept, budget, live),
        None => Fit {
            kept,
            for_size: HashSet::new(),
            over_budget: false,
        },
    };
    let kept = fit.kept;
    let mut marked = graph.mark(kept.keys().map(|id| by_id[id].0).chain(&records.held));
    marked.add_chunk_bases(&bases);
    let mut plan = Plan {
        total: records.list.len(),
        over_budget: fit.over_budget,
        ..Plan::default()
    };
    let (mut live_bytes, removed_roots) =
        sort_records(snapshot, records, &kept, &fit.for_size, &mut plan)?;
    plan.reparented = reparent(records, &kept);
    match sweep {
        Sweep::Everything => {
            let (tree_sizes, chunk_sizes) = &sizes;
            for (id, size) in tree_sizes {
                if marked.trees.contains(id) {
                    live_bytes += size;
                } else {
                    plan.trees.push(*id);
                    plan.removed_bytes += size;
                }
            }
            for (id, size) in chunk_sizes {
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

/// Lists each checkpoint in `plan` as kept (with why) or removed, and adds the removed
/// records' bytes to it. Returns the kept records' bytes and the removed records, whose
/// trees a sweep of what they alone reach starts from.
fn sort_records<'r>(
    snapshot: &Snapshot,
    records: &'r Records,
    kept: &BTreeMap<CheckpointId, Vec<String>>,
    for_size: &HashSet<CheckpointId>,
    plan: &mut Plan,
) -> Result<(u64, Vec<&'r Checkpoint>)> {
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
    Ok((live_bytes, removed_roots))
}

/// The checkpoints a size budget leaves.
struct Fit {
    /// Those kept, with why.
    kept: BTreeMap<CheckpointId, Vec<String>>,
    /// Those the budget removed.
    for_size: HashSet<CheckpointId>,
    /// The budget could not be met: what nothing may remove needs more.
    over_budget: bool,
}

/// Removes from `kept` the fewest unprotected checkpoints that bring the live data
/// (`live` of what is kept) within `budget`.
fn fit_budget(
    records: &Records,
    kept: BTreeMap<CheckpointId, Vec<String>>,
    budget: u64,
    live: impl Fn(&BTreeMap<CheckpointId, Vec<String>>) -> u64,
) -> Fit {
    if live(&kept) <= budget {
        return Fit {
            kept,
            for_size: HashSet::new(),
            over_budget: false,
        };
    }
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
    let (mut low, mut high) = (0, candidates.len());
    let over_budget = live(&without(high)) > budget;
    if over_budget {
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
    Fit {
        kept: without(low),
        for_size: candidates[..low].iter().copied().collect(),
        over_budget,
    }
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
