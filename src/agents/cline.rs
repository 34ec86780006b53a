//! Cline's side of the agent hooks.
//!
//! Cline has no hooks settings file: a hook is an executable file named after its event,
//! without extension, in the project's `.clinerules/hooks/` or the user's global hooks
//! directory (`~/Documents/Cline/Hooks/`), run with a JSON description of the event on
//! stdin; it must answer with a JSON object on stdout, `{"cancel": false}` to let Cline
//! go on (docs.cline.bot/customization/hooks, docs.cline.bot/features/hooks/hook-reference).
//! Installing ([`Cline`]) writes three small wrapper scripts of ours, `UserPromptSubmit`,
//! `PreToolUse` and `PostToolUse`, that run `git checkpoint hooks run cline`;
//! uninstalling deletes exactly those (recognised by their content) and the hooks
//! directory once it is empty; a hook run answers [`CLINE_REPLY`]. Cline runs
//! `PreToolUse` before every tool; a checkpoint is saved only before one that names no
//! file it changes (`execute_command`, an MCP tool): with the one after it, it brackets
//! what the call changed.
//!
//! A hook file of the user's own with one of those names is never overwritten: Cline runs
//! one file per event and directory, so install refuses, naming the file, and writes
//! nothing (the user can call `git checkpoint hooks run cline` from their own hook, or
//! use `--global`, whose hooks Cline runs beside the project's).
//!
//! Confirmed against the documentation and Cline's hook runner (github.com/cline/cline,
//! `apps/vscode/src/core/hooks/hook-factory.ts`, `utils.ts`, `proto/cline/hooks.proto`,
//! `src/sdk/hooks-adapter.ts`): the file names, that a Unix hook must be an executable
//! regular file, the global directory (`<Documents>/Cline/Hooks`; on Linux Cline asks
//! `xdg-user-dir DOCUMENTS` first, which we do not, so `$HOME/Documents` is used, which
//! is what Cline uses on macOS: `getDocumentsPath` in `src/core/storage/disk.ts`), the
//! payload (`hookName`, `taskId`, `workspaceRoots`, `userPromptSubmit.prompt`,
//! `preToolUse.toolName`, `.parameters`, `postToolUse.toolName`, `.parameters` — a map
//! of strings, objects JSON-encoded — `.success`), and the reply (the last JSON object on stdout; `cancel` optional, a
//! hook's missing or failed reply does not block a tool). Cline serialises the payload
//! with proto3's JSON rules, which leave out a `false` boolean, so a `postToolUse`
//! without `success` reports a failed tool. Tool parameters as the sources name them:
//! `path` (`write_to_file`, `replace_in_file`, `editor`, …), `command`
//! (`execute_command`), `commands` (`run_commands`), `input` (`apply_patch`, Codex's patch
//! grammar). The documentation's discovery section once named `~/Documents/Cline/Rules/Hooks/`;
//! the source and the other pages say `~/Documents/Cline/Hooks/`, which is used.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value};

use super::agent::{Agent, HookRun};
use super::event::{workspace_root, AgentEvent, Payload, Step};
use super::kinds::{HooksState, Installed, Scope};
use super::mcp_entry::{Directory, Format, McpConfig, UserFile};
use super::paths::{holds_exactly, home_dir, settings_path_under, worktree_top};
use crate::{Error, Result};

/// The command our wrapper scripts run.
pub const CLINE_HOOK_COMMAND: &str = "git checkpoint hooks run cline";
/// The project's hooks directory, from the worktree's top.
pub const CLINE_HOOKS_DIR: &str = ".clinerules/hooks";
/// The user's hooks directory, from the home directory.
pub const CLINE_GLOBAL_HOOKS_DIR: &str = "Documents/Cline/Hooks";
/// The events we hook, which are also our wrapper files' names.
pub const CLINE_EVENTS: &[&str] = &["UserPromptSubmit", "PreToolUse", "PostToolUse"];
/// What every hook run prints: Cline goes on, whatever became of the save.
pub const CLINE_REPLY: &str = "{\"cancel\":false}";
/// Our wrapper script, byte for byte: uninstall removes a hook file only if it is this.
pub const CLINE_HOOK_SCRIPT: &str = "#!/bin/sh\n\
# Written by 'git checkpoint hooks install cline'; 'git checkpoint hooks uninstall cline' removes it.\n\
exec git checkpoint hooks run cline\n";

/// Tools that only read or talk: Cline runs `PostToolUse` after every tool (a hook file
/// has no matcher), and these cannot change the worktree, so they get no checkpoint.
const READ_ONLY_TOOLS: &[&str] = &[
    "read_file",
    "read_files",
    "list_files",
    "search_files",
    "search_codebase",
    "list_code_definition_names",
    "ask_followup_question",
    "ask_question",
    "attempt_completion",
    "plan_mode_respond",
    "act_mode_respond",
    "focus_chain",
    "web_fetch",
    "web_search",
    "fetch_web_content",
    "load_mcp_documentation",
    "access_mcp_resource",
];

/// Cline: our wrapper scripts in `.clinerules/hooks` in the worktree (with or without
/// [`Scope::Shared`]), or the user's `~/Documents/Cline/Hooks`. Its hooks path is a
/// directory, refused also when the hook file of an event we use is, or lies below, a
/// symlink leading out of the worktree (the home directory for the global one).
pub struct Cline;

impl Agent for Cline {
    fn name(&self) -> &'static str {
        "cline"
    }

    fn about(&self) -> &'static str {
        "Cline"
    }

    fn worktree_hook_files(&self) -> Vec<String> {
        CLINE_EVENTS
            .iter()
            .map(|event| format!("{CLINE_HOOKS_DIR}/{event}"))
            .collect()
    }

    /// Only the user's `cline_mcp_settings.json`, in the storage Cline's CLI and newer
    /// versions share (`~/.cline/data/settings`, on macOS too; an older VS Code extension
    /// kept it in VS Code's `globalStorage`, under `~/Library/Application Support/Code/`
    /// on macOS: docs/agents.md, "On macOS"); Cline starts servers in `/`, so the entry
    /// names the worktree with `-C`.
    fn mcp(&self) -> Option<McpConfig> {
        Some(McpConfig {
            project: None,
            user: UserFile {
                env: None,
                home: ".cline/data/settings",
                file: "cline_mcp_settings.json",
            },
            format: Format::Json {
                fixed: &[("type", "\"stdio\"")],
                after: &[],
            },
            directory: Directory::Elsewhere,
        })
    }

    fn hooks_path(&self, scope: Scope, start: &Path) -> Result<PathBuf> {
        let (base, dir) = match scope {
            Scope::Global => (home_dir()?, Path::new(CLINE_GLOBAL_HOOKS_DIR)),
            Scope::Personal | Scope::Shared => (worktree_top(start)?, Path::new(CLINE_HOOKS_DIR)),
        };
        for event in CLINE_EVENTS {
            settings_path_under(&base, &dir.join(event))?;
        }
        settings_path_under(&base, dir)
    }

    fn install(&self, dir: &Path) -> Result<Installed> {
        install(dir).map(Installed::added)
    }

    fn uninstall(&self, dir: &Path) -> Result<bool> {
        uninstall(dir)
    }

    /// Ours are the wrapper scripts, exactly as this build writes them; a script of
    /// another content is not ours.
    fn hooks_state(&self, dir: &Path) -> Result<HooksState> {
        let mut ours = 0;
        for event in CLINE_EVENTS {
            if is_ours(&dir.join(event))? == Some(true) {
                ours += 1;
            }
        }
        Ok(match ours {
            0 => HooksState::Missing,
            n if n == CLINE_EVENTS.len() => HooksState::Current,
            _ => HooksState::Outdated,
        })
    }

    /// A tool that only reads gets no checkpoint, and a tool that names its file none
    /// before it. Every run prints [`CLINE_REPLY`], whatever became of the save. Cline
    /// runs a hook in its workspace root, which is `fallback_dir` for an event that
    /// names none.
    fn run(&self, input: &[u8], fallback_dir: &Path) -> Result<HookRun> {
        let event = ClineEvent::read(input);
        if let Ok(event) = &event {
            let reads = event
                .tool
                .as_deref()
                .is_some_and(|tool| READ_ONLY_TOOLS.contains(&tool));
            if reads || !event.needs_checkpoint(&[]) {
                return Ok(HookRun::nothing(CLINE_REPLY));
            }
        }
        Ok(HookRun::save(event, fallback_dir, CLINE_REPLY))
    }
}

/// Whether the file at `path` is one of our wrapper scripts (a regular file holding
/// exactly [`CLINE_HOOK_SCRIPT`]); `None` when there is nothing at `path`.
fn is_ours(path: &Path) -> Result<Option<bool>> {
    holds_exactly(path, CLINE_HOOK_SCRIPT.as_bytes())
}

/// Writes our wrapper scripts into the Cline hooks directory `dir`, creating it if
/// needed. Returns false if they were all there already. Refuses, writing nothing, when a
/// file of the same name that is not ours is there.
fn install(dir: &Path) -> Result<bool> {
    let mut missing = Vec::new();
    for event in CLINE_EVENTS {
        let path = dir.join(event);
        match is_ours(&path)? {
            None => missing.push(path),
            Some(true) => {}
            Some(false) => {
                return Err(Error::InvalidArgument(format!(
                    "{} is a Cline hook that git-checkpoint did not write; refusing to \
                     replace it (Cline runs one {event} file per hooks directory: move it \
                     aside, have it run '{CLINE_HOOK_COMMAND}' itself, or install with \
                     --global)",
                    path.display()
                )))
            }
        }
    }
    if missing.is_empty() {
        return Ok(false);
    }
    std::fs::create_dir_all(dir).map_err(|e| {
        Error::InvalidArgument(format!(
            "cannot create Cline's hooks directory {} ({e}); a .clinerules file of rules \
             must become a directory first",
            dir.display()
        ))
    })?;
    for path in missing {
        // `create_new`: never through a link, never over a file that appeared meanwhile.
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o755)
            .open(&path)
            .map_err(|e| Error::io(&path, e))?;
        file.write_all(CLINE_HOOK_SCRIPT.as_bytes())
            .map_err(|e| Error::io(&path, e))?;
    }
    Ok(true)
}

/// Deletes the wrapper scripts [`install`] wrote in `dir` (a file of the same name
/// with other content is the user's and stays), then `dir` if that left it empty, and
/// the project's `.clinerules` above it if that is then empty too. Returns false if there
/// was nothing to remove.
fn uninstall(dir: &Path) -> Result<bool> {
    let mut removed = false;
    for event in CLINE_EVENTS {
        let path = dir.join(event);
        if is_ours(&path)? == Some(true) {
            std::fs::remove_file(&path).map_err(|e| Error::io(&path, e))?;
            removed = true;
        }
    }
    if removed && std::fs::remove_dir(dir).is_ok() {
        // Removed only when empty; a `.clinerules` with rules in it stays.
        if let Some(parent) = dir.parent().filter(|p| p.ends_with(".clinerules")) {
            let _ = std::fs::remove_dir(parent);
        }
    }
    Ok(removed)
}

/// The fields of Cline's hook input that a save records.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClineEvent {
    /// The task: Cline's conversation, recorded as the session.
    pub task_id: Option<String>,
    /// `UserPromptSubmit`, `PostToolUse`, …
    pub hook_name: Option<String>,
    /// The workspace's root folders (usually one).
    #[serde(default)]
    pub workspace_roots: Vec<PathBuf>,
    /// The prompt (`UserPromptSubmit`).
    pub user_prompt_submit: Option<ClinePrompt>,
    /// The tool about to run (`PreToolUse`).
    pub pre_tool_use: Option<ClineToolUse>,
    /// The tool that just ran (`PostToolUse`).
    pub post_tool_use: Option<ClineToolUse>,
}

/// `userPromptSubmit` of Cline's hook input.
#[derive(Debug, Default, Deserialize)]
pub struct ClinePrompt {
    /// The text the user sent.
    pub prompt: Option<String>,
}

/// `preToolUse` or `postToolUse` of Cline's hook input.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClineToolUse {
    /// `write_to_file`, `replace_in_file`, `execute_command`, `editor`, …
    pub tool_name: Option<String>,
    /// The tool's parameters, each a string (objects and lists JSON-encoded).
    #[serde(default)]
    pub parameters: Map<String, Value>,
    /// Whether the tool succeeded; left out when false (see the module's notes), and
    /// before the tool ran.
    pub success: Option<bool>,
}

impl ClineToolUse {
    /// The parameter `key` as text.
    fn text(&self, key: &str) -> Option<String> {
        self.parameters
            .get(key)?
            .as_str()
            .map(str::to_string)
            .filter(|s| !s.is_empty())
    }

    /// The files the tool works on, as it names them: every file of a patch.
    fn files(&self) -> Vec<String> {
        match self.tool_name.as_deref() {
            Some("apply_patch") => self
                .text("input")
                .as_deref()
                .map(super::codex::patched_files)
                .unwrap_or_default(),
            _ => self
                .text("path")
                .or_else(|| self.text("file_path"))
                .into_iter()
                .collect(),
        }
    }

    /// The command a shell tool ran: `command`, or `run_commands`' list joined.
    fn command(&self) -> Option<String> {
        if let Some(command) = self.text("command") {
            return Some(command);
        }
        let commands = self.text("commands")?;
        match serde_json::from_str::<Vec<Value>>(&commands) {
            Ok(list) => Some(
                list.iter()
                    .map(|c| {
                        c.as_str()
                            .map(str::to_string)
                            .unwrap_or_else(|| c.to_string())
                    })
                    .collect::<Vec<_>>()
                    .join("; "),
            ),
            Err(_) => Some(commands),
        }
    }
}

/// The worktree is the workspace root holding the file the tool names (absolute in
/// Cline's newer tools), else the first root.
impl Payload for ClineEvent {
    fn into_event(self) -> AgentEvent {
        let event = self.hook_name.clone().or_else(|| {
            let name = match (
                &self.user_prompt_submit,
                &self.pre_tool_use,
                &self.post_tool_use,
            ) {
                (Some(_), _, _) => "UserPromptSubmit",
                (None, Some(_), _) => "PreToolUse",
                (None, None, Some(_)) => "PostToolUse",
                (None, None, None) => return None,
            };
            Some(name.to_string())
        });
        let tool = self.post_tool_use.or(self.pre_tool_use).unwrap_or_default();
        let step = match event.as_deref() {
            Some("UserPromptSubmit") => Step::Prompt,
            Some("PostToolUse") => Step::Tool {
                failed: tool.success != Some(true),
            },
            Some("PreToolUse") => Step::BeforeTool,
            _ => Step::Other,
        };
        let files = tool.files();
        let cwd = workspace_root(
            &self.workspace_roots,
            files.first().map(Path::new).filter(|f| f.is_absolute()),
        );
        AgentEvent {
            agent: "cline",
            session: self.task_id,
            event,
            step,
            prompt: self.user_prompt_submit.and_then(|p| p.prompt),
            command: tool.command(),
            tool: tool.tool_name,
            tool_use_id: None,
            prompt_id: None,
            subagent: None,
            files,
            cwd,
            // Cline's payloads name no transcript.
            transcript: None,
            transcript_dirs: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(payload: Value) -> AgentEvent {
        ClineEvent::read(payload.to_string().as_bytes()).unwrap()
    }

    #[test]
    fn tools_give_their_file_or_command_and_a_missing_success_is_a_failure() {
        let edit = event(json!({"hookName": "PostToolUse", "taskId": "t",
            "workspaceRoots": ["/a", "/b"],
            "postToolUse": {"toolName": "editor", "parameters": {"path": "/b/x.rs"}, "success": true}}));
        assert_eq!(edit.step, Step::Tool { failed: false });
        assert_eq!(edit.cwd.as_deref(), Some(Path::new("/b")));
        assert_eq!(edit.files, ["/b/x.rs"]);
        let run = event(json!({"hookName": "PostToolUse", "workspaceRoots": ["/a"],
            "postToolUse": {"toolName": "run_commands",
                "parameters": {"commands": "[\"make\",\"make test\"]"}}}));
        assert_eq!(run.step, Step::Tool { failed: true });
        assert_eq!(run.command.as_deref(), Some("make; make test"));
        let patch = event(json!({"postToolUse": {"toolName": "apply_patch",
            "parameters": {"input": "*** Begin Patch\n*** Add File: n.txt\n+x\n*** End Patch"},
            "success": true}}));
        assert_eq!(patch.event.as_deref(), Some("PostToolUse"));
        assert_eq!(patch.files, ["n.txt"]);
    }
}
