//! The trees the checkpoints reach: each loaded once, checked, its damage spread to the
//! trees above it, and what each expands to added up once.

use std::collections::{HashMap, HashSet};

use redb::ReadableTable;

use super::{describe, Findings};
use crate::format::chunk::Hasher;
use crate::model::tree::{chunk_sum_mismatch, tree_problem, Node, Tree, TreeProblem};
use crate::storage::tree_codec;
use crate::{ChunkId, Error, Result, TreeId};

/// Loads every tree reachable from `roots` once, notes what is wrong with each, then
/// spreads damage up to every tree above it (which also copes with cycles a crafted
/// store could hold), and adds up what each tree expands to, bottom-up, each tree once.
///
/// A tree is damaged when it is missing or does not decode (a delta whose chain is
/// broken included), does not hash to its id, is
/// not encoded the way saves encode trees, has an unsafe, duplicated or out-of-order
/// name, has a file whose chunk list its size does not allow or whose chunks (by the
/// index's lengths, `raw_len`) do not add up to its size, names a missing chunk, or
/// names an empty tree as a subdirectory.
pub(super) fn check_trees(
    table: &impl ReadableTable<u128, &'static [u8]>,
    hasher: &Hasher,
    roots: impl Iterator<Item = TreeId>,
    chunk_ok: &mut impl FnMut(ChunkId, &mut Findings) -> bool,
    raw_len: &impl Fn(ChunkId) -> Option<u64>,
    findings: &mut Findings,
) -> Result<TreeWalk> {
    let mut walk = Walk::default();
    let roots: Vec<TreeId> = roots.collect();
    let mut stack = roots.clone();
    while let Some(id) = stack.pop() {
        if !walk.seen.insert(id) {
            continue;
        }
        let Some(tree) = walk.load(table, hasher, id, findings)? else {
            continue;
        };
        let names_ok = names_ok(&tree, hasher, id, findings);
        let entries_ok = walk.add_entries(id, tree, &mut stack, chunk_ok, raw_len, findings);
        if !(names_ok && entries_ok) {
            walk.damaged_here.push(id);
        }
    }
    walk.check_empty_dirs(findings);
    walk.check_bases(table, hasher, findings)?;
    let damaged = walk.spread_damage();
    let mut unreachable = 0;
    let mut unreachable_bytes = 0;
    for item in table.iter()? {
        let (id, value) = item?;
        if !walk.seen.contains(&TreeId(id.value())) {
            unreachable += 1;
            unreachable_bytes += value.value().len() as u64;
        }
    }
    Ok(TreeWalk {
        reached: walk.seen.len(),
        unreachable,
        unreachable_bytes,
        damaged,
        chunks: walk.chunks,
        expansions: expansions(&walk.summaries, &roots),
    })
}

/// What [`check_trees`] gathers while it walks.
#[derive(Default)]
struct Walk {
    /// The trees that name each tree as a subdirectory.
    parents_of: HashMap<TreeId, Vec<TreeId>>,
    /// Trees loaded (reached ones and their delta bases).
    seen: HashSet<TreeId>,
    /// Trees found damaged themselves, before damage is spread up.
    damaged_here: Vec<TreeId>,
    /// Chunks the reached trees name.
    chunks: HashSet<ChunkId>,
    /// Each reached tree's own part of its expansion.
    summaries: HashMap<TreeId, TreeSummary>,
    /// Subdirectory entries (parent, name, tree), to find empty trees named as one.
    dir_entries: Vec<(TreeId, Vec<u8>, TreeId)>,
    /// Trees that reached trees are stored as deltas of: needed, and checked, but not
    /// walked (what is below them is needed only where a checkpoint reaches it).
    bases: Vec<TreeId>,
}

impl Walk {
    /// Loads reached tree `id`; `None` when it is missing or does not decode (which is
    /// noted), the tree otherwise, with any problem of its record noted.
    fn load(
        &mut self,
        table: &impl ReadableTable<u128, &'static [u8]>,
        hasher: &Hasher,
        id: TreeId,
        findings: &mut Findings,
    ) -> Result<Option<Tree>> {
        let object = format!("tree {id}");
        match tree_codec::load(table, id, Some(hasher)) {
            Ok(None) => {
                findings.add(object, "missing");
                self.damaged_here.push(id);
                Ok(None)
            }
            Ok(Some(loaded)) => {
                if let Some(problem) = loaded.problem {
                    findings.add(object, problem);
                    self.damaged_here.push(id);
                }
                self.bases.extend(loaded.chain);
                Ok(Some(loaded.tree))
            }
            Err(e @ Error::Corrupt(_)) => {
                findings.add(object, describe(e));
                self.damaged_here.push(id);
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Notes tree `id`'s entries: its files' chunks (each checked with `chunk_ok`, their
    /// sum against the file's size) and its subdirectories (pushed on `stack`). Whether
    /// they are sound.
    fn add_entries(
        &mut self,
        id: TreeId,
        tree: Tree,
        stack: &mut Vec<TreeId>,
        chunk_ok: &mut impl FnMut(ChunkId, &mut Findings) -> bool,
        raw_len: &impl Fn(ChunkId) -> Option<u64>,
        findings: &mut Findings,
    ) -> bool {
        let mut ok = true;
        let mut summary = TreeSummary {
            empty: tree.entries.is_empty(),
            ..TreeSummary::default()
        };
        for entry in tree.entries {
            match entry.node {
                Node::File {
                    size, chunks: ids, ..
                }
                | Node::FileWithMode {
                    size, chunks: ids, ..
                } => {
                    summary.files += 1;
                    summary.bytes = summary.bytes.saturating_add(size);
                    if let Some(sum) = chunk_sum_mismatch(size, &ids, raw_len) {
                        findings.add(
                            format!("tree {id}"),
                            format!(
                                "has file {:?} of size {size} whose chunks hold {sum} bytes",
                                String::from_utf8_lossy(&entry.name)
                            ),
                        );
                        ok = false;
                    }
                    for c in ids {
                        ok &= chunk_ok(c, findings);
                        self.chunks.insert(c);
                    }
                }
                Node::Dir { tree } => {
                    self.parents_of.entry(tree).or_default().push(id);
                    stack.push(tree);
                    summary.dirs.push(tree);
                    self.dir_entries.push((id, entry.name, tree));
                }
                Node::Symlink { .. } => summary.files += 1,
            }
        }
        self.summaries.insert(id, summary);
        ok
    }

    /// A tree that names an empty tree as a subdirectory is damaged: saves never record
    /// one.
    fn check_empty_dirs(&mut self, findings: &mut Findings) {
        for (parent, name, tree) in std::mem::take(&mut self.dir_entries) {
            if self.summaries.get(&tree).is_some_and(|s| s.empty) {
                findings.add(
                    format!("tree {parent}"),
                    format!(
                        "names the empty tree {tree} as directory {:?} (saves never record one)",
                        String::from_utf8_lossy(&name)
                    ),
                );
                self.damaged_here.push(parent);
            }
        }
    }

    /// Checks the delta bases of the reached trees not reached themselves. A base that is
    /// missing or damaged is already its dependants' damage (their chain reads it); its
    /// own check names it too.
    fn check_bases(
        &mut self,
        table: &impl ReadableTable<u128, &'static [u8]>,
        hasher: &Hasher,
        findings: &mut Findings,
    ) -> Result<()> {
        while let Some(id) = self.bases.pop() {
            if !self.seen.insert(id) {
                continue;
            }
            match tree_codec::load(table, id, Some(hasher)) {
                Ok(None) => findings.add(format!("tree {id}"), "missing"),
                Ok(Some(loaded)) => {
                    if let Some(problem) = loaded.problem {
                        findings.add(format!("tree {id}"), problem);
                    }
                }
                Err(e @ Error::Corrupt(_)) => findings.add(format!("tree {id}"), describe(e)),
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    /// Every tree that is damaged or has damage below it.
    fn spread_damage(&mut self) -> HashSet<TreeId> {
        let mut damaged: HashSet<TreeId> = HashSet::new();
        while let Some(id) = self.damaged_here.pop() {
            if damaged.insert(id) {
                self.damaged_here
                    .extend(self.parents_of.get(&id).into_iter().flatten());
            }
        }
        damaged
    }
}

/// Whether tree `id`'s names are safe and in the order saves write them (and the rest of
/// [`tree_problem`]'s checks); notes the problem if not.
fn names_ok(tree: &Tree, hasher: &Hasher, id: TreeId, findings: &mut Findings) -> bool {
    match tree_problem(tree, &hasher.params()) {
        Some(TreeProblem::Unsafe(name)) => {
            findings.add(
                format!("tree {id}"),
                format!("holds the unsafe name {:?}", String::from_utf8_lossy(&name)),
            );
            false
        }
        Some(TreeProblem::Other(problem)) => {
            findings.add(format!("tree {id}"), problem);
            false
        }
        None => true,
    }
}

/// What the tree walk found.
pub(super) struct TreeWalk {
    /// Trees reached.
    pub(super) reached: usize,
    /// Trees in the table that nothing reaches.
    pub(super) unreachable: usize,
    /// Their stored bytes.
    pub(super) unreachable_bytes: u64,
    /// Trees that are damaged or have damage below them.
    pub(super) damaged: HashSet<TreeId>,
    /// Chunks the reached trees name.
    pub(super) chunks: HashSet<ChunkId>,
    /// What each reached tree expands to, once for all.
    pub(super) expansions: HashMap<TreeId, Expansion>,
}

impl TreeWalk {
    /// What tree `id` expands to (nothing, if it could not be read).
    pub(super) fn expansion(&self, id: TreeId) -> Expansion {
        self.expansions.get(&id).copied().unwrap_or_default()
    }
}

/// What a tree expands to: files and symlinks, bytes of files, and the most directories
/// nested below it. Saturating: a crafted store can make these astronomical.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Expansion {
    pub(super) files: u64,
    pub(super) bytes: u64,
    pub(super) height: usize,
}

impl Expansion {
    /// A tree on a cycle (which only a tree stored under a key not its hash can make):
    /// it expands without end.
    const ENDLESS: Expansion = Expansion {
        files: u64::MAX,
        bytes: u64::MAX,
        height: usize::MAX,
    };
}

/// One reached tree's own part of its expansion, and its subdirectories.
#[derive(Default)]
struct TreeSummary {
    files: u64,
    bytes: u64,
    /// Subdirectory trees, once per entry naming them.
    dirs: Vec<TreeId>,
    empty: bool,
}

/// What each tree under `roots` expands to, from the trees' own parts: a depth-first
/// walk that finishes each tree after its subdirectories, each tree once, so that trees
/// shared at every level cost no more than the trees themselves. A tree that could not
/// be read counts as empty; a cycle as endless.
fn expansions(
    summaries: &HashMap<TreeId, TreeSummary>,
    roots: &[TreeId],
) -> HashMap<TreeId, Expansion> {
    let mut done: HashMap<TreeId, Expansion> = HashMap::new();
    // Trees whose subdirectories are being walked: one met again is on a cycle.
    let mut open: HashSet<TreeId> = HashSet::new();
    let mut stack: Vec<(TreeId, bool)> = roots.iter().map(|&id| (id, false)).collect();
    while let Some((id, children_done)) = stack.pop() {
        if done.contains_key(&id) {
            continue;
        }
        let Some(summary) = summaries.get(&id) else {
            done.insert(id, Expansion::default());
            continue;
        };
        if !children_done {
            if open.insert(id) {
                stack.push((id, true));
                stack.extend(summary.dirs.iter().map(|&d| (d, false)));
            }
            continue;
        }
        let mut total = Expansion {
            files: summary.files,
            bytes: summary.bytes,
            height: 0,
        };
        for dir in &summary.dirs {
            // Every subdirectory was finished before this tree, unless it is on a cycle.
            let below = done.get(dir).copied().unwrap_or(Expansion::ENDLESS);
            total.files = total.files.saturating_add(below.files);
            total.bytes = total.bytes.saturating_add(below.bytes);
            total.height = total.height.max(below.height.saturating_add(1));
        }
        open.remove(&id);
        done.insert(id, total);
    }
    done
}
