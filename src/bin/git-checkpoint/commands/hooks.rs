//! `git checkpoint hooks`

use std::io::Read;
use std::path::{Path, PathBuf};

use git_checkpoint::agents::{claude, cline, codex, copilot, cursor, exclude, gemini, git};
use git_checkpoint::git::repo::Repo;

/// Save checkpoints around every step of an AI coding agent.
///
/// `hooks install claude` adds hooks to Claude Code's settings: a save when you submit a
/// prompt (UserPromptSubmit; always a checkpoint, also when nothing changed, so every
/// prompt can be named), and one after every tool that can change files, whether it
/// succeeded or failed (PostToolUse and PostToolUseFailure for Edit, Write, MultiEdit,
/// NotebookEdit, Bash and PowerShell). Because the whole worktree is saved, edits made
/// through shell commands are captured too. Each checkpoint carries agent=claude,
/// session=<id>, prompt=<number in the session>, event, tool, tool_use_id, failed=true,
/// path (the file, from the worktree top), transcript and transcript_bytes (the
/// transcript file and its length then) as metadata, where the event gives them (see
/// `log --json`). `<session>:prompt<N>` names the checkpoint before prompt N
/// (`git checkpoint sessions` lists sessions). Existing hooks are kept, and
/// `hooks uninstall claude` removes exactly what install added.
///
/// `hooks install codex` does the same for Codex CLI (UserPromptSubmit, and PostToolUse
/// for Bash and apply_patch, in .codex/hooks.json), `hooks install copilot` for GitHub
/// Copilot CLI (userPromptSubmitted, postToolUse and postToolUseFailure, in
/// .github/hooks/git-checkpoint.json), `hooks install cursor` for Cursor
/// (beforeSubmitPrompt, afterFileEdit and afterShellExecution, in .cursor/hooks.json),
/// `hooks install gemini` for Gemini CLI (BeforeAgent, and AfterTool for write_file,
/// replace and run_shell_command, in .gemini/settings.json), and `hooks install cline`
/// for Cline (UserPromptSubmit and PostToolUse wrapper scripts in .clinerules/hooks/);
/// their checkpoints carry agent=codex, copilot, cursor, gemini or cline and the same
/// keys where the event gives them.
/// See `hooks install --help` for each agent's files.
///
/// `hooks install git` installs a git post-commit hook instead: each commit saves a
/// checkpoint with commit=<the new commit> as metadata, so `git checkpoint log --all
/// --meta commit=<id>` finds the checkpoint of a commit.
///
/// Examples:
///
///   git checkpoint hooks install claude
///
///   git checkpoint hooks install claude --global
///
///   git checkpoint hooks install codex
///
///   git checkpoint hooks install cursor
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
    /// Cline.
    Cline,
    /// Codex CLI.
    Codex,
    /// GitHub Copilot CLI.
    Copilot,
    /// Cursor.
    Cursor,
    /// Gemini CLI.
    Gemini,
    /// git itself: a post-commit hook recording each commit (install and uninstall only).
    Git,
}

impl Agent {
    /// The agent's name, as its checkpoints record it (`agent=<name>`).
    fn name(self) -> &'static str {
        match self {
            Agent::Claude => "claude",
            Agent::Cline => "cline",
            Agent::Codex => "codex",
            Agent::Copilot => "copilot",
            Agent::Cursor => "cursor",
            Agent::Gemini => "gemini",
            Agent::Git => "git",
        }
    }
}

/// Add the checkpoint hooks to an agent's settings.
///
/// For Claude Code: merges the hooks into .claude/settings.local.json at the top of the
/// worktree (your own, not committed: teammates without git-checkpoint get no failing
/// hook), with --shared into the committed .claude/settings.json, or with --global into
/// ~/.claude/settings.json; the file is created if missing, and every other setting and
/// hook, the key order and the indentation are kept. A settings file that is a symlink
/// leading outside the worktree (outside the home directory for --global) is refused.
///
/// For Codex CLI: merges the hooks into .codex/hooks.json at the top of the worktree
/// (with or without --shared; Codex has no personal per-project file), or with --global
/// into ~/.codex/hooks.json. Codex runs project hooks only in a trusted project, after
/// you review them in /hooks.
///
/// For GitHub Copilot CLI: writes its own file, .github/hooks/git-checkpoint.json
/// (with or without --shared; Copilot CLI has no personal per-repository file), or with
/// --global ~/.copilot/hooks/git-checkpoint.json ($COPILOT_HOME/hooks if that is set).
///
/// For Cursor: merges the hooks into .cursor/hooks.json at the top of the worktree
/// (with or without --shared; Cursor has no personal per-project file), or with --global
/// into ~/.cursor/hooks.json.
///
/// For Gemini CLI: merges the hooks into .gemini/settings.json at the top of the
/// worktree (with or without --shared; Gemini CLI has no personal per-project file), or
/// with --global into ~/.gemini/settings.json. Gemini CLI runs project hooks only in a
/// trusted folder.
///
/// For Cline: writes two executable scripts, UserPromptSubmit and PostToolUse, each
/// running `git checkpoint hooks run cline`, into .clinerules/hooks/ at the top of the
/// worktree (with or without --shared), or with --global into ~/Documents/Cline/Hooks/.
/// A hook file of yours with one of those names is never replaced: install refuses and
/// writes nothing. Uninstall deletes only files holding exactly the script this version
/// writes.
///
/// For git: writes a post-commit hook where git looks for it (core.hooksPath if set,
/// else .git/hooks) that saves a checkpoint of the worktree after every commit, with
/// commit=<the new commit> and event=post-commit as metadata (the commit message is not
/// changed). An existing post-commit hook is moved aside, byte for byte, to
/// post-commit.before-checkpoint, and ours runs it first and keeps its exit status;
/// uninstall puts it back. --shared and --global do not apply.
///
/// Installing twice changes nothing; hooks of an older version are replaced. In a
/// worktree, install then saves a first checkpoint, so the state before the first
/// prompt is always there (not for git).
///
/// Examples:
///
///   git checkpoint hooks install claude
///
///   git checkpoint hooks install git
///
///   git checkpoint hooks install claude --global
///
///   git checkpoint hooks install copilot
///
///   git checkpoint hooks install cursor --global
///
///   git checkpoint hooks install gemini --global
#[derive(Debug, clap::Args)]
struct InstallArgs {
    /// The agent.
    agent: Agent,
    #[command(flatten)]
    scope: ScopeArgs,
}

/// Which settings file: the worktree's personal one unless one of these is given.
#[derive(Debug, clap::Args)]
struct ScopeArgs {
    /// The worktree's shared, committed settings (.claude/settings.json) instead of the
    /// personal .claude/settings.local.json (the other agents have only a shared file in
    /// the worktree, which is used either way).
    #[arg(long, conflicts_with = "global")]
    shared: bool,
    /// The user's settings (~/.claude/settings.json, ~/.codex/hooks.json,
    /// ~/.copilot/hooks/, ~/.cursor/hooks.json, ~/.gemini/settings.json,
    /// ~/Documents/Cline/Hooks/) instead of the worktree's.
    #[arg(long)]
    global: bool,
}

impl ScopeArgs {
    fn scope(&self) -> claude::SettingsScope {
        match (self.shared, self.global) {
            (_, true) => claude::SettingsScope::Global,
            (true, false) => claude::SettingsScope::Shared,
            (false, false) => claude::SettingsScope::Local,
        }
    }
}

/// Remove the checkpoint hooks from an agent's settings.
///
/// Takes out exactly what `hooks install` added: other hooks and settings stay, and a
/// file that install created goes again. For git, the post-commit hook install moved
/// aside comes back as it was; a hook of ours edited since is left alone.
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
    #[command(flatten)]
    scope: ScopeArgs,
}

/// Save a checkpoint for an agent's hook event (the command the hooks run).
///
/// Reads the event JSON the agent writes on stdin (Claude Code, Codex CLI and Gemini
/// CLI: session_id, hook_event_name, tool_name, cwd, …; Copilot CLI: sessionId, cwd,
/// toolName, toolArgs, …; Cursor: conversation_id, hook_event_name, workspace_roots,
/// file_path, …; Cline: taskId, hookName, workspaceRoots, postToolUse, …) and saves the
/// worktree at `cwd` (Cursor, Cline: the workspace root) with that as metadata. It
/// always exits 0, so it can never stop the agent, and prints nothing, except what an
/// agent reads on stdout: for Cursor's beforeSubmitPrompt the {"continue":true} Cursor
/// needs to send the prompt, for Gemini CLI `{}` after every event, and for Cline
/// {"cancel":false} after every event. Failures are appended to <git-dir>/checkpoint/hooks.log.
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
            agent: Agent::Git,
            scope,
        }) => {
            let path = settings_path(start, Agent::Git, &scope)?;
            if git::install_git_hook(&path)? {
                say(format!(
                    "Installed the post-commit hook in {}",
                    path.display()
                ));
                let mut before = path.clone().into_os_string();
                before.push(git::GIT_HOOK_BEFORE_SUFFIX);
                if Path::new(&before).exists() {
                    say(format!(
                        "Your own hook is now {} and runs first",
                        Path::new(&before).display()
                    ));
                }
            } else {
                say(format!(
                    "The post-commit hook is already in {}",
                    path.display()
                ));
            }
        }
        Action::Install(InstallArgs { agent, scope }) => {
            let path = settings_path(start, agent, &scope)?;
            let added = match agent {
                Agent::Claude => claude::install_claude(&path)?,
                Agent::Cline => cline::install_cline(&path)?,
                Agent::Codex => codex::install_codex(&path)?,
                Agent::Copilot => copilot::install_copilot(&path)?,
                Agent::Cursor => cursor::install_cursor(&path)?,
                Agent::Gemini => gemini::install_gemini(&path)?,
                Agent::Git => unreachable!("installed above"),
            };
            if added {
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
            // The state before the first prompt: there is always a checkpoint to go
            // back to, and the first hook does not pay for the first full save.
            if let Ok(repo) = Repo::discover(start) {
                if let Some(personal) = personal_settings(&repo, agent, &scope, &path) {
                    if exclude::add(&repo, &personal)? {
                        say(format!(
                            "Added {} to the repository's info/exclude: it is yours, not the project's",
                            personal.display()
                        ));
                    }
                }
                let started = std::time::Instant::now();
                let id =
                    git_checkpoint::agents::event::save_before_first_prompt(&repo, agent.name())?;
                say(format!(
                    "Saved checkpoint {} as the state before the agent's first prompt ({:.2} s)",
                    &id.hex()[..7],
                    started.elapsed().as_secs_f64()
                ));
            }
        }
        Action::Uninstall(UninstallArgs { agent, scope }) => {
            let path = settings_path(start, agent, &scope)?;
            let removed = match agent {
                Agent::Claude => claude::uninstall_claude(&path)?,
                Agent::Cline => cline::uninstall_cline(&path)?,
                Agent::Codex => codex::uninstall_codex(&path)?,
                Agent::Copilot => copilot::uninstall_copilot(&path)?,
                Agent::Cursor => cursor::uninstall_cursor(&path)?,
                Agent::Gemini => gemini::uninstall_gemini(&path)?,
                Agent::Git => git::uninstall_git_hook(&path)?,
            };
            if let Ok(repo) = Repo::discover(start) {
                if let Some(personal) = personal_settings(&repo, agent, &scope, &path) {
                    if exclude::remove(&repo, &personal)? {
                        say(format!(
                            "Took {} out of the repository's info/exclude again",
                            personal.display()
                        ));
                    }
                }
            }
            if removed {
                say(format!(
                    "Removed the checkpoint hooks from {}",
                    path.display()
                ));
            } else {
                say(format!("No checkpoint hooks in {}", path.display()));
            }
        }
        Action::Run(RunArgs { agent }) => {
            let mut input = Vec::new();
            // An unreadable stdin leaves the input empty, which fails and is logged.
            let _ = std::io::stdin().read_to_end(&mut input);
            // Never fail the agent: the library logged what went wrong.
            // What the agent reads on stdout, for the agents that read it, whatever
            // became of the save.
            let reply = match agent {
                Agent::Claude => {
                    let _ = claude::run_claude(&input, start);
                    ""
                }
                Agent::Codex => {
                    let _ = codex::run_codex(&input, start);
                    ""
                }
                Agent::Copilot => {
                    let _ = copilot::run_copilot(&input, start);
                    ""
                }
                Agent::Cline => cline::run_cline(&input, start).1,
                Agent::Cursor => cursor::run_cursor(&input, start).1,
                Agent::Gemini => gemini::run_gemini(&input, start).1,
                Agent::Git => anyhow::bail!(
                    "the git hook runs 'git checkpoint save' itself; 'hooks run' is for agents"
                ),
            };
            if !reply.is_empty() {
                println!("{reply}");
            }
        }
    }
    Ok(())
}

/// The settings or hooks file of `agent` that `scope` names.
/// The settings file, relative to the worktree's top, that is the user's own and so kept
/// out of git: Claude Code's `.claude/settings.local.json` ("personal, not committed").
fn personal_settings(repo: &Repo, agent: Agent, scope: &ScopeArgs, path: &Path) -> Option<PathBuf> {
    let personal = matches!(agent, Agent::Claude) && scope.scope() == claude::SettingsScope::Local;
    personal
        .then(|| path.strip_prefix(&repo.root).ok().map(Path::to_path_buf))
        .flatten()
}

fn settings_path(start: &Path, agent: Agent, scope: &ScopeArgs) -> anyhow::Result<PathBuf> {
    if let Agent::Git = agent {
        if scope.shared || scope.global {
            anyhow::bail!(
                "the git hook goes where git looks for this repository's hooks (core.hooksPath, else .git/hooks); --shared and --global do not apply"
            );
        }
        return Ok(git::git_hook_path(&Repo::discover(start)?)?);
    }
    let root = match scope.global {
        true => PathBuf::new(),
        false => Repo::discover(start)?.root,
    };
    Ok(match agent {
        Agent::Claude => claude::claude_settings_path(scope.scope(), &root)?,
        Agent::Cline => cline::cline_hooks_dir(scope.global, &root)?,
        Agent::Codex => codex::codex_hooks_path(scope.global, &root)?,
        Agent::Copilot => copilot::copilot_hooks_path(scope.global, &root)?,
        Agent::Cursor => cursor::cursor_hooks_path(scope.global, &root)?,
        Agent::Gemini => gemini::gemini_settings_path(scope.global, &root)?,
        Agent::Git => unreachable!("found above"),
    })
}
