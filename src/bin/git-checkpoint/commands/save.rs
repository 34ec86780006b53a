//! `git checkpoint save`

use std::path::PathBuf;

use crate::ui::json::{self, CheckpointJson, UnchangedJson};
use git_checkpoint::format::size::human_bytes;
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

/// `error` with the way past it when it is a file of the worktree this user cannot read
/// (root's, from a container or `sudo`): `--skip-unreadable` leaves such files out.
fn with_skip_hint(context: &Context, error: git_checkpoint::Error) -> anyhow::Error {
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
        true => anyhow::anyhow!(
            "{error}; save with --skip-unreadable to leave such files out (recorded on the \
             checkpoint, and left alone by restore)"
        ),
        false => error.into(),
    }
}

/// Runs `save`.
pub fn run(context: &Context, args: Args) -> anyhow::Result<()> {
    let options = SaveOptions {
        message: args.message,
        meta: args.meta,
        allow_empty: args.allow_empty,
        skip_unreadable: args.skip_unreadable,
        settings: context.workspace.settings.clone(),
        progress: context.progress(),
        attach: args.attach,
        ..SaveOptions::default()
    };
    // Read-only until something is found changed: a save that changes nothing leaves
    // the store file as it was.
    let (report, store) = save_then_gc_if_changed(
        &context.workspace.repo,
        || context.open_read_store(),
        || context.open_store(),
        &options,
    )
    .map_err(|error| with_skip_hint(context, error))?;
    for warning in &report.warnings {
        context.warn(warning);
    }
    let read = store.snapshot()?;
    context.warn_interrupted_restore(&read)?;
    match report.outcome {
        SaveOutcome::Saved { id, checkpoint } => {
            let short = read.short_id(id)?;
            if context.json {
                json::print(&CheckpointJson::new(id, short, &checkpoint))?;
            } else {
                let branch = checkpoint
                    .branch
                    .as_deref()
                    .map(|b| format!(" on {b}"))
                    .unwrap_or_default();
                let files = match checkpoint.files {
                    1 => "1 file".to_string(),
                    n => format!("{n} files"),
                };
                context.say(&format!(
                    "Saved checkpoint {short}{branch} ({files}, {})",
                    human_bytes(checkpoint.bytes)
                ));
            }
        }
        SaveOutcome::Unchanged { current } => {
            if context.json {
                json::print(&UnchangedJson::new(current))?;
            } else {
                let short = read.short_id(current)?;
                context.say(&format!("Nothing changed since checkpoint {short}"));
            }
        }
    }
    if let Some(auto_gc) = &report.gc {
        super::gc::report_after_save(context, auto_gc);
    }
    Ok(())
}
