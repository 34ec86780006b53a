//! A Claude Code session driven through `hooks run claude` with the payloads Claude
//! Code's hooks send (https://code.claude.com/docs/en/hooks): `UserPromptSubmit` for a
//! prompt, `PostToolUse` after a tool call. The test makes the tool's edits itself,
//! between the events, as the agent would. Several can run in one worktree.

use std::path::PathBuf;

use serde_json::{json, Value};

use super::{hook_answers, Repo};

/// One session: its id and the transcript Claude Code would append to.
pub struct ClaudeSession<'r> {
    /// The worktree it works in.
    pub repo: &'r Repo,
    /// Its `session_id`.
    pub id: String,
    transcript: PathBuf,
    calls: u32,
}

impl<'r> ClaudeSession<'r> {
    /// A session with id `id` in `repo`, its transcript where Claude Code keeps them.
    pub fn new(repo: &'r Repo, id: &str) -> Self {
        let dir = repo.home().join(".claude/projects/-repo");
        std::fs::create_dir_all(&dir).unwrap();
        ClaudeSession {
            repo,
            id: id.to_string(),
            transcript: dir.join(format!("{id}.jsonl")),
            calls: 0,
        }
    }

    /// Sends one event; the hook must answer with nothing and exit 0.
    pub fn hook(&self, mut payload: Value) {
        payload["session_id"] = json!(self.id);
        payload["transcript_path"] = json!(self.transcript);
        payload["cwd"] = json!(self.repo.dir);
        payload["permission_mode"] = json!("default");
        let mut log = std::fs::read(&self.transcript).unwrap_or_default();
        log.extend_from_slice(format!("{payload}\n").as_bytes());
        std::fs::write(&self.transcript, log).unwrap();
        let input = payload.to_string();
        hook_answers(
            &self.repo.sb,
            &self.repo.dir,
            "claude",
            input.as_bytes(),
            "",
        );
    }

    /// The user submits a prompt.
    pub fn prompt(&self, text: &str) {
        self.hook(json!({"hook_event_name": "UserPromptSubmit", "prompt": text}));
    }

    /// A file tool wrote `rel` (the test writes it, then the hook runs).
    pub fn write(&mut self, rel: &str, data: &[u8]) {
        self.repo.write(rel, data);
        self.tool(
            "Write",
            json!({"file_path": self.repo.p(rel), "content": ""}),
        );
    }

    /// A Bash call ran `command`, whose effect `edit` makes.
    pub fn bash(&mut self, command: &str, edit: impl FnOnce(&Repo)) {
        edit(self.repo);
        self.tool("Bash", json!({"command": command}));
    }

    /// A Bash call as [`ClaudeSession::bash`], with a `PreToolUse` hook (hooked by hand)
    /// just before it: its two checkpoints bracket what the call did.
    pub fn bash_hooked_before(&mut self, command: &str, edit: impl FnOnce(&Repo)) {
        let call = format!("toolu_{}_{}", &self.id[..4], self.calls + 1);
        self.hook(json!({
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_use_id": call,
            "tool_input": {"command": command},
        }));
        self.bash(command, edit);
    }

    /// A call of our MCP server's tool `tool` (`revert`, `restore`) with `input`, as
    /// Claude Code names it (`mcp__checkpoint__<tool>`): `call` makes it (through the
    /// server or the command line), then the `PostToolUse` hook runs. Returns the
    /// call's id.
    pub fn mcp(&mut self, tool: &str, input: Value, call: impl FnOnce(&Repo)) -> String {
        call(self.repo);
        self.tool(&format!("mcp__checkpoint__{tool}"), input);
        format!("toolu_{}_{}", &self.id[..4], self.calls)
    }

    fn tool(&mut self, name: &str, input: Value) {
        self.calls += 1;
        let call = format!("toolu_{}_{}", &self.id[..4], self.calls);
        self.hook(json!({
            "hook_event_name": "PostToolUse",
            "tool_name": name,
            "tool_use_id": call,
            "tool_input": input,
            "tool_response": {},
        }));
    }
}
