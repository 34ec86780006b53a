//! Hooks that make an AI coding agent save a checkpoint around each of its steps.
//!
//! Supported: Claude Code (`claude`), Cline (`cline`), Codex CLI (`codex`), GitHub
//! Copilot CLI (`copilot`), Cursor (`cursor`) and Gemini CLI (`gemini`), each an
//! [`Agent`] in the registry [`AGENTS`], which is all the binary knows of them. Installing
//! edits the agent's own JSON settings or hooks file (through `settings_file`, which
//! rewrites it changing only our hooks; for Cline, which has one executable file per
//! event instead, it writes small wrapper scripts of ours) so that the agent runs
//! `git checkpoint hooks run <agent>` at each step. Two file layouts are shared: Claude Code's events of matcher groups
//! (`hook_groups`: Claude Code, Codex CLI, Gemini CLI) and a flat list of hooks per
//! event (`hook_list`: Cursor, Copilot CLI); `paths` finds each file without following a
//! symlink out of the directory it belongs to. A hook run reads the event the agent
//! writes on stdin, finds the worktree the agent works in, saves it with the session and
//! event as metadata, and then runs the automatic gc that `save` runs. It must never
//! stop the agent, so what goes wrong is appended to the worktree's hooks log
//! ([`hooks_log`]) instead of being reported. Beside the agents, `git` installs a
//! plain git `post-commit` hook that records each commit on a checkpoint; [`exclude`]
//! keeps a personal settings file an install writes out of `git status`; [`reach`] says
//! which sessions installed hooks reach and whether the agent trusts them.
//! [`mcp_registration`] registers `git checkpoint mcp` in an agent's configuration
//! (`mcp_json` for JSON files, `mcp_toml` for Codex's), as the agent's
//! [`Agent::mcp`] says; what a registration is made of, which all three name, is in
//! [`mcp_entry`], and the plain types every agent file shares ([`Scope`],
//! [`HooksState`], …) in `kinds`, both below the rest so that every import runs one
//! way. Every file either install may write in a worktree is listed by
//! [`worktree_files`], from the registry alone: the layers below are handed that list
//! (through `ops::workspace::Workspace::new`) and never checkpoint or restore those
//! files.

mod agent;
mod claude;
mod cline;
mod codex;
pub mod codex_trust;
mod copilot;
mod cursor;
pub mod event;
pub mod exclude;
mod gemini;
mod git;
mod hook_groups;
mod hook_list;
pub mod hooks_log;
mod kinds;
pub mod mcp_entry;
mod mcp_json;
pub mod mcp_registration;
mod mcp_toml;
mod notice;
mod paths;
pub mod reach;
mod settings_file;
mod transcript;

pub use agent::{Agent, HookRun};
pub use hooks_log::HOOKS_LOG;
pub use kinds::{HookKind, HooksState, Installed, Scope};

use crate::git::repo::AgentFiles;

/// Every agent git-checkpoint hooks into, in the order `hooks install --help` lists
/// them: the only list of agents. Adding an agent is its module (an [`Agent`], which
/// also says where its MCP servers go and which of its files a checkpoint leaves out)
/// and one line here.
pub static AGENTS: &[&dyn Agent] = &[
    &claude::Claude,
    &cline::Cline,
    &codex::Codex,
    &copilot::Copilot,
    &cursor::Cursor,
    &gemini::Gemini,
    &git::Git,
];

/// The agent called `name` on the command line (`claude`, …, `git`).
pub fn find(name: &str) -> Option<&'static dyn Agent> {
    AGENTS.iter().copied().find(|agent| agent.name() == name)
}

/// Every file that `hooks install` or `mcp install` may write inside a worktree, for
/// every agent: the agents' set-up, which no checkpoint holds and no restore changes.
/// The hooks files of an agent that reads a project's hooks in the directory it starts
/// in ([`reach::ProjectHooks::InTheStartDirectory`]) count in any directory, since `hooks
/// install` run there writes them there; a project's MCP file only at the top. Handed to `ops::workspace::Workspace::new` by
/// whoever makes one, since the layers below the agents cannot ask them
/// (docs/design.md invariant 16).
pub fn worktree_files() -> AgentFiles {
    let mut files = AgentFiles::default();
    for agent in AGENTS {
        let hooks_anywhere = agent.project_hooks() == kinds::ProjectHooks::InTheStartDirectory;
        let hooks = agent
            .worktree_hook_files()
            .into_iter()
            .map(|file| (file, hooks_anywhere));
        // `mcp install` writes a project's entry at the top only.
        let project_mcp = agent.mcp().and_then(|mcp| mcp.project);
        for (file, anywhere) in hooks.chain(project_mcp.map(|file| (file.to_string(), false))) {
            let list = match anywhere {
                true => &mut files.in_any_directory,
                false => &mut files.at_top,
            };
            if !list.iter().any(|known| *known == file.as_bytes()) {
                list.push(file.into_bytes());
            }
        }
    }
    files
}
