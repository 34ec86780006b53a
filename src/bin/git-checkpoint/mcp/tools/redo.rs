//! `redo`: `redo`.

use schemars::JsonSchema;
use serde::Deserialize;

use super::{require_store, Effect, Reply, Tool, REPO};
use crate::commands::{redo, Context};

/// `redo`.
pub struct Redo;

/// Its arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    // Read by `call` from the raw arguments, before these are parsed; here for the schema.
    #[allow(dead_code)]
    #[schemars(description = REPO)]
    repo: Option<String>,
}

impl Tool for Redo {
    const NAME: &'static str = "redo";
    const DESCRIPTION: &'static str = "Go forward again over the newest undo: the worktree, branches, HEAD, pins and drops come back as they were when it was undone, unsaved edits included (unsaved changes now are saved first). Refused once another operation came after the undo. Call again to go forward over the undo before.";
    const EFFECT: Effect = Effect::Writes {
        destructive: true,
        idempotent: false,
        dry_run: false,
    };
    type Args = Args;

    fn call(context: &Context, _args: Args) -> anyhow::Result<Reply> {
        require_store(context)?;
        Reply::of(&redo::answer(context)?)
    }
}
