//! The plain words every agent file shares: which file an install edits ([`Scope`]),
//! what it puts in place ([`HookKind`]) and what it did ([`Installed`]), whether our hooks
//! are in a file ([`HooksState`]), where a project's hooks are read ([`ProjectHooks`])
//! and whether the agent trusts them ([`HooksTrust`]). Data only, below every other
//! agent file, so that any of them can name these without importing the [`Agent`]
//! trait or the files it leans on.
//!
//! [`Agent`]: super::Agent

use std::path::PathBuf;

/// Which of an agent's settings files `hooks install` and `hooks uninstall` edit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// The worktree's personal file where the agent has one (Claude Code's
    /// `.claude/settings.local.json`, not committed, so teammates without git-checkpoint
    /// get no failing hook); the shared one for the agents that have no personal file.
    Personal,
    /// The worktree's shared file, committed with the project.
    Shared,
    /// The user's own file in the home directory: every project of the user.
    Global,
}

/// What `hooks install` puts in place, which decides what else an install does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HookKind {
    /// An agent's hooks: they run `hooks run <agent>` at each step, and an install in a
    /// worktree saves the state before the agent's first prompt.
    Agent,
    /// git's `post-commit` hook: it runs `git checkpoint save` itself after each commit.
    GitCommit,
}

/// What an install did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Installed {
    /// Our hooks were there already, exactly as this build writes them: nothing changed.
    AlreadyThere,
    /// Our hooks were added (replacing what an older build wrote).
    Added {
        /// The user's own hook that ours runs first, where one is (git's `post-commit`,
        /// moved aside by the install); `None` for every agent.
        runs_first: Option<PathBuf>,
    },
}

impl Installed {
    /// `Added` (with nothing run first) when `added`, else `AlreadyThere`: what the
    /// settings-file layouts report as a bool.
    pub(super) fn added(added: bool) -> Installed {
        match added {
            true => Installed::Added { runs_first: None },
            false => Installed::AlreadyThere,
        }
    }
}

/// Whether our hooks are in a hooks file, as [`Agent::hooks_state`](super::Agent::hooks_state) finds them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HooksState {
    /// None of ours is there.
    Missing,
    /// Ours are there, exactly as this build installs them.
    Current,
    /// Some of ours are there, but not as this build writes them (an older build's, or
    /// some taken out by hand): `hooks install` replaces them.
    Outdated,
}

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
