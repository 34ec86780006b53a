//! `git checkpoint redo`

use git_checkpoint::ops::op_log::{self, UndoOptions};

use super::{op, Context};
use crate::ui::answer::operations::UndoAnswer;

/// Go forward again over the newest undo: the state before it comes back.
///
/// `redo` undoes the newest undo, as long as no other operation came since (new work
/// ends what redo can go back to). Run it again to go forward over the undo before.
/// The worktree comes back as it was when you undid, unsaved edits included (the undo
/// saved them first), with the branches, HEAD, pins and drops as they were.
///
/// Examples:
///
///   git checkpoint undo && git checkpoint redo
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `redo`.
pub fn run(context: &Context, _args: Args) -> anyhow::Result<()> {
    context.tell(&answer(context)?)
}

/// Redoes the newest undo: `redo`'s answer, and the MCP server's.
pub fn answer(context: &Context) -> anyhow::Result<UndoAnswer> {
    let store = context.open_store()?;
    let options = UndoOptions {
        settings: context.workspace.settings.clone(),
        progress: context.progress(),
    };
    let report = op_log::redo(&context.workspace.repo, &store, &options)?;
    op::undo_answer(&store, report)
}
