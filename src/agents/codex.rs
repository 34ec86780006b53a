//! Codex CLI's side of the agent hooks.
//!
//! Codex reads hooks, laid out as Claude Code's are, from `hooks.json` beside each of its
//! config layers: the project's `.codex/hooks.json` (loaded only once the project is
//! trusted, and Codex asks the user to review new hooks in `/hooks` before they run) and
//! the user's `~/.codex/hooks.json` (developers.openai.com/codex/hooks); it runs a hook
//! only once the user trusted it, which [`super::codex_trust`] checks. It runs each
//! hook command in the session's `cwd` with a JSON description of the event on stdin
//! (the wire format: openai/codex `codex-rs/hooks/schema/generated/`). Installing
//! ([`Codex`]) adds a save when the user submits a prompt (`UserPromptSubmit`) and one
//! after each shell command and file edit (`PostToolUse` for `Bash` and `apply_patch`)
//! and each call of our MCP server's tools; uninstalling takes out exactly those.
//!
//! Codex has no failure event: `PostToolUse` also fires after a shell command that exits
//! non-zero, but the payload's `tool_response` is then only the command's output text,
//! with no exit status, so a Codex step is never recorded as failed. File edits arrive as
//! `apply_patch` with the whole patch in `tool_input.command`; the files are read from the
//! patch's `*** Add File:`, `*** Update File:`, `*** Delete File:` and `*** Move to:`
//! headers, every one of them, so that a patch of several files names them all.
//!
//! A shell command and an MCP call name no file they change, so a `PreToolUse` hook
//! saves the worktree just before them as well: with the `PostToolUse` checkpoint after
//! it, it brackets what the call changed (`restore --only-session` counts that as the
//! session's). `apply_patch` needs none: its patch names every file.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use super::agent::{system_message, Agent, HookRun};
use super::event::{AgentEvent, Payload, Step};
use super::hook_groups::HookGroups;
use super::kinds::{HooksState, HooksTrust, Installed, Scope};
use super::mcp_entry::{Directory, Format, McpConfig, UserFile};
use super::paths::{agent_home, worktree_or_home_file};
use crate::Result;

/// The hooks file, from the worktree's top or the home directory.
const CODEX_HOOKS_FILE: &str = ".codex/hooks.json";

/// The command the Codex hooks run.
pub const CODEX_HOOK_COMMAND: &str = "git checkpoint hooks run codex";
/// The tools a checkpoint is saved after: Codex's tools that can change files, its shell
/// (every shell tool is reported to hooks as `Bash`) and its file-edit tool, and every
/// tool of our MCP server, which Codex reports as `mcp__checkpoint__<tool>`. Anchored, as
/// Codex tests a matcher with more than names and `|` as an unanchored regular
/// expression.
pub const CODEX_FILE_TOOLS: &str = "^(Bash|apply_patch|mcp__checkpoint__.+)$";
/// The tools a checkpoint is also saved before: those of [`CODEX_FILE_TOOLS`] whose
/// payload names no file they change (the shell, our MCP server's tools).
pub const CODEX_UNNAMING_TOOLS: &str = "^(Bash|mcp__checkpoint__.+)$";
/// The hook events and the tool matcher of each; Codex ignores a matcher on
/// `UserPromptSubmit`, so none is written. Codex runs a tool's `PreToolUse` hooks before
/// the tool and its `PostToolUse` hooks after it, each with the call's `tool_use_id`.
const CODEX_EVENTS: [(&str, Option<&str>); 3] = [
    ("UserPromptSubmit", None),
    ("PreToolUse", Some(CODEX_UNNAMING_TOOLS)),
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

/// Codex CLI: hooks in the project's `.codex/hooks.json` (Codex has no separate
/// personal project file, so [`Scope::Personal`] names it too) or the user's
/// `~/.codex/hooks.json`.
pub struct Codex;

impl Agent for Codex {
    fn name(&self) -> &'static str {
        "codex"
    }

    fn about(&self) -> &'static str {
        "Codex CLI"
    }

    fn hooks_path(&self, scope: Scope, start: &Path) -> Result<PathBuf> {
        worktree_or_home_file(scope, start, Path::new(CODEX_HOOKS_FILE))
    }

    fn worktree_hook_files(&self) -> Vec<String> {
        vec![CODEX_HOOKS_FILE.to_string()]
    }

    /// `[mcp_servers.<name>]` in `.codex/config.toml`, or `$CODEX_HOME/config.toml`
    /// (`~/.codex` on every system: developers.openai.com/codex/config).
    fn mcp(&self) -> Option<McpConfig> {
        Some(McpConfig {
            project: Some(".codex/config.toml"),
            user: UserFile {
                env: Some("CODEX_HOME"),
                home: ".codex",
                file: "config.toml",
            },
            format: Format::CodexToml,
            directory: Directory::Project,
        })
    }

    fn install(&self, path: &Path) -> Result<Installed> {
        CODEX_HOOKS.install(path)
    }

    fn uninstall(&self, path: &Path) -> Result<bool> {
        CODEX_HOOKS.uninstall(path)
    }

    fn hooks_state(&self, path: &Path) -> Result<HooksState> {
        CODEX_HOOKS.state(path)
    }

    /// Codex runs our hooks only once the user trusted them ([`super::codex_trust`]).
    fn hooks_trust(&self, scope: Scope, path: &Path) -> Result<HooksTrust> {
        super::codex_trust::check(scope, path, CODEX_HOOK_COMMAND)
    }

    fn run(&self, input: &[u8], fallback_dir: &Path) -> Result<HookRun> {
        Ok(HookRun::save(CodexEvent::read(input), fallback_dir, ""))
    }
    /// Codex CLI reads Claude Code's hook output, `systemMessage` included (its `*.command.output` schemas), and shows it to the user.
    fn reply_with_notice(&self, _reply: &str, notice: &str) -> Option<String> {
        Some(system_message(notice))
    }
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

/// The turn id is recorded as the prompt's own id.
impl Payload for CodexEvent {
    fn into_event(self) -> AgentEvent {
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
        let (files, command) = match self.tool_name.as_deref() {
            Some("apply_patch") => (command.as_deref().map(patched_files), None),
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
            files: files.unwrap_or_default(),
            command,
            cwd: self.cwd,
            transcript: self.transcript_path,
            transcript_dirs: transcript_dirs(),
        }
    }
}

/// Every file an `apply_patch` patch changes, as its headers name them, in the patch's
/// order and each once: the files it adds, updates and deletes, and the new name of one
/// it moves (`*** Move to:` under the `*** Update File:` of the old name). Cline's
/// `apply_patch` takes the same patch grammar.
pub(super) fn patched_files(patch: &str) -> Vec<String> {
    const HEADERS: [&str; 4] = [
        "*** Add File: ",
        "*** Update File: ",
        "*** Delete File: ",
        "*** Move to: ",
    ];
    let mut files: Vec<String> = Vec::new();
    for line in patch.lines() {
        let named = HEADERS
            .iter()
            .find_map(|header| line.strip_prefix(header))
            .map(str::trim)
            .filter(|path| !path.is_empty());
        if let Some(path) = named.filter(|path| !files.iter().any(|known| known == path)) {
            files.push(path.to_string());
        }
    }
    files
}

/// Where Codex keeps its transcripts: `sessions/` in its home, `$CODEX_HOME` or
/// `~/.codex` (one `rollout-<time>-<session>.jsonl` per session in a directory per day).
pub(super) fn transcript_dirs() -> Vec<PathBuf> {
    agent_home("CODEX_HOME", ".codex")
        .map(|dir| dir.join("sessions"))
        .into_iter()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_patched_file_comes_from_the_patch_headers() {
        let patch = "*** Begin Patch\n*** Update File: src/a.rs\n@@\n-a\n+b\n*** End Patch\n";
        assert_eq!(patched_files(patch), ["src/a.rs"]);
        let several = "*** Begin Patch\n*** Add File: new.txt\n+x\n\
            *** Update File: old.rs\n*** Move to: src/moved.rs\n@@\n-a\n+b\n\
            *** Delete File: gone.txt\n*** Update File: new.txt\n@@\n-x\n+y\n*** End Patch";
        assert_eq!(
            patched_files(several),
            ["new.txt", "old.rs", "src/moved.rs", "gone.txt"]
        );
        // A line of content that looks like a header is added text, after its `+`.
        let quoted = "*** Begin Patch\n*** Add File: a.md\n+*** Add File: b.md\n*** End Patch";
        assert_eq!(patched_files(quoted), ["a.md"]);
        assert!(patched_files("*** Begin Patch\n*** End Patch").is_empty());
    }
}
