//! Codex CLI's side of the agent hooks.
//!
//! Codex reads hooks, laid out as Claude Code's are, from `hooks.json` beside each of its
//! config layers: the project's `.codex/hooks.json` (loaded only once the project is
//! trusted, and Codex asks the user to review new hooks in `/hooks` before they run) and
//! the user's `~/.codex/hooks.json` (developers.openai.com/codex/hooks). It runs each
//! hook command in the session's `cwd` with a JSON description of the event on stdin
//! (the wire format: openai/codex `codex-rs/hooks/schema/generated/`). [`install_codex`]
//! adds a save when the user submits a prompt (`UserPromptSubmit`) and one after each
//! shell command and file edit (`PostToolUse` for `Bash` and `apply_patch`);
//! [`uninstall_codex`] takes out exactly those. [`run_codex`] is what the hooks run.
//!
//! Codex has no failure event: `PostToolUse` also fires after a shell command that exits
//! non-zero, but the payload's `tool_response` is then only the command's output text,
//! with no exit status, so a Codex step is never recorded as failed. File edits arrive as
//! `apply_patch` with the whole patch in `tool_input.command`; the file is read from the
//! patch's `*** Update File:` (`Add`, `Delete`) header.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use super::event::{AgentEvent, Step};
use super::hook_groups::HookGroups;
use super::paths::{agent_home, worktree_or_home_file};
use crate::{CheckpointId, Result};

/// The command the Codex hooks run.
pub const CODEX_HOOK_COMMAND: &str = "git checkpoint hooks run codex";
/// Codex's tools that can change files: its shell (every shell tool is reported to hooks
/// as `Bash`) and its file-edit tool.
pub const CODEX_FILE_TOOLS: &str = "Bash|apply_patch";
/// The hook events and the tool matcher of each; Codex ignores a matcher on
/// `UserPromptSubmit`, so none is written.
const CODEX_EVENTS: [(&str, Option<&str>); 2] = [
    ("UserPromptSubmit", None),
    ("PostToolUse", Some(CODEX_FILE_TOOLS)),
];
/// The seconds Codex gives our hook (its default is 600); a hook run waits for the store
/// at most `checkpoint.hookLockTimeout`, far less.
const CODEX_HOOK_TIMEOUT_SECONDS: u64 = 30;

/// Our hooks as they stand in a Codex `hooks.json`.
const CODEX_HOOKS: HookGroups = HookGroups {
    agent: "Codex",
    command: CODEX_HOOK_COMMAND,
    events: &CODEX_EVENTS,
    handler: || {
        serde_json::json!({
            "type": "command",
            "command": CODEX_HOOK_COMMAND,
            "timeout": CODEX_HOOK_TIMEOUT_SECONDS,
        })
    },
};

/// Codex's hooks file: the project's `.codex/hooks.json` in the worktree at
/// `worktree_root` (Codex has no separate personal project file), or with `global` the
/// user's `~/.codex/hooks.json`. Refuses one that is, or lies below, a symlink leading
/// outside the worktree (the home directory for the global file).
pub fn codex_hooks_path(global: bool, worktree_root: &Path) -> Result<PathBuf> {
    worktree_or_home_file(global, worktree_root, Path::new(".codex/hooks.json"))
}

/// Adds the checkpoint hooks to the Codex hooks file at `path`, creating it if needed.
/// Returns false if they were there already (the file is then left alone).
pub fn install_codex(path: &Path) -> Result<bool> {
    CODEX_HOOKS.install(path)
}

/// Removes the hooks [`install_codex`] added to the hooks file at `path` (the file too,
/// if nothing else is left). Returns false if there was nothing to remove.
pub fn uninstall_codex(path: &Path) -> Result<bool> {
    CODEX_HOOKS.uninstall(path)
}

/// The fields of Codex's hook input that a save records.
#[derive(Debug, Default, Deserialize)]
pub struct CodexEvent {
    /// The session (thread).
    pub session_id: Option<String>,
    /// `UserPromptSubmit`, `PostToolUse`, …
    pub hook_event_name: Option<String>,
    /// The turn: one user prompt and the work the agent does for it.
    pub turn_id: Option<String>,
    /// The tool that ran: `Bash`, `apply_patch`, or an MCP tool's name.
    pub tool_name: Option<String>,
    /// The tool call.
    pub tool_use_id: Option<String>,
    /// The tool's arguments: `command` holds the shell command, or the patch.
    pub tool_input: Option<Value>,
    /// The session's working directory.
    pub cwd: Option<PathBuf>,
    /// The session's transcript file, if it has one.
    pub transcript_path: Option<String>,
    /// The prompt the user submitted (`UserPromptSubmit`).
    pub prompt: Option<String>,
}

impl CodexEvent {
    /// Parses the JSON Codex writes to a hook's stdin.
    pub fn parse(input: &[u8]) -> Result<CodexEvent> {
        super::event::parse_payload(input)
    }

    /// The event in the terms every agent's hooks share. The turn id is recorded as the
    /// prompt's own id.
    pub fn into_event(self) -> AgentEvent {
        let step = match self.hook_event_name.as_deref() {
            Some("UserPromptSubmit") => Step::Prompt,
            Some("PostToolUse") => Step::Tool { failed: false },
            Some("PreToolUse") => Step::BeforeTool,
            _ => Step::Other,
        };
        let command = self
            .tool_input
            .as_ref()
            .and_then(|input| input.get("command")?.as_str().map(str::to_string));
        let (file, command) = match self.tool_name.as_deref() {
            Some("apply_patch") => (command.as_deref().and_then(patched_file), None),
            _ => (None, command),
        };
        AgentEvent {
            agent: "codex",
            session: self.session_id,
            event: self.hook_event_name,
            step,
            prompt: self.prompt,
            tool: self.tool_name,
            tool_use_id: self.tool_use_id,
            prompt_id: self.turn_id,
            subagent: None,
            file,
            command,
            cwd: self.cwd,
            transcript: self.transcript_path,
            transcript_dirs: transcript_dirs(),
        }
    }
}

/// The first file an `apply_patch` patch changes, as its header names it (Cline's
/// `apply_patch` takes the same patch grammar).
pub(super) fn patched_file(patch: &str) -> Option<String> {
    patch.lines().find_map(|line| {
        ["*** Update File: ", "*** Add File: ", "*** Delete File: "]
            .iter()
            .find_map(|header| line.strip_prefix(header))
            .map(|path| path.trim().to_string())
            .filter(|path| !path.is_empty())
    })
}

/// Where Codex keeps its transcripts: `sessions/` in its home, `$CODEX_HOME` or
/// `~/.codex` (one `rollout-<time>-<session>.jsonl` per session in a directory per day).
pub(super) fn transcript_dirs() -> Vec<PathBuf> {
    agent_home("CODEX_HOME", ".codex")
        .map(|dir| dir.join("sessions"))
        .into_iter()
        .collect()
}

/// Saves a checkpoint for the Codex hook event in `input`, in the event's `cwd` (or
/// `fallback_dir`); see [`super::event::run`].
pub fn run_codex(input: &[u8], fallback_dir: &Path) -> Result<Option<CheckpointId>> {
    super::event::run(
        CodexEvent::parse(input).map(CodexEvent::into_event),
        fallback_dir,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_patched_file_comes_from_the_patch_header() {
        let patch = "*** Begin Patch\n*** Update File: src/a.rs\n@@\n-a\n+b\n*** End Patch\n";
        assert_eq!(patched_file(patch).as_deref(), Some("src/a.rs"));
        let added = "*** Begin Patch\n*** Add File: new.txt\n+x\n*** End Patch";
        assert_eq!(patched_file(added).as_deref(), Some("new.txt"));
        assert_eq!(patched_file("*** Begin Patch\n*** End Patch"), None);
    }
}
