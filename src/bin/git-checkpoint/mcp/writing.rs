//! The tools that change the worktree or the store: `save`, `restore` (whole, some
//! paths, or only a session's files), `revert` and `pin`; `--read-only` offers none of
//! them. Their dry runs change nothing and create no store.

use std::collections::BTreeMap;

use git_checkpoint::format::size::human_bytes;
use git_checkpoint::model::session::abbreviate;
use git_checkpoint::ops::gc;
use git_checkpoint::ops::restore::{self, RestoreOptions};
use git_checkpoint::ops::revert::{self, ConflictStyle, RevertOptions, Status, Undo};
use git_checkpoint::ops::save::{save_then_gc_if_changed, SaveOptions, SaveOutcome};
use git_checkpoint::ops::session_restore::{self, SessionRestoreOptions};
use git_checkpoint::storage::StoreRead;
use git_checkpoint::CheckpointId;
use schemars::JsonSchema;
use serde::Deserialize;

use super::body::{require_store, said, worktree_paths, Answer, REPO};
use crate::commands::{self, Context};
use crate::ui::json::{
    CheckpointJson, PinJson, RestoreJson, RevertJson, SessionRestoreJson, UnchangedJson,
};
use crate::ui::output::show_path;

/// `save`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Save {
    // Read by `call` from the raw arguments, before these are parsed; here for the schema.
    #[allow(dead_code)]
    #[schemars(description = REPO)]
    repo: Option<String>,
    /// The checkpoint's message: what state the worktree is in and why it is worth keeping.
    message: String,
    /// Metadata to record, as string keys and values.
    meta: Option<BTreeMap<String, String>>,
}

/// `restore`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Restore {
    // Read by `call` from the raw arguments, before these are parsed; here for the schema.
    #[allow(dead_code)]
    #[schemars(description = REPO)]
    repo: Option<String>,
    /// The checkpoint to restore: an id or unique prefix, a branch, @~N (N steps before the current one), <session>:prompt<N>.
    rev: String,
    /// Restore only these files or directories (relative to the worktree's top); the current branch then stays where it is.
    paths: Option<Vec<String>>,
    /// Put back only the files an agent session's own tool calls changed since rev, leaving the user's and other sessions' changes; the session is the one rev names (as in <session>:prompt2) unless session is given. Not with paths.
    only_session: Option<bool>,
    /// With only_session: the session (an id or unique prefix, as list_sessions shows it).
    session: Option<String>,
    /// With only_session: also put back files someone else changed too since rev (otherwise they are left alone and listed).
    force: Option<bool>,
    /// Only say what would be written and deleted; change nothing.
    dry_run: Option<bool>,
}

/// `revert`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Revert {
    // Read by `call` from the raw arguments, before these are parsed; here for the schema.
    #[allow(dead_code)]
    #[schemars(description = REPO)]
    repo: Option<String>,
    /// The change to undo: a checkpoint (what it changed against its parent, e.g. a tool call's checkpoint <session>:<tool-call-id> or an id), a prompt's turn <session>:turn<N> (turn-1 for the last one), or a range A..B (everything from A to B).
    rev: String,
    /// Only say what would change, as a diff; change nothing.
    dry_run: Option<bool>,
    /// Change nothing if any file would conflict.
    no_conflicts: Option<bool>,
}

/// `pin`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Pin {
    // Read by `call` from the raw arguments, before these are parsed; here for the schema.
    #[allow(dead_code)]
    #[schemars(description = REPO)]
    repo: Option<String>,
    /// The checkpoint to pin.
    rev: String,
}

/// The body of `save`, as `save` saves.
pub(super) fn save(context: &Context, args: Save) -> anyhow::Result<Answer> {
    let options = SaveOptions {
        message: args.message,
        meta: args.meta.unwrap_or_default().into_iter().collect(),
        settings: context.workspace.settings.clone(),
        ..SaveOptions::default()
    };
    let (report, store) = save_then_gc_if_changed(
        &context.workspace.repo,
        || context.open_read_store(),
        || context.open_store(),
        &options,
    )?;
    let read = store.snapshot()?;
    let (text, structured) = match report.outcome {
        SaveOutcome::Saved { id, checkpoint } => {
            let short = read.short_id(id)?;
            let text = format!(
                "Saved checkpoint {short} ({} files, {})",
                checkpoint.files,
                human_bytes(checkpoint.bytes)
            );
            (
                text,
                serde_json::to_value(CheckpointJson::new(id, short, &checkpoint))?,
            )
        }
        SaveOutcome::Unchanged { current } => (
            format!(
                "Nothing changed since checkpoint {}: nothing saved",
                read.short_id(current)?
            ),
            serde_json::to_value(UnchangedJson::new(current))?,
        ),
    };
    let mut lines = vec![text];
    lines.extend(report.warnings.iter().map(|w| format!("warning: {w}")));
    Ok(Answer {
        text: said(&lines),
        structured,
        failed: false,
    })
}

/// The body of `restore`, as `restore` restores: unsaved changes saved first.
pub(super) fn restore(context: &Context, args: Restore) -> anyhow::Result<Answer> {
    let dry_run = args.dry_run.unwrap_or(false);
    let options = RestoreOptions {
        dry_run,
        paths: worktree_paths(context, args.paths.as_deref().unwrap_or_default())?,
        settings: context.workspace.settings.clone(),
        ..RestoreOptions::default()
    };
    if args.only_session.unwrap_or(false) {
        if !options.paths.is_empty() {
            anyhow::bail!("only_session and paths cannot be used together");
        }
        let options = SessionRestoreOptions {
            session: args.session,
            force: args.force.unwrap_or(false),
            restore: options,
        };
        return restore_only_session(context, &args.rev, &options);
    }
    if args.session.is_some() || args.force.is_some() {
        anyhow::bail!("session and force go with only_session=true");
    }
    // The short ids are read while the store is open: a snapshot lives no longer.
    let shorts = |read: &git_checkpoint::storage::Snapshot<'_>,
                  report: &restore::RestoreReport,
                  before: Option<CheckpointId>|
     -> anyhow::Result<[Option<String>; 3]> {
        let short = |id: Option<CheckpointId>| id.map(|id| read.short_id(id)).transpose();
        Ok([
            short(report.target)?,
            short(report.safety_checkpoint)?,
            short(before)?,
        ])
    };
    let (report, [short, safety, before]) = if dry_run {
        require_store(context)?;
        let store = context.open_read_store()?;
        let report = restore::dry_run(&context.workspace.repo, &store, &args.rev, &options)?;
        let read = store.snapshot()?;
        let found = shorts(&read, &report, None)?;
        (report, found)
    } else {
        let store = context.open_store()?;
        let before = store.snapshot()?.current()?;
        let report = restore::restore(&context.workspace.repo, &store, &args.rev, &options)?;
        let read = store.snapshot()?;
        let found = shorts(&read, &report, before)?;
        (report, found)
    };
    let target = commands::restore::restored(&report)?;
    let short = short.unwrap_or_default();
    let mut lines = Vec::new();
    if report.dry_run {
        lines.push(format!(
            "Dry run: restoring checkpoint {short} would write {} and delete {} file(s){}; nothing was changed.",
            report.written.len(),
            report.deleted.len(),
            match report.would_save {
                true => ", after saving unsaved changes as a safety checkpoint",
                false => "",
            }
        ));
        lines.extend(
            report
                .written
                .iter()
                .map(|p| format!("write {}", show_path(p))),
        );
        lines.extend(
            report
                .deleted
                .iter()
                .map(|p| format!("delete {}", show_path(p))),
        );
    } else {
        if let Some(safety) = safety {
            lines.push(format!(
                "Saved unsaved changes as checkpoint {safety} (undo this restore with restore rev={safety})"
            ));
        } else if let Some(before) = before {
            lines.push(format!(
                "The worktree had no unsaved changes; it was checkpoint {before} (undo this restore with restore rev={before})"
            ));
        }
        lines.push(format!(
            "Restored checkpoint {short}: {} written, {} deleted",
            report.written.len(),
            report.deleted.len()
        ));
    }
    lines.extend(
        report
            .untouched
            .iter()
            .map(|p| format!("Left {} untouched", show_path(p))),
    );
    lines.extend(report.warnings.iter().map(|w| format!("warning: {w}")));
    Ok(Answer {
        failed: false,
        text: said(&lines),
        structured: serde_json::to_value(RestoreJson::new(target, &report))?,
    })
}

/// `restore` with `only_session`: the session's own files put back, conflicts listed.
fn restore_only_session(
    context: &Context,
    rev: &str,
    options: &SessionRestoreOptions,
) -> anyhow::Result<Answer> {
    let dry_run = options.restore.dry_run;
    let repo = &context.workspace.repo;
    let (report, short, safety) = if dry_run {
        require_store(context)?;
        let store = context.open_read_store()?;
        let report = session_restore::dry_run(repo, &store, rev, options)?;
        let short = shorten(&store.snapshot()?, report.target)?;
        (report, short, None)
    } else {
        let store = context.open_store()?;
        let report = session_restore::restore_session(repo, &store, rev, options)?;
        let read = store.snapshot()?;
        let safety = report.restore.as_ref().and_then(|r| r.safety_checkpoint);
        let short = shorten(&read, report.target)?;
        (report, short, shorten(&read, safety)?)
    };
    let empty = restore::RestoreReport::default();
    let restored = report.restore.as_ref().unwrap_or(&empty);
    let mut lines = Vec::new();
    if let Some(safety) = &safety {
        lines.push(format!(
            "Saved unsaved changes as checkpoint {safety} (undo this restore with restore rev={safety})"
        ));
    }
    let verb = if dry_run {
        "Would put back"
    } else {
        "Put back"
    };
    lines.push(format!(
        "{verb} the files session {} changed since {}: {} written, {} deleted{}",
        abbreviate(&report.session),
        short.unwrap_or_default(),
        restored.written.len(),
        restored.deleted.len(),
        if dry_run { "; nothing was changed" } else { "" }
    ));
    lines.extend(
        restored
            .written
            .iter()
            .map(|p| format!("write {}", show_path(p))),
    );
    lines.extend(
        restored
            .deleted
            .iter()
            .map(|p| format!("delete {}", show_path(p))),
    );
    let what = if report.forced { "Overwrote" } else { "Left" };
    lines.extend(report.conflicts.iter().map(|c| {
        format!(
            "{what} {}: changed by this session and by someone else since",
            show_path(&c.path)
        )
    }));
    let left = report.left_alone();
    if left > 0 {
        lines.push(format!(
            "error: left {left} path(s) alone that someone else changed too; call again with force=true to put them back"
        ));
    }
    Ok(Answer {
        text: said(&lines),
        structured: serde_json::to_value(SessionRestoreJson::new(&report, restored, dry_run))?,
        failed: left > 0 && !dry_run,
    })
}

/// The short ids of `id`, if any.
fn shorten(
    read: &git_checkpoint::storage::Snapshot<'_>,
    id: Option<CheckpointId>,
) -> anyhow::Result<Option<String>> {
    Ok(id.map(|id| read.short_id(id)).transpose()?)
}

/// The body of `revert`, as `revert` reverts: the worktree saved first, each path
/// merged three ways.
pub(super) fn revert(context: &Context, args: Revert) -> anyhow::Result<Answer> {
    let repo = &context.workspace.repo;
    let (conflict_style, style_warning) = ConflictStyle::of_repo(repo)?;
    let dry_run = args.dry_run.unwrap_or(false);
    let options = RevertOptions {
        dry_run,
        no_conflicts: args.no_conflicts.unwrap_or(false),
        conflict_style,
        settings: context.workspace.settings.clone(),
        progress: None,
    };
    let (report, worktree) = if dry_run {
        require_store(context)?;
        let store = context.open_read_store()?;
        let undo = Undo::resolve(&store.snapshot()?, &args.rev)?;
        (revert::dry_run(repo, &store, &undo, &options)?, None)
    } else {
        let store = context.open_store()?;
        let undo = Undo::resolve(&store.snapshot()?, &args.rev)?;
        let report = revert::revert(repo, &store, &undo, &options)?;
        let worktree = shorten(&store.snapshot()?, report.worktree)?;
        (report, worktree)
    };
    let mut lines: Vec<String> = style_warning
        .into_iter()
        .map(|w| format!("warning: {w}"))
        .chain(report.warnings.iter().map(|w| format!("warning: {w}")))
        .collect();
    if let Some(short) = &worktree {
        lines.push(format!(
            "The worktree was saved first as checkpoint {short} (undo this revert with restore rev={short})"
        ));
    }
    if report.paths.is_empty() {
        lines.push(format!("Nothing to revert: {} changed no file", args.rev));
    } else {
        lines.push(format!(
            "{} {}: {} applied, {} conflicting, {} unchanged{}",
            if dry_run { "Would revert" } else { "Reverted" },
            args.rev,
            report.with(Status::Applied).count(),
            report.with(Status::Conflict).count(),
            report.with(Status::Unchanged).count(),
            if dry_run { "; nothing was changed" } else { "" }
        ));
        for entry in &report.paths {
            let why = entry
                .why
                .as_deref()
                .map(|why| format!(" ({why})"))
                .unwrap_or_default();
            lines.push(format!(
                "  {:<9} {}{why}",
                entry.status.name(),
                show_path(&entry.path)
            ));
        }
    }
    let conflicts = report.conflicts();
    let failed = !conflicts.is_empty() && !dry_run;
    if failed {
        let error =
            anyhow::Error::from(git_checkpoint::Error::RevertConflicts { paths: conflicts });
        lines.push(commands::error_line(&error).0);
    }
    Ok(Answer {
        text: said(&lines),
        structured: serde_json::to_value(RevertJson::new(&args.rev, &report, conflict_style))?,
        failed,
    })
}

/// The body of `pin`.
pub(super) fn pin(context: &Context, args: Pin) -> anyhow::Result<Answer> {
    let store = context.open_store()?;
    let (id, changed) = gc::pin(&store, &args.rev)?;
    let short = store.snapshot()?.short_id(id)?;
    let text = match changed {
        true => format!("Pinned checkpoint {short}: gc will keep it"),
        false => format!("Checkpoint {short} was already pinned"),
    };
    Ok(Answer {
        text: said(&[text]),
        failed: false,
        structured: serde_json::to_value(PinJson {
            id: id.hex(),
            pinned: true,
            changed,
        })?,
    })
}
