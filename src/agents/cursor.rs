//! Cursor's side of the agent hooks.
//!
//! Cursor reads hooks from `.cursor/hooks.json` at the project's top (committed with the
//! project; Cursor has no personal per-project file) and `~/.cursor/hooks.json` (every
//! project of the user), a version 1 file mapping each event to a list of
//! `{"command": …}` hooks, and runs each with a JSON description of the event on stdin
//! (cursor.com/docs/agent/hooks). [`install_cursor`] adds our hook to
//! `beforeSubmitPrompt` (a save as the user sends a prompt), `afterFileEdit` and
//! `afterShellExecution` (a save after each change the agent makes), and
//! [`uninstall_cursor`] takes out exactly those. [`run_cursor`] is what the hooks run.
//!
//! Confirmed against Cursor's hooks documentation: the file's layout and locations, the
//! common input fields (`conversation_id`, `generation_id`, `hook_event_name`,
//! `workspace_roots`), `prompt` (beforeSubmitPrompt), `file_path` (afterFileEdit, an
//! absolute path), `command` (afterShellExecution), and that beforeSubmitPrompt reads
//! `{"continue": true|false}` from stdout. Not confirmed, so only read when present:
//! `cwd` and `transcript_path` (named by third-party references, not by the version of
//! the documentation found), `tool_name` and `tool_use_id` (newer tool events). Cursor
//! reports no exit status for a shell command, so no Cursor step is recorded as failed.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::event::{workspace_root, AgentEvent, Step};
use super::hook_list::HookList;
use super::paths::{home_dir, worktree_or_home_file};
use crate::{CheckpointId, Result};

/// The command the Cursor hooks run.
pub const CURSOR_HOOK_COMMAND: &str = "git checkpoint hooks run cursor";
/// What beforeSubmitPrompt must print for Cursor to send the prompt.
pub const CURSOR_PROMPT_REPLY: &str = "{\"continue\":true}";

/// The hooks file format and our hook in it.
const CURSOR_HOOKS: HookList = HookList {
    agent: "Cursor",
    events: &["beforeSubmitPrompt", "afterFileEdit", "afterShellExecution"],
    command_key: "command",
    command: CURSOR_HOOK_COMMAND,
    hook: || serde_json::json!({ "command": CURSOR_HOOK_COMMAND }),
};

/// Cursor's hooks file: `.cursor/hooks.json` in the worktree at `worktree_root`, or
/// with `global` the user's `~/.cursor/hooks.json`. Refuses one that is, or lies below,
/// a symlink leading outside the worktree (the home directory for the global file).
pub fn cursor_hooks_path(global: bool, worktree_root: &Path) -> Result<PathBuf> {
    worktree_or_home_file(global, worktree_root, Path::new(".cursor/hooks.json"))
}

/// Adds the checkpoint hooks to the Cursor hooks file at `path`, creating it if needed.
/// Returns false if they were there already (the file is then left alone).
pub fn install_cursor(path: &Path) -> Result<bool> {
    CURSOR_HOOKS.install(path)
}

/// Removes the hooks [`install_cursor`] added to the hooks file at `path` (the file too,
/// if nothing else is left). Returns false if there was nothing to remove.
pub fn uninstall_cursor(path: &Path) -> Result<bool> {
    CURSOR_HOOKS.uninstall(path)
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
    /// The tool, where Cursor names one.
    pub tool_name: Option<String>,
    /// The tool call, where Cursor gives one.
    pub tool_use_id: Option<String>,
    /// The conversation's transcript file, where Cursor gives one.
    pub transcript_path: Option<String>,
}

impl CursorEvent {
    /// Parses the JSON Cursor writes to a hook's stdin.
    pub fn parse(input: &[u8]) -> Result<CursorEvent> {
        super::event::parse_payload(input)
    }

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

    /// The event in the terms every agent's hooks share. Cursor's file and shell events
    /// name no tool: they are recorded as the tools `edit` and `shell`.
    pub fn into_event(self) -> AgentEvent {
        let (step, tool) = match self.hook_event_name.as_deref() {
            Some("beforeSubmitPrompt") => (Step::Prompt, None),
            Some("afterFileEdit") => (Step::Tool { failed: false }, Some("edit")),
            Some("afterShellExecution") => (Step::Tool { failed: false }, Some("shell")),
            Some("beforeShellExecution") => (Step::BeforeTool, Some("shell")),
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
            file: self.file_path,
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

/// Saves a checkpoint for the Cursor hook event in `input`, in the workspace root it
/// names (or `fallback_dir`); see [`super::event::run`]. Also returns what the hook
/// must print: [`CURSOR_PROMPT_REPLY`] for a prompt whatever became of the save (a hook
/// must never stop the user's prompt), and for input that could not be read (it may have
/// been a prompt); nothing after any other event.
pub fn run_cursor(
    input: &[u8],
    fallback_dir: &Path,
) -> (Result<Option<CheckpointId>>, &'static str) {
    let event = CursorEvent::parse(input).map(CursorEvent::into_event);
    let reply = match &event {
        Ok(e) if e.step != Step::Prompt => "",
        _ => CURSOR_PROMPT_REPLY,
    };
    (super::event::run(event, fallback_dir), reply)
}
