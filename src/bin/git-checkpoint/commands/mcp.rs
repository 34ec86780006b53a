//! `git checkpoint mcp`: its help text, and `mcp install` / `mcp uninstall`, which
//! register the server in an agent's configuration. The server itself is `crate::mcp`,
//! which `cli.rs` runs (it sits above the commands, whose functions its tools call).

use std::path::Path;

use git_checkpoint::agents::mcp_registration::{self, McpScope, Registered, SERVER_NAME};

use super::hooks::AgentArg;

/// Serve the checkpoints to an AI agent over MCP (the Model Context Protocol) on stdio.
///
/// The agent starts this command itself, as its configuration says (`mcp install
/// <agent>` writes that), and then has these tools: list_checkpoints, list_sessions,
/// show, diff, save, restore (whole tree, paths, or only a session's files, with
/// dry_run; unsaved changes are saved as a safety checkpoint first), revert (undo one
/// step, a turn or a range, keeping what came after) and pin. So "undo your last two
/// steps" is a list_checkpoints and a restore to @~2, done by the agent.
///
/// The worktree is the one around -C, else around the client's first root (MCP
/// roots/list), else around the working directory; each tool also takes `repo`, a path
/// inside that worktree or inside one of the client's roots, and nothing else. A read
/// never creates a store. The store is opened for each call and closed after it, so an
/// idle server never keeps a hook or another command waiting. stdout carries only the
/// protocol; logs go to stderr.
///
/// Examples:
///
///   git checkpoint mcp
///
///   git checkpoint -C ~/src/project mcp --read-only
///
///   git checkpoint mcp install claude
///
///   git checkpoint mcp uninstall codex --scope user
#[derive(Debug, clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    /// Register the server with an agent, or remove it (without one: serve).
    #[command(subcommand)]
    pub action: Option<Action>,
    /// Offer only what changes nothing: list_checkpoints, list_sessions, show and diff,
    /// and restore and revert for their dry runs.
    #[arg(long)]
    pub read_only: bool,
}

/// `mcp install` and `mcp uninstall`.
#[derive(Debug, clap::Subcommand)]
pub enum Action {
    Install(RegisterArgs),
    Uninstall(UnregisterArgs),
}

/// Register `git checkpoint mcp` as an MCP server, named `checkpoint`, in an agent's
/// configuration.
///
/// The entry runs `git-checkpoint mcp`: in the project's file, `git-checkpoint` as the
/// agent finds it on its PATH (as the hooks' `git checkpoint` is), so the file can be
/// committed; in the user's file (--scope user), this git-checkpoint's absolute path.
/// Files and shapes, per agent (docs/mcp.md gives each one's documentation):
///
/// claude: .mcp.json at the top of the worktree (--scope user: ~/.claude.json),
/// `mcpServers.checkpoint = {type: "stdio", command, args}`.
///
/// codex: .codex/config.toml (--scope user: ~/.codex/config.toml, or $CODEX_HOME),
/// `[mcp_servers.checkpoint]` with command and args; comments and layout are kept.
///
/// copilot: .github/mcp.json (--scope user: ~/.copilot/mcp-config.json, or
/// $COPILOT_HOME), `{type: "local", command, args, tools: ["*"]}`.
///
/// cursor: .cursor/mcp.json (--scope user: ~/.cursor/mcp.json), with `-C
/// ${workspaceFolder}`, which Cursor expands to the project it has open.
///
/// gemini: .gemini/settings.json (--scope user: ~/.gemini/settings.json).
///
/// cline: only ~/.cline/data/settings/cline_mcp_settings.json (the default scope for
/// Cline is user). Cline starts servers in `/`, so the entry names this worktree with
/// -C.
///
/// Only our entry changes: every other byte of the file is kept (other servers,
/// comments, layout, numbers as written). A server named `checkpoint` that this install
/// did not write is never replaced: install refuses; so it does for a symlink, a
/// read-only file, or a JSON file with a key written twice. Installing twice changes
/// nothing. The project's file is the agent's set-up: no checkpoint holds it and no
/// restore changes it.
///
/// Examples:
///
///   git checkpoint mcp install claude
///
///   git checkpoint mcp install codex --scope user
///
///   git checkpoint mcp install cline
#[derive(Debug, clap::Args)]
pub struct RegisterArgs {
    /// The agent.
    #[arg(value_enum)]
    agent: AgentArg,
    /// The project's file (default; Cline has only a user file) or the user's.
    #[arg(long, value_enum)]
    scope: Option<ScopeArg>,
}

/// Remove the `checkpoint` server that `mcp install` added to an agent's
/// configuration.
///
/// Only an entry exactly as this git-checkpoint writes it is removed, then the servers
/// table if it is left empty, then the file if nothing else is in it: the file is again
/// as it was before the install.
///
/// Examples:
///
///   git checkpoint mcp uninstall claude
///
///   git checkpoint mcp uninstall codex --scope user
#[derive(Debug, clap::Args)]
pub struct UnregisterArgs {
    /// The agent.
    #[arg(value_enum)]
    agent: AgentArg,
    /// The project's file (default; Cline has only a user file) or the user's.
    #[arg(long, value_enum)]
    scope: Option<ScopeArg>,
}

/// `--scope`.
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
enum ScopeArg {
    /// The worktree's file: this project only.
    Project,
    /// The user's file in the home directory: every project.
    User,
}

/// Runs `mcp install` or `mcp uninstall`, from directory `start`.
pub fn register(start: &Path, quiet: bool, action: Action) -> anyhow::Result<()> {
    let (agent, scope, install) = match action {
        Action::Install(RegisterArgs { agent, scope }) => (agent, scope, true),
        Action::Uninstall(UnregisterArgs { agent, scope }) => (agent, scope, false),
    };
    let target = mcp_registration::target(agent.0)?;
    let scope = match scope {
        Some(ScopeArg::Project) => McpScope::Project,
        Some(ScopeArg::User) => McpScope::User,
        None => target.default_scope(),
    };
    let path = target.path(scope, start)?;
    let program = std::env::current_exe()?;
    let (entry, older) = target.entries(scope, &program, start)?;
    let line = if install {
        match target.install(&path, &entry, &older)? {
            Registered::Added => format!(
                "Registered the MCP server '{SERVER_NAME}' for {} in {}",
                agent.0.name(),
                path.display()
            ),
            Registered::AlreadyThere => format!(
                "The MCP server '{SERVER_NAME}' is already registered for {} in {}",
                agent.0.name(),
                path.display()
            ),
        }
    } else {
        match target.uninstall(&path, &entry, &older)? {
            true => format!(
                "Removed the MCP server '{SERVER_NAME}' from {}",
                path.display()
            ),
            false => format!(
                "No MCP server '{SERVER_NAME}' of this install in {}",
                path.display()
            ),
        }
    };
    if !quiet {
        println!("{line}");
    }
    Ok(())
}
