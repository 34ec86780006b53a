//! The MCP server's tools: one file per tool, each a thin adapter, as each command is
//! one file in `commands/`: its name and what the model reads of it, its arguments
//! (whose JSON schema comes from the type, their descriptions from its doc comments),
//! and its call, which turns the arguments into the request the CLI command makes, asks
//! the command for its answer, and hands that on ([`Reply::of`]): the answer's text and
//! its `--json` shape, both said once in `ui::answer`. A tool error carries the line
//! the CLI would print and the error's kind.

mod diff;
mod list_checkpoints;
mod list_sessions;
mod op_log;
mod pin;
mod redo;
mod restore;
mod revert;
mod save;
mod show;
mod undo;

use std::path::PathBuf;

use rmcp::model::{CallToolResult, ContentBlock, JsonObject, ToolAnnotations};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;

use git_checkpoint::agents;
use git_checkpoint::model::operation::Invocation;
use git_checkpoint::ops::workspace::Workspace;

use super::scope::Scope;
use crate::commands::{self, Context};
use crate::ui::answer::{Answer, Front};
use crate::ui::failure::Failure;

/// The description every tool gives its `repo` argument.
const REPO: &str = "A path inside the git worktree to work on: the worktree the server serves (its -C, else the client's first root, else where it was started) or one of the client's roots, nothing else; relative paths start from the server's directory. Leave it out to use that directory.";

/// What a tool does to the worktree and the store, which its hints tell the client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    /// It changes nothing.
    Reads,
    /// It changes the store, or the worktree too.
    Writes {
        /// Whether it may overwrite work (which a safety checkpoint keeps).
        destructive: bool,
        /// Whether calling it twice does no more than once.
        idempotent: bool,
        /// Whether it takes `dry_run`, which changes nothing: a `--read-only` server
        /// offers the tool for its dry run.
        dry_run: bool,
    },
}

/// One tool.
trait Tool {
    /// Its name in `tools/list`.
    const NAME: &'static str;
    /// What the model reads of it.
    const DESCRIPTION: &'static str;
    /// What it does.
    const EFFECT: Effect;
    /// Its arguments.
    type Args: DeserializeOwned + JsonSchema + 'static;

    /// Whether `args` ask for a dry run, which changes nothing.
    fn dry_run(_args: &Self::Args) -> bool {
        false
    }

    /// Runs it on the worktree of `context`.
    fn call(context: &Context, args: Self::Args) -> anyhow::Result<Reply>;
}

/// A tool as the server lists and calls it.
pub struct Entry {
    /// Its name.
    pub name: &'static str,
    /// What it does.
    pub effect: Effect,
    /// Its definition for `tools/list`, on a server that is read-only or not.
    pub definition: fn(read_only: bool) -> rmcp::model::Tool,
    /// Its call, on a server that is read-only or not.
    call: fn(&Context, JsonObject, read_only: bool) -> anyhow::Result<Reply>,
}

impl Entry {
    /// Whether a server that is read-only (or not) offers it: every tool, or with
    /// `--read-only` those that change nothing and those whose dry run changes nothing.
    pub fn offered(&self, read_only: bool) -> bool {
        !read_only || !matches!(self.effect, Effect::Writes { dry_run: false, .. })
    }
}

/// Every tool, in the order `tools/list` gives them.
pub fn all() -> [Entry; 11] {
    [
        entry::<list_checkpoints::ListCheckpoints>(),
        entry::<list_sessions::ListSessions>(),
        entry::<show::Show>(),
        entry::<diff::Diff>(),
        entry::<op_log::OpLog>(),
        entry::<save::Save>(),
        entry::<restore::Restore>(),
        entry::<revert::Revert>(),
        entry::<pin::Pin>(),
        entry::<undo::Undo>(),
        entry::<redo::Redo>(),
    ]
}

/// The entry of tool `T`.
fn entry<T: Tool>() -> Entry {
    Entry {
        name: T::NAME,
        effect: T::EFFECT,
        definition: definition::<T>,
        call: call_tool::<T>,
    }
}

/// What a read-only server adds to the description of a tool it offers for its dry run.
const DRY_RUN_ONLY: &str =
    " This server runs with --read-only: only dry_run=true is accepted, which changes nothing.";

/// Tool `T` as `tools/list` gives it: its name, description, input schema and hints.
fn definition<T: Tool>(read_only: bool) -> rmcp::model::Tool {
    let (description, annotations) = match T::EFFECT {
        Effect::Reads => (T::DESCRIPTION.to_string(), reading()),
        // Offered for its dry run only: it changes nothing.
        Effect::Writes { .. } if read_only => {
            (format!("{}{DRY_RUN_ONLY}", T::DESCRIPTION), reading())
        }
        Effect::Writes {
            destructive,
            idempotent,
            ..
        } => (
            T::DESCRIPTION.to_string(),
            ToolAnnotations::new()
                .read_only(false)
                .destructive(destructive)
                .idempotent(idempotent)
                .open_world(false),
        ),
    };
    rmcp::model::Tool::new(T::NAME, description, JsonObject::new())
        .with_input_schema::<T::Args>()
        .with_annotations(annotations)
}

/// The hints of a tool that changes nothing.
fn reading() -> ToolAnnotations {
    ToolAnnotations::new()
        .read_only(true)
        .destructive(false)
        .idempotent(true)
        .open_world(false)
}

/// Calls tool `T` with `arguments`; a read-only server makes only its dry runs.
fn call_tool<T: Tool>(
    context: &Context,
    arguments: JsonObject,
    read_only: bool,
) -> anyhow::Result<Reply> {
    let args: T::Args = parse(arguments)?;
    if read_only && T::EFFECT != Effect::Reads && !T::dry_run(&args) {
        return Err(Failure::refused(format!(
            "this server runs with --read-only: {} is offered only with dry_run=true, which changes nothing",
            T::NAME
        )));
    }
    T::call(context, args)
}

/// What a tool answers: text for the model to read and its structured content.
pub struct Reply {
    /// The text ([`crate::ui::answer::Said::text`]).
    text: String,
    /// The answer's `--json` shape, with the exact text.
    structured: Value,
    /// Whether the call did its work but failed all the same, as the CLI exits non-zero
    /// (a revert that conflicts): a tool error with the whole answer.
    failed: bool,
}

impl Reply {
    /// `answer` as the model reads it: what the CLI says, then the error line of a
    /// failure after the work.
    fn of(answer: &impl Answer) -> anyhow::Result<Reply> {
        let mut text = answer.said(Front::Mcp)?.text();
        let failure = answer.failure(Front::Mcp);
        if let Some(error) = &failure {
            text += &format!("\n{}", commands::error_line(error).line(Front::Mcp));
        }
        Ok(Reply {
            text,
            structured: serde_json::to_value(answer.json())?,
            failed: failure.is_some(),
        })
    }
}

/// Runs tool `name` with `arguments` on a worktree `scope` allows; every failure is a
/// tool error carrying the line the CLI would print, and the error document.
pub fn call(name: &str, arguments: JsonObject, scope: &Scope, read_only: bool) -> CallToolResult {
    let repo = arguments.get("repo").and_then(Value::as_str);
    let mut context = match scope.repo(repo) {
        // Not quiet: warnings go to stderr, the server's log. Nothing reaches stdout
        // (see `protocol_stdout`).
        Ok(repo) => Context {
            workspace: Workspace::new(repo, agents::worktree_files()),
            quiet: false,
            json: false,
        },
        Err(error) => return failure(&error),
    };
    // The operation log records the call, not the server's command line.
    context.workspace.invocation = Invocation::Mcp {
        tool: name.to_string(),
        arguments: Value::Object(arguments.clone()).to_string(),
    };
    let reply = match all().iter().find(|tool| tool.name == name) {
        Some(tool) => (tool.call)(&context, arguments, read_only),
        None => Err(Failure::input(format!("no tool named '{name}'"))),
    };
    match reply {
        Ok(reply) => {
            let mut result = match reply.failed {
                false => CallToolResult::success(vec![ContentBlock::text(reply.text)]),
                true => CallToolResult::error(vec![ContentBlock::text(reply.text)]),
            };
            result.structured_content = Some(reply.structured);
            result
        }
        Err(error) => failure(&commands::with_hint(&context, error)),
    }
}

/// A tool error for `error`: the line the model reads, and the error document (its
/// message and kind) as structured content.
fn failure(error: &anyhow::Error) -> CallToolResult {
    let report = commands::error_line(error);
    let mut result = CallToolResult::error(vec![ContentBlock::text(report.line(Front::Mcp))]);
    result.structured_content = serde_json::to_value(report.json()).ok();
    result
}

/// Whether the worktree has a store: a read must never create one, so a read of a
/// worktree without one answers from nothing instead of opening it.
fn has_store(context: &Context) -> bool {
    context.workspace.repo.store_path().exists()
}

/// Fails, as reading a worktree without a store does, unless it has one ([`has_store`]).
fn require_store(context: &Context) -> anyhow::Result<()> {
    match has_store(context) {
        true => Ok(()),
        false => Err(Failure::input(
            "no checkpoints yet: the save tool, or the agent's hooks, make the first",
        )),
    }
}

/// The tool's arguments, or an error naming what is wrong with them.
fn parse<A: DeserializeOwned>(arguments: JsonObject) -> anyhow::Result<A> {
    serde_json::from_value(Value::Object(arguments))
        .map_err(|error| Failure::input(format!("invalid arguments: {error}")))
}

/// Worktree paths from arguments, relative to the worktree's top.
fn worktree_paths(context: &Context, paths: &[String]) -> anyhow::Result<Vec<Vec<u8>>> {
    let paths: Vec<PathBuf> = paths.iter().map(PathBuf::from).collect();
    Ok(context.workspace.repo.worktree_paths(&paths)?)
}

/// The listing tools list this many unless told...
const DEFAULT_LIMIT: usize = 20;
/// ... and never more than this many at once: a model's context is small.
const MAX_LIMIT: usize = 200;

/// A page size asked for, within bounds.
fn limit(asked: Option<usize>) -> anyhow::Result<usize> {
    match asked.unwrap_or(DEFAULT_LIMIT) {
        0 => Err(Failure::input("limit must be at least 1")),
        n => Ok(n.min(MAX_LIMIT)),
    }
}
