//! The scan: the worktree's entries (a walk, or the watcher's changed paths over the
//! last base, [`watched`]), each matched with its stat cache entry
//! ([`super::stat_match`]), the files the cache cannot vouch for read while new chunks
//! are stored ([`super::readers`]), and the trees built from the result (with the
//! watcher, spliced into the base tree along the changed paths only,
//! [`watched::Partial`]). A save, a look and a restore's look all scan;
//! [`ScanRequest`] says what each wants.

use super::readers::{read_and_gather, CacheUpdates, FileRules, Files, Reading, ScanMode};
use super::stat_match::{match_stat_cache, Cached, StatCacheMatch};
use super::watched::{self, Listing, Partial, Watched};
use super::Warning;
use crate::git::repo::Repo;
use crate::model::dir_cache::DirCacheUpdates;
use crate::model::tree::{self, PendingTrees, Totals};
use crate::model::{SkipReason, SkippedFile};
use crate::progress::Progress;
use crate::settings::Settings;
use crate::storage::{Snapshot, Store, StoreRead, Transaction};
use crate::worktree::walk::{self, Kind};
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
    request: ScanRequest<'_, 's>,
) -> Result<ScanEnd<'s>> {
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
