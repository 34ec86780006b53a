//! `git checkpoint restore`

use std::path::PathBuf;

use git_checkpoint::ops::restore::{dry_run, restore, RestoreOptions, RestoreReport};
use git_checkpoint::ops::save::show;
use git_checkpoint::ops::session_restore::{
    self, ChangedBy, SessionRestoreOptions, SessionRestoreReport,
};

use git_checkpoint::storage::StoreRead;

use super::{print_json, Context};

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
/// are put back; the user's changes and other sessions' stay. A path the session
/// changed that someone else changed too since is a conflict: listed and left alone
/// (exit 1) unless --force. See docs/sessions.md.
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
    let paths = context.repo.worktree_paths(&args.paths)?;
    let options = RestoreOptions {
        dry_run: args.dry_run,
        no_save: args.no_save,
        paths,
        compression_level: context.compression_level()?,
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
        let report = dry_run(&context.repo, &store, &args.rev, &options)?;
        return say(context, &store, &report);
    }
    let store = context.open_store()?;
    let report = restore(&context.repo, &store, &args.rev, &options)?;
    say(context, &store, &report)
}

/// Reports what the restore did, or would do.
fn say(context: &Context, store: &impl StoreRead, report: &RestoreReport) -> anyhow::Result<()> {
    for warning in &report.warnings {
        context.warn(warning);
    }
    let read = store.snapshot()?;
    let short = |id| read.short_id(id);
    let target = report.target.expect("a restore has a target");
    if context.json {
        let paths = |list: &[Vec<u8>]| list.iter().map(|p| show(p)).collect::<Vec<_>>();
        return print_json(&serde_json::json!({
            "target": target.hex(),
            "safety_checkpoint": report.safety_checkpoint.map(|id| id.hex()),
            "would_save": report.would_save,
            "written": paths(&report.written),
            "deleted": paths(&report.deleted),
            "dry_run": report.dry_run,
            "untouched": paths(&report.untouched),
        }));
    }
    if let Some(safety) = report.safety_checkpoint {
        let safety = short(safety)?;
        context.say(&format!(
            "Saved unsaved changes as checkpoint {safety} (undo with: git checkpoint restore {safety})"
        ));
    }
    if report.dry_run {
        if report.would_save {
            context.say("Would first save unsaved changes as a checkpoint");
        }
        for path in &report.written {
            context.say(&format!("write {}", show(path)));
        }
        for path in &report.deleted {
            context.say(&format!("delete {}", show(path)));
        }
        say_untouched(context, report);
        return Ok(());
    }
    context.say(&format!(
        "Restored checkpoint {}: {} written, {} deleted",
        short(target)?,
        report.written.len(),
        report.deleted.len()
    ));
    say_untouched(context, report);
    Ok(())
}

/// Names the files restore left alone, and why.
fn say_untouched(context: &Context, report: &RestoreReport) {
    for path in &report.untouched {
        let why = if report.exempt.contains(path) {
            "it belongs to the repository's git dir, a linked worktree or the agent's settings, which a restore never changes"
        } else {
            "no checkpoint holds it (larger than checkpoint.maxFileSize, or unreadable when saved)"
        };
        context.say(&format!("Left {} untouched: {why}", show(path)));
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
        report = session_restore::dry_run(&context.repo, &store, rev, options)?;
        say_session(context, &store, &report, dry_run)?;
    } else {
        let store = context.open_store()?;
        report = session_restore::restore_session(&context.repo, &store, rev, options)?;
        say_session(context, &store, &report, dry_run)?;
    }
    match report.left_alone() {
        0 => Ok(()),
        n => anyhow::bail!(
            "left {n} path{} alone that someone else changed too (see above; --force puts {} back)",
            if n == 1 { "" } else { "s" },
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
            ChangedBy::Checkpoint {
                id,
                session: Some(s),
                tool_call: true,
            } => format!(
                "a tool call of session {} (checkpoint {})",
                short_session(s),
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
        let paths = |list: &[Vec<u8>]| list.iter().map(|p| show(p)).collect::<Vec<_>>();
        let conflicts = report
            .conflicts
            .iter()
            .map(|c| {
                Ok(serde_json::json!({
                    "path": show(&c.path),
                    "changed_by": c.by.iter().map(|b| match b {
                        ChangedBy::Worktree => serde_json::json!({"worktree": true}),
                        ChangedBy::Checkpoint { id, session, tool_call } => serde_json::json!({
                            "checkpoint": id.hex(),
                            "session": session,
                            "tool_call": tool_call,
                        }),
                    }).collect::<Vec<_>>(),
                    "restored": report.forced,
                }))
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        return print_json(&serde_json::json!({
            "target": report.target.map(|id| id.hex()),
            "session": report.session,
            "changed_by_session": paths(&report.changed_by_session),
            "conflicts": conflicts,
            "safety_checkpoint": restored.safety_checkpoint.map(|id| id.hex()),
            "would_save": restored.would_save,
            "written": paths(&restored.written),
            "deleted": paths(&restored.deleted),
            "dry_run": dry_run,
            "untouched": paths(&restored.untouched),
        }));
    }
    for conflict in &report.conflicts {
        let others = conflict
            .by
            .iter()
            .map(&by)
            .collect::<anyhow::Result<Vec<_>>>()?;
        let what = if report.forced { "Overwrote" } else { "Left" };
        context.say(&format!(
            "{what} {}: changed by this session and by {}",
            show(&conflict.path),
            others.join(", ")
        ));
    }
    match &report.restore {
        Some(restored) => say(context, store, restored),
        None => {
            context.say(&format!(
                "Nothing to restore: session {} changed {} path{} since {}",
                short_session(&report.session),
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

/// A session id's first 8 characters, as `sessions` prints them.
fn short_session(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}
