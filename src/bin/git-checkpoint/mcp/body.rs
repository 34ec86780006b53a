//! What the tool bodies (`reading`, `writing`) share: the description of their `repo`
//! argument, the store checks a read makes, worktree paths from arguments, and the
//! answer each gives ([`Answer`], its text escaped by [`said`]).

use std::path::PathBuf;

use serde_json::Value;

use git_checkpoint::format::text::escape_controls;

use crate::commands::Context;

/// The description every tool gives its `repo` argument.
pub(super) const REPO: &str = "A path inside the git worktree to work on: the worktree the server serves (its -C, else the client's first root, else where it was started) or one of the client's roots, nothing else; relative paths start from the server's directory. Leave it out to use that directory.";

/// What a tool answers: text for the model to read and the same as JSON.
pub(super) struct Answer {
    /// The text, escaped as the CLI escapes what it prints ([`said`]).
    pub(super) text: String,
    /// The same as the commands' `--json` shapes, with the exact text.
    pub(super) structured: Value,
    /// Whether the call did its work but failed all the same, as the CLI exits 1 (a
    /// revert that conflicts): a tool error with the full answer.
    pub(super) failed: bool,
}

/// Lines of an answer as one text, each escaped as the CLI's `say` escapes a line
/// ([`escape_controls`]): a name or message from a file, a person or an agent cannot
/// break a line, forge one, or carry a control or bidi character to the reader.
pub(super) fn said(lines: &[String]) -> String {
    lines
        .iter()
        .map(|line| escape_controls(line))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether the worktree has a store: a read must never create one, so a read of a
/// worktree without one answers from nothing instead of opening it.
pub(super) fn has_store(context: &Context) -> bool {
    context.workspace.repo.store_path().exists()
}

/// Fails, as reading a worktree without a store does, unless it has one ([`has_store`]).
pub(super) fn require_store(context: &Context) -> anyhow::Result<()> {
    match has_store(context) {
        true => Ok(()),
        false => {
            anyhow::bail!("no checkpoints yet: the save tool, or the agent's hooks, make the first")
        }
    }
}

/// Worktree paths from arguments, relative to the worktree's top.
pub(super) fn worktree_paths(context: &Context, paths: &[String]) -> anyhow::Result<Vec<Vec<u8>>> {
    let paths: Vec<PathBuf> = paths.iter().map(PathBuf::from).collect();
    Ok(context.workspace.repo.worktree_paths(&paths)?)
}
