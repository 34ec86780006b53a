//! The reading machinery of a scan: the files the stat cache cannot vouch for read in
//! parallel ([`read`](super::read)) while the writer thread stores new chunks
//! ([`writer`](super::writer)), then gathered into the captured files, sorted by path,
//! and the stat cache changes ([`read_and_gather`]); with the settings that decide what
//! is captured ([`FileRules`]) and whether anything is stored ([`ScanMode`]). A scan of
//! the worktree ([`super::scan`]) and the write path after a save's look
//! ([`super::after_look`]) both read through it.

use std::sync::{Mutex, OnceLock};

use rayon::prelude::*;

use super::read::{CacheChange, ScanContext, Scanned, SentChunks};
use super::stat_match::Cached;
use super::writer::{write_chunks, ChunkSender, ToWrite};
use super::Warning;
use crate::format::size::human_bytes;
use crate::git::repo::Repo;
use crate::model::tree::Node;
use crate::model::SkippedFile;
use crate::progress::Progress;
use crate::settings::{Settings, DEFAULT_MAX_FILE_SIZE};
use crate::storage::pack::{OpenBlock, ReadChunks};
use crate::storage::{CacheWriter, Snapshot, Store, StoreRead, Transaction};
use crate::worktree::walk;
use crate::{Error, Result};

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
    let clock_ns = match to_read {
        0 => i64::MIN,
        _ => read_clock(repo, mode, warnings)?,
    };
    let chunks = read.chunks()?;
    let sent = SentChunks::default();
    let block = Mutex::new(OpenBlock::default());
    // 64 chunks or sealed blocks of at most about 256 KiB each: the readers wait for
    // the writer rather than hold more.
    let (tx, rx) = crossbeam_channel::bounded::<ToWrite>(64);
    let context = scan_context(
        repo,
        store.hasher(),
        Shared {
            chunks: &chunks,
            sent: &sent,
            block: &block,
        },
        // Without a writer no sender is kept, so the writer sees the channel closed at once.
        writer.is_some().then_some(tx),
        mode,
        rules,
    );
    context.clock_ns.get_or_init(|| clock_ns);
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

/// The filesystem's clock, which judges whether a file read now is settled. A look at a
/// store it may not write (another user's, a read-only copy) has no clock: then no file
/// counts as settled, and each changed one is read twice.
pub(super) fn read_clock(repo: &Repo, mode: ScanMode, warnings: &mut Vec<Warning>) -> Result<i64> {
    let clock = crate::worktree::filesystem_clock(&repo.checkpoint_dir());
    needed(mode, clock, i64::MIN, None, warnings)
}

/// What the readers of one scan share besides the context's settings: the chunks the
/// store holds, those sent lately, the open solid block.
pub(super) struct Shared<'a> {
    pub(super) chunks: &'a ReadChunks,
    pub(super) sent: &'a SentChunks,
    pub(super) block: &'a Mutex<OpenBlock>,
}

/// The context the readers of a scan in `mode` share, sending new chunks on `tx` (none:
/// the scan stores nothing); its clock is set once a file is to be read.
pub(super) fn scan_context<'a>(
    repo: &'a Repo,
    hasher: &'a crate::format::chunk::Hasher,
    shared: Shared<'a>,
    tx: Option<ChunkSender>,
    mode: ScanMode,
    rules: &FileRules,
) -> ScanContext<'a> {
    ScanContext {
        root: &repo.root,
        hasher,
        chunks: shared.chunks,
        sent: shared.sent,
        block: shared.block,
        tx: match (mode, tx) {
            (ScanMode::Store { level, .. }, Some(tx)) => Some((tx, level)),
            _ => None,
        },
        clock_ns: OnceLock::new(),
        keep_permissions: rules.keep_permissions,
        // A scan that stores nothing only looks; what it cannot read it reports as
        // skipped, and restore then leaves it alone.
        skip_unreadable: match mode {
            ScanMode::Store {
                skip_unreadable, ..
            } => skip_unreadable,
            ScanMode::HashOnly => true,
        },
    }
}

/// The settings that decide what a scan captures, read once per scan.
pub(super) struct FileRules {
    /// `checkpoint.maxFileSize`: larger files are left out.
    pub(super) max_file_size: Option<u64>,
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
                None => Ok((None, Default::default())),
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
            let written = written?.0;
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
/// that reuses its allocation), so that a big tree is not held twice. Files read and
/// settled go to `cache`, when the scan records them.
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
