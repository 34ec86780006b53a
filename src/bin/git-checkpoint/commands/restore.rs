//! `git checkpoint restore`

use std::path::PathBuf;

use anyhow::Context as _;
use git_checkpoint::format::text::escape_controls;
use git_checkpoint::model::session::abbreviate;
use git_checkpoint::ops::restore::{dry_run, restore, RestoreOptions, RestoreReport};
use git_checkpoint::ops::session_restore::{
    self, ChangedBy, SessionRestoreOptions, SessionRestoreReport,
};
use git_checkpoint::storage::{Snapshot, StoreRead};
use git_checkpoint::CheckpointId;

use super::Context;
use crate::ui::json::{self, RestoreJson, SessionRestoreJson};
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
/// followed by `~N` (the N-th first parent) or `^N` (the N-th parent), as in git.
/// `<session>:turn<N>` is the last checkpoint of prompt N's turn (where the agent left
/// the worktree before the session's next prompt); `prompt-1` and `turn-1` name the
/// last prompt. `git checkpoint sessions` lists sessions.
///
/// With --only-session, only the paths the session's own tool calls changed since <rev>
/// are put back: those a tool call names, or that changed between its own before and
/// after hooks; the user's changes and other sessions' stay. A path the session
/// changed that someone else changed too since, or one a tool call changed without
/// naming it (who did is unsure), is a conflict: listed and left alone (exit 1) unless
/// --force. See docs/sessions.md.
///
/// With paths, each must name a file of <rev> or of the worktree (or a directory
/// holding one), as git's pathspecs must: one that names nothing fails, and nothing is
/// changed.
///
/// Examples:
///
///   git checkpoint restore @~1
///
///   git checkpoint restore 3fa9c1e -- src/parser.rs
///
///   git checkpoint restore 3fa9c1e --dry-run
///
///   git checkpoint restore 5f1c:prompt2 --only-session
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
    /// Put back only what this agent session's tool calls changed since <rev> (default:
    /// the session <rev> names, as in <session>:prompt2).
    #[arg(long, value_name = "session", num_args = 0..=1, default_missing_value = "", conflicts_with = "paths")]
    only_session: Option<String>,
    /// With --only-session: put back the paths someone else changed too.
    #[arg(long, requires = "only_session")]
    force: bool,
    /// Restore only these files or directories (relative to the current directory).
    #[arg(last = true, value_name = "path")]
    paths: Vec<PathBuf>,
}

/// Runs `restore`.
pub fn run(context: &Context, args: Args) -> anyhow::Result<()> {
    let paths = context.workspace.repo.worktree_paths(&args.paths)?;
    let options = RestoreOptions {
        dry_run: args.dry_run,
        no_save: args.no_save,
        paths,
        settings: context.workspace.settings.clone(),
        progress: context.progress(),
        ..RestoreOptions::default()
    };
    if let Some(session) = &args.only_session {
        let options = SessionRestoreOptions {
            session: (!session.is_empty()).then(|| session.clone()),
            force: args.force,
            restore: options,
        };
        return only_session(context, &args.rev, &options);
    }
    // A dry run changes nothing, the store file included: it opens it read-only.
    if args.dry_run {
        let store = context.open_read_store()?;
        let report = dry_run(&context.workspace.repo, &store, &args.rev, &options)?;
        return say(context, &store, &report);
    }
    let store = context.open_store()?;
    let report = restore(&context.workspace.repo, &store, &args.rev, &options)?;
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
pub(crate) fn restored(report: &RestoreReport) -> anyhow::Result<CheckpointId> {
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

/// Runs `restore --only-session`: the plan's conflicts first, then the restore's own
/// report; exit 1 when conflicts were left alone.
fn only_session(
    context: &Context,
    rev: &str,
    options: &SessionRestoreOptions,
) -> anyhow::Result<()> {
    let report;
    let dry_run = options.restore.dry_run;
    // A dry run changes nothing, the store file included: it opens it read-only.
    if dry_run {
        let store = context.open_read_store()?;
        report = session_restore::dry_run(&context.workspace.repo, &store, rev, options)?;
        say_session(context, &store, &report, dry_run)?;
    } else {
        let store = context.open_store()?;
        report = session_restore::restore_session(&context.workspace.repo, &store, rev, options)?;
        say_session(context, &store, &report, dry_run)?;
    }
    let unsure = report.conflicts.iter().any(|conflict| {
        conflict
            .by
            .iter()
            .any(|by| matches!(by, ChangedBy::UnsureToolCall { .. }))
    });
    match report.left_alone() {
        0 => Ok(()),
        n => anyhow::bail!(
            "left {n} path{} alone that someone else changed too{} (see above; --force puts {} back)",
            if n == 1 { "" } else { "s" },
            if unsure { ", or may have" } else { "" },
            if n == 1 { "it" } else { "them" }
        ),
    }
}

/// Reports a session-limited restore.
fn say_session(
    context: &Context,
    store: &impl StoreRead,
    report: &SessionRestoreReport,
    dry_run: bool,
) -> anyhow::Result<()> {
    let empty = RestoreReport::default();
    let read = store.snapshot()?;
    let by = |by: &ChangedBy| -> anyhow::Result<String> {
        Ok(match by {
            ChangedBy::Worktree => "unsaved changes in the worktree".to_string(),
            ChangedBy::UnsureToolCall { id } => format!(
                "someone during a tool call of this session that does not name it (checkpoint {})",
                read.short_id(*id)?
            ),
            ChangedBy::Checkpoint {
                id,
                session: Some(s),
                tool_call: true,
            } => format!(
                "a tool call of session {} (checkpoint {})",
                abbreviate(s),
                read.short_id(*id)?
            ),
            ChangedBy::Checkpoint { id, .. } => format!(
                "the user (seen at checkpoint {}, not a tool call)",
                read.short_id(*id)?
            ),
        })
    };
    let restored = report.restore.as_ref().unwrap_or(&empty);
    if context.json {
        return json::print(&SessionRestoreJson::new(report, restored, dry_run));
    }
    for conflict in &report.conflicts {
        let others = conflict
            .by
            .iter()
            .map(&by)
            .collect::<anyhow::Result<Vec<_>>>()?;
        let what = if report.forced { "Overwrote" } else { "Left" };
        let also = if conflict.by_session {
            "this session and by "
        } else {
            ""
        };
        context.say(&format!(
            "{what} {}: changed by {also}{}",
            show_path(&conflict.path),
            others.join(", ")
        ));
    }
    match &report.restore {
        Some(restored) => {
            // Nothing was unsaved: the way back is the checkpoint that held the
            // worktree already (a restore with unsaved changes names its own).
            if let (None, Some(held), false) =
                (restored.safety_checkpoint, restored.worktree, dry_run)
            {
                let held = read.short_id(held)?;
                context.say(&format!(
                    "The worktree was saved already as checkpoint {held} (undo with: git checkpoint restore {held})"
                ));
            }
            say(context, store, restored)?;
            if let Some(made) = report.checkpoint {
                context.say(&format!(
                    "Saved the restore as checkpoint {}: {}",
                    read.short_id(made)?,
                    escape_controls(&read.checkpoint(made)?.message)
                ));
            }
            Ok(())
        }
        None => {
            context.say(&format!(
                "Nothing to restore: session {} changed {} path{} since {}",
                abbreviate(&report.session),
                report.changed_by_session.len(),
                if report.changed_by_session.len() == 1 {
                    ""
                } else {
                    "s"
                },
                report
                    .target
                    .map(|id| read.short_id(id))
                    .transpose()?
                    .unwrap_or_default(),
            ));
            Ok(())
        }
    }
}
