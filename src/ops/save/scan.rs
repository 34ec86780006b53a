//! The scan: the worktree's entries (a walk, or the watcher's changed paths over the
//! last base, [`watched`]), each matched with its stat cache entry, the files the cache
//! cannot vouch for read in parallel ([`read`](super::read)) while the writer thread
//! stores new chunks ([`writer`](super::writer)), and the trees built from the result
//! (with the watcher, spliced into the base tree along the changed paths only,
//! [`watched::Partial`]). A save, a look and a restore's
//! look all scan; [`ScanRequest`] says what each wants.

use std::collections::HashSet;
use std::sync::Mutex;

use rayon::prelude::*;

use super::after_look::{self, LookedScan};
use super::read::{CacheChange, Cached, ScanContext, Scanned};
use super::watched::{self, Listing, Partial, Watched};
use super::writer::{write_chunks, ToWrite};
use super::Warning;
use crate::format::size::human_bytes;
use crate::git::repo::Repo;
use crate::model::dir_cache::DirCacheUpdates;
use crate::model::tree::{self, Node, PendingTrees, Totals};
use crate::model::{SkipReason, SkippedFile};
use crate::progress::Progress;
use crate::settings::{Settings, DEFAULT_MAX_FILE_SIZE};
use crate::storage::pack::OpenBlock;
use crate::storage::{CacheWriter, Snapshot, Store, StoreRead, Transaction};
use crate::worktree::walk::{self, Kind};
use crate::{ChunkId, Error, Result, TreeId};

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
pub(super) struct CacheUpdates {
    /// How many files read and settled a save already wrote into its final transaction
    /// as it gathered them ([`gather`]): none is held until the commit, so that a big
    /// first save does not hold a second list of every path, stat and chunk list.
    pub(super) put: usize,
    /// Paths to forget.
    pub(super) remove: Vec<Vec<u8>>,
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
    /// The stat cache changes it found, written by [`Scan::record_cache`].
    pub(super) cache_updates: CacheUpdates,
    /// The directory cache changes its walk found, written with them.
    pub(super) dir_cache: DirCacheUpdates,
    /// The write transaction holding the last chunks, not yet committed.
    pub(super) chunk_txn: Option<Transaction<'s>>,
    /// What a scan given a read limit (a save's look) keeps to hand to the save's write
    /// path ([`Scan::into_handed`]).
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

/// A walk of the worktree, handed from a save's read-only look to its write path so that
/// the worktree is walked once.
pub struct Walked {
    found: walk::Walk,
    /// The store's generation the walk was made under: if anything was committed since
    /// (another save, a restore), the worktree may have moved on and is walked again.
    generation: u64,
    /// The watcher's token the walk was made under, when a watcher answered.
    watched: Option<Watched>,
    /// The base the walk's entries go into, when the watcher vouched for the rest.
    partial: Option<Partial>,
}

impl Walked {
    /// A walk of the whole worktree, whatever a watcher would say.
    pub(super) fn by_walking(repo: &Repo, store: &impl StoreRead) -> Result<Walked> {
        let generation = store.generation()?;
        let leftovers_possible = store.snapshot()?.interrupted_restore()?.is_some();
        let _span = crate::trace::span("walk");
        let cache = store.snapshot()?.dir_cache()?;
        Ok(Walked {
            found: walk::walk_cached(repo, leftovers_possible, &cache)?,
            generation,
            watched: None,
            partial: None,
        })
    }
}

/// At most how much a scan reads before it stops and hands its walk back
/// ([`ScanEnd::TooMuchToRead`]).
#[derive(Clone, Copy)]
pub(super) struct ReadLimit {
    /// Files to read.
    pub(super) files: usize,
    /// Bytes to read.
    pub(super) bytes: u64,
}

/// How [`scan_store`] ended.
pub(super) enum ScanEnd<'s> {
    /// It scanned the worktree.
    Scanned(Box<Scan<'s>>),
    /// More files than its [`ReadLimit`] needed reading; it read none of them.
    TooMuchToRead(Box<Walked>),
}

/// The scan of a [`scan_store`] given no read limit, which always ends scanned.
pub(super) fn complete(end: ScanEnd<'_>) -> Result<Scan<'_>> {
    match end {
        ScanEnd::Scanned(scan) => Ok(*scan),
        ScanEnd::TooMuchToRead(_) => Err(Error::Internal(
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
    /// A walk made earlier for this save, used unless something was committed to the
    /// store since.
    pub(super) walked: Option<Walked>,
    /// A scan that would read more than this reads nothing and hands its walk back.
    pub(super) read_limit: Option<ReadLimit>,
    /// What the save's look found, used unless something was committed to the store
    /// since: then only what the look read is read again.
    pub(super) looked: Option<Box<LookedScan>>,
}

impl<'a> ScanRequest<'a, '_> {
    /// A scan in `mode` that writes nothing, reports nothing, walks (or asks the
    /// watcher) afresh and reads whatever it must.
    pub(super) fn new(mode: ScanMode, settings: &'a Settings) -> Self {
        ScanRequest {
            mode,
            settings,
            writer: None,
            progress: None,
            walked: None,
            read_limit: None,
            looked: None,
        }
    }
}

/// The worktree's entries as a scan is about to read them: what the walk (or the
/// watcher) found, the files left out as too large, and each file's stat cache entry.
struct Found {
    /// The walk, the too-large files taken out.
    walk: walk::Walk,
    /// The files larger than `checkpoint.maxFileSize`.
    large: Vec<walk::WalkEntry>,
    /// Those files, as the checkpoint records them.
    skipped: Vec<SkippedFile>,
    /// Each entry's stat cache entry, if it has one that decodes (aligned with `walk`).
    cached: Vec<Option<Cached>>,
    /// Cached paths the walk did not find.
    stale: Vec<Vec<u8>>,
    /// The store's generation the walk was made under.
    generation: u64,
    /// The watcher's token, when a watcher answered.
    watched: Option<Watched>,
    /// The base the entries go into, when the watcher vouched for the rest.
    partial: Option<Partial>,
}

impl Found {
    /// How many files the stat cache cannot vouch for, and their bytes: what the scan
    /// must read.
    fn to_read(&self) -> (usize, u64) {
        self.walk
            .entries
            .iter()
            .zip(&self.cached)
            .filter(|(entry, cached)| {
                entry.kind == Kind::File && !cached.as_ref().is_some_and(|c| c.vouches)
            })
            .fold((0, 0), |(files, bytes), (entry, _)| {
                (files + 1, bytes + entry.stat.size)
            })
    }

    /// The walk handed back whole, for a save to go on from.
    fn into_walked(mut self) -> Walked {
        self.walk.entries = merge_sorted(std::mem::take(&mut self.walk.entries), self.large);
        Walked {
            found: self.walk,
            generation: self.generation,
            watched: self.watched,
            partial: self.partial,
        }
    }
}

/// The scan of the worktree over any store, as `request` asks.
pub(super) fn scan_store<'s, S: StoreRead>(
    repo: &Repo,
    store: &'s S,
    mut request: ScanRequest<'_, 's>,
) -> Result<ScanEnd<'s>> {
    if let Some(looked) = request.looked.take() {
        // The look's findings hold only while nothing was committed since it was made
        // (another save, a restore); else the worktree is looked at afresh.
        if looked.generation == store.generation()? && !after_look::disabled() {
            let scan = after_look::scan(repo, store, request, *looked)?;
            return Ok(ScanEnd::Scanned(Box::new(scan)));
        }
    }
    let mode = request.mode;
    let mut warnings = Vec::new();
    let rules = FileRules::read(request.settings, mode, &mut warnings)?;
    // One read view for the whole scan: the restore marker, the chunk index, the stat cache.
    let read = store.snapshot()?;
    let mut found = find(repo, store, &read, request.walked, &rules, &mut warnings)?;
    // The walk's entries are held through the whole scan: not the room its pushes left.
    found.walk.entries.shrink_to_fit();
    crate::fault::point("save-walked");
    let _span = crate::trace::span("read, hash, store new chunks, build trees");
    let mut skipped = std::mem::take(&mut found.skipped);
    let (to_read, bytes_to_read) = found.to_read();
    if (request.read_limit)
        .is_some_and(|limit| to_read > limit.files || bytes_to_read > limit.bytes)
    {
        return Ok(ScanEnd::TooMuchToRead(Box::new(found.into_walked())));
    }
    let cached = std::mem::take(&mut found.cached);
    // A look (a scan given a read limit) keeps the entries it reads, to hand them to
    // the save's write path, which reads only them again (`after_look`).
    let reread: Option<Vec<(walk::WalkEntry, Option<Cached>)>> = request.read_limit.map(|_| {
        found
            .walk
            .entries
            .iter()
            .zip(&cached)
            .filter(|(entry, cached)| !vouched(entry, cached.as_ref()))
            .map(|(entry, cached)| (entry.clone(), cached.clone()))
            .collect()
    });
    let found_warnings = warnings.len();
    let found_skipped = skipped.len();
    let (mut files, mut cache_updates, written) = read_and_gather(
        repo,
        store,
        &read,
        Reading {
            mode,
            rules: &rules,
            writer: request.writer,
            progress: request.progress,
            to_read,
        },
        &mut found.walk.entries,
        cached,
        &mut warnings,
        &mut skipped,
    )?;
    let handing = reread.map(|reread| {
        let looked = files_at(&files, &reread);
        Handing {
            generation: found.generation,
            reread,
            looked,
            found_warnings,
            found_skipped,
            stale: found.stale.clone(),
        }
    });
    cache_updates.remove.append(&mut found.stale);
    // What is left of the walk's entries (their stats) goes before the trees are built.
    found.walk.entries = Vec::new();
    let dir_cache = std::mem::take(&mut found.walk.dir_cache);
    let mut trees = PendingTrees::new();
    let (root, totals) = match &found.partial {
        Some(partial) => partial.build(&read, &files, &mut trees)?,
        None => tree::build(store.hasher(), &mut files, &mut trees),
    };
    drop(files);
    let leftovers = std::mem::take(&mut found.walk.leftovers);
    Ok(ScanEnd::Scanned(Box::new(Scan {
        root,
        totals,
        trees,
        warnings,
        leftovers,
        skipped,
        cache_updates,
        dir_cache,
        chunk_txn: written,
        handing,
        watched: found.watched.take(),
    })))
}

/// Whether the stat cache entry `cached` vouches for the walked `entry`: a file whose
/// metadata is the one its entry records, taken from the cache without a read.
fn vouched(entry: &walk::WalkEntry, cached: Option<&Cached>) -> bool {
    entry.kind == Kind::File && cached.is_some_and(|c| c.vouches)
}

/// The files of `files` (sorted) at the paths of `entries` (sorted): both in one pass.
fn files_at(files: &Files, entries: &[(walk::WalkEntry, Option<Cached>)]) -> Files {
    let mut at = Vec::with_capacity(entries.len());
    let mut i = 0;
    for (entry, _) in entries {
        i += files[i..].partition_point(|(path, _)| path < &entry.path);
        if let Some((path, node)) = files.get(i).filter(|(path, _)| *path == entry.path) {
            at.push((path.clone(), node.clone()));
        }
    }
    at
}

/// How [`read_and_gather`] reads.
pub(super) struct Reading<'a, 's> {
    /// Whether it stores what it reads.
    pub(super) mode: ScanMode,
    /// What it captures.
    pub(super) rules: &'a FileRules,
    /// The store that takes the new chunks, if any.
    pub(super) writer: Option<&'s Store>,
    /// Where to report each file, if anywhere.
    pub(super) progress: Option<&'a dyn Progress>,
    /// How many files the stat cache cannot vouch for (none: no clock is needed).
    pub(super) to_read: usize,
}

/// Scans `entries` (each with its stat cache entry in `cached`): reads what the cache
/// cannot vouch for while the writer stores new chunks, then gathers the files captured
/// (sorted by path), the stat cache changes (a save writes the files read and settled
/// into its final transaction as it gathers them) and the writer's last open
/// transaction. Each captured entry's path is taken from `entries`.
#[allow(clippy::too_many_arguments)]
pub(super) fn read_and_gather<'s, S: StoreRead>(
    repo: &Repo,
    store: &'s S,
    read: &Snapshot<'_>,
    how: Reading<'_, 's>,
    entries: &mut [walk::WalkEntry],
    cached: Vec<Option<Cached>>,
    warnings: &mut Vec<Warning>,
    skipped: &mut Vec<SkippedFile>,
) -> Result<(Files, CacheUpdates, Option<Transaction<'s>>)> {
    let Reading {
        mode,
        rules,
        writer,
        progress,
        to_read,
    } = how;
    // The clock is needed only to judge files read now. A look at a store it may not
    // write (another user's, a read-only copy) has no clock: then no file counts as
    // settled, and each changed one is read twice.
    let clock_ns = if to_read == 0 {
        i64::MIN
    } else {
        let clock = crate::worktree::filesystem_clock(&repo.checkpoint_dir());
        needed(mode, clock, i64::MIN, None, warnings)?
    };
    let chunks = read.chunks()?;
    let sent: Mutex<HashSet<ChunkId>> = Mutex::new(HashSet::new());
    let block = Mutex::new(OpenBlock::default());
    // 64 chunks or sealed blocks of at most about 256 KiB each: the readers wait for
    // the writer rather than hold more.
    let (tx, rx) = crossbeam_channel::bounded::<ToWrite>(64);
    let context = ScanContext {
        root: &repo.root,
        hasher: store.hasher(),
        chunks: &chunks,
        sent: &sent,
        block: &block,
        // Without a writer no sender exists, so the writer sees the channel closed at once.
        tx: match (mode, writer) {
            (ScanMode::Store { level, .. }, Some(_)) => Some((tx, level)),
            _ => {
                drop(tx);
                None
            }
        },
        clock_ns,
        keep_permissions: rules.keep_permissions,
        // A scan that stores nothing only looks; what it cannot read it reports as
        // skipped, and restore then leaves it alone.
        skip_unreadable: match mode {
            ScanMode::Store {
                skip_unreadable, ..
            } => skip_unreadable,
            ScanMode::HashOnly => true,
        },
    };
    let readers = Readers {
        context,
        writer,
        progress,
    };
    let (scanned, mut written) = readers.run(entries, cached, rx)?;
    let _span = crate::trace::span("build trees");
    // A save writes the files it read and settled into the stat cache as it gathers
    // them, in the transaction that commits the checkpoint (the writer's last open one,
    // or a new one); a look records nothing.
    let records = matches!(mode, ScanMode::Store { .. })
        && scanned
            .iter()
            .any(|(_, s)| s.cache == CacheChange::Put && s.node.is_some());
    if let (true, None, Some(store)) = (records, &written, writer) {
        written = Some(store.transaction()?);
    }
    let mut cache = match (records, &written) {
        (true, Some(txn)) => Some(txn.cache_writer()?),
        _ => None,
    };
    let (files, cache_updates) = gather(entries, scanned, cache.as_mut(), warnings, skipped)?;
    drop(cache);
    Ok((files, cache_updates, written))
}

/// The settings that decide what a scan captures, read once per scan.
pub(super) struct FileRules {
    /// `checkpoint.maxFileSize`: larger files are left out.
    max_file_size: Option<u64>,
    /// `checkpoint.keepPermissions`: record every permission bit, not only git's one.
    keep_permissions: bool,
}

impl FileRules {
    /// Reads the rules; a save refuses a value it cannot use, a look goes on with the
    /// default and says so in `warnings`.
    pub(super) fn read(
        settings: &Settings,
        mode: ScanMode,
        warnings: &mut Vec<Warning>,
    ) -> Result<FileRules> {
        let limit = DEFAULT_MAX_FILE_SIZE;
        let max_file_size = needed(
            mode,
            settings.max_file_size.get(),
            Some(limit),
            Some(human_bytes(limit)),
            warnings,
        )?;
        let keep_permissions = needed(
            mode,
            settings.keep_permissions.get(),
            true,
            Some("true".into()),
            warnings,
        )?;
        Ok(FileRules {
            max_file_size,
            keep_permissions,
        })
    }
}

/// The worktree's entries: from `walked` when nothing was committed since it was made,
/// else through the watcher or a walk ([`watched::walk`]); special files reported, the
/// too-large files taken out (reported and recorded as skipped), and the stat cache
/// matched.
fn find(
    repo: &Repo,
    store: &impl StoreRead,
    read: &Snapshot<'_>,
    walked: Option<Walked>,
    rules: &FileRules,
    warnings: &mut Vec<Warning>,
) -> Result<Found> {
    let generation = store.generation()?;
    let leftovers_possible = read.interrupted_restore()?.is_some();
    let Listing {
        mut walk,
        watched,
        partial,
    } = match walked {
        Some(walked) if walked.generation == generation => Listing {
            walk: walked.found,
            watched: walked.watched,
            partial: walked.partial,
        },
        // No watcher can answer (it answers on that socket): a walk, with the directory
        // cache, is all there is.
        _ if std::fs::symlink_metadata(crate::watch::socket_path(repo)).is_err() => {
            let _span = crate::trace::span("walk");
            let cache = read.dir_cache()?;
            let walk = walk::walk_cached(repo, leftovers_possible, &cache)?;
            let looked_at = walk.entries.len() + walk.special.len() + walk.leftovers.len();
            crate::trace::PATHS_LOOKED_AT.add(looked_at as u64);
            Listing {
                walk,
                watched: None,
                partial: None,
            }
        }
        _ => {
            let listing = watched::walk(repo, read, leftovers_possible)?;
            let walk = &listing.walk;
            let looked_at = walk.entries.len() + walk.special.len() + walk.leftovers.len();
            crate::trace::PATHS_LOOKED_AT.add(looked_at as u64);
            listing
        }
    };
    warnings.extend(
        walk.special
            .iter()
            .map(|path| Warning::NotAFile { path: path.clone() }),
    );
    let large = take_large_files(&mut walk.entries, rules.max_file_size);
    let skipped: Vec<SkippedFile> = large
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
        limit: rules.max_file_size.unwrap_or_default(),
    }));
    let StatCacheMatch { cached, stale } = match &partial {
        Some(partial) => partial.match_stat_cache(read, &walk.entries)?,
        None => match_stat_cache(read, &walk.entries)?,
    };
    Ok(Found {
        walk,
        large,
        skipped,
        cached,
        stale,
        generation,
        watched,
        partial,
    })
}

/// The reader threads of a scan and the chunk writer they feed.
struct Readers<'a, 's> {
    /// What every reader shares; dropped once they are done, which closes the channel.
    context: ScanContext<'a>,
    /// The store the writer writes to, if any.
    writer: Option<&'s Store>,
    /// Where to report each file.
    progress: Option<&'a dyn Progress>,
}

/// Each entry's scan, in walk order, with its path when it is captured (taken from the
/// walk; a file left out keeps its path in the walk), and the writer's last open
/// transaction.
type ReadOutcome<'s> = (Vec<(Vec<u8>, Scanned)>, Option<Transaction<'s>>);

impl<'s> Readers<'_, 's> {
    /// Scans `entries` in parallel while the writer thread stores what arrives on `rx`.
    /// Fails with the error of the first entry (in walk order) whose scan failed.
    fn run(
        self,
        entries: &mut [walk::WalkEntry],
        cached: Vec<Option<Cached>>,
        rx: crossbeam_channel::Receiver<ToWrite>,
    ) -> Result<ReadOutcome<'s>> {
        let Readers {
            context,
            writer,
            progress,
        } = self;
        if let Some(progress) = progress {
            let bytes = entries.iter().map(|e| e.stat.size).sum();
            progress.begin("Saving", entries.len() as u64, bytes);
        }
        std::thread::scope(|scope| {
            let writer = scope.spawn(|| match writer {
                Some(writer) => write_chunks(writer, rx),
                None => Ok(None),
            });
            // Collected in place, in walk order: a `Result` collect would gather pieces
            // and copy them once more, doubling the peak on a big tree. Errors are kept
            // aside, so that each entry's place stays small (docs/design.md, "Save", memory).
            let failed: Mutex<Option<(usize, Error)>> = Mutex::new(None);
            let mut scanned = Vec::with_capacity(entries.len());
            entries
                .par_iter_mut()
                .enumerate()
                .zip(cached)
                .map_init(Vec::new, |buf, ((index, entry), cached)| {
                    let scanned = match context.scan_one(entry, cached, buf) {
                        Ok(scanned) => scanned,
                        Err(error) => {
                            if let Ok(mut failed) = failed.lock() {
                                if failed.as_ref().is_none_or(|(first, _)| index < *first) {
                                    *failed = Some((index, error));
                                }
                            }
                            Scanned::failed()
                        }
                    };
                    if let Some(progress) = progress {
                        progress.file_done(entry.stat.size);
                    }
                    // The path goes with a captured file to become its place in the
                    // files ([`gather`] makes them in this same buffer).
                    let path = match scanned.node {
                        Some(_) => std::mem::take(&mut entry.path),
                        None => Vec::new(),
                    };
                    (path, scanned)
                })
                .collect_into_vec(&mut scanned);
            if let Some(progress) = progress {
                progress.end();
            }
            let last_block = context.send_last_block();
            drop(context);
            let _span = crate::trace::span("wait for the chunk writer");
            let written = writer
                .join()
                .unwrap_or_else(|_| Err(Error::Internal("the chunk writer panicked".into())));
            // A failed writer (a full disk, say) is why the scan stopped too, if it did.
            let written = written?;
            last_block?;
            let failed = failed
                .into_inner()
                .map_err(|_| Error::Internal("a reader panicked".into()))?;
            if let Some((_, error)) = failed {
                return Err(error);
            }
            Ok((scanned, written))
        })
    }
}

/// Every file and symlink a scan captured, by path, sorted.
pub(super) type Files = Vec<(Vec<u8>, Node)>;

/// The files and symlinks the scan captured, by path, and the stat cache changes; the
/// problems met go to `warnings` and `skipped`. Each captured file's path came from its
/// walk entry with its scan; the files are made in the buffer of `scanned` (a collect
/// that reuses its allocation), so that a big tree is not held twice. A scan that may
/// hand its walk back keeps the rest of each entry, and [`Scan::into_walked`] puts the
/// paths back. Files read and settled go to `cache`, when the scan records them.
fn gather(
    entries: &[walk::WalkEntry],
    scanned: Vec<(Vec<u8>, Scanned)>,
    mut cache: Option<&mut CacheWriter<'_>>,
    warnings: &mut Vec<Warning>,
    skipped: &mut Vec<SkippedFile>,
) -> Result<(Files, CacheUpdates)> {
    let mut cache_updates = CacheUpdates::default();
    let mut failed = None;
    let files: Files = scanned
        .into_iter()
        .zip(entries)
        .filter_map(|((path, result), entry)| {
            let Scanned {
                node,
                cache: change,
                rare,
            } = result;
            let (changed, problem) = match rare {
                Some(rare) => (rare.changed, rare.problem),
                None => (None, None),
            };
            // A captured file's path came with it; one left out still has its own.
            let path_of = |path: &Vec<u8>| match node {
                Some(_) => path.clone(),
                None => entry.path.clone(),
            };
            match (change, &node, cache.as_deref_mut()) {
                (
                    CacheChange::Put,
                    Some(Node::File { chunks, .. } | Node::FileWithMode { chunks, .. }),
                    Some(cache),
                ) if failed.is_none() => {
                    let stat = changed.unwrap_or(entry.stat);
                    match cache.put(&path, &stat, chunks) {
                        Ok(()) => cache_updates.put += 1,
                        Err(error) => failed = Some(error),
                    }
                }
                (CacheChange::Remove, _, _) => cache_updates.remove.push(path_of(&path)),
                // Nothing to record for a file the cache vouched for, or in a look.
                _ => {}
            }
            if let Some(problem) = problem {
                skipped.extend(problem.skipped.map(|reason| SkippedFile {
                    path: path_of(&path),
                    size: entry.stat.size,
                    reason,
                }));
                warnings.push(problem.warning);
            }
            node.map(|node| (path, node))
        })
        .collect();
    match failed {
        Some(error) => Err(error),
        None => Ok((files, cache_updates)),
    }
}

/// What a scan given a read limit (a save's look) keeps besides its trees, to hand to
/// the save's write path.
pub(super) struct Handing {
    /// The store's generation its walk was made under.
    generation: u64,
    /// The entries it read (files the stat cache could not vouch for, symlinks), sorted,
    /// with their stat cache entries.
    reread: Vec<(walk::WalkEntry, Option<Cached>)>,
    /// What it captured of them, by path, sorted.
    looked: Files,
    /// How many of the scan's warnings came before any read (special files, files too
    /// large): the write path keeps those and finds the others again.
    found_warnings: usize,
    /// How many of its skipped files came before any read (too large).
    found_skipped: usize,
    /// Cached paths the walk did not find.
    stale: Vec<Vec<u8>>,
}

impl Scan<'_> {
    /// What this scan found, for the save's write path to go on from
    /// ([`after_look::scan`]); `None` unless the scan was given a read limit.
    pub(super) fn into_handed(self) -> Option<LookedScan> {
        let Handing {
            generation,
            reread,
            looked,
            found_warnings,
            found_skipped,
            stale,
        } = self.handing?;
        let mut warnings = self.warnings;
        warnings.truncate(found_warnings);
        let mut skipped = self.skipped;
        skipped.truncate(found_skipped);
        Some(LookedScan {
            generation,
            reread,
            looked,
            root: self.root,
            totals: self.totals,
            trees: self.trees,
            warnings,
            skipped,
            stale,
            leftovers: self.leftovers,
            dir_cache: self.dir_cache,
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
                    cached[i] = entry.decode().ok().map(|e| Cached::of(e, walked_entry));
                }
            }
            _ => stale.push(key.to_vec()),
        }
    })?;
    Ok(StatCacheMatch { cached, stale })
}

/// What [`match_stat_cache`] (or [`Partial::match_stat_cache`]) found.
pub(super) struct StatCacheMatch {
    /// Each walked file's entry, if it has one that decodes.
    pub(super) cached: Vec<Option<Cached>>,
    /// Cached paths the walk did not find.
    pub(super) stale: Vec<Vec<u8>>,
}
