//! Comparing two trees: the files and symlinks that differ, found by walking both trees
//! together and skipping every pair of subtrees with equal ids without reading them.
//! [`content`] reads what a change holds on each side and [`unified`] groups its line
//! diff into hunks as git does, as typed values the binary lays out and colours.

use std::collections::HashMap;
use std::rc::Rc;

use crate::model::tree::{too_deep, Budget, Entry, Node, Tree, MAX_DEPTH};
use crate::model::{Checkpoint, PendingTrees};
use crate::storage::{ChangeSummary, Snapshot, Transaction, TreeReader};
use crate::{CheckpointId, Result, TreeId};

pub mod content;
pub mod unified;

/// One path whose content differs. `old`/`new` are `None` where the path is absent;
/// neither is ever a `Dir` (a directory that appears or goes shows as its files).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    /// Path relative to the worktree root.
    pub path: Vec<u8>,
    /// The file or symlink on the old side.
    pub old: Option<Node>,
    /// The file or symlink on the new side.
    pub new: Option<Node>,
}

impl Change {
    /// The letter git prints for this change: `A` added, `D` deleted, `T` a file that
    /// became a symlink or back, `M` anything else (content or the executable bit).
    pub fn status(&self) -> char {
        match (&self.old, &self.new) {
            (None, _) => 'A',
            (_, None) => 'D',
            (Some(old), Some(new)) if old.kind_name() != new.kind_name() => 'T',
            _ => 'M',
        }
    }
}

/// The size of a set of changes, from the sizes recorded in the trees (no content is
/// read): how many paths changed, and the bytes by which files grew and shrank.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SizeDelta {
    /// Paths changed.
    pub files: usize,
    /// Sum of the growth of files that grew (a new file grows by its size).
    pub grown: u64,
    /// Sum of the shrinkage of files that shrank (a deleted file by its size).
    pub shrunk: u64,
}

impl From<ChangeSummary> for SizeDelta {
    fn from(summary: ChangeSummary) -> Self {
        let files = summary.added + summary.deleted + summary.modified;
        SizeDelta {
            files: usize::try_from(files).unwrap_or(usize::MAX),
            grown: summary.grown,
            shrunk: summary.shrunk,
        }
    }
}

/// Adds up `changes` as a [`SizeDelta`]; a symlink counts its target's length.
pub fn size_delta(changes: &[Change]) -> SizeDelta {
    summarize(changes).into()
}

/// Counts `changes` by kind and adds up their sizes, as [`size_delta`] does.
pub fn summarize(changes: &[Change]) -> ChangeSummary {
    let size = |node: &Option<Node>| match node {
        Some(Node::File { size, .. } | Node::FileWithMode { size, .. }) => *size,
        Some(Node::Symlink { target }) => target.len() as u64,
        _ => 0,
    };
    let mut summary = ChangeSummary::default();
    for change in changes {
        match (&change.old, &change.new) {
            (None, _) => summary.added += 1,
            (_, None) => summary.deleted += 1,
            _ => summary.modified += 1,
        }
        let (old, new) = (size(&change.old), size(&change.new));
        if new >= old {
            summary.grown += new - old;
        } else {
            summary.shrunk += old - new;
        }
    }
    summary
}

/// What a checkpoint being saved in `txn` (its root `tree`, its new trees in `trees`)
/// changes against its first parent `parent`: the save keeps its summary so that `log`
/// need not diff its trees, and an agent's tool step records the paths from it. Only the
/// subtrees whose ids differ are read, the new ones from memory, so this costs a save
/// little. `None` for a first checkpoint, and for a parent whose trees cannot be read (a
/// damaged store): rather than failing the save, `log` then computes it, and reports the
/// damage.
pub fn parent_changes(
    txn: &Transaction,
    trees: &PendingTrees,
    parent: Option<CheckpointId>,
    tree: TreeId,
) -> Result<Option<Vec<Change>>> {
    let _span = crate::trace::span("commit: changes against the parent");
    // A first checkpoint's diff lists every file, which would hold them all in memory at
    // once on a big first save; `log` makes that one diff itself.
    let Some(parent) = parent else {
        return Ok(None);
    };
    let parent = txn.checkpoint(parent)?;
    // Read through the write transaction itself: a read view opened beside it would
    // keep the store from reusing the pages this transaction frees.
    let reader = txn.trees(Some(trees))?;
    reader.expect(&parent);
    let changes = diff_trees(
        &reader,
        Some(parent.tree),
        Some(tree),
        &PathFilter::default(),
    );
    Ok(changes.ok())
}

/// Which paths an operation covers: everything, or the given files and directories.
#[derive(Clone, Debug, Default)]
pub struct PathFilter {
    paths: Vec<Vec<u8>>,
}

impl PathFilter {
    /// Covers `paths` (root-relative, no trailing `/`; an empty path is the whole
    /// worktree) and everything below them. No paths means everything.
    pub fn new(paths: Vec<Vec<u8>>) -> Self {
        if paths.iter().any(Vec::is_empty) {
            PathFilter::default()
        } else {
            PathFilter { paths }
        }
    }

    /// Whether the filter covers everything.
    pub fn is_everything(&self) -> bool {
        self.paths.is_empty()
    }

    /// Whether `path` is one of the paths or below one.
    pub fn covers(&self, path: &[u8]) -> bool {
        self.is_everything()
            || self
                .paths
                .iter()
                .any(|p| path.starts_with(p) && (path.len() == p.len() || path[p.len()] == b'/'))
    }

    /// Whether anything inside the directory `dir` (ending in `/`) may be covered.
    fn may_cover_below(&self, dir: &[u8]) -> bool {
        self.is_everything()
            || self.paths.iter().any(|p| {
                let within = &dir[..dir.len() - 1];
                p.starts_with(dir) || self.covers(within)
            })
    }
}

/// The root tree of checkpoint `id`, with `reader` told that the tree may expand to no
/// more than the record says ([`TreeReader::expect`]).
pub fn checkpoint_root(
    snapshot: &Snapshot,
    reader: &TreeReader<'_>,
    id: CheckpointId,
) -> Result<TreeId> {
    let record = snapshot.checkpoint(id)?;
    reader.expect(&record);
    Ok(record.tree)
}

/// What `record` changed against its first parent (everything, for a first checkpoint),
/// each side bounded by its record.
pub fn changes_from_parent(
    snapshot: &Snapshot,
    reader: &TreeReader<'_>,
    record: &Checkpoint,
) -> Result<Vec<Change>> {
    changes_from_parent_in(snapshot, reader, record, None)
}

fn changes_from_parent_in(
    snapshot: &Snapshot,
    reader: &TreeReader<'_>,
    record: &Checkpoint,
    memo: Option<&mut TreeMemo>,
) -> Result<Vec<Change>> {
    reader.expect(record);
    let parent = match record.parents.first() {
        Some(&parent) => Some(checkpoint_root(snapshot, reader, parent)?),
        None => None,
    };
    diff_trees_in(
        reader,
        parent,
        Some(record.tree),
        &PathFilter::default(),
        memo,
    )
}

/// Each checkpoint's changes against its first parent, for a run of checkpoints listed
/// children first (as `log` lists them). A checkpoint's parent is usually the next one
/// listed, so the trees one diff reads on its old side are the trees the next reads on
/// its new side: those are kept from one diff to the next and read (and checked) once,
/// which halves the reading of a long line. Only the last diff's trees are kept, so the
/// memory does not grow with the run.
pub struct LineDiffs<'r, 'a> {
    reader: &'r TreeReader<'a>,
    memo: TreeMemo,
}

impl<'r, 'a> LineDiffs<'r, 'a> {
    /// Diffs that read trees through `reader`.
    pub fn new(reader: &'r TreeReader<'a>) -> Self {
        LineDiffs {
            reader,
            memo: TreeMemo::default(),
        }
    }

    /// What `record` changed against its first parent, as [`changes_from_parent`].
    pub fn changes_from_parent(
        &mut self,
        snapshot: &Snapshot,
        record: &Checkpoint,
    ) -> Result<Vec<Change>> {
        self.memo.next_diff();
        changes_from_parent_in(snapshot, self.reader, record, Some(&mut self.memo))
    }
}

/// The trees read by the diff in progress and by the one before it.
#[derive(Default)]
struct TreeMemo {
    previous: HashMap<TreeId, Rc<Tree>>,
    current: HashMap<TreeId, Rc<Tree>>,
}

impl TreeMemo {
    /// Forgets the trees of the diff before the last one.
    fn next_diff(&mut self) {
        self.previous = std::mem::take(&mut self.current);
    }

    /// Tree `id` (checked by `read` when it is not kept), kept for the next diff.
    fn get(&mut self, id: TreeId, read: impl FnOnce() -> Result<Tree>) -> Result<Rc<Tree>> {
        if let Some(tree) = self.current.get(&id) {
            return Ok(tree.clone());
        }
        let tree = match self.previous.get(&id) {
            Some(tree) => tree.clone(),
            None => Rc::new(read()?),
        };
        self.current.insert(id, tree.clone());
        Ok(tree)
    }
}

/// The changes from tree `old` to tree `new` (`None` is an empty tree), sorted by path.
///
/// Bounded: a side whose tree is a checkpoint's root that `reader` knows
/// ([`TreeReader::budget`]) may yield no more files and bytes than that checkpoint
/// records, and the walk stops with an error as soon as one does. Every tree it enters
/// is checked by the reader, and subdirectories must not be empty, so each pair of
/// directories it enters holds at least one change: the work is bounded by the changes
/// and [`MAX_DEPTH`].
pub fn diff_trees(
    reader: &TreeReader<'_>,
    old: Option<TreeId>,
    new: Option<TreeId>,
    filter: &PathFilter,
) -> Result<Vec<Change>> {
    diff_trees_in(reader, old, new, filter, None)
}

fn diff_trees_in(
    reader: &TreeReader<'_>,
    old: Option<TreeId>,
    new: Option<TreeId>,
    filter: &PathFilter,
    memo: Option<&mut TreeMemo>,
) -> Result<Vec<Change>> {
    let budget = |id: Option<TreeId>| -> Result<Option<Budget>> {
        Ok(match id {
            Some(id) => reader.budget(id)?,
            None => None,
        })
    };
    let mut walk = Walk {
        reader,
        memo,
        filter,
        root: new.or(old).unwrap_or_default(),
        old_budget: budget(old)?,
        new_budget: budget(new)?,
        out: Vec::new(),
    };
    if old != new {
        let old = walk.tree(old, false)?;
        let new = walk.tree(new, false)?;
        walk.dirs(&old.entries, &new.entries, b"", 0)?;
    }
    let mut out = walk.out;
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

/// One diff in progress.
struct Walk<'r, 'a> {
    reader: &'r TreeReader<'a>,
    /// Trees kept from the diff before, and for the next.
    memo: Option<&'r mut TreeMemo>,
    filter: &'r PathFilter,
    /// A root, to name in errors.
    root: TreeId,
    old_budget: Option<Budget>,
    new_budget: Option<Budget>,
    out: Vec<Change>,
}

impl Walk<'_, '_> {
    /// Tree `id` (empty for `None`), checked by the reader; a subdirectory's tree must
    /// not be empty, whether it is read now or was kept.
    fn tree(&mut self, id: Option<TreeId>, subtree: bool) -> Result<Rc<Tree>> {
        let Some(id) = id else {
            return Ok(Rc::default());
        };
        let reader = self.reader;
        let read = || match subtree {
            true => reader.get_subtree(id),
            false => reader.get(id),
        };
        match self.memo.as_deref_mut() {
            // A kept tree was checked when read; only the emptiness of a subdirectory
            // depends on where it is met.
            Some(memo) => {
                let tree = memo.get(id, read)?;
                if subtree && tree.entries.is_empty() {
                    return reader.get_subtree(id).map(Rc::new);
                }
                Ok(tree)
            }
            None => read().map(Rc::new),
        }
    }

    /// Compares two directories' entries (both sorted, as the reader checked), which lie
    /// `depth` directories below the roots at `prefix`.
    fn dirs(&mut self, old: &[Entry], new: &[Entry], prefix: &[u8], depth: usize) -> Result<()> {
        if depth > MAX_DEPTH {
            return Err(too_deep(self.root));
        }
        let (mut i, mut j) = (0, 0);
        while i < old.len() || j < new.len() {
            let order = match (old.get(i), new.get(j)) {
                (Some(a), Some(b)) => a.name.cmp(&b.name),
                (Some(_), None) => std::cmp::Ordering::Less,
                _ => std::cmp::Ordering::Greater,
            };
            let (a, b) = match order {
                std::cmp::Ordering::Less => (old.get(i), None),
                std::cmp::Ordering::Greater => (None, new.get(j)),
                std::cmp::Ordering::Equal => (old.get(i), new.get(j)),
            };
            if a.is_some() {
                i += 1;
            }
            if b.is_some() {
                j += 1;
            }
            let name = &a.or(b).expect("one side is present").name;
            let mut path = prefix.to_vec();
            path.extend_from_slice(name);
            self.entry(path, a.map(|e| &e.node), b.map(|e| &e.node), depth)?;
        }
        Ok(())
    }

    fn entry(
        &mut self,
        path: Vec<u8>,
        old: Option<&Node>,
        new: Option<&Node>,
        depth: usize,
    ) -> Result<()> {
        if old == new {
            return Ok(());
        }
        let dir_id = |n: Option<&Node>| match n {
            Some(Node::Dir { tree }) => Some(*tree),
            _ => None,
        };
        let leaf = |n: Option<&Node>| n.filter(|n| !matches!(n, Node::Dir { .. })).cloned();
        let (old_dir, new_dir) = (dir_id(old), dir_id(new));
        if old_dir.is_some() || new_dir.is_some() {
            let mut dir = path.clone();
            dir.push(b'/');
            if self.filter.may_cover_below(&dir) {
                let old = self.tree(old_dir, true)?;
                let new = self.tree(new_dir, true)?;
                self.dirs(&old.entries, &new.entries, &dir, depth + 1)?;
            }
        }
        let (old_leaf, new_leaf) = (leaf(old), leaf(new));
        if (old_leaf.is_some() || new_leaf.is_some()) && self.filter.covers(&path) {
            for (node, budget) in [
                (&old_leaf, &mut self.old_budget),
                (&new_leaf, &mut self.new_budget),
            ] {
                if let (Some(node), Some(budget)) = (node, budget) {
                    budget.take(node)?;
                }
            }
            self.out.push(Change {
                path,
                old: old_leaf,
                new: new_leaf,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{Change, PathFilter};
    use crate::model::tree::Node;
    use crate::ChunkId;

    /// git's letters: a file that becomes a symlink is a type change, a file whose mode
    /// or content changes (whatever record keeps it) is modified.
    #[test]
    fn status_letters_follow_git() {
        let file = Node::file(3, 0o644, vec![ChunkId(1)], true);
        let key = Node::file(3, 0o600, vec![ChunkId(1)], true);
        let link = Node::Symlink {
            target: b"x".to_vec(),
        };
        let change = |old: Option<&Node>, new: Option<&Node>| Change {
            path: b"p".to_vec(),
            old: old.cloned(),
            new: new.cloned(),
        };
        assert_eq!(change(None, Some(&file)).status(), 'A');
        assert_eq!(change(Some(&file), None).status(), 'D');
        assert_eq!(change(Some(&file), Some(&link)).status(), 'T');
        assert_eq!(change(Some(&link), Some(&key)).status(), 'T');
        assert_eq!(change(Some(&file), Some(&key)).status(), 'M');
    }

    #[test]
    fn filter_covers_paths_and_what_is_below_them() {
        let f = PathFilter::new(vec![b"src/a".to_vec()]);
        assert!(f.covers(b"src/a"));
        assert!(f.covers(b"src/a/b"));
        assert!(!f.covers(b"src/ab"));
        assert!(!f.covers(b"src"));
        assert!(f.may_cover_below(b"src/"));
        assert!(f.may_cover_below(b"src/a/"));
        assert!(f.may_cover_below(b"src/a/x/"));
        assert!(!f.may_cover_below(b"lib/"));
        assert!(PathFilter::new(vec![Vec::new()]).covers(b"anything"));
    }
}
