//! The per-file read of a scan: one walked entry read, hashed and cut into chunks, each
//! new chunk compressed (as a delta of the file's previous version where that is
//! smaller) and sent to the writer; a small one goes into the scan's open solid block
//! instead, which the reader that fills it compresses and sends. A file that changes
//! while it is read is read again, and left out rather than stored torn.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::sync::{Mutex, OnceLock};

use super::content::READ_WHOLE_LIMIT;
use super::stat_match::Cached;
use super::writer::{ChunkSender, NewChunk, ToWrite};
use super::Warning;
use crate::format::chunk::{self, Hasher};
use crate::model::stat_cache::FileStat;
use crate::model::tree::Node;
use crate::model::SkipReason;
use crate::storage::pack::{Delta, LastPack, OpenBlock, ReadChunks};
use crate::worktree::walk::{self, Kind};
use crate::{ChunkId, Error, Result};

/// How often a file that changes while it is read is read before it is left out.
const READ_ATTEMPTS: usize = 5;

/// What scanning one walked entry found. The entry's path is joined when the results
/// are gathered, which keeps this small: a tree of 200,000 files holds 200,000 of them
/// (64 bytes each: what is rare, a changed stat or a problem, is boxed).
pub(super) struct Scanned {
    /// The file or symlink as it goes into the tree; `None` when it is left out.
    pub(super) node: Option<Node>,
    /// What it does to its stat cache entry.
    pub(super) cache: CacheChange,
    /// Rare: the file changed since the walk, or something to warn about.
    pub(super) rare: Option<Box<Rare>>,
}

/// What a scanned entry does to its stat cache entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum CacheChange {
    /// Nothing: the entry vouched for the file.
    Keep,
    /// Record the file as read, with the metadata the walk saw, or [`Rare::changed`]
    /// when it changed since the walk.
    Put,
    /// Forget the file: it was not read, or not settled.
    Remove,
}

/// The rare part of a [`Scanned`].
pub(super) struct Rare {
    /// The metadata the file was read under, when it changed since the walk.
    pub(super) changed: Option<FileStat>,
    /// Something to warn about, and why the file is left out, if it is.
    pub(super) problem: Option<Problem>,
}

/// Why a scanned entry is not in the tree as it is, or what to say about it.
pub(super) struct Problem {
    /// What the user hears.
    pub(super) warning: Warning,
    /// Why it is recorded as skipped, if it is.
    pub(super) skipped: Option<SkipReason>,
}

impl Scanned {
    fn node(node: Node, cache: CacheChange) -> Scanned {
        Scanned {
            node: Some(node),
            cache,
            rare: None,
        }
    }

    fn left_out(warning: Warning, skipped: Option<SkipReason>) -> Scanned {
        Scanned {
            node: None,
            cache: CacheChange::Remove,
            rare: Some(Box::new(Rare {
                changed: None,
                problem: Some(Problem { warning, skipped }),
            })),
        }
    }

    /// The place of an entry whose scan failed: the scan as a whole fails with its error.
    pub(super) fn failed() -> Scanned {
        Scanned {
            node: None,
            cache: CacheChange::Keep,
            rare: None,
        }
    }
}

/// How many chunk ids [`SentChunks`] keeps in each of its two generations.
const SENT_REMEMBERED: usize = 1 << 16;

/// The chunks a scan sent to the writer lately, so that a chunk that recurs (a file
/// copied, a licence in every package) is compressed and sent once. Bounded: two
/// generations of [`SENT_REMEMBERED`] ids, the older dropped when the newer fills, so
/// that a save of a million new files does not hold a million ids (docs/design.md,
/// "Save", memory). A chunk that recurs after more new chunks than that is compressed
/// again, and the writer, which finds it in the store by then, stores it once; in a solid
/// block, its bytes are stored a second time.
#[derive(Default)]
pub(super) struct SentChunks {
    /// The newer generation, then the older.
    generations: Mutex<(HashSet<ChunkId>, HashSet<ChunkId>)>,
}

impl SentChunks {
    /// Whether `id` is sent now for the first time as far as this remembers; it is
    /// remembered from now on.
    pub(super) fn first_sending(&self, id: ChunkId) -> bool {
        let Ok(mut generations) = self.generations.lock() else {
            return true;
        };
        let (newer, older) = &mut *generations;
        if older.contains(&id) || !newer.insert(id) {
            return false;
        }
        if newer.len() >= SENT_REMEMBERED {
            *older = std::mem::take(newer);
        }
        true
    }
}

/// What every reader thread of a scan shares: where the files are, how to name and
/// find chunks, and where new ones go.
pub(super) struct ScanContext<'a> {
    /// The worktree's top.
    pub(super) root: &'a std::path::Path,
    /// Names chunks and finds their cut points.
    pub(super) hasher: &'a Hasher,
    /// The chunks the store holds (a chunk it has is never sent again).
    pub(super) chunks: &'a ReadChunks,
    /// The chunks this scan sent to the writer (or put in `block`) lately.
    pub(super) sent: &'a SentChunks,
    /// The open solid block every reader adds small new chunks to; the one whose chunk
    /// does not fit takes it, compresses it outside the lock and sends it. The last one
    /// is sent by [`ScanContext::send_last_block`].
    pub(super) block: &'a Mutex<OpenBlock>,
    /// Where new chunks go and their zstd level; `None` when the scan stores nothing.
    pub(super) tx: Option<(ChunkSender, i32)>,
    /// The filesystem's clock, read before the scan read any file, to judge whether a
    /// file is settled; unset (nothing is settled) while no file was to be read.
    pub(super) clock_ns: OnceLock<i64>,
    /// Leave out unreadable files (recorded as skipped) instead of failing.
    pub(super) skip_unreadable: bool,
    /// `checkpoint.keepPermissions`: record every permission bit, not only git's one.
    pub(super) keep_permissions: bool,
}

impl ScanContext<'_> {
    /// Scans one walked entry: a file the stat cache vouches for is taken from it, a
    /// symlink is read, any other file is read until two reads agree (docs/design.md
    /// invariant 12).
    pub(super) fn scan_one(
        &self,
        entry: &walk::WalkEntry,
        cached: Option<Cached>,
        buf: &mut Vec<u8>,
    ) -> Result<Scanned> {
        let cached = match cached {
            Some(hit) if hit.vouches && entry.kind == Kind::File => {
                return Ok(Scanned::node(
                    file_node(&entry.stat, hit.chunks, self.keep_permissions),
                    CacheChange::Keep,
                ));
            }
            other => other,
        };
        let full = self.root.join(OsStr::from_bytes(&entry.path));
        if entry.kind == Kind::Symlink {
            return match std::fs::read_link(&full) {
                Ok(target) => Ok(Scanned::node(
                    Node::Symlink {
                        target: target.into_os_string().into_encoded_bytes(),
                    },
                    CacheChange::Keep,
                )),
                Err(e) => vanished(&entry.path, e),
            };
        }
        // A change during the read shows in the metadata, except within one tick of the
        // filesystem's coarse clock: a file modified since the scan began (not "settled")
        // is therefore read twice and taken only if both reads agree.
        // The version the last save stored, whose chunks new ones may be deltas of.
        let previous = cached.as_ref().map_or(&[][..], |c| c.chunks.as_slice());
        let mut stat = entry.stat;
        let mut first_read: Option<Vec<ChunkId>> = None;
        for attempt in 1..=READ_ATTEMPTS {
            let (chunk_ids, after) = match self.read_file(&full, &stat, previous, buf) {
                Ok(read) => read,
                // Gone, replaced by another file, or by a symlink (O_NOFOLLOW: ELOOP).
                Err(Error::Io { error, .. })
                    if error.kind() == std::io::ErrorKind::NotFound
                        || error.raw_os_error() == Some(libc::ELOOP) =>
                {
                    return vanished(&entry.path, std::io::ErrorKind::NotFound.into())
                }
                Err(e) if self.skip_unreadable => {
                    return Ok(Scanned::left_out(
                        Warning::Unreadable(e),
                        Some(SkipReason::Unreadable),
                    ))
                }
                Err(e) => return Err(e),
            };
            if after != stat {
                stat = after;
                first_read = None;
                std::thread::sleep(std::time::Duration::from_millis(5 * attempt as u64));
                continue;
            }
            let settled = stat.is_settled(self.clock_ns.get().copied().unwrap_or(i64::MIN));
            if !settled && first_read.as_ref() != Some(&chunk_ids) {
                first_read = Some(chunk_ids);
                continue;
            }
            let mut scanned = Scanned::node(
                file_node(&stat, chunk_ids, self.keep_permissions),
                match settled {
                    true => CacheChange::Put,
                    false => CacheChange::Remove,
                },
            );
            if settled && stat != entry.stat {
                scanned.rare = Some(Box::new(Rare {
                    changed: Some(stat),
                    problem: None,
                }));
            }
            return Ok(scanned);
        }
        // Never store a torn mix: leave the file out of this checkpoint. Restore refuses
        // to overwrite a file that is not in the current checkpoint, so it is not lost.
        Ok(Scanned::left_out(
            Warning::KeptChanging {
                path: entry.path.clone(),
            },
            None,
        ))
    }

    /// Reads, chunks and (in store mode) stores one file; returns its chunk ids and its
    /// metadata after the read, which differs from `before` if it changed meanwhile.
    /// `previous` is the file's last stored version's chunks (empty if none).
    fn read_file(
        &self,
        path: &std::path::Path,
        before: &FileStat,
        previous: &[ChunkId],
        buf: &mut Vec<u8>,
    ) -> Result<(Vec<ChunkId>, FileStat)> {
        // Not through a symlink, and never blocking on a FIFO put in the file's place;
        // then the handle must be the very file the walk listed (same device and inode),
        // or a directory swapped for a symlink since could have led the read elsewhere.
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(path)
            .map_err(|e| Error::io(path, e))?;
        let opened = file.metadata().map_err(|e| Error::io(path, e))?;
        if !opened.is_file() || (opened.dev(), opened.ino()) != (before.dev, before.ino) {
            return Err(Error::io(
                path,
                std::io::Error::from(std::io::ErrorKind::NotFound),
            ));
        }
        let mut ids = Vec::new();
        if before.size <= READ_WHOLE_LIMIT {
            buf.clear();
            file.read_to_end(buf).map_err(|e| Error::io(path, e))?;
            let mut failed = None;
            self.hasher.for_each_chunk(buf, |piece| {
                if failed.is_none() {
                    match self.keep_chunk(piece, counterpart(previous, ids.len())) {
                        Ok(id) => ids.push(id),
                        Err(e) => failed = Some(e),
                    }
                }
            });
            if let Some(e) = failed {
                return Err(e);
            }
        } else {
            let p = self.hasher.params();
            let stream = fastcdc::v2020::StreamCDC::new(&mut file, p.min, p.avg, p.max);
            for piece in stream {
                let piece = piece.map_err(|e| Error::io(path, std::io::Error::other(e)))?;
                ids.push(self.keep_chunk(&piece.data, counterpart(previous, ids.len()))?);
            }
        }
        let after = file.metadata().map_err(|e| Error::io(path, e))?;
        // Held until the save commits, one list per file: pushing leaves room for four
        // ids, where most files have one (docs/design.md, "Save", memory).
        ids.shrink_to_fit();
        Ok((ids, FileStat::from_metadata(&after)))
    }

    /// Names a chunk and, if the store lacks it, sends it compressed to the writer: as a
    /// delta of `previous` (the chunk in its place in the file's last stored version)
    /// where that is smaller, else a small one through the open solid block.
    fn keep_chunk(&self, piece: &[u8], previous: Option<ChunkId>) -> Result<ChunkId> {
        let id = self.hasher.chunk_id(piece);
        let Some((tx, level)) = &self.tx else {
            return Ok(id);
        };
        let level = *level;
        let known = self.chunks.contains(id)?;
        let fresh = !known && self.sent.first_sending(id);
        if !fresh {
            return Ok(id);
        }
        // A base that cannot be read is only a saving missed: the chunk is stored
        // whole, and verify reports the damage.
        let delta = match previous {
            Some(base) => self.encode_delta(piece, base, level).unwrap_or(None),
            None => None,
        };
        let small = piece.len() < chunk::SOLID_CHUNK_MAX;
        // A small chunk's delta is weighed against the chunk stored alone, as the block
        // it would otherwise join is not known yet.
        let full = (delta.is_some() || !small).then(|| chunk::encode_chunk(piece, level));
        let item = match (delta, full) {
            (Some((stored, delta)), Some(full)) if stored.len() < full.len() => {
                ToWrite::Chunk(NewChunk {
                    id,
                    raw_len: piece.len(),
                    stored,
                    delta: Some(delta),
                })
            }
            (_, Some(full)) if !small => ToWrite::Chunk(NewChunk {
                id,
                raw_len: piece.len(),
                stored: full,
                delta: None,
            }),
            _ => match self.add_to_block(id, piece, level)? {
                Some(item) => item,
                None => return Ok(id),
            },
        };
        tx.send(item)
            .map_err(|_| Error::Internal("the chunk writer stopped".into()))?;
        Ok(id)
    }

    /// Adds small chunk `id` to the open solid block; if it does not fit, the block is
    /// taken, replaced by one holding the chunk, and returned compressed: compression
    /// happens outside the lock, on this reader's thread.
    fn add_to_block(&self, id: ChunkId, piece: &[u8], level: i32) -> Result<Option<ToWrite>> {
        let poisoned = || Error::Internal("a reader panicked holding the open block".into());
        let full = {
            let mut open = self.block.lock().map_err(|_| poisoned())?;
            let full = match open.fits(piece.len()) {
                true => None,
                false => Some(open.take()),
            };
            open.push(id, piece)?;
            full
        };
        Ok(full.map(|block| ToWrite::Block(block.seal(chunk::block_level(level)))))
    }

    /// Sends the open solid block, if it holds anything: called once every reader is
    /// done, before the channel closes.
    pub(super) fn send_last_block(&self) -> Result<()> {
        let Some((tx, level)) = &self.tx else {
            return Ok(());
        };
        let poisoned = || Error::Internal("a reader panicked holding the open block".into());
        let block = std::mem::take(&mut *self.block.lock().map_err(|_| poisoned())?);
        if block.is_empty() {
            return Ok(());
        }
        tx.send(ToWrite::Block(block.seal(chunk::block_level(*level))))
            .map_err(|_| Error::Internal("the chunk writer stopped".into()))
    }

    /// `piece` compressed against stored chunk `base`, unless the store lacks `base`.
    /// When `base`'s chain of bases is already as deep as a read may go, the delta is
    /// made against `base`'s own base instead (one version older, one step shallower):
    /// restarting the chain with a whole chunk cost a long session of small edits a full
    /// chunk every fifth version, most of its store's growth (docs/performance.md,
    /// "Store size").
    fn encode_delta(
        &self,
        piece: &[u8],
        base: ChunkId,
        level: i32,
    ) -> Result<Option<(Vec<u8>, Delta)>> {
        if !self.chunks.contains(base)? {
            return Ok(None);
        }
        let (base, below) = match self.chunks.delta_of(base)? {
            Some(deep) if deep.depth >= chunk::MAX_DELTA_DEPTH => {
                (deep.base, self.chunks.delta_of(deep.base)?)
            }
            below => (base, below),
        };
        let depth = below.map_or(0, |d| d.depth) + 1;
        if depth > chunk::MAX_DELTA_DEPTH {
            return Ok(None);
        }
        let mut content = Vec::new();
        self.chunks
            .read(self.hasher, base, &mut content, &mut LastPack::default())?;
        Ok(chunk::encode_delta(piece, &content, level)
            .map(|stored| (stored, Delta { base, depth })))
    }
}

/// The chunk of a file's previous version (`previous`) in the place of its new chunk
/// number `index`: the same number, or the last for a file that grew. Edits move few
/// content-defined cut points, so this is mostly the chunk the new one was edited from.
fn counterpart(previous: &[ChunkId], index: usize) -> Option<ChunkId> {
    previous.get(index).or(previous.last()).copied()
}

fn file_node(stat: &FileStat, chunks: Vec<ChunkId>, keep_permissions: bool) -> Node {
    Node::file(stat.size, stat.mode, chunks, keep_permissions)
}

fn vanished(path: &[u8], e: std::io::Error) -> Result<Scanned> {
    if e.kind() == std::io::ErrorKind::NotFound {
        Ok(Scanned::left_out(
            Warning::Vanished {
                path: path.to_vec(),
            },
            None,
        ))
    } else {
        Err(Error::io(OsStr::from_bytes(path), e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scan holds one of each per file of the tree at once (docs/design.md, "Save",
    /// memory): growing one grows a save of a million files by a megabyte a byte. The
    /// files are made in the buffer of the scans, so a file's place must fit in a scan's.
    #[test]
    fn the_per_file_places_of_a_scan_stay_small() {
        assert!(std::mem::size_of::<Option<Cached>>() <= 32);
        assert!(std::mem::size_of::<(Vec<u8>, Scanned)>() <= 96);
        assert!(
            std::mem::size_of::<(Vec<u8>, Node)>() <= std::mem::size_of::<(Vec<u8>, Scanned)>()
        );
        assert_eq!(
            std::mem::align_of::<(Vec<u8>, Node)>(),
            std::mem::align_of::<(Vec<u8>, Scanned)>()
        );
    }
}
