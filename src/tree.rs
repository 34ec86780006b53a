//! Directory records. A tree is the sorted list of one directory's entries; its id is
//! the hash of its encoding, so an unchanged directory is stored once across all
//! checkpoints and equal subtrees are recognised by id alone.

use std::collections::HashMap;

use redb::ReadableTable;
use serde::{Deserialize, Serialize};

use crate::chunk::Hasher;
use crate::codec;
use crate::{Error, Id, Result};

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
        chunks: Vec<u128>,
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
        tree: u128,
    },
}

impl Node {
    /// A short word for the kind, for plans and messages.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Node::File { .. } => "file",
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
pub type PendingTrees = HashMap<u128, Vec<u8>>;

/// Builds the trees for a flat list of `(path, node)` (paths relative to the root,
/// `/`-separated, sorted by bytes, no `Dir` nodes) and returns the root tree id.
/// Every tree goes into `pending`; the caller stores the ones the store lacks.
pub fn build(
    hasher: &Hasher,
    files: &[(Vec<u8>, Node)],
    pending: &mut PendingTrees,
) -> (Id, Totals) {
    let mut totals = Totals::default();
    let root = build_dir(hasher, files, 0, pending, &mut totals);
    (root, totals)
}

fn build_dir(
    hasher: &Hasher,
    files: &[(Vec<u8>, Node)],
    prefix_len: usize,
    pending: &mut PendingTrees,
    totals: &mut Totals,
) -> Id {
    let mut entries = Vec::new();
    let mut i = 0;
    while i < files.len() {
        let rest = &files[i].0[prefix_len..];
        match rest.iter().position(|&b| b == b'/') {
            None => {
                if let Node::File { size, .. } = files[i].1 {
                    totals.bytes += size;
                }
                totals.files += 1;
                entries.push(Entry {
                    name: rest.to_vec(),
                    node: files[i].1.clone(),
                });
                i += 1;
            }
            Some(slash) => {
                // Sorted input keeps every path under `name/` in one contiguous run.
                let dir_prefix = &files[i].0[..prefix_len + slash + 1];
                let end = i + files[i..]
                    .iter()
                    .position(|(p, _)| !p.starts_with(dir_prefix))
                    .unwrap_or(files.len() - i);
                let child = build_dir(hasher, &files[i..end], dir_prefix.len(), pending, totals);
                entries.push(Entry {
                    name: rest[..slash].to_vec(),
                    node: Node::Dir { tree: child.0 },
                });
                i = end;
            }
        }
    }
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    let encoded = codec::encode(&Tree { entries });
    let id = hasher.id(&encoded);
    pending.entry(id.0).or_insert(encoded);
    id
}

/// Reads trees from the store, or from trees built in memory that are not stored yet.
pub struct TreeReader<'a, T> {
    hasher: &'a Hasher,
    table: &'a T,
    pending: Option<&'a PendingTrees>,
}

impl<'a, T: ReadableTable<u128, &'static [u8]>> TreeReader<'a, T> {
    /// A reader over the store's tree table and, optionally, unsaved trees.
    pub fn new(hasher: &'a Hasher, table: &'a T, pending: Option<&'a PendingTrees>) -> Self {
        TreeReader {
            hasher,
            table,
            pending,
        }
    }

    /// The tree `id`, checked against its id (so a damaged record is an error, never a
    /// different tree) and with every entry name checked by [`is_safe_name`].
    pub fn get(&self, id: u128) -> Result<Tree> {
        let what = || format!("tree {}", Id(id));
        let tree: Tree = match self.pending.and_then(|p| p.get(&id)) {
            Some(bytes) => codec::decode(bytes, &what())?,
            None => match self.table.get(id)? {
                Some(value) if self.hasher.id(value.value()) == Id(id) => {
                    codec::decode(value.value(), &what())?
                }
                Some(_) => return Err(Error::Corrupt(format!("{} does not match its id", what()))),
                None => return Err(Error::Corrupt(format!("{} is missing", what()))),
            },
        };
        if let Some(bad) = tree.entries.iter().find(|e| !is_safe_name(&e.name)) {
            return Err(Error::UnsafeName(
                String::from_utf8_lossy(&bad.name).into_owned(),
            ));
        }
        Ok(tree)
    }

    /// Every file and symlink under tree `id`, as `(path, node)` sorted by path, with
    /// paths prefixed by `prefix` (empty, or ending in `/`).
    pub fn flatten(&self, id: u128, prefix: &[u8], out: &mut Vec<(Vec<u8>, Node)>) -> Result<()> {
        for entry in self.get(id)?.entries {
            let mut path = prefix.to_vec();
            path.extend_from_slice(&entry.name);
            match entry.node {
                Node::Dir { tree } => {
                    path.push(b'/');
                    self.flatten(tree, &path, out)?;
                }
                node => out.push((path, node)),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk::ChunkParams;

    fn file(n: u128) -> Node {
        Node::File {
            size: 1,
            executable: false,
            chunks: vec![n],
        }
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
        let (root, totals) = build(&hasher, &files, &mut pending);
        assert_eq!(totals.files, 5);
        // root + one shared tree for a/ and b/
        assert_eq!(pending.len(), 2);
        let tree: Tree = codec::decode(&pending[&root.0], "root").unwrap();
        let names: Vec<&[u8]> = tree.entries.iter().map(|e| e.name.as_slice()).collect();
        assert_eq!(names, [&b"a"[..], b"a-b", b"a.txt", b"a0", b"b"]);
    }
}
