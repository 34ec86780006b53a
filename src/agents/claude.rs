//! Claude Code's side of the agent hooks.
//!
//! Claude Code reads hooks from its settings files (the project's personal
//! `.claude/settings.local.json` and the shared, committed `.claude/settings.json`, both
//! in the directory it is started in and no other, or the user's
//! `~/.claude/settings.json`) and runs each hook
//! command with a JSON description of the event on stdin. Installing ([`Claude`]) merges
//! our hooks into one of those files — a save when the user submits a prompt, one after
//! each tool that can change files (our MCP server's tools included), whether it
//! succeeded or failed, and one just before each of those tools that names no file it
//! changes (the shells, our MCP tools) — and uninstalling
//! takes out exactly those, leaving everything else, including the file's indentation
//! and key order, as it was. A hook run saves with the session, the prompt's number in it and the event as metadata, and
//! every event makes a checkpoint (an empty one when nothing changed), so that "before
//! prompt N" and "before that tool call" always have an answer.

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

/// The command the Claude Code hooks run.
pub const CLAUDE_HOOK_COMMAND: &str = "git checkpoint hooks run claude";
/// The tools a checkpoint is saved after: Claude Code's tools that can change files, and
/// every tool of our MCP server (`mcp__checkpoint__<tool>`), so that the agent's own
/// revert or restore through MCP is a step of its session. A matcher of more than names
/// and `|` is a regular expression to Claude Code, tested unanchored, so it is anchored:
/// `Edit` alone would also match another server's `mcp__x__Edit_file`.
pub const CLAUDE_FILE_TOOLS: &str =
    "^(Edit|Write|MultiEdit|NotebookEdit|Bash|PowerShell|mcp__checkpoint__.+)$";
/// The tools a checkpoint is also saved before: those of [`CLAUDE_FILE_TOOLS`] whose
/// payload names no file they change (the shells, our MCP server's tools). With the
/// checkpoint after the call, it brackets what the call changed, which
/// `restore --only-session` then counts as the session's; the file tools name their file.
pub const CLAUDE_UNNAMING_TOOLS: &str = "^(Bash|PowerShell|mcp__checkpoint__.+)$";
/// The hook events and the tool matcher of each (`None`: the event takes no matcher). A
/// tool that fails (a shell command exiting non-zero) fires `PostToolUseFailure`, not
/// `PostToolUse`, and may have changed files before it failed.
const CLAUDE_EVENTS: [(&str, Option<&str>); 4] = [
    ("UserPromptSubmit", None),
    ("PreToolUse", Some(CLAUDE_UNNAMING_TOOLS)),
    ("PostToolUse", Some(CLAUDE_FILE_TOOLS)),
    ("PostToolUseFailure", Some(CLAUDE_FILE_TOOLS)),
];
/// The seconds Claude Code gives our hook before it gives up on it. A hook run waits for
/// the store at most `checkpoint.hookLockTimeout` (5 s by default), far less.
const CLAUDE_HOOK_TIMEOUT_SECONDS: u64 = 30;

/// Our hooks as they stand in Claude Code's settings.
const CLAUDE_HOOKS: HookGroups = HookGroups {
    agent: "Claude Code",
    command: CLAUDE_HOOK_COMMAND,
    events: &CLAUDE_EVENTS,
    handler: || {
        serde_json::json!({
            "type": "command",
            "command": CLAUDE_HOOK_COMMAND,
            "timeout": CLAUDE_HOOK_TIMEOUT_SECONDS,
        })
    },
};

/// Claude Code: hooks in `.claude/settings.local.json` ([`Scope::Personal`]) or
/// `.claude/settings.json` ([`Scope::Shared`]) of the directory the install runs in,
/// which is where Claude Code started there reads them, or `~/.claude/settings.json`
/// ([`Scope::Global`]).
pub struct Claude;

/// The worktree's (and the home directory's) shared settings file.
const SHARED_SETTINGS: &str = ".claude/settings.json";
/// The worktree's personal settings file, not committed.
const PERSONAL_SETTINGS: &str = ".claude/settings.local.json";

impl Agent for Claude {
    fn name(&self) -> &'static str {
        "claude"
    }

    fn about(&self) -> &'static str {
        "Claude Code"
    }

    fn hooks_path(&self, scope: Scope, start: &Path) -> Result<PathBuf> {
        let file = match scope {
            Scope::Personal => PERSONAL_SETTINGS,
            Scope::Shared | Scope::Global => SHARED_SETTINGS,
        };
        start_dir_or_home_file(scope, start, Path::new(file))
    }

    fn worktree_hook_files(&self) -> Vec<String> {
        vec![SHARED_SETTINGS.to_string(), PERSONAL_SETTINGS.to_string()]
    }

    /// `.mcp.json` in the project, `~/.claude.json` for the user
    /// (code.claude.com/docs/en/mcp; on macOS too: code.claude.com/docs/en/settings puts
    /// only managed settings under `/Library/Application Support/ClaudeCode/`).
    fn mcp(&self) -> Option<McpConfig> {
        Some(McpConfig {
            project: Some(".mcp.json"),
            user: UserFile {
                env: None,
                home: "",
                file: ".claude.json",
            },
            format: Format::Json {
                fixed: &[("type", "\"stdio\"")],
                after: &[],
            },
            directory: Directory::Project,
        })
    }

    /// Claude Code reads `.claude/settings*.json` of the directory it is started in, not
    /// of the directories above it (Claude Code 2.1.197, started in a subdirectory, read
    /// only the user's `~/.claude/settings.json`; `.mcp.json` it does find above).
    fn project_hooks(&self) -> ProjectHooks {
        ProjectHooks::InTheStartDirectory
    }

    fn install(&self, path: &Path) -> Result<Installed> {
        CLAUDE_HOOKS.install(path)
    }

    fn uninstall(&self, path: &Path) -> Result<bool> {
        CLAUDE_HOOKS.uninstall(path)
    }

    fn hooks_state(&self, path: &Path) -> Result<HooksState> {
        CLAUDE_HOOKS.state(path)
    }

    /// `.claude/settings.local.json` is Claude Code's "personal, not committed" file.
    fn is_personal(&self, scope: Scope) -> bool {
        scope == Scope::Personal
    }

    fn run(&self, input: &[u8], fallback_dir: &Path) -> Result<HookRun> {
        Ok(HookRun::save(ClaudeEvent::read(input), fallback_dir, ""))
    }
    /// Claude Code shows a hook's `systemMessage` to the user (its hooks reference, "JSON output"); the reply is otherwise empty.
    fn reply_with_notice(&self, _reply: &str, notice: &str) -> Option<String> {
        Some(system_message(notice))
    }
}

/// The fields of Claude Code's hook input that a save records (the hooks reference:
/// code.claude.com/docs/en/hooks).
#[derive(Debug, Default, Deserialize)]
pub struct ClaudeEvent {
    /// The conversation.
    pub session_id: Option<String>,
    /// `UserPromptSubmit`, `PostToolUse`, `PostToolUseFailure`, …
    pub hook_event_name: Option<String>,
    /// The tool that just ran (tool events).
    pub tool_name: Option<String>,
    /// The directory Claude Code works in.
    pub cwd: Option<PathBuf>,
    /// The conversation's transcript file.
    pub transcript_path: Option<String>,
    /// The prompt the user submitted (`UserPromptSubmit`).
    pub prompt: Option<String>,
    /// The tool's arguments (tool events).
    pub tool_input: Option<Value>,
    /// The tool call (tool events); parallel calls of one turn each have their own.
    pub tool_use_id: Option<String>,
    /// The prompt's own id, where Claude Code gives one.
    pub prompt_id: Option<String>,
    /// The subagent that ran the tool, where a subagent did.
    pub agent_id: Option<String>,
}

impl Payload for ClaudeEvent {
    fn into_event(self) -> AgentEvent {
        let step = match self.hook_event_name.as_deref() {
            Some("UserPromptSubmit") => Step::Prompt,
            Some("PostToolUse") => Step::Tool { failed: false },
            Some("PostToolUseFailure") => Step::Tool { failed: true },
            Some("PreToolUse") => Step::BeforeTool,
            _ => Step::Other,
        };
        let input = self.tool_input.as_ref();
        let text = |keys: &[&str]| {
            keys.iter()
                .find_map(|key| input?.get(key)?.as_str().map(str::to_string))
        };
        AgentEvent {
            agent: "claude",
            session: self.session_id,
            event: self.hook_event_name,
            step,
            prompt: self.prompt,
            tool: self.tool_name,
            tool_use_id: self.tool_use_id,
            prompt_id: self.prompt_id,
            subagent: self.agent_id,
            files: text(&["file_path", "notebook_path"]).into_iter().collect(),
            command: text(&["command"]),
            cwd: self.cwd,
            transcript: self.transcript_path,
            transcript_dirs: transcript_dirs(),
        }
    }
}

/// Where Claude Code keeps its transcripts: `projects/` in its configuration directory,
/// `$CLAUDE_CONFIG_DIR` or `~/.claude` (one `<session>.jsonl` per conversation in a
/// directory named after the project).
pub(super) fn transcript_dirs() -> Vec<PathBuf> {
    agent_home("CLAUDE_CONFIG_DIR", ".claude")
        .map(|dir| dir.join("projects"))
        .into_iter()
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::event::EventContext;
    use serde_json::json;

    #[test]
    fn install_keeps_other_hooks_and_is_idempotent() {
        let mut settings = json!({
            "model": "x",
            "hooks": {"PostToolUse": [{"matcher": "Write", "hooks": [{"type": "command", "command": "fmt"}]}]}
        });
        let original = settings.clone();
        assert_eq!(CLAUDE_HOOKS.add(&mut settings), Ok(true));
        assert_eq!(CLAUDE_HOOKS.add(&mut settings), Ok(false));
        let post = settings["hooks"]["PostToolUse"].as_array().unwrap();
        assert_eq!(post.len(), 2);
        assert_eq!(post[0], original["hooks"]["PostToolUse"][0]);
        assert_eq!(post[1]["matcher"], CLAUDE_FILE_TOOLS);
        assert!(settings["hooks"]["UserPromptSubmit"][0]
            .get("matcher")
            .is_none());
        assert!(CLAUDE_HOOKS.remove(&mut settings));
        assert_eq!(settings, original);
        assert!(!CLAUDE_HOOKS.remove(&mut settings));
    }

    /// Each agent's matcher covers every tool of our MCP server by the name that agent
    /// gives it, so that the agent's own revert or restore through MCP is a step.
    #[test]
    fn the_matchers_cover_our_mcp_server_by_its_name() {
        use crate::agents::codex::CODEX_FILE_TOOLS;
        use crate::agents::codex::CODEX_UNNAMING_TOOLS;
        use crate::agents::gemini::GEMINI_FILE_TOOLS;
        use crate::agents::gemini::GEMINI_UNNAMING_TOOLS;
        use crate::agents::mcp_registration::SERVER_NAME;
        for (matcher, tools) in [
            (CLAUDE_FILE_TOOLS, format!("mcp__{SERVER_NAME}__.+")),
            (CLAUDE_UNNAMING_TOOLS, format!("mcp__{SERVER_NAME}__.+")),
            (CODEX_FILE_TOOLS, format!("mcp__{SERVER_NAME}__.+")),
            (CODEX_UNNAMING_TOOLS, format!("mcp__{SERVER_NAME}__.+")),
            (GEMINI_FILE_TOOLS, format!("mcp_{SERVER_NAME}_.+")),
            (GEMINI_UNNAMING_TOOLS, format!("mcp_{SERVER_NAME}_.+")),
        ] {
            assert!(matcher.contains(&format!("|{tools})$")), "{matcher}");
            assert!(matcher.starts_with("^("), "{matcher}");
        }
    }

    #[test]
    fn odd_settings_are_refused_not_overwritten() {
        assert!(CLAUDE_HOOKS.add(&mut json!([1])).is_err());
        assert!(CLAUDE_HOOKS.add(&mut json!({"hooks": 3})).is_err());
        assert!(CLAUDE_HOOKS
            .add(&mut json!({"hooks": {"PostToolUse": {}}}))
            .is_err());
    }

    #[test]
    fn messages_say_what_happened() {
        let event = ClaudeEvent {
            hook_event_name: Some("PostToolUse".into()),
            tool_name: Some("Edit".into()),
            tool_input: Some(json!({"file_path": "/w/src/a.rs"})),
            cwd: Some("/w".into()),
            ..ClaudeEvent::default()
        };
        let failed = ClaudeEvent {
            hook_event_name: Some("PostToolUseFailure".into()),
            tool_name: Some("Edit".into()),
            tool_input: Some(json!({"file_path": "/w/src/a.rs"})),
            cwd: Some("/w".into()),
            ..ClaudeEvent::default()
        }
        .into_event();
        let event = event.into_event();
        assert_eq!(
            event.message(Path::new("/w"), &EventContext::default()),
            "after Edit: src/a.rs"
        );
        assert_eq!(
            failed.message(Path::new("/w"), &EventContext::default()),
            "after Edit (failed): src/a.rs"
        );
        let prompt = ClaudeEvent {
            hook_event_name: Some("UserPromptSubmit".into()),
            prompt: Some(format!("{}\nmore", "x".repeat(100))),
            ..ClaudeEvent::default()
        }
        .into_event();
        assert_eq!(
            prompt
                .message(
                    Path::new("/w"),
                    &EventContext {
                        prompt: Some(3),
                        ..EventContext::default()
                    },
                )
                .chars()
                .count(),
            "before prompt 3: ".len() + 72
        );
    }
}
