//! `git checkpoint doctor`

use std::io::IsTerminal;
use std::path::Path;

use git_checkpoint::doctor::{self, Finding, Report, Status};
use git_checkpoint::error::ErrorKind;
use git_checkpoint::text::escape_controls;

use crate::ui::failure::Failure;
use crate::ui::json::{self, DoctorJson};
use crate::ui::output::{colour_wanted, paint, style};

/// Check that the checkpoints will be made: each agent's set-up, and the worktree's.
///
/// An agent whose hooks cannot run goes on working and saves nothing, and nothing else
/// says so. For every agent `hooks install` knows, doctor reports: where its hooks are
/// (your personal file, the project's, your global one) and whether they are as this
/// version writes them; whether a session started in this directory runs them (Claude
/// Code and Gemini CLI read a project's hooks only in the directory they are started
/// in); whether the agent trusts them (Codex runs a hook only once you trusted it, and
/// `codex exec` skips an untrusted one without a word); whether git finds
/// `git-checkpoint` on PATH, which every hook runs (where it does not, each hook prints
/// "git: 'checkpoint' is not a git command" and saves nothing: ~/.cargo/bin missing
/// from PATH is the usual cause); and its MCP server entry (`mcp install`). An agent
/// with neither hooks nor an MCP entry is listed as not set up. Run doctor where you
/// start the agent, from the same shell: it checks the PATH it runs with, and the
/// sessions started in that directory.
///
/// In a worktree, it then checks: that the store opens and no restore was left half
/// done (a quick look: `git checkpoint verify` checks every record); what the last save
/// left out (files it could not read, files over checkpoint.maxFileSize); the failures
/// in <git-dir>/checkpoint/hooks.log since the last checkpoint; and whether a watcher
/// runs (or why none does: checkpoint.autoWatch, or the share of your inotify limits
/// that hook-started watchers may take).
///
/// Each check prints one line: ok, note (worth knowing; nothing stops a checkpoint) or
/// problem, and under a problem (and some notes) the one command that fixes it, to run
/// in this directory. Nothing is changed. Exit status 0 when no check found a problem,
/// 1 when one did; --json prints the checks as one document (docs/json.md).
///
/// `hooks install` runs the checks of the hooks it installed (which sessions they
/// reach, the agent's trust, PATH) and prints each one that is not ok as a warning.
///
/// Examples:
///
///   git checkpoint doctor
///
///   git checkpoint -C packages/web doctor
///
///   git checkpoint doctor --json | jq -r '.agents[].checks[] | select(.status == "problem") | .fix'
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `doctor` for a user in `start` (the directory given with `-C`, or the current
/// one).
pub fn run(start: &Path, quiet: bool, as_json: bool, _args: Args) -> anyhow::Result<()> {
    let program = std::env::current_exe()?;
    let report = doctor::run(start, &program);
    if as_json {
        json::print(&DoctorJson::new(&report))?;
    } else if !quiet {
        let colour = colour_wanted(std::io::stdout().is_terminal());
        for line in text(&report, colour) {
            println!("{line}");
        }
    }
    // The set-up is wrong: each problem names the command that fixes it.
    match report.problems() {
        0 => Ok(()),
        1 => Err(Failure::error(ErrorKind::Config, "doctor found 1 problem")),
        n => Err(Failure::error(
            ErrorKind::Config,
            format!("doctor found {n} problems"),
        )),
    }
}

/// The report as lines for a person: each agent that is set up with its checks, the
/// others in one line, then the worktree's checks.
fn text(report: &Report, colour: bool) -> Vec<String> {
    let mut lines = Vec::new();
    let mut not_set_up = Vec::new();
    for agent in &report.agents {
        if !agent.set_up {
            not_set_up.push(agent.agent.name());
            continue;
        }
        lines.push(format!("{} ({})", agent.agent.about(), agent.agent.name()));
        lines.extend(agent.findings.iter().flat_map(|f| finding_lines(f, colour)));
    }
    if !not_set_up.is_empty() {
        lines.push(format!(
            "Not set up: {} (`git checkpoint hooks install <agent>` sets one up)",
            not_set_up.join(", ")
        ));
    }
    match &report.worktree {
        Some(worktree) => {
            lines.push(format!(
                "Worktree {}",
                escape_controls(&worktree.root.display().to_string())
            ));
            lines.extend(
                worktree
                    .findings
                    .iter()
                    .flat_map(|f| finding_lines(f, colour)),
            );
        }
        None => lines
            .push("Not in a git worktree: only the agents' own settings were checked".to_string()),
    }
    if report.problems() == 0 {
        lines.push("No problems found".to_string());
    }
    lines
}

/// Width of the status column (`problem`) and the check column (`last-save`).
const STATUS_WIDTH: usize = 8;
const CHECK_WIDTH: usize = 10;

/// A finding's line, and its fix's under it.
fn finding_lines(finding: &Finding, colour: bool) -> Vec<String> {
    let status = finding.status.name();
    let painted = match finding.status {
        Status::Ok => paint(status, style::NEW, colour),
        Status::Note => paint(status, style::ID, colour),
        Status::Problem => paint(status, style::OLD, colour),
    };
    let pad = " ".repeat(STATUS_WIDTH.saturating_sub(status.len()));
    let mut lines = vec![format!(
        "  {painted}{pad} {:<CHECK_WIDTH$} {}",
        finding.check.name(),
        escape_controls(&finding.message)
    )];
    if let Some(fix) = &finding.fix {
        lines.push(format!(
            "  {:STATUS_WIDTH$} {:CHECK_WIDTH$} fix: {}",
            "",
            "",
            escape_controls(fix)
        ));
    }
    lines
}

/// A finding as `hooks install` warns of it: its message, and the fix after it.
pub fn warning(finding: &Finding) -> String {
    match &finding.fix {
        Some(fix) => format!("{} (fix: {fix})", finding.message),
        None => finding.message.clone(),
    }
}
