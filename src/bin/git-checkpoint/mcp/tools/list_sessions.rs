//! `list_sessions`: `sessions`, the most recent first.

use git_checkpoint::storage::StoreRead;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{has_store, limit, Effect, Reply, Tool, REPO};
use crate::commands::{sessions, Context};

/// `list_sessions`.
pub struct ListSessions;

/// Its arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    // Read by `call` from the raw arguments, before these are parsed; here for the schema.
    #[allow(dead_code)]
    #[schemars(description = REPO)]
    repo: Option<String>,
    /// At most this many, the most recently active first (default 20, at most 200).
    limit: Option<usize>,
}

impl Tool for ListSessions {
    const NAME: &'static str = "list_sessions";
    const DESCRIPTION: &'static str = "List the agent sessions whose hooks saved checkpoints, the most recently active first: the agent, the session id (a unique prefix names it in list_checkpoints and in revisions such as <session>:prompt3), how many prompts and checkpoints it has, when it ran and its first prompt.";
    const EFFECT: Effect = Effect::Reads;
    type Args = Args;

    fn call(context: &Context, args: Args) -> anyhow::Result<Reply> {
        let limit = limit(args.limit)?;
        let records = match has_store(context) {
            true => context.open_read_store()?.snapshot()?.checkpoints()?,
            false => Vec::new(),
        };
        Reply::of(&sessions::page(&records, limit, has_store(context)))
    }
}
