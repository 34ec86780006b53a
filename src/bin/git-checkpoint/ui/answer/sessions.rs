//! What a listing of agent sessions answers: `sessions`, and a page of them for the MCP
//! server's `list_sessions`.

use git_checkpoint::model::session::Session;
use git_checkpoint::text::counted;

use super::{Answer, Front, Said};
use crate::ui::json::{SessionJson, SessionPageJson};
use crate::ui::output::{duration, relative_time};

/// Agent sessions, the most recently active first, each with its short id.
pub struct SessionsAnswer {
    /// The sessions and their shortest unique prefixes among all of the store's.
    pub sessions: Vec<(Session, String)>,
    /// Now, for how long ago each was last active.
    pub now_ns: i128,
}

impl Answer for SessionsAnswer {
    type Json = Vec<SessionJson>;

    fn json(&self) -> Vec<SessionJson> {
        (self.sessions.iter())
            .map(|(session, short)| SessionJson::new(session, short))
            .collect()
    }

    /// One line per session: the agent, its short id, its prompts and checkpoints, how
    /// long it went on and when it was last active, its first prompt.
    fn said(&self, _front: Front) -> anyhow::Result<Said> {
        let mut said = Said::default();
        for (s, short) in &self.sessions {
            // A session saved within a second (one checkpoint, say) spans no time worth
            // a word.
            let span = s.last_ns - s.first_ns;
            let over = match span >= 1_000_000_000 {
                true => format!(", over {}", duration(span)),
                false => String::new(),
            };
            let line = format!(
                "{:<7} {short}  {}, {}{over}, last {}  {}",
                s.agent,
                counted(s.prompts, "prompt"),
                counted(s.checkpoints, "checkpoint"),
                relative_time(s.last_ns, self.now_ns),
                s.first_prompt.as_deref().unwrap_or(""),
            );
            said.line(line.trim_end());
        }
        Ok(said)
    }
}

/// The first sessions of a store, as many as asked for: `list_sessions`.
pub struct SessionPage {
    /// The sessions listed.
    pub listed: SessionsAnswer,
    /// How many sessions the store has in all.
    pub total: usize,
    /// Whether the worktree has a store at all.
    pub has_store: bool,
}

impl Answer for SessionPage {
    type Json = SessionPageJson;

    fn json(&self) -> SessionPageJson {
        SessionPageJson {
            sessions: self.listed.json(),
            total: self.total,
        }
    }

    fn said(&self, front: Front) -> anyhow::Result<Said> {
        let mut said = self.listed.said(front)?;
        let listed = self.listed.sessions.len();
        if !self.has_store {
            said.line("No checkpoints yet: the save tool, or the agent's hooks, make the first.");
        } else if self.total == 0 {
            said.line("No agent sessions: no checkpoint was saved by an agent's hook.");
        } else if listed < self.total {
            said.line(format!(
                "{listed} of {} sessions: call list_sessions with a larger limit for more.",
                self.total
            ));
        }
        Ok(said)
    }
}
