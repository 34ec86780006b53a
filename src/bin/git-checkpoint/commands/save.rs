//! `git checkpoint save`

use std::path::PathBuf;

use crate::ui::answer::save::{SaveAnswer, Saved};
use crate::ui::answer::Front;
use git_checkpoint::ops::save::{save_then_gc_if_changed, SaveOptions, SaveOutcome};
use git_checkpoint::storage::StoreRead;

use super::Context;

/// Save the worktree as a new checkpoint.
///
/// Captures every file `git add -A` would see (untracked and dot files included, plus
/// files git tracks despite an ignore rule), never anything inside `.git`. The new
/// checkpoint is a child of the current one, and the current branch moves to it. When
/// nothing changed, nothing is made and the exit status is still 0 (a save with
/// --attach always makes a checkpoint, so the attachment is kept).
///
/// Examples:
///
///   git checkpoint save -m "before the agent refactors parser.rs"
///
///   git checkpoint save -q --meta agent=claude --meta session=4f2a
///
///   git checkpoint save -m "step 4" --attach transcript.jsonl
///
///   id=$(git checkpoint save --json | jq -r .id)
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The checkpoint message.
    #[arg(short, long, default_value = "")]
    message: String,
    /// Metadata to record, as key=value (repeatable).
    #[arg(long = "meta", value_name = "key=value", value_parser = parse_meta)]
    meta: Vec<(String, String)>,
    /// Store this file with the checkpoint, outside its tree, under its file name
    /// (repeatable); `git checkpoint attachment <rev> <name>` prints it back.
    #[arg(long = "attach", value_name = "file")]
    attach: Vec<PathBuf>,
    /// Make a checkpoint even if nothing changed.
    #[arg(long)]
    allow_empty: bool,
    /// Leave out files that cannot be read (recorded on the checkpoint, and left alone
    /// by restore) instead of failing.
    #[arg(long)]
    skip_unreadable: bool,
}

/// Parses a `key=value` argument.
pub(super) fn parse_meta(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_string(), value.to_string())),
        _ => Err(format!("'{text}' is not key=value")),
    }
}

/// What a save is asked for, from the command line or the MCP server's `save`.
#[derive(Debug, Default)]
pub struct SaveRequest {
    /// The checkpoint message.
    pub message: String,
    /// Metadata to record.
    pub meta: Vec<(String, String)>,
    /// Files to attach.
    pub attach: Vec<PathBuf>,
    /// Make a checkpoint even if nothing changed.
    pub allow_empty: bool,
    /// Leave out files that cannot be read instead of failing.
    pub skip_unreadable: bool,
}

/// `error` with the way past it when it is a file of the worktree this user cannot read
/// (root's, from a container or `sudo`): leaving such files out, which `front` asks for
/// as `--skip-unreadable` or `skip_unreadable=true`.
fn with_skip_hint(context: &Context, error: git_checkpoint::Error, front: Front) -> anyhow::Error {
    let repo = &context.workspace.repo;
    let unreadable_file = match &error {
        git_checkpoint::Error::Io { path, error } => {
            error.kind() == std::io::ErrorKind::PermissionDenied
                && path.starts_with(&repo.root)
                && !path.starts_with(&repo.git_dir)
                && std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file())
        }
        _ => false,
    };
    match unreadable_file {
        true => super::hinted(
            error.into(),
            format!(
                "save with {} to leave such files out (recorded on the checkpoint, and left alone by restore)",
                front.option("skip_unreadable")
            ),
        ),
        false => error.into(),
    }
}

/// Runs `save`.
pub fn run(context: &Context, args: Args) -> anyhow::Result<()> {
    let request = SaveRequest {
        message: args.message,
        meta: args.meta,
        attach: args.attach,
        allow_empty: args.allow_empty,
        skip_unreadable: args.skip_unreadable,
    };
    context.tell(&answer(context, request, context.front())?)
}

/// Saves the worktree as `request` asks, then runs the automatic gc: `save`'s answer,
/// and the MCP server's; a failure says how `front` gets past it.
pub fn answer(context: &Context, request: SaveRequest, front: Front) -> anyhow::Result<SaveAnswer> {
    let options = SaveOptions {
        meta: request.meta,
        allow_empty: request.allow_empty,
        skip_unreadable: request.skip_unreadable,
        progress: context.progress(),
        attach: request.attach,
        ..context.workspace.save_options(request.message)
    };
    // Read-only until something is found changed: a save that changes nothing leaves
    // the store file as it was.
    let (report, store) = save_then_gc_if_changed(
        &context.workspace.repo,
        || context.open_read_store(),
        || context.open_store(),
        &options,
    )
    .map_err(|error| with_skip_hint(context, error, front))?;
    let read = store.snapshot()?;
    let mut warnings: Vec<String> = report.warnings.iter().map(ToString::to_string).collect();
    warnings.extend(
        context
            .interrupted_restore(&read)?
            .map(|(_, warning)| warning),
    );
    let saved = match report.outcome {
        SaveOutcome::Saved { id, checkpoint } => Saved::Made {
            id,
            short: read.short_id(id)?,
            checkpoint,
        },
        SaveOutcome::Unchanged { current } => Saved::Unchanged {
            current,
            short: read.short_id(current)?,
        },
    };
    Ok(SaveAnswer {
        saved,
        warnings,
        gc: report.gc,
    })
}
