//! `git checkpoint op`: the operation log (`op log`) and going back to any point of it
//! (`op restore`); also the answer `undo` and `redo` share.

use git_checkpoint::clock;
use git_checkpoint::ops::op_log::{self, History, UndoOptions, UndoReport};
use git_checkpoint::storage::{Store, StoreRead};

use super::{Context, Output};
use crate::ui::answer::operations::{self, OperationPage, UndoAnswer, NO_OPERATIONS};
use crate::ui::json::OperationJson;

/// The operation log: every command that changed the worktree, a branch or the store.
///
/// `op log` lists the operations, newest first: each with its number, when, what it
/// did, and the command as typed (or the MCP tool call, or the agent's hook), and
/// whether it was undone. `op restore <op>` returns to the state right after any of
/// them. `undo` and `redo` step back and forth one operation at a time.
///
/// Examples:
///
///   git checkpoint op log
///
///   git checkpoint op restore 7
#[derive(Debug, clap::Args)]
pub struct Args {
    /// What to do with the log.
    #[command(subcommand)]
    action: Action,
}

/// The `op` subcommands.
#[derive(Debug, clap::Subcommand)]
enum Action {
    Log(LogArgs),
    Restore(RestoreArgs),
}

/// List the operations, newest first.
///
/// Each shows its number (what `undo <op>` and `op restore <op>` take), when it was
/// made, what it did, and on the next line what made it: the command as typed, the
/// MCP tool call, or the agent's hook. An operation that was undone says by which; one
/// that cannot be undone says why (a gc; a checkpoint a gc removed since).
///
/// Examples:
///
///   git checkpoint op log -n 5
///
///   git checkpoint --json op log
#[derive(Debug, clap::Args)]
struct LogArgs {
    /// Show at most this many.
    #[arg(short = 'n', long = "max-count", value_name = "n")]
    max_count: Option<usize>,
}

/// Return to the state right after an operation.
///
/// The branches, HEAD, pins and fetched branches become what they were right after
/// operation <op>, checkpoints dropped since that the state names come back, and the
/// worktree is restored to the checkpoint that held it then (unsaved changes are saved
/// first, and `undo` comes back from here). Refused, with nothing changed: an operation
/// that changed some paths only (a restore of paths, a revert), which left a worktree
/// no checkpoint holds, and one whose checkpoints a gc removed since.
///
/// Examples:
///
///   git checkpoint op restore 7
#[derive(Debug, clap::Args)]
struct RestoreArgs {
    /// The operation, by its number in `op log`.
    #[arg(value_name = "op")]
    op: String,
}

/// Runs `op`.
pub fn run(context: &Context, args: Args) -> anyhow::Result<()> {
    match args.action {
        Action::Log(args) => {
            let output = list(context, &args)?;
            context.emit(output)
        }
        Action::Restore(args) => {
            let store = context.open_store()?;
            let options = UndoOptions {
                settings: context.workspace.settings.clone(),
                progress: context.progress(),
            };
            let number = number(&args.op)?;
            let report = op_log::restore_op(&context.workspace.repo, &store, number, &options)?;
            context.tell(&undo_answer(&store, report)?)
        }
    }
}

/// An operation's number as given on the command line.
pub(super) fn number(text: &str) -> anyhow::Result<u64> {
    let digits = text.strip_prefix("op").unwrap_or(text);
    Ok(digits
        .parse()
        .map_err(|_| git_checkpoint::Error::UnknownOperation(text.to_string()))?)
}

/// `op log`, made while the store is open.
fn list(context: &Context, args: &LogArgs) -> anyhow::Result<Output> {
    let store = context.open_read_store()?;
    let read = store.snapshot()?;
    let history = History::read(&read)?;
    let shown = history
        .entries
        .iter()
        .rev()
        .take(args.max_count.unwrap_or(usize::MAX));
    if context.json {
        let list: Vec<OperationJson> = shown.map(OperationJson::new).collect();
        return Output::json(&list);
    }
    if history.entries.is_empty() && !context.quiet {
        eprintln!("{NO_OPERATIONS}");
    }
    let now = clock::now_ns();
    let lines = shown.flat_map(|entry| operations::op_lines(entry, now));
    Ok(Output::Lines(lines.collect()))
}

/// A page of `op log`, newest first: `limit` operations from `offset` on, whole
/// records when `verbose`; the MCP server's `op_log`.
pub fn page(
    context: &Context,
    offset: usize,
    limit: usize,
    verbose: bool,
) -> anyhow::Result<OperationPage> {
    let store = context.open_read_store()?;
    let history = History::read(&store.snapshot()?)?;
    let total = history.entries.len();
    let entries = history.entries.into_iter().rev().skip(offset).take(limit);
    Ok(OperationPage {
        entries: entries.collect(),
        now: clock::now_ns(),
        next_offset: Some(offset.saturating_add(limit)).filter(|next| *next < total),
        verbose,
    })
}

/// The answer of `undo`, `redo` and `op restore` for `report`, with the short ids it
/// names read from `store`.
pub fn undo_answer(store: &Store, report: UndoReport) -> anyhow::Result<UndoAnswer> {
    let shorts = super::shorts(&store.snapshot()?, operations::named(&report))?;
    Ok(UndoAnswer { report, shorts })
}
