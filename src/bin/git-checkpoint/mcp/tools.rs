//! The MCP server's tools: each one's arguments (their JSON schema comes from the
//! type, their descriptions from its doc comments), its description for the model, its
//! hints, and its body. Bodies call what the CLI commands call and answer with readable
//! text and the commands' `--json` shapes as structured content.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool, ToolAnnotations};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};

use git_checkpoint::diff::{changes_from_parent, PathFilter};
use git_checkpoint::format::size::human_bytes;
use git_checkpoint::git::repo::Repo;
use git_checkpoint::model::session::abbreviate;
use git_checkpoint::model::session::Session;
use git_checkpoint::ops::gc;
use git_checkpoint::ops::log::{self, LogQuery};
use git_checkpoint::ops::restore::{self, RestoreOptions};
use git_checkpoint::ops::revert::{self, ConflictStyle, RevertOptions, Status, Undo};
use git_checkpoint::ops::save::{save_then_gc_if_changed, SaveOptions, SaveOutcome};
use git_checkpoint::ops::session_restore::{self, SessionRestoreOptions};
use git_checkpoint::ops::workspace::Workspace;
use git_checkpoint::storage::StoreRead;
use git_checkpoint::CheckpointId;

use crate::commands::{self, diff, show, Context, Output};
use crate::ui::json::{
    CheckpointJson, DiffJson, PinJson, RestoreJson, RevertJson, SessionJson, SessionRestoreJson,
    UnchangedJson,
};
use crate::ui::output::show_path;
use crate::ui::patch::{self, Format};

/// `list_checkpoints` and `list_sessions` list this many unless told.
const DEFAULT_LIMIT: usize = 20;
/// ... and never more than this many at once: a model's context is small.
const MAX_LIMIT: usize = 200;
/// The bytes of patch `diff` returns unless told.
const DEFAULT_DIFF_BYTES: usize = 20_000;
/// The most `diff` returns at once, whatever it is asked.
const MAX_DIFF_BYTES: usize = 1_000_000;

/// The description every tool gives its `repo` argument.
const REPO: &str = "A path inside the git worktree to work on; relative paths start from the server's directory (its -C, else the client's first root, else where it was started). Leave it out to use that directory.";

/// `list_checkpoints`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ListCheckpoints {
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
}

/// `list_sessions`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ListSessions {
    // Read by `call` from the raw arguments, before these are parsed; here for the schema.
    #[allow(dead_code)]
    #[schemars(description = REPO)]
    repo: Option<String>,
    /// At most this many, the most recently active first (default 20, at most 200).
    limit: Option<usize>,
}

/// `show`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Show {
    // Read by `call` from the raw arguments, before these are parsed; here for the schema.
    #[allow(dead_code)]
    #[schemars(description = REPO)]
    repo: Option<String>,
    /// The checkpoint: an id or unique prefix, a branch, @ (the current one), <session>:prompt<N>, optionally followed by ~N; or a prompt's turn <session>:turn<N> (turn-1 for the last prompt), shown as the prompt's checkpoint with everything the turn changed. Default @.
    rev: Option<String>,
}

/// `diff`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Diff {
    // Read by `call` from the raw arguments, before these are parsed; here for the schema.
    #[allow(dead_code)]
    #[schemars(description = REPO)]
    repo: Option<String>,
    /// The old side: a checkpoint (default: the current one). Alone, a prompt's turn <session>:turn<N> or a range A..B is what that turn or range changed.
    from: Option<String>,
    /// The new side: a checkpoint (default: the worktree as it is now). Needs from.
    to: Option<String>,
    /// Only these files or directories (relative to the worktree's top).
    paths: Option<Vec<String>>,
    /// The most bytes of patch to return (default 20000, at most 1000000); a longer patch is cut, with a note naming what was left out.
    max_bytes: Option<usize>,
}

/// `save`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Save {
    // Read by `call` from the raw arguments, before these are parsed; here for the schema.
    #[allow(dead_code)]
    #[schemars(description = REPO)]
    repo: Option<String>,
    /// The checkpoint's message: what state the worktree is in and why it is worth keeping.
    message: String,
    /// Metadata to record, as string keys and values.
    meta: Option<BTreeMap<String, String>>,
}

/// `restore`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Restore {
    // Read by `call` from the raw arguments, before these are parsed; here for the schema.
    #[allow(dead_code)]
    #[schemars(description = REPO)]
    repo: Option<String>,
    /// The checkpoint to restore: an id or unique prefix, a branch, @~N (N steps before the current one), <session>:prompt<N>.
    rev: String,
    /// Restore only these files or directories (relative to the worktree's top); the current branch then stays where it is.
    paths: Option<Vec<String>>,
    /// Put back only the files an agent session's own tool calls changed since rev, leaving the user's and other sessions' changes; the session is the one rev names (as in <session>:prompt2) unless session is given. Not with paths.
    only_session: Option<bool>,
    /// With only_session: the session (an id or unique prefix, as list_sessions shows it).
    session: Option<String>,
    /// With only_session: also put back files someone else changed too since rev (otherwise they are left alone and listed).
    force: Option<bool>,
    /// Only say what would be written and deleted; change nothing.
    dry_run: Option<bool>,
}

/// `revert`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Revert {
    // Read by `call` from the raw arguments, before these are parsed; here for the schema.
    #[allow(dead_code)]
    #[schemars(description = REPO)]
    repo: Option<String>,
    /// The change to undo: a checkpoint (what it changed against its parent, e.g. a tool call's checkpoint <session>:<tool-call-id> or an id), a prompt's turn <session>:turn<N> (turn-1 for the last one), or a range A..B (everything from A to B).
    rev: String,
    /// Only say what would change, as a diff; change nothing.
    dry_run: Option<bool>,
    /// Change nothing if any file would conflict.
    no_conflicts: Option<bool>,
}

/// `pin`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Pin {
    // Read by `call` from the raw arguments, before these are parsed; here for the schema.
    #[allow(dead_code)]
    #[schemars(description = REPO)]
    repo: Option<String>,
    /// The checkpoint to pin.
    rev: String,
}

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
        tool::<ListCheckpoints>(
            "list_checkpoints",
            "List checkpoints (save points of the worktree), newest first: by default the current checkpoint and the ones before it, so the second entry is one step back. Each has an id, a message, its time, its branch and its metadata (agent hooks record agent, session, prompt number, kind, tool and path). Filter by session, prompt, path changed or branch; page with limit and offset (the answer's next_offset). Use it to find the checkpoint to restore, show or diff.",
            reading.clone(),
        ),
        tool::<ListSessions>(
            "list_sessions",
            "List the agent sessions whose hooks saved checkpoints, the most recently active first: the agent, the session id (a unique prefix names it in list_checkpoints and in revisions such as <session>:prompt3), how many prompts and checkpoints it has, when it ran and its first prompt.",
            reading.clone(),
        ),
        tool::<Show>(
            "show",
            "Show one checkpoint: its id, parents, time, branch, metadata, message, and the files it changed against its parent with lines added and removed. Use diff for the changes themselves.",
            reading.clone(),
        ),
        tool::<Diff>(
            "diff",
            "Show the changes, as a unified diff, from one checkpoint to another or to the worktree as it is now (by default from the current checkpoint to the worktree: the unsaved changes). The patch is cut at max_bytes; then a note says which files were left out, and a second call with paths, or a larger max_bytes, shows them.",
            reading,
        ),
        tool::<Save>(
            "save",
            "Save the worktree as a new checkpoint with a message (and optional metadata), as a save point to come back to before something risky. When nothing changed since the current checkpoint, nothing is made and the answer says so.",
            writing(false, false),
        ),
        tool::<Restore>(
            "restore",
            "Make the worktree (or only some paths, or only the files an agent session changed) equal to a checkpoint, e.g. rev \"@~2\" to undo the last two steps. Unsaved changes are first saved as a safety checkpoint, whose id the answer gives, so the restore can itself be undone; files git ignores are never touched. With only_session, only the files the session's own tool calls changed since rev are put back, and the user's edits stay. With dry_run, only says what would be written and deleted.",
            writing(true, false),
        ),
        tool::<Revert>(
            "revert",
            "Undo one change and keep everything done since, as git revert does: a step (a checkpoint: what it changed against its parent), a prompt's whole turn (<session>:turn<N>), or a range A..B. Each file the change touched is merged three ways with the worktree as it is now; where later work changed the same lines, the file gets conflict markers (listed in the answer). The worktree is first saved as a safety checkpoint, whose id the answer gives (restore it to undo the revert). With dry_run, only shows the diff it would apply. Use restore instead to go back to a point in time.",
            writing(true, false),
        ),
        tool::<Pin>(
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

/// What a tool answers: text for the model to read and the same as JSON.
struct Answer {
    text: String,
    structured: Value,
    /// Whether the call did its work but failed all the same, as the CLI exits 1 (a
    /// revert that conflicts): a tool error with the full answer.
    failed: bool,
}

/// Runs tool `name` with `arguments`, from directory `base`; every failure is a tool
/// error carrying the line the CLI would print.
pub fn call(name: &str, arguments: JsonObject, base: &Path) -> CallToolResult {
    let repo_arg = arguments
        .get("repo")
        .and_then(Value::as_str)
        .map(PathBuf::from);
    let directory = match repo_arg {
        Some(repo) => base.join(repo),
        None => base.to_path_buf(),
    };
    let context = match open(&directory) {
        Ok(context) => context,
        Err(error) => return failure(&error),
    };
    let answer = match name {
        "list_checkpoints" => parse(arguments).and_then(|a| list_checkpoints(&context, a)),
        "list_sessions" => parse(arguments).and_then(|a| list_sessions(&context, a)),
        "show" => parse(arguments).and_then(|a| show(&context, a)),
        "diff" => parse(arguments).and_then(|a| diff(&context, a)),
        "save" => parse(arguments).and_then(|a| save(&context, a)),
        "restore" => parse(arguments).and_then(|a| restore(&context, a)),
        "revert" => parse(arguments).and_then(|a| revert(&context, a)),
        "pin" => parse(arguments).and_then(|a| pin(&context, a)),
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

/// The context a call works in: the worktree around `directory`, with paths taken from
/// its top (a model names paths from the top, wherever the server runs).
fn open(directory: &Path) -> anyhow::Result<Context> {
    let mut repo = Repo::discover(directory).map_err(|error| match error {
        git_checkpoint::Error::NotAWorktree(message) => anyhow::anyhow!(
            "{} (looked in {}; pass repo, a path inside the worktree)",
            message.trim_end(),
            directory.display()
        ),
        error => error.into(),
    })?;
    repo.prefix.clear();
    // Not quiet: warnings go to stderr, the server's log. Nothing reaches stdout (see
    // `protocol_stdout`).
    Ok(Context {
        workspace: Workspace::new(repo, git_checkpoint::agents::worktree_files()),
        quiet: false,
        json: false,
    })
}

/// The tool's arguments, or an error naming what is wrong with them.
fn parse<A: DeserializeOwned>(arguments: JsonObject) -> anyhow::Result<A> {
    serde_json::from_value(Value::Object(arguments))
        .map_err(|error| anyhow::anyhow!("invalid arguments: {error}"))
}

/// A page size asked for, within bounds.
fn limit(asked: Option<usize>) -> anyhow::Result<usize> {
    match asked.unwrap_or(DEFAULT_LIMIT) {
        0 => anyhow::bail!("limit must be at least 1"),
        n => Ok(n.min(MAX_LIMIT)),
    }
}

/// Worktree paths from arguments, relative to the worktree's top.
fn worktree_paths(context: &Context, paths: &[String]) -> anyhow::Result<Vec<Vec<u8>>> {
    let paths: Vec<PathBuf> = paths.iter().map(PathBuf::from).collect();
    Ok(context.workspace.repo.worktree_paths(&paths)?)
}

/// The body of `list_checkpoints`.
fn list_checkpoints(context: &Context, args: ListCheckpoints) -> anyhow::Result<Answer> {
    let limit = limit(args.limit)?;
    let offset = args.offset.unwrap_or(0);
    let filter = match &args.path {
        Some(path) => Some(PathFilter::new(worktree_paths(
            context,
            std::slice::from_ref(path),
        )?)),
        None => None,
    };
    let store = context.open_read_store()?;
    let read = store.snapshot()?;
    let mut meta = Vec::new();
    if let Some(prefix) = &args.session {
        meta.push((
            "session".to_string(),
            Session::find(&read.checkpoints()?, prefix)?,
        ));
    }
    if let Some(prompt) = args.prompt {
        if args.session.is_none() {
            anyhow::bail!("prompt needs session: prompts are numbered within a session");
        }
        meta.push(("prompt".to_string(), prompt.to_string()));
    }
    let all = args
        .all
        .unwrap_or(args.session.is_some() || args.branch.is_some());
    let entries = log::log(
        &read,
        &LogQuery {
            all,
            meta,
            grep: args.grep,
            ..LogQuery::default()
        },
    )?;
    let tree_reader = read.checked_trees(None)?;
    let pinned = read.pins()?;
    let checkpoints = read.checkpoint_reader()?;
    let current = read.current()?;
    let mut page = Vec::new();
    let mut matched = 0;
    let mut more = false;
    for entry in entries {
        if let Some(branch) = &args.branch {
            if entry.record.branch.as_ref() != Some(branch) {
                continue;
            }
        }
        if let Some(filter) = &filter {
            let changes = changes_from_parent(&read, &tree_reader, &entry.record)?;
            if !changes.iter().any(|c| filter.covers(&c.path)) {
                continue;
            }
        }
        matched += 1;
        if matched <= offset {
            continue;
        }
        if page.len() == limit {
            more = true;
            break;
        }
        page.push(CheckpointJson {
            pinned: pinned.contains(&entry.id),
            ..CheckpointJson::new(entry.id, checkpoints.short_id(entry.id)?, &entry.record)
        });
    }
    let next_offset = more.then_some(offset + page.len());
    let mut text = match page.len() {
        0 => "No checkpoints match.".to_string(),
        n => format!("{n} checkpoint(s), newest first:"),
    };
    for checkpoint in &page {
        text += &format!("\n{}", checkpoint_line(checkpoint, current));
    }
    if let Some(next) = next_offset {
        text += &format!("\nMore: call list_checkpoints again with offset={next}.");
    }
    Ok(Answer {
        text,
        failed: false,
        structured: json!({
            "checkpoints": page,
            "current": current.map(CheckpointId::hex),
            "next_offset": next_offset,
        }),
    })
}

/// One checkpoint as a line of `list_checkpoints`' text: short id, time, branch,
/// message and the metadata an agent's hook records.
fn checkpoint_line(checkpoint: &CheckpointJson, current: Option<CheckpointId>) -> String {
    let mut line = format!("{} {}", checkpoint.short_id, checkpoint.time);
    if current.is_some_and(|c| c.hex() == checkpoint.id) {
        line += " (current)";
    }
    if let Some(branch) = &checkpoint.branch {
        line += &format!(" [{branch}]");
    }
    if checkpoint.pinned {
        line += " [pinned]";
    }
    let message = checkpoint.message.lines().next().unwrap_or("");
    if !message.is_empty() {
        line += &format!(" {message}");
    }
    let shown: Vec<String> = ["session", "prompt", "kind", "tool", "path"]
        .iter()
        .filter_map(|key| Some(format!("{key}={}", checkpoint.meta.get(*key)?.as_str()?)))
        .collect();
    if !shown.is_empty() {
        line += &format!(" ({})", shown.join(" "));
    }
    line
}

/// The body of `list_sessions`.
fn list_sessions(context: &Context, args: ListSessions) -> anyhow::Result<Answer> {
    let limit = limit(args.limit)?;
    let records = context.open_read_store()?.snapshot()?.checkpoints()?;
    let sessions = Session::all(&records);
    let list: Vec<SessionJson> = sessions
        .iter()
        .take(limit)
        .map(|s| SessionJson::new(s, s.short_id(&sessions)))
        .collect();
    let mut text = match list.len() {
        0 => "No agent sessions: no checkpoint was saved by an agent's hook.".to_string(),
        n => format!(
            "{n} of {} session(s), most recently active first:",
            sessions.len()
        ),
    };
    for s in &list {
        text += &format!(
            "\n{} {} {} prompt(s), {} checkpoint(s), {} to {}  {}",
            s.agent,
            s.short_id,
            s.prompts,
            s.checkpoints,
            s.started,
            s.ended,
            s.first_prompt.as_deref().unwrap_or("")
        );
    }
    Ok(Answer {
        failed: false,
        text: text.trim_end().to_string(),
        structured: json!({ "sessions": list, "total": sessions.len() }),
    })
}

/// The body of `show`: `show --stat`'s text and `show --json`'s document.
fn show(context: &Context, args: Show) -> anyhow::Result<Answer> {
    let rev = args.rev.as_deref().unwrap_or("@");
    show::with_checkpoint(context, rev, |shown| {
        let text = match show::render_shown(context, Format::Stat, false, shown)? {
            Output::Paged(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            _ => String::new(),
        };
        let structured = serde_json::to_value(shown.json()?)?;
        Ok(Answer {
            text,
            structured,
            failed: false,
        })
    })
}

/// The body of `diff`: the patch, cut at the byte budget on a file's (else a line's)
/// boundary with a note of what was left out.
fn diff(context: &Context, args: Diff) -> anyhow::Result<Answer> {
    let budget = match args.max_bytes.unwrap_or(DEFAULT_DIFF_BYTES) {
        0 => anyhow::bail!("max_bytes must be at least 1"),
        n => n.min(MAX_DIFF_BYTES),
    };
    let revs: Vec<String> = match (args.from, args.to) {
        (None, Some(_)) => anyhow::bail!("to needs from: name the old side too"),
        (from, to) => from.into_iter().chain(to).collect(),
    };
    let paths = worktree_paths(context, args.paths.as_deref().unwrap_or_default())?;
    diff::with_changes(context, &revs, paths, |compared| {
        let mut text = String::new();
        let mut total = 0;
        let mut left_out = Vec::new();
        for change in compared.changes {
            let mut one = Vec::new();
            patch::write_changes(
                &mut one,
                std::slice::from_ref(change),
                compared.reader,
                Format::Patch,
                false,
            )?;
            let one = String::from_utf8_lossy(&one);
            total += one.len();
            if left_out.is_empty() && text.len() + one.len() <= budget {
                text += &one;
            } else if left_out.is_empty() && text.is_empty() {
                // Even the first file is over the budget: as many of its lines as fit.
                let mut end = budget;
                while !one.is_char_boundary(end) {
                    end -= 1;
                }
                let cut = one[..end].rfind('\n').map_or(0, |i| i + 1);
                text += &one[..cut];
                left_out.push(format!("the rest of {}", show_path(&change.path)));
            } else {
                left_out.push(show_path(&change.path));
            }
        }
        if compared.changes.is_empty() {
            text = "No changes.".to_string();
        }
        let cut = !left_out.is_empty();
        if cut {
            text += &format!(
                "\n[diff cut: {} of {total} bytes shown; left out: {}. Call diff again with paths set to the files wanted, or with a larger max_bytes (at most {MAX_DIFF_BYTES}).]",
                text.len(),
                left_out.join(", ")
            );
        }
        let mut structured = serde_json::to_value(DiffJson {
            from: compared.from.map(CheckpointId::hex),
            to: compared.to.map(CheckpointId::hex),
            changes: patch::summarize(compared.changes, compared.reader)?,
        })?;
        if let Value::Object(map) = &mut structured {
            map.insert("cut".into(), cut.into());
            map.insert("patch_bytes".into(), total.into());
            map.insert("left_out".into(), left_out.into());
        }
        Ok(Answer {
            text,
            structured,
            failed: false,
        })
    })
}

/// The body of `save`, as `save` saves.
fn save(context: &Context, args: Save) -> anyhow::Result<Answer> {
    let options = SaveOptions {
        message: args.message,
        meta: args.meta.unwrap_or_default().into_iter().collect(),
        settings: context.workspace.settings.clone(),
        ..SaveOptions::default()
    };
    let (report, store) = save_then_gc_if_changed(
        &context.workspace.repo,
        || context.open_read_store(),
        || context.open_store(),
        &options,
    )?;
    let read = store.snapshot()?;
    let warnings: Vec<String> = report.warnings.iter().map(|w| w.to_string()).collect();
    let (mut text, structured) = match report.outcome {
        SaveOutcome::Saved { id, checkpoint } => {
            let short = read.short_id(id)?;
            let text = format!(
                "Saved checkpoint {short} ({} files, {})",
                checkpoint.files,
                human_bytes(checkpoint.bytes)
            );
            (
                text,
                serde_json::to_value(CheckpointJson::new(id, short, &checkpoint))?,
            )
        }
        SaveOutcome::Unchanged { current } => (
            format!(
                "Nothing changed since checkpoint {}: nothing saved",
                read.short_id(current)?
            ),
            serde_json::to_value(UnchangedJson::new(current))?,
        ),
    };
    for warning in &warnings {
        text += &format!("\nwarning: {warning}");
    }
    Ok(Answer {
        text,
        structured,
        failed: false,
    })
}

/// The body of `restore`, as `restore` restores: unsaved changes saved first.
fn restore(context: &Context, args: Restore) -> anyhow::Result<Answer> {
    let dry_run = args.dry_run.unwrap_or(false);
    let options = RestoreOptions {
        dry_run,
        paths: worktree_paths(context, args.paths.as_deref().unwrap_or_default())?,
        settings: context.workspace.settings.clone(),
        ..RestoreOptions::default()
    };
    if args.only_session.unwrap_or(false) {
        if !options.paths.is_empty() {
            anyhow::bail!("only_session and paths cannot be used together");
        }
        let options = SessionRestoreOptions {
            session: args.session,
            force: args.force.unwrap_or(false),
            restore: options,
        };
        return restore_only_session(context, &args.rev, &options);
    }
    if args.session.is_some() || args.force.is_some() {
        anyhow::bail!("session and force go with only_session=true");
    }
    // The short ids are read while the store is open: a snapshot lives no longer.
    let shorts = |read: &git_checkpoint::storage::Snapshot<'_>,
                  report: &restore::RestoreReport,
                  before: Option<CheckpointId>|
     -> anyhow::Result<[Option<String>; 3]> {
        let short = |id: Option<CheckpointId>| id.map(|id| read.short_id(id)).transpose();
        Ok([
            short(report.target)?,
            short(report.safety_checkpoint)?,
            short(before)?,
        ])
    };
    let (report, [short, safety, before]) = if dry_run {
        let store = context.open_read_store()?;
        let report = restore::dry_run(&context.workspace.repo, &store, &args.rev, &options)?;
        let read = store.snapshot()?;
        let found = shorts(&read, &report, None)?;
        (report, found)
    } else {
        let store = context.open_store()?;
        let before = store.snapshot()?.current()?;
        let report = restore::restore(&context.workspace.repo, &store, &args.rev, &options)?;
        let read = store.snapshot()?;
        let found = shorts(&read, &report, before)?;
        (report, found)
    };
    let target = commands::restore::restored(&report)?;
    let short = short.unwrap_or_default();
    let mut lines = Vec::new();
    if report.dry_run {
        lines.push(format!(
            "Dry run: restoring checkpoint {short} would write {} and delete {} file(s){}; nothing was changed.",
            report.written.len(),
            report.deleted.len(),
            match report.would_save {
                true => ", after saving unsaved changes as a safety checkpoint",
                false => "",
            }
        ));
        lines.extend(
            report
                .written
                .iter()
                .map(|p| format!("write {}", show_path(p))),
        );
        lines.extend(
            report
                .deleted
                .iter()
                .map(|p| format!("delete {}", show_path(p))),
        );
    } else {
        if let Some(safety) = safety {
            lines.push(format!(
                "Saved unsaved changes as checkpoint {safety} (undo this restore with restore rev={safety})"
            ));
        } else if let Some(before) = before {
            lines.push(format!(
                "The worktree had no unsaved changes; it was checkpoint {before} (undo this restore with restore rev={before})"
            ));
        }
        lines.push(format!(
            "Restored checkpoint {short}: {} written, {} deleted",
            report.written.len(),
            report.deleted.len()
        ));
    }
    lines.extend(
        report
            .untouched
            .iter()
            .map(|p| format!("Left {} untouched", show_path(p))),
    );
    lines.extend(report.warnings.iter().map(|w| format!("warning: {w}")));
    Ok(Answer {
        failed: false,
        text: lines.join("\n"),
        structured: serde_json::to_value(RestoreJson::new(target, &report))?,
    })
}

/// `restore` with `only_session`: the session's own files put back, conflicts listed.
fn restore_only_session(
    context: &Context,
    rev: &str,
    options: &SessionRestoreOptions,
) -> anyhow::Result<Answer> {
    let dry_run = options.restore.dry_run;
    let repo = &context.workspace.repo;
    let (report, short, safety) = if dry_run {
        let store = context.open_read_store()?;
        let report = session_restore::dry_run(repo, &store, rev, options)?;
        let short = shorten(&store.snapshot()?, report.target)?;
        (report, short, None)
    } else {
        let store = context.open_store()?;
        let report = session_restore::restore_session(repo, &store, rev, options)?;
        let read = store.snapshot()?;
        let safety = report.restore.as_ref().and_then(|r| r.safety_checkpoint);
        let short = shorten(&read, report.target)?;
        (report, short, shorten(&read, safety)?)
    };
    let empty = restore::RestoreReport::default();
    let restored = report.restore.as_ref().unwrap_or(&empty);
    let mut lines = Vec::new();
    if let Some(safety) = &safety {
        lines.push(format!(
            "Saved unsaved changes as checkpoint {safety} (undo this restore with restore rev={safety})"
        ));
    }
    let verb = if dry_run {
        "Would put back"
    } else {
        "Put back"
    };
    lines.push(format!(
        "{verb} the files session {} changed since {}: {} written, {} deleted{}",
        abbreviate(&report.session),
        short.unwrap_or_default(),
        restored.written.len(),
        restored.deleted.len(),
        if dry_run { "; nothing was changed" } else { "" }
    ));
    lines.extend(
        restored
            .written
            .iter()
            .map(|p| format!("write {}", show_path(p))),
    );
    lines.extend(
        restored
            .deleted
            .iter()
            .map(|p| format!("delete {}", show_path(p))),
    );
    let what = if report.forced { "Overwrote" } else { "Left" };
    lines.extend(report.conflicts.iter().map(|c| {
        format!(
            "{what} {}: changed by this session and by someone else since",
            show_path(&c.path)
        )
    }));
    let left = report.left_alone();
    if left > 0 {
        lines.push(format!(
            "error: left {left} path(s) alone that someone else changed too; call again with force=true to put them back"
        ));
    }
    Ok(Answer {
        text: lines.join("\n"),
        structured: serde_json::to_value(SessionRestoreJson::new(&report, restored, dry_run))?,
        failed: left > 0 && !dry_run,
    })
}

/// The short ids of `id`, if any.
fn shorten(
    read: &git_checkpoint::storage::Snapshot<'_>,
    id: Option<CheckpointId>,
) -> anyhow::Result<Option<String>> {
    Ok(id.map(|id| read.short_id(id)).transpose()?)
}

/// The body of `revert`, as `revert` reverts: the worktree saved first, each path
/// merged three ways.
fn revert(context: &Context, args: Revert) -> anyhow::Result<Answer> {
    let repo = &context.workspace.repo;
    let (conflict_style, style_warning) = ConflictStyle::of_repo(repo)?;
    let dry_run = args.dry_run.unwrap_or(false);
    let options = RevertOptions {
        dry_run,
        no_conflicts: args.no_conflicts.unwrap_or(false),
        conflict_style,
        settings: context.workspace.settings.clone(),
        progress: None,
    };
    let (report, worktree) = if dry_run {
        let store = context.open_read_store()?;
        let undo = Undo::resolve(&store.snapshot()?, &args.rev)?;
        (revert::dry_run(repo, &store, &undo, &options)?, None)
    } else {
        let store = context.open_store()?;
        let undo = Undo::resolve(&store.snapshot()?, &args.rev)?;
        let report = revert::revert(repo, &store, &undo, &options)?;
        let worktree = shorten(&store.snapshot()?, report.worktree)?;
        (report, worktree)
    };
    let mut lines: Vec<String> = style_warning
        .into_iter()
        .map(|w| format!("warning: {w}"))
        .chain(report.warnings.iter().map(|w| format!("warning: {w}")))
        .collect();
    if let Some(short) = &worktree {
        lines.push(format!(
            "The worktree was saved first as checkpoint {short} (undo this revert with restore rev={short})"
        ));
    }
    if report.paths.is_empty() {
        lines.push(format!("Nothing to revert: {} changed no file", args.rev));
    } else {
        lines.push(format!(
            "{} {}: {} applied, {} conflicting, {} unchanged{}",
            if dry_run { "Would revert" } else { "Reverted" },
            args.rev,
            report.with(Status::Applied).count(),
            report.with(Status::Conflict).count(),
            report.with(Status::Unchanged).count(),
            if dry_run { "; nothing was changed" } else { "" }
        ));
        for entry in &report.paths {
            let why = entry
                .why
                .as_deref()
                .map(|why| format!(" ({why})"))
                .unwrap_or_default();
            lines.push(format!(
                "  {:<9} {}{why}",
                entry.status.name(),
                show_path(&entry.path)
            ));
        }
    }
    let conflicts = report.conflicts();
    let failed = !conflicts.is_empty() && !dry_run;
    if failed {
        let error =
            anyhow::Error::from(git_checkpoint::Error::RevertConflicts { paths: conflicts });
        lines.push(commands::error_line(&error).0);
    }
    Ok(Answer {
        text: lines.join("\n"),
        structured: serde_json::to_value(RevertJson::new(&args.rev, &report, conflict_style))?,
        failed,
    })
}

/// The body of `pin`.
fn pin(context: &Context, args: Pin) -> anyhow::Result<Answer> {
    let store = context.open_store()?;
    let (id, changed) = gc::pin(&store, &args.rev)?;
    let short = store.snapshot()?.short_id(id)?;
    let text = match changed {
        true => format!("Pinned checkpoint {short}: gc will keep it"),
        false => format!("Checkpoint {short} was already pinned"),
    };
    Ok(Answer {
        text,
        failed: false,
        structured: serde_json::to_value(PinJson {
            id: id.hex(),
            pinned: true,
            changed,
        })?,
    })
}
