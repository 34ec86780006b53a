//! Which sessions installed hooks reach, and whether the agent runs them at all: the
//! questions `doctor` (`ops::doctor::agent`) asks of every hooks file it finds, and
//! `hooks install` of the one it wrote.
//!
//! Two things make hooks that are in place run for no session, and say nothing of it
//! (issue 40, seen with the real programs). Claude Code and Gemini CLI read a project's
//! settings only from the directory they are started in: hooks at the worktree's top
//! do nothing for a session started in a package folder below it
//! ([`ProjectHooks::InTheStartDirectory`]). And Codex runs a hook only once the user has
//! trusted it, per path and content hash, in `~/.codex/config.toml` ([`HooksTrust`]).

use std::path::{Path, PathBuf};

use super::agent::{Agent, Scope};
use super::paths::resolved;
use crate::Result;

/// Where in a worktree an agent finds a project's hooks file, which decides where a
/// project-scope install puts it and which sessions it reaches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProjectHooks {
    /// At the worktree's top, found from wherever in it the agent starts (Codex reads
    /// `.codex/` from the project root down; Cursor, Cline and Copilot CLI take the
    /// workspace or the repository): one install covers every session of the worktree.
    AtTheTop,
    /// Only in the directory the agent is started in (Claude Code, Gemini CLI): an
    /// install covers the sessions started there, and no other.
    InTheStartDirectory,
}

/// Whether the agent runs the hooks an install put in place, as far as its own trust
/// settings say.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HooksTrust {
    /// The agent runs hooks without asking the user first (or git-checkpoint knows of no
    /// such setting of it).
    NotNeeded,
    /// The user trusted exactly these hooks.
    Trusted,
    /// The agent does not trust the project `project` and loads none of its settings.
    ProjectUntrusted {
        /// The project's directory.
        project: PathBuf,
    },
    /// The user has not trusted these hooks yet: the agent skips them.
    Untrusted,
    /// The hooks changed since the user trusted them (a reinstall that rewrote them):
    /// the agent skips them until they are trusted again.
    Changed,
    /// The user turned one of them off in the agent.
    Disabled,
}

/// Whether `agent`, started in `started_in`, runs the hooks installed for `scope` at
/// `hooks_file`: the user's own settings reach every session, a project's only those
/// started where the agent looks for them ([`ProjectHooks`]). For a project's hooks,
/// fails when `started_in` is not in a worktree.
pub fn hooks_cover(
    agent: &dyn Agent,
    scope: Scope,
    hooks_file: &Path,
    started_in: &Path,
) -> Result<bool> {
    if scope == Scope::Global {
        return Ok(true);
    }
    let read_there = agent.hooks_path(scope, started_in)?;
    Ok(resolved(&read_there) == resolved(hooks_file))
}
