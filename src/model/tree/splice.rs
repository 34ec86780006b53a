//! Rebuilding a tree along changed paths only: a save that a watcher told which paths
//! changed keeps every other directory's tree id from the base, and reads, re-encodes
//! and hashes only the trees on the way down to a changed path.
//!
//! Invariant: [`splice`] returns exactly the root [`build`](super::build) returns for the
//! base's files that lie neither at nor below a replaced path, together with the new
//! `files` (each of which lies at or below a replaced path). Both encode each directory
//! the same way (entries sorted by name, directories only where files are), so an
//! unchanged directory's tree is the one the base already holds, and a directory whose
//! last file went is dropped from its parent, as `build` never makes one.

use super::{build_dir, too_deep, Entry, Node, PendingTrees, Totals, Tree, MAX_DEPTH};
use crate::format::chunk::Hasher;
use crate::format::codec;
use crate::{Error, Result, TreeId};

/// What [`splice`] made: the new root, and how the totals moved.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Spliced {
    /// The new root tree.
    pub root: TreeId,
    /// The base's files and bytes at or below the replaced paths, which the new tree
    /// no longer holds (or holds anew among `added`).
    pub removed: Totals,
    /// The files and bytes of the new `files`.
    pub added: Totals,
}

impl Spliced {
    /// The new tree's totals, from those of the base tree.
    pub fn totals(&self, base: Totals) -> Totals {
        Totals {
            files: base.files.saturating_sub(self.removed.files) + self.added.files,
            bytes: base.bytes.saturating_sub(self.removed.bytes) + self.added.bytes,
        }
    }
}

/// The tree of the base tree `base` with everything at or below each path of `replaced`
/// replaced by the entries of `files` (see the module's invariant). `read` gives a
/// stored tree by id; only the trees along the replaced paths (and those below a
/// replaced directory, to count what leaves) are read. The trees made go into
/// `pending`.
///
/// `replaced`: worktree paths (`/`-separated, no trailing `/`, not empty), sorted, none
/// below another. `files`: `(path, node)` sorted by path, no `Dir` nodes, each at or
/// below a path of `replaced`; one that is not is an [`Error::Internal`].
pub fn splice(
    hasher: &Hasher,
    base: TreeId,
    read: &mut dyn FnMut(TreeId) -> Result<Tree>,
    replaced: &[Vec<u8>],
    files: &[(Vec<u8>, Node)],
    pending: &mut PendingTrees,
) -> Result<Spliced> {
    if replaced.iter().any(Vec::is_empty) {
        return Err(Error::Internal("a splice replaces the whole tree".into()));
    }
    let mut splicer = Splicer {
        hasher,
        base,
        read,
        pending,
        removed: Totals::default(),
        added: Totals::default(),
    };
    let tree = (splicer.read)(base)?;
    let entries = splicer.dir(tree, b"", replaced, files, 0)?;
    let root = splicer.store(entries);
    Ok(Spliced {
        root,
        removed: splicer.removed,
        added: splicer.added,
    })
}

struct Splicer<'a> {
    hasher: &'a Hasher,
    /// The base root, named in errors.
    base: TreeId,
    read: &'a mut dyn FnMut(TreeId) -> Result<Tree>,
    pending: &'a mut PendingTrees,
    removed: Totals,
    added: Totals,
}

/// The range of sorted `items` whose paths lie strictly below `path`: they all start
/// with `path/`, and so sort between `path/` and `path0` (`0` follows `/`).
fn below<T>(items: &[T], path: &[u8], key: impl Fn(&T) -> &[u8]) -> std::ops::Range<usize> {
    let mut from = path.to_vec();
    from.push(b'/');
    let start = items.partition_point(|item| key(item) < from.as_slice());
    *from.last_mut().expect("just pushed") = b'0';
    let end = items.partition_point(|item| key(item) < from.as_slice());
    start..end.max(start)
}

impl Splicer<'_> {
    /// The entries of the directory at `prefix` (empty, or ending in `/`), whose base
    /// tree is `tree`: `replaced` and `files` are those at or below it.
    fn dir(
        &mut self,
        tree: Tree,
        prefix: &[u8],
        replaced: &[Vec<u8>],
        files: &[(Vec<u8>, Node)],
        depth: usize,
    ) -> Result<Vec<Entry>> {
        if depth > MAX_DEPTH {
            return Err(too_deep(self.base));
        }
        let mut entries = tree.entries;
        let mut names: Vec<&[u8]> = replaced
            .iter()
            .map(Vec::as_slice)
            .chain(files.iter().map(|(path, _)| path.as_slice()))
            .map(|path| {
                let rest = &path[prefix.len()..];
                rest.split(|&b| b == b'/').next().unwrap_or(rest)
            })
            .collect();
        names.sort_unstable();
        names.dedup();
        for name in names {
            let mut path = prefix.to_vec();
            path.extend_from_slice(name);
            let at = entries.binary_search_by(|e| e.name.as_slice().cmp(name));
            let exact_file = files
                .binary_search_by(|(p, _)| p.as_slice().cmp(&path))
                .ok();
            let files_below = &files[below(files, &path, |(p, _)| p.as_slice())];
            let new = if replaced.binary_search(&path).is_ok() {
                // Everything the base held here goes; what the walk found comes.
                if let Ok(i) = at {
                    let old = entries[i].node.clone();
                    self.count_removed(&old, depth)?;
                }
                if let Some(i) = exact_file {
                    count(&mut self.added, &files[i].1);
                    Some(files[i].1.clone())
                } else if files_below.is_empty() {
                    None
                } else {
                    // Only the new files below one replaced path: copied, since
                    // `build_dir` uses up what it is given.
                    let (id, totals) = build_dir(
                        self.hasher,
                        &mut files_below.to_vec(),
                        path.len() + 1,
                        self.pending,
                    )?;
                    self.added.files += totals.files;
                    self.added.bytes += totals.bytes;
                    Some(Node::Dir { tree: id })
                }
            } else {
                if exact_file.is_some() {
                    return Err(Error::Internal(format!(
                        "a splice was given {:?}, which no replaced path covers",
                        String::from_utf8_lossy(&path)
                    )));
                }
                let replaced_below = &replaced[below(replaced, &path, |p| p.as_slice())];
                let old = at.ok().map(|i| entries[i].node.clone());
                let subtree = match old {
                    Some(Node::Dir { tree }) => (self.read)(tree)?,
                    // A file where new files lie below: it went, a directory came.
                    Some(node) if !files_below.is_empty() => {
                        self.count_removed(&node, depth)?;
                        Tree::default()
                    }
                    // Nothing below a file: the file stands.
                    Some(_) => continue,
                    None => Tree::default(),
                };
                path.push(b'/');
                let below = self.dir(subtree, &path, replaced_below, files_below, depth + 1)?;
                (!below.is_empty()).then(|| Node::Dir {
                    tree: self.store(below),
                })
            };
            match (at, new) {
                (Ok(i), Some(node)) => entries[i].node = node,
                (Ok(i), None) => {
                    entries.remove(i);
                }
                (Err(i), Some(node)) => entries.insert(
                    i,
                    Entry {
                        name: name.to_vec(),
                        node,
                    },
                ),
                (Err(_), None) => {}
            }
        }
        Ok(entries)
    }

    /// Encodes and hashes a directory of `entries` (sorted), kept in `pending`.
    fn store(&mut self, entries: Vec<Entry>) -> TreeId {
        let encoded = codec::encode(&Tree { entries });
        let id = self.hasher.tree_id(&encoded);
        self.pending.entry(id).or_insert(encoded);
        id
    }

    /// Counts `node` of the base, and everything below it if a directory, as removed.
    fn count_removed(&mut self, node: &Node, depth: usize) -> Result<()> {
        if depth > MAX_DEPTH {
            return Err(too_deep(self.base));
        }
        match node {
            Node::Dir { tree } => {
                for entry in (self.read)(*tree)?.entries {
                    self.count_removed(&entry.node, depth + 1)?;
                }
            }
            node => count(&mut self.removed, node),
        }
        Ok(())
    }
}

/// Adds a file or symlink to `totals` as [`build`](super::build) counts it.
fn count(totals: &mut Totals, node: &Node) {
    totals.files += 1;
    if let Node::File { size, .. } | Node::FileWithMode { size, .. } = node {
        totals.bytes += size;
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;
    use crate::format::chunk::ChunkParams;
    use crate::model::tree::{build, test_file};

    /// A worktree as its flat list of files, and the trees `build` makes of it.
    fn built(files: &BTreeMap<Vec<u8>, Node>, hasher: &Hasher) -> (TreeId, Totals, PendingTrees) {
        let mut flat: Vec<(Vec<u8>, Node)> =
            files.iter().map(|(p, n)| (p.clone(), n.clone())).collect();
        let mut pending = PendingTrees::new();
        let (root, totals) = build(hasher, &mut flat, &mut pending).unwrap();
        (root, totals, pending)
    }

    fn at_or_below(path: &[u8], top: &[u8]) -> bool {
        path.strip_prefix(top)
            .is_some_and(|rest| rest.is_empty() || rest[0] == b'/')
    }

    /// Splices `after`'s files at or below `replaced` into `before`'s tree, checks the
    /// result against a `build` of what the worktree then holds, and returns how many
    /// trees the splice read.
    fn check(before: &[(&str, Node)], replaced: &[&str], after: &[(&str, Node)]) -> usize {
        let hasher = Hasher::new([4; 32], ChunkParams::default());
        let before: BTreeMap<Vec<u8>, Node> = before
            .iter()
            .map(|(p, n)| (p.as_bytes().to_vec(), n.clone()))
            .collect();
        let mut replaced: Vec<Vec<u8>> = replaced.iter().map(|p| p.as_bytes().to_vec()).collect();
        replaced.sort();
        replaced.dedup();
        let mut tops: Vec<Vec<u8>> = Vec::new();
        for path in replaced {
            if !tops.iter().any(|top| at_or_below(&path, top)) {
                tops.push(path);
            }
        }
        let covered = |path: &[u8]| tops.iter().any(|top| at_or_below(path, top));
        let new: Vec<(Vec<u8>, Node)> = after
            .iter()
            .map(|(p, n)| (p.as_bytes().to_vec(), n.clone()))
            .filter(|(p, _)| covered(p))
            .collect::<BTreeMap<_, _>>()
            .into_iter()
            .collect();
        let mut now: BTreeMap<Vec<u8>, Node> = before
            .iter()
            .filter(|(p, _)| !covered(p))
            .map(|(p, n)| (p.clone(), n.clone()))
            .collect();
        now.extend(new.iter().cloned());
        let (base, base_totals, stored) = built(&before, &hasher);
        let (expected, expected_totals, _) = built(&now, &hasher);
        let mut reads = 0;
        let mut read = |id: TreeId| -> Result<Tree> {
            reads += 1;
            codec::decode(&stored[&id], "tree")
        };
        let mut pending = PendingTrees::new();
        let spliced = splice(&hasher, base, &mut read, &tops, &new, &mut pending).unwrap();
        assert_eq!(spliced.root, expected, "{before:?} {tops:?} {new:?}");
        assert_eq!(spliced.totals(base_totals), expected_totals);
        assert!(pending.contains_key(&spliced.root));
        reads
    }

    fn link(target: &str) -> Node {
        Node::Symlink {
            target: target.as_bytes().to_vec(),
        }
    }

    #[test]
    fn each_kind_of_change_gives_the_tree_a_build_gives() {
        let f = test_file;
        let before = [
            ("a", f(1)),
            ("a.txt", f(2)),
            ("b/c/d", f(3)),
            ("b/c/e", f(4)),
            ("b/x", f(5)),
            ("b.d/y", f(6)),
            ("z", link("a")),
        ];
        // An edit, an addition, a deletion.
        check(&before, &["a"], &[("a", f(9))]);
        check(&before, &["new"], &[("new", f(9))]);
        check(&before, &["a.txt"], &[]);
        // A new deep directory, a whole directory deleted, the last file of one.
        check(&before, &["n"], &[("n/o/p/q", f(9))]);
        check(&before, &["b"], &[]);
        check(&before, &["b.d/y"], &[]);
        check(&before, &["b/c/d", "b/c/e"], &[]);
        // A file becomes a directory, a directory a file, a symlink a file.
        check(&before, &["a"], &[("a/inside", f(9))]);
        check(&before, &["b/c"], &[("b/c", f(9))]);
        check(&before, &["z"], &[("z", f(9))]);
        // A rename across directories.
        check(&before, &["b/x", "b.d/x"], &[("b.d/x", f(5))]);
        // A changed path that holds nothing, under a file that stands.
        check(&before, &["gone", "a/x"], &[]);
        // A directory replaced whole, by the same files: the same tree.
        check(&before, &["b"], &before[2..5]);
        // Everything gone: the empty tree.
        check(&before, &["a", "a.txt", "b", "b.d", "z"], &[]);
    }

    /// Only the trees down to the changed path are read, however wide the tree.
    #[test]
    fn only_the_trees_along_the_changed_path_are_read() {
        let names: Vec<String> = (0..30)
            .flat_map(|d| (0..30).map(move |f| format!("d{d:02}/e/f{f:02}")))
            .collect();
        let before: Vec<(&str, Node)> = names
            .iter()
            .enumerate()
            .map(|(i, p)| (p.as_str(), test_file(i as u128 + 1)))
            .collect();
        // The root, `d07`, `d07/e`: three of the 61 trees.
        let reads = check(&before, &["d07/e/f03"], &[("d07/e/f03", test_file(7777))]);
        assert_eq!(reads, 3);
    }

    #[test]
    fn a_file_no_replaced_path_covers_is_refused() {
        let hasher = Hasher::new([4; 32], ChunkParams::default());
        let mut stored = PendingTrees::new();
        let (base, _) = build(&hasher, &mut [(b"a".to_vec(), test_file(1))], &mut stored).unwrap();
        let mut read = |id: TreeId| -> Result<Tree> { codec::decode(&stored[&id], "tree") };
        let err = splice(
            &hasher,
            base,
            &mut read,
            &[b"b".to_vec()],
            &[(b"c".to_vec(), test_file(2))],
            &mut PendingTrees::new(),
        )
        .unwrap_err();
        assert!(err.to_string().contains("no replaced path covers"), "{err}");
    }

    /// Paths from a small universe whose directory names are never file names, with
    /// names that sort between `d` and `d/` (`d.x`, `d-0`).
    fn path() -> impl Strategy<Value = String> {
        (
            prop::collection::vec(prop::sample::select(vec!["d", "e", "d.x"]), 0..3),
            prop::sample::select(vec!["f", "d-0", "g.x", "d0"]),
        )
            .prop_map(|(dirs, leaf)| {
                let mut path: Vec<&str> = dirs;
                path.push(leaf);
                path.join("/")
            })
    }

    fn replaced_path() -> impl Strategy<Value = String> {
        prop_oneof![
            path(),
            prop::collection::vec(prop::sample::select(vec!["d", "e", "d.x"]), 1..3)
                .prop_map(|dirs| dirs.join("/")),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// Any worktree, any set of replaced paths, any new files below them: the
        /// splice is the build.
        #[test]
        fn a_splice_is_a_build_of_the_files_it_leaves(
            before in prop::collection::vec((path(), 1u128..4), 0..24),
            replaced in prop::collection::vec(replaced_path(), 1..5),
            after in prop::collection::vec((path(), 4u128..8), 0..12),
        ) {
            fn node((p, n): &(String, u128)) -> (&str, Node) {
                (p.as_str(), test_file(*n))
            }
            let before: Vec<(&str, Node)> = before.iter().map(node).collect();
            let after: Vec<(&str, Node)> = after.iter().map(node).collect();
            let replaced: Vec<&str> = replaced.iter().map(String::as_str).collect();
            check(&before, &replaced, &after);
        }
    }
}
