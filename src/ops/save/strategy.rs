//! Which scan a save or a look makes ([`scan_store`]): a walk of the whole worktree,
//! scanned as it goes, directory by directory ([`super::stream`]); or, where a watcher
//! vouches for the rest, the watcher's changed paths over the last base ([`watched`]),
//! collected, matched with the stat cache by point lookups ([`watched::Partial`]), read
//! ([`super::readers`]) and spliced into the base tree along those paths only.

use super::readers::{read_and_gather, FileRules, Files, Reading};
use super::scan::{Handing, Scan, ScanEnd, ScanRequest};
use super::stat_match::{Cached, StatCacheMatch};
use super::stream::{scan_walking, Walking};
use super::watched::{self, Listing, Partial, Watched};
use super::Warning;
use crate::git::repo::Repo;
use crate::model::dir_cache::{DirCacheUpdates, DirListings};
use crate::model::tree::PendingTrees;
use crate::model::{SkipReason, SkippedFile};
use crate::storage::{Snapshot, StoreRead};
use crate::worktree::walk::{self, Kind};
use crate::Result;

/// The changed paths' entries as a scan is about to read them: what the walk of them
/// found, the files left out as too large, and each file's stat cache entry.
struct Found {
    /// The walk, the too-large files taken out.
    walk: walk::Walk,
    /// Those files, as the checkpoint records them.
    skipped: Vec<SkippedFile>,
    /// Each entry's stat cache entry, if it has one that decodes (aligned with `walk`).
    cached: Vec<Option<Cached>>,
    /// Cached paths the walk did not find.
    stale: Vec<Vec<u8>>,
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
}

/// The scan of the worktree over any store, as `request` asks: a walk of the whole
/// worktree scanned as it goes, or, where a watcher vouches for the rest, the changed
/// paths only.
pub(super) fn scan_store<'s, S: StoreRead>(
    repo: &Repo,
    store: &'s S,
    request: ScanRequest<'_, 's>,
) -> Result<ScanEnd<'s>> {
    let mut warnings = Vec::new();
    let rules = FileRules::read(request.settings, request.mode, &mut warnings)?;
    // One read view for the whole scan: the restore marker, the chunk index, the stat cache.
    let read = store.snapshot()?;
    let generation = store.generation()?;
    let leftovers_possible = read.interrupted_restore()?.is_some();
    // No watcher can answer without its socket: a walk, with the directory cache, is
    // all there is.
    let asked = !request.walk && std::fs::symlink_metadata(crate::watch::socket_path(repo)).is_ok();
    let listing = match asked {
        true => watched::walk(repo, &read, leftovers_possible)?,
        false => Listing::Walk(None),
    };
    match listing {
        Listing::Walk(watched) => {
            // The reads, the hashing and the trees go on within the walk.
            let _span = crate::trace::span("walk");
            let dir_cache = read.dir_cache()?;
            let walking = Walking {
                leftovers_possible,
                dir_cache: (!asked).then_some(&dir_cache as &dyn DirListings),
                watched,
                generation,
            };
            scan_walking(repo, store, &read, request, &rules, walking, warnings)
        }
        Listing::Partial {
            walk,
            watched,
            partial,
        } => {
            let looked_at = walk.entries.len() + walk.special.len() + walk.leftovers.len();
            crate::trace::PATHS_LOOKED_AT.add(looked_at as u64);
            let changed = Changed {
                walk: *walk,
                watched,
                partial,
                generation,
            };
            scan_changed(repo, store, &read, request, &rules, changed, warnings)
        }
    }
}

/// What a watcher vouched for: the base, and what a walk found at and below the paths
/// changed since.
struct Changed {
    walk: walk::Walk,
    watched: Watched,
    partial: Partial,
    generation: u64,
}

/// The scan of the paths a watcher reported changed: their entries matched with the stat
/// cache by point lookups, read, and spliced into the base tree.
fn scan_changed<'s, S: StoreRead>(
    repo: &Repo,
    store: &'s S,
    read: &Snapshot<'_>,
    request: ScanRequest<'_, 's>,
    rules: &FileRules,
    changed: Changed,
    mut warnings: Vec<Warning>,
) -> Result<ScanEnd<'s>> {
    let Changed {
        walk,
        watched,
        partial,
        generation,
    } = changed;
    let mode = request.mode;
    let mut found = find(read, walk, &partial, rules, &mut warnings)?;
    crate::fault::point("save-walked");
    let _span = crate::trace::span("read, hash, store new chunks, build trees");
    let mut skipped = std::mem::take(&mut found.skipped);
    let (to_read, bytes_to_read) = found.to_read();
    if (request.read_limit)
        .is_some_and(|limit| to_read > limit.files || bytes_to_read > limit.bytes)
    {
        return Ok(ScanEnd::TooMuchToRead);
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
    let (files, mut cache_updates, written) = read_and_gather(
        repo,
        store,
        read,
        Reading {
            mode,
            rules,
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
            generation,
            reread,
            looked,
            found_warnings,
            found_skipped,
            stale: found.stale.clone(),
        }
    });
    cache_updates.remove.append(&mut found.stale);
    let mut trees = PendingTrees::new();
    let (root, totals) = partial.build(read, &files, &mut trees)?;
    drop(files);
    Ok(ScanEnd::Scanned(Box::new(Scan {
        root,
        totals,
        trees,
        warnings,
        leftovers: std::mem::take(&mut found.walk.leftovers),
        skipped,
        cache_updates,
        dir_cache: DirCacheUpdates::default(),
        chunk_txn: written,
        handing,
        watched: Some(watched),
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

/// The changed paths' entries: special files reported, the too-large files taken out
/// (reported and recorded as skipped), and the stat cache matched.
fn find(
    read: &Snapshot<'_>,
    mut walk: walk::Walk,
    partial: &Partial,
    rules: &FileRules,
    warnings: &mut Vec<Warning>,
) -> Result<Found> {
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
    let StatCacheMatch { cached, stale } = partial.match_stat_cache(read, &walk.entries)?;
    Ok(Found {
        walk,
        skipped,
        cached,
        stale,
    })
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
