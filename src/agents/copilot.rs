//! GitHub Copilot CLI's side of the agent hooks.
//!
//! Copilot CLI loads every `.github/hooks/*.json` of the repository it runs in and every
//! `*.json` in the user's hooks directory (`~/.copilot/hooks/`, or `$COPILOT_HOME/hooks/`),
//! each a version 1 file mapping events to lists of `{"type": "command", "bash": …}`
//! hooks, and runs each with a JSON description of the event on stdin
//! (docs.github.com/en/copilot/reference/copilot-cli-reference/cli-hooks-reference and
//! docs.github.com/en/copilot/reference/hooks-configuration). Our hooks live in a file of
//! their own, `git-checkpoint.json` in one of those directories, so no file of the
//! user's is touched. Installing ([`Copilot`]) adds them to `userPromptSubmitted`,
//! `postToolUse`, `postToolUseFailure` and `PreToolUse`, and uninstalling takes out
//! exactly those. `PreToolUse` is spelled in PascalCase so that Copilot CLI sends its
//! snake_case payload, which names the event (`hook_event_name`): the camelCase
//! `preToolUse` payload would be told from a `postToolUse` one only by a missing
//! `toolResult`. It runs before every tool (the reference gives it no matcher), and a
//! checkpoint is saved only before a tool that names no file it changes (`bash`,
//! `powershell`, MCP tools): with the one after it, it brackets what the call changed.
//!
//! Confirmed against that documentation: the file format, `timeoutSec` (default 30), the
//! camelCase payloads (`sessionId`, `timestamp`, `cwd`, `prompt`, `toolName`, `toolArgs`
//! — a JSON string in the examples, "unknown" in the reference, so both are read —
//! `toolResult.resultType`, `error`), the snake_case ones sent when an event is
//! configured in PascalCase (`hook_event_name`, `session_id`, `tool_name`,
//! `tool_input`), and the tool names (`bash`, `create`, `edit`, …). The camelCase
//! payloads carry no event name, so the event is told by its fields: `prompt` for a
//! prompt, `error` for a failed tool, `toolName` for a tool. Older versions sent no
//! `sessionId` and reported a failed tool through `postToolUse` with
//! `resultType: "failure"`, which is read as a failure too. That the file tools name
//! their file in `path` is confirmed only by the documentation's example hook
//! (`jq -r '.toolArgs' | jq -r '.path'`); `file_path` is read as well.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use super::agent::{Agent, HookRun};
use super::event::{AgentEvent, Payload, Step};
use super::hook_list::HookList;
use super::kinds::{HooksState, Installed, Scope};
use super::mcp_entry::{Directory, Format, McpConfig, UserFile};
use super::paths::{agent_home, home_dir, settings_path_under, worktree_top};
use crate::Result;

/// The command the Copilot CLI hooks run.
pub const COPILOT_HOOK_COMMAND: &str = "git checkpoint hooks run copilot";
/// Our hooks file, in `.github/hooks/` or the user's hooks directory.
pub const COPILOT_HOOKS_FILE: &str = "git-checkpoint.json";
/// The project's hooks directory, from the worktree's top.
const COPILOT_PROJECT_HOOKS_DIR: &str = ".github/hooks";
/// The seconds Copilot CLI gives our hook (its default, said out loud). A hook run waits
/// for the store at most `checkpoint.hookLockTimeout` (5 s by default), far less.
const COPILOT_HOOK_TIMEOUT_SECONDS: u64 = 30;

/// The hooks file format and our hook in it.
const COPILOT_HOOKS: HookList = HookList {
    agent: "GitHub Copilot CLI",
    events: &[
        "userPromptSubmitted",
        "PreToolUse",
        "postToolUse",
        "postToolUseFailure",
    ],
    command_key: "bash",
    command: COPILOT_HOOK_COMMAND,
    hook: || {
        serde_json::json!({
            "type": "command",
            "bash": COPILOT_HOOK_COMMAND,
            "timeoutSec": COPILOT_HOOK_TIMEOUT_SECONDS,
        })
    },
};

/// Copilot CLI's tools that change no file (its hooks reference, "Tool names for hook
/// matching"): no checkpoint before them.
const COPILOT_READ_ONLY_TOOLS: &[&str] = &["ask_user", "glob", "grep", "view", "web_fetch"];

/// GitHub Copilot CLI: our own hooks file, `.github/hooks/git-checkpoint.json` in the
/// worktree (Copilot CLI has no personal per-repository file, so [`Scope::Personal`]
/// names it too), or `git-checkpoint.json` in the user's hooks directory
/// (`$COPILOT_HOME/hooks`, by default `~/.copilot/hooks`).
pub struct Copilot;

impl Agent for Copilot {
    fn name(&self) -> &'static str {
        "copilot"
    }

    fn about(&self) -> &'static str {
        "GitHub Copilot CLI"
    }

    fn hooks_path(&self, scope: Scope, start: &Path) -> Result<PathBuf> {
        let (base, dir) = match scope {
            Scope::Global => match std::env::var_os("COPILOT_HOME").filter(|home| !home.is_empty())
            {
                Some(home) => (PathBuf::from(home), Path::new("hooks")),
                None => (home_dir()?, Path::new(".copilot/hooks")),
            },
            Scope::Personal | Scope::Shared => {
                (worktree_top(start)?, Path::new(COPILOT_PROJECT_HOOKS_DIR))
            }
        };
        settings_path_under(&base, &dir.join(COPILOT_HOOKS_FILE))
    }

    fn worktree_hook_files(&self) -> Vec<String> {
        vec![format!("{COPILOT_PROJECT_HOOKS_DIR}/{COPILOT_HOOKS_FILE}")]
    }

    /// `.github/mcp.json`, or `~/.copilot/mcp-config.json` (`$COPILOT_HOME`; `~/.copilot`
    /// on every system: docs.github.com/en/copilot/reference/copilot-cli-reference/
    /// cli-config-dir-reference); its
    /// entries name their type `local` and the tools offered.
    fn mcp(&self) -> Option<McpConfig> {
        Some(McpConfig {
            project: Some(".github/mcp.json"),
            user: UserFile {
                env: Some("COPILOT_HOME"),
                home: ".copilot",
                file: "mcp-config.json",
            },
            format: Format::Json {
                fixed: &[("type", "\"local\"")],
                after: &[("tools", "[\"*\"]")],
            },
            directory: Directory::Project,
        })
    }

    fn install(&self, path: &Path) -> Result<Installed> {
        COPILOT_HOOKS.install(path)
    }

    fn uninstall(&self, path: &Path) -> Result<bool> {
        COPILOT_HOOKS.uninstall(path)
    }

    fn hooks_state(&self, path: &Path) -> Result<HooksState> {
        COPILOT_HOOKS.state(path)
    }

    /// A `PreToolUse` of a tool that names its file or only reads saves nothing.
    fn run(&self, input: &[u8], fallback_dir: &Path) -> Result<HookRun> {
        let event = CopilotEvent::read(input);
        if let Ok(event) = &event {
            if !event.needs_checkpoint(COPILOT_READ_ONLY_TOOLS) {
                return Ok(HookRun::nothing(""));
            }
        }
        Ok(HookRun::save(event, fallback_dir, ""))
    }
}

/// The fields of Copilot CLI's hook input that a save records, in either of its
/// spellings (camelCase, or snake_case for events configured in PascalCase).
#[derive(Debug, Default, Deserialize)]
pub struct CopilotEvent {
    /// The session (absent from older versions' payloads).
    #[serde(alias = "sessionId")]
    pub session_id: Option<String>,
    /// The event, in the snake_case payloads only.
    pub hook_event_name: Option<String>,
    /// The directory Copilot CLI works in.
    pub cwd: Option<PathBuf>,
    /// The prompt the user submitted (`userPromptSubmitted`).
    pub prompt: Option<String>,
    /// The tool that just ran (`bash`, `edit`, `create`, …).
    #[serde(alias = "toolName")]
    pub tool_name: Option<String>,
    /// The tool's arguments: an object, or a JSON string of one.
    #[serde(alias = "toolArgs", alias = "tool_input")]
    pub tool_args: Option<Value>,
    /// The tool's result (`postToolUse`): `resultType` says whether it failed.
    #[serde(alias = "toolResult")]
    pub tool_result: Option<Value>,
    /// Why the tool failed (`postToolUseFailure`).
    pub error: Option<Value>,
    /// The conversation's transcript file, where an event gives it.
    #[serde(alias = "transcriptPath")]
    pub transcript_path: Option<String>,
}

impl CopilotEvent {
    /// The event's name: as the payload gives it, or told by its fields.
    fn event_name(&self) -> Option<String> {
        if let Some(name) = &self.hook_event_name {
            return Some(name.clone());
        }
        let name = match (&self.prompt, &self.tool_name, &self.error) {
            (Some(_), None, _) => "userPromptSubmitted",
            (None, Some(_), Some(_)) => "postToolUseFailure",
            (None, Some(_), None) => "postToolUse",
            _ => return None,
        };
        Some(name.to_string())
    }

    /// Whether a `postToolUse` result says the tool failed (older versions report
    /// failures there).
    fn result_failed(&self) -> bool {
        let result = self.tool_result.as_ref();
        let kind = result
            .and_then(|r| r.get("resultType").or_else(|| r.get("result_type")))
            .and_then(Value::as_str);
        matches!(kind, Some("failure" | "error"))
    }
}

impl Payload for CopilotEvent {
    fn into_event(self) -> AgentEvent {
        let event = self.event_name();
        let step = match event.as_deref() {
            Some("userPromptSubmitted" | "UserPromptSubmit") => Step::Prompt,
            Some("postToolUse" | "PostToolUse") => Step::Tool {
                failed: self.result_failed(),
            },
            Some("postToolUseFailure" | "PostToolUseFailure") => Step::Tool { failed: true },
            Some("preToolUse" | "PreToolUse") => Step::BeforeTool,
            _ => Step::Other,
        };
        let args = match &self.tool_args {
            Some(Value::String(text)) => serde_json::from_str(text).ok(),
            other => other.clone(),
        };
        let text = |keys: &[&str]| {
            keys.iter()
                .find_map(|key| args.as_ref()?.get(key)?.as_str().map(str::to_string))
        };
        AgentEvent {
            agent: "copilot",
            session: self.session_id,
            event,
            step,
            prompt: self.prompt,
            tool: self.tool_name,
            tool_use_id: None,
            prompt_id: None,
            subagent: None,
            files: text(&["path", "file_path"]).into_iter().collect(),
            command: text(&["command"]),
            cwd: self.cwd,
            transcript: self.transcript_path,
            transcript_dirs: transcript_dirs(),
        }
    }
}

/// Where Copilot CLI keeps its sessions' event logs: `session-state/` in its home,
/// `$COPILOT_HOME` or `~/.copilot` (one directory per session).
pub(super) fn transcript_dirs() -> Vec<PathBuf> {
    agent_home("COPILOT_HOME", ".copilot")
        .map(|dir| dir.join("session-state"))
        .into_iter()
        .collect()
}
