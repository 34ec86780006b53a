//! Hooks files laid out as `{"version": 1, "hooks": {"<event>": [<hook>, …]}}`: a flat
//! list of hooks per event, no matcher groups (Cursor's `.cursor/hooks.json`, GitHub
//! Copilot CLI's `.github/hooks/*.json`). Installing adds one hook of ours to each event
//! and uninstalling takes out exactly those, through `settings_file`, so that everything
//! else in the file stays as it was.

use std::path::Path;

use serde_json::{Map, Value};

use super::settings_file::SettingsFile;
use crate::{Error, Result};

/// One agent's hooks file format and the hook we put in it.
pub(super) struct HookList {
    /// The agent, as error messages name it.
    pub(super) agent: &'static str,
    /// The events our hook is added to.
    pub(super) events: &'static [&'static str],
    /// The key of a hook that holds its command (`command`, `bash`, …).
    pub(super) command_key: &'static str,
    /// Our command, by which our hooks are recognised.
    pub(super) command: &'static str,
    /// Our hook as this build writes it.
    pub(super) hook: fn() -> Value,
}

impl HookList {
    /// Adds our hook to each event of the file at `path`, creating it if needed. Returns
    /// false if they were all there already (the file is then left alone).
    pub(super) fn install(&self, path: &Path) -> Result<bool> {
        let file = SettingsFile::read(path)?;
        let mut settings = file.value.clone();
        if !self.add(&mut settings).map_err(|why| {
            Error::InvalidArgument(format!(
                "{} is not laid out as {}'s hooks file is: {why}",
                file.target.display(),
                self.agent
            ))
        })? {
            return Ok(false);
        }
        file.write(&settings)?;
        Ok(true)
    }

    /// Removes the hooks [`install`](HookList::install) added, and what it created for
    /// them once it holds nothing else (the file itself when only `version` is left).
    /// Returns false if there was nothing to remove.
    pub(super) fn uninstall(&self, path: &Path) -> Result<bool> {
        if std::fs::symlink_metadata(path).is_err() {
            return Ok(false);
        }
        let file = SettingsFile::read(path)?;
        let mut settings = file.value.clone();
        if !self.remove(&mut settings) {
            return Ok(false);
        }
        let only_version = settings
            .as_object()
            .is_some_and(|root| root.keys().all(|key| key == "version"));
        if only_version {
            file.remove()?;
        } else {
            file.write(&settings)?;
        }
        Ok(true)
    }

    fn is_ours(&self, hook: &Value) -> bool {
        hook.get(self.command_key).and_then(Value::as_str) == Some(self.command)
    }

    /// Adds our hooks to parsed settings; false if every event has ours already, exactly
    /// as this build writes it. Hooks an older build wrote are replaced, never doubled.
    /// Fails (with the reason) if the settings are not shaped as the agent expects.
    fn add(&self, settings: &mut Value) -> std::result::Result<bool, String> {
        let wanted = (self.hook)();
        let current = self.events.iter().all(|event| {
            settings
                .pointer(&format!("/hooks/{event}"))
                .and_then(Value::as_array)
                .is_some_and(|hooks| hooks.contains(&wanted))
        });
        if current {
            return Ok(false);
        }
        self.remove(settings);
        let root = settings
            .as_object_mut()
            .ok_or("the top level is not a JSON object")?;
        // Both formats require it; a file that names another version is left to say so.
        root.entry("version").or_insert(Value::from(1));
        let hooks = root
            .entry("hooks")
            .or_insert_with(|| Value::Object(Map::new()))
            .as_object_mut()
            .ok_or("\"hooks\" is not an object")?;
        for event in self.events {
            hooks
                .entry(*event)
                .or_insert_with(|| Value::Array(Vec::new()))
                .as_array_mut()
                .ok_or_else(|| format!("\"hooks\".\"{event}\" is not an array"))?
                .push(wanted.clone());
        }
        Ok(true)
    }

    /// Removes our hooks from parsed settings, and each event list and `hooks` object
    /// that holds nothing once they are gone. Returns whether anything was removed.
    fn remove(&self, settings: &mut Value) -> bool {
        let Some(root) = settings.as_object_mut() else {
            return false;
        };
        let Some(hooks) = root.get_mut("hooks").and_then(Value::as_object_mut) else {
            return false;
        };
        let mut removed = false;
        for event in self.events {
            let Some(list) = hooks.get_mut(*event).and_then(Value::as_array_mut) else {
                continue;
            };
            let before = list.len();
            list.retain(|hook| !self.is_ours(hook));
            if list.len() != before {
                removed = true;
                if list.is_empty() {
                    hooks.remove(*event);
                }
            }
        }
        if removed && hooks.is_empty() {
            root.remove("hooks");
        }
        removed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const LIST: HookList = HookList {
        agent: "Test",
        events: &["a", "b"],
        command_key: "command",
        command: "ours",
        hook: || json!({"command": "ours"}),
    };

    #[test]
    fn add_keeps_other_hooks_is_idempotent_and_remove_undoes_it() {
        let mut settings = json!({"version": 1, "hooks": {"a": [{"command": "fmt"}]}, "x": 2});
        let original = settings.clone();
        assert_eq!(LIST.add(&mut settings), Ok(true));
        assert_eq!(LIST.add(&mut settings), Ok(false));
        assert_eq!(
            settings["hooks"]["a"],
            json!([{"command": "fmt"}, {"command": "ours"}])
        );
        assert_eq!(settings["hooks"]["b"], json!([{"command": "ours"}]));
        assert!(LIST.remove(&mut settings));
        assert_eq!(settings, original);
        assert!(!LIST.remove(&mut settings));
    }

    #[test]
    fn old_hooks_are_replaced_and_odd_files_refused() {
        let mut settings = json!({"hooks": {"a": [{"command": "ours", "timeout": 1}]}});
        assert_eq!(LIST.add(&mut settings), Ok(true));
        assert_eq!(settings["hooks"]["a"], json!([{"command": "ours"}]));
        assert!(LIST.add(&mut json!([1])).is_err());
        assert!(LIST.add(&mut json!({"hooks": 3})).is_err());
        assert!(LIST.add(&mut json!({"hooks": {"a": {}}})).is_err());
    }
}
