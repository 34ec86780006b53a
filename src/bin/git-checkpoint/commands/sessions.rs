//! `git checkpoint sessions`

use git_checkpoint::model::session::Session;
use git_checkpoint::model::Checkpoint;
use git_checkpoint::storage::StoreRead;
use git_checkpoint::CheckpointId;

use super::Context;
use crate::ui::answer::sessions::{SessionPage, SessionsAnswer};

/// List the AI agent sessions the hooks saved checkpoints for.
///
/// One line per session, the most recently active first: the agent, the session id
/// (the shortest prefix, at least 8 characters, that no other session shares; any
/// unique prefix names the session in a revision), the number of prompts and
/// checkpoints, how long it went on (unless within a second) and when it was last
/// active, and its first prompt's first line.
///
/// Name a prompt's checkpoint, the worktree just before the agent worked on that
/// prompt, with `<session>:prompt<N>`, and the one after a tool call with
/// `<session>:<tool_use_id>`; add `~` for the checkpoint before it.
///
/// Examples:
///
///   git checkpoint sessions
///
///   git checkpoint restore 4f2a9c1d:prompt3
///
///   git checkpoint diff 4f2a9c1d:prompt3 4f2a9c1d:prompt4
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `sessions`.
pub fn run(context: &Context, _args: Args) -> anyhow::Result<()> {
    let records = {
        let store = context.open_read_store()?;
        let snapshot = store.snapshot()?;
        let records = snapshot.checkpoints()?;
        if records.is_empty() {
            context.explain_empty(&snapshot)?;
        }
        records
    };
    let answer = answer(&records);
    if answer.sessions.is_empty() && !records.is_empty() && !context.quiet && !context.json {
        eprintln!(
            "no agent sessions yet: 'git checkpoint hooks install <agent>' saves around every step of claude, codex, gemini, cursor, copilot or cline"
        );
    }
    context.tell(&answer)
}

/// The agent sessions `records` (every checkpoint of a store) name, the most recently
/// active first: `sessions`' answer.
pub fn answer(records: &[(CheckpointId, Checkpoint)]) -> SessionsAnswer {
    listed(&Session::all(records), usize::MAX)
}

/// The first `limit` of those sessions, and how many there are: the MCP server's
/// `list_sessions`; `has_store` says whether the worktree has a store at all.
pub fn page(records: &[(CheckpointId, Checkpoint)], limit: usize, has_store: bool) -> SessionPage {
    let all = Session::all(records);
    SessionPage {
        listed: listed(&all, limit),
        total: all.len(),
        has_store,
    }
}

/// The first `limit` of `all`, each with its short id among them all.
fn listed(all: &[Session], limit: usize) -> SessionsAnswer {
    let sessions = (all.iter())
        .take(limit)
        .map(|session| (session.clone(), session.short_id(all).to_string()))
        .collect();
    SessionsAnswer {
        sessions,
        now_ns: git_checkpoint::clock::now_ns(),
    }
}
