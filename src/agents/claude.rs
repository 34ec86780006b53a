//! Claude Code's side of the agent hooks.
//!
//! Claude Code reads hooks from `settings.json` (the project's `.claude/settings.json`
//! or the user's `~/.claude/settings.json`) and runs each hook command with a JSON
//! description of the event on stdin. [`install_claude`] merges two hooks into that file
//! — a save when the user submits a prompt, and one after each tool that can change
//! files — and [`uninstall_claude`] takes out exactly those, leaving everything else,
//! including the file's indentation and key order, as it was. [`run_claude`] is what the
//! hooks run: it saves with the session and event as metadata.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{Map, Value};

use super::log_failure;
use super::settings_file::SettingsFile;
use crate::git::repo::Repo;
use crate::git::settings;
use crate::ops::gc::AutoGc;
use crate::ops::save::{self, SaveOptions, SaveOutcome};
use crate::{CheckpointId, Error, Result};

/// The command the Claude Code hooks run.
pub const CLAUDE_HOOK_COMMAND: &str = "git checkpoint hooks run claude";
/// Claude Code's tools that can change files; a checkpoint is saved after each use.
pub const CLAUDE_FILE_TOOLS: &str = "Edit|Write|MultiEdit|NotebookEdit|Bash";
/// The hook events and the tool matcher of each (`None`: the event takes no matcher).
const CLAUDE_EVENTS: [(&str, Option<&str>); 2] = [
    ("UserPromptSubmit", None),
    ("PostToolUse", Some(CLAUDE_FILE_TOOLS)),
];

/// Claude Code's settings file: the project's, at the top of the worktree, or without
/// one the user's in `$HOME`.
pub fn claude_settings_path(worktree_root: Option<&Path>) -> Result<PathBuf> {
    let base = match worktree_root {
        Some(root) => root.to_path_buf(),
        None => std::env::var_os("HOME")
            .filter(|home| !home.is_empty())
            .map(PathBuf::from)
            .ok_or_else(|| Error::InvalidArgument("HOME is not set".into()))?,
    };
    Ok(base.join(".claude/settings.json"))
}

/// Adds the checkpoint hooks to the Claude Code settings file at `path`, creating it if
/// needed. Returns false if they were there already (the file is then left alone).
pub fn install_claude(path: &Path) -> Result<bool> {
    let file = SettingsFile::read(path)?;
    let mut settings = file.value.clone();
    if !add_claude_hooks(&mut settings).map_err(|why| malformed(&file, why))? {
        return Ok(false);
    }
    file.write(&settings)?;
    Ok(true)
}

/// Removes the hooks [`install_claude`] added to the settings file at `path`, and the
/// containers it created for them once they are empty (the file itself, if nothing else
/// is left). Returns false if there was nothing to remove.
pub fn uninstall_claude(path: &Path) -> Result<bool> {
    if std::fs::symlink_metadata(path).is_err() {
        return Ok(false);
    }
    let file = SettingsFile::read(path)?;
    let mut settings = file.value.clone();
    if !remove_claude_hooks(&mut settings) {
        return Ok(false);
    }
    if settings.as_object().is_some_and(Map::is_empty) {
        file.remove()?;
    } else {
        file.write(&settings)?;
    }
    Ok(true)
}

/// A hook group that runs our command, as Claude Code's settings spell it.
fn claude_group(matcher: Option<&str>) -> Value {
    let mut group = Map::new();
    if let Some(matcher) = matcher {
        group.insert("matcher".into(), matcher.into());
    }
    group.insert(
        "hooks".into(),
        serde_json::json!([{"type": "command", "command": CLAUDE_HOOK_COMMAND}]),
    );
    Value::Object(group)
}

fn is_our_hook(hook: &Value) -> bool {
    hook.get("command").and_then(Value::as_str) == Some(CLAUDE_HOOK_COMMAND)
}

/// Adds our hook groups to parsed settings; false if every one is there already.
/// Fails (with the reason) if the settings are not shaped as Claude Code expects.
fn add_claude_hooks(settings: &mut Value) -> std::result::Result<bool, String> {
    let root = settings
        .as_object_mut()
        .ok_or("the top level is not a JSON object")?;
    let hooks = root
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or("\"hooks\" is not an object")?;
    let mut changed = false;
    for (event, matcher) in CLAUDE_EVENTS {
        let groups = hooks
            .entry(event)
            .or_insert_with(|| Value::Array(Vec::new()))
            .as_array_mut()
            .ok_or_else(|| format!("\"hooks\".\"{event}\" is not an array"))?;
        let present = groups.iter().any(|group| {
            group.get("matcher").and_then(Value::as_str) == matcher
                && group
                    .get("hooks")
                    .and_then(Value::as_array)
                    .is_some_and(|list| list.iter().any(is_our_hook))
        });
        if !present {
            groups.push(claude_group(matcher));
            changed = true;
        }
    }
    Ok(changed)
}

/// Removes our hooks from parsed settings, and each group, event list and `hooks` object
/// that holds nothing once they are gone. Returns whether anything was removed.
fn remove_claude_hooks(settings: &mut Value) -> bool {
    let Some(root) = settings.as_object_mut() else {
        return false;
    };
    let Some(hooks) = root.get_mut("hooks").and_then(Value::as_object_mut) else {
        return false;
    };
    let mut removed = false;
    for (event, _) in CLAUDE_EVENTS {
        let Some(groups) = hooks.get_mut(event).and_then(Value::as_array_mut) else {
            continue;
        };
        groups.retain_mut(|group| {
            let Some(list) = group.get_mut("hooks").and_then(Value::as_array_mut) else {
                return true;
            };
            let before = list.len();
            list.retain(|hook| !is_our_hook(hook));
            if list.len() == before {
                return true;
            }
            removed = true;
            !list.is_empty()
        });
        if removed && groups.is_empty() {
            hooks.remove(event);
        }
    }
    if removed && hooks.is_empty() {
        root.remove("hooks");
    }
    removed
}

/// Why `file` cannot take our hooks, for an install to fail with.
fn malformed(file: &SettingsFile, why: impl std::fmt::Display) -> Error {
    Error::InvalidArgument(format!(
        "{} is not laid out as Claude Code's settings are: {why}",
        file.target.display()
    ))
}

/// The fields of Claude Code's hook input that a save records.
#[derive(Debug, Default, Deserialize)]
pub struct ClaudeEvent {
    /// The conversation.
    pub session_id: Option<String>,
    /// `UserPromptSubmit`, `PostToolUse`, …
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
}

impl ClaudeEvent {
    /// Parses the JSON Claude Code writes to a hook's stdin.
    pub fn parse(input: &[u8]) -> Result<ClaudeEvent> {
        serde_json::from_slice(input)
            .map_err(|e| Error::InvalidArgument(format!("the hook input is not valid JSON: {e}")))
    }

    /// The metadata a checkpoint saved for this event carries.
    pub fn meta(&self) -> Vec<(String, String)> {
        let mut meta = vec![("agent".to_string(), "claude".to_string())];
        for (key, value) in [
            ("session", &self.session_id),
            ("event", &self.hook_event_name),
            ("tool", &self.tool_name),
        ] {
            if let Some(value) = value {
                meta.push((key.to_string(), value.clone()));
            }
        }
        meta
    }

    /// A one-line message for the checkpoint: the start of the prompt, or the tool and
    /// what it worked on.
    pub fn message(&self) -> String {
        let event = self.hook_event_name.as_deref().unwrap_or("hook");
        match (event, &self.tool_name) {
            ("UserPromptSubmit", _) => match &self.prompt {
                Some(prompt) => format!("before prompt: {}", first_line(prompt)),
                None => "before prompt".to_string(),
            },
            (_, Some(tool)) => {
                let input = self.tool_input.as_ref();
                let what = ["file_path", "notebook_path", "command"]
                    .iter()
                    .find_map(|key| input?.get(key)?.as_str());
                match what {
                    Some(what) => {
                        // Paths relative to where the agent works read better in a log.
                        let cwd = self.cwd.as_deref().unwrap_or(Path::new("/"));
                        let what = Path::new(what)
                            .strip_prefix(cwd)
                            .map(|p| p.display().to_string())
                            .unwrap_or_else(|_| what.to_string());
                        format!("after {tool}: {}", first_line(&what))
                    }
                    None => format!("after {tool}"),
                }
            }
            (event, None) => format!("claude {event}"),
        }
    }
}

/// The first line of `text`, cut to about 72 characters.
fn first_line(text: &str) -> String {
    const MAX: usize = 72;
    let line = text.trim().lines().next().unwrap_or_default();
    if line.chars().count() > MAX {
        let cut: String = line.chars().take(MAX - 1).collect();
        format!("{cut}…")
    } else {
        line.to_string()
    }
}

/// Saves a checkpoint for the Claude Code hook event in `input`, in the event's `cwd`
/// (or `fallback_dir`). Returns the new checkpoint, or `None` if nothing changed.
/// A failure after the worktree is found is also appended to its hooks log.
pub fn run_claude(input: &[u8], fallback_dir: &Path) -> Result<Option<CheckpointId>> {
    let event = ClaudeEvent::parse(input);
    let dir = event
        .as_ref()
        .ok()
        .and_then(|e| e.cwd.clone())
        .unwrap_or_else(|| fallback_dir.to_path_buf());
    let repo = Repo::discover(&dir)?;
    let result = event.and_then(|event| save_for(&repo, &event));
    if let Err(error) = &result {
        log_failure(&repo, &error.to_string());
    }
    result
}

fn save_for(repo: &Repo, event: &ClaudeEvent) -> Result<Option<CheckpointId>> {
    let mut store = settings::open_store(repo, &mut || {})?;
    let options = SaveOptions {
        message: event.message(),
        meta: event.meta(),
        compression_level: repo.settings.compression.get()?,
        ..SaveOptions::default()
    };
    // Agents save hundreds of times a session: their saves keep `checkpoint.gc.*` too.
    let report = save::save_then_gc(repo, &mut store, &options)?;
    if let Some(AutoGc::Skipped(e) | AutoGc::Failed(e)) = &report.gc {
        log_failure(repo, &format!("automatic gc: {e}"));
    }
    let saved = match report.outcome {
        SaveOutcome::Saved { id, .. } => id,
        SaveOutcome::Unchanged { .. } => return Ok(None),
    };
    Ok(Some(saved))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn install_keeps_other_hooks_and_is_idempotent() {
        let mut settings = json!({
            "model": "x",
            "hooks": {"PostToolUse": [{"matcher": "Write", "hooks": [{"type": "command", "command": "fmt"}]}]}
        });
        let original = settings.clone();
        assert_eq!(add_claude_hooks(&mut settings), Ok(true));
        assert_eq!(add_claude_hooks(&mut settings), Ok(false));
        let post = settings["hooks"]["PostToolUse"].as_array().unwrap();
        assert_eq!(post.len(), 2);
        assert_eq!(post[0], original["hooks"]["PostToolUse"][0]);
        assert_eq!(post[1]["matcher"], CLAUDE_FILE_TOOLS);
        assert!(settings["hooks"]["UserPromptSubmit"][0]
            .get("matcher")
            .is_none());
        assert!(remove_claude_hooks(&mut settings));
        assert_eq!(settings, original);
        assert!(!remove_claude_hooks(&mut settings));
    }

    #[test]
    fn odd_settings_are_refused_not_overwritten() {
        assert!(add_claude_hooks(&mut json!([1])).is_err());
        assert!(add_claude_hooks(&mut json!({"hooks": 3})).is_err());
        assert!(add_claude_hooks(&mut json!({"hooks": {"PostToolUse": {}}})).is_err());
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
        assert_eq!(event.message(), "after Edit: src/a.rs");
        let prompt = ClaudeEvent {
            hook_event_name: Some("UserPromptSubmit".into()),
            prompt: Some(format!("{}\nmore", "x".repeat(100))),
            ..ClaudeEvent::default()
        };
        assert_eq!(
            prompt.message().chars().count(),
            "before prompt: ".len() + 72
        );
    }
}
