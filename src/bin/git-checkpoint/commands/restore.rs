//! `git checkpoint restore`

use std::path::PathBuf;

use git_checkpoint::ops::restore::{dry_run, restore, RestoreOptions, RestoreReport};
use git_checkpoint::ops::session_restore::{
    self, ChangedBy, SessionRestoreOptions, SessionRestoreReport,
};
use git_checkpoint::storage::{Snapshot, StoreRead};

use super::Context;
use crate::ui::answer::restore::{restored, RestoreAnswer};
use crate::ui::answer::Shorts;

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
/// --force. What it wrote is saved as a checkpoint of its own ("restore of <session>'s
/// files to <rev> (N files)"), HEAD's branch moved to it. See docs/sessions.md.
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

/// What a restore is asked for, from the command line or the MCP server's `restore`.
#[derive(Debug, Default)]
pub struct RestoreRequest {
    /// The checkpoint to restore.
    pub rev: String,
    /// Only these worktree paths (none: the whole worktree).
    pub paths: Vec<Vec<u8>>,
    /// Say what would change, and change nothing.
    pub dry_run: bool,
    /// Do not save unsaved changes first.
    pub no_save: bool,
    /// Put back only what an agent session's tool calls changed: the session named, or
    /// (`Some(None)`) the one `rev` names.
    pub only_session: Option<Option<String>>,
    /// With `only_session`: put back the paths someone else changed too.
    pub force: bool,
}

/// Runs `restore`.
pub fn run(context: &Context, args: Args) -> anyhow::Result<()> {
    let request = RestoreRequest {
        rev: args.rev,
        paths: context.workspace.repo.worktree_paths(&args.paths)?,
        dry_run: args.dry_run,
        no_save: args.no_save,
        only_session: args
            .only_session
            .map(|session| (!session.is_empty()).then_some(session)),
        force: args.force,
    };
    context.tell(&answer(context, request)?)
}

/// Restores as `request` asks (a dry run changes nothing, the store file included: it
/// opens it read-only): `restore`'s answer, and the MCP server's.
pub fn answer(context: &Context, request: RestoreRequest) -> anyhow::Result<RestoreAnswer> {
    let options = RestoreOptions {
        dry_run: request.dry_run,
        no_save: request.no_save,
        paths: request.paths,
        settings: context.workspace.settings.clone(),
        progress: context.progress(),
        ..RestoreOptions::default()
    };
    let repo = &context.workspace.repo;
    if let Some(session) = request.only_session {
        let options = SessionRestoreOptions {
            session,
            force: request.force,
            restore: options,
        };
        let (report, shorts, result) = if request.dry_run {
            let store = context.open_read_store()?;
            let report = session_restore::dry_run(repo, &store, &request.rev, &options)?;
            let shorts = session_shorts(&store.snapshot()?, &report)?;
            (report, shorts, None)
        } else {
            let store = context.open_store()?;
            let report = session_restore::restore_session(repo, &store, &request.rev, &options)?;
            let snapshot = store.snapshot()?;
            let shorts = session_shorts(&snapshot, &report)?;
            let result = super::saved_as(&snapshot, report.checkpoint)?;
            (report, shorts, result)
        };
        return Ok(RestoreAnswer::Session {
            report,
            dry_run: request.dry_run,
            shorts,
            result,
        });
    }
    let (report, shorts) = if request.dry_run {
        let store = context.open_read_store()?;
        let report = dry_run(repo, &store, &request.rev, &options)?;
        let shorts = restore_shorts(&store.snapshot()?, &report)?;
        (report, shorts)
    } else {
        let store = context.open_store()?;
        let report = restore(repo, &store, &request.rev, &options)?;
        let shorts = restore_shorts(&store.snapshot()?, &report)?;
        (report, shorts)
    };
    Ok(RestoreAnswer::Whole {
        target: restored(&report)?,
        report,
        shorts,
    })
}

/// The short ids a restore's report names: the target, the safety checkpoint, the one
/// that held the worktree.
pub(super) fn restore_shorts(read: &Snapshot, report: &RestoreReport) -> anyhow::Result<Shorts> {
    let named = [report.target, report.safety_checkpoint, report.worktree];
    super::shorts(read, named.into_iter().flatten())
}

/// The short ids a session restore's report names: its restore's, its target, and each
/// checkpoint a conflict was seen at.
fn session_shorts(read: &Snapshot, report: &SessionRestoreReport) -> anyhow::Result<Shorts> {
    let seen_at = report.conflicts.iter().flat_map(|conflict| {
        conflict.by.iter().filter_map(|by| match by {
            ChangedBy::Worktree => None,
            ChangedBy::Checkpoint { id, .. } | ChangedBy::UnsureToolCall { id } => Some(*id),
        })
    });
    let mut shorts = super::shorts(read, seen_at.chain(report.target))?;
    if let Some(restore) = &report.restore {
        shorts.0.extend(restore_shorts(read, restore)?.0);
    }
    Ok(shorts)
}
