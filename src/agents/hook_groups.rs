//! Installing our hook into an agent's JSON settings where hooks are laid out as Claude
//! Code lays them out — `hooks.<Event>[] = {matcher?, hooks: [handler, …]}` — which
//! Codex CLI and Gemini CLI copied. Each agent module says which events, matchers and
//! handler; this module adds exactly those and takes exactly those out again, through
//! `settings_file` so that nothing else in the file changes.

use std::path::Path;

use serde_json::{Map, Value};

use super::kinds::{HooksState, Installed};
use super::settings_file;
use crate::Result;

/// One agent's hooks as install writes them.
pub(super) struct HookGroups {
    /// The agent's name for error messages ("Claude Code").
    pub(super) agent: &'static str,
    /// The command our handler runs; a handler with this command is ours.
    pub(super) command: &'static str,
    /// The hook events and the tool matcher of each (`None`: the event takes no matcher).
    pub(super) events: &'static [(&'static str, Option<&'static str>)],
    /// The handler object install writes (it holds `command`).
    pub(super) handler: fn() -> Value,
}

impl HookGroups {
    /// A hook group that runs our handler, as the agent's settings spell it.
    fn group(&self, matcher: Option<&str>) -> Value {
        let mut group = Map::new();
        if let Some(matcher) = matcher {
            group.insert("matcher".into(), matcher.into());
        }
        group.insert("hooks".into(), Value::Array(vec![(self.handler)()]));
        Value::Object(group)
    }

    /// Each event with the group install puts in its list.
    fn wanted(&self) -> Vec<(&'static str, Value)> {
        self.events
            .iter()
            .map(|(event, matcher)| (*event, self.group(*matcher)))
            .collect()
    }

    fn is_ours(&self, hook: &Value) -> bool {
        hook.get("command").and_then(Value::as_str) == Some(self.command)
    }

    /// Adds our hook groups to parsed settings; false if every one is there already,
    /// exactly as this build writes it. Hooks an older build installed (another
    /// matcher, no timeout) are replaced, never doubled. Fails (with the reason) if the
    /// settings are not shaped as the agent expects.
    pub(super) fn add(&self, settings: &mut Value) -> std::result::Result<bool, String> {
        let wanted = self.wanted();
        if settings_file::hooks_hold_all(settings, &wanted) {
            return Ok(false);
        }
        self.remove(settings);
        settings_file::push_to_hooks(settings, wanted)?;
        Ok(true)
    }

    /// Removes our hooks from parsed settings, and each group, event list and `hooks`
    /// object that holds nothing once they are gone. Returns whether anything was
    /// removed.
    pub(super) fn remove(&self, settings: &mut Value) -> bool {
        let events = self.events.iter().map(|(event, _)| *event);
        settings_file::take_from_hooks(settings, events, |groups| {
            let mut removed = false;
            groups.retain_mut(|group| {
                let Some(list) = group.get_mut("hooks").and_then(Value::as_array_mut) else {
                    return true;
                };
                let before = list.len();
                list.retain(|hook| !self.is_ours(hook));
                if list.len() == before {
                    return true;
                }
                removed = true;
                !list.is_empty()
            });
            removed
        })
    }

    /// Adds our hooks to the settings file at `path`, creating it if needed.
    /// [`Installed::AlreadyThere`] if they were there already (the file is then left alone).
    pub(super) fn install(&self, path: &Path) -> Result<Installed> {
        let what = format!("{}'s settings are", self.agent);
        settings_file::add_hooks(path, &what, |settings| self.add(settings)).map(Installed::added)
    }

    /// Whether our hooks are in the settings file at `path`, as this build writes them.
    pub(super) fn state(&self, path: &Path) -> Result<HooksState> {
        settings_file::hooks_state(path, &self.wanted(), |settings| self.remove(settings))
    }

    /// Removes the hooks [`install`](HookGroups::install) added to the settings file at
    /// `path`, and the containers it created for them once they are empty (the file
    /// itself, if nothing else is left). Returns false if there was nothing to remove.
    pub(super) fn uninstall(&self, path: &Path) -> Result<bool> {
        settings_file::remove_hooks(path, &[], |settings| self.remove(settings))
    }
}
