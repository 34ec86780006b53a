//! `show`: `show --stat`, and `show --json`'s document.

use schemars::JsonSchema;
use serde::Deserialize;

use super::{require_store, Effect, Reply, Tool, REPO};
use crate::commands::{show, Context};

/// `show`.
pub struct Show;

/// Its arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    // Read by `call` from the raw arguments, before these are parsed; here for the schema.
    #[allow(dead_code)]
    #[schemars(description = REPO)]
    repo: Option<String>,
    /// The checkpoint: an id or unique prefix, a branch, @ (the current one), <session>:prompt<N>, optionally followed by ~N; or a prompt's turn <session>:turn<N> (turn-1 for the last prompt), shown as the prompt's checkpoint with everything the turn changed. Default @.
    rev: Option<String>,
}

impl Tool for Show {
    const NAME: &'static str = "show";
    const DESCRIPTION: &'static str = "Show one checkpoint: its id, parents, time, branch, metadata, message, and the files it changed against its parent with lines added and removed. Use diff for the changes themselves.";
    const EFFECT: Effect = Effect::Reads;
    type Args = Args;

    fn call(context: &Context, args: Args) -> anyhow::Result<Reply> {
        require_store(context)?;
        Reply::of(&show::answer(context, args.rev.as_deref().unwrap_or("@"))?)
    }
}
