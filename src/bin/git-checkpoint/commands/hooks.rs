//! `git checkpoint hooks`

use std::io::Read;
use std::path::Path;

use git_checkpoint::agents::claude;
use git_checkpoint::git::repo::Repo;

/// Save checkpoints around every step of an AI coding agent.
///
/// `hooks install claude` adds two hooks to Claude Code's settings: a save when you
/// submit a prompt (UserPromptSubmit), and one after every tool that can change files
/// (PostToolUse for Edit, Write, MultiEdit, NotebookEdit and Bash). Because the whole
/// worktree is saved, edits made through shell commands are captured too. Each
/// checkpoint carries agent=claude, session=<id>, event=<hook event> and tool=<tool> as
/// metadata (see `log --json`). Existing hooks are kept, and `hooks uninstall claude`
/// removes exactly what install added.
///
/// Examples:
///
///   git checkpoint hooks install claude
///
///   git checkpoint hooks install claude --global
///
///   git checkpoint hooks uninstall claude
#[derive(Debug, clap::Args)]
pub struct Args {
    /// What to do.
    #[command(subcommand)]
    action: Action,
}

#[derive(Debug, clap::Subcommand)]
enum Action {
    Install(InstallArgs),
    Uninstall(UninstallArgs),
    Run(RunArgs),
}

/// The agents with hooks.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
enum Agent {
    /// Claude Code.
    Claude,
}

/// Add the checkpoint hooks to an agent's settings.
///
/// For Claude Code: merges the hooks into .claude/settings.json at the top of the
/// worktree (created if missing), or with --global into ~/.claude/settings.json, keeping
/// every other setting and hook, the key order and the indentation. Installing twice
/// changes nothing.
///
/// Examples:
///
///   git checkpoint hooks install claude
///
///   git checkpoint hooks install claude --global
#[derive(Debug, clap::Args)]
struct InstallArgs {
    /// The agent.
    agent: Agent,
    /// The user's settings (~/.claude/settings.json) instead of the worktree's.
    #[arg(long)]
    global: bool,
}

/// Remove the checkpoint hooks from an agent's settings.
///
/// Takes out exactly what `hooks install` added: other hooks and settings stay, and a
/// file that install created goes again.
///
/// Examples:
///
///   git checkpoint hooks uninstall claude
///
///   git checkpoint hooks uninstall claude --global
#[derive(Debug, clap::Args)]
struct UninstallArgs {
    /// The agent.
    agent: Agent,
    /// The user's settings (~/.claude/settings.json) instead of the worktree's.
    #[arg(long)]
    global: bool,
}

/// Save a checkpoint for an agent's hook event (the command the hooks run).
///
/// Reads the event JSON the agent writes on stdin (Claude Code: session_id,
/// hook_event_name, tool_name, cwd, …) and saves the worktree at `cwd` with that as
/// metadata. It prints nothing and always exits 0, so it can never stop the agent;
/// failures are appended to <git-dir>/checkpoint/hooks.log.
///
/// Examples:
///
///   git checkpoint hooks run claude < recorded-event.json
///
///   git checkpoint log --json | jq '.[0].meta'
#[derive(Debug, clap::Args)]
struct RunArgs {
    /// The agent whose event arrives on stdin.
    agent: Agent,
}

/// Runs `hooks`; `start` is the directory given with `-C`, or the current one.
pub fn run(start: &Path, quiet: bool, args: Args) -> anyhow::Result<()> {
    let say = |line: String| {
        if !quiet {
            println!("{line}");
        }
    };
    match args.action {
        Action::Install(InstallArgs {
            agent: Agent::Claude,
            global,
        }) => {
            let path = settings_path(start, global)?;
            if claude::install_claude(&path)? {
                say(format!(
                    "Installed the checkpoint hooks in {}",
                    path.display()
                ));
            } else {
                say(format!(
                    "The checkpoint hooks are already in {}",
                    path.display()
                ));
            }
        }
        Action::Uninstall(UninstallArgs {
            agent: Agent::Claude,
            global,
        }) => {
            let path = settings_path(start, global)?;
            if claude::uninstall_claude(&path)? {
                say(format!(
                    "Removed the checkpoint hooks from {}",
                    path.display()
                ));
            } else {
                say(format!("No checkpoint hooks in {}", path.display()));
            }
        }
        Action::Run(RunArgs {
            agent: Agent::Claude,
        }) => {
            let mut input = Vec::new();
            // An unreadable stdin leaves the input empty, which fails and is logged.
            let _ = std::io::stdin().read_to_end(&mut input);
            // Never fail the agent: the library logged what went wrong.
            let _ = claude::run_claude(&input, start);
        }
    }
    Ok(())
}

fn settings_path(start: &Path, global: bool) -> anyhow::Result<std::path::PathBuf> {
    let root = if global {
        None
    } else {
        Some(Repo::discover(start)?.root)
    };
    Ok(claude::claude_settings_path(root.as_deref())?)
}
