//! Saving: scan the worktree into trees (reading only files the stat cache cannot vouch
//! for), store the new chunks, then commit trees, the checkpoint, the branch move and the
//! stat cache together. This file holds the save itself (its options, its report, the
//! commit); each other job has its own file:
//!
//! - `look.rs`: the read-only looks (`status`, `diff`, a dry run, the look a save takes
//!   before it opens the store for writing).
//! - `after_look.rs`: the write path after a save's look found something changed: the
//!   look's findings kept, only what the look read read again.
//! - `scan.rs`: the scan: walk (or the watcher's changed paths), match the stat cache,
//!   read what it cannot vouch for, build the trees.
//! - `watched.rs`: the scan strategy a watcher allows: the last watched save's base tree
//!   but for the paths changed since, whose stat cache entries alone are looked up and
//!   whose entries are spliced into that tree; and the base a save records once it
//!   commits.
//! - `stat_match.rs`: the walk matched with the stat cache: which files it vouches for.
//! - `readers.rs`: the reading of a scan: the reader threads and the chunk writer they
//!   feed, what they gather (the captured files, the stat cache changes), and the
//!   settings that decide what is captured.
//! - `read.rs`: one file read, hashed and chunked; new chunks go to the writer.
//! - `writer.rs`: the chunk-writer thread, committing in bounded batches.
//! - `content.rs`: content that is not a worktree file (attachments, fetched blobs).
//! - `warning.rs`: what a save or a look went on without.
//!
//! Commit protocol (docs/design.md invariant 2): chunks go in bounded batches (64 MiB, one
//! commit each, so memory stays bounded however big the tree) while files are read;
//! everything that makes the checkpoint visible commits in one final transaction. A
//! crash before that commit leaves at most unreferenced chunks, which gc sweeps.

mod after_look;
mod content;
mod kept_index;
mod look;
mod read;
mod readers;
mod scan;
mod stat_match;
mod strategy;
mod stream;
mod warning;
mod watched;
mod window;
mod writer;

use std::path::PathBuf;
use std::sync::Arc;

use crate::diff;
use crate::git::repo::Repo;
use crate::model::operation::NewOperation;
use crate::model::{Checkpoint, Head, SkippedFile};
use crate::ops::gc::{self, AutoGc};
use crate::progress::Progress;
use crate::settings::Settings;
use crate::storage::{OpenedStore, ReadStore, Store, StoreRead, Transaction};
use crate::{CheckpointId, Result};

use after_look::LookedScan;
pub(crate) use content::store_content;
pub use look::{look, look_by_walking};
use look::{look_before_saving, save_mode, watched_unchanged, Looked};
pub use readers::ScanMode;
pub use scan::Scan;
use scan::{complete, ScanRequest};
use strategy::scan_store;
pub use warning::Warning;

/// What a save should record. Made with [`SaveOptions::new`] (or a workspace's
/// `save_options`), which takes the settings to apply: there is no default, so no
/// caller can forget them and save with the defaults instead of the repository's.
#[derive(Clone, Debug)]
pub struct SaveOptions {
    /// The checkpoint message.
    pub message: String,
    /// `key=value` metadata.
    pub meta: Vec<(String, String)>,
    /// Add `path` and `paths` metadata from what the checkpoint changed (an agent's tool
    /// step: [`crate::ops::log_query::changed_path_meta`]).
    pub record_changed_paths: bool,
    /// Make a checkpoint even when nothing changed.
    pub allow_empty: bool,
    /// The `checkpoint.*` settings the save applies: the compression, `maxFileSize`,
    /// `keepPermissions`, and the `gc.*` retention after it. The caller fills them from
    /// its [`crate::ops::workspace::Workspace`], so that all of them arrive one way.
    pub settings: Settings,
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
    /// The operation to record in the save's own transaction (a command's result,
    /// [`save_result`]): the record and the checkpoint commit together, and the
    /// record's worktree change names the checkpoint as the worktree the command left.
    pub operation: Option<NewOperation>,
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
    /// The options of a plain save with `message` that applies `settings`: no metadata,
    /// nothing attached, a checkpoint only if something changed, unreadable files an
    /// error.
    pub fn new(message: String, settings: Settings) -> SaveOptions {
        SaveOptions {
            message,
            meta: Vec::new(),
            record_changed_paths: false,
            allow_empty: false,
            settings,
            progress: None,
            skip_unreadable: false,
            attach: Vec::new(),
            keep_head: false,
            attach_files: Vec::new(),
            walk: false,
            operation: None,
        }
    }

    /// Whether the save stores attachments (and so always makes a checkpoint).
    fn has_attachments(&self) -> bool {
        !self.attach.is_empty() || !self.attach_files.is_empty()
    }
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

/// What a safety save before a change to the worktree (restore, revert) found.
#[derive(Debug)]
pub struct SafetySave {
    /// The checkpoint that holds the worktree as it was: the new one, or the current
    /// one when nothing had changed.
    pub worktree: CheckpointId,
    /// The checkpoint made, if anything had changed.
    pub made: Option<CheckpointId>,
    /// The save's own report: its warnings, the files it left out.
    pub report: SaveReport,
}

/// Saves the worktree before an operation changes it, so that the operation can be
/// undone: walking (a watcher cannot see every change, and the operation must miss
/// none), unreadable files recorded as skipped (so the operation leaves them alone), and
/// HEAD's branch left where it is (the operation moves it, if anything does).
pub fn save_before_change(
    repo: &Repo,
    store: &Store,
    message: String,
    settings: &Settings,
    progress: Option<Arc<dyn Progress>>,
) -> Result<SafetySave> {
    let saved = save(
        repo,
        store,
        &SaveOptions {
            skip_unreadable: true,
            walk: true,
            progress,
            keep_head: true,
            ..SaveOptions::new(message, settings.clone())
        },
    )?;
    let (worktree, made) = match saved.outcome {
        SaveOutcome::Saved { id, .. } => (id, Some(id)),
        SaveOutcome::Unchanged { current } => (current, None),
    };
    Ok(SafetySave {
        worktree,
        made,
        report: saved,
    })
}

/// Saves the worktree as the result of a command that changed it (a revert, a
/// session-limited restore): a child of the current checkpoint with HEAD's branch moved
/// to it, carrying `meta` and the `path` and `paths` of what it changed. It walks, as
/// the safety save before the command did: a watcher may not have seen the command's
/// writes yet. Files that cannot be read are left out and recorded, as the safety save
/// left them. The save's transaction records `operation`, the command, with the
/// checkpoint as the worktree it left, so that the record and the result commit
/// together (docs/design.md invariant 27). `None` when nothing changed since the
/// current checkpoint (the command is recorded all the same).
pub fn save_result(
    repo: &Repo,
    store: &Store,
    message: String,
    meta: Vec<(String, String)>,
    operation: NewOperation,
    settings: &Settings,
) -> Result<Option<CheckpointId>> {
    let saved = save(
        repo,
        store,
        &SaveOptions {
            meta,
            record_changed_paths: true,
            skip_unreadable: true,
            walk: true,
            operation: Some(operation),
            ..SaveOptions::new(message, settings.clone())
        },
    )?;
    Ok(match saved.outcome {
        SaveOutcome::Saved { id, .. } => Some(id),
        SaveOutcome::Unchanged { .. } => None,
    })
}

/// Records `operation` in a transaction of its own: the command whose result
/// [`save_result`] could not save is recorded all the same, so that it can be undone.
pub fn record_unsaved_result(store: &Store, operation: NewOperation) -> Result<()> {
    let txn = store.transaction()?;
    txn.record_operation(operation)?;
    txn.commit()
}

/// Saves the worktree as a child of the current checkpoint and moves HEAD's branch to it,
/// unless nothing changed and `allow_empty` is off.
pub fn save(repo: &Repo, store: &Store, options: &SaveOptions) -> Result<SaveReport> {
    if !options.walk {
        if let Some(report) = watched_unchanged(repo, &store.snapshot()?, options)? {
            return Ok(report);
        }
    }
    save_walked(repo, store, options, None)
}

/// [`save`], going on from what a read-only look found, when one was made.
fn save_walked(
    repo: &Repo,
    store: &Store,
    options: &SaveOptions,
    looked: Option<Box<LookedScan>>,
) -> Result<SaveReport> {
    let attachments = content::read_attachments(options)?;
    let request = ScanRequest {
        writer: Some(store),
        progress: options.progress.as_deref(),
        walk: options.walk,
        ..ScanRequest::new(save_mode(options)?, &options.settings)
    };
    let mut scan = match looked {
        // Only what the look read is read again, unless something was committed since.
        Some(looked) => after_look::scan(repo, store, request, *looked)?,
        None => complete(scan_store(repo, store, request)?)?,
    };
    crate::fault::point("save-chunks-written");

    let _span = crate::trace::span("commit");
    let txn = match scan.chunk_txn.take() {
        Some(txn) => txn,
        None => store.transaction()?,
    };
    let outcome = add_checkpoint(repo, store, &txn, &scan, options, attachments)?;
    scan.record_cache(&txn)?;
    if let Some(operation) = &options.operation {
        let mut operation = operation.clone();
        if let (Some(worktree), SaveOutcome::Saved { id, .. }) = (&mut operation.worktree, &outcome)
        {
            worktree.after = Some(*id);
        }
        txn.record_operation(operation)?;
    }
    let records = options.operation.is_some() || scan.changes_cache();
    if matches!(outcome, SaveOutcome::Unchanged { .. }) && !records {
        // Nothing to record: skip the durable commit and its fsync.
        txn.abort()?;
        if let Some(watched) = &scan.watched {
            // The tree is the current checkpoint's, in the store already.
            watched.record_if_index_moved(repo, scan.root, &scan.skipped);
        }
    } else {
        let _span = crate::trace::span("commit: write and sync");
        txn.commit()?;
        if let Some(watched) = &scan.watched {
            watched.record(repo, scan.root, &scan.skipped);
        }
    }
    crate::trace::note_counts();
    Ok(SaveReport {
        outcome,
        warnings: scan.warnings,
        leftovers: scan.leftovers,
        skipped: scan.skipped,
        gc: None,
    })
}

/// Adds the checkpoint of `scan` to `txn` (its trees, attachments, change summary) and
/// moves HEAD's branch to it, unless the tree is the current checkpoint's and nothing
/// asks for a checkpoint anyway. Nothing is visible until the caller commits `txn`
/// (docs/design.md invariant 2).
fn add_checkpoint(
    repo: &Repo,
    store: &Store,
    txn: &Transaction,
    scan: &Scan,
    options: &SaveOptions,
    attachments: Vec<(String, Vec<u8>)>,
) -> Result<SaveOutcome> {
    let current = match txn.current()? {
        Some(id) => Some((id, txn.checkpoint(id)?.tree)),
        None => None,
    };
    if let Some((id, tree)) = current {
        if tree == scan.root && !options.allow_empty && !options.has_attachments() {
            return Ok(SaveOutcome::Unchanged { current: id });
        }
    }
    let head = txn.head()?;
    let git_head = repo.git_head();
    txn.add_trees(&scan.trees, scan.root, current.map(|(_, tree)| tree))?;
    let level = options.settings.compression.get()?;
    let mut stored = content::store_attachments(txn, &store.hasher, attachments, level)?;
    stored.extend(content::store_attachment_files(
        txn,
        &store.hasher,
        &options.attach_files,
        level,
    )?);
    let parent = current.map(|(id, _)| id);
    let changes = diff::parent_changes(txn, &scan.trees, parent, scan.root)?;
    let mut meta = options.meta.clone();
    if let (true, Some(changes)) = (options.record_changed_paths, &changes) {
        crate::ops::log_query::changed_path_meta(&mut meta, changes);
    }
    let mut record = Checkpoint {
        tree: scan.root,
        parents: parent.into_iter().collect(),
        time_ns: crate::clock::now_ns(),
        message: options.message.clone(),
        branch: match head {
            Head::Branch(name) => Some(name),
            Head::Detached(_) => None,
        },
        git_head: git_head.commit,
        git_branch: git_head.branch,
        meta,
        attachments: stored,
        files: scan.totals.files,
        bytes: scan.totals.bytes,
        skipped: scan.skipped.clone(),
    };
    let id = txn.add_checkpoint(&mut record)?;
    // Kept so that `log` need not diff the checkpoint's trees.
    if let Some(changes) = changes {
        txn.set_summary(id, &diff::summarize(&changes))?;
    }
    if !options.keep_head {
        txn.move_head(id)?;
    }
    Ok(SaveOutcome::Saved {
        id,
        checkpoint: Box::new(record),
    })
}

/// [`save`], then, if it made a checkpoint, the retention `checkpoint.gc.*` configures
/// ([`gc::after_save`]): what every save a person or an agent asks for does. The gc's
/// outcome is part of the report; it never fails the save, which is durable by then.
pub fn save_then_gc(repo: &Repo, store: &mut Store, options: &SaveOptions) -> Result<SaveReport> {
    let mut report = save(repo, store, options)?;
    if matches!(report.outcome, SaveOutcome::Saved { .. }) {
        report.gc = gc::after_save(&options.settings, store);
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
    let looked = if look {
        let read = open_read()?;
        match look_before_saving(repo, &read, options)? {
            Looked::Unchanged(report) => return Ok((report, OpenedStore::Read(read))),
            Looked::Changed(looked) => looked,
        }
    } else {
        None
    };
    crate::fault::point("save-looked");
    let mut store = open_for_writing()?;
    let mut report = save_walked(repo, &store, options, looked)?;
    if matches!(report.outcome, SaveOutcome::Saved { .. }) {
        report.gc = gc::after_save(&options.settings, &mut store);
    }
    Ok((report, OpenedStore::Write(store)))
}
