//! What checkpoints reach: the trees and chunks under their roots. Every tree is decoded
//! once into its links (subtrees and chunks), so that gc can mark from several sets of
//! roots (one per size budget it tries) and stats can tell which bytes each checkpoint
//! alone holds, all without reading a byte of chunk data.

use std::collections::{HashMap, HashSet};

use redb::ReadableTable;

use super::tree_codec;
use crate::model::tree::{names_problem, Node};
use crate::model::Checkpoint;
use crate::{ChunkId, Error, Result, TreeId};

/// What one tree points at.
#[derive(Clone, Debug, Default)]
struct Links {
    trees: Vec<TreeId>,
    chunks: Vec<ChunkId>,
}

/// The trees under a set of checkpoints, as links, loaded once.
pub struct Graph {
    links: HashMap<TreeId, Links>,
    /// For each tree stored as a delta, the trees its chain reads (docs/design.md
    /// invariant 22): they stay while it does, though nothing below them need.
    chains: HashMap<TreeId, Vec<TreeId>>,
}

/// Everything a set of checkpoints reaches.
#[derive(Debug, Default)]
pub struct Marked {
    /// Reachable trees.
    pub trees: HashSet<TreeId>,
    /// Reachable chunks, attachments included.
    pub chunks: HashSet<ChunkId>,
}

impl Marked {
    /// The stored bytes of what is marked, by the sizes in `trees` and `chunks`.
    pub fn stored_bytes(
        &self,
        trees: &HashMap<TreeId, u64>,
        chunks: &HashMap<ChunkId, u64>,
    ) -> u64 {
        sum_sizes(&self.trees, trees) + sum_sizes(&self.chunks, chunks)
    }
    /// Marks the delta bases of the marked chunks, down their chains (`bases`: each
    /// delta's base, `pack::delta_bases`): a kept chunk stored as a delta cannot
    /// be read without them (docs/design.md invariant 18), so they are live, not garbage.
    pub fn add_chunk_bases(&mut self, bases: &HashMap<ChunkId, ChunkId>) {
        add_bases(&mut self.chunks, bases);
    }
}

/// Adds to `chunks` the delta bases (`bases`: each delta's base) of the chunks in it,
/// down their chains.
pub fn add_bases(chunks: &mut HashSet<ChunkId>, bases: &HashMap<ChunkId, ChunkId>) {
    let mut stack: Vec<ChunkId> = chunks
        .iter()
        .filter_map(|id| bases.get(id))
        .copied()
        .collect();
    while let Some(base) = stack.pop() {
        if chunks.insert(base) {
            stack.extend(bases.get(&base));
        }
    }
}

/// Of `candidates`, chunks that nothing `marked` needs, what a sweep removes: with the
/// bases they were stored against that nothing marked needs either, down each chain (a
/// base that a kept delta needed when its own checkpoint went stays behind, and has to
/// go with the last delta that needed it, or it is never found again by a sweep that
/// looks only below what it removes), and less every base that a chunk staying needs
/// (one that no checkpoint names, which an interrupted save leaves): the exact list of
/// what leaves the index, so that what gc reports is what it deletes.
pub fn sweepable(
    candidates: Vec<ChunkId>,
    marked: &Marked,
    bases: &HashMap<ChunkId, ChunkId>,
) -> Vec<ChunkId> {
    let mut going: HashSet<ChunkId> = candidates.into_iter().collect();
    let mut stack: Vec<ChunkId> = going.iter().copied().collect();
    while let Some(id) = stack.pop() {
        if let Some(&base) = bases.get(&id) {
            if !marked.chunks.contains(&base) && going.insert(base) {
                stack.push(base);
            }
        }
    }
    let mut needed: Vec<ChunkId> = bases
        .iter()
        .filter(|(delta, _)| !going.contains(delta))
        .map(|(_, base)| *base)
        .collect();
    while let Some(base) = needed.pop() {
        if going.remove(&base) {
            needed.extend(bases.get(&base));
        }
    }
    let mut out: Vec<ChunkId> = going.into_iter().collect();
    out.sort_unstable();
    out
}

fn sum_sizes<K: std::hash::Hash + Eq>(ids: &HashSet<K>, sizes: &HashMap<K, u64>) -> u64 {
    ids.iter().filter_map(|id| sizes.get(id)).sum()
}

/// The objects that one checkpoint reaches and no other checkpoint of the set does.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Exclusive {
    /// Trees only it reaches.
    pub trees: Vec<TreeId>,
    /// Chunks only it reaches.
    pub chunks: Vec<ChunkId>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Owner {
    One(usize),
    Shared,
}

impl Graph {
    /// Loads every tree reachable from `roots`, each once. A missing or undecodable tree
    /// is an error: deciding what to delete from a damaged store is not safe; so is one
    /// whose names are unsafe, duplicated or out of order ([`names_problem`]). (Ids and
    /// chunk lists need the store's hasher, which the callers do not pass; nothing here
    /// expands a tree, so neither can make this walk grow.)
    pub(in crate::storage) fn load(
        table: &impl ReadableTable<u128, &'static [u8]>,
        roots: impl IntoIterator<Item = TreeId>,
    ) -> Result<Graph> {
        let mut links: HashMap<TreeId, Links> = HashMap::new();
        let mut chains = HashMap::new();
        let mut stack: Vec<TreeId> = roots.into_iter().collect();
        while let Some(id) = stack.pop() {
            if links.contains_key(&id) {
                continue;
            }
            let (tree, chain) = match tree_codec::load(table, id, None)? {
                Some(loaded) => (loaded.tree, loaded.chain),
                None => return Err(Error::Corrupt(format!("tree {id} is missing"))),
            };
            if !chain.is_empty() {
                chains.insert(id, chain);
            }
            if let Some(problem) = names_problem(&tree) {
                return Err(problem.into_error(id));
            }
            let mut link = Links::default();
            for entry in tree.entries {
                match entry.node {
                    Node::Dir { tree } => {
                        link.trees.push(tree);
                        stack.push(tree);
                    }
                    Node::File { chunks, .. } | Node::FileWithMode { chunks, .. } => {
                        link.chunks.extend(chunks)
                    }
                    Node::Symlink { .. } => {}
                }
            }
            links.insert(id, link);
        }
        Ok(Graph { links, chains })
    }

    /// Marks what `checkpoints` reach, visiting each shared tree once.
    pub fn mark<'a>(&self, checkpoints: impl IntoIterator<Item = &'a Checkpoint>) -> Marked {
        let mut marked = Marked::default();
        let mut stack = Vec::new();
        for checkpoint in checkpoints {
            stack.push(checkpoint.tree);
            for attachment in &checkpoint.attachments {
                marked.chunks.extend(&attachment.chunks);
            }
            while let Some(id) = stack.pop() {
                if !marked.trees.insert(id) {
                    continue;
                }
                if let Some(link) = self.links.get(&id) {
                    marked.chunks.extend(&link.chunks);
                    stack.extend(&link.trees);
                }
            }
        }
        // Only the records of delta bases: what is below them is not needed through them.
        let bases: Vec<TreeId> = marked
            .trees
            .iter()
            .filter_map(|id| self.chains.get(id))
            .flatten()
            .copied()
            .collect();
        marked.trees.extend(bases);
        marked
    }

    /// For each checkpoint of `checkpoints`, in order, the trees and chunks no other one
    /// of them reaches: what removing it alone would free.
    ///
    /// One pass: an object belongs to the first checkpoint that reaches it until a second
    /// one does, which makes it shared, and a shared tree shares everything below it.
    /// Each tree changes owner at most twice, so the work is linear in the graph.
    pub fn exclusive(&self, checkpoints: &[&Checkpoint]) -> Vec<Exclusive> {
        let mut tree_owner: HashMap<TreeId, Owner> = HashMap::new();
        let mut chunk_owner: HashMap<ChunkId, Owner> = HashMap::new();
        let claim = |owners: &mut HashMap<ChunkId, Owner>, id: ChunkId, who: usize| {
            owners
                .entry(id)
                .and_modify(|o| {
                    if *o != Owner::One(who) {
                        *o = Owner::Shared;
                    }
                })
                .or_insert(Owner::One(who));
        };
        for (who, checkpoint) in checkpoints.iter().enumerate() {
            for attachment in &checkpoint.attachments {
                for &chunk in &attachment.chunks {
                    claim(&mut chunk_owner, chunk, who);
                }
            }
            let mut visit = vec![checkpoint.tree];
            while let Some(id) = visit.pop() {
                match tree_owner.get(&id).copied() {
                    None => {
                        tree_owner.insert(id, Owner::One(who));
                        if let Some(link) = self.links.get(&id) {
                            for &chunk in &link.chunks {
                                claim(&mut chunk_owner, chunk, who);
                            }
                            visit.extend(&link.trees);
                        }
                    }
                    Some(Owner::One(owner)) if owner != who => {
                        self.share(id, &mut tree_owner, &mut chunk_owner)
                    }
                    Some(_) => {}
                }
            }
        }
        // A delta base's record is needed by whoever needs the delta; what is below the
        // base belongs to the checkpoints that reach it.
        let reached: Vec<(TreeId, Owner)> = tree_owner
            .iter()
            .filter(|(id, _)| self.chains.contains_key(id))
            .map(|(id, owner)| (*id, *owner))
            .collect();
        for (id, owner) in reached {
            for base in self.chains.get(&id).into_iter().flatten() {
                tree_owner
                    .entry(*base)
                    .and_modify(|o| {
                        if *o != owner {
                            *o = Owner::Shared;
                        }
                    })
                    .or_insert(owner);
            }
        }
        let mut out = vec![Exclusive::default(); checkpoints.len()];
        for (id, owner) in tree_owner {
            if let Owner::One(who) = owner {
                out[who].trees.push(id);
            }
        }
        for (id, owner) in chunk_owner {
            if let Owner::One(who) = owner {
                out[who].chunks.push(id);
            }
        }
        out
    }

    /// Marks tree `id` and everything below it as shared.
    fn share(
        &self,
        id: TreeId,
        tree_owner: &mut HashMap<TreeId, Owner>,
        chunk_owner: &mut HashMap<ChunkId, Owner>,
    ) {
        let mut stack = vec![id];
        while let Some(id) = stack.pop() {
            if tree_owner.insert(id, Owner::Shared) == Some(Owner::Shared) {
                continue;
            }
            if let Some(link) = self.links.get(&id) {
                for chunk in &link.chunks {
                    chunk_owner.insert(*chunk, Owner::Shared);
                }
                stack.extend(&link.trees);
            }
        }
    }
}

/// The trees and chunks under `checkpoints` (roots and attachments) that `marked` lacks:
/// what removing those checkpoints frees, with the delta bases of those trees that
/// `marked` lacks (their records only: what is below a base is listed through the
/// checkpoints that reach it). A marked tree is not entered, as everything below it is
/// marked too; a tree that is missing or does not decode is listed but not entered.
/// Reads tree records only.
pub(in crate::storage) fn unmarked_below(
    table: &impl ReadableTable<u128, &'static [u8]>,
    checkpoints: &[&Checkpoint],
    marked: &Marked,
) -> Result<(Vec<TreeId>, Vec<ChunkId>)> {
    let mut trees = HashSet::new();
    let mut entered = HashSet::new();
    let mut chunks = HashSet::new();
    let mut stack = Vec::new();
    let mut bases = Vec::new();
    for checkpoint in checkpoints {
        stack.push(checkpoint.tree);
        for attachment in &checkpoint.attachments {
            chunks.extend(
                attachment
                    .chunks
                    .iter()
                    .filter(|c| !marked.chunks.contains(c)),
            );
        }
    }
    while let Some(id) = stack.pop() {
        if marked.trees.contains(&id) || !entered.insert(id) {
            continue;
        }
        trees.insert(id);
        let Ok(Some(loaded)) = tree_codec::load(table, id, None) else {
            continue;
        };
        bases.extend(loaded.chain);
        for entry in loaded.tree.entries {
            match entry.node {
                Node::Dir { tree } => stack.push(tree),
                Node::File { chunks: ids, .. } | Node::FileWithMode { chunks: ids, .. } => {
                    chunks.extend(ids.into_iter().filter(|c| !marked.chunks.contains(c)))
                }
                Node::Symlink { .. } => {}
            }
        }
    }
    trees.extend(bases.into_iter().filter(|id| !marked.trees.contains(id)));
    Ok((trees.into_iter().collect(), chunks.into_iter().collect()))
}

/// The stored size of every value in a table keyed by id (the trees or chunks table).
/// redb keeps values in its leaf pages, so this touches them, but nothing is decoded.
pub(super) fn stored_sizes(
    table: &impl ReadableTable<u128, &'static [u8]>,
) -> Result<HashMap<TreeId, u64>> {
    let mut sizes = HashMap::new();
    for item in table.iter()? {
        let (key, value) = item?;
        sizes.insert(TreeId(key.value()), value.value().len() as u64);
    }
    Ok(sizes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(edges: &[(u128, &[u128], &[u128])]) -> Graph {
        Graph {
            chains: HashMap::new(),
            links: edges
                .iter()
                .map(|(id, trees, chunks)| {
                    (
                        TreeId(*id),
                        Links {
                            trees: trees.iter().map(|&t| TreeId(t)).collect(),
                            chunks: chunks.iter().map(|&c| ChunkId(c)).collect(),
                        },
                    )
                })
                .collect(),
        }
    }

    fn checkpoint(tree: u128) -> Checkpoint {
        Checkpoint {
            tree: TreeId(tree),
            ..Checkpoint::default()
        }
    }

    /// The raw ids, sorted, so the assertions read as numbers.
    fn sorted<T: Copy + Ord + Into<u128>>(mut v: Vec<T>) -> Vec<u128> {
        v.sort();
        v.into_iter().map(Into::into).collect()
    }

    #[test]
    fn exclusive_objects_are_those_no_other_checkpoint_reaches() {
        // Root 1 -> shared subtree 10 (chunks 100, 101) and chunk 102.
        // Root 2 -> shared subtree 10 and subtree 20 (chunk 101, 103).
        // Root 3 -> subtree 20 reached later, after 2 owned it.
        let g = graph(&[
            (1, &[10], &[102]),
            (2, &[10, 20], &[]),
            (3, &[20], &[104, 104]),
            (10, &[], &[100, 101]),
            (20, &[], &[101, 103]),
        ]);
        let (a, b, c) = (checkpoint(1), checkpoint(2), checkpoint(3));
        let out = g.exclusive(&[&a, &b, &c]);
        assert_eq!(sorted(out[0].trees.clone()), [1]);
        assert_eq!(sorted(out[0].chunks.clone()), [102]);
        assert_eq!(sorted(out[1].trees.clone()), [2]);
        assert!(out[1].chunks.is_empty());
        assert_eq!(sorted(out[2].trees.clone()), [3]);
        // A chunk twice in one checkpoint is still its own.
        assert_eq!(sorted(out[2].chunks.clone()), [104]);

        let marked = g.mark([&a]);
        assert_eq!(sorted(marked.trees.into_iter().collect()), [1, 10]);
        assert_eq!(sorted(marked.chunks.into_iter().collect()), [100, 101, 102]);
    }

    #[test]
    fn a_sweep_takes_the_bases_nothing_needs_and_spares_those_something_does() {
        let id = ChunkId;
        // Chain 1 <- 2 <- 3 <- 4 (4 is a delta of 3, ...); 7 <- 8; 9 is a delta of 5.
        let bases: HashMap<ChunkId, ChunkId> = [(2, 1), (3, 2), (4, 3), (8, 7), (9, 5)]
            .into_iter()
            .map(|(delta, base)| (id(delta), id(base)))
            .collect();
        // 4 is kept: its whole chain is live.
        let mut marked = Marked::default();
        marked.chunks.extend([id(4), id(6)]);
        marked.add_chunk_bases(&bases);
        assert_eq!(
            sorted(marked.chunks.iter().copied().collect()),
            [1, 2, 3, 4, 6]
        );
        assert!(sweepable(vec![id(1), id(3)], &marked, &bases).is_empty());

        // Once 4 goes, its bases go with it, also those no removed checkpoint names.
        let mut marked = Marked::default();
        marked.chunks.insert(id(6));
        assert_eq!(
            sorted(sweepable(vec![id(4)], &marked, &bases)),
            [1, 2, 3, 4]
        );
        // 5 is the base of 9, which stays though nothing names it: 5 stays too.
        assert_eq!(
            sorted(sweepable(vec![id(5), id(8)], &marked, &bases)),
            [7, 8]
        );
    }
}
