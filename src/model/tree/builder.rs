//! Trees built as the files come, in path order: a directory's tree is made the moment
//! the first path past it arrives, so that a save holds the entries of the directories
//! on the way down to the current path only, never a list of every file
//! (docs/design.md, "Save", memory). [`build`](super::build) is this over a list.

use super::{Entry, Node, Totals, Tree};
use crate::format::chunk::Hasher;
use crate::format::codec;
use crate::{Error, Result, TreeId};

/// Each tree a [`TreeBuilder`] makes, as it makes it: the directory's path (empty at the
/// top), the tree's id and its encoding.
pub type MadeTree<'m> = dyn FnMut(&[u8], TreeId, Vec<u8>) -> Result<()> + 'm;

/// Builds the trees of a snapshot from its files and symlinks given one at a time in
/// increasing path-byte order ([`TreeBuilder::push`]), handing each tree on as soon as
/// no later path can fall in its directory. The trees are those
/// [`build`](super::build) makes of the same list: the same encoding, the same ids.
pub struct TreeBuilder<'h> {
    hasher: &'h Hasher,
    /// The directories open, the top first: those on the way down to the last path.
    open: Vec<OpenDir>,
    /// The path of the deepest open directory (empty at the top).
    dir: Vec<u8>,
    /// The last path pushed, to refuse one out of order.
    last: Vec<u8>,
    totals: Totals,
}

/// A directory whose entries are still coming.
struct OpenDir {
    /// Its path's length in [`TreeBuilder::dir`] while it is open.
    len: usize,
    /// Its entries so far, in the order they came.
    entries: Vec<Entry>,
}

impl<'h> TreeBuilder<'h> {
    /// A builder with nothing in it, whose trees `hasher` names.
    pub fn new(hasher: &'h Hasher) -> Self {
        TreeBuilder {
            hasher,
            open: vec![OpenDir {
                len: 0,
                entries: Vec::new(),
            }],
            dir: Vec::new(),
            last: Vec::new(),
            totals: Totals::default(),
        }
    }

    /// Adds the file or symlink `node` at `path` (relative to the top, `/`-separated,
    /// never a `Dir` node), which must sort after every path pushed before; `made` gets
    /// each tree this completes. The path's buffer becomes the entry's name.
    pub fn push(&mut self, mut path: Vec<u8>, node: Node, made: &mut MadeTree<'_>) -> Result<()> {
        if !self.last.is_empty() && path <= self.last {
            return Err(Error::Internal(format!(
                "a tree was given {:?} after {:?}, out of order",
                String::from_utf8_lossy(&path),
                String::from_utf8_lossy(&self.last)
            )));
        }
        self.last.clear();
        self.last.extend_from_slice(&path);
        let (dir_len, name_start) = match path.iter().rposition(|&b| b == b'/') {
            Some(slash) => (slash, slash + 1),
            None => (0, 0),
        };
        // Close the open directories the new path is not in.
        let keep = self.shared_depth(&path[..dir_len]);
        while self.open.len() > keep {
            self.close(made)?;
        }
        // Open those on its way down that are not open yet.
        while self.dir.len() < dir_len {
            let start = if self.dir.is_empty() {
                0
            } else {
                self.dir.len() + 1
            };
            let end = path[start..dir_len]
                .iter()
                .position(|&b| b == b'/')
                .map_or(dir_len, |i| start + i);
            if !self.dir.is_empty() {
                self.dir.push(b'/');
            }
            self.dir.extend_from_slice(&path[start..end]);
            self.open.push(OpenDir {
                len: self.dir.len(),
                entries: Vec::new(),
            });
        }
        if let Node::File { size, .. } | Node::FileWithMode { size, .. } = &node {
            self.totals.bytes += size;
        }
        self.totals.files += 1;
        path.drain(..name_start);
        match self.open.last_mut() {
            Some(top) => top.entries.push(Entry { name: path, node }),
            None => return Err(Error::Internal("a tree builder lost its top".into())),
        }
        Ok(())
    }

    /// How many of the open directories (the top counted) `dir` lies in.
    fn shared_depth(&self, dir: &[u8]) -> usize {
        let mut depth = 1;
        for open in &self.open[1..] {
            let inside = dir.len() >= open.len
                && dir[..open.len] == self.dir[..open.len]
                && (dir.len() == open.len || dir[open.len] == b'/');
            if !inside {
                break;
            }
            depth += 1;
        }
        depth
    }

    /// Makes the tree of the deepest open directory and enters it in its parent.
    fn close(&mut self, made: &mut MadeTree<'_>) -> Result<()> {
        let Some(OpenDir { len, entries }) = self.open.pop() else {
            return Err(Error::Internal(
                "a tree builder closed its top twice".into(),
            ));
        };
        let id = self.make(entries, made)?;
        let start = match self.dir[..len].iter().rposition(|&b| b == b'/') {
            Some(slash) => slash + 1,
            None => 0,
        };
        let name = self.dir[start..len].to_vec();
        self.dir.truncate(start.saturating_sub(1));
        match self.open.last_mut() {
            Some(parent) => parent.entries.push(Entry {
                name,
                node: Node::Dir { tree: id },
            }),
            None => return Err(Error::Internal("a tree builder lost its top".into())),
        }
        Ok(())
    }

    /// Encodes one directory's entries (sorted by name), hands the tree to `made` and
    /// returns its id.
    fn make(&self, mut entries: Vec<Entry>, made: &mut MadeTree<'_>) -> Result<TreeId> {
        entries.sort_unstable_by(|a, b| a.name.cmp(&b.name));
        let encoded = codec::encode(&Tree { entries });
        let id = self.hasher.tree_id(&encoded);
        made(&self.dir, id, encoded)?;
        Ok(id)
    }

    /// Makes the trees still open, the top's last, and returns the top's id with the
    /// files and bytes pushed.
    pub fn finish(mut self, made: &mut MadeTree<'_>) -> Result<(TreeId, Totals)> {
        while self.open.len() > 1 {
            self.close(made)?;
        }
        let top = std::mem::take(&mut self.open);
        let entries = top
            .into_iter()
            .next()
            .map(|t| t.entries)
            .unwrap_or_default();
        let root = self.make(entries, made)?;
        Ok((root, self.totals))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;
    use crate::format::chunk::ChunkParams;
    use crate::model::tree::test_file;
    use crate::model::PendingTrees;

    /// The trees of `files` made directory by directory from a map, the plain way: the
    /// reference the builder must agree with.
    fn reference(
        hasher: &Hasher,
        files: &BTreeMap<Vec<u8>, Node>,
        into: &mut PendingTrees,
    ) -> TreeId {
        let mut here: BTreeMap<Vec<u8>, Node> = BTreeMap::new();
        let mut below: BTreeMap<Vec<u8>, BTreeMap<Vec<u8>, Node>> = BTreeMap::new();
        for (path, node) in files {
            match path.iter().position(|&b| b == b'/') {
                None => {
                    here.insert(path.clone(), node.clone());
                }
                Some(slash) => {
                    below
                        .entry(path[..slash].to_vec())
                        .or_default()
                        .insert(path[slash + 1..].to_vec(), node.clone());
                }
            }
        }
        for (name, files) in below {
            let tree = reference(hasher, &files, into);
            here.insert(name, Node::Dir { tree });
        }
        let tree = Tree {
            entries: here
                .into_iter()
                .map(|(name, node)| Entry { name, node })
                .collect(),
        };
        let encoded = codec::encode(&tree);
        let id = hasher.tree_id(&encoded);
        into.insert(id, encoded);
        id
    }

    fn built(hasher: &Hasher, files: &BTreeMap<Vec<u8>, Node>) -> Result<(TreeId, PendingTrees)> {
        let mut made_trees = PendingTrees::new();
        let mut dirs = Vec::new();
        let mut builder = TreeBuilder::new(hasher);
        let mut made = |dir: &[u8], id: TreeId, encoded: Vec<u8>| {
            dirs.push(dir.to_vec());
            made_trees.insert(id, encoded);
            Ok(())
        };
        // Path-byte order, which a map of byte strings keeps.
        for (path, node) in files {
            builder.push(path.clone(), node.clone(), &mut made)?;
        }
        let (root, totals) = builder.finish(&mut made)?;
        assert_eq!(totals.files, files.len() as u64);
        // Each directory is made once, below before above, the top last.
        let mut seen = dirs.clone();
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), dirs.len(), "{dirs:?}");
        assert_eq!(dirs.last().map(Vec::as_slice), Some(&b""[..]));
        Ok((root, made_trees))
    }

    /// Names sorting before, around and after a directory's slash, a file whose name
    /// begins another's, and deep paths: every tree as the plain way makes it.
    #[test]
    fn trees_built_as_paths_come_are_the_trees_of_the_whole_list() {
        let hasher = Hasher::new([9; 32], ChunkParams::default());
        let files: BTreeMap<Vec<u8>, Node> = [
            "a",
            "a-b/c",
            "a.txt",
            "ab/x",
            "ab/x-d/y/z",
            "ab/x.y",
            "ab/x0",
            "b",
            "c/d/e/f",
            "c/d/g",
            "c/h",
        ]
        .iter()
        .enumerate()
        .map(|(i, p)| (p.as_bytes().to_vec(), test_file(i as u128)))
        .collect();
        let mut expected = PendingTrees::new();
        let root = reference(&hasher, &files, &mut expected);
        assert_eq!(built(&hasher, &files).unwrap(), (root, expected));
        let empty = BTreeMap::new();
        let mut expected = PendingTrees::new();
        let root = reference(&hasher, &empty, &mut expected);
        assert_eq!(built(&hasher, &empty).unwrap(), (root, expected));
    }

    /// A path that does not sort after the last one (out of order, or the same again)
    /// is refused: a directory already made would be made twice.
    #[test]
    fn a_path_out_of_order_is_refused() {
        let hasher = Hasher::new([9; 32], ChunkParams::default());
        for (first, second) in [("a/b", "a-b"), ("b", "a/c"), ("a", "a")] {
            let mut builder = TreeBuilder::new(&hasher);
            let mut made = |_: &[u8], _: TreeId, _: Vec<u8>| Ok(());
            builder
                .push(first.as_bytes().to_vec(), test_file(1), &mut made)
                .unwrap();
            let err = builder
                .push(second.as_bytes().to_vec(), test_file(2), &mut made)
                .unwrap_err();
            assert!(err.to_string().contains("out of order"), "{err}");
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Any set of paths over a few names (so that directories share prefixes and
        /// names sort around each other's slashes).
        #[test]
        fn the_builder_agrees_with_the_plain_way(
            paths in proptest::collection::btree_set(
                proptest::collection::vec(prop::sample::select(vec!["a", "a-", "a.b", "a0", "b"]), 1..5),
                0..40,
            )
        ) {
            let hasher = Hasher::new([4; 32], ChunkParams::default());
            // A path that is another's directory cannot be a file as well.
            let joined: Vec<Vec<u8>> = paths.iter().map(|p| p.join("/").into_bytes()).collect();
            let files: BTreeMap<Vec<u8>, Node> = joined
                .iter()
                .filter(|p| {
                    !joined.iter().any(|q| q.len() > p.len() && q.starts_with(p) && q[p.len()] == b'/')
                })
                .enumerate()
                .map(|(i, p)| (p.clone(), test_file(i as u128)))
                .collect();
            let mut expected = PendingTrees::new();
            let root = reference(&hasher, &files, &mut expected);
            prop_assert_eq!(built(&hasher, &files).unwrap(), (root, expected));
        }
    }
}
