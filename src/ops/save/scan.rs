//! What a scan is asked ([`ScanRequest`]) and what it finds ([`Scan`]): a save, a look
//! and a restore's look all scan, by a walk of the whole worktree streamed directory by
//! directory ([`super::stream`]) or through the watcher's changed paths
//! ([`super::strategy`], which chooses).

use super::readers::{CacheUpdates, Files, ScanMode};
use super::stat_match::Cached;
use super::watched::Watched;
use super::Warning;
use crate::model::dir_cache::DirCacheUpdates;
use crate::model::tree::{PendingTrees, Totals};
use crate::model::SkippedFile;
use crate::progress::Progress;
use crate::settings::Settings;
use crate::storage::{Store, Transaction};
use crate::worktree::walk;
use crate::{Error, Result, TreeId};

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
    /// The stat cache changes it found, written by [`Scan::record_cache`].
    pub(super) cache_updates: CacheUpdates,
    /// The directory cache changes its walk found, written with them.
    pub(super) dir_cache: DirCacheUpdates,
    /// The write transaction holding the last chunks, not yet committed.
    pub(super) chunk_txn: Option<Transaction<'s>>,
    /// What a scan given a read limit (a save's look) keeps to hand to the save's write
    /// path ([`LookedScan::of`](super::after_look::LookedScan::of)).
    pub(super) handing: Option<Handing>,
    /// The watcher's token to record once the save commits, when a watcher answered.
    pub(super) watched: Option<Watched>,
}

impl Scan<'_> {
    /// Writes the rest of the stat cache changes the scan found into `txn` (the files
    /// read and settled, vouched for from now on, are already in it): paths gone or not
    /// settled are forgotten.
    pub(super) fn record_cache(&self, txn: &Transaction) -> Result<()> {
        txn.forget_cached(&self.cache_updates.remove)?;
        txn.update_dir_cache(&self.dir_cache)
    }

    /// Whether the scan found anything to change in the stat cache.
    pub(super) fn changes_cache(&self) -> bool {
        self.cache_updates.put > 0
            || !self.cache_updates.remove.is_empty()
            || !self.dir_cache.is_empty()
    }
}

/// At most how much a scan reads before it stops ([`ScanEnd::TooMuchToRead`]).
#[derive(Clone, Copy)]
pub(super) struct ReadLimit {
    /// Files to read.
    pub(super) files: usize,
    /// Bytes to read.
    pub(super) bytes: u64,
}

/// How [`scan_store`](super::strategy::scan_store) ended.
pub(super) enum ScanEnd<'s> {
    /// It scanned the worktree.
    Scanned(Box<Scan<'s>>),
    /// More files than its [`ReadLimit`] needed reading, or more found than a look
    /// hands on: the write path looks afresh.
    TooMuchToRead,
}

/// The scan of a [`scan_store`](super::strategy::scan_store) given no read limit, which always ends scanned.
pub(super) fn complete(end: ScanEnd<'_>) -> Result<Scan<'_>> {
    match end {
        ScanEnd::Scanned(scan) => Ok(*scan),
        ScanEnd::TooMuchToRead => Err(Error::Internal(
            "a scan stopped at a read limit it was not given".into(),
        )),
    }
}

/// What a scan is asked to do, besides looking at the worktree over a store.
pub(super) struct ScanRequest<'a, 's> {
    /// Whether it stores what it reads.
    pub(super) mode: ScanMode,
    /// The `checkpoint.*` settings that decide what it captures (the size limit, the
    /// permission bits), the save's or the look's.
    pub(super) settings: &'a Settings,
    /// The store that takes the new chunks. A scan in [`ScanMode::Store`] without one
    /// reads and hashes but stores nothing: a save's read-only look.
    pub(super) writer: Option<&'s Store>,
    /// Where to report each file, if anywhere.
    pub(super) progress: Option<&'a dyn Progress>,
    /// Walk the whole worktree, whatever a watcher would say (see
    /// [`super::SaveOptions::walk`]).
    pub(super) walk: bool,
    /// A scan that would read more than this reads nothing and hands its walk back.
    pub(super) read_limit: Option<ReadLimit>,
}

impl<'a> ScanRequest<'a, '_> {
    /// A scan in `mode` that writes nothing, reports nothing, asks the watcher (or
    /// walks) and reads whatever it must.
    pub(super) fn new(mode: ScanMode, settings: &'a Settings) -> Self {
        ScanRequest {
            mode,
            settings,
            writer: None,
            progress: None,
            walk: false,
            read_limit: None,
        }
    }
}

/// What a scan given a read limit (a save's look) keeps besides its trees, to hand to
/// the save's write path.
pub(super) struct Handing {
    /// The store's generation its walk was made under.
    pub(super) generation: u64,
    /// The entries it read (files the stat cache could not vouch for, symlinks), sorted,
    /// with their stat cache entries.
    pub(super) reread: Vec<(walk::WalkEntry, Option<Cached>)>,
    /// What it captured of them, by path, sorted.
    pub(super) looked: Files,
    /// How many of the scan's warnings came before any read (special files, files too
    /// large): the write path keeps those and finds the others again.
    pub(super) found_warnings: usize,
    /// How many of its skipped files came before any read (too large).
    pub(super) found_skipped: usize,
    /// Cached paths the walk did not find.
    pub(super) stale: Vec<Vec<u8>>,
}
