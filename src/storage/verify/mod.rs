//! Checking a store: the file itself (redb's page checksums), then every record: each
//! checkpoint decodes, its parents exist, every tree it reaches exists, decodes (rebuilt
//! from its delta chain, whose bases are checked too), hashes to its id, is encoded as
//! saves encode it, has safe names in strictly increasing order
//! and files whose chunk lists fit their sizes (by count, and by the lengths the chunk
//! index records), every chunk those trees name exists, and the tree expands to no more
//! files and bytes than the checkpoint records (added up once per tree, so trees shared
//! at every level cost nothing more); branches, HEAD and pins point at checkpoints;
//! stat-cache entries name existing chunks (a save would reuse them). With `read_data`,
//! every chunk is also read, decompressed, re-hashed and measured against its recorded
//! length.
//!
//! Damage is reported, never fatal: the report lists each damaged object and the
//! checkpoints that no longer restore exactly because of it.
//!
//! `records.rs` checks the records (checkpoints, refs, the chunk index, chunks' data,
//! the stat cache), `trees.rs` the trees the checkpoints reach; this file opens the store
//! (on a private copy) and gathers the findings into a [`Report`].

mod records;
mod trees;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use self::records::check_records;
use super::Store;
use crate::{CheckpointId, Error, Result};

/// One damaged object.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Problem {
    /// What is damaged: `"chunk <id>"`, `"tree <id>"`, `"checkpoint <id>"`,
    /// `"branch <name>"`, `"HEAD"`, `"pin <id>"`, `"stat cache <path>"`, `"file"` or
    /// `"records"` (the tables as a whole).
    pub object: String,
    /// What is wrong with it.
    pub message: String,
}

/// What a verify found.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Every problem, sorted.
    pub problems: Vec<Problem>,
    /// Checkpoints that are damaged, reach damage, or lost a parent, sorted.
    pub affected: Vec<CheckpointId>,
    /// Checkpoints checked.
    pub checkpoints: usize,
    /// Trees checked (those some checkpoint reaches).
    pub trees: usize,
    /// Chunks in the store.
    pub chunks: usize,
    /// Chunks read, decompressed and re-hashed (with `read_data`).
    pub chunks_read: usize,
    /// Stored bytes read for that.
    pub bytes_read: u64,
    /// Trees no checkpoint reaches (not damage: gc deletes them).
    pub unreachable_trees: usize,
    /// Chunks nothing references (not damage: gc deletes them).
    pub unreachable_chunks: usize,
    /// Stored bytes of the unreachable trees and chunks: what a gc would free.
    pub unreachable_bytes: u64,
    /// Whether the records could be read and checked at all.
    pub opened: bool,
}

impl Report {
    /// Whether nothing is damaged.
    pub fn ok(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Problems keyed by object, so that one object is reported once.
#[derive(Default)]
struct Findings {
    problems: BTreeMap<String, String>,
    affected: BTreeSet<CheckpointId>,
}

impl Findings {
    fn add(&mut self, object: String, message: impl Into<String>) {
        self.problems
            .entry(object)
            .or_insert_with(|| message.into());
    }

    fn into_report(self, report: &mut Report) {
        report.problems = self
            .problems
            .into_iter()
            .map(|(object, message)| Problem { object, message })
            .collect();
        report.affected = self.affected.into_iter().collect();
    }
}

/// Verifies the store at `path`, waiting for another process as [`Store::open`] does.
/// Fails only when the store cannot be looked at for reasons other than damage (busy,
/// written by a newer version); damage, including a file that does not open, is in the
/// report. Called through `Workspace::verify`, the one door to a worktree's store.
pub(crate) fn verify(
    path: &Path,
    timeout: Duration,
    on_wait: &mut dyn FnMut(),
    read_data: bool,
) -> Result<Report> {
    if !path.exists() {
        // No store yet: the check makes the empty one every command would make.
        return verify_file(path, timeout, on_wait, read_data);
    }
    // A check leaves the store as it found it, and works where it may not write: redb's
    // page pass opens a file for writing and repairs what it can, so it runs on a private
    // copy, taken while a read-only open keeps writers out.
    let copy = {
        let held = catch_quietly(|| crate::storage::hold_read_only(path, timeout, on_wait))
            .unwrap_or(Ok(None))?;
        let copy = tempfile::Builder::new()
            .prefix("git-checkpoint-verify-")
            .tempfile()
            .map_err(|e| Error::io(std::env::temp_dir(), e))?;
        std::fs::copy(path, copy.path()).map_err(|e| {
            Error::io(
                copy.path(),
                std::io::Error::new(
                    e.kind(),
                    format!("copying the store to check it: {e} (TMPDIR names where)"),
                ),
            )
        })?;
        // The copy took the store's permissions; the check opens it for writing.
        std::fs::set_permissions(
            copy.path(),
            std::os::unix::fs::PermissionsExt::from_mode(0o600),
        )
        .map_err(|e| Error::io(copy.path(), e))?;
        drop(held);
        copy
    };
    let mut report = verify_file(copy.path(), timeout, on_wait, read_data)?;
    // Name the store, not the copy, in what the check says.
    let (copied, real) = (
        copy.path().display().to_string(),
        path.display().to_string(),
    );
    for problem in &mut report.problems {
        problem.message = problem.message.replace(&copied, &real);
    }
    Ok(report)
}

/// [`verify`] of the store file at `path` itself, which it may repair.
fn verify_file(
    path: &Path,
    timeout: Duration,
    on_wait: &mut dyn FnMut(),
    read_data: bool,
) -> Result<Report> {
    let mut report = Report::default();
    let mut findings = Findings::default();
    // redb takes an empty file for a new store; an existing empty store file is one that
    // lost everything.
    if std::fs::metadata(path).is_ok_and(|m| m.len() == 0) {
        findings.add("file".into(), "the store file is empty (truncated?)");
        findings.into_report(&mut report);
        return Ok(report);
    }
    // redb's own documentation allows a plain open of a file damaged outside redb to
    // panic, so the open and the checksum pass run under `catch_quietly`.
    let opened = catch_quietly(|| Store::open(path, timeout, on_wait))
        .unwrap_or_else(|panic| Err(Error::Corrupt(panic)));
    let mut store = match opened {
        Ok(store) => store,
        Err(e @ (Error::StoreBusy { .. } | Error::NewerFormat { .. })) => return Err(e),
        Err(e) => {
            findings.add("file".into(), format!("the store does not open: {e}"));
            findings.into_report(&mut report);
            return Ok(report);
        }
    };
    // redb verifies every page checksum of the committed trees; it repairs what it can
    // (an interrupted commit) and refuses what it cannot.
    let checked = catch_quietly(|| store.db.check_integrity())
        .unwrap_or_else(|panic| Err(redb::StorageError::Corrupted(panic).into()));
    let mut read_data = read_data;
    match checked {
        Ok(true) => {}
        Ok(false) => findings.add(
            "file".into(),
            "page checksums did not match; redb can repair the file, possibly by going back to an earlier commit (the next command that writes the store does)",
        ),
        Err(e) => {
            findings.add("file".into(), format!("the file is damaged: {e}"));
            // redb refuses the file as a whole. Read the records anyway, re-hashing every
            // chunk, to name what is damaged and the checkpoints it breaks.
            drop(store);
            store = match catch_quietly(|| Store::open(path, timeout, on_wait)) {
                Ok(Ok(store)) => store,
                _ => {
                    findings.into_report(&mut report);
                    return Ok(report);
                }
            };
            read_data = true;
        }
    }
    // Reading a damaged file may still fail or, inside redb, panic: that is reported too.
    match catch_quietly(|| check_records(&store, read_data, &mut report, &mut findings)) {
        Ok(Ok(())) => report.opened = true,
        Ok(Err(e)) => findings.add("records".into(), format!("cannot be read: {e}")),
        Err(panic) => findings.add("records".into(), format!("cannot be read: {panic}")),
    }
    findings.into_report(&mut report);
    Ok(report)
}

/// An error as a problem description: without the "the store is damaged" that every
/// line of the report would otherwise repeat.
fn describe(e: Error) -> String {
    match e {
        Error::Corrupt(message) => message,
        e => e.to_string(),
    }
}

/// Runs `f`, turning a panic inside it into its message. The default hook's printout is
/// suppressed meanwhile: the caller reports the damage in its own words.
fn catch_quietly<T>(f: impl FnOnce() -> T) -> std::result::Result<T, String> {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    std::panic::set_hook(hook);
    result.map_err(|payload| {
        payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "the storage engine gave up on the file".into())
    })
}
