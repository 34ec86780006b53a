//! The order `log` lists checkpoints in.

use crate::model::Checkpoint;
use crate::ops::log_entry::{HashMap, HashSet};
use crate::ops::log_walk::LogWalk;
use crate::storage::Snapshot;
use crate::{CheckpointId, Result};

pub use crate::ops::log_entry::LogEntry;

/// Which checkpoints [`log`] lists.
#[derive(Clone, Debug, Default)]
pub struct LogQuery {
    /// Every checkpoint in the store, not only the ancestry of the current one.
    pub all: bool,
    /// At most this many.
    pub limit: Option<usize>,
    /// Only checkpoints whose metadata holds every one of these pairs.
    pub meta: Vec<(String, String)>,
    /// Start from these checkpoints instead of the current one (ignored with `all`).
    pub from: Vec<CheckpointId>,
    /// Leave out these checkpoints and every ancestor of theirs (the `A` of `A..B`).
    pub exclude: Vec<CheckpointId>,
    /// Only checkpoints whose change against their first parent touched one of these
    /// paths (or something below them); see [`crate::ops::log_query`].
    pub paths: Vec<Vec<u8>>,
    /// Only checkpoints whose message holds this text, whatever its case.
    pub grep: Option<String>,
}

/// Whether `record`'s metadata holds every `(key, value)` pair of `wanted`.
pub fn meta_matches(record: &Checkpoint, wanted: &[(String, String)]) -> bool {
    wanted.iter().all(|pair| record.meta.contains(pair))
}

/// Checkpoints in graph order: every child before its parents, newest first otherwise,
/// and each line of history kept together (as `git log --graph` orders commits).
/// Without `all`, the current checkpoint and its ancestors; with it, every checkpoint.
///
/// With a limit and nothing to filter by (no `all`, range, metadata, path or text), the
/// list is read through a [`LogWalk`], which reads only the records the first `limit`
/// need.
pub fn log(snapshot: &Snapshot, query: &LogQuery) -> Result<Vec<LogEntry>> {
    if let Some(limit) = query.limit {
        if !query.all
            && query.exclude.is_empty()
            && query.meta.is_empty()
            && query.paths.is_empty()
            && query.grep.is_none()
        {
            let tips: Vec<CheckpointId> = match query.from.is_empty() {
                true => snapshot.current()?.into_iter().collect(),
                false => query.from.clone(),
            };
            return LogWalk::from(snapshot, &tips)?.next_page(snapshot, limit);
        }
    }
    // Sized for the whole store up front: records are large, and growing the map would
    // move each of them several times.
    let capacity = usize::try_from(snapshot.checkpoint_count()?).unwrap_or(0);
    let mut records: HashMap<CheckpointId, Checkpoint> =
        HashMap::with_capacity_and_hasher(capacity, Default::default());
    let excluded = crate::ops::log_query::ancestry(snapshot, &query.exclude)?;
    if query.all {
        records.extend(
            snapshot
                .checkpoints()?
                .into_iter()
                .filter(|(id, _)| !excluded.contains(id)),
        );
    } else {
        let reader = snapshot.checkpoint_reader()?;
        let mut pending: Vec<CheckpointId> = match query.from.is_empty() {
            true => snapshot.current()?.into_iter().collect(),
            false => query.from.clone(),
        };
        while let Some(id) = pending.pop() {
            if records.contains_key(&id) || excluded.contains(&id) {
                continue;
            }
            let record = reader.get(id)?;
            pending.extend(record.parents.iter().copied());
            records.insert(id, record);
        }
    }
    let mut touches = crate::ops::log_query::PathQuery::new(snapshot, &query.paths)?;
    let mut listed: HashSet<CheckpointId> = HashSet::default();
    for (&id, record) in &records {
        if meta_matches(record, &query.meta)
            && crate::ops::log_query::grep_matches(record, query.grep.as_deref())
            && touches.matches(record)?
        {
            listed.insert(id);
        }
    }
    let mut nearest = NearestListed::default();
    let mut graph_parents: HashMap<CheckpointId, Vec<CheckpointId>> =
        HashMap::with_capacity_and_hasher(listed.len(), Default::default());
    for &id in &listed {
        let mut parents = Vec::new();
        // A set, so that a checkpoint with thousands of parents costs no more than
        // thousands of checkpoints.
        let mut seen: HashSet<CheckpointId> = HashSet::default();
        for &p in &records[&id].parents {
            for found in nearest.of(p, &records, &listed) {
                if seen.insert(found) {
                    parents.push(found);
                }
            }
        }
        graph_parents.insert(id, parents);
    }
    let order = graph_order(&listed, &records, &graph_parents);
    let limit = query.limit.unwrap_or(usize::MAX);
    Ok(order
        .into_iter()
        .take(limit)
        .map(|id| LogEntry {
            id,
            record: records
                .remove(&id)
                .expect("listed ids come from the records"),
            graph_parents: graph_parents.remove(&id).unwrap_or_default(),
        })
        .collect())
}

/// The nearest listed checkpoints at or above an unlisted one, remembered per checkpoint
/// so that long filtered-out runs are walked once.
#[derive(Default)]
struct NearestListed {
    memo: HashMap<CheckpointId, Vec<CheckpointId>>,
}

impl NearestListed {
    /// `id` itself if listed, else the nearest listed ancestors through every parent.
    /// Parents missing from `records` (outside the ancestry walked) end the search.
    fn of(
        &mut self,
        id: CheckpointId,
        records: &HashMap<CheckpointId, Checkpoint>,
        listed: &HashSet<CheckpointId>,
    ) -> Vec<CheckpointId> {
        if listed.contains(&id) {
            return vec![id];
        }
        // Iterative post-order, so that a run of thousands of unlisted checkpoints cannot
        // overflow the stack; `entered` stops a cycle (only in a damaged store).
        let mut stack = vec![(id, false)];
        let mut entered = HashSet::default();
        while let Some((node, expanded)) = stack.pop() {
            if listed.contains(&node) || self.memo.contains_key(&node) {
                continue;
            }
            let parents = records.get(&node).map_or(&[][..], |r| r.parents.as_slice());
            if expanded {
                let mut found = Vec::new();
                for &p in parents {
                    let from_parent = if listed.contains(&p) {
                        std::slice::from_ref(&p)
                    } else {
                        self.memo.get(&p).map_or(&[][..], Vec::as_slice)
                    };
                    for f in from_parent {
                        if !found.contains(f) {
                            found.push(*f);
                        }
                    }
                }
                self.memo.insert(node, found);
            } else if entered.insert(node) {
                stack.push((node, true));
                stack.extend(parents.iter().map(|&p| (p, false)));
            }
        }
        self.memo.get(&id).cloned().unwrap_or_default()
    }
}

/// Orders `listed` children-first: tips newest first on a stack, and a parent goes on top
/// of the stack as soon as its last child is out, so each line is listed in one run.
fn graph_order(
    listed: &HashSet<CheckpointId>,
    records: &HashMap<CheckpointId, Checkpoint>,
    graph_parents: &HashMap<CheckpointId, Vec<CheckpointId>>,
) -> Vec<CheckpointId> {
    let mut children: HashMap<CheckpointId, usize> = listed.iter().map(|&id| (id, 0)).collect();
    for parents in graph_parents.values() {
        for p in parents {
            if let Some(n) = children.get_mut(p) {
                *n += 1;
            }
        }
    }
    let newest_last = |ids: &mut Vec<CheckpointId>| {
        ids.sort_by(|a, b| records[a].time_ns.cmp(&records[b].time_ns).then(a.cmp(b)))
    };
    let mut stack: Vec<CheckpointId> = children
        .iter()
        .filter(|(_, &n)| n == 0)
        .map(|(&id, _)| id)
        .collect();
    newest_last(&mut stack);
    let mut out = Vec::with_capacity(listed.len());
    while let Some(id) = stack.pop() {
        out.push(id);
        // Pushed in reverse so that the first parent comes out first.
        for p in graph_parents[&id].iter().rev() {
            if let Some(n) = children.get_mut(p) {
                *n -= 1;
                if *n == 0 {
                    stack.push(*p);
                }
            }
        }
    }
    // A cycle (only in a damaged store) leaves checkpoints that never become ready; list
    // them last rather than hide them.
    if out.len() < listed.len() {
        let placed: HashSet<CheckpointId> = out.iter().copied().collect();
        let mut rest: Vec<CheckpointId> = listed.difference(&placed).copied().collect();
        newest_last(&mut rest);
        out.extend(rest.into_iter().rev());
    }
    out
}
