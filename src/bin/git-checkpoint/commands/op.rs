//! `git checkpoint op`: the operation log (`op log`) and going back to any point of it
//! (`op restore`); also the report `undo` and `redo` share.

use git_checkpoint::clock;
use git_checkpoint::format::text::counted;
use git_checkpoint::model::operation::OpKind;
use git_checkpoint::model::Head;
use git_checkpoint::ops::op_log::{self, Entry, History, UndoOptions, UndoReport};
use git_checkpoint::storage::StoreRead;
use git_checkpoint::CheckpointId;

use super::{Context, Output};
use crate::ui::json::{self, OperationJson, UndoJson};
use crate::ui::output::relative_time;

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
            say_undo(context, &store, &report)
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
        eprintln!(
            "no operations yet: restore, revert, fork, switch, drop, pin, gc, fetch and pull each record one"
        );
    }
    let now = clock::now_ns();
    let mut lines = Vec::new();
    for entry in shown {
        lines.push(headline(entry, now));
        lines.push(format!("      {}", entry.op.invocation.display()));
    }
    Ok(Output::Lines(lines))
}

/// An entry's first line: number, age, summary, and what became of it.
fn headline(entry: &Entry, now: i128) -> String {
    let op = &entry.op;
    let mut line = format!(
        "op {:<4} {:<16} {}",
        entry.number,
        relative_time(op.time_ns, now),
        op.summary
    );
    if let Some(by) = entry.undone_by {
        line.push_str(&format!(" (undone by op {by})"));
    } else if op.lost.is_some() || !op.kind.undoable() {
        if let Some(why) = entry.refusal() {
            line.push_str(&format!(" ({why})"));
        }
    }
    line
}

/// The report of `undo`, `redo` and `op restore`: what was undone (or redone, or
/// returned to), where unsaved changes went, what the worktree became, and every
/// reference moved.
pub(super) fn say_undo(
    context: &Context,
    store: &impl StoreRead,
    report: &UndoReport,
) -> anyhow::Result<()> {
    // The restore's warnings (a file left as it was, …), as restore prints them.
    for warning in report.restore.iter().flat_map(|restore| &restore.warnings) {
        context.warn(warning);
    }
    if context.json {
        return json::print(&UndoJson::new(report));
    }
    let read = store.snapshot()?;
    let short = |id: CheckpointId| read.short_id(id);
    let (headline, way_back) = match report.kind {
        OpKind::Undo(_) => ("Undid op", "git checkpoint redo"),
        OpKind::Redo(_) => ("Redid op", "git checkpoint undo"),
        _ => ("Returned to the state after op", "git checkpoint undo"),
    };
    context.say(&format!(
        "{headline} {}: {}",
        report.target, report.target_op.summary
    ));
    if let Some(restore) = &report.restore {
        if let Some(safety) = restore.safety_checkpoint {
            context.say(&format!(
                "Saved unsaved changes as checkpoint {} first ('{way_back}' brings them back)",
                short(safety)?
            ));
        }
        if let (Some(target), false) = (
            restore.target,
            restore.written.is_empty() && restore.deleted.is_empty(),
        ) {
            context.say(&format!(
                "Restored the worktree as checkpoint {} holds it: {} written, {} deleted",
                short(target)?,
                restore.written.len(),
                restore.deleted.len()
            ));
        }
    }
    for moved in &report.moved {
        let line = match (moved.from, moved.to) {
            (Some(from), Some(to)) => {
                format!("Branch {}: {} -> {}", moved.name, short(from)?, short(to)?)
            }
            (None, Some(to)) => format!("Branch {} made at {}", moved.name, short(to)?),
            (Some(from), None) => format!("Branch {} deleted (was {})", moved.name, short(from)?),
            (None, None) => continue,
        };
        context.say(&if moved.saved_since {
            format!(
                "{line}; the checkpoints saved on it since op {} are kept ('{way_back}' brings the branch back to them)",
                report.target
            )
        } else {
            line
        });
    }
    if let Some((_, to)) = &report.head {
        context.say(&match to {
            Head::Branch(name) => format!("HEAD names branch {name}"),
            Head::Detached(id) => format!("HEAD is detached at {}", short(*id)?),
        });
    }
    if !report.undropped.is_empty() {
        let ids: Vec<String> = (report.undropped.iter())
            .map(|id| short(*id))
            .collect::<Result<_, _>>()?;
        let noun = match ids.len() {
            1 => "checkpoint",
            _ => "checkpoints",
        };
        context.say(&format!("Brought back dropped {noun} {}", ids.join(", ")));
    }
    if !report.dropped.is_empty() {
        context.say(&format!(
            "Dropped again {}",
            counted(report.dropped.len(), "checkpoint")
        ));
    }
    Ok(())
}
