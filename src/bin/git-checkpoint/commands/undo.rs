//! `git checkpoint undo`

use git_checkpoint::ops::op_log::{self, UndoOptions};

use super::{op, Context};
use crate::ui::answer::operations::UndoAnswer;

/// Undo the newest operation: put back the state before it.
///
/// Every command that changes the worktree, a branch or the store is an operation
/// (`git checkpoint op log` lists them): restore, revert, fork, switch, drop, pin,
/// unpin, branch -d and -m, fetch, pull, gc, and undo, redo and op restore themselves.
/// `undo` puts back what the newest one changed: the worktree as it was (unsaved edits
/// included, from the checkpoint it saved them in), the branches, HEAD and pins as they
/// were, the checkpoints a drop took out. Run it again to undo the one before;
/// `git checkpoint redo` goes forward again.
///
/// Saves are not operations: the checkpoints made since the operation stay in the
/// store, and `redo` brings the branches back to them. A gc cannot be undone (what it
/// removed is gone); undo passes over it. Unsaved changes are saved first, so an undo
/// loses nothing. Refused, with nothing changed: an operation whose checkpoints a gc
/// removed since, or a restore that finds something in the way.
///
/// Examples:
///
///   git checkpoint undo
///
///   git checkpoint undo 12
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The operation to undo, by its number in `op log`: the newest one in effect, or
    /// the newest undo (undoing an undo is a redo). Default: the newest in effect.
    #[arg(value_name = "op")]
    op: Option<String>,
}

/// Runs `undo`.
pub fn run(context: &Context, args: Args) -> anyhow::Result<()> {
    let number = args.op.as_deref().map(op::number).transpose()?;
    context.tell(&answer(context, number)?)
}

/// Undoes operation `number` (by default the newest in effect): `undo`'s answer, and
/// the MCP server's.
pub fn answer(context: &Context, number: Option<u64>) -> anyhow::Result<UndoAnswer> {
    let store = context.open_store()?;
    let options = UndoOptions {
        settings: context.workspace.settings.clone(),
        progress: context.progress(),
    };
    let repo = &context.workspace.repo;
    let report = match number {
        None => op_log::undo(repo, &store, &options)?,
        Some(number) => op_log::undo_op(repo, &store, number, &options)?,
    };
    op::undo_answer(&store, report)
}
