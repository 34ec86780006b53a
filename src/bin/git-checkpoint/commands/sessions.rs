//! `git checkpoint sessions`

use crate::ui::output::{duration, relative_time};
use git_checkpoint::format::text::counted;
use git_checkpoint::model::session::Session;
use git_checkpoint::storage::StoreRead;

use super::Context;
use crate::ui::json::{self, SessionJson};

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
    let sessions = Session::all(&records);
    if sessions.is_empty() && !records.is_empty() && !context.quiet && !context.json {
        eprintln!(
            "no agent sessions yet: 'git checkpoint hooks install <agent>' saves around every step of claude, codex, gemini, cursor, copilot or cline"
        );
    }
    if context.json {
        let list: Vec<_> = sessions
            .iter()
            .map(|s| SessionJson::new(s, s.short_id(&sessions)))
            .collect();
        return json::print(&list);
    }
    let now = git_checkpoint::clock::now_ns();
    for s in &sessions {
        // A session saved within a second (one checkpoint, say) spans no time worth
        // a word.
        let span = s.last_ns - s.first_ns;
        let over = match span >= 1_000_000_000 {
            true => format!(", over {}", duration(span)),
            false => String::new(),
        };
        let line = format!(
            "{:<7} {}  {}, {}{over}, last {}  {}",
            s.agent,
            s.short_id(&sessions),
            counted(s.prompts, "prompt"),
            counted(s.checkpoints, "checkpoint"),
            relative_time(s.last_ns, now),
            s.first_prompt.as_deref().unwrap_or(""),
        );
        context.say(line.trim_end());
    }
    Ok(())
}
