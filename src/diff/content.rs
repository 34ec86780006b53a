//! The content on each side of a [`Change`], read for a line diff: from the store's
//! chunks or, for a comparison with the worktree, from the files themselves; with git's
//! rules for what counts as binary and what is too big to read at all, and, for what a
//! person reads (`show`, `diff`), a bound on the content one diff expands in all
//! ([`EXPAND_LIMIT`]): a checkpoint whose few stored chunks expand to a hundred
//! gigabytes (a zip bomb a remote can send) is shown by its recorded sizes.

use std::cell::Cell;
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
/// The most content (the recorded sizes of both sides of every change, added up) a
/// reader made with [`ContentReader::expanding_at_most`] reads for `show` and `diff`: a
/// change that would take the total past it is left unread, shown by its sizes.
pub const EXPAND_LIMIT: u64 = 256 << 20;
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
    /// A file left unread because its change would take the content one diff reads past
    /// the reader's limit; it holds this many bytes, as its record says.
    Unexpanded(u64),
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

    /// Whether git would show this side as binary rather than by line: too big to read
    /// (or left unread), or a NUL byte among its first 8000.
    pub fn is_binary(&self) -> bool {
        match self {
            Content::TooBig(_) | Content::Unexpanded(_) => true,
            Content::Bytes(b) => b[..b.len().min(BINARY_PROBE)].contains(&0),
            Content::Absent => false,
        }
    }

    /// The side's length in bytes, read or not, for `Bin a -> b bytes` and summaries.
    pub fn size(&self) -> u64 {
        match self {
            Content::Absent => 0,
            Content::TooBig(n) | Content::Unexpanded(n) => *n,
            Content::Bytes(b) => b.len() as u64,
        }
    }

    /// Whether the side was left unread for the reader's limit ([`Content::Unexpanded`]).
    pub fn is_unexpanded(&self) -> bool {
        matches!(self, Content::Unexpanded(_))
    }
}

/// Reads what a change has on each side: the old side from the store, the new side
/// from the store or, for a comparison with the worktree, from the worktree itself.
pub struct ContentReader<'a> {
    hasher: &'a Hasher,
    chunks: &'a ReadChunks,
    worktree: Option<&'a Path>,
    /// The most content to read in all, if bounded ([`ContentReader::expanding_at_most`]).
    limit: Option<u64>,
    /// The recorded sizes of the changes read so far, added up.
    expanded: Cell<u64>,
}

impl<'a> ContentReader<'a> {
    /// A reader over the store's chunks; with `worktree`, new sides are read from files
    /// under that root (they came from a scan that stored nothing).
    pub fn new(hasher: &'a Hasher, chunks: &'a ReadChunks, worktree: Option<&'a Path>) -> Self {
        ContentReader {
            hasher,
            chunks,
            worktree,
            limit: None,
            expanded: Cell::new(0),
        }
    }

    /// This reader, reading no more than `limit` bytes of content over all the changes
    /// it is asked about, in the order asked: a change whose sides' recorded sizes would
    /// take the total past it is not read ([`Content::Unexpanded`]). What a person reads
    /// is bounded by the records, never by what the stored chunks expand to.
    pub fn expanding_at_most(mut self, limit: u64) -> Self {
        self.limit = Some(limit);
        self
    }

    /// Both sides of `change`, old then new, so that a diff has all it compares; both
    /// left unread when reading them would pass the reader's limit.
    pub fn sides(&self, change: &Change) -> Result<(Content, Content)> {
        let (old, new) = (change.old.as_ref(), change.new.as_ref());
        if !self.take_from_limit(old, new) {
            return Ok((unread(old), unread(new)));
        }
        Ok((
            self.read(&change.path, old, false)?,
            self.read(&change.path, new, true)?,
        ))
    }

    /// Counts what reading `old` and `new` costs against the limit; `false` (and nothing
    /// counted) when it would pass it.
    fn take_from_limit(&self, old: Option<&Node>, new: Option<&Node>) -> bool {
        let Some(limit) = self.limit else {
            return true;
        };
        let cost = |node: Option<&Node>| match unread(node) {
            Content::Unexpanded(size) => size,
            _ => 0,
        };
        let total = self
            .expanded
            .get()
            .saturating_add(cost(old))
            .saturating_add(cost(new));
        if total > limit {
            return false;
        }
        self.expanded.set(total);
        true
    }

    fn read(&self, path: &[u8], node: Option<&Node>, new_side: bool) -> Result<Content> {
        Ok(match node {
            None | Some(Node::Dir { .. }) | Some(Node::Symlink { .. }) => unread(node),
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

/// What a side is without reading a file's content: a symlink's target (in its record)
/// as it is, a file as unread (too big, or [`Content::Unexpanded`]).
fn unread(node: Option<&Node>) -> Content {
    match node {
        None | Some(Node::Dir { .. }) => Content::Absent,
        Some(Node::Symlink { target }) => Content::Bytes(target.clone()),
        Some(Node::File { size, .. } | Node::FileWithMode { size, .. }) if *size > BIG_FILE => {
            Content::TooBig(*size)
        }
        Some(Node::File { size, .. } | Node::FileWithMode { size, .. }) => {
            Content::Unexpanded(*size)
        }
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
        assert!(Content::Unexpanded(7).is_binary() && Content::Unexpanded(7).is_unexpanded());
        assert_eq!(Content::Unexpanded(7).size(), 7);
    }
}
