//! `git checkpoint hooks`

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use git_checkpoint::agents::{self, exclude, Agent, HookKind, Installed, Scope};
use git_checkpoint::doctor::{self, Status};
use git_checkpoint::git::repo::Repo;
use git_checkpoint::settings::Settings;
use git_checkpoint::text::escape_controls;
use git_checkpoint::watch;

/// Save checkpoints around every step of an AI coding agent.
///
/// `hooks install claude` adds hooks to Claude Code's settings: a save when you submit a
/// prompt (UserPromptSubmit; always a checkpoint, also when nothing changed, so every
/// prompt can be named), and one after every tool that can change files, whether it
/// succeeded or failed (PostToolUse and PostToolUseFailure for Edit, Write, MultiEdit,
/// NotebookEdit, Bash, PowerShell and the tools of git-checkpoint's own MCP server, so
/// that the agent's revert through MCP is a step too), and one just before each tool that
/// names no file it changes (PreToolUse for Bash, PowerShell and the MCP tools: with the
/// one after it, it brackets what the call changed, which `restore --only-session` counts
/// as the session's). Because the whole worktree is saved, edits made
/// through shell commands are captured too. Each checkpoint carries agent=claude,
/// session=<id>, prompt=<number in the session>, event, tool, tool_use_id, failed=true,
/// path (the file, from the worktree top), transcript and transcript_bytes (the
/// transcript file and its length then) as metadata, where the event gives them (see
/// `log --json`). `<session>:prompt<N>` names the checkpoint before prompt N
/// (`git checkpoint sessions` lists sessions). Existing hooks are kept, and
/// `hooks uninstall claude` removes exactly what install added.
///
/// `hooks install codex` does the same for Codex CLI (UserPromptSubmit, PreToolUse for
/// Bash and our MCP tools, and PostToolUse for those and apply_patch, in
/// .codex/hooks.json), `hooks install copilot` for GitHub Copilot CLI
/// (userPromptSubmitted, PreToolUse, postToolUse and postToolUseFailure, in
/// .github/hooks/git-checkpoint.json), `hooks install cursor` for Cursor
/// (beforeSubmitPrompt, afterFileEdit, before/afterShellExecution and
/// before/afterMCPExecution, in .cursor/hooks.json), `hooks install gemini` for Gemini
/// CLI (BeforeAgent, BeforeTool for run_shell_command and our MCP tools, and AfterTool for
/// those, write_file and replace, in .gemini/settings.json), and `hooks install cline`
/// for Cline (UserPromptSubmit, PreToolUse and PostToolUse wrapper scripts in
/// .clinerules/hooks/);
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

/// An agent named on the command line: one of the registry's, [`agents::AGENTS`].
#[derive(Clone, Copy)]
pub struct AgentArg(pub &'static dyn Agent);

impl std::fmt::Debug for AgentArg {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0.name())
    }
}

impl clap::ValueEnum for AgentArg {
    fn value_variants<'a>() -> &'a [Self] {
        static ALL: OnceLock<Vec<AgentArg>> = OnceLock::new();
        ALL.get_or_init(|| {
            agents::AGENTS
                .iter()
                .map(|agent| AgentArg(*agent))
                .collect()
        })
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        Some(clap::builder::PossibleValue::new(self.0.name()).help(self.0.about()))
    }
}

/// Add the checkpoint hooks to an agent's settings.
///
/// For Claude Code: merges the hooks into .claude/settings.local.json of the directory
/// you run it in (your own, not committed: teammates without git-checkpoint get no
/// failing hook), with --shared into the committed .claude/settings.json there, or with
/// --global into ~/.claude/settings.json. Claude Code reads a project's settings only
/// from the directory it is started in, so run it in each directory you start Claude
/// Code in (the top of the worktree, a package folder), or use --global; install says
/// which sessions the hooks reach. The file is created if missing, and every other
/// setting and
/// hook, the key order and the indentation are kept. A settings file that is a symlink
/// leading outside the worktree (outside the home directory for --global) is refused.
///
/// For Codex CLI: merges the hooks into .codex/hooks.json at the top of the worktree
/// (with or without --shared; Codex has no personal per-project file), which Codex
/// started anywhere in the worktree reads, or with --global into ~/.codex/hooks.json.
/// Codex runs them only in a trusted project and once you trust the hooks themselves:
/// start `codex` in the project and choose "Trust all and continue" where it says
/// "Hooks need review" (or review them in /hooks). `codex exec` skips untrusted hooks
/// without a word, so install says so until ~/.codex/config.toml trusts exactly these
/// hooks; a reinstall that changes them needs that trust again.
///
/// For GitHub Copilot CLI: writes its own file, .github/hooks/git-checkpoint.json
/// (with or without --shared; Copilot CLI has no personal per-repository file), or with
/// --global ~/.copilot/hooks/git-checkpoint.json ($COPILOT_HOME/hooks if that is set).
///
/// For Cursor: merges the hooks into .cursor/hooks.json at the top of the worktree
/// (with or without --shared; Cursor has no personal per-project file), or with --global
/// into ~/.cursor/hooks.json.
///
/// For Gemini CLI: merges the hooks into .gemini/settings.json of the directory you run
/// it in (with or without --shared; Gemini CLI has no personal per-project file), which
/// is the one Gemini CLI started there reads, or with --global into
/// ~/.gemini/settings.json. Gemini CLI runs project hooks only in a trusted folder.
///
/// For Cline: writes three executable scripts, UserPromptSubmit, PreToolUse and
/// PostToolUse, each
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
/// prompt is always there (not for git). Then it warns of what would still stop the
/// hooks from working, as `git checkpoint doctor` checks it: sessions started where the
/// agent does not read them, trust the agent wants first, and git finding no
/// git-checkpoint on PATH (every hook would fail), each with the command that fixes
/// it. Hook runs start the worktree's watcher when none runs (see `hooks run --help`);
/// `git config checkpoint.autoWatch false` turns that off.
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
    agent: AgentArg,
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
    fn scope(&self) -> Scope {
        match (self.shared, self.global) {
            (_, true) => Scope::Global,
            (true, false) => Scope::Shared,
            (false, false) => Scope::Personal,
        }
    }
}

/// Remove the checkpoint hooks from an agent's settings.
///
/// Takes out exactly what `hooks install` added: other hooks and settings stay, and a
/// file that install created goes again. For git, the post-commit hook install moved
/// aside comes back as it was; a hook of ours edited since is left alone. In a worktree,
/// the watcher hook runs started there is stopped (one you started yourself stays).
///
/// Examples:
///
///   git checkpoint hooks uninstall claude
///
///   git checkpoint hooks uninstall claude --global
#[derive(Debug, clap::Args)]
struct UninstallArgs {
    /// The agent.
    agent: AgentArg,
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
/// Files it cannot read (root's, from docker or sudo) are left out of the checkpoint and
/// listed on it as skipped. Once per session, Claude Code, Codex CLI and Gemini CLI are
/// told so, and that a save failed, in a {"systemMessage": …} reply, which they show the
/// user; for the other agents it is in the hooks log only.
///
/// After the save, unless `checkpoint.autoWatch` is false, it starts the worktree's
/// watcher in the background when none runs (see `watch --help`), without waiting for
/// it: the following saves ask it what changed instead of looking at every file. That
/// watcher exits once the worktree was idle for `checkpoint.watchIdleExit` (default
/// 30m), or when the worktree is removed; a failure to start it goes to
/// <git-dir>/checkpoint/watch/log.
///
/// Examples:
///
///   git checkpoint hooks run claude < recorded-event.json
///
///   git checkpoint log --json | jq '.[0].meta'
#[derive(Debug, clap::Args)]
struct RunArgs {
    /// The agent whose event arrives on stdin.
    agent: AgentArg,
}

/// Runs `hooks`; `start` is the directory given with `-C`, or the current one.
pub fn run(start: &Path, quiet: bool, args: Args) -> anyhow::Result<()> {
    let say = |line: String| {
        if !quiet {
            println!("{line}");
        }
    };
    let warn = |line: String| {
        if !quiet {
            eprintln!("warning: {}", escape_controls(&line));
        }
    };
    match args.action {
        Action::Install(InstallArgs { agent, scope }) => {
            let target = Target::new(start, agent.0, &scope)?;
            install(start, &say, &warn, &target)?;
            // What would still stop the hooks from working, as `doctor` finds it: sessions
            // started where the agent does not read them, trust it wants first, a PATH
            // on which git finds no git-checkpoint.
            if !quiet {
                let reach =
                    doctor::agent::installed_hooks(agent.0, target.scope, &target.path, start);
                let path = doctor::path::check(&std::env::current_exe()?);
                for finding in reach.iter().chain([&path]) {
                    if finding.status != Status::Ok {
                        warn(super::doctor::warning(finding));
                    }
                }
            }
            Ok(())
        }
        Action::Uninstall(UninstallArgs { agent, scope }) => {
            uninstall(start, &say, &Target::new(start, agent.0, &scope)?)
        }
        Action::Run(RunArgs { agent }) => run_hook(start, agent.0),
    }
}

/// What `hooks install` and `hooks uninstall` edit: an agent's hooks file for a scope.
struct Target {
    agent: &'static dyn Agent,
    scope: Scope,
    /// The file (Cline's: the directory) the agent's hooks go in.
    path: PathBuf,
}

impl Target {
    fn new(start: &Path, agent: &'static dyn Agent, scope: &ScopeArgs) -> anyhow::Result<Target> {
        let scope = scope.scope();
        let path = agent.hooks_path(scope, start)?;
        Ok(Target { agent, scope, path })
    }

    /// The hooks file, relative to the worktree's top, when it is the user's own and so
    /// kept out of git: Claude Code's `.claude/settings.local.json` ("personal, not
    /// committed").
    fn personal_file(&self, repo: &Repo) -> Option<PathBuf> {
        self.agent
            .is_personal(self.scope)
            .then(|| {
                self.path
                    .strip_prefix(&repo.root)
                    .ok()
                    .map(Path::to_path_buf)
            })
            .flatten()
    }
}

/// `hooks install`: our hooks into the file `scope` names, then, for an agent in a
/// worktree, its personal file kept out of git and a first checkpoint.
fn install(
    start: &Path,
    say: &dyn Fn(String),
    warn: &dyn Fn(String),
    target: &Target,
) -> anyhow::Result<()> {
    let Target { agent, path, .. } = target;
    let installed = agent.install(path)?;
    if agent.kind() == HookKind::GitCommit {
        match installed {
            Installed::Added { runs_first } => {
                say(format!(
                    "Installed the post-commit hook in {}",
                    path.display()
                ));
                if let Some(before) = runs_first {
                    say(format!(
                        "Your own hook is now {} and runs first",
                        before.display()
                    ));
                }
            }
            Installed::AlreadyThere => say(format!(
                "The post-commit hook is already in {}",
                path.display()
            )),
        }
        return Ok(());
    }
    match installed {
        Installed::Added { .. } => say(format!(
            "Installed the checkpoint hooks in {}",
            path.display()
        )),
        Installed::AlreadyThere => say(format!(
            "The checkpoint hooks are already in {}",
            path.display()
        )),
    }
    // The state before the first prompt: there is always a checkpoint to go back to, and
    // the first hook does not pay for the first full save.
    if let Ok(repo) = Repo::discover(start) {
        if let Some(personal) = target.personal_file(&repo) {
            if exclude::add(&repo, &personal)? {
                say(format!(
                    "Added {} to the repository's info/exclude: it is yours, not the project's",
                    personal.display()
                ));
            }
        }
        let started = std::time::Instant::now();
        let first = agents::event::save_before_first_prompt(&repo, agent.name())?;
        // What it left out (a file this user cannot read, one too large) is left out of
        // every hook run's checkpoint too: said here once, where a person reads it.
        for warning in &first.warnings {
            warn(warning.to_string());
        }
        say(format!(
            "Saved checkpoint {} as the state before the agent's first prompt ({:.2} s)",
            &first.id.hex()[..7],
            started.elapsed().as_secs_f64()
        ));
        // Said only where hook runs will start one: not with the key off, nor where this
        // system has no watcher.
        let settings = Settings::of(&repo);
        if settings.auto_watch.get().unwrap_or(true) && watch::platform::available().is_ok() {
            say(
                "Hook runs start a watcher of this worktree so that saves need not walk it \
                 (`git config checkpoint.autoWatch false` turns that off)"
                    .to_string(),
            );
        }
    }
    Ok(())
}

/// `hooks uninstall`: exactly what install added, and the personal file's exclude line.
fn uninstall(start: &Path, say: &dyn Fn(String), target: &Target) -> anyhow::Result<()> {
    let Target { agent, path, .. } = target;
    let removed = agent.uninstall(path)?;
    if let Ok(repo) = Repo::discover(start) {
        if let Some(personal) = target.personal_file(&repo) {
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
    // The watcher hook runs started would otherwise run until idle; one the user started
    // stays.
    if let Ok(repo) = Repo::discover(start) {
        if let Some(pid) = watch::start::stop_hook_started(&repo)? {
            say(format!("Stopped the watcher hook runs started (pid {pid})"));
        }
    }
    Ok(())
}

/// `hooks run`: one hook run, which never fails the agent (the library logged what went
/// wrong); prints what the agent reads on stdout, for the agents that read it.
fn run_hook(start: &Path, agent: &dyn Agent) -> anyhow::Result<()> {
    let mut input = Vec::new();
    // An unreadable stdin leaves the input empty, which fails and is logged.
    let _ = std::io::stdin().read_to_end(&mut input);
    let run = agent.run(&input, start)?;
    let answer = run.answer(agent);
    if !answer.is_empty() {
        println!("{answer}");
    }
    // After the save: the watcher's first look over the worktree does not compete with
    // it, and this run does not wait for the watcher (the next saves use it).
    if let Some(workspace) = &run.workspace {
        if let Ok(program) = std::env::current_exe() {
            let span = git_checkpoint::trace::span("watch: auto-start");
            let started = watch::start::auto_start(&workspace.repo, &workspace.settings, &program);
            drop(span);
            git_checkpoint::trace::note(format_args!("watch: auto-start: {started:?}"));
        }
    }
    Ok(())
}
