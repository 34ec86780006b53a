//! `list_checkpoints`: `log`, a page at a time.

use schemars::JsonSchema;
use serde::Deserialize;

use super::{has_store, limit, worktree_paths, Effect, Reply, Tool, REPO};
use crate::commands::log::{self, PageRequest};
use crate::commands::Context;
use crate::ui::answer::checkpoints::CheckpointPage;
use crate::ui::failure::Failure;

/// `list_checkpoints`.
pub struct ListCheckpoints;

/// Its arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    // Read by `call` from the raw arguments, before these are parsed; here for the schema.
    #[allow(dead_code)]
    #[schemars(description = REPO)]
    repo: Option<String>,
    /// Only the checkpoints of this agent session: its id or a unique prefix, as list_sessions shows it. Implies all=true unless all is given.
    session: Option<String>,
    /// Only the checkpoints of this prompt of the session (1 is its first prompt); needs session.
    prompt: Option<u64>,
    /// Only checkpoints that changed this file or directory against their parent (relative to the worktree's top).
    path: Option<String>,
    /// Only checkpoints made on this checkpoint branch. Implies all=true unless all is given.
    branch: Option<String>,
    /// Only checkpoints whose message holds this text, whatever its case (for a hook's checkpoint, the prompt or the tool call).
    grep: Option<String>,
    /// List every checkpoint in the store (other branches, safety checkpoints, lines a restore left behind), not only the current checkpoint and its ancestors.
    all: Option<bool>,
    /// At most this many (default 20, at most 200).
    limit: Option<usize>,
    /// Skip this many matching checkpoints: the next_offset of the previous page.
    offset: Option<usize>,
    /// Give each checkpoint's whole record (parents, git's HEAD and branch then, every metadata pair, sizes, files left out, attachments) instead of its id, time, message, session and prompt.
    verbose: Option<bool>,
}

impl Tool for ListCheckpoints {
    const NAME: &'static str = "list_checkpoints";
    const DESCRIPTION: &'static str = "List checkpoints (save points of the worktree), newest first: by default the current checkpoint and the ones before it, so the second entry is one step back. Each gives its short id (a revision for restore, revert, show and diff), its time, its message's first line, and for a checkpoint an agent's hooks saved, the session and prompt number (<session>:prompt<N> names the prompt, <session>:turn<N> its whole turn); current and pinned mark the current and pinned ones; verbose gives whole records. Filter by session, prompt, path changed or branch; page with limit and offset (the answer's next_offset).";
    const EFFECT: Effect = Effect::Reads;
    type Args = Args;

    fn call(context: &Context, args: Args) -> anyhow::Result<Reply> {
        let limit = limit(args.limit)?;
        let paths = match &args.path {
            Some(path) => worktree_paths(context, std::slice::from_ref(path))?,
            None => Vec::new(),
        };
        if args.prompt.is_some() && args.session.is_none() {
            return Err(Failure::input(
                "prompt needs session: prompts are numbered within a session",
            ));
        }
        let verbose = args.verbose.unwrap_or(false);
        if !has_store(context) {
            return Reply::of(&CheckpointPage {
                listed: Vec::new(),
                next_offset: None,
                verbose,
                has_store: false,
            });
        }
        let all = (args.all).unwrap_or(args.session.is_some() || args.branch.is_some());
        let request = PageRequest {
            all,
            session: args.session,
            prompt: args.prompt,
            paths,
            branch: args.branch,
            grep: args.grep,
            offset: args.offset.unwrap_or(0),
            limit,
            verbose,
        };
        Reply::of(&log::page(context, request)?)
    }
}
