//! `doctor`: what would keep the checkpoints from being made, found by reading the
//! set-up, never by changing it. Nothing else tells the user: an agent whose hooks fail
//! (git finds no `git-checkpoint` on its PATH), or skips them (Codex before the user
//! trusted them, Claude Code started in a directory whose settings do not have them),
//! goes on working and saves nothing.
//!
//! Each check is a [`Finding`]: ok, a note (worth knowing, nothing broken) or a problem,
//! with the one command that fixes a problem. One module per concern:
//!
//! - [`agent`]: per agent of the registry (`agents::AGENTS`, the only list of them): its
//!   hooks and where they are, whether they reach sessions started here and whether the
//!   agent trusts them, its MCP server entry. [`agent::installed_hooks`] is also what
//!   `hooks install` says after an install.
//! - [`path`]: whether git finds `git-checkpoint`, which every hook runs, on PATH.
//! - [`store`]: the store opens, no restore was left half done, and what the last save
//!   left out (unreadable files, files over `checkpoint.maxFileSize`).
//! - [`hook_failures`]: the hooks log's failures since the last checkpoint.
//! - [`watcher`]: whether a watcher runs for the worktree, or why none does.

pub mod agent;
pub mod hook_failures;
pub mod path;
pub mod store;
pub mod watcher;

use std::path::{Path, PathBuf};

use crate::agents::{self, Agent};
use crate::ops::workspace::Workspace;

/// How a check came out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// As it should be.
    Ok,
    /// Worth knowing, but nothing stops a checkpoint (no MCP server, files left out on
    /// purpose, no watcher).
    Note,
    /// Something keeps checkpoints from being made, or leaves something out of them.
    Problem,
}

impl Status {
    /// `ok`, `note` or `problem`, as the output shows it.
    pub fn name(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Note => "note",
            Status::Problem => "problem",
        }
    }
}

/// What a finding is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Check {
    /// The agent's hooks: installed where, and as this build writes them.
    Hooks,
    /// Whether the hooks reach sessions started in the directory doctor runs in.
    Reach,
    /// Whether the agent runs the hooks without the user trusting them first, or has
    /// been told to trust them.
    Trust,
    /// Whether git finds `git-checkpoint` on PATH.
    Path,
    /// The agent's MCP server entry.
    Mcp,
    /// The store: it opens, no restore left half done.
    Store,
    /// What the last save left out.
    LastSave,
    /// The hooks log's failures.
    HooksLog,
    /// The worktree's watcher.
    Watcher,
}

impl Check {
    /// Its name in the output (`hooks`, `last-save`, …).
    pub fn name(self) -> &'static str {
        match self {
            Check::Hooks => "hooks",
            Check::Reach => "reach",
            Check::Trust => "trust",
            Check::Path => "path",
            Check::Mcp => "mcp",
            Check::Store => "store",
            Check::LastSave => "last-save",
            Check::HooksLog => "hooks-log",
            Check::Watcher => "watcher",
        }
    }
}

/// One check's outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// What was checked.
    pub check: Check,
    /// How it came out.
    pub status: Status,
    /// What was found, as one sentence for a person.
    pub message: String,
    /// The one command that fixes it, as the user types it in the directory doctor ran
    /// in; only for a problem or a note that has one.
    pub fix: Option<String>,
}

impl Finding {
    /// A finding with no fix.
    pub fn new(check: Check, status: Status, message: impl Into<String>) -> Finding {
        Finding {
            check,
            status,
            message: message.into(),
            fix: None,
        }
    }

    /// This finding, fixed by `command`.
    pub fn fixed_by(self, command: impl Into<String>) -> Finding {
        Finding {
            fix: Some(command.into()),
            ..self
        }
    }
}

/// What doctor found for one agent.
pub struct AgentReport {
    /// The agent.
    pub agent: &'static dyn Agent,
    /// Whether it is set up at all: its hooks or its MCP server are somewhere doctor
    /// looks. An agent that is not has no findings.
    pub set_up: bool,
    /// The checks, in the order shown.
    pub findings: Vec<Finding>,
}

/// What doctor found for the worktree it ran in.
pub struct WorktreeReport {
    /// The top of the worktree.
    pub root: PathBuf,
    /// The checks, in the order shown.
    pub findings: Vec<Finding>,
}

/// Everything doctor found.
pub struct Report {
    /// One per agent of the registry, in its order.
    pub agents: Vec<AgentReport>,
    /// The worktree's checks; `None` when doctor ran outside a worktree.
    pub worktree: Option<WorktreeReport>,
}

impl Report {
    /// Every finding, the agents' first.
    pub fn findings(&self) -> impl Iterator<Item = &Finding> {
        let agents = self.agents.iter().flat_map(|agent| &agent.findings);
        agents.chain(self.worktree.iter().flat_map(|worktree| &worktree.findings))
    }

    /// How many findings are problems.
    pub fn problems(&self) -> usize {
        self.findings()
            .filter(|finding| finding.status == Status::Problem)
            .count()
    }
}

/// Runs every check for a user in `start` (where they start their agents): each agent's
/// set-up, then, inside a worktree, the worktree's. `program` is the running
/// `git-checkpoint`, the one a user's MCP entry names and PATH should lead to.
pub fn run(start: &Path, program: &Path) -> Report {
    let path = path::check(program);
    let agents = agents::AGENTS
        .iter()
        .map(|agent| agent::check(*agent, start, program, &path))
        .collect();
    let worktree = Workspace::discover(start, agents::worktree_files())
        .ok()
        .map(|workspace| WorktreeReport {
            root: workspace.repo.root.clone(),
            findings: worktree_findings(&workspace),
        });
    Report { agents, worktree }
}

/// The worktree's checks: the store and the last save, the hooks log, the watcher.
fn worktree_findings(workspace: &Workspace) -> Vec<Finding> {
    let store = store::check(workspace);
    let mut findings = store.findings;
    findings.push(hook_failures::check(
        &workspace.repo,
        store.last_checkpoint_ns,
    ));
    findings.push(watcher::check(workspace));
    findings
}
