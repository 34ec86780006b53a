//! The read-only looks at the worktree: `status` and `diff` ([`look`]), a restore that
//! does not save first ([`look_by_walking`]), and the look a save takes with the store
//! open only for reading, which ends the save when nothing changed
//! ([`look_before_saving`]).

use super::after_look::LookedScan;
use super::readers::ScanMode;
use super::scan::{complete, ReadLimit, Scan, ScanEnd, ScanRequest};
use super::strategy::scan_store;
use super::{watched, SaveOptions, SaveOutcome, SaveReport};
use crate::git::repo::Repo;
use crate::progress::Progress;
use crate::settings::Settings;
use crate::storage::{ReadStore, Snapshot, StoreRead};
use crate::Result;

/// What [`look_before_saving`] found.
// One per save, moved once: the size of the larger variant costs nothing.
#[allow(clippy::large_enum_variant)]
pub(super) enum Looked {
    /// Nothing changed: the save's report.
    Unchanged(SaveReport),
    /// Something changed, or may have: what the look found, for the save to go on from
    /// (`None`: the write path looks afresh).
    Changed(Option<Box<LookedScan>>),
}

/// Files and bytes a save that holds the store read-only reads itself to decide that
/// nothing changed (files the stat cache cannot vouch for). Past either bound it leaves
/// them to the write path, which records them in the stat cache: a no-change save
/// therefore writes nothing and re-reads at most this much each time, until a save
/// that writes settles them (docs/design.md invariant 14).
const LOOK_FIRST_FILES: usize = 64;

/// See [`LOOK_FIRST_FILES`].
const LOOK_FIRST_BYTES: u64 = 1 << 20;

/// The read-only part of [`super::save_then_gc_if_changed`]: walks, matches the stat cache,
/// reads the few files it cannot vouch for, and compares the result with the current
/// checkpoint's tree.
pub(super) fn look_before_saving(
    repo: &Repo,
    read: &ReadStore,
    options: &SaveOptions,
) -> Result<Looked> {
    let limit = ReadLimit {
        files: LOOK_FIRST_FILES,
        bytes: LOOK_FIRST_BYTES,
    };
    if let Some(report) = watched_unchanged(repo, &read.snapshot()?, options)? {
        return Ok(Looked::Unchanged(report));
    }
    let request = ScanRequest {
        read_limit: Some(limit),
        ..ScanRequest::new(save_mode(options)?, &options.settings)
    };
    let scan = match scan_store(repo, read, request)? {
        ScanEnd::Scanned(scan) => scan,
        ScanEnd::TooMuchToRead => return Ok(Looked::Changed(None)),
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
        None => Looked::Changed(LookedScan::of(*scan).map(Box::new)),
    })
}

/// The report of a save that a watcher vouches found nothing changed, made without
/// looking at any file; `None` when the save must look (no watcher, a stale token,
/// `--allow-empty`, an attachment).
pub(super) fn watched_unchanged(
    repo: &Repo,
    read: &Snapshot<'_>,
    options: &SaveOptions,
) -> Result<Option<SaveReport>> {
    if options.allow_empty || options.has_attachments() {
        return Ok(None);
    }
    Ok(watched::unchanged(repo, read)?.map(|current| SaveReport {
        outcome: SaveOutcome::Unchanged { current },
        warnings: Vec::new(),
        leftovers: Vec::new(),
        skipped: Vec::new(),
        gc: None,
    }))
}

/// The scan mode of a save with `options`.
pub(super) fn save_mode(options: &SaveOptions) -> Result<ScanMode> {
    Ok(ScanMode::Store {
        level: options.settings.compression.get()?,
        skip_unreadable: options.skip_unreadable,
    })
}

/// Looks at the worktree without writing anything (`status`, `diff`): hashes what
/// changed, with a store that may be open only for reading. A setting it cannot use is a
/// warning, and its default is used.
pub fn look<'s>(repo: &Repo, settings: &Settings, store: &'s impl StoreRead) -> Result<Scan<'s>> {
    complete(scan_store(
        repo,
        store,
        ScanRequest::new(ScanMode::HashOnly, settings),
    )?)
}

/// [`look`] for a restore that does not save first (`--no-save`, `--dry-run`), reporting
/// each file to `progress`. It walks, never asking a watcher: the restore decides from
/// it what it may overwrite, and a watcher cannot see every change (see
/// [`super::SaveOptions::walk`]).
pub fn look_by_walking<'s>(
    repo: &Repo,
    settings: &Settings,
    store: &'s impl StoreRead,
    progress: Option<&dyn Progress>,
) -> Result<Scan<'s>> {
    let request = ScanRequest {
        progress,
        walk: true,
        ..ScanRequest::new(ScanMode::HashOnly, settings)
    };
    complete(scan_store(repo, store, request)?)
}
