//! The MCP server's tools: each one's description for the model, its hints, and the
//! dispatch of a call to its body on the worktree its scope allows (`scope`). The
//! bodies, with their arguments (whose JSON schema comes from the type, their
//! descriptions from its doc comments), are in `reading` and `writing` (what they share
//! is in `body`); they call what the CLI commands call and answer with text escaped as
//! the CLI escapes it and the commands' `--json` shapes as structured content.

use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use git_checkpoint::agents;
use git_checkpoint::ops::workspace::Workspace;

use super::scope::Scope;
use super::{reading, writing};
use crate::commands::{self, Context};

/// Tools that change nothing: all that `--read-only` offers.
const READING: [&str; 4] = ["list_checkpoints", "list_sessions", "show", "diff"];

/// Whether tool `name` only reads.
pub fn is_reading(name: &str) -> bool {
    READING.contains(&name)
}

/// Every tool, in the order `tools/list` gives them.
pub fn definitions() -> Vec<Tool> {
    let reading = ToolAnnotations::new()
        .read_only(true)
        .destructive(false)
        .idempotent(true)
        .open_world(false);
    let writing = |destructive: bool, idempotent: bool| {
        ToolAnnotations::new()
            .read_only(false)
            .destructive(destructive)
            .idempotent(idempotent)
            .open_world(false)
    };
    vec![
        tool::<reading::ListCheckpoints>(
            "list_checkpoints",
            "List checkpoints (save points of the worktree), newest first: by default the current checkpoint and the ones before it, so the second entry is one step back. Each has an id, a message, its time, its branch and its metadata (agent hooks record agent, session, prompt number, kind, tool and path). Filter by session, prompt, path changed or branch; page with limit and offset (the answer's next_offset). Use it to find the checkpoint to restore, show or diff.",
            reading.clone(),
        ),
        tool::<reading::ListSessions>(
            "list_sessions",
            "List the agent sessions whose hooks saved checkpoints, the most recently active first: the agent, the session id (a unique prefix names it in list_checkpoints and in revisions such as <session>:prompt3), how many prompts and checkpoints it has, when it ran and its first prompt.",
            reading.clone(),
        ),
        tool::<reading::Show>(
            "show",
            "Show one checkpoint: its id, parents, time, branch, metadata, message, and the files it changed against its parent with lines added and removed. Use diff for the changes themselves.",
            reading.clone(),
        ),
        tool::<reading::Diff>(
            "diff",
            "Show the changes, as a unified diff, from one checkpoint to another or to the worktree as it is now (by default from the current checkpoint to the worktree: the unsaved changes). The patch is cut at max_bytes; then a note says which files were left out, and a second call with paths, or a larger max_bytes, shows them.",
            reading,
        ),
        tool::<writing::Save>(
            "save",
            "Save the worktree as a new checkpoint with a message (and optional metadata), as a save point to come back to before something risky. When nothing changed since the current checkpoint, nothing is made and the answer says so.",
            writing(false, false),
        ),
        tool::<writing::Restore>(
            "restore",
            "Make the worktree (or only some paths, or only the files an agent session changed) equal to a checkpoint, e.g. rev \"@~2\" to undo the last two steps. Unsaved changes are first saved as a safety checkpoint, whose id the answer gives, so the restore can itself be undone; files git ignores are never touched. With only_session, only the files the session's own tool calls changed since rev are put back, and the user's edits stay. With dry_run, only says what would be written and deleted.",
            writing(true, false),
        ),
        tool::<writing::Revert>(
            "revert",
            "Undo one change and keep everything done since, as git revert does: a step (a checkpoint: what it changed against its parent), a prompt's whole turn (<session>:turn<N>), or a range A..B. Each file the change touched is merged three ways with the worktree as it is now; where later work changed the same lines, the file gets conflict markers (listed in the answer). The worktree is first saved as a safety checkpoint, whose id the answer gives (restore it to undo the revert). With dry_run, only shows the diff it would apply. Use restore instead to go back to a point in time.",
            writing(true, false),
        ),
        tool::<writing::Pin>(
            "pin",
            "Pin a checkpoint so that garbage collection never removes it, whatever the retention policy; for a state worth keeping for long. Pinning a pinned checkpoint changes nothing.",
            writing(false, true),
        ),
    ]
}

/// A tool named `name` taking arguments `A`.
fn tool<A: JsonSchema + 'static>(
    name: &'static str,
    description: &'static str,
    annotations: ToolAnnotations,
) -> Tool {
    Tool::new(name, description, JsonObject::new())
        .with_input_schema::<A>()
        .with_annotations(annotations)
}

/// Runs tool `name` with `arguments` on a worktree `scope` allows; every failure is a
/// tool error carrying the line the CLI would print.
pub fn call(name: &str, arguments: JsonObject, scope: &Scope) -> CallToolResult {
    let repo = arguments.get("repo").and_then(Value::as_str);
    let context = match scope.repo(repo) {
        // Not quiet: warnings go to stderr, the server's log. Nothing reaches stdout
        // (see `protocol_stdout`).
        Ok(repo) => Context {
            workspace: Workspace::new(repo, agents::worktree_files()),
            quiet: false,
            json: false,
        },
        Err(error) => return failure(&error),
    };
    let answer = match name {
        "list_checkpoints" => parse(arguments).and_then(|a| reading::list_checkpoints(&context, a)),
        "list_sessions" => parse(arguments).and_then(|a| reading::list_sessions(&context, a)),
        "show" => parse(arguments).and_then(|a| reading::show(&context, a)),
        "diff" => parse(arguments).and_then(|a| reading::diff(&context, a)),
        "save" => parse(arguments).and_then(|a| writing::save(&context, a)),
        "restore" => parse(arguments).and_then(|a| writing::restore(&context, a)),
        "revert" => parse(arguments).and_then(|a| writing::revert(&context, a)),
        "pin" => parse(arguments).and_then(|a| writing::pin(&context, a)),
        _ => Err(anyhow::anyhow!("no tool named '{name}'")),
    };
    match answer {
        Ok(answer) => {
            let mut result = match answer.failed {
                false => CallToolResult::success(vec![ContentBlock::text(answer.text)]),
                true => CallToolResult::error(vec![ContentBlock::text(answer.text)]),
            };
            result.structured_content = Some(answer.structured);
            result
        }
        Err(error) => failure(&commands::with_hint(&context, error)),
    }
}

/// A tool error with the CLI's line for `error`.
fn failure(error: &anyhow::Error) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(commands::error_line(error).0)])
}

/// The tool's arguments, or an error naming what is wrong with them.
pub(super) fn parse<A: DeserializeOwned>(arguments: JsonObject) -> anyhow::Result<A> {
    serde_json::from_value(Value::Object(arguments))
        .map_err(|error| anyhow::anyhow!("invalid arguments: {error}"))
}
