//! Gemini CLI's side of the agent hooks.
//!
//! Gemini CLI reads hooks from the `hooks` object of its settings files, laid out as
//! Claude Code's are (geminicli.com/docs/hooks/reference): the project's
//! `.gemini/settings.json` (its hooks run only in a trusted folder) and the user's
//! `~/.gemini/settings.json`. It runs each hook command with a JSON description of the
//! event on stdin — `session_id`, `transcript_path`, `cwd`, `hook_event_name`,
//! `timestamp`, and per event `prompt` (`BeforeAgent`) or `tool_name`, `tool_input`,
//! `tool_response` (`AfterTool`) — and parses the hook's stdout as JSON, so a hook run
//! prints [`GEMINI_HOOK_OUTPUT`] and nothing else. Installing ([`Gemini`]) adds a save
//! when the user submits a prompt (`BeforeAgent`) and one after each tool that can
//! change files (`AfterTool` for `write_file`, `replace` and `run_shell_command`, the
//! names in gemini-cli's `packages/core/src/tools/definitions/base-declarations.ts`, and
//! for our MCP server's tools), and one just before each of those that names no file it
//! changes (`BeforeTool` for `run_shell_command` and our MCP tools, whose checkpoints
//! then bracket the call); uninstalling takes out exactly those. Gemini CLI reads a
//! project's `.gemini/settings.json` only in the directory it is started in, so that is
//! where an install puts it.
//!
//! `AfterTool` fires whether or not the tool succeeded; a failed tool's `tool_response`
//! carries an `error` object, which is what marks the step failed. A shell command that
//! exits non-zero is not an error to Gemini CLI (only one that cannot run is), so it is
//! not recorded as failed. The payload has no tool call id, so Gemini's steps cannot be
//! named as `<session>:<tool_use_id>`; `<session>:prompt<N>` works as for every agent.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use super::agent::{system_message, Agent, HookRun};
use super::event::{AgentEvent, Payload, Step};
use super::hook_groups::HookGroups;
use super::kinds::{HooksState, Installed, ProjectHooks, Scope};
use super::mcp_entry::{Directory, Format, McpConfig, UserFile};
use super::paths::{agent_home, start_dir_or_home_file};
use crate::Result;

/// The settings file, from the worktree's top or the home directory.
const GEMINI_SETTINGS: &str = ".gemini/settings.json";

/// The command the Gemini CLI hooks run.
pub const GEMINI_HOOK_COMMAND: &str = "git checkpoint hooks run gemini";
/// The tools a checkpoint is saved after: Gemini CLI's tools that can change files, and
/// every tool of our MCP server, which Gemini CLI names `mcp_checkpoint_<tool>`. Gemini
/// CLI tests every matcher as an unanchored regular expression, so it is anchored.
pub const GEMINI_FILE_TOOLS: &str = "^(write_file|replace|run_shell_command|mcp_checkpoint_.+)$";
/// What a hook run prints: Gemini CLI parses a hook's stdout as JSON, and an empty object
/// asks for nothing (the tool result and the turn go on unchanged).
pub const GEMINI_HOOK_OUTPUT: &str = "{}";
/// The tools a checkpoint is also saved before (`BeforeTool`): those of
/// [`GEMINI_FILE_TOOLS`] whose payload names no file they change (the shell, our MCP
/// server's tools).
pub const GEMINI_UNNAMING_TOOLS: &str = "^(run_shell_command|mcp_checkpoint_.+)$";
/// The hook events and the tool matcher of each (`None`: the event takes no matcher).
const GEMINI_EVENTS: [(&str, Option<&str>); 3] = [
    ("BeforeAgent", None),
    ("BeforeTool", Some(GEMINI_UNNAMING_TOOLS)),
    ("AfterTool", Some(GEMINI_FILE_TOOLS)),
];
/// The milliseconds Gemini CLI gives our hook (its default is 60000); a hook run waits
/// for the store at most `checkpoint.hookLockTimeout`, far less.
const GEMINI_HOOK_TIMEOUT_MS: u64 = 30_000;

/// Our hooks as they stand in Gemini CLI's settings; `name` is what Gemini's `/hooks`
/// lists them as.
const GEMINI_HOOKS: HookGroups = HookGroups {
    agent: "Gemini CLI",
    command: GEMINI_HOOK_COMMAND,
    events: &GEMINI_EVENTS,
    handler: || {
        serde_json::json!({
            "name": "git-checkpoint",
            "type": "command",
            "command": GEMINI_HOOK_COMMAND,
            "timeout": GEMINI_HOOK_TIMEOUT_MS,
        })
    },
};

/// Gemini CLI: hooks in the project's `.gemini/settings.json` (Gemini CLI has no
/// separate personal project file, so [`Scope::Personal`] names it too) or the user's
/// `~/.gemini/settings.json`. Gemini accepts comments in its settings; a file with
/// comments is refused as not valid JSON rather than rewritten without them.
pub struct Gemini;

impl Agent for Gemini {
    fn name(&self) -> &'static str {
        "gemini"
    }

    fn about(&self) -> &'static str {
        "Gemini CLI"
    }

    fn hooks_path(&self, scope: Scope, start: &Path) -> Result<PathBuf> {
        start_dir_or_home_file(scope, start, Path::new(GEMINI_SETTINGS))
    }

    fn worktree_hook_files(&self) -> Vec<String> {
        vec![GEMINI_SETTINGS.to_string()]
    }

    /// `mcpServers` in the same settings file as the hooks (`.gemini/settings.json`, or
    /// `~/.gemini/settings.json`, on macOS too: geminicli.com/docs/reference/configuration
    /// puts only the system files under `/Library/Application Support/GeminiCli/`).
    fn mcp(&self) -> Option<McpConfig> {
        Some(McpConfig {
            project: Some(GEMINI_SETTINGS),
            user: UserFile {
                env: None,
                home: ".gemini",
                file: "settings.json",
            },
            format: Format::Json {
                fixed: &[],
                after: &[],
            },
            directory: Directory::Project,
        })
    }

    /// Gemini CLI reads the `.gemini/settings.json` of the directory it is started in
    /// (its workspace), not of the directories above it (Gemini CLI 0.61.0, started in a
    /// subdirectory, ran none of the top's hooks).
    fn project_hooks(&self) -> ProjectHooks {
        ProjectHooks::InTheStartDirectory
    }

    fn install(&self, path: &Path) -> Result<Installed> {
        GEMINI_HOOKS.install(path)
    }

    fn uninstall(&self, path: &Path) -> Result<bool> {
        GEMINI_HOOKS.uninstall(path)
    }

    fn hooks_state(&self, path: &Path) -> Result<HooksState> {
        GEMINI_HOOKS.state(path)
    }

    /// Prints [`GEMINI_HOOK_OUTPUT`] whatever became of the save, so that the agent goes
    /// on.
    fn run(&self, input: &[u8], fallback_dir: &Path) -> Result<HookRun> {
        Ok(HookRun::save(
            GeminiEvent::read(input),
            fallback_dir,
            GEMINI_HOOK_OUTPUT,
        ))
    }
    /// Gemini CLI shows a hook's `systemMessage` to the user (its hooks reference, "Common output fields"), in the JSON it requires.
    fn reply_with_notice(&self, _reply: &str, notice: &str) -> Option<String> {
        Some(system_message(notice))
    }
}

/// The fields of Gemini CLI's hook input that a save records.
#[derive(Debug, Default, Deserialize)]
pub struct GeminiEvent {
    /// The session.
    pub session_id: Option<String>,
    /// `BeforeAgent`, `AfterTool`, …
    pub hook_event_name: Option<String>,
    /// The tool that ran (`AfterTool`).
    pub tool_name: Option<String>,
    /// The tool's arguments: `file_path` for the file tools, `command` for the shell.
    pub tool_input: Option<Value>,
    /// The tool's result; it holds `error` when the tool failed.
    pub tool_response: Option<Value>,
    /// The directory Gemini CLI works in.
    pub cwd: Option<PathBuf>,
    /// The session's transcript file.
    pub transcript_path: Option<String>,
    /// The prompt the user submitted (`BeforeAgent`).
    pub prompt: Option<String>,
}

impl Payload for GeminiEvent {
    fn into_event(self) -> AgentEvent {
        let failed = self
            .tool_response
            .as_ref()
            .and_then(|response| response.get("error"))
            .is_some_and(|error| !error.is_null());
        let step = match self.hook_event_name.as_deref() {
            Some("BeforeAgent") => Step::Prompt,
            Some("AfterTool") => Step::Tool { failed },
            Some("BeforeTool") => Step::BeforeTool,
            _ => Step::Other,
        };
        let input = self.tool_input.as_ref();
        let text = |key: &str| input?.get(key)?.as_str().map(str::to_string);
        AgentEvent {
            agent: "gemini",
            session: self.session_id,
            event: self.hook_event_name,
            step,
            prompt: self.prompt,
            tool: self.tool_name,
            tool_use_id: None,
            prompt_id: None,
            subagent: None,
            files: text("file_path").into_iter().collect(),
            command: text("command"),
            cwd: self.cwd,
            transcript: self.transcript_path,
            transcript_dirs: transcript_dirs(),
        }
    }
}

/// Where Gemini CLI keeps its transcripts: `.gemini/tmp/` in its home, `$GEMINI_CLI_HOME`
/// or the user's (one `chats/session-*.json` per session in a directory per project).
pub(super) fn transcript_dirs() -> Vec<PathBuf> {
    agent_home("GEMINI_CLI_HOME", "")
        .map(|home| home.join(".gemini/tmp"))
        .into_iter()
        .collect()
}
