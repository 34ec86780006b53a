//! Hooks files laid out as `{"version": 1, "hooks": {"<event>": [<hook>, …]}}`: a flat
//! list of hooks per event, no matcher groups (Cursor's `.cursor/hooks.json`, GitHub
//! Copilot CLI's `.github/hooks/*.json`). Installing adds one hook of ours to each event
//! and uninstalling takes out exactly those, through `settings_file`, so that everything
//! else in the file stays as it was.

use std::path::Path;

use serde_json::Value;

use super::kinds::{HooksState, Installed};
use super::settings_file;
use crate::Result;

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
    /// Adds our hook to each event of the file at `path`, creating it if needed.
    /// [`Installed::AlreadyThere`] if they were all there already (the file is then left
    /// alone).
    pub(super) fn install(&self, path: &Path) -> Result<Installed> {
        let what = format!("{}'s hooks file is", self.agent);
        settings_file::add_hooks(path, &what, |settings| self.add(settings)).map(Installed::added)
    }

    /// Removes the hooks [`install`](HookList::install) added, and what it created for
    /// them once it holds nothing else (the file itself when only `version` is left).
    /// Returns false if there was nothing to remove.
    pub(super) fn uninstall(&self, path: &Path) -> Result<bool> {
        settings_file::remove_hooks(path, &["version"], |settings| self.remove(settings))
    }

    /// Whether our hooks are in the file at `path`, as this build writes them.
    pub(super) fn state(&self, path: &Path) -> Result<HooksState> {
        settings_file::hooks_state(path, &self.wanted(), |settings| self.remove(settings))
    }

    /// Each event with the hook install adds to its list.
    fn wanted(&self) -> Vec<(&'static str, Value)> {
        self.events
            .iter()
            .map(|event| (*event, (self.hook)()))
            .collect()
    }

    fn is_ours(&self, hook: &Value) -> bool {
        hook.get(self.command_key).and_then(Value::as_str) == Some(self.command)
    }

    /// Adds our hooks to parsed settings; false if every event has ours already, exactly
    /// as this build writes it. Hooks an older build wrote are replaced, never doubled.
    /// Fails (with the reason) if the settings are not shaped as the agent expects.
    fn add(&self, settings: &mut Value) -> std::result::Result<bool, String> {
        let wanted = self.wanted();
        if settings_file::hooks_hold_all(settings, &wanted) {
            return Ok(false);
        }
        self.remove(settings);
        // Both formats require it; a file that names another version is left to say so.
        if let Some(root) = settings.as_object_mut() {
            root.entry("version").or_insert(Value::from(1));
        }
        settings_file::push_to_hooks(settings, wanted)?;
        Ok(true)
    }

    /// Removes our hooks from parsed settings, and each event list and `hooks` object
    /// that holds nothing once they are gone. Returns whether anything was removed.
    fn remove(&self, settings: &mut Value) -> bool {
        settings_file::take_from_hooks(settings, self.events.iter().copied(), |list| {
            let before = list.len();
            list.retain(|hook| !self.is_ours(hook));
            list.len() != before
        })
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
    fn state_tells_ours_as_written_from_an_older_version_and_from_none() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hooks.json");
        let state = |path: &Path| LIST.state(path).unwrap();
        assert_eq!(state(&path), HooksState::Missing);
        std::fs::write(&path, r#"{"hooks": {"a": [{"command": "fmt"}]}}"#).unwrap();
        assert_eq!(state(&path), HooksState::Missing);
        LIST.install(&path).unwrap();
        assert_eq!(state(&path), HooksState::Current);
        std::fs::write(
            &path,
            r#"{"hooks": {"a": [{"command": "ours", "timeout": 1}]}}"#,
        )
        .unwrap();
        assert_eq!(state(&path), HooksState::Outdated);
        std::fs::write(&path, "[1").unwrap();
        assert!(LIST.state(&path).is_err());
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
