//! The shape of `doctor`: each agent's checks, then the worktree's.

use serde::Serialize;

use git_checkpoint::doctor::{Finding, Report};

/// `doctor`.
#[derive(Debug, Serialize)]
pub struct DoctorJson {
    /// Whether no check found a problem (notes are not problems); the exit status is 0
    /// exactly then.
    pub ok: bool,
    /// How many checks found a problem.
    pub problems: usize,
    /// Every agent of `hooks install`, in its order, set up or not.
    pub agents: Vec<DoctorAgentJson>,
    /// The worktree doctor ran in; null outside one.
    pub worktree: Option<DoctorWorktreeJson>,
}

/// One agent's checks.
#[derive(Debug, Serialize)]
pub struct DoctorAgentJson {
    /// Its name on the command line (`claude`, `codex`, …, `git`).
    pub agent: &'static str,
    /// What it is (`Claude Code`).
    pub about: &'static str,
    /// Whether its hooks or its MCP server are set up anywhere doctor looks; an agent
    /// that is not has no checks.
    pub set_up: bool,
    /// Its checks, in order.
    pub checks: Vec<CheckJson>,
}

/// The worktree's checks.
#[derive(Debug, Serialize)]
pub struct DoctorWorktreeJson {
    /// The top of the worktree.
    pub root: String,
    /// Its checks, in order.
    pub checks: Vec<CheckJson>,
}

/// One check.
#[derive(Debug, Serialize)]
pub struct CheckJson {
    /// What was checked: `hooks`, `reach`, `trust`, `path`, `mcp`, `store`,
    /// `last-save`, `hooks-log` or `watcher`.
    pub check: &'static str,
    /// `ok`, `note` or `problem`.
    pub status: &'static str,
    /// What was found.
    pub message: String,
    /// The one command that fixes it; null when there is none to run.
    pub fix: Option<String>,
}

impl CheckJson {
    fn new(finding: &Finding) -> Self {
        CheckJson {
            check: finding.check.name(),
            status: finding.status.name(),
            message: finding.message.clone(),
            fix: finding.fix.clone(),
        }
    }
}

impl DoctorJson {
    /// The JSON view of doctor's report.
    pub fn new(report: &Report) -> Self {
        let checks = |findings: &[Finding]| findings.iter().map(CheckJson::new).collect();
        let problems = report.problems();
        DoctorJson {
            ok: problems == 0,
            problems,
            agents: report
                .agents
                .iter()
                .map(|agent| DoctorAgentJson {
                    agent: agent.agent.name(),
                    about: agent.agent.about(),
                    set_up: agent.set_up,
                    checks: checks(&agent.findings),
                })
                .collect(),
            worktree: report.worktree.as_ref().map(|worktree| DoctorWorktreeJson {
                root: worktree.root.display().to_string(),
                checks: checks(&worktree.findings),
            }),
        }
    }
}
