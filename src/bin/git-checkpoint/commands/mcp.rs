//! `git checkpoint mcp`: its help text; the server is `crate::mcp`, which `cli.rs` runs
//! (it sits above the commands, whose functions its tools call).

/// Serve the checkpoints to an AI agent over MCP (the Model Context Protocol) on stdio.
///
/// The agent starts this command itself, as its configuration says (docs/mcp.md gives
/// each agent's), and then has these tools: list_checkpoints, list_sessions, show,
/// diff, save, restore (whole tree or paths, with dry_run; unsaved changes are saved as
/// a safety checkpoint first) and pin. So "undo your last two steps" is a
/// list_checkpoints and a restore to @~2, done by the agent.
///
/// The worktree is the one around -C, else around the client's first root (MCP
/// roots/list), else around the working directory; each tool also takes `repo`, a path
/// inside the worktree. The store is opened for each call and closed after it, so an
/// idle server never keeps a hook or another command waiting. stdout carries only the
/// protocol; logs go to stderr.
///
/// Examples:
///
///   git checkpoint mcp
///
///   git checkpoint -C ~/src/project mcp --read-only
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Offer only the tools that change nothing: list_checkpoints, list_sessions, show
    /// and diff.
    #[arg(long)]
    pub read_only: bool,
}
