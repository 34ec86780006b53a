//! `git checkpoint restore`

use std::path::PathBuf;

use anyhow::Context as _;
use git_checkpoint::ops::restore::{dry_run, restore, RestoreOptions, RestoreReport};
use git_checkpoint::storage::{Snapshot, StoreRead};
use git_checkpoint::CheckpointId;

use super::Context;
use crate::ui::json::{self, RestoreJson};
use crate::ui::output::show_path;

/// Make the worktree equal to a checkpoint.
///
/// Unsaved changes are saved first as a checkpoint of their own (unless --no-save), so
/// every restore can be undone. Only files that differ are written, each atomically;
/// captured files the checkpoint lacks are deleted; ignored files are never touched.
/// The current branch moves to the checkpoint; checkpoints after it stay in the store
/// (see `log --all`). With paths, only those are restored and the branch stays.
///
/// <rev> is a full id, a unique prefix of 4+ hex digits, a branch name, a fetched
/// branch `<remote>/<branch>`, `@` (the current checkpoint), `<session>:prompt<N>` (the
/// checkpoint an agent's hook saved as prompt N of that session was submitted) or
/// `<session>:<tool-call-id>` (the one saved after that tool call); any of them may be
/// followed by `~N` (the N-th first parent) or `^N` (the N-th parent), as in git. `git
/// checkpoint sessions` lists sessions.
///
/// Examples:
///
///   git checkpoint restore @~1
///
///   git checkpoint restore 3fa9c1e -- src/parser.rs
///
///   git checkpoint restore 3fa9c1e --dry-run
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The checkpoint to restore.
    rev: String,
    /// Print what would be written and deleted, and change nothing.
    #[arg(long)]
    dry_run: bool,
    /// Do not save unsaved changes first (they are lost).
    #[arg(long)]
    no_save: bool,
    /// Restore only these files or directories (relative to the current directory).
    #[arg(last = true, value_name = "path")]
    paths: Vec<PathBuf>,
}

/// Runs `restore`.
pub fn run(context: &Context, args: Args) -> anyhow::Result<()> {
    let paths = context.repo.worktree_paths(&args.paths)?;
    let options = RestoreOptions {
        dry_run: args.dry_run,
        no_save: args.no_save,
        paths,
        compression_level: context.compression_level()?,
        progress: context.progress(),
        ..RestoreOptions::default()
    };
    // A dry run changes nothing, the store file included: it opens it read-only.
    if args.dry_run {
        let store = context.open_read_store()?;
        let report = dry_run(&context.repo, &store, &args.rev, &options)?;
        return say(context, &store, &report);
    }
    let store = context.open_store()?;
    let report = restore(&context.repo, &store, &args.rev, &options)?;
    say(context, &store, &report)
}

/// Reports what the restore did, or would do.
fn say(context: &Context, store: &impl StoreRead, report: &RestoreReport) -> anyhow::Result<()> {
    let target = restored(report)?;
    if context.json {
        warn(context, report);
        return json::print(&RestoreJson::new(target, report));
    }
    say_report(context, &store.snapshot()?, report, Done::Restored)
}

/// The checkpoint a restore restored: every restore has one, so its absence is a bug.
pub fn restored(report: &RestoreReport) -> anyhow::Result<CheckpointId> {
    report
        .target
        .context("internal error: a restore reported no target")
}

/// What the restore was for, which names the line that says where the worktree went.
pub(super) enum Done<'a> {
    /// `restore`: `Restored checkpoint <id>`.
    Restored,
    /// `fork` (`what` = "a new branch") and `switch` (`what` = "branch"):
    /// `Switched to <what> '<branch>' at <id>`.
    Switched {
        /// How the branch is introduced.
        what: &'a str,
        /// Its name.
        branch: &'a str,
    },
    /// `pull`: its line on the branch, then `Restored checkpoint <id>`.
    Pulled(&'a str),
}

/// The one report of a restore, whichever command made it (restore, fork, switch, pull):
/// the warnings, the checkpoint unsaved changes were saved as and how to undo, then what
/// was written and deleted (each path, for a dry run) and the files left alone.
pub(super) fn say_report(
    context: &Context,
    read: &Snapshot,
    report: &RestoreReport,
    done: Done<'_>,
) -> anyhow::Result<()> {
    warn(context, report);
    let short = read.short_id(restored(report)?)?;
    if let Some(safety) = report.safety_checkpoint {
        let safety = read.short_id(safety)?;
        context.say(&format!(
            "Saved unsaved changes as checkpoint {safety} (undo with: git checkpoint restore {safety})"
        ));
    }
    let headline = match done {
        _ if report.dry_run => {
            if report.would_save {
                context.say("Would first save unsaved changes as a checkpoint");
            }
            for path in &report.written {
                context.say(&format!("write {}", show_path(path)));
            }
            for path in &report.deleted {
                context.say(&format!("delete {}", show_path(path)));
            }
            None
        }
        Done::Restored => Some(format!("Restored checkpoint {short}")),
        Done::Switched { what, branch } => {
            Some(format!("Switched to {what} '{branch}' at {short}"))
        }
        Done::Pulled(line) => {
            context.say(line);
            Some(format!("Restored checkpoint {short}"))
        }
    };
    if let Some(headline) = headline {
        context.say(&format!(
            "{headline}: {} written, {} deleted",
            report.written.len(),
            report.deleted.len()
        ));
    }
    say_untouched(context, report);
    Ok(())
}

/// Passes on the restore's warnings (in JSON too: they go to stderr).
pub(super) fn warn(context: &Context, report: &RestoreReport) {
    for warning in &report.warnings {
        context.warn(warning);
    }
}

/// Names the files restore left alone, and why.
fn say_untouched(context: &Context, report: &RestoreReport) {
    for path in &report.untouched {
        let why = if report.exempt.contains(path) {
            "it belongs to the repository's git dir, a linked worktree or the agent's settings, which a restore never changes"
        } else {
            "no checkpoint holds it (larger than checkpoint.maxFileSize, or unreadable when saved)"
        };
        context.say(&format!("Left {} untouched: {why}", show_path(path)));
    }
}
