//! `pin`: `pin <rev>`.

use schemars::JsonSchema;
use serde::Deserialize;

use super::{Effect, Reply, Tool, REPO};
use crate::commands::{pin, Context};

/// `pin`.
pub struct Pin;

/// Its arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    // Read by `call` from the raw arguments, before these are parsed; here for the schema.
    #[allow(dead_code)]
    #[schemars(description = REPO)]
    repo: Option<String>,
    /// The checkpoint to pin.
    rev: String,
}

impl Tool for Pin {
    const NAME: &'static str = "pin";
    const DESCRIPTION: &'static str = "Pin a checkpoint so that garbage collection never removes it, whatever the retention policy; for a state worth keeping for long. Pinning a pinned checkpoint changes nothing.";
    const EFFECT: Effect = Effect::Writes {
        destructive: false,
        idempotent: true,
        dry_run: false,
    };
    type Args = Args;

    fn call(context: &Context, args: Args) -> anyhow::Result<Reply> {
        Reply::of(&pin::answer(context, &args.rev)?)
    }
}
