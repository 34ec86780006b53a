//! [`log`](crate::ops::log::log)'s order read a page at a time: the newest checkpoints
//! first, each page reading only the records it needs, with no transaction held between
//! pages. `browse` opens on a long history this way, and `log -n N` lists its first N
//! checkpoints this way.
//!
//! The order is `log`'s graph order: a stack of checkpoints ready to list (every child
//! listed), the tips newest on top, and a parent put on top as soon as its last child is
//! out. Eagerly that needs every record, to know every checkpoint's children; here the
//! records are read from the tips down, newest first (a heap of the checkpoints read but
//! whose parents are not), and a checkpoint is listed only once every checkpoint at
//! least as new as it has had its parents read. A child is saved after its parent, so
//! by then all of its children are known, and the walk lists exactly what `log` lists,
//! in the same order. Where an imported history breaks that (a child older than its
//! parent, another machine's clock) the child is listed after its parent, and the edge
//! to the parent listed above it is left out of `graph_parents`.
//!
//! [`LogWalk::all`] walks from every branch, fetched branch, pin, HEAD and an
//! interrupted restore's target, which reach every checkpoint but those left behind by
//! a deleted branch; once that walk is over, those are read in one go (the whole store)
//! and listed after the rest, in graph order among themselves.

use std::collections::BinaryHeap;

use crate::model::Checkpoint;
use crate::ops::log_entry::{HashMap, HashSet, LogEntry};
use crate::storage::{CheckpointReader, Snapshot};
use crate::{CheckpointId, Result};

/// A checkpoint whose record the walk has read.
struct Node {
    time_ns: i128,
    /// Its parents the store has, each once.
    parents: Vec<CheckpointId>,
    /// How many of its children are read, expanded and not yet listed.
    children_left: usize,
    /// Its record, until it is listed.
    record: Option<Checkpoint>,
    /// Whether its parents have been read.
    expanded: bool,
    /// Whether it has been listed.
    listed: bool,
}

/// A walk in `log`'s order that lists checkpoints a page at a time ([`LogWalk::next_page`]).
/// It keeps what it has read between pages, not the store: each page is read through a
/// snapshot the caller opens for it.
pub struct LogWalk {
    nodes: HashMap<CheckpointId, Node>,
    /// Read but not expanded, newest on top.
    unexpanded: BinaryHeap<(i128, CheckpointId)>,
    /// Ready to list (every known child listed), the next on top; may hold a checkpoint
    /// twice, or one since found to have a child: both are skipped when they come up.
    ready: Vec<CheckpointId>,
    /// Whether to list the checkpoints the tips do not reach, once the rest is out.
    rest: bool,
    /// Whether a checkpoint the store does not have is skipped (a walk over every
    /// checkpoint) rather than an error.
    skip_missing: bool,
    /// How many have been listed.
    listed: usize,
    done: bool,
}

impl LogWalk {
    /// A walk from `tips` through every parent: what `log` lists from them (with
    /// `from`, or from the current checkpoint).
    /// A missing checkpoint is [`crate::Error::Corrupt`], as it is to `log`.
    pub fn from(snapshot: &Snapshot, tips: &[CheckpointId]) -> Result<LogWalk> {
        LogWalk::start(snapshot, tips, false)
    }

    fn start(snapshot: &Snapshot, tips: &[CheckpointId], all: bool) -> Result<LogWalk> {
        let mut walk = LogWalk {
            nodes: HashMap::default(),
            unexpanded: BinaryHeap::new(),
            ready: Vec::new(),
            rest: all,
            skip_missing: all,
            listed: 0,
            done: false,
        };
        let reader = snapshot.checkpoint_reader()?;
        for &tip in tips {
            walk.read(&reader, tip)?;
        }
        let mut ready: Vec<CheckpointId> = walk.nodes.keys().copied().collect();
        walk.sort_newest_last(&mut ready);
        walk.ready = ready;
        Ok(walk)
    }

    /// A walk over every checkpoint, as `log --all` lists them (see the module's note on
    /// checkpoints no branch reaches).
    pub fn all(snapshot: &Snapshot) -> Result<LogWalk> {
        let mut tips: Vec<CheckpointId> = snapshot
            .branches_and_fetched()?
            .into_iter()
            .map(|(_, id)| id)
            .collect();
        tips.extend(snapshot.current()?);
        tips.extend(snapshot.pins()?);
        tips.extend(snapshot.interrupted_restore()?);
        LogWalk::start(snapshot, &tips, true)
    }

    /// Whether every checkpoint has been listed.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// How many checkpoints have been listed so far.
    pub fn listed(&self) -> usize {
        self.listed
    }

    /// The next `n` checkpoints (fewer at the end), read through `snapshot`. The store
    /// may have changed since the last page: checkpoints added since are not listed
    /// (start a new walk to see them), and parents removed since are left out.
    pub fn next_page(&mut self, snapshot: &Snapshot, n: usize) -> Result<Vec<LogEntry>> {
        let reader = snapshot.checkpoint_reader()?;
        let mut out = Vec::new();
        while out.len() < n && !self.done {
            let Some(&top) = self.ready.last() else {
                self.refill(snapshot, &reader)?;
                continue;
            };
            if self.nodes[&top].listed {
                self.ready.pop();
                continue;
            }
            // Every checkpoint as new as `top` has its parents read: `top`'s children
            // are all known.
            let time = self.nodes[&top].time_ns;
            while self.unexpanded.peek().is_some_and(|&(t, _)| t >= time) {
                let (_, id) = self.unexpanded.pop().expect("peeked");
                self.expand(&reader, id)?;
            }
            self.ready.pop();
            if self.nodes[&top].children_left > 0 {
                // A child it was not known to have: it comes back when that one is out.
                continue;
            }
            out.push(self.list(top));
        }
        Ok(out)
    }

    /// Reads `id`'s record, once; a checkpoint the store no longer has is skipped.
    fn read(&mut self, reader: &CheckpointReader, id: CheckpointId) -> Result<bool> {
        if self.nodes.contains_key(&id) {
            return Ok(true);
        }
        // `log --all` lists what the store has; a walk from given tips reads each
        // parent, and a missing one is damage.
        let record = match self.skip_missing {
            true => match reader.find(id)? {
                Some(record) => record,
                None => return Ok(false),
            },
            false => reader.get(id)?,
        };
        self.unexpanded.push((record.time_ns, id));
        self.nodes.insert(
            id,
            Node {
                time_ns: record.time_ns,
                parents: Vec::new(),
                children_left: 0,
                record: Some(record),
                expanded: false,
                listed: false,
            },
        );
        Ok(true)
    }

    /// Reads `id`'s parents and counts `id` as a child of each.
    fn expand(&mut self, reader: &CheckpointReader, id: CheckpointId) -> Result<()> {
        let node = &self.nodes[&id];
        if node.expanded {
            return Ok(());
        }
        let wanted = node
            .record
            .as_ref()
            .map(|r| r.parents.clone())
            .unwrap_or_default();
        let mut parents = Vec::new();
        for p in wanted {
            if !parents.contains(&p) && self.read(reader, p)? {
                parents.push(p);
            }
        }
        for p in &parents {
            let parent = self.nodes.get_mut(p).expect("read above");
            if !parent.listed {
                parent.children_left += 1;
            }
        }
        let node = self.nodes.get_mut(&id).expect("read");
        node.parents = parents;
        node.expanded = true;
        Ok(())
    }

    /// Lists `id`: its parents each lose a child, and those left with none are ready,
    /// the first parent on top.
    fn list(&mut self, id: CheckpointId) -> LogEntry {
        let node = self.nodes.get_mut(&id).expect("ready ids are read");
        node.listed = true;
        let record = node.record.take().expect("listed once");
        let parents = node.parents.clone();
        let mut graph_parents = Vec::with_capacity(parents.len());
        for &p in &parents {
            let parent = self.nodes.get_mut(&p).expect("parents are read");
            // Listed already only where a child is older than its parent.
            if !parent.listed {
                graph_parents.push(p);
            }
        }
        for &p in graph_parents.iter().rev() {
            let parent = self.nodes.get_mut(&p).expect("parents are read");
            parent.children_left = parent.children_left.saturating_sub(1);
            if parent.children_left == 0 {
                self.ready.push(p);
            }
        }
        self.listed += 1;
        LogEntry {
            id,
            record,
            graph_parents,
        }
    }

    /// Nothing is ready: whatever is left unexpanded is expanded; read checkpoints never
    /// made ready (a parent cycle, only in a damaged store) are listed newest first, as
    /// `log` lists them; then, for [`LogWalk::all`], the checkpoints the tips do not reach.
    fn refill(&mut self, snapshot: &Snapshot, reader: &CheckpointReader) -> Result<()> {
        if let Some((_, id)) = self.unexpanded.pop() {
            return self.expand(reader, id);
        }
        let mut stuck: Vec<CheckpointId> = self
            .nodes
            .iter()
            .filter(|(_, n)| !n.listed)
            .map(|(&id, _)| id)
            .collect();
        if !stuck.is_empty() {
            for id in &stuck {
                self.nodes.get_mut(id).expect("listed above").children_left = 0;
            }
            self.sort_newest_last(&mut stuck);
            self.ready = stuck;
            return Ok(());
        }
        if !std::mem::take(&mut self.rest) {
            self.done = true;
            return Ok(());
        }
        // The rest of the store, walked as the tips' were: each with its children
        // among the rest counted, those with none ready, newest on top.
        let rest: Vec<(CheckpointId, Checkpoint)> = snapshot
            .checkpoints()?
            .into_iter()
            .filter(|(id, _)| !self.nodes.contains_key(id))
            .collect();
        let ids: HashSet<CheckpointId> = rest.iter().map(|(id, _)| *id).collect();
        for (id, record) in rest {
            let mut parents = Vec::new();
            for &p in &record.parents {
                if ids.contains(&p) && !parents.contains(&p) {
                    parents.push(p);
                }
            }
            self.nodes.insert(
                id,
                Node {
                    time_ns: record.time_ns,
                    parents,
                    children_left: 0,
                    record: Some(record),
                    expanded: true,
                    listed: false,
                },
            );
        }
        let mut counts: HashMap<CheckpointId, usize> = HashMap::default();
        for id in &ids {
            for p in &self.nodes[id].parents {
                *counts.entry(*p).or_default() += 1;
            }
        }
        let mut tips = Vec::new();
        for id in &ids {
            let n = counts.get(id).copied().unwrap_or(0);
            self.nodes
                .get_mut(id)
                .expect("inserted above")
                .children_left = n;
            if n == 0 {
                tips.push(*id);
            }
        }
        self.sort_newest_last(&mut tips);
        self.ready = tips;
        Ok(())
    }

    fn sort_newest_last(&self, ids: &mut [CheckpointId]) {
        ids.sort_by(|a, b| {
            self.nodes[a]
                .time_ns
                .cmp(&self.nodes[b].time_ns)
                .then(a.cmp(b))
        });
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::model::branch::BranchName;
    use crate::ops::log::{log, LogQuery};
    use crate::storage::{Store, StoreRead};
    use crate::TreeId;

    /// A small deterministic generator (xorshift), so that a failing case repeats.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % n as u64) as usize
        }
    }

    /// A store of `n` checkpoints made by `seed`: lines that fork off (one save in
    /// `fork_one_in` starts a line off a recent checkpoint) and merge back (one in
    /// `merge_one_in` has a second parent anywhere before it)
    /// (children never older than parents, some at the same nanosecond), each tip a
    /// branch except, with `orphans`, a few left as a deleted branch leaves them; a pin.
    fn store(
        dir: &std::path::Path,
        seed: u64,
        n: usize,
        orphans: bool,
        fork_one_in: usize,
        merge_one_in: usize,
    ) -> Store {
        let store = Store::open(&dir.join("store.redb"), Duration::from_secs(5), &mut || {})
            .expect("store");
        let mut rng = Rng(seed);
        let txn = store.transaction().unwrap();
        let mut ids: Vec<CheckpointId> = Vec::new();
        let mut has_child = vec![false; n];
        for i in 0..n {
            let mut parents = Vec::new();
            if i > 0 && rng.below(20) != 0 {
                // Mostly the newest, often a recent one (a fork), now and then two (a merge).
                let back = match rng.below(fork_one_in) {
                    0 => rng.below(i.min(30)) + 1,
                    _ => 1,
                };
                parents.push(i - back);
                if merge_one_in > 0 && rng.below(merge_one_in) == 0 {
                    parents.push(rng.below(i));
                }
            }
            for &p in &parents {
                has_child[p] = true;
            }
            let mut record = Checkpoint {
                tree: TreeId(i as u128),
                parents: parents.iter().map(|&p| ids[p]).collect(),
                time_ns: (i / 2) as i128 * 1000,
                message: format!("step {i}"),
                ..Checkpoint::default()
            };
            ids.push(txn.add_checkpoint(&mut record).unwrap());
        }
        let mut branches = 0;
        for i in 0..n {
            if has_child[i] || (orphans && rng.below(3) == 0 && i + 1 != n) {
                continue;
            }
            let name = BranchName::new(&format!("line-{branches}")).unwrap();
            txn.create_branch(&name, ids[i]).unwrap();
            branches += 1;
        }
        txn.set_head(&crate::model::Head::Branch("line-0".into()))
            .unwrap();
        txn.set_pinned(ids[n / 3], true).unwrap();
        txn.commit().unwrap();
        store
    }

    fn paged(store: &Store, page: usize, all: bool) -> Vec<LogEntry> {
        let read = store.snapshot().unwrap();
        let mut walk = match all {
            true => LogWalk::all(&read).unwrap(),
            false => LogWalk::from(
                &read,
                &read.current().unwrap().into_iter().collect::<Vec<_>>(),
            )
            .unwrap(),
        };
        drop(read);
        let mut out = Vec::new();
        while !walk.is_done() {
            // A snapshot of its own for each page, as browse reads them.
            let read = store.snapshot().unwrap();
            let next = walk.next_page(&read, page).unwrap();
            assert!(next.len() <= page);
            out.extend(next);
        }
        assert_eq!(walk.listed(), out.len());
        out
    }

    fn ids(entries: &[LogEntry]) -> Vec<(CheckpointId, Vec<CheckpointId>)> {
        entries
            .iter()
            .map(|e| (e.id, e.graph_parents.clone()))
            .collect()
    }

    #[test]
    fn pages_list_what_log_lists_in_its_order() {
        for seed in 1..=12u64 {
            let dir = tempfile::tempdir().unwrap();
            let store = store(dir.path(), seed, 300, false, 4, 10);
            let read = store.snapshot().unwrap();
            let all = log(
                &read,
                &LogQuery {
                    all: true,
                    ..LogQuery::default()
                },
            )
            .unwrap();
            let line = log(&read, &LogQuery::default()).unwrap();
            drop(read);
            for page in [1, 7, 1000] {
                assert_eq!(
                    ids(&paged(&store, page, true)),
                    ids(&all),
                    "seed {seed}, page {page}"
                );
                assert_eq!(
                    ids(&paged(&store, page, false)),
                    ids(&line),
                    "seed {seed}, page {page}"
                );
            }
            // `log -n` goes through the walk: the first N of the whole list.
            let read = store.snapshot().unwrap();
            let limited = log(
                &read,
                &LogQuery {
                    limit: Some(25),
                    ..LogQuery::default()
                },
            )
            .unwrap();
            assert_eq!(ids(&limited), ids(&line[..25.min(line.len())]));
        }
    }

    #[test]
    fn a_first_page_reads_only_the_newest_records() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path(), 7, 2000, false, 200, 0);
        let read = store.snapshot().unwrap();
        let mut walk = LogWalk::all(&read).unwrap();
        let page = walk.next_page(&read, 20).unwrap();
        assert_eq!(page.len(), 20);
        assert!(
            walk.nodes.len() < 200,
            "read {} records for 20 rows",
            walk.nodes.len()
        );
    }

    #[test]
    fn a_parent_cycle_is_listed_once_without_looping() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path(), 3, 40, false, 1000, 0);
        let read = store.snapshot().unwrap();
        let line: Vec<CheckpointId> = log(&read, &LogQuery::default())
            .unwrap()
            .iter()
            .map(|e| e.id)
            .collect();
        drop(read);
        // A damaged store: an old checkpoint's parent is a newer one.
        let txn = store.transaction().unwrap();
        let n = line.len();
        assert!(n > 4, "{n}");
        txn.set_parents(line[n - 1], vec![line[n / 2]]).unwrap();
        txn.commit().unwrap();
        for all in [true, false] {
            let walked = paged(&store, 4, all);
            let mut ids: Vec<CheckpointId> = walked.iter().map(|e| e.id).collect();
            ids.sort();
            ids.dedup();
            assert_eq!(ids.len(), walked.len());
        }
    }

    #[test]
    fn checkpoints_no_tip_reaches_come_last_each_once() {
        for seed in 1..=6u64 {
            let dir = tempfile::tempdir().unwrap();
            let store = store(dir.path(), seed, 200, true, 4, 10);
            let read = store.snapshot().unwrap();
            let all = log(
                &read,
                &LogQuery {
                    all: true,
                    ..LogQuery::default()
                },
            )
            .unwrap();
            drop(read);
            let walked = paged(&store, 9, true);
            let mut a: Vec<CheckpointId> = all.iter().map(|e| e.id).collect();
            let mut b: Vec<CheckpointId> = walked.iter().map(|e| e.id).collect();
            a.sort();
            b.sort();
            assert_eq!(a, b, "seed {seed}");
            // Every listed parent is listed below its child.
            let at: HashMap<CheckpointId, usize> =
                walked.iter().enumerate().map(|(i, e)| (e.id, i)).collect();
            for (i, e) in walked.iter().enumerate() {
                assert!(e.graph_parents.iter().all(|p| at[p] > i), "seed {seed}");
            }
        }
    }
}
