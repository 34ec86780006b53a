//! `op_log`: `op log`, a page at a time.

use schemars::JsonSchema;
use serde::Deserialize;

use super::{has_store, limit, Effect, Reply, Tool, REPO};
use crate::commands::{op, Context};
use crate::ui::answer::operations::OperationPage;

/// `op_log`.
pub struct OpLog;

/// Its arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    // Read by `call` from the raw arguments, before these are parsed; here for the schema.
    #[allow(dead_code)]
    #[schemars(description = REPO)]
    repo: Option<String>,
    /// At most this many (default 20, at most 200).
    limit: Option<usize>,
    /// Skip this many operations: the next_offset of the previous page.
    offset: Option<usize>,
    /// Give each operation's whole record (the branches, HEAD and pins before and after it, what it did to the worktree, the checkpoints it dropped) instead of its number, time, kind, summary, what made it and whether it was undone.
    verbose: Option<bool>,
}

impl Tool for OpLog {
    const NAME: &'static str = "op_log";
    const DESCRIPTION: &'static str = "List the operations (restores, reverts, pins, drops, forks, switches, undos, redos, gcs; saves are not operations), newest first: each with its number (which undo takes), its age, what it did, what made it (a command line, an MCP tool call with its arguments, an agent's hook), and whether it was undone or cannot be; verbose gives whole records. Page with limit and offset (the answer's next_offset).";
    const EFFECT: Effect = Effect::Reads;
    type Args = Args;

    fn call(context: &Context, args: Args) -> anyhow::Result<Reply> {
        let limit = limit(args.limit)?;
        let verbose = args.verbose.unwrap_or(false);
        if !has_store(context) {
            return Reply::of(&OperationPage {
                entries: Vec::new(),
                now: 0,
                next_offset: None,
                verbose,
            });
        }
        Reply::of(&op::page(
            context,
            args.offset.unwrap_or(0),
            limit,
            verbose,
        )?)
    }
}
