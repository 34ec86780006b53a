//! The tools that change nothing, all that `--read-only` offers: `list_checkpoints`,
//! `list_sessions`, `show` and `diff`. None of them creates a store: a worktree
//! without one has no checkpoints to list, show or compare.

use git_checkpoint::diff::{changes_from_parent, PathFilter};
use git_checkpoint::model::session::Session;
use git_checkpoint::ops::log::{self, LogQuery};
use git_checkpoint::storage::StoreRead;
use git_checkpoint::CheckpointId;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{json, Value};

use super::body::{has_store, require_store, said, worktree_paths, Answer, REPO};
use crate::commands::{diff, show, Context, Output};
use crate::ui::json::{CheckpointJson, DiffJson, SessionJson};
use crate::ui::output::show_path;
use crate::ui::patch::{self, Format};

/// What `list_checkpoints` and `list_sessions` answer for a worktree without a store.
const NO_CHECKPOINTS: &str =
    "No checkpoints yet: the save tool, or the agent's hooks, make the first.";

/// `list_checkpoints` and `list_sessions` list this many unless told.
const DEFAULT_LIMIT: usize = 20;
/// ... and never more than this many at once: a model's context is small.
const MAX_LIMIT: usize = 200;
/// The bytes of patch `diff` returns unless told.
const DEFAULT_DIFF_BYTES: usize = 20_000;
/// The most `diff` returns at once, whatever it is asked.
const MAX_DIFF_BYTES: usize = 1_000_000;

/// `list_checkpoints`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct ListCheckpoints {
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
pub(super) struct ListSessions {
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
pub(super) struct Show {
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
pub(super) struct Diff {
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

/// A page size asked for, within bounds.
fn limit(asked: Option<usize>) -> anyhow::Result<usize> {
    match asked.unwrap_or(DEFAULT_LIMIT) {
        0 => anyhow::bail!("limit must be at least 1"),
        n => Ok(n.min(MAX_LIMIT)),
    }
}

/// The body of `list_checkpoints`.
pub(super) fn list_checkpoints(context: &Context, args: ListCheckpoints) -> anyhow::Result<Answer> {
    let limit = limit(args.limit)?;
    let offset = args.offset.unwrap_or(0);
    let filter = match &args.path {
        Some(path) => Some(PathFilter::new(worktree_paths(
            context,
            std::slice::from_ref(path),
        )?)),
        None => None,
    };
    if args.prompt.is_some() && args.session.is_none() {
        anyhow::bail!("prompt needs session: prompts are numbered within a session");
    }
    if !has_store(context) {
        return Ok(Answer {
            text: NO_CHECKPOINTS.to_string(),
            failed: false,
            structured: json!({"checkpoints": [], "current": null, "next_offset": null}),
        });
    }
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
    let mut lines = vec![match page.len() {
        0 => "No checkpoints match.".to_string(),
        n => format!("{n} checkpoint(s), newest first:"),
    }];
    lines.extend(page.iter().map(|c| checkpoint_line(c, current)));
    if let Some(next) = next_offset {
        lines.push(format!(
            "More: call list_checkpoints again with offset={next}."
        ));
    }
    Ok(Answer {
        text: said(&lines),
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
pub(super) fn list_sessions(context: &Context, args: ListSessions) -> anyhow::Result<Answer> {
    let limit = limit(args.limit)?;
    if !has_store(context) {
        return Ok(Answer {
            text: NO_CHECKPOINTS.to_string(),
            failed: false,
            structured: json!({"sessions": [], "total": 0}),
        });
    }
    let records = context.open_read_store()?.snapshot()?.checkpoints()?;
    let sessions = Session::all(&records);
    let list: Vec<SessionJson> = sessions
        .iter()
        .take(limit)
        .map(|s| SessionJson::new(s, s.short_id(&sessions)))
        .collect();
    let mut lines = vec![match list.len() {
        0 => "No agent sessions: no checkpoint was saved by an agent's hook.".to_string(),
        n => format!(
            "{n} of {} session(s), most recently active first:",
            sessions.len()
        ),
    }];
    lines.extend(list.iter().map(|s| {
        format!(
            "{} {} {} prompt(s), {} checkpoint(s), {} to {}  {}",
            s.agent,
            s.short_id,
            s.prompts,
            s.checkpoints,
            s.started,
            s.ended,
            s.first_prompt.as_deref().unwrap_or("")
        )
        .trim_end()
        .to_string()
    }));
    Ok(Answer {
        failed: false,
        text: said(&lines),
        structured: json!({ "sessions": list, "total": sessions.len() }),
    })
}

/// The body of `show`: `show --stat`'s text and `show --json`'s document.
pub(super) fn show(context: &Context, args: Show) -> anyhow::Result<Answer> {
    require_store(context)?;
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
pub(super) fn diff(context: &Context, args: Diff) -> anyhow::Result<Answer> {
    let budget = match args.max_bytes.unwrap_or(DEFAULT_DIFF_BYTES) {
        0 => anyhow::bail!("max_bytes must be at least 1"),
        n => n.min(MAX_DIFF_BYTES),
    };
    let revs: Vec<String> = match (args.from, args.to) {
        (None, Some(_)) => anyhow::bail!("to needs from: name the old side too"),
        (from, to) => from.into_iter().chain(to).collect(),
    };
    require_store(context)?;
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
            // The patch is the files' own text, as `diff` prints it; the note is ours.
            let note = format!(
                "[diff cut: {} of {total} bytes shown; left out: {}. Call diff again with paths set to the files wanted, or with a larger max_bytes (at most {MAX_DIFF_BYTES}).]",
                text.len(),
                left_out.join(", ")
            );
            text += &format!("\n{}", said(&[note]));
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
