//! Directory records. A tree is the sorted list of one directory's entries; its id is
//! the hash of its encoding, so an unchanged directory is stored once across all
//! checkpoints and equal subtrees are recognised by id alone.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::format::chunk::{ChunkParams, Hasher};
use crate::format::codec;
use crate::{ChunkId, Error, Result, TreeId};

mod builder;
mod splice;
pub use builder::{MadeTree, TreeBuilder};
pub use splice::{splice, Spliced};

/// What a name in a directory is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Node {
    /// A regular file: its size, executable bit and content chunks in order.
    File {
        /// Length in bytes.
        size: u64,
        /// Whether the owner-executable bit is set (git's notion of an executable).
        executable: bool,
        /// Chunk ids; the content is their concatenation.
        chunks: Vec<ChunkId>,
    },
    /// A symbolic link and its target, as raw bytes; never followed.
    Symlink {
        /// The link target.
        #[serde(with = "serde_bytes")]
        target: Vec<u8>,
    },
    /// A subdirectory.
    Dir {
        /// The subdirectory's tree id.
        tree: TreeId,
    },
    /// A regular file whose permission bits are not git's two (`0644`, `0755`): a key
    /// file at `0600`, a read-only `0444`. Written only for such files (with
    /// `checkpoint.keepPermissions`, the default), so trees of ordinary files, and every
    /// tree written before this kind existed, are encoded as they always were.
    FileWithMode {
        /// Length in bytes.
        size: u64,
        /// Permission bits (`0o777` at most: never set-id or sticky bits, never owners).
        mode: u32,
        /// Chunk ids; the content is their concatenation.
        chunks: Vec<ChunkId>,
    },
}

impl Node {
    /// The record for a file of `size` bytes with the permission bits of `mode` and
    /// content `chunks`: [`Node::File`] when git's notion (the executable bit) says it all
    /// or `keep_permissions` is off, [`Node::FileWithMode`] otherwise.
    pub fn file(size: u64, mode: u32, chunks: Vec<ChunkId>, keep_permissions: bool) -> Node {
        let permissions = mode & 0o777;
        let executable = permissions & 0o100 != 0;
        let git_mode = if executable { 0o755 } else { 0o644 };
        if keep_permissions && permissions != git_mode {
            Node::FileWithMode {
                size,
                mode: permissions,
                chunks,
            }
        } else {
            Node::File {
                size,
                executable,
                chunks,
            }
        }
    }

    /// Whether the owner may execute it (git's notion of an executable file).
    pub fn is_executable(&self) -> bool {
        match self {
            Node::File { executable, .. } => *executable,
            Node::FileWithMode { mode, .. } => mode & 0o100 != 0,
            Node::Symlink { .. } | Node::Dir { .. } => false,
        }
    }

    /// A short word for the kind, for plans and messages.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Node::File { .. } | Node::FileWithMode { .. } => "file",
            Node::Symlink { .. } => "symlink",
            Node::Dir { .. } => "directory",
        }
    }
}

/// One named entry of a tree.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// The file name: raw bytes, one path component.
    #[serde(with = "serde_bytes")]
    pub name: Vec<u8>,
    /// What it is.
    pub node: Node,
}

/// One directory's entries, sorted by name bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tree {
    /// The entries, sorted by `name`, names unique.
    pub entries: Vec<Entry>,
}

/// Whether `name` is safe to create as one path component inside the worktree. Refuses
/// empty, `.`, `..`, anything holding `/` or NUL, and `.git` in any case, so that a
/// damaged or crafted store can never make restore write outside the worktree or into
/// a repository's own directory.
pub fn is_safe_name(name: &[u8]) -> bool {
    !(name.is_empty()
        || name == b"."
        || name == b".."
        || name.contains(&b'/')
        || name.contains(&0)
        || name.eq_ignore_ascii_case(b".git"))
}

/// Counts gathered while building trees.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Files and symlinks.
    pub files: u64,
    /// Sum of file sizes.
    pub bytes: u64,
}

/// Trees built in memory and not yet in the store, by id, in their encoded form.
pub type PendingTrees = HashMap<TreeId, Vec<u8>>;

/// Builds the trees for a flat list of `(path, node)` (paths relative to the root,
/// `/`-separated, sorted by bytes, no `Dir` nodes) and returns the root tree id; a list
/// out of order is an [`Error::Internal`]. Every tree goes into `pending`; the caller
/// stores the ones the store lacks. The list is used up: each entry's path and node are
/// moved into its tree (no copy per file, docs/performance.md), and what is left in
/// `files` is of no use.
pub fn build(
    hasher: &Hasher,
    files: &mut [(Vec<u8>, Node)],
    pending: &mut PendingTrees,
) -> Result<(TreeId, Totals)> {
    build_dir(hasher, files, 0, pending)
}

/// [`build`] of `files` that all lie below one directory, whose path with its slash is
/// the first `prefix_len` bytes of each.
fn build_dir(
    hasher: &Hasher,
    files: &mut [(Vec<u8>, Node)],
    prefix_len: usize,
    pending: &mut PendingTrees,
) -> Result<(TreeId, Totals)> {
    let mut builder = TreeBuilder::new(hasher);
    let mut made = |_: &[u8], id: TreeId, encoded: Vec<u8>| {
        pending.entry(id).or_insert(encoded);
        Ok(())
    };
    for (path, node) in files {
        let mut path = std::mem::take(path);
        path.drain(..prefix_len);
        // An empty symlink, which allocates nothing, is left behind.
        let node = std::mem::replace(node, Node::Symlink { target: Vec::new() });
        builder.push(path, node, &mut made)?;
    }
    builder.finish(&mut made)
}

/// Keeps in `pending` only the trees reachable from `root` through trees of `pending`
/// (a tree not in it is one the store holds, and so are those below it): after a splice
/// over trees that were themselves pending, the ones it replaced are no part of the new
/// tree and must not be stored with it. An iterative walk, each tree decoded once.
pub fn keep_reachable(pending: &mut PendingTrees, root: TreeId) -> Result<()> {
    let mut kept = PendingTrees::with_capacity(pending.len());
    let mut to_visit = vec![root];
    while let Some(id) = to_visit.pop() {
        if kept.contains_key(&id) {
            continue;
        }
        let Some(encoded) = pending.remove(&id) else {
            continue;
        };
        let tree: Tree = codec::decode(&encoded, "tree")?;
        to_visit.extend(tree.entries.iter().filter_map(|entry| match entry.node {
            Node::Dir { tree } => Some(tree),
            _ => None,
        }));
        kept.insert(id, encoded);
    }
    *pending = kept;
    Ok(())
}

/// The deepest a checked walk goes. A worktree path is at most `PATH_MAX` (4096) bytes,
/// so no save records more nested directories than this; a crafted store can chain
/// more, and the walks recurse.
pub const MAX_DEPTH: usize = 2048;

/// What is wrong with a tree record's entries, by [`tree_problem`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TreeProblem {
    /// An entry name [`is_safe_name`] refuses.
    Unsafe(Vec<u8>),
    /// Anything else, as a phrase that follows `"tree <id> "`.
    Other(String),
}

impl TreeProblem {
    /// The error for tree `id` having this problem.
    pub fn into_error(self, id: TreeId) -> Error {
        match self {
            TreeProblem::Unsafe(name) => {
                Error::UnsafeName(String::from_utf8_lossy(&name).into_owned())
            }
            TreeProblem::Other(problem) => Error::Corrupt(format!("tree {id} {problem}")),
        }
    }
}

pub(crate) fn quoted(name: &[u8]) -> String {
    format!("{:?}", String::from_utf8_lossy(name))
}

/// The names half of [`tree_problem`]: every name safe, strictly increasing.
pub fn names_problem(tree: &Tree) -> Option<TreeProblem> {
    for (i, entry) in tree.entries.iter().enumerate() {
        if !is_safe_name(&entry.name) {
            return Some(TreeProblem::Unsafe(entry.name.clone()));
        }
        if let Some(next) = tree.entries.get(i + 1) {
            match entry.name.cmp(&next.name) {
                std::cmp::Ordering::Less => {}
                std::cmp::Ordering::Equal => {
                    return Some(TreeProblem::Other(format!(
                        "holds the name {} twice",
                        quoted(&entry.name)
                    )))
                }
                std::cmp::Ordering::Greater => {
                    return Some(TreeProblem::Other(format!(
                        "lists {} before {}: its names are out of order",
                        quoted(&entry.name),
                        quoted(&next.name)
                    )))
                }
            }
        }
    }
    None
}

/// Checks a decoded tree as [`build`] writes trees: every name safe, names strictly
/// increasing in byte order (so unique), and each file's chunk count one its size
/// allows under `params` (every chunk but the last holds at least `params.min` bytes,
/// none more than `params.max`). O(entries); reads nothing else.
pub fn tree_problem(tree: &Tree, params: &ChunkParams) -> Option<TreeProblem> {
    if let Some(problem) = names_problem(tree) {
        return Some(problem);
    }
    for entry in &tree.entries {
        if let Node::File { size, chunks, .. } | Node::FileWithMode { size, chunks, .. } =
            &entry.node
        {
            let count = chunks.len() as u64;
            let most = size / params.min.max(1) as u64 + 1;
            if count > most || u128::from(count) * (params.max as u128) < u128::from(*size) {
                return Some(TreeProblem::Other(format!(
                    "has file {} of {size} bytes listing {count} chunks, which that size does not allow",
                    quoted(&entry.name)
                )));
            }
        }
    }
    None
}

/// Whether a file's chunks, whose lengths `raw_len` gives where known, add up to its
/// recorded size; `Some(sum)` when they are all known and do not.
pub fn chunk_sum_mismatch(
    size: u64,
    chunks: &[ChunkId],
    mut raw_len: impl FnMut(ChunkId) -> Option<u64>,
) -> Option<u64> {
    let mut sum: u64 = 0;
    for &id in chunks {
        sum = sum.saturating_add(raw_len(id)?);
    }
    (sum != size).then_some(sum)
}

/// Limits on what expanding a checkpoint's tree may yield: the counts its record gives.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    tree: TreeId,
    limit: Totals,
    used: Totals,
}

impl Budget {
    /// A budget for tree `tree` of `limit` files and bytes.
    pub fn new(tree: TreeId, limit: Totals) -> Self {
        Budget {
            tree,
            limit,
            used: Totals::default(),
        }
    }

    /// Counts `node` (a file or symlink) as yielded; an error once the tree has yielded
    /// more than its record says it holds.
    pub fn take(&mut self, node: &Node) -> Result<()> {
        self.used.files += 1;
        if let Node::File { size, .. } | Node::FileWithMode { size, .. } = node {
            self.used.bytes = self.used.bytes.saturating_add(*size);
        }
        let (what, n) = if self.used.files > self.limit.files {
            ("files", self.limit.files)
        } else if self.used.bytes > self.limit.bytes {
            ("bytes", self.limit.bytes)
        } else {
            return Ok(());
        };
        Err(Error::Corrupt(format!(
            "tree {} holds more {what} than its checkpoint records ({n})",
            self.tree
        )))
    }
}

/// The error for a walk that went deeper than [`MAX_DEPTH`] below tree `id`.
pub fn too_deep(id: TreeId) -> Error {
    Error::Corrupt(format!(
        "tree {id} nests directories deeper than {MAX_DEPTH}"
    ))
}

/// A one-chunk file of `n` bytes (at most a chunk's worth) whose chunk id is `n`, for
/// the unit tests of the tree code.
#[cfg(test)]
pub(crate) fn test_file(n: u128) -> Node {
    Node::File {
        size: n as u64,
        executable: false,
        chunks: vec![ChunkId(n)],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Files with git's two modes keep the record every store has always written (so
    /// their trees, and the ids of trees above them, do not change); only other
    /// permission bits take the newer kind, and never more than `0777`.
    #[test]
    fn only_files_with_unusual_permissions_take_the_newer_record() {
        let chunks = || vec![ChunkId(7)];
        for (mode, executable) in [(0o100644, false), (0o755, true), (0o4755, true)] {
            assert_eq!(
                Node::file(1, mode, chunks(), true),
                Node::File {
                    size: 1,
                    executable,
                    chunks: chunks()
                },
                "{mode:o}"
            );
        }
        for (mode, kept) in [
            (0o600, 0o600),
            (0o100444, 0o444),
            (0o2640, 0o640),
            (0o700, 0o700),
        ] {
            let node = Node::file(1, mode, chunks(), true);
            assert_eq!(
                node,
                Node::FileWithMode {
                    size: 1,
                    mode: kept,
                    chunks: chunks()
                },
                "{mode:o}"
            );
            assert_eq!(node.is_executable(), kept & 0o100 != 0, "{mode:o}");
        }
        assert_eq!(
            Node::file(1, 0o700, chunks(), false),
            Node::File {
                size: 1,
                executable: true,
                chunks: chunks()
            }
        );
    }

    use super::test_file as file;

    /// After a splice over pending trees, only the trees the new root reaches stay:
    /// the ones it replaced go, a tree two directories share stays once, and a tree
    /// the store holds (not pending) ends the walk there.
    #[test]
    fn keep_reachable_drops_the_trees_a_splice_replaced() {
        let hasher = Hasher::new([7; 32], ChunkParams::default());
        let path = |p: &str| p.as_bytes().to_vec();
        let files = vec![
            (path("a/x"), file(1)),
            (path("b/x"), file(1)),
            (path("c/y"), file(2)),
        ];
        let mut pending = PendingTrees::new();
        let (root, _) = build(&hasher, &mut files.clone(), &mut pending).unwrap();
        // root, a/ = b/, c/
        assert_eq!(pending.len(), 3);
        let read = |pending: &PendingTrees, id: TreeId| -> Result<Tree> {
            codec::decode(&pending[&id], "tree")
        };
        let mut made = PendingTrees::new();
        let spliced = {
            let before = pending.clone();
            splice(
                &hasher,
                root,
                &mut |id| read(&before, id),
                &[path("c/y")],
                &[(path("c/y"), file(3))],
                &mut made,
            )
            .unwrap()
        };
        pending.extend(made);
        assert_eq!(pending.len(), 5);
        keep_reachable(&mut pending, spliced.root).unwrap();
        let mut expected = PendingTrees::new();
        let new_files = vec![
            (path("a/x"), file(1)),
            (path("b/x"), file(1)),
            (path("c/y"), file(3)),
        ];
        assert_eq!(
            build(&hasher, &mut new_files.clone(), &mut expected)
                .unwrap()
                .0,
            spliced.root
        );
        assert_eq!(pending, expected);
        // A root the store holds keeps nothing.
        keep_reachable(&mut pending, TreeId(1)).unwrap();
        assert!(pending.is_empty());
    }

    #[test]
    fn names_that_escape_the_worktree_are_unsafe() {
        for bad in [
            &b""[..],
            b".",
            b"..",
            b"a/b",
            b"a\0b",
            b".git",
            b".GIT",
            b".Git",
        ] {
            assert!(!is_safe_name(bad), "{bad:?}");
        }
        for good in [
            &b"a"[..],
            b"..a",
            b".gitignore",
            b"-x",
            b"\xff\xfe",
            b"a b\n",
        ] {
            assert!(is_safe_name(good), "{good:?}");
        }
    }

    #[test]
    fn equal_directories_share_one_tree_and_order_is_canonical() {
        let hasher = Hasher::new([3; 32], ChunkParams::default());
        let files = vec![
            (b"a-b".to_vec(), file(1)),
            (b"a.txt".to_vec(), file(2)),
            (b"a/x".to_vec(), file(3)),
            (b"a0".to_vec(), file(4)),
            (b"b/x".to_vec(), file(3)),
        ];
        let mut pending = PendingTrees::new();
        let (root, totals) = build(&hasher, &mut files.clone(), &mut pending).unwrap();
        assert_eq!(totals.files, 5);
        // root + one shared tree for a/ and b/
        assert_eq!(pending.len(), 2);
        let tree: Tree = codec::decode(&pending[&root], "root").unwrap();
        let names: Vec<&[u8]> = tree.entries.iter().map(|e| e.name.as_slice()).collect();
        assert_eq!(names, [&b"a"[..], b"a-b", b"a.txt", b"a0", b"b"]);
    }

    /// The checks accept every tree a save builds, with chunk lists as the chunker
    /// cuts them (empty, short, exactly the minimum, many chunks), and their chunks add
    /// up to their sizes.
    #[test]
    fn trees_as_saves_build_them_pass_the_checks() {
        let hasher = Hasher::new([5; 32], ChunkParams::default());
        let params = hasher.params();
        let random = crate::format::chunk::pseudo_random(3 << 20, 0x2545_f491_4f6c_dd1d);
        let mut lengths = HashMap::new();
        let mut node = |data: &[u8]| {
            let mut chunks = Vec::new();
            hasher.for_each_chunk(data, |piece| {
                let id = hasher.chunk_id(piece);
                lengths.insert(id, piece.len() as u64);
                chunks.push(id);
            });
            Node::File {
                size: data.len() as u64,
                executable: false,
                chunks,
            }
        };
        let files = vec![
            (b"a/empty".to_vec(), node(b"")),
            (b"a/min".to_vec(), node(&random[..params.min])),
            (b"a/min1".to_vec(), node(&random[..params.min + 1])),
            (b"b/big".to_vec(), node(&random)),
            (b"b/zeros".to_vec(), node(&vec![0; 2 << 20])),
            (b"c".to_vec(), node(b"c")),
        ];
        let mut pending = PendingTrees::new();
        build(&hasher, &mut files.clone(), &mut pending).unwrap();
        for bytes in pending.values() {
            let tree: Tree = codec::decode(bytes, "tree").unwrap();
            assert_eq!(tree_problem(&tree, &params), None, "{tree:?}");
            for entry in &tree.entries {
                if let Node::File { size, chunks, .. } | Node::FileWithMode { size, chunks, .. } =
                    &entry.node
                {
                    let sum = chunk_sum_mismatch(*size, chunks, |c| lengths.get(&c).copied());
                    assert_eq!(sum, None, "{:?}", entry.name);
                }
            }
        }
    }

    #[test]
    fn duplicate_unsorted_and_impossible_chunk_lists_are_problems() {
        let params = ChunkParams::default();
        let tree = |entries: Vec<(&str, Node)>| Tree {
            entries: entries
                .into_iter()
                .map(|(name, node)| Entry {
                    name: name.as_bytes().to_vec(),
                    node,
                })
                .collect(),
        };
        let other = |t: &Tree| match tree_problem(t, &params) {
            Some(TreeProblem::Other(problem)) => problem,
            found => panic!("{found:?}"),
        };
        assert!(other(&tree(vec![("a", file(1)), ("a", file(2))])).contains("twice"));
        assert!(other(&tree(vec![("b", file(1)), ("a", file(2))])).contains("out of order"));
        let listing = |size: u64, count: usize| Node::File {
            size,
            executable: false,
            chunks: vec![ChunkId(7); count],
        };
        // One chunk per `min` bytes, and one more (the last may be short).
        let min = params.min as u64;
        assert_eq!(
            tree_problem(&tree(vec![("f", listing(3 * min, 4))]), &params),
            None
        );
        assert!(other(&tree(vec![("f", listing(3 * min, 5))])).contains("5 chunks"));
        assert!(other(&tree(vec![("f", listing(1, 4000))])).contains("4000 chunks"));
        // No chunk holds more than `max` bytes.
        let max = params.max as u64;
        assert_eq!(
            tree_problem(&tree(vec![("f", listing(2 * max, 2))]), &params),
            None
        );
        assert!(other(&tree(vec![("f", listing(2 * max + 1, 2))])).contains("2 chunks"));
        assert!(matches!(
            tree_problem(&tree(vec![("..", file(1))]), &params),
            Some(TreeProblem::Unsafe(_))
        ));
    }

    #[test]
    fn a_budget_stops_past_the_recorded_files_or_bytes() {
        let mut budget = Budget::new(TreeId(9), Totals { files: 2, bytes: 3 });
        budget.take(&file(1)).unwrap();
        budget.take(&file(2)).unwrap();
        let err = budget.take(&file(0)).unwrap_err().to_string();
        assert!(
            err.contains("more files than its checkpoint records (2)"),
            "{err}"
        );
        let mut budget = Budget::new(TreeId(9), Totals { files: 5, bytes: 3 });
        budget.take(&file(3)).unwrap();
        let link = Node::Symlink {
            target: b"x".to_vec(),
        };
        budget.take(&link).unwrap();
        let err = budget.take(&file(1)).unwrap_err().to_string();
        assert!(
            err.contains("more bytes than its checkpoint records (3)"),
            "{err}"
        );
    }
}
