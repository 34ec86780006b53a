//! Saving: scan the worktree into trees (reading only files the stat cache cannot vouch
//! for), store the new chunks, then commit trees, the checkpoint, the branch move and the
//! stat cache together.
//!
//! Commit protocol (docs/design.md invariant 2): chunks go in bounded batches (64 MiB, one
//! commit each, so memory stays bounded however big the tree) while files are read;
//! everything that makes the checkpoint visible commits in one final transaction. A
//! crash before that commit leaves at most unreferenced chunks, which gc sweeps.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::io::{Read, Seek};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use rayon::prelude::*;

use crate::format::chunk::{self, Hasher};
use crate::format::size::human_bytes;
use crate::git::repo::Repo;
use crate::model::stat_cache::{CacheEntry, FileStat};
use crate::model::tree::{self, Node, PendingTrees, Totals};
use crate::model::{Attachment, Checkpoint, Head, SkipReason, SkippedFile};
use crate::ops::gc::{self, AutoGc};
use crate::progress::Progress;
use crate::storage::pack::{Delta, LastPack, ReadChunks};
use crate::storage::{
    ChunkSink, OpenedStore, Packer, ReadStore, Snapshot, Store, StoreRead, Transaction,
};
use crate::worktree::walk::{self, Kind};
use crate::{CheckpointId, ChunkId, Error, Result, TreeId};

/// Bytes of new chunks per batch; each full batch commits durably on its own, so that a
/// big save holds a bounded amount in memory (docs/design.md invariant 2).
const BATCH_BYTES: usize = 64 << 20;
/// Files up to this size are read whole into a reused buffer; larger ones are streamed.
const READ_WHOLE_LIMIT: u64 = 8 << 20;
/// How often a file that changes while it is read is read before it is left out.
const READ_ATTEMPTS: usize = 5;

/// What a save should record.
#[derive(Clone, Debug, Default)]
pub struct SaveOptions {
    /// The checkpoint message.
    pub message: String,
    /// `key=value` metadata.
    pub meta: Vec<(String, String)>,
    /// Make a checkpoint even when nothing changed.
    pub allow_empty: bool,
    /// Add `path` and `paths` metadata from what the checkpoint changed (an agent's tool
    /// step: [`crate::ops::log_query::changed_path_meta`]).
    pub record_changed_paths: bool,
    /// zstd level for new chunks.
    pub compression_level: i32,
    /// Where to report progress, if anywhere.
    pub progress: Option<Arc<dyn Progress>>,
    /// Leave out files that cannot be read (recorded on the checkpoint) instead of failing.
    pub skip_unreadable: bool,
    /// Files to store with the checkpoint, outside its tree, under their file names.
    /// A save with attachments always makes a checkpoint, so that they are never lost.
    pub attach: Vec<PathBuf>,
    /// Make the checkpoint a child of the current one and leave HEAD's branch where it
    /// is: a restore's safety save, whose restore decides where the branch goes.
    pub keep_head: bool,
    /// Files to attach that the caller opened and checked itself (an agent's
    /// transcript), stored like `attach` but read in pieces, never whole.
    pub attach_files: Vec<AttachFile>,
    /// Look at every file, whatever a watcher says: walk the worktree and compare each
    /// file's metadata with the stat cache. A watcher cannot see every change (a write
    /// through `mmap` raises no event), so the safety save before a restore, which must
    /// miss none, walks (docs/design.md, "The watcher").
    pub walk: bool,
}

/// A file to attach, opened and checked by the caller.
#[derive(Clone, Debug)]
pub struct AttachFile {
    /// The name it is attached under.
    pub name: String,
    /// The open file, read from its start.
    pub file: Arc<std::fs::File>,
    /// How many of its bytes to store: its length when it was checked, so that a file
    /// that grows meanwhile is stored as it stood.
    pub len: u64,
}

impl SaveOptions {
    /// Whether the save stores attachments (and so always makes a checkpoint).
    fn has_attachments(&self) -> bool {
        !self.attach.is_empty() || !self.attach_files.is_empty()
    }
}

/// Whether a scan stores what it reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ScanMode {
    /// Write new chunks to the store.
    Store {
        /// zstd level for new chunks.
        level: i32,
        /// Leave out unreadable files (recorded as skipped) instead of failing.
        skip_unreadable: bool,
    },
    /// Only hash: nothing is written (dry runs, `--no-save`).
    HashOnly,
}

/// The stat cache changes a scan found.
#[derive(Default)]
struct CacheUpdates {
    /// Files read and settled: their index in [`Scan::files`], and the metadata they
    /// were read under. Encoded only when written, so a big first save does not hold a
    /// second copy of every path and chunk list.
    put: Vec<(usize, FileStat)>,
    /// Paths to forget.
    remove: Vec<Vec<u8>>,
}

/// Something a save or a look at the worktree could not do as asked, and went on
/// without. The binary prints each as a warning; `Display` is that line.
#[derive(Debug)]
pub enum Warning {
    /// A special file (fifo, socket, device), never captured.
    NotAFile {
        /// Its worktree path.
        path: Vec<u8>,
    },
    /// A file larger than `checkpoint.maxFileSize`, left out and recorded as skipped.
    TooLarge {
        /// Its worktree path.
        path: Vec<u8>,
        /// Its size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// A file that could not be read, left out and recorded as skipped
    /// (`--skip-unreadable`, and always for a look).
    Unreadable(Error),
    /// A file that kept changing while it was read, left out (never stored torn).
    KeptChanging {
        /// Its worktree path.
        path: Vec<u8>,
    },
    /// A file that vanished or was replaced while it was read, left out.
    Vanished {
        /// Its worktree path.
        path: Vec<u8>,
    },
    /// A setting that cannot be used; a look went on with the default.
    DefaultSetting {
        /// Why the setting's value cannot be used.
        error: Error,
        /// The default used instead.
        default: String,
    },
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Warning::NotAFile { path } => {
                write!(f, "skipped {}: not a regular file or symlink", show(path))
            }
            Warning::TooLarge { path, size, limit } => write!(
                f,
                "skipped {} ({}): larger than checkpoint.maxFileSize ({})",
                show(path),
                human_bytes(*size),
                human_bytes(*limit)
            ),
            Warning::Unreadable(error) => write!(f, "skipped unreadable {error}"),
            Warning::KeptChanging { path } => write!(
                f,
                "{} kept changing while it was read; left out of this checkpoint",
                show(path)
            ),
            Warning::Vanished { path } => write!(
                f,
                "{} vanished or was replaced while it was saved; left out of this checkpoint",
                show(path)
            ),
            Warning::DefaultSetting { error, default } => {
                write!(f, "{error}; comparing with the default ({default})")
            }
        }
    }
}

/// The worktree as a scan found it.
pub struct Scan<'s> {
    /// Its root tree.
    pub root: TreeId,
    /// Files and bytes.
    pub totals: Totals,
    /// Every tree of the snapshot, encoded; the store may already hold some.
    pub trees: PendingTrees,
    /// Things the user should hear about (skipped special files, vanished files).
    pub warnings: Vec<Warning>,
    /// Temporary files of an interrupted restore, never captured; restore removes them.
    pub leftovers: Vec<Vec<u8>>,
    /// Files left out for being larger than `checkpoint.maxFileSize`.
    pub skipped: Vec<SkippedFile>,
    /// Every file and symlink, by path, sorted.
    files: Vec<(Vec<u8>, Node)>,
    cache_updates: CacheUpdates,
    /// The write transaction holding the last chunks, not yet committed.
    chunk_txn: Option<Transaction<'s>>,
    /// The rest of the walk, kept by a scan given a read limit.
    walk_rest: Option<WalkRest>,
    /// The watcher's token to record once the save commits, when a watcher answered.
    watched: Option<crate::watch::refresh::Watched>,
}

/// The result of [`save`].
#[derive(Debug)]
pub enum SaveOutcome {
    /// A new checkpoint.
    Saved {
        /// Its id.
        id: CheckpointId,
        /// Its record.
        checkpoint: Box<Checkpoint>,
    },
    /// Nothing changed since the current checkpoint.
    Unchanged {
        /// The current checkpoint.
        current: CheckpointId,
    },
}

/// A save's outcome and the warnings met on the way.
#[derive(Debug)]
pub struct SaveReport {
    /// What happened.
    pub outcome: SaveOutcome,
    /// Things the user should hear about.
    pub warnings: Vec<Warning>,
    /// Temporary files of an interrupted restore found in the worktree.
    pub leftovers: Vec<Vec<u8>>,
    /// Files left out for being larger than `checkpoint.maxFileSize`.
    pub skipped: Vec<SkippedFile>,
    /// What the automatic gc did, for [`save_then_gc`]; `None` when none ran.
    pub gc: Option<AutoGc>,
}

/// Saves the worktree as a child of the current checkpoint and moves HEAD's branch to it,
/// unless nothing changed and `allow_empty` is off.
pub fn save(repo: &Repo, store: &Store, options: &SaveOptions) -> Result<SaveReport> {
    if options.walk {
        let walked = Walked::by_walking(repo, store)?;
        return save_walked(repo, store, options, Some(walked));
    }
    if let Some(report) = watched_unchanged(repo, &store.snapshot()?, options)? {
        return Ok(report);
    }
    save_walked(repo, store, options, None)
}

/// [`save`], over the walk `walked` when a read-only look already made one.
fn save_walked(
    repo: &Repo,
    store: &Store,
    options: &SaveOptions,
    walked: Option<Walked>,
) -> Result<SaveReport> {
    let attachments = read_attachments(&options.attach)?;
    if let Some(twice) = options
        .attach_files
        .iter()
        .find(|file| attachments.iter().any(|(name, _)| *name == file.name))
    {
        return Err(Error::InvalidArgument(format!(
            "two attachments would be named '{}'",
            twice.name
        )));
    }
    let mut snapshot = complete(scan_store(
        repo,
        store,
        Some(store),
        save_mode(options),
        options.progress.as_deref(),
        walked,
        None,
    )?)?;
    crate::fault::point("save-chunks-written");

    let _span = crate::trace::span("commit");
    let txn = match snapshot.chunk_txn.take() {
        Some(txn) => txn,
        None => store.transaction()?,
    };
    let outcome = {
        let current = txn.current()?;
        let head = txn.head()?;
        let current_tree = match current {
            Some(id) => Some(txn.checkpoint(id)?.tree),
            None => None,
        };
        if current_tree == Some(snapshot.root) && !options.allow_empty && !options.has_attachments()
        {
            SaveOutcome::Unchanged {
                current: current.expect("a current tree implies a current checkpoint"),
            }
        } else {
            let git_head = repo.git_head();
            txn.add_trees(&snapshot.trees, snapshot.root, current_tree)?;
            let mut record = Checkpoint {
                tree: snapshot.root,
                parents: current.into_iter().collect(),
                time_ns: crate::clock::now_ns(),
                message: options.message.clone(),
                branch: match head {
                    Head::Branch(name) => Some(name),
                    Head::Detached(_) => None,
                },
                git_head: git_head.commit,
                git_branch: git_head.branch,
                meta: options.meta.clone(),
                attachments: {
                    let level = options.compression_level;
                    let mut stored = store_attachments(&txn, &store.hasher, attachments, level)?;
                    stored.extend(store_attachment_files(
                        &txn,
                        &store.hasher,
                        &options.attach_files,
                        level,
                    )?);
                    stored
                },
                files: snapshot.totals.files,
                bytes: snapshot.totals.bytes,
                skipped: snapshot.skipped.clone(),
            };
            if options.record_changed_paths {
                let changes =
                    crate::ops::log_query::pending_changes(&txn, &snapshot.trees, &record)?;
                crate::ops::log_query::changed_path_meta(&mut record.meta, &changes);
            }
            let id = txn.add_checkpoint(&mut record)?;
            crate::diff::keep_summary(&txn, &snapshot.trees, id, &record)?;
            if !options.keep_head {
                txn.move_head(id)?;
            }
            SaveOutcome::Saved {
                id,
                checkpoint: Box::new(record),
            }
        }
    };
    apply_cache_updates(&txn, &snapshot.files, &snapshot.cache_updates)?;
    let cache_unchanged =
        snapshot.cache_updates.put.is_empty() && snapshot.cache_updates.remove.is_empty();
    if matches!(outcome, SaveOutcome::Unchanged { .. }) && cache_unchanged {
        // Nothing to record: skip the durable commit and its fsync.
        txn.abort()?;
    } else {
        let _span = crate::trace::span("commit: write and sync");
        txn.commit()?;
        if let Some(watched) = &snapshot.watched {
            watched.record(repo, snapshot.root, &snapshot.skipped);
        }
    }
    Ok(SaveReport {
        outcome,
        warnings: snapshot.warnings,
        leftovers: snapshot.leftovers,
        skipped: snapshot.skipped,
        gc: None,
    })
}

/// [`save`], then, if it made a checkpoint, the retention `checkpoint.gc.*` configures
/// ([`gc::after_save`]): what every save a person or an agent asks for does. The gc's
/// outcome is part of the report; it never fails the save, which is durable by then.
pub fn save_then_gc(repo: &Repo, store: &mut Store, options: &SaveOptions) -> Result<SaveReport> {
    let mut report = save(repo, store, options)?;
    if matches!(report.outcome, SaveOutcome::Saved { .. }) {
        report.gc = gc::after_save(&repo.settings, store);
    }
    Ok(report)
}

/// [`save_then_gc`] that looks before it opens the store for writing: `open_read` opens
/// it read-only, and a save that finds nothing changed returns then, the store file
/// untouched (no write, no sync). Only when something changed (or `allow_empty` or
/// attachments ask for a checkpoint, or there is no store yet) is the store opened for
/// writing with `open_for_writing`, the read-only one let go first; that save goes on
/// from the same walk, against the store as it then is, so that a save another process
/// made meanwhile is seen (docs/design.md invariant 20). Returns the report and the
/// store as it is left open.
pub fn save_then_gc_if_changed(
    repo: &Repo,
    open_read: impl FnOnce() -> Result<ReadStore>,
    open_for_writing: impl FnOnce() -> Result<Store>,
    options: &SaveOptions,
) -> Result<(SaveReport, OpenedStore)> {
    let look = !options.allow_empty && !options.has_attachments() && repo.store_path().exists();
    let walked = if look {
        let read = open_read()?;
        match look_before_saving(repo, &read, options)? {
            Looked::Unchanged(report) => return Ok((report, OpenedStore::Read(read))),
            Looked::Changed(walked) => walked,
        }
    } else {
        None
    };
    crate::fault::point("save-looked");
    let mut store = open_for_writing()?;
    let mut report = save_walked(repo, &store, options, walked)?;
    if matches!(report.outcome, SaveOutcome::Saved { .. }) {
        report.gc = gc::after_save(&repo.settings, &mut store);
    }
    Ok((report, OpenedStore::Write(store)))
}

/// What [`look_before_saving`] found.
enum Looked {
    /// Nothing changed: the save's report.
    Unchanged(SaveReport),
    /// Something changed, or may have: the walk, for the save to go on from.
    Changed(Option<Walked>),
}

/// Files and bytes a save that holds the store read-only reads itself to decide that
/// nothing changed (files the stat cache cannot vouch for). Past either bound it leaves
/// them to the write path, which records them in the stat cache: a no-change save
/// therefore writes nothing and re-reads at most this much each time, until a save
/// that writes settles them (docs/design.md invariant 14).
const LOOK_FIRST_FILES: usize = 64;
/// See [`LOOK_FIRST_FILES`].
const LOOK_FIRST_BYTES: u64 = 1 << 20;

/// The read-only part of [`save_then_gc_if_changed`]: walks, matches the stat cache,
/// reads the few files it cannot vouch for, and compares the result with the current
/// checkpoint's tree.
fn look_before_saving(repo: &Repo, read: &ReadStore, options: &SaveOptions) -> Result<Looked> {
    let limit = ReadLimit {
        files: LOOK_FIRST_FILES,
        bytes: LOOK_FIRST_BYTES,
    };
    if let Some(report) = watched_unchanged(repo, &read.snapshot()?, options)? {
        return Ok(Looked::Unchanged(report));
    }
    let scan = match scan_store(
        repo,
        read,
        None,
        save_mode(options),
        None,
        None,
        Some(limit),
    )? {
        ScanEnd::Scanned(scan) => scan,
        ScanEnd::TooMuchToRead(walked) => return Ok(Looked::Changed(Some(walked))),
    };
    let current = {
        let _span = crate::trace::span("compare with the current checkpoint");
        let snapshot = read.snapshot()?;
        match snapshot.current()? {
            Some(id) if snapshot.checkpoint(id)?.tree == scan.root => Some(id),
            _ => None,
        }
    };
    if let (Some(_), Some(watched)) = (current, &scan.watched) {
        // The worktree at the watcher's token is the current checkpoint's tree: the next
        // save can start from there instead of walking.
        watched.record(repo, scan.root, &scan.skipped);
    }
    Ok(match current {
        Some(current) => Looked::Unchanged(SaveReport {
            outcome: SaveOutcome::Unchanged { current },
            warnings: scan.warnings,
            leftovers: scan.leftovers,
            skipped: scan.skipped,
            gc: None,
        }),
        None => Looked::Changed(scan.into_walked()),
    })
}

/// The report of a save that a watcher vouches found nothing changed, made without
/// looking at any file; `None` when the save must look (no watcher, a stale token,
/// `--allow-empty`, an attachment).
fn watched_unchanged(
    repo: &Repo,
    read: &Snapshot<'_>,
    options: &SaveOptions,
) -> Result<Option<SaveReport>> {
    if options.allow_empty || options.has_attachments() {
        return Ok(None);
    }
    Ok(
        crate::watch::refresh::unchanged(repo, read)?.map(|current| SaveReport {
            outcome: SaveOutcome::Unchanged { current },
            warnings: Vec::new(),
            leftovers: Vec::new(),
            skipped: Vec::new(),
            gc: None,
        }),
    )
}

/// The scan mode of a save with `options`.
fn save_mode(options: &SaveOptions) -> ScanMode {
    ScanMode::Store {
        level: options.compression_level,
        skip_unreadable: options.skip_unreadable,
    }
}

/// Reads the files to attach, each named by its file name; two with one name are refused.
fn read_attachments(paths: &[PathBuf]) -> Result<Vec<(String, Vec<u8>)>> {
    let mut out: Vec<(String, Vec<u8>)> = Vec::with_capacity(paths.len());
    for path in paths {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "cannot attach '{}': it names no file",
                    path.display()
                ))
            })?;
        if out.iter().any(|(taken, _)| *taken == name) {
            return Err(Error::InvalidArgument(format!(
                "two attachments would be named '{name}'"
            )));
        }
        let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
        out.push((name, bytes));
    }
    Ok(out)
}

/// Stores attachment content as chunks, through the same packs as file content, and
/// returns the records.
pub(crate) fn store_attachments(
    txn: &Transaction,
    hasher: &Hasher,
    attachments: Vec<(String, Vec<u8>)>,
    level: i32,
) -> Result<Vec<Attachment>> {
    txn.pack_chunks(&mut Packer::default(), |sink| {
        let mut out = Vec::with_capacity(attachments.len());
        for (name, bytes) in attachments {
            let mut ids = Vec::new();
            let mut stored = Ok(());
            hasher.for_each_chunk(&bytes, |piece| {
                if stored.is_ok() {
                    match keep_chunk(sink, hasher, piece, level) {
                        Ok(id) => ids.push(id),
                        Err(e) => stored = Err(e),
                    }
                }
            });
            stored?;
            out.push(Attachment {
                name,
                size: bytes.len() as u64,
                chunks: ids,
            });
        }
        Ok(out)
    })
}

/// Stores the files of `files` as [`store_attachments`] stores content, each read from
/// its start, at most its `len` bytes.
fn store_attachment_files(
    txn: &Transaction,
    hasher: &Hasher,
    files: &[AttachFile],
    level: i32,
) -> Result<Vec<Attachment>> {
    if files.is_empty() {
        return Ok(Vec::new());
    }
    txn.pack_chunks(&mut Packer::default(), |sink| {
        let mut out = Vec::with_capacity(files.len());
        let mut buf = Vec::new();
        for attach in files {
            let failed = |e: std::io::Error| Error::io(&attach.name, e);
            let mut file = &*attach.file;
            file.seek(std::io::SeekFrom::Start(0)).map_err(failed)?;
            let (size, chunks) =
                store_content(sink, hasher, file, attach.len, level, &mut buf, failed)?;
            out.push(Attachment {
                name: attach.name.clone(),
                size,
                chunks,
            });
        }
        Ok(out)
    })
}

/// Cuts at most `len` bytes of `content` into chunks and stores each one `sink` lacks,
/// the way content that is not a worktree file goes (an attachment read from its file, a
/// fetched file): read whole into `buf` up to [`READ_WHOLE_LIMIT`], streamed past it, with
/// the same cut points either way. Returns how many bytes it read and the chunk ids;
/// `failed` names a read error.
pub(crate) fn store_content(
    sink: &mut ChunkSink<'_, '_>,
    hasher: &Hasher,
    content: impl Read,
    len: u64,
    level: i32,
    buf: &mut Vec<u8>,
    failed: impl Fn(std::io::Error) -> Error,
) -> Result<(u64, Vec<ChunkId>)> {
    let mut content = content.take(len);
    let mut ids = Vec::new();
    if len <= READ_WHOLE_LIMIT {
        buf.clear();
        content.read_to_end(buf).map_err(&failed)?;
        let mut stored = Ok(());
        hasher.for_each_chunk(buf, |piece| {
            if stored.is_ok() {
                stored = keep_chunk(sink, hasher, piece, level).map(|id| ids.push(id));
            }
        });
        stored?;
    } else {
        let p = hasher.params();
        for piece in fastcdc::v2020::StreamCDC::new(&mut content, p.min, p.avg, p.max) {
            let piece = piece.map_err(|e| failed(std::io::Error::other(e)))?;
            ids.push(keep_chunk(sink, hasher, &piece.data, level)?);
        }
    }
    Ok((len - content.limit(), ids))
}

/// Names one chunk of content that is stored whole (never as a delta: nothing vouches
/// for a previous version) and stores it, unless the store has it.
fn keep_chunk(
    sink: &mut ChunkSink<'_, '_>,
    hasher: &Hasher,
    piece: &[u8],
    level: i32,
) -> Result<ChunkId> {
    let id = hasher.chunk_id(piece);
    if !sink.contains(id)? {
        sink.add(id, &chunk::encode_chunk(piece, level), piece.len(), None)?;
    }
    Ok(id)
}

fn apply_cache_updates(
    txn: &Transaction,
    files: &[(Vec<u8>, Node)],
    updates: &CacheUpdates,
) -> Result<()> {
    for &(index, stat) in &updates.put {
        if let Some((path, Node::File { chunks, .. } | Node::FileWithMode { chunks, .. })) =
            files.get(index)
        {
            let entry = CacheEntry {
                stat,
                chunks: chunks.clone(),
            };
            txn.cache(path, &entry)?;
        }
    }
    txn.forget_cached(&updates.remove)
}

/// One file's outcome in a scan.
/// What scanning one walked entry found. The entry's path is joined when the results
/// are gathered, which keeps this small: a tree of 200,000 files holds 200,000 of them.
struct Scanned {
    node: Option<Node>,
    cache: CacheChange,
    /// Rare: something to warn about, and why the file is left out, if it is.
    problem: Option<Box<Problem>>,
}

/// What a scanned entry does to its stat cache entry.
enum CacheChange {
    /// Nothing: the entry vouched for the file.
    Keep,
    /// Record the file as read, with the metadata the walk saw.
    Put,
    /// Record the file as read, with this metadata: it changed since the walk (rare).
    PutChanged(Box<FileStat>),
    /// Forget the file: it was not read, or not settled.
    Remove,
}

struct Problem {
    warning: Warning,
    skipped: Option<SkipReason>,
}

impl Scanned {
    fn node(node: Node, cache: CacheChange) -> Scanned {
        Scanned {
            node: Some(node),
            cache,
            problem: None,
        }
    }

    fn left_out(warning: Warning, skipped: Option<SkipReason>) -> Scanned {
        Scanned {
            node: None,
            cache: CacheChange::Remove,
            problem: Some(Box::new(Problem { warning, skipped })),
        }
    }
}

/// Looks at the worktree without writing anything (`status`, `diff`): hashes what
/// changed, with a store that may be open only for reading.
pub fn look<'s>(repo: &Repo, store: &'s impl StoreRead) -> Result<Scan<'s>> {
    complete(scan_store(
        repo,
        store,
        None,
        ScanMode::HashOnly,
        None,
        None,
        None,
    )?)
}

/// [`look`] for a restore that does not save first (`--no-save`, `--dry-run`), reporting
/// each file to `progress`. It walks, never asking a watcher: the restore decides from
/// it what it may overwrite, and a watcher cannot see every change (see
/// [`SaveOptions::walk`]).
pub fn look_by_walking<'s>(
    repo: &Repo,
    store: &'s impl StoreRead,
    progress: Option<&dyn Progress>,
) -> Result<Scan<'s>> {
    let walked = Walked::by_walking(repo, store)?;
    complete(scan_store(
        repo,
        store,
        None,
        ScanMode::HashOnly,
        progress,
        Some(walked),
        None,
    )?)
}

/// A walk of the worktree, handed from a save's read-only look to its write path so that
/// the worktree is walked once.
pub struct Walked {
    found: walk::Walk,
    /// The store's generation the walk was made under: if anything was committed since
    /// (another save, a restore), the worktree may have moved on and is walked again.
    generation: u64,
    /// The watcher's token the walk was made under, when a watcher answered.
    watched: Option<crate::watch::refresh::Watched>,
}

impl Walked {
    /// A walk of the whole worktree, whatever a watcher would say.
    fn by_walking(repo: &Repo, store: &impl StoreRead) -> Result<Walked> {
        let generation = store.generation()?;
        let leftovers_possible = store.snapshot()?.interrupted_restore()?.is_some();
        let _span = crate::trace::span("walk");
        Ok(Walked {
            found: walk::walk(repo, leftovers_possible)?,
            generation,
            watched: None,
        })
    }
}

/// At most how much a scan reads before it stops and hands its walk back
/// ([`ScanEnd::TooMuchToRead`]).
#[derive(Clone, Copy)]
struct ReadLimit {
    files: usize,
    bytes: u64,
}

/// How [`scan_store`] ended.
enum ScanEnd<'s> {
    /// It scanned the worktree.
    Scanned(Box<Scan<'s>>),
    /// More files than its [`ReadLimit`] needed reading; it read none of them.
    TooMuchToRead(Walked),
}

/// The scan of a [`scan_store`] given no read limit, which always ends scanned.
fn complete(end: ScanEnd<'_>) -> Result<Scan<'_>> {
    match end {
        ScanEnd::Scanned(scan) => Ok(*scan),
        ScanEnd::TooMuchToRead(_) => Err(Error::Store(
            "a scan stopped at a read limit it was not given".into(),
        )),
    }
}

/// The scan of the worktree over any store: `writer`, if given, takes the new chunks (a
/// scan in [`ScanMode::Store`] without one reads and hashes but stores nothing: a save's
/// read-only look). `walked` is a walk made earlier for this save, used unless something
/// was committed to the store since. With `read_limit`, a scan that would read more files
/// than it allows reads none and returns its walk.
fn scan_store<'s, S: StoreRead>(
    repo: &Repo,
    store: &'s S,
    writer: Option<&'s Store>,
    mode: ScanMode,
    progress: Option<&dyn Progress>,
    walked: Option<Walked>,
    read_limit: Option<ReadLimit>,
) -> Result<ScanEnd<'s>> {
    let mut warnings = Vec::new();
    let limit = crate::git::settings::DEFAULT_MAX_FILE_SIZE;
    let max_file_size = needed(
        mode,
        repo.settings.max_file_size.get(),
        Some(limit),
        Some(human_bytes(limit)),
        &mut warnings,
    )?;
    let keep_permissions = needed(
        mode,
        repo.settings.keep_permissions.get(),
        true,
        Some("true".into()),
        &mut warnings,
    )?;
    // One read view for the whole scan: the restore marker, the chunk index, the stat cache.
    let read = store.snapshot()?;
    let generation = store.generation()?;
    let leftovers_possible = read.interrupted_restore()?.is_some();
    let (mut found, watched) = match walked {
        Some(walked) if walked.generation == generation => (walked.found, walked.watched),
        _ => crate::watch::refresh::walk(repo, &read, leftovers_possible)?,
    };
    crate::fault::point("save-walked");
    let _span = crate::trace::span("read, hash, store new chunks, build trees");
    warnings.extend(
        found
            .special
            .iter()
            .map(|path| Warning::NotAFile { path: path.clone() }),
    );
    let large = take_large_files(&mut found.entries, max_file_size);
    let mut skipped: Vec<SkippedFile> = large
        .iter()
        .map(|entry| SkippedFile {
            path: entry.path.clone(),
            size: entry.stat.size,
            reason: SkipReason::TooLarge,
        })
        .collect();
    warnings.extend(skipped.iter().map(|file| Warning::TooLarge {
        path: file.path.clone(),
        size: file.size,
        limit: max_file_size.unwrap_or_default(),
    }));

    let StatCacheMatch { cached, stale } = match_stat_cache(&read, &found.entries)?;
    let (to_read, bytes_to_read) = found
        .entries
        .iter()
        .zip(&cached)
        .filter(|(entry, cached)| {
            entry.kind == Kind::File && !cached.as_ref().is_some_and(|c| c.stat == entry.stat)
        })
        .fold((0usize, 0u64), |(files, bytes), (entry, _)| {
            (files + 1, bytes + entry.stat.size)
        });
    if read_limit.is_some_and(|limit| to_read > limit.files || bytes_to_read > limit.bytes) {
        found.entries = merge_sorted(std::mem::take(&mut found.entries), large);
        return Ok(ScanEnd::TooMuchToRead(Walked {
            found,
            generation,
            watched,
        }));
    }
    // The clock is needed only to judge files read now. A look at a store it may not
    // write (another user's, a read-only copy) has no clock: then no file counts as
    // settled, and each changed one is read twice.
    let clock_ns = if to_read == 0 {
        i64::MIN
    } else {
        let clock = crate::worktree::filesystem_clock(&repo.checkpoint_dir());
        needed(mode, clock, i64::MIN, None, &mut warnings)?
    };
    if let Some(progress) = progress {
        let bytes = found.entries.iter().map(|e| e.stat.size).sum();
        progress.begin("Saving", found.entries.len() as u64, bytes);
    }
    let chunks = read.chunks()?;
    let sent: Mutex<HashSet<ChunkId>> = Mutex::new(HashSet::new());
    let (tx, rx) = crossbeam_channel::bounded::<NewChunk>(64);
    // Without a writer no sender exists, so the writer sees the channel closed at once.
    let tx = match (mode, writer) {
        (ScanMode::Store { level, .. }, Some(_)) => Some((tx, level)),
        _ => {
            drop(tx);
            None
        }
    };

    let scanned: Result<(Vec<Result<Scanned>>, Option<Transaction<'s>>)> =
        std::thread::scope(|scope| {
            let writer = scope.spawn(|| match writer {
                Some(writer) => write_chunks(writer, rx),
                None => Ok(None),
            });
            let context = ScanContext {
                root: &repo.root,
                hasher: store.hasher(),
                chunks: &chunks,
                sent: &sent,
                tx,
                clock_ns,
                keep_permissions,
                // A scan that stores nothing only looks; what it cannot read it reports
                // as skipped, and restore then leaves it alone.
                skip_unreadable: match mode {
                    ScanMode::Store {
                        skip_unreadable, ..
                    } => skip_unreadable,
                    ScanMode::HashOnly => true,
                },
            };
            // Collected in place, in walk order: a `Result` collect would gather pieces
            // and copy them once more, doubling the peak on a big tree.
            let mut scanned = Vec::with_capacity(found.entries.len());
            found
                .entries
                .par_iter()
                .zip(cached)
                .map_init(Vec::new, |buf, (entry, cached)| {
                    let scanned = context.scan_one(entry, cached, buf);
                    if let Some(progress) = progress {
                        progress.file_done(entry.stat.size);
                    }
                    scanned
                })
                .collect_into_vec(&mut scanned);
            if let Some(progress) = progress {
                progress.end();
            }
            drop(context);
            let _span = crate::trace::span("wait for the chunk writer");
            let written = writer
                .join()
                .unwrap_or_else(|_| Err(Error::Store("the chunk writer panicked".into())));
            // A failed writer (a full disk, say) is why the scan stopped too, if it did.
            let written = written?;
            Ok((scanned, written))
        });
    let (scanned, written) = scanned?;
    let _span = crate::trace::span("build trees");

    let mut files = Vec::with_capacity(scanned.len());
    let mut cache_updates = CacheUpdates::default();
    // The paths move into `files`; a scan that may hand its walk back keeps the rest of
    // each entry, and [`Scan::into_walked`] puts the paths back.
    for (entry, result) in found.entries.iter_mut().zip(scanned) {
        let result = result?;
        let index = files.len();
        match (result.cache, &result.node) {
            (CacheChange::Put, Some(_)) => cache_updates.put.push((index, entry.stat)),
            (CacheChange::PutChanged(stat), Some(_)) => cache_updates.put.push((index, *stat)),
            (CacheChange::Remove, _) => cache_updates.remove.push(entry.path.clone()),
            // Nothing to record for a file the cache vouched for, or one left out.
            _ => {}
        }
        if let Some(problem) = result.problem {
            warnings.push(problem.warning);
            skipped.extend(problem.skipped.map(|reason| SkippedFile {
                path: entry.path.clone(),
                size: entry.stat.size,
                reason,
            }));
        }
        if let Some(node) = result.node {
            files.push((std::mem::take(&mut entry.path), node));
        }
    }
    cache_updates.remove.extend(stale);
    let mut trees = PendingTrees::new();
    let (root, totals) = tree::build(store.hasher(), &files, &mut trees);
    let leftovers = std::mem::take(&mut found.leftovers);
    let walk_rest = read_limit.map(|_| WalkRest {
        found,
        large,
        generation,
    });
    Ok(ScanEnd::Scanned(Box::new(Scan {
        root,
        totals,
        trees,
        warnings,
        leftovers,
        skipped,
        files,
        cache_updates,
        chunk_txn: written,
        walk_rest,
        watched,
    })))
}

/// What a scan that may hand its walk back keeps of it besides the paths in
/// [`Scan::files`] and [`Scan::leftovers`].
struct WalkRest {
    /// The walk, its captured entries' paths taken (empty).
    found: walk::Walk,
    /// The entries left out as too large.
    large: Vec<walk::WalkEntry>,
    /// See [`Walked::generation`].
    generation: u64,
}

impl Scan<'_> {
    /// The walk this scan was made from, for a save to go on from; `None` unless the scan
    /// was given a read limit.
    fn into_walked(self) -> Option<Walked> {
        let WalkRest {
            mut found,
            large,
            generation,
        } = self.walk_rest?;
        let mut paths = self.files.into_iter().map(|(path, _)| path);
        for entry in found.entries.iter_mut().filter(|e| e.path.is_empty()) {
            entry.path = paths.next()?;
        }
        found.entries = merge_sorted(std::mem::take(&mut found.entries), large);
        found.leftovers = self.leftovers;
        Some(Walked {
            found,
            generation,
            watched: self.watched,
        })
    }
}

/// Two lists of walk entries sorted by path, as one.
fn merge_sorted(
    mut entries: Vec<walk::WalkEntry>,
    more: Vec<walk::WalkEntry>,
) -> Vec<walk::WalkEntry> {
    if !more.is_empty() {
        entries.extend(more);
        entries.sort_unstable_by(|a, b| a.path.cmp(&b.path));
    }
    entries
}

/// Something a scan needs: a save refuses a value it cannot use, while a look at the
/// worktree (status, diff) goes on with `default`, and says so when the default has a
/// `default_name` to show.
fn needed<T>(
    mode: ScanMode,
    value: Result<T>,
    default: T,
    default_name: Option<String>,
    warnings: &mut Vec<Warning>,
) -> Result<T> {
    match (value, mode) {
        (Ok(value), _) => Ok(value),
        (Err(error), ScanMode::HashOnly) => {
            if let Some(default) = default_name {
                warnings.push(Warning::DefaultSetting { error, default });
            }
            Ok(default)
        }
        (Err(e), ScanMode::Store { .. }) => Err(e),
    }
}

/// Takes the files larger than `limit` out of `entries`, and returns them. Their stat
/// cache entries then go as stale, so a file that shrinks below the limit is read again.
fn take_large_files(
    entries: &mut Vec<walk::WalkEntry>,
    limit: Option<u64>,
) -> Vec<walk::WalkEntry> {
    let Some(limit) = limit else {
        return Vec::new();
    };
    let is_large = |entry: &walk::WalkEntry| entry.kind == Kind::File && entry.stat.size > limit;
    if !entries.iter().any(is_large) {
        return Vec::new();
    }
    let (large, kept) = std::mem::take(entries).into_iter().partition(is_large);
    *entries = kept;
    large
}

/// The stat cache entry of each walked file (aligned with `walked`), and removals for the
/// cached paths the walk no longer found: one ordered pass over both, since the walk and
/// the table are sorted alike. A cache entry that does not decode is only a missed
/// shortcut: that file is read.
fn match_stat_cache(snapshot: &Snapshot, walked: &[walk::WalkEntry]) -> Result<StatCacheMatch> {
    let mut cached = vec![None; walked.len()];
    let mut stale = Vec::new();
    let mut i = 0;
    snapshot.for_each_cached(|key, entry| {
        while i < walked.len() && walked[i].path.as_slice() < key {
            i += 1;
        }
        match walked.get(i) {
            Some(walked_entry) if walked_entry.path.as_slice() == key => {
                if walked_entry.kind == Kind::File {
                    cached[i] = entry.decode().ok();
                }
            }
            _ => stale.push(key.to_vec()),
        }
    })?;
    Ok(StatCacheMatch { cached, stale })
}

/// What [`match_stat_cache`] found.
struct StatCacheMatch {
    /// Each walked file's entry, if it has one that decodes.
    cached: Vec<Option<CacheEntry>>,
    /// Cached paths the walk did not find.
    stale: Vec<Vec<u8>>,
}

/// A chunk the store lacks, on its way to the writer.
struct NewChunk {
    id: ChunkId,
    /// Its content's length.
    raw_len: usize,
    /// Its stored form ([`chunk::encode_chunk`] or [`chunk::encode_delta`]).
    stored: Vec<u8>,
    /// The base it is compressed against, if it is a delta.
    delta: Option<Delta>,
}

/// Sends new chunks to the writer.
type ChunkSender = crossbeam_channel::Sender<NewChunk>;

struct ScanContext<'a> {
    root: &'a std::path::Path,
    hasher: &'a Hasher,
    chunks: &'a ReadChunks,
    sent: &'a Mutex<HashSet<ChunkId>>,
    tx: Option<(ChunkSender, i32)>,
    clock_ns: i64,
    skip_unreadable: bool,
    /// `checkpoint.keepPermissions`: record every permission bit, not only git's one.
    keep_permissions: bool,
}

impl ScanContext<'_> {
    fn scan_one(
        &self,
        entry: &walk::WalkEntry,
        cached: Option<CacheEntry>,
        buf: &mut Vec<u8>,
    ) -> Result<Scanned> {
        let cached = match cached {
            Some(hit) if hit.stat == entry.stat && entry.kind == Kind::File => {
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
            let settled = stat.is_settled(self.clock_ns);
            if !settled && first_read.as_ref() != Some(&chunk_ids) {
                first_read = Some(chunk_ids);
                continue;
            }
            let cache = match settled {
                true if stat == entry.stat => CacheChange::Put,
                true => CacheChange::PutChanged(Box::new(stat)),
                false => CacheChange::Remove,
            };
            return Ok(Scanned::node(
                file_node(&stat, chunk_ids, self.keep_permissions),
                cache,
            ));
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
        Ok((ids, FileStat::from_metadata(&after)))
    }

    /// Names a chunk and, if the store lacks it, sends it compressed to the writer: as a
    /// delta of `previous` (the chunk in its place in the file's last stored version)
    /// where that is smaller.
    fn keep_chunk(&self, piece: &[u8], previous: Option<ChunkId>) -> Result<ChunkId> {
        let id = self.hasher.chunk_id(piece);
        if let Some((tx, level)) = &self.tx {
            let known = self.chunks.contains(id)?;
            let fresh = !known && self.sent.lock().map(|mut s| s.insert(id)).unwrap_or(true);
            if fresh {
                let full = chunk::encode_chunk(piece, *level);
                // A base that cannot be read is only a saving missed: the chunk is
                // stored whole, and verify reports the damage.
                let delta = match previous {
                    Some(base) => self.encode_delta(piece, base, *level).unwrap_or(None),
                    None => None,
                };
                let (stored, delta) = match delta {
                    Some((stored, delta)) if stored.len() < full.len() => (stored, Some(delta)),
                    _ => (full, None),
                };
                tx.send(NewChunk {
                    id,
                    raw_len: piece.len(),
                    stored,
                    delta,
                })
                .map_err(|_| Error::Store("the chunk writer stopped".into()))?;
            }
        }
        Ok(id)
    }

    /// `piece` compressed against stored chunk `base`, unless the store lacks `base` or
    /// its chain of bases is already as deep as a read may go (then the chunk is stored
    /// whole and starts a new chain).
    fn encode_delta(
        &self,
        piece: &[u8],
        base: ChunkId,
        level: i32,
    ) -> Result<Option<(Vec<u8>, Delta)>> {
        if !self.chunks.contains(base)? {
            return Ok(None);
        }
        let depth = self.chunks.delta_of(base)?.map_or(0, |d| d.depth) + 1;
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

/// Writes chunks arriving on `rx` in bounded batches.
/// Full batches are committed at once; the last, partial one is handed back still open,
/// so that the checkpoint commits in the same transaction and a small save pays for one
/// durable commit, not two.
fn write_chunks(
    store: &Store,
    rx: crossbeam_channel::Receiver<NewChunk>,
) -> Result<Option<Transaction<'_>>> {
    let mut pending = rx.iter().peekable();
    let mut open = None;
    let mut packer = Packer::default();

    while pending.peek().is_some() {
        let txn = store.transaction()?;
        let bytes = txn.pack_chunks(&mut packer, |sink| {
            let mut bytes = 0;
            while bytes < BATCH_BYTES {
                let Some(chunk) = pending.next() else {
                    break;
                };
                bytes += chunk.stored.len();
                sink.add(chunk.id, &chunk.stored, chunk.raw_len, chunk.delta)?;
            }
            Ok(bytes)
        })?;
        if bytes >= BATCH_BYTES {
            txn.commit()?;
            crate::fault::point("save-batch-committed");
        } else {
            open = Some(txn);
        }
    }
    Ok(open)
}

/// A path for messages: lossy UTF-8.
pub fn show(path: &[u8]) -> String {
    String::from_utf8_lossy(path).into_owned()
}
