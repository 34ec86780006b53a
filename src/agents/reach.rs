//! Which sessions installed hooks reach, and whether the agent runs them at all: the
//! questions `doctor` (`doctor::agent`) asks of every hooks file it finds, and
//! `hooks install` of the one it wrote.
//!
//! Two things make hooks that are in place run for no session, and say nothing of it
//! (issue 40, seen with the real programs). Claude Code and Gemini CLI read a project's
//! settings only from the directory they are started in: hooks at the worktree's top
//! do nothing for a session started in a package folder below it
//! ([`ProjectHooks::InTheStartDirectory`]). And Codex runs a hook only once the user has
//! trusted it, per path and content hash, in `~/.codex/config.toml` ([`HooksTrust`]).

use std::path::Path;

use super::agent::Agent;
use super::kinds::Scope;
use super::paths::resolved;
use crate::Result;

// The answers to this module's questions, defined with the other plain words (`kinds`)
// so that `Agent` names them without importing this module, which needs `Agent`.
pub use super::kinds::{HooksTrust, ProjectHooks};

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
