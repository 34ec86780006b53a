//! Saving: scan the worktree into trees (reading only files the stat cache cannot vouch
//! for), store the new chunks, then commit trees, the checkpoint, the branch move and the
//! stat cache together.
//!
//! Commit protocol (DESIGN invariant 2): chunks go in bounded batches of non-durable
//! commits while files are read; everything that makes the checkpoint visible commits
//! in one final durable transaction, which also makes the batches durable. A crash
//! before that commit leaves at most unreferenced chunks, which gc sweeps.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::sync::Mutex;

use rayon::prelude::*;
use redb::{Durability, ReadableDatabase, ReadableTable};

use crate::chunk::{self, Hasher};
use crate::codec;
use crate::dag::{self, Checkpoint, Head};
use crate::repo::Repo;
use crate::stat_cache::{self, CacheEntry, FileStat};
use crate::store::{Store, BRANCHES, CHECKPOINTS, CHUNKS, STATE, STAT_CACHE, TREES};
use crate::tree::{self, Node, PendingTrees, Totals};
use crate::walk::{self, Kind};
use crate::{Error, Id, Result};

/// Bytes of new chunks written per non-durable batch.
const BATCH_BYTES: usize = 64 << 20;
/// Files up to this size are read whole into a reused buffer; larger ones are streamed.
const READ_WHOLE_LIMIT: u64 = 8 << 20;
/// How often a file that changes while it is read is read again before giving up.
const READ_ATTEMPTS: usize = 3;

/// What a save should record.
#[derive(Clone, Debug, Default)]
pub struct SaveOptions {
    /// The checkpoint message.
    pub message: String,
    /// `key=value` metadata.
    pub meta: Vec<(String, String)>,
    /// Make a checkpoint even when nothing changed.
    pub allow_empty: bool,
    /// zstd level for new chunks.
    pub compression_level: i32,
}

/// Whether a scan stores what it reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScanMode {
    /// Write new chunks (compressed at the given level) to the store.
    Store(i32),
    /// Only hash: nothing is written (dry runs, `--no-save`).
    HashOnly,
}

/// A change to the stat cache found by a scan.
enum CacheUpdate {
    Put(Vec<u8>, Vec<u8>),
    Remove(Vec<u8>),
}

/// The worktree as a scan found it.
pub struct Snapshot {
    /// Its root tree.
    pub root: Id,
    /// Files and bytes.
    pub totals: Totals,
    /// Every tree of the snapshot, encoded; the store may already hold some.
    pub trees: PendingTrees,
    /// Things the user should hear about (skipped special files, vanished files).
    pub warnings: Vec<String>,
    cache_updates: Vec<CacheUpdate>,
}

/// The result of [`save`].
#[derive(Debug)]
pub enum SaveOutcome {
    /// A new checkpoint.
    Saved {
        /// Its id.
        id: Id,
        /// Its record.
        checkpoint: Box<Checkpoint>,
    },
    /// Nothing changed since the current checkpoint.
    Unchanged {
        /// The current checkpoint.
        current: Id,
    },
}

/// A save's outcome and the warnings met on the way.
#[derive(Debug)]
pub struct SaveReport {
    /// What happened.
    pub outcome: SaveOutcome,
    /// Things the user should hear about.
    pub warnings: Vec<String>,
}

/// Saves the worktree as a child of the current checkpoint and moves HEAD's branch to it,
/// unless nothing changed and `allow_empty` is off.
pub fn save(repo: &Repo, store: &Store, options: &SaveOptions) -> Result<SaveReport> {
    let (snapshot, git_head) = std::thread::scope(|scope| {
        let git_head = scope.spawn(|| repo.git_head());
        let snapshot = scan(repo, store, ScanMode::Store(options.compression_level));
        (snapshot, git_head.join().unwrap_or_default())
    });
    let snapshot = snapshot?;
    crate::fault::point("save-chunks-written");

    let txn = store.db.begin_write()?;
    let outcome = {
        let state = txn.open_table(STATE)?;
        let branches = txn.open_table(BRANCHES)?;
        let mut checkpoints = txn.open_table(CHECKPOINTS)?;
        let current = dag::current(&state, &branches)?;
        let head = dag::head(&state)?;
        drop((state, branches));
        let current_tree = match current {
            Some(id) => Some(dag::load(&checkpoints, id)?.tree),
            None => None,
        };
        if current_tree == Some(snapshot.root.0) && !options.allow_empty {
            SaveOutcome::Unchanged {
                current: current.expect("a current tree implies a current checkpoint"),
            }
        } else {
            let mut trees = txn.open_table(TREES)?;
            for (id, bytes) in &snapshot.trees {
                if trees.get(*id)?.is_none() {
                    trees.insert(*id, bytes.as_slice())?;
                }
            }
            let mut record = Checkpoint {
                tree: snapshot.root.0,
                parents: current.map(|c| c.0).into_iter().collect(),
                time_ns: crate::fault::now_ns(),
                message: options.message.clone(),
                branch: match head {
                    Head::Branch(name) => Some(name),
                    Head::Detached(_) => None,
                },
                git_head: git_head.commit,
                git_branch: git_head.branch,
                meta: options.meta.clone(),
                attachments: Vec::new(),
                files: snapshot.totals.files,
                bytes: snapshot.totals.bytes,
            };
            // Ids are hashes of the record; a clash (same tree, parent and nanosecond)
            // is resolved by moving the time on.
            let id = loop {
                let id = store.hasher.id(&codec::encode(&record));
                if checkpoints.get(id.0)?.is_none() {
                    break id;
                }
                record.time_ns += 1;
            };
            checkpoints.insert(id.0, codec::encode(&record).as_slice())?;
            drop(checkpoints);
            drop(trees);
            dag::move_head(&txn, id)?;
            SaveOutcome::Saved {
                id,
                checkpoint: Box::new(record),
            }
        }
    };
    apply_cache_updates(&txn, &snapshot.cache_updates)?;
    if matches!(outcome, SaveOutcome::Unchanged { .. }) && snapshot.cache_updates.is_empty() {
        // Nothing to record: skip the durable commit and its fsync.
        txn.abort()?;
    } else {
        txn.commit()?;
    }
    Ok(SaveReport {
        outcome,
        warnings: snapshot.warnings,
    })
}

fn apply_cache_updates(txn: &redb::WriteTransaction, updates: &[CacheUpdate]) -> Result<()> {
    let mut cache = txn.open_table(STAT_CACHE)?;
    for update in updates {
        match update {
            CacheUpdate::Put(path, entry) => {
                cache.insert(path.as_slice(), entry.as_slice())?;
            }
            CacheUpdate::Remove(path) => {
                cache.remove(path.as_slice())?;
            }
        }
    }
    Ok(())
}

/// Removes the stat cache entries of `paths` (files a restore rewrote or deleted).
pub fn forget_cached(txn: &redb::WriteTransaction, paths: &[Vec<u8>]) -> Result<()> {
    let mut cache = txn.open_table(STAT_CACHE)?;
    for path in paths {
        cache.remove(path.as_slice())?;
    }
    Ok(())
}

/// One file's outcome in a scan.
struct Scanned {
    node: Option<Node>,
    cache: Option<CacheUpdate>,
    warning: Option<String>,
}

/// Reads the worktree into trees. In [`ScanMode::Store`] new chunks are written to the
/// store as they are found; the trees are returned, not written.
pub fn scan(repo: &Repo, store: &Store, mode: ScanMode) -> Result<Snapshot> {
    let clock_ns = stat_cache::filesystem_clock(&repo.checkpoint_dir())?;
    let found = walk::walk(repo)?;
    let mut warnings: Vec<String> = found
        .special
        .iter()
        .map(|p| format!("skipped {}: not a regular file or symlink", show(p)))
        .collect();

    let read = store.db.begin_read()?;
    let chunks = read.open_table(CHUNKS)?;
    let cache = read.open_table(STAT_CACHE)?;
    let sent: Mutex<HashSet<u128>> = Mutex::new(HashSet::new());
    let (tx, rx) = crossbeam_channel::bounded::<(u128, Vec<u8>)>(64);
    // In hash-only mode no sender exists, so the writer sees the channel closed at once.
    let tx = match mode {
        ScanMode::Store(level) => Some((tx, level)),
        ScanMode::HashOnly => {
            drop(tx);
            None
        }
    };

    let scanned: Result<Vec<Scanned>> = std::thread::scope(|scope| {
        let writer = scope.spawn(|| write_chunks(store, rx));
        let context = ScanContext {
            root: &repo.root,
            hasher: &store.hasher,
            chunks: &chunks,
            sent: &sent,
            tx,
            clock_ns,
        };
        let scanned = found
            .entries
            .par_iter()
            .map_init(Vec::new, |buf, entry| {
                let cached = match entry.kind {
                    Kind::File => cached_entry(&cache, &entry.path)?,
                    Kind::Symlink => None,
                };
                context.scan_one(entry, cached, buf)
            })
            .collect::<Result<Vec<_>>>();
        drop(context);
        let written = writer
            .join()
            .unwrap_or_else(|_| Err(Error::Store("the chunk writer panicked".into())));
        let scanned = scanned?;
        written?;
        Ok(scanned)
    });
    let scanned = scanned?;

    let mut files = Vec::with_capacity(scanned.len());
    let mut cache_updates = Vec::new();
    for (entry, result) in found.entries.iter().zip(scanned) {
        if let Some(node) = result.node {
            files.push((entry.path.clone(), node));
        }
        cache_updates.extend(result.cache);
        warnings.extend(result.warning);
    }
    stale_cache_entries(&cache, &found.entries, &mut cache_updates)?;
    let mut trees = PendingTrees::new();
    let (root, totals) = tree::build(&store.hasher, &files, &mut trees);
    Ok(Snapshot {
        root,
        totals,
        trees,
        warnings,
        cache_updates,
    })
}

fn cached_entry(
    cache: &impl ReadableTable<&'static [u8], &'static [u8]>,
    path: &[u8],
) -> Result<Option<CacheEntry>> {
    match cache.get(path)? {
        // A cache entry that does not decode is only a missed shortcut: read the file.
        Some(v) => Ok(codec::decode(v.value(), "stat cache entry").ok()),
        None => Ok(None),
    }
}

/// Cache entries for paths the walk no longer found, by merging two sorted sequences.
fn stale_cache_entries(
    cache: &impl ReadableTable<&'static [u8], &'static [u8]>,
    walked: &[walk::WalkEntry],
    out: &mut Vec<CacheUpdate>,
) -> Result<()> {
    let mut i = 0;
    for item in cache.iter()? {
        let (key, _) = item?;
        let key = key.value();
        while i < walked.len() && walked[i].path.as_slice() < key {
            i += 1;
        }
        if walked.get(i).is_none_or(|w| w.path.as_slice() != key) {
            out.push(CacheUpdate::Remove(key.to_vec()));
        }
    }
    Ok(())
}

/// Sends a new chunk's id and stored form to the writer.
type ChunkSender = crossbeam_channel::Sender<(u128, Vec<u8>)>;

struct ScanContext<'a, C> {
    root: &'a std::path::Path,
    hasher: &'a Hasher,
    chunks: &'a C,
    sent: &'a Mutex<HashSet<u128>>,
    tx: Option<(ChunkSender, i32)>,
    clock_ns: i64,
}

impl<C: ReadableTable<u128, &'static [u8]> + Sync> ScanContext<'_, C> {
    fn scan_one(
        &self,
        entry: &walk::WalkEntry,
        cached: Option<CacheEntry>,
        buf: &mut Vec<u8>,
    ) -> Result<Scanned> {
        let full = self.root.join(OsStr::from_bytes(&entry.path));
        if entry.kind == Kind::Symlink {
            return Ok(match std::fs::read_link(&full) {
                Ok(target) => Scanned {
                    node: Some(Node::Symlink {
                        target: target.into_os_string().into_encoded_bytes(),
                    }),
                    cache: None,
                    warning: None,
                },
                Err(e) => vanished(&entry.path, e)?,
            });
        }
        if let Some(hit) = cached.as_ref().filter(|c| c.stat == entry.stat) {
            return Ok(Scanned {
                node: Some(file_node(&entry.stat, hit.chunks.clone())),
                cache: None,
                warning: None,
            });
        }
        let mut stat = entry.stat;
        for attempt in 1..=READ_ATTEMPTS {
            let read = match self.read_file(&full, &stat, buf) {
                Ok(read) => read,
                Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                    return vanished(&entry.path, source)
                }
                Err(e) => return Err(e),
            };
            let (chunk_ids, after) = read;
            if after == stat || attempt == READ_ATTEMPTS {
                let stable = after == stat;
                let cache = if stable && stat.is_settled(self.clock_ns) {
                    CacheUpdate::Put(
                        entry.path.clone(),
                        codec::encode(&CacheEntry {
                            stat,
                            chunks: chunk_ids.clone(),
                        }),
                    )
                } else {
                    CacheUpdate::Remove(entry.path.clone())
                };
                return Ok(Scanned {
                    node: Some(file_node(&after, chunk_ids)),
                    cache: Some(cache),
                    warning: (!stable)
                        .then(|| format!("{} kept changing while it was read", show(&entry.path))),
                });
            }
            stat = after;
        }
        unreachable!("the last attempt always returns")
    }

    /// Reads, chunks and (in store mode) stores one file; returns its chunk ids and its
    /// metadata after the read, which differs from `before` if it changed meanwhile.
    fn read_file(
        &self,
        path: &std::path::Path,
        before: &FileStat,
        buf: &mut Vec<u8>,
    ) -> Result<(Vec<u128>, FileStat)> {
        let mut file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        let mut ids = Vec::new();
        if before.size <= READ_WHOLE_LIMIT {
            buf.clear();
            file.read_to_end(buf).map_err(|e| Error::io(path, e))?;
            let mut failed = None;
            self.hasher.for_each_chunk(buf, |piece| {
                if failed.is_none() {
                    match self.keep_chunk(piece) {
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
                ids.push(self.keep_chunk(&piece.data)?);
            }
        }
        let after = file.metadata().map_err(|e| Error::io(path, e))?;
        Ok((ids, FileStat::from_metadata(&after)))
    }

    /// Names a chunk and, if the store lacks it, sends it compressed to the writer.
    fn keep_chunk(&self, piece: &[u8]) -> Result<u128> {
        let id = self.hasher.id(piece).0;
        if let Some((tx, level)) = &self.tx {
            let known = self.chunks.get(id)?.is_some();
            let fresh = !known && self.sent.lock().map(|mut s| s.insert(id)).unwrap_or(true);
            if fresh {
                tx.send((id, chunk::encode_chunk(piece, *level)))
                    .map_err(|_| Error::Store("the chunk writer stopped".into()))?;
            }
        }
        Ok(id)
    }
}

fn file_node(stat: &FileStat, chunks: Vec<u128>) -> Node {
    Node::File {
        size: stat.size,
        executable: stat.executable(),
        chunks,
    }
}

fn vanished(path: &[u8], e: std::io::Error) -> Result<Scanned> {
    if e.kind() == std::io::ErrorKind::NotFound {
        Ok(Scanned {
            node: None,
            cache: Some(CacheUpdate::Remove(path.to_vec())),
            warning: Some(format!("{} vanished while it was saved", show(path))),
        })
    } else {
        Err(Error::io(OsStr::from_bytes(path), e))
    }
}

/// Writes chunks arriving on `rx` in bounded non-durable batches.
fn write_chunks(store: &Store, rx: crossbeam_channel::Receiver<(u128, Vec<u8>)>) -> Result<()> {
    let mut pending = rx.iter().peekable();
    while pending.peek().is_some() {
        let mut txn = store.db.begin_write()?;
        txn.set_durability(Durability::None)?;
        {
            let mut table = txn.open_table(CHUNKS)?;
            let mut bytes = 0;
            while bytes < BATCH_BYTES {
                let Some((id, stored)) = pending.next() else {
                    break;
                };
                bytes += stored.len();
                table.insert(id, stored.as_slice())?;
            }
        }
        txn.commit()?;
    }
    Ok(())
}

/// A path for messages: lossy UTF-8.
pub fn show(path: &[u8]) -> String {
    String::from_utf8_lossy(path).into_owned()
}
