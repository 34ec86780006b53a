//! The one shape every agent has: [`Agent`], which the binary drives without knowing
//! which agent it holds. An agent's module supplies only what is its own (its file, its
//! events, how it reads a payload, what it replies); the install and run bodies are
//! shared (`hook_groups`, `hook_list`, [`HookRun::save`]).

use std::path::{Path, PathBuf};

use super::event::{self, AgentEvent};
use super::kinds::{HookKind, HooksState, HooksTrust, Installed, ProjectHooks, Scope};
use super::mcp_entry::McpConfig;
use crate::ops::workspace::Workspace;
use crate::{CheckpointId, Result};

/// What one hook run did, and what the hook must print for the agent.
#[derive(Debug)]
pub struct HookRun {
    /// The checkpoint saved (`None` when the event needed none), or why the save failed
    /// (appended to the hooks log already, where the worktree was found).
    pub saved: Result<Option<CheckpointId>>,
    /// What the agent reads on the hook's stdout, whatever became of the save (empty:
    /// print nothing).
    pub reply: &'static str,
    /// The worktree the run saved (or tried to save) in, where one was found: the one
    /// whose watcher the binary starts (`watch::start::auto_start`).
    pub workspace: Option<Workspace>,
    /// What to tell the user in the agent's UI, once per session: files left out as
    /// unreadable, or that the save failed ([`HookRun::answer`] says it, where the
    /// agent has a way).
    pub notice: Option<String>,
}

impl HookRun {
    /// Saves a checkpoint for `event` (see [`event::run`]) and answers with `reply`.
    pub(super) fn save(
        event: Result<AgentEvent>,
        fallback_dir: &Path,
        reply: &'static str,
    ) -> HookRun {
        let event::Ran {
            workspace,
            saved,
            notice,
        } = event::run(event, fallback_dir);
        HookRun {
            saved,
            reply,
            workspace,
            notice,
        }
    }

    /// A run that saves nothing (an event that needs no checkpoint) and answers `reply`.
    pub(super) fn nothing(reply: &'static str) -> HookRun {
        HookRun {
            saved: Ok(None),
            reply,
            workspace: None,
            notice: None,
        }
    }

    /// What the hook prints on stdout for `agent`: its reply, carrying the notice where
    /// `agent`'s hook contract has a channel to the user for it.
    pub fn answer(&self, agent: &dyn Agent) -> String {
        self.notice
            .as_deref()
            .and_then(|notice| agent.reply_with_notice(self.reply, notice))
            .unwrap_or_else(|| self.reply.to_string())
    }
}

/// A hook reply that shows `notice` to the user: the `systemMessage` of Claude Code's
/// hook output, which Codex CLI and Gemini CLI read too.
pub(super) fn system_message(notice: &str) -> String {
    serde_json::json!({ "systemMessage": notice }).to_string()
}

/// An AI coding agent (or git itself) that git-checkpoint hooks into. The registry,
/// [`super::AGENTS`], holds one of each, and it is the only list of agents: what
/// `hooks install` and `mcp install` do for one, and which of their files a checkpoint
/// leaves out, all come from here. Adding an agent is one module and one line there.
pub trait Agent: Sync {
    /// Its name on the command line (`hooks install <name>`), and in `agent=<name>`.
    fn name(&self) -> &'static str;

    /// What `hooks install --help` lists it as.
    fn about(&self) -> &'static str;

    /// What installing puts in place.
    fn kind(&self) -> HookKind {
        HookKind::Agent
    }

    /// The file (for Cline, the directory) `scope` names, for a command run in `start`:
    /// in the worktree `start` is in (at its top, or in `start` itself for an agent that
    /// reads a project's hooks only from the directory it starts in: see
    /// [`project_hooks`](Agent::project_hooks)), or in the home directory. Refuses one that is, or lies
    /// below, a symlink leading out of that directory, and a scope the agent has no file
    /// for.
    fn hooks_path(&self, scope: Scope, start: &Path) -> Result<PathBuf>;

    /// Adds our hooks at `path` (from [`hooks_path`](Agent::hooks_path)), creating the
    /// file if needed and changing nothing else in it.
    fn install(&self, path: &Path) -> Result<Installed>;

    /// Whether our hooks are at `path` (from [`hooks_path`](Agent::hooks_path)), as
    /// [`install`](Agent::install) would put them; changes nothing. Fails for a file
    /// that cannot be read or is not laid out as the agent's.
    fn hooks_state(&self, path: &Path) -> Result<HooksState>;

    /// Removes exactly what [`install`](Agent::install) added at `path`, and what it
    /// created for them once it holds nothing else. Returns false if there was nothing
    /// to remove.
    fn uninstall(&self, path: &Path) -> Result<bool>;

    /// Every file [`install`](Agent::install) may write inside a worktree, whatever the
    /// scope, as a path from its top: the agent's set-up, which no checkpoint holds and
    /// no restore takes away ([`super::worktree_files`]). Empty for a hook that lives
    /// outside the worktree (git's, in the git dir).
    fn worktree_hook_files(&self) -> Vec<String>;

    /// Where the agent keeps its MCP servers and how an entry of ours is shaped, for
    /// `mcp install` (`super::mcp_registration`); `None` for one that takes no MCP
    /// server (git's post-commit hook).
    fn mcp(&self) -> Option<McpConfig>;
    /// Where in a worktree the agent finds a project's hooks, which is where
    /// [`hooks_path`](Agent::hooks_path) puts them.
    fn project_hooks(&self) -> ProjectHooks {
        ProjectHooks::AtTheTop
    }

    /// Whether the agent runs the hooks installed for `scope` at `path` without the
    /// user trusting them first (by the agent's own settings).
    fn hooks_trust(&self, _scope: Scope, _path: &Path) -> Result<HooksTrust> {
        Ok(HooksTrust::NotNeeded)
    }

    /// Whether the file `scope` names is the user's own, to be kept out of
    /// `git status` (`agents::exclude`).
    fn is_personal(&self, _scope: Scope) -> bool {
        false
    }

    /// One hook run: reads the event the agent wrote on stdin (`input`), saves a
    /// checkpoint in the worktree the event names (or `fallback_dir`), and says what to
    /// print. Fails only for a hook that has no `hooks run` (git's).
    fn run(&self, input: &[u8], fallback_dir: &Path) -> Result<HookRun>;

    /// The reply that also shows `notice` to the user, in place of `reply` (what the
    /// hook prints otherwise), where the agent's hook contract has a channel for it;
    /// `None` where it has none (the notice is then in the hooks log only).
    fn reply_with_notice(&self, _reply: &str, _notice: &str) -> Option<String> {
        None
    }
}
