//! One agent's set-up, as the agent will find it: its hooks in each scope's file (and,
//! for an agent that reads a project's hooks only in the directory it is started in,
//! at the worktree's top too), whether they reach a session started here and whether
//! the agent trusts them ([`installed_hooks`], which `hooks install` also reports), and
//! its MCP server entry in the project's and the user's file. Only what the registry's
//! [`Agent`] says is asked: no agent is named here.

use std::path::{Path, PathBuf};

use super::path::find_program;
use super::{AgentReport, Check, Finding, Status};
use crate::agents::mcp_registration::{self, Entry, McpScope, Registration, SERVER_NAME};
use crate::agents::reach::{self, HooksTrust, ProjectHooks};
use crate::agents::{Agent, HookKind, HooksState, Scope};
use crate::format::path::shell_word;
use crate::git::repo::Repo;

/// The hooks files doctor looks in, in this order.
const SCOPES: [Scope; 3] = [Scope::Personal, Scope::Shared, Scope::Global];

/// Every check of `agent` for a session started in `start`: its hooks, what would keep
/// them from running there, `on_path` (whether git finds `git-checkpoint`, the same for
/// every agent) and its MCP server entry. `program` is the running `git-checkpoint`,
/// which a user's MCP entry names. An agent with neither hooks nor an MCP entry is not
/// set up, and has no findings.
pub fn check(
    agent: &'static dyn Agent,
    start: &Path,
    program: &Path,
    on_path: &Finding,
) -> AgentReport {
    let hooks = hooks_found(agent, start);
    let mcp = mcp_found(agent, start, program);
    let set_up = !hooks.is_empty() || !mcp.is_empty();
    let mut findings = Vec::new();
    if set_up {
        findings.extend(hook_findings(agent, start, &hooks, !mcp.is_empty()));
        findings.push(on_path.clone());
        if agent.mcp().is_some() {
            findings.extend(mcp_findings(agent, &mcp));
        }
    }
    AgentReport {
        agent,
        set_up,
        findings,
    }
}

/// A hooks file of the agent that holds ours (or could not be read).
struct FoundHooks {
    scope: Scope,
    path: PathBuf,
    state: crate::Result<HooksState>,
}

/// The agent's hooks files that hold ours, or could not be read: each scope's for a
/// session started in `start`, and for an agent that reads a project's hooks only in
/// the directory it is started in, the worktree top's too (there, they do not reach
/// `start`, which [`installed_hooks`] says).
fn hooks_found(agent: &dyn Agent, start: &Path) -> Vec<FoundHooks> {
    let top = match agent.project_hooks() {
        ProjectHooks::InTheStartDirectory => Repo::discover(start).ok().map(|repo| repo.root),
        ProjectHooks::AtTheTop => None,
    };
    let mut places: Vec<(Scope, PathBuf)> = Vec::new();
    for scope in SCOPES {
        let here = agent.hooks_path(scope, start).ok();
        let at_top = top
            .as_deref()
            .filter(|_| scope != Scope::Global)
            .and_then(|top| agent.hooks_path(scope, top).ok());
        for path in here.into_iter().chain(at_top) {
            // Codex, Cursor, Copilot CLI and Cline have one project file for both scopes.
            if !places.iter().any(|(_, known)| *known == path) {
                places.push((scope, path));
            }
        }
    }
    places
        .into_iter()
        .map(|(scope, path)| FoundHooks {
            state: agent.hooks_state(&path),
            scope,
            path,
        })
        .filter(|found| !matches!(found.state, Ok(HooksState::Missing)))
        .collect()
}

/// The findings of the hooks `found`; `mcp_registered` says whether the agent has an MCP
/// entry (no hooks beside one is a problem: the agent's steps are not saved, and its
/// tools show a history without them).
fn hook_findings(
    agent: &dyn Agent,
    start: &Path,
    found: &[FoundHooks],
    mcp_registered: bool,
) -> Vec<Finding> {
    let mut findings = Vec::new();
    let about = agent.about();
    for hooks in found {
        let shown = hooks.path.display();
        match &hooks.state {
            Err(e) => findings.push(
                Finding::new(
                    Check::Hooks,
                    Status::Problem,
                    format!("cannot read the hooks in {shown}: {e}"),
                )
                .fixed_by(install_command(agent, hooks.scope)),
            ),
            Ok(HooksState::Outdated) => findings.push(
                Finding::new(
                    Check::Hooks,
                    Status::Problem,
                    format!(
                        "the hooks in {shown} are not as this version writes them (an older \
                         version's, or changed by hand): install replaces them"
                    ),
                )
                .fixed_by(install_command(agent, hooks.scope)),
            ),
            Ok(_) => findings.push(Finding::new(
                Check::Hooks,
                Status::Ok,
                format!("hooks in {shown}{}", scope_label(agent, hooks.scope)),
            )),
        }
        if hooks.state.is_ok() {
            findings.extend(installed_hooks(agent, hooks.scope, &hooks.path, start));
        }
    }
    if found.is_empty() && mcp_registered && agent.kind() == HookKind::Agent {
        findings.push(
            Finding::new(
                Check::Hooks,
                Status::Problem,
                format!(
                    "no hooks: {about}'s steps are not saved, though its MCP server is \
                     registered (it would show the agent a history with no trace of its \
                     sessions)"
                ),
            )
            .fixed_by(install_command(agent, Scope::Personal)),
        );
    }
    findings
}

/// What would keep the hooks installed for `scope` at `hooks_file` from running for a
/// session of `agent` started in `start`: a session the agent starts there does not
/// read them (a problem), reads them only there (a note: not in the subdirectories), or
/// the agent wants the user to trust them first. `hooks install` reports these after
/// installing, and `doctor` for every hooks file it finds.
pub fn installed_hooks(
    agent: &dyn Agent,
    scope: Scope,
    hooks_file: &Path,
    start: &Path,
) -> Vec<Finding> {
    let mut findings = Vec::new();
    let (about, name) = (agent.about(), agent.name());
    let here = std::fs::canonicalize(start).unwrap_or_else(|_| start.to_path_buf());
    if scope != Scope::Global && agent.kind() == HookKind::Agent {
        findings.push(match reach::hooks_cover(agent, scope, hooks_file, start) {
            Err(e) => Finding::new(
                Check::Reach,
                Status::Problem,
                format!(
                    "cannot tell which sessions run the hooks in {}: {e}",
                    hooks_file.display()
                ),
            ),
            Ok(false) => Finding::new(
                Check::Reach,
                Status::Problem,
                format!(
                    "{about} started in {} does not run the hooks in {}: it reads a \
                     project's hooks only in the directory it is started in",
                    here.display(),
                    hooks_file.display()
                ),
            )
            .fixed_by(install_command(agent, scope)),
            Ok(true) if agent.project_hooks() == ProjectHooks::InTheStartDirectory => Finding::new(
                Check::Reach,
                Status::Note,
                format!(
                    "{about} runs these hooks only in a session started in {}, not in \
                         one started in a subdirectory or anywhere else: run `git checkpoint \
                         hooks install {name}` in each directory you start it in, or install \
                         with --global",
                    here.display()
                ),
            ),
            Ok(true) => Finding::new(
                Check::Reach,
                Status::Ok,
                format!("{about} started anywhere in this worktree runs these hooks"),
            ),
        });
    }
    // Where to start the agent to trust them: the project the hooks file is in (for the
    // user's own file, anywhere).
    let project = (scope != Scope::Global)
        .then(|| hooks_file.parent().and_then(Path::parent))
        .flatten();
    let review = match project {
        Some(dir) => format!(
            "cd {} && {name}",
            shell_word(dir.as_os_str().as_encoded_bytes())
        ),
        None => name.to_string(),
    };
    let trust = |message: String| {
        Finding::new(Check::Trust, Status::Problem, message).fixed_by(review.clone())
    };
    match agent.hooks_trust(scope, hooks_file) {
        Err(e) => findings.push(Finding::new(
            Check::Trust,
            Status::Problem,
            format!("cannot tell whether {about} trusts these hooks: {e}"),
        )),
        Ok(HooksTrust::NotNeeded) => {}
        Ok(HooksTrust::Trusted) => findings.push(Finding::new(
            Check::Trust,
            Status::Ok,
            format!("{about} trusts these hooks"),
        )),
        Ok(HooksTrust::ProjectUntrusted { project }) => findings.push(trust(format!(
            "{about} does not trust this project ({}) and loads none of its settings, these \
             hooks included: start it there and trust the project when it asks, then trust \
             the hooks",
            project.display()
        ))),
        Ok(HooksTrust::Untrusted) => findings.push(trust(format!(
            "{about} runs these hooks only once you trust them, and `{name} exec` skips \
             untrusted hooks without a word: start it, and where it says \"Hooks need \
             review\" choose \"Trust all and continue\" (or review them in /hooks)"
        ))),
        Ok(HooksTrust::Changed) => findings.push(trust(format!(
            "these hooks changed since you trusted them, and {about} skips them until you \
             trust them again: start it, and where it says \"Hooks need review\" choose \
             \"Trust all and continue\""
        ))),
        Ok(HooksTrust::Disabled) => findings.push(trust(format!(
            "one of these hooks is turned off in {about}, which skips it: start it and turn \
             it on again in /hooks"
        ))),
    }
    findings
}

/// The agent's MCP entries named [`SERVER_NAME`]: in the project's file (in a worktree)
/// and in the user's, with the file each is in, or why a file could not be read.
fn mcp_found(
    agent: &dyn Agent,
    start: &Path,
    program: &Path,
) -> Vec<(McpScope, PathBuf, crate::Result<Registration>)> {
    let Ok(target) = mcp_registration::target(agent) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for scope in [McpScope::Project, McpScope::User] {
        if scope == McpScope::Project && target.config.project.is_none() {
            continue;
        }
        // Outside a worktree there is no project file; nor a user's file without its
        // directory.
        let Ok(Some(path)) = target.existing_path(scope, start) else {
            continue;
        };
        // Outside a worktree an entry naming it cannot be ours; any other is still read.
        let (entry, older) = target.entries(scope, program, start).unwrap_or((
            Entry {
                command: String::new(),
                args: Vec::new(),
            },
            Vec::new(),
        ));
        match target.registration(&path, &entry, &older) {
            Ok(None) => {}
            Ok(Some(registration)) => found.push((scope, path, Ok(registration))),
            Err(e) => found.push((scope, path, Err(e))),
        }
    }
    found
}

/// The findings of the MCP entries `found`: none is a note (the agent cannot undo its
/// own steps, but every step is saved), one whose program is not there a problem.
fn mcp_findings(
    agent: &dyn Agent,
    found: &[(McpScope, PathBuf, crate::Result<Registration>)],
) -> Vec<Finding> {
    let (about, name) = (agent.about(), agent.name());
    if found.is_empty() {
        return vec![Finding::new(
            Check::Mcp,
            Status::Note,
            format!(
                "no MCP server registered: {about} cannot list, diff or undo its own steps \
                 itself"
            ),
        )
        .fixed_by(format!("git checkpoint mcp install {name}"))];
    }
    let install = |scope| match scope {
        McpScope::Project => format!("git checkpoint mcp install {name} --scope project"),
        McpScope::User => format!("git checkpoint mcp install {name} --scope user"),
    };
    found
        .iter()
        .map(|(scope, path, registration)| {
            let shown = path.display();
            let registration = match registration {
                Ok(registration) => registration,
                Err(e) => {
                    return Finding::new(
                        Check::Mcp,
                        Status::Problem,
                        format!("cannot read the MCP servers in {shown}: {e}"),
                    )
                }
            };
            let command = registration.command.as_deref().unwrap_or_default();
            let yours = match registration.ours {
                true => "",
                false => " (not the entry this git-checkpoint writes)",
            };
            if find_program(command).is_some() {
                return Finding::new(
                    Check::Mcp,
                    Status::Ok,
                    format!("the MCP server '{SERVER_NAME}' is registered in {shown}{yours}"),
                );
            }
            let remove_first = match registration.ours {
                true => String::new(),
                false => format!(
                    ", and install replaces only the entry it writes: remove this one from \
                     {shown} first"
                ),
            };
            Finding::new(
                Check::Mcp,
                Status::Problem,
                format!(
                    "the MCP server '{SERVER_NAME}' in {shown} runs `{command}`, which is not \
                     there{}, so {about} cannot start it{remove_first}",
                    match command.contains('/') {
                        true => "",
                        false => " on PATH",
                    }
                ),
            )
            .fixed_by(install(*scope))
        })
        .collect()
}

/// `git checkpoint hooks install <agent>` with the flag that names `scope`'s file.
fn install_command(agent: &dyn Agent, scope: Scope) -> String {
    let flag = match scope {
        Scope::Personal => "",
        Scope::Shared => " --shared",
        Scope::Global => " --global",
    };
    format!("git checkpoint hooks install {}{flag}", agent.name())
}

/// What a hooks file of `scope` is, as a finding names it.
fn scope_label(agent: &dyn Agent, scope: Scope) -> &'static str {
    match scope {
        Scope::Global => " (yours: every project)",
        _ if agent.is_personal(scope) => " (yours, not committed)",
        _ => " (the project's)",
    }
}
