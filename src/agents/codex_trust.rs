//! Whether Codex will run the hooks `hooks install codex` put in a `hooks.json`.
//!
//! Codex runs a hook that is not managed by an administrator only once the user trusted
//! it (the review its terminal UI shows as "Hooks need review", or `/hooks`), and
//! `codex exec` skips an untrusted one without a word. The trust is kept in the user's
//! `config.toml` (`$CODEX_HOME`, else `~/.codex`), one entry per hook handler:
//!
//! ```toml
//! [hooks.state."/abs/project/.codex/hooks.json:post_tool_use:0:0"]
//! trusted_hash = "sha256:…"
//! ```
//!
//! keyed by the hooks file's absolute path, the event in snake case, and the indexes of
//! the matcher group and of the handler in it; the hash is SHA-256 over Codex's
//! normalized identity of the handler, as JSON with sorted keys:
//! `{"event_name", "hooks": [{"async", "command", "timeout", "type"}], "matcher"}`, the
//! matcher only for the events that take one, the timeout 600 when none is given
//! (openai/codex `codex-rs/hooks/src/engine/discovery.rs`, `command_hook_hash`; the
//! hashes this computes equal those Codex CLI 0.171.0 wrote, which the real-agent test
//! checks). Changing a hook changes its hash, and Codex then skips it until it is
//! trusted again. A project's own `.codex/` is read only when the project is trusted
//! (`[projects."<dir>"] trust_level = "trusted"`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use sha2::{Digest, Sha256};
use toml_edit::Item;

use super::kinds::{HooksTrust, Scope};
use super::mcp_toml;
use super::paths::{agent_home, resolved};
use crate::{Error, Result};

/// The events whose matcher Codex keeps (and hashes); it drops the others' matchers.
const EVENTS_WITH_MATCHER: [&str; 4] = [
    "PreToolUse",
    "PermissionRequest",
    "PostToolUse",
    "SessionStart",
];

/// The timeout Codex gives a hook that names none, in seconds.
const CODEX_DEFAULT_TIMEOUT: u64 = 600;

/// The user's Codex configuration, where its trust is kept.
fn config_file() -> Result<PathBuf> {
    agent_home("CODEX_HOME", ".codex")
        .map(|dir| dir.join("config.toml"))
        .ok_or_else(|| Error::InvalidArgument("HOME is not set".into()))
}

/// Whether Codex trusts the handlers running `command` in the hooks file `hooks_file`
/// (installed for `scope`), by the user's `config.toml`: the project first (for a
/// project's file), then each handler's hash.
pub fn check(scope: Scope, hooks_file: &Path, command: &str) -> Result<HooksTrust> {
    let config = mcp_toml::read(&config_file()?)?.unwrap_or_default();
    let hooks_file = resolved(hooks_file);
    if scope != Scope::Global {
        let project = hooks_file
            .parent()
            .and_then(Path::parent)
            .unwrap_or(Path::new("/"))
            .to_path_buf();
        let trust = config
            .get("projects")
            .and_then(|projects| projects.get(project.display().to_string()))
            .and_then(|entry| entry.get("trust_level"))
            .and_then(Item::as_str);
        if trust != Some("trusted") {
            return Ok(HooksTrust::ProjectUntrusted { project });
        }
    }
    let text = std::fs::read_to_string(&hooks_file).map_err(|e| Error::io(&hooks_file, e))?;
    let hooks: Value = serde_json::from_str(&text).map_err(|e| {
        Error::InvalidArgument(format!("{} is not valid JSON: {e}", hooks_file.display()))
    })?;
    let states = config.get("hooks").and_then(|hooks| hooks.get("state"));
    let mut verdict = HooksTrust::Trusted;
    for (event, group_index, matcher, handler_index, handler) in handlers(&hooks, command) {
        let key = format!(
            "{}:{}:{group_index}:{handler_index}",
            hooks_file.display(),
            snake_case(event)
        );
        let state = states.and_then(|states| states.get(&key));
        if state.and_then(|s| s.get("enabled")).and_then(Item::as_bool) == Some(false) {
            return Ok(HooksTrust::Disabled);
        }
        let trusted = state
            .and_then(|s| s.get("trusted_hash"))
            .and_then(Item::as_str);
        match trusted {
            None => verdict = HooksTrust::Untrusted,
            Some(hash) if hash != trust_hash(event, matcher, handler) => {
                if verdict == HooksTrust::Trusted {
                    verdict = HooksTrust::Changed;
                }
            }
            Some(_) => {}
        }
    }
    Ok(verdict)
}

/// Each handler of `hooks` (a `hooks.json`) that runs `command`: its event, its matcher
/// group's index and matcher, its index in the group, and itself.
fn handlers<'h>(
    hooks: &'h Value,
    command: &str,
) -> Vec<(&'h str, usize, Option<&'h str>, usize, &'h Value)> {
    let mut found = Vec::new();
    let Some(events) = hooks.get("hooks").and_then(Value::as_object) else {
        return found;
    };
    for (event, groups) in events {
        for (group_index, group) in groups.as_array().into_iter().flatten().enumerate() {
            let matcher = group.get("matcher").and_then(Value::as_str);
            let list = group.get("hooks").and_then(Value::as_array);
            for (handler_index, handler) in list.into_iter().flatten().enumerate() {
                if handler.get("command").and_then(Value::as_str) == Some(command) {
                    found.push((event.as_str(), group_index, matcher, handler_index, handler));
                }
            }
        }
    }
    found
}

/// The hash Codex records when the user trusts `handler` of `event`'s group with
/// `matcher`.
fn trust_hash(event: &str, matcher: Option<&str>, handler: &Value) -> String {
    let timeout = handler
        .get("timeout")
        .and_then(Value::as_u64)
        .unwrap_or(CODEX_DEFAULT_TIMEOUT)
        .max(1);
    let is_async = handler
        .get("async")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let normalized: BTreeMap<&str, Value> = BTreeMap::from([
        ("async", Value::from(is_async)),
        (
            "command",
            handler.get("command").cloned().unwrap_or(Value::Null),
        ),
        ("timeout", Value::from(timeout)),
        ("type", Value::from("command")),
    ]);
    let mut identity: BTreeMap<&str, Value> = BTreeMap::from([
        ("event_name", Value::from(snake_case(event))),
        ("hooks", serde_json::json!([normalized])),
    ]);
    if let Some(matcher) = matcher.filter(|_| EVENTS_WITH_MATCHER.contains(&event)) {
        identity.insert("matcher", Value::from(matcher));
    }
    // A map of JSON values always serializes; the keys are in order, as Codex sorts them.
    let canonical = serde_json::to_vec(&identity).unwrap_or_default();
    format!("sha256:{}", hex::encode(Sha256::digest(&canonical)))
}

/// `PostToolUse` as Codex labels it in its trust keys: `post_tool_use`.
fn snake_case(event: &str) -> String {
    let mut label = String::new();
    for (i, c) in event.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            label.push('_');
        }
        label.push(c.to_ascii_lowercase());
    }
    label
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The hashes the real Codex CLI 0.171.0 wrote when our hooks, as an earlier build
    /// installed them, were trusted in its review.
    #[test]
    fn the_hash_is_the_one_codex_writes() {
        let handler =
            json!({"type": "command", "command": "git checkpoint hooks run codex", "timeout": 30});
        assert_eq!(
            trust_hash("UserPromptSubmit", None, &handler),
            "sha256:7e39bd972a4a7134f324017b668205d5c2179271e9bf79588458bb5a985f05f9"
        );
        assert_eq!(
            trust_hash("PostToolUse", Some("Bash|apply_patch"), &handler),
            "sha256:dac8468fa474247e08d9583d7cafb9c35f1ce776616b761eed588b45907ed1f6"
        );
        // And as this build installs its before-tool hook (Codex 0.171.0 wrote it so).
        assert_eq!(
            trust_hash("PreToolUse", Some("^(Bash|mcp__checkpoint__.+)$"), &handler),
            "sha256:f3c60ced853380ef864634b964900f10bc98eea59adf3472432b859c3fb1f39e"
        );
        // UserPromptSubmit takes no matcher: one written there changes nothing.
        assert_eq!(
            trust_hash("UserPromptSubmit", Some("x"), &handler),
            trust_hash("UserPromptSubmit", None, &handler)
        );
        assert_eq!(snake_case("PostToolUse"), "post_tool_use");
    }
}
