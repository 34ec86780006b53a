//! `git checkpoint status`

use std::io::{IsTerminal, Write};

use crate::ui::json::{StatusChangeJson, StatusJson};
use crate::ui::output::{colour_wanted, paint, show_path, style};
use git_checkpoint::diff::{checkpoint_root, diff_trees, PathFilter};
use git_checkpoint::format::path::quote_path;
use git_checkpoint::ops::save::look;

use git_checkpoint::storage::StoreRead;

use git_checkpoint::model::Head;

use super::{Context, Output};

/// Show what changed in the worktree since the current checkpoint.
///
/// One line per path, like `git status --short`: M modified (content or executable
/// bit), A added, D deleted, T a file that became a symlink or back. Nothing is printed
/// when the worktree equals the checkpoint. Before the first checkpoint it prints how
/// many paths the first save would take (`--json` lists them). Nothing is written to the store; files whose
/// metadata did not change since the last save are not read.
///
/// Examples:
///
///   git checkpoint status
///
///   git checkpoint status --json | jq -r '.changes[].path'
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `status`.
pub fn run(context: &Context, _args: Args) -> anyhow::Result<()> {
    let output = render(context)?;
    context.emit(output)
}

/// Everything `status` prints, made while the store is open.
fn render(context: &Context) -> anyhow::Result<Output> {
    let store = context.open_read_store()?;
    let snapshot = look(&context.workspace.repo, &context.workspace.settings, &store)?;
    for warning in &snapshot.warnings {
        context.warn(warning);
    }
    let read = store.snapshot()?;
    let current = read.current()?;
    let interrupted = context.warn_interrupted_restore(&read)?;
    // The checkpoint's side is bounded by its record; status reads no content.
    let reader = read.trees(Some(&snapshot.trees))?;
    let current_tree = current
        .map(|id| checkpoint_root(&read, &reader, id))
        .transpose()?;
    let changes = diff_trees(
        &reader,
        current_tree,
        Some(snapshot.root),
        &PathFilter::default(),
    )?;
    if context.json {
        return Output::json(&StatusJson {
            checkpoint: current.map(|id| id.hex()),
            branch: match read.head()? {
                Head::Branch(name) => Some(name),
                Head::Detached(_) => None,
            },
            clean: changes.is_empty(),
            interrupted_restore: interrupted,
            changes: changes
                .iter()
                .map(|c| StatusChangeJson {
                    status: c.status().to_string(),
                    path: show_path(&c.path),
                })
                .collect(),
        });
    }
    if context.quiet {
        return Ok(Output::Nothing);
    }
    if current.is_none() {
        // Every path would be "A": a line for each of thousands of files says less than
        // their count and what to run.
        context.explain_empty(&read)?;
        let count = changes.len();
        return Ok(Output::Lines(vec![format!(
            "{count} {} to save",
            if count == 1 { "path" } else { "paths" }
        )]));
    }
    let colour = colour_wanted(std::io::stdout().is_terminal());
    let mut out = Vec::new();
    for change in &changes {
        let letter = change.status().to_string();
        let code = if letter == "A" {
            style::NEW
        } else {
            style::OLD
        };
        writeln!(
            out,
            "{} {}",
            paint(&letter, code, colour),
            quote_path(&change.path)
        )?;
    }
    Ok(Output::Plain(out))
}
