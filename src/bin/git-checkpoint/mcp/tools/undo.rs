//! `undo`: `undo [<op>]`.

use schemars::JsonSchema;
use serde::Deserialize;

use super::{require_store, Effect, Reply, Tool, REPO};
use crate::commands::{undo, Context};

/// `undo`.
pub struct Undo;

/// Its arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    // Read by `call` from the raw arguments, before these are parsed; here for the schema.
    #[allow(dead_code)]
    #[schemars(description = REPO)]
    repo: Option<String>,
    /// The operation to undo, by its number in op_log: the newest one in effect, or the newest undo (undoing an undo is a redo). Default: the newest in effect.
    op: Option<u64>,
}

impl Tool for Undo {
    const NAME: &'static str = "undo";
    const DESCRIPTION: &'static str = "Undo the newest operation (a restore, revert, pin, drop, fork, switch, undo or redo, made by this server, the command line or browse): the worktree, the checkpoint branches, HEAD, the pins and dropped checkpoints go back to what they were before it. Unsaved changes are first saved as a checkpoint, so redo brings them back. Saves are not operations: checkpoints saved since stay in the store. op_log lists the operations; call again to undo the one before.";
    const EFFECT: Effect = Effect::Writes {
        destructive: true,
        idempotent: false,
        dry_run: false,
    };
    type Args = Args;

    fn call(context: &Context, args: Args) -> anyhow::Result<Reply> {
        require_store(context)?;
        Reply::of(&undo::answer(context, args.op)?)
    }
}
