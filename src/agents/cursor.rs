//! Cursor's side of the agent hooks.
//!
//! Cursor reads hooks from `.cursor/hooks.json` at the project's top (committed with the
//! project; Cursor has no personal per-project file) and `~/.cursor/hooks.json` (every
//! project of the user), a version 1 file mapping each event to a list of
//! `{"command": …}` hooks, and runs each with a JSON description of the event on stdin
//! (cursor.com/docs/agent/hooks). Installing ([`Cursor`]) adds our hook to
//! `beforeSubmitPrompt` (a save as the user sends a prompt), `afterFileEdit`,
//! `afterShellExecution` and `afterMCPExecution` (a save after each change the agent
//! makes), and `beforeShellExecution` and `beforeMCPExecution` (a save just before each
//! shell command and MCP tool call, which name no file they change: the two checkpoints
//! bracket what the call changed), and uninstalling takes out exactly those. Cursor has
//! no matcher for these events, so every MCP server's tools get the two checkpoints, as
//! any of them may write files. A before hook answers nothing: Cursor reads a
//! `permission` there, and ours must not decide one.
//!
//! Confirmed against Cursor's hooks documentation: the file's layout and locations, the
//! common input fields (`conversation_id`, `generation_id`, `hook_event_name`,
//! `workspace_roots`), `prompt` (beforeSubmitPrompt), `file_path` (afterFileEdit, an
//! absolute path), `command` (afterShellExecution), and that beforeSubmitPrompt reads
//! `{"continue": true|false}` from stdout. The MCP events' `tool_name` and the
//! before events are as third-party references of the contract give them
//! (cupcake.eqtylab.io/reference/harnesses/cursor): an empty answer leaves the
//! decision to Cursor (a hook that gives none fails open). Not confirmed, so only read
//! when present:
//! `cwd` and `transcript_path` (named by third-party references, not by the version of
//! the documentation found), `tool_name` and `tool_use_id` (newer tool events). Cursor
//! reports no exit status for a shell command, so no Cursor step is recorded as failed.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::agent::{Agent, HookRun};
use super::event::{workspace_root, AgentEvent, Payload, Step};
use super::hook_list::HookList;
use super::kinds::{HooksState, Installed, Scope};
use super::mcp_entry::{Directory, Format, McpConfig, UserFile};
use super::paths::{home_dir, worktree_or_home_file};
use crate::Result;

/// The hooks file, from the worktree's top or the home directory.
const CURSOR_HOOKS_FILE: &str = ".cursor/hooks.json";

/// The command the Cursor hooks run.
pub const CURSOR_HOOK_COMMAND: &str = "git checkpoint hooks run cursor";
/// What beforeSubmitPrompt must print for Cursor to send the prompt.
pub const CURSOR_PROMPT_REPLY: &str = "{\"continue\":true}";

/// The hooks file format and our hook in it.
const CURSOR_HOOKS: HookList = HookList {
    agent: "Cursor",
    events: &[
        "beforeSubmitPrompt",
        "afterFileEdit",
        "beforeShellExecution",
        "afterShellExecution",
        "beforeMCPExecution",
        "afterMCPExecution",
    ],
    command_key: "command",
    command: CURSOR_HOOK_COMMAND,
    hook: || serde_json::json!({ "command": CURSOR_HOOK_COMMAND }),
};

/// Cursor: hooks in `.cursor/hooks.json` at the worktree's top (Cursor has no personal
/// per-project file, so [`Scope::Personal`] names it too) or the user's
/// `~/.cursor/hooks.json`.
pub struct Cursor;

impl Agent for Cursor {
    fn name(&self) -> &'static str {
        "cursor"
    }

    fn about(&self) -> &'static str {
        "Cursor"
    }

    fn hooks_path(&self, scope: Scope, start: &Path) -> Result<PathBuf> {
        worktree_or_home_file(scope, start, Path::new(CURSOR_HOOKS_FILE))
    }

    fn worktree_hook_files(&self) -> Vec<String> {
        vec![CURSOR_HOOKS_FILE.to_string()]
    }

    /// `.cursor/mcp.json`, or `~/.cursor/mcp.json` (on every system, as `~/.cursor/hooks.json`
    /// is: cursor.com/docs/reference/third-party-hooks); Cursor starts servers anywhere but
    /// expands `${workspaceFolder}`, which the entry hands to `-C`.
    fn mcp(&self) -> Option<McpConfig> {
        Some(McpConfig {
            project: Some(".cursor/mcp.json"),
            user: UserFile {
                env: None,
                home: ".cursor",
                file: "mcp.json",
            },
            format: Format::Json {
                fixed: &[("type", "\"stdio\"")],
                after: &[],
            },
            directory: Directory::WorkspaceFolder,
        })
    }

    fn install(&self, path: &Path) -> Result<Installed> {
        CURSOR_HOOKS.install(path)
    }

    fn uninstall(&self, path: &Path) -> Result<bool> {
        CURSOR_HOOKS.uninstall(path)
    }

    fn hooks_state(&self, path: &Path) -> Result<HooksState> {
        CURSOR_HOOKS.state(path)
    }

    /// Prints [`CURSOR_PROMPT_REPLY`] for a prompt whatever became of the save (a hook
    /// must never stop the user's prompt), and for input that could not be read (it may
    /// have been a prompt); nothing after any other event.
    fn run(&self, input: &[u8], fallback_dir: &Path) -> Result<HookRun> {
        let event = CursorEvent::read(input);
        let reply = match &event {
            Ok(e) if e.step != Step::Prompt => "",
            _ => CURSOR_PROMPT_REPLY,
        };
        Ok(HookRun::save(event, fallback_dir, reply))
    }
}

/// The fields of Cursor's hook input that a save records.
#[derive(Debug, Default, Deserialize)]
pub struct CursorEvent {
    /// The conversation, stable across its turns.
    pub conversation_id: Option<String>,
    /// The current generation, new with every user message.
    pub generation_id: Option<String>,
    /// `beforeSubmitPrompt`, `afterFileEdit`, `afterShellExecution`, …
    pub hook_event_name: Option<String>,
    /// The workspace's root folders (usually one).
    #[serde(default)]
    pub workspace_roots: Vec<PathBuf>,
    /// The prompt the user submitted (`beforeSubmitPrompt`).
    pub prompt: Option<String>,
    /// The file edited, absolute (`afterFileEdit`).
    pub file_path: Option<String>,
    /// The command run (`afterShellExecution`).
    pub command: Option<String>,
    /// The directory the command ran in, where Cursor gives it.
    pub cwd: Option<PathBuf>,
    /// The tool, where Cursor names one (the MCP events' tool).
    pub tool_name: Option<String>,
    /// The tool call, where Cursor gives one.
    pub tool_use_id: Option<String>,
    /// The conversation's transcript file, where Cursor gives one.
    pub transcript_path: Option<String>,
}

impl CursorEvent {
    /// The workspace root the event happened in: the one holding the edited file or the
    /// command's directory, else the first.
    fn workspace(&self) -> Option<PathBuf> {
        let place = self
            .file_path
            .as_deref()
            .map(Path::new)
            .or(self.cwd.as_deref());
        workspace_root(&self.workspace_roots, place).or_else(|| self.cwd.clone())
    }
}

/// Cursor's file and shell events name no tool: they are recorded as the tools `edit` and
/// `shell`; an MCP event's tool is the one it names (`mcp` when it names none).
impl Payload for CursorEvent {
    fn into_event(self) -> AgentEvent {
        let (step, tool) = match self.hook_event_name.as_deref() {
            Some("beforeSubmitPrompt") => (Step::Prompt, None),
            Some("afterFileEdit") => (Step::Tool { failed: false }, Some("edit")),
            Some("afterShellExecution") => (Step::Tool { failed: false }, Some("shell")),
            Some("beforeShellExecution") => (Step::BeforeTool, Some("shell")),
            Some("beforeMCPExecution") => (Step::BeforeTool, Some("mcp")),
            Some("afterMCPExecution") => (Step::Tool { failed: false }, Some("mcp")),
            _ => (Step::Other, None),
        };
        let cwd = self.workspace();
        AgentEvent {
            agent: "cursor",
            session: self.conversation_id,
            event: self.hook_event_name,
            step,
            prompt: self.prompt,
            tool: self.tool_name.or(tool.map(str::to_string)),
            tool_use_id: self.tool_use_id,
            prompt_id: self.generation_id,
            subagent: None,
            files: self.file_path.into_iter().collect(),
            command: self.command,
            cwd,
            transcript: self.transcript_path,
            transcript_dirs: transcript_dirs(),
        }
    }
}

/// Where Cursor keeps its agents' transcripts: `~/.cursor/projects/` (in
/// `<project>/agent-transcripts/`, one file or directory per conversation).
pub(super) fn transcript_dirs() -> Vec<PathBuf> {
    home_dir()
        .map(|home| home.join(".cursor/projects"))
        .into_iter()
        .collect()
}
