//! `save`: `save -m <message> --meta …`.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;

use super::{Effect, Reply, Tool, REPO};
use crate::commands::save::{self, SaveRequest};
use crate::commands::Context;
use crate::ui::answer::Front;

/// `save`.
pub struct Save;

/// Its arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    // Read by `call` from the raw arguments, before these are parsed; here for the schema.
    #[allow(dead_code)]
    #[schemars(description = REPO)]
    repo: Option<String>,
    /// The checkpoint's message: what state the worktree is in and why it is worth keeping.
    message: String,
    /// Metadata to record, as string keys and values.
    meta: Option<BTreeMap<String, String>>,
    /// Leave out files that cannot be read (recorded on the checkpoint, and left alone by restore) instead of failing.
    skip_unreadable: Option<bool>,
}

impl Tool for Save {
    const NAME: &'static str = "save";
    const DESCRIPTION: &'static str = "Save the worktree as a new checkpoint with a message (and optional metadata), as a save point to come back to before something risky. When nothing changed since the current checkpoint, nothing is made and the answer says so.";
    const EFFECT: Effect = Effect::Writes {
        destructive: false,
        idempotent: false,
        dry_run: false,
    };
    type Args = Args;

    fn call(context: &Context, args: Args) -> anyhow::Result<Reply> {
        let request = SaveRequest {
            message: args.message,
            meta: args.meta.unwrap_or_default().into_iter().collect(),
            skip_unreadable: args.skip_unreadable.unwrap_or(false),
            ..SaveRequest::default()
        };
        Reply::of(&save::answer(context, request, Front::Mcp)?)
    }
}
