//! The store's health at a glance, and what the last save left out. A quick look, not
//! `verify`'s: the store opens (read-only, as `log` opens it, which makes the repair or
//! upgrade any read makes), no restore was left half done, and the current checkpoint's
//! skipped files (docs/design.md, "Skipped files"): unreadable ones, which the user
//! rarely means to leave out, and those over `checkpoint.maxFileSize`, which the setting
//! asked for.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;

use super::{Check, Finding, Status};
use crate::format::path::{quote_path, relative_to, shell_word};
use crate::format::size::human_bytes;
use crate::model::{Checkpoint, SkipReason, SkippedFile};
use crate::ops::workspace::Workspace;
use crate::storage::{Snapshot, StoreRead};
use crate::text::list_names;
use crate::Result;

/// How many files a finding names; the others are counted.
const NAMED: usize = 3;

/// What [`check`] found, and when the last checkpoint was made (the hooks log's
/// failures after it are the ones that matter, [`super::hook_failures`]).
pub struct StoreFindings {
    /// The store's findings, then the last save's.
    pub findings: Vec<Finding>,
    /// When the current checkpoint was made; `None` before the first.
    pub last_checkpoint_ns: Option<i128>,
}

/// A restore that started and did not finish, and the command that finishes it.
pub struct InterruptedRestore {
    /// The short id of the checkpoint it was restoring.
    pub target: String,
    /// `git checkpoint restore <target> [-- <paths>]`, the paths (of a restore limited
    /// to some) as seen from the directory `prefix` names.
    pub command: String,
}

/// The restore `read` records as started and not finished, if any, with the command
/// that finishes it when run in the worktree directory `prefix` (a [`crate::git::repo::Repo`]'s
/// prefix): a restore limited to paths is finished by the same paths, and without them
/// the command would restore the whole worktree.
pub fn interrupted_restore(read: &Snapshot, prefix: &[u8]) -> Result<Option<InterruptedRestore>> {
    let Some(target) = read.interrupted_restore()? else {
        return Ok(None);
    };
    let target = read.short_id(target)?;
    let paths: Vec<String> = read
        .interrupted_restore_paths()?
        .iter()
        .map(|path| shell_word(&relative_to(prefix, path)))
        .collect();
    let mut command = format!("git checkpoint restore {target}");
    if !paths.is_empty() {
        command = format!("{command} -- {}", paths.join(" "));
    }
    Ok(Some(InterruptedRestore { target, command }))
}

/// The store of `workspace`, and what its last save left out.
pub fn check(workspace: &Workspace) -> StoreFindings {
    let mut found = StoreFindings {
        findings: Vec::new(),
        last_checkpoint_ns: None,
    };
    let store_path = workspace.repo.store_path();
    if !store_path.exists() {
        found.findings.push(
            Finding::new(
                Check::Store,
                Status::Note,
                "no checkpoints yet: nothing was saved in this worktree",
            )
            .fixed_by("git checkpoint save"),
        );
        return found;
    }
    let mut repaired = false;
    let opened = workspace
        .open_read_store(&mut || {}, &mut || repaired = true)
        .and_then(|store| look(workspace, &store.snapshot()?, &mut found));
    if let Err(e) = opened {
        found.findings.push(
            Finding::new(
                Check::Store,
                Status::Problem,
                format!("the store does not open: {e}"),
            )
            .fixed_by("git checkpoint verify"),
        );
    } else if repaired {
        found.findings.insert(
            0,
            Finding::new(
                Check::Store,
                Status::Problem,
                "the store needs a repair that it cannot record (is its disk full?); \
                 every command repairs it again in memory until one can",
            )
            .fixed_by("git checkpoint save"),
        );
    }
    found
}

/// The store's findings and the last save's, from an open store.
fn look(workspace: &Workspace, read: &Snapshot, found: &mut StoreFindings) -> Result<()> {
    let size = std::fs::metadata(workspace.repo.store_path())
        .map(|meta| human_bytes(meta.len()))
        .unwrap_or_default();
    found.findings.push(Finding::new(
        Check::Store,
        Status::Ok,
        format!("the store opens ({size}); `git checkpoint verify` checks every record in it"),
    ));
    if let Some(restore) = interrupted_restore(read, &workspace.repo.prefix)? {
        found.findings.push(
            Finding::new(
                Check::Store,
                Status::Problem,
                format!(
                    "a restore to {} was interrupted: the worktree is partly restored",
                    restore.target
                ),
            )
            .fixed_by(restore.command),
        );
    }
    let Some(current) = read.current()? else {
        found.findings.push(Finding::new(
            Check::LastSave,
            Status::Ok,
            "no checkpoint on this branch yet",
        ));
        return Ok(());
    };
    let record = read.checkpoint(current)?;
    found.last_checkpoint_ns = Some(record.time_ns);
    let short = read.short_id(current)?;
    found.findings.extend(left_out(workspace, &short, &record));
    Ok(())
}

/// What the last save (`record`, the checkpoint `short`) left out.
fn left_out(workspace: &Workspace, short: &str, record: &Checkpoint) -> Vec<Finding> {
    let of = |reason| -> Vec<&SkippedFile> {
        record
            .skipped
            .iter()
            .filter(|file| file.reason == reason)
            .collect()
    };
    let (unreadable, too_large) = (of(SkipReason::Unreadable), of(SkipReason::TooLarge));
    let mut findings = Vec::new();
    if unreadable.is_empty() && too_large.is_empty() {
        findings.push(Finding::new(
            Check::LastSave,
            Status::Ok,
            format!("the last save ({short}) left nothing out"),
        ));
    }
    if !unreadable.is_empty() {
        findings.push(unreadable_files(workspace, short, &unreadable));
    }
    if !too_large.is_empty() {
        findings.push(large_files(workspace, short, &too_large));
    }
    findings
}

/// The files the last save could not read: a problem while they still cannot be read,
/// fixed by making them readable (or the user's, when another user owns them).
fn unreadable_files(workspace: &Workspace, short: &str, files: &[&SkippedFile]) -> Finding {
    let repo = &workspace.repo;
    let on_disk = |file: &SkippedFile| repo.root.join(OsStr::from_bytes(&file.path));
    let still: Vec<&&SkippedFile> = files
        .iter()
        .filter(|file| std::fs::File::open(on_disk(file)).is_err())
        .collect();
    let names: Vec<String> = files.iter().map(|file| quote_path(&file.path)).collect();
    let names = list_names(&names, NAMED);
    if still.is_empty() {
        return Finding::new(
            Check::LastSave,
            Status::Note,
            format!(
                "the last save ({short}) could not read {names}; readable now, so the next \
                 save takes {}",
                them(files.len())
            ),
        );
    }
    let me = rustix::process::geteuid().as_raw();
    let theirs = still
        .iter()
        .any(|file| std::fs::symlink_metadata(on_disk(file)).is_ok_and(|meta| meta.uid() != me));
    let paths: Vec<String> = still
        .iter()
        .map(|file| shell_word(&relative_to(&repo.prefix, &file.path)))
        .collect();
    let fix = match theirs {
        true => format!("sudo chown \"$(id -un)\" {}", paths.join(" ")),
        false => format!("chmod u+rX {}", paths.join(" ")),
    };
    let them = them(files.len());
    Finding::new(
        Check::LastSave,
        Status::Problem,
        format!(
            "the last save ({short}) could not read {names} and left {them} out: no \
             checkpoint holds {them}, and a restore leaves {them} alone; make {them} \
             readable, or ignore {them}"
        ),
    )
    .fixed_by(fix)
}

/// The files the last save left out for their size: asked for by
/// `checkpoint.maxFileSize`, so a note, with the setting that would take them.
fn large_files(workspace: &Workspace, short: &str, files: &[&SkippedFile]) -> Finding {
    let names: Vec<String> = files
        .iter()
        .map(|file| format!("{} ({})", quote_path(&file.path), human_bytes(file.size)))
        .collect();
    let names = list_names(&names, NAMED);
    let limit = match workspace.settings.max_file_size.get() {
        Ok(Some(limit)) => format!(" ({})", human_bytes(limit)),
        _ => String::new(),
    };
    let largest = files.iter().map(|file| file.size).max().unwrap_or(0);
    let mib = largest.div_ceil(1 << 20).max(1);
    Finding::new(
        Check::LastSave,
        Status::Note,
        format!(
            "the last save ({short}) left out {names}: larger than \
             checkpoint.maxFileSize{limit}; a restore leaves {} alone",
            them(files.len())
        ),
    )
    .fixed_by(format!("git config checkpoint.maxFileSize {mib}m"))
}

/// `it` or `them`, for `count` files.
fn them(count: usize) -> &'static str {
    match count {
        1 => "it",
        _ => "them",
    }
}
