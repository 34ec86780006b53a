//! The content on each side of a [`Change`], read for a line diff: from the store's
//! chunks or, for a comparison with the worktree, from the files themselves; with git's
//! rules for what counts as binary and what is too big to read at all.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::diff::Change;
use crate::format::chunk::Hasher;
use crate::format::path::quote_path;
use crate::model::tree::Node;
use crate::storage::pack::{LastPack, ReadChunks};
use crate::{ChunkId, Error, Result};

/// Files larger than this are called binary without being read (git's
/// `core.bigFileThreshold` default).
const BIG_FILE: u64 = 512 << 20;
/// git calls content binary when a NUL byte occurs in this many leading bytes.
const BINARY_PROBE: usize = 8000;

/// One side of a change as read, so that a diff can tell a missing side from an empty
/// one and a file too big to read from one it has in memory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Content {
    /// The path is absent on this side (or is a directory).
    Absent,
    /// A file over git's big-file threshold, left unread; it holds this many bytes.
    TooBig(u64),
    /// The file's content, or a symlink's target.
    Bytes(Vec<u8>),
}

impl Content {
    /// The bytes to diff by line: empty for an absent or unread side, which a diff then
    /// shows as all added or all removed.
    pub fn bytes(&self) -> &[u8] {
        match self {
            Content::Bytes(b) => b,
            _ => &[],
        }
    }

    /// Whether git would show this side as binary rather than by line: too big to read,
    /// or a NUL byte among its first 8000.
    pub fn is_binary(&self) -> bool {
        match self {
            Content::TooBig(_) => true,
            Content::Bytes(b) => b[..b.len().min(BINARY_PROBE)].contains(&0),
            Content::Absent => false,
        }
    }

    /// The side's length in bytes, read or not, for `Bin a -> b bytes` and summaries.
    pub fn size(&self) -> u64 {
        match self {
            Content::Absent => 0,
            Content::TooBig(n) => *n,
            Content::Bytes(b) => b.len() as u64,
        }
    }
}

/// Reads what a change has on each side: the old side from the store, the new side
/// from the store or, for a comparison with the worktree, from the worktree itself.
pub struct ContentReader<'a> {
    hasher: &'a Hasher,
    chunks: &'a ReadChunks,
    worktree: Option<&'a Path>,
}

impl<'a> ContentReader<'a> {
    /// A reader over the store's chunks; with `worktree`, new sides are read from files
    /// under that root (they came from a scan that stored nothing).
    pub fn new(hasher: &'a Hasher, chunks: &'a ReadChunks, worktree: Option<&'a Path>) -> Self {
        ContentReader {
            hasher,
            chunks,
            worktree,
        }
    }

    /// Both sides of `change`, old then new, so that a diff has all it compares.
    pub fn sides(&self, change: &Change) -> Result<(Content, Content)> {
        Ok((
            self.read(&change.path, change.old.as_ref(), false)?,
            self.read(&change.path, change.new.as_ref(), true)?,
        ))
    }

    fn read(&self, path: &[u8], node: Option<&Node>, new_side: bool) -> Result<Content> {
        Ok(match node {
            None | Some(Node::Dir { .. }) => Content::Absent,
            Some(Node::Symlink { target }) => Content::Bytes(target.clone()),
            Some(Node::File { size, .. } | Node::FileWithMode { size, .. }) if *size > BIG_FILE => {
                Content::TooBig(*size)
            }
            Some(Node::File { size, chunks, .. } | Node::FileWithMode { size, chunks, .. }) => {
                match self.worktree.filter(|_| new_side) {
                    Some(root) => {
                        let full = root.join(OsStr::from_bytes(path));
                        Content::Bytes(std::fs::read(&full).map_err(|e| Error::io(full, e))?)
                    }
                    None => Content::Bytes(self.read_stored(path, *size, chunks)?),
                }
            }
        })
    }

    /// A stored file's content, which must be exactly `size` bytes: reading stops at the
    /// first chunk that takes it past `size`, so a file record listing more content than
    /// it says (a crafted store) costs no more than its size and one chunk.
    fn read_stored(&self, path: &[u8], size: u64, chunks: &[ChunkId]) -> Result<Vec<u8>> {
        let wrong = |held: &str| {
            Error::Corrupt(format!(
                "file {}: its chunks hold {held} than its recorded size of {size} bytes",
                quote_path(path)
            ))
        };
        let mut out = Vec::new();
        let mut last = LastPack::default();
        for &id in chunks {
            self.chunks.read(self.hasher, id, &mut out, &mut last)?;
            if out.len() as u64 > size {
                return Err(wrong("more"));
            }
        }
        if (out.len() as u64) < size {
            return Err(wrong("less"));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_is_a_nul_in_the_probe_or_too_big() {
        assert!(!Content::Absent.is_binary());
        assert!(Content::TooBig(BIG_FILE + 1).is_binary());
        assert!(Content::Bytes(b"a\0b".to_vec()).is_binary());
        let mut late = vec![b'a'; BINARY_PROBE];
        late.push(0);
        assert!(!Content::Bytes(late).is_binary());
        assert_eq!(Content::TooBig(7).size(), 7);
        assert_eq!(Content::TooBig(7).bytes(), b"");
    }
}
