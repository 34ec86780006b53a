//! Installing our hook into an agent's JSON settings where hooks are laid out as Claude
//! Code lays them out — `hooks.<Event>[] = {matcher?, hooks: [handler, …]}` — which
//! Codex CLI and Gemini CLI copied. Each agent module says which events, matchers and
//! handler; this module adds exactly those and takes exactly those out again, through
//! `settings_file` so that nothing else in the file changes.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::settings_file::SettingsFile;
use crate::{Error, Result};

/// One agent's hooks as install writes them.
pub(super) struct HookLayout {
    /// The agent's name for error messages ("Claude Code").
    pub(super) agent: &'static str,
    /// The command our handler runs; a handler with this command is ours.
    pub(super) command: &'static str,
    /// The hook events and the tool matcher of each (`None`: the event takes no matcher).
    pub(super) events: &'static [(&'static str, Option<&'static str>)],
    /// The handler object install writes (it holds `command`).
    pub(super) handler: fn() -> Value,
}

impl HookLayout {
    /// A hook group that runs our handler, as the agent's settings spell it.
    fn group(&self, matcher: Option<&str>) -> Value {
        let mut group = Map::new();
        if let Some(matcher) = matcher {
            group.insert("matcher".into(), matcher.into());
        }
        group.insert("hooks".into(), Value::Array(vec![(self.handler)()]));
        Value::Object(group)
    }

    fn is_ours(&self, hook: &Value) -> bool {
        hook.get("command").and_then(Value::as_str) == Some(self.command)
    }

    /// Adds our hook groups to parsed settings; false if every one is there already,
    /// exactly as this build writes it. Hooks an older build installed (another
    /// matcher, no timeout) are replaced, never doubled. Fails (with the reason) if the
    /// settings are not shaped as the agent expects.
    pub(super) fn add(&self, settings: &mut Value) -> std::result::Result<bool, String> {
        let current = self.events.iter().all(|(event, matcher)| {
            let wanted = self.group(*matcher);
            settings
                .pointer(&format!("/hooks/{event}"))
                .and_then(Value::as_array)
                .is_some_and(|groups| groups.contains(&wanted))
        });
        if current {
            return Ok(false);
        }
        self.remove(settings);
        let root = settings
            .as_object_mut()
            .ok_or("the top level is not a JSON object")?;
        let hooks = root
            .entry("hooks")
            .or_insert_with(|| Value::Object(Map::new()))
            .as_object_mut()
            .ok_or("\"hooks\" is not an object")?;
        for (event, matcher) in self.events {
            hooks
                .entry(*event)
                .or_insert_with(|| Value::Array(Vec::new()))
                .as_array_mut()
                .ok_or_else(|| format!("\"hooks\".\"{event}\" is not an array"))?
                .push(self.group(*matcher));
        }
        Ok(true)
    }

    /// Removes our hooks from parsed settings, and each group, event list and `hooks`
    /// object that holds nothing once they are gone. Returns whether anything was
    /// removed.
    pub(super) fn remove(&self, settings: &mut Value) -> bool {
        let Some(root) = settings.as_object_mut() else {
            return false;
        };
        let Some(hooks) = root.get_mut("hooks").and_then(Value::as_object_mut) else {
            return false;
        };
        let mut removed = false;
        for (event, _) in self.events {
            let Some(groups) = hooks.get_mut(*event).and_then(Value::as_array_mut) else {
                continue;
            };
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
            if removed && groups.is_empty() {
                hooks.remove(*event);
            }
        }
        if removed && hooks.is_empty() {
            root.remove("hooks");
        }
        removed
    }

    /// Adds our hooks to the settings file at `path`, creating it if needed. Returns
    /// false if they were there already (the file is then left alone).
    pub(super) fn install(&self, path: &Path) -> Result<bool> {
        let file = SettingsFile::read(path)?;
        let mut settings = file.value.clone();
        if !self
            .add(&mut settings)
            .map_err(|why| self.malformed(&file, why))?
        {
            return Ok(false);
        }
        file.write(&settings)?;
        Ok(true)
    }

    /// Removes the hooks [`install`](HookLayout::install) added to the settings file at
    /// `path`, and the containers it created for them once they are empty (the file
    /// itself, if nothing else is left). Returns false if there was nothing to remove.
    pub(super) fn uninstall(&self, path: &Path) -> Result<bool> {
        if std::fs::symlink_metadata(path).is_err() {
            return Ok(false);
        }
        let file = SettingsFile::read(path)?;
        let mut settings = file.value.clone();
        if !self.remove(&mut settings) {
            return Ok(false);
        }
        if settings.as_object().is_some_and(Map::is_empty) {
            file.remove()?;
        } else {
            file.write(&settings)?;
        }
        Ok(true)
    }

    /// Why `file` cannot take our hooks, for an install to fail with.
    fn malformed(&self, file: &SettingsFile, why: impl std::fmt::Display) -> Error {
        Error::InvalidArgument(format!(
            "{} is not laid out as {}'s settings are: {why}",
            file.target.display(),
            self.agent
        ))
    }
}

/// The user's home directory, where agents keep their global settings.
pub(super) fn home_dir() -> Result<PathBuf> {
    std::env::var_os("HOME")
        .filter(|home| !home.is_empty())
        .map(PathBuf::from)
        .ok_or_else(|| Error::InvalidArgument("HOME is not set".into()))
}

/// `base/relative`, refused if it is, or lies below, a symlink leading outside `base`:
/// installing must never edit a file elsewhere through a link a repository can carry.
pub(super) fn settings_path_inside(base: &Path, relative: &Path) -> Result<PathBuf> {
    let path = base.join(relative);
    let inside = std::fs::canonicalize(base).map_err(|e| Error::io(base, e))?;
    if !resolved(&path).starts_with(&inside) {
        return Err(Error::InvalidArgument(format!(
            "{} leads outside {} through a symlink; refusing to edit it",
            path.display(),
            base.display()
        )));
    }
    Ok(path)
}

/// Where `path` really is: its deepest existing ancestor with symlinks resolved, and the
/// rest of it (which does not exist yet) as given.
fn resolved(path: &Path) -> PathBuf {
    let mut rest = Vec::new();
    let mut existing = path;
    loop {
        if let Ok(real) = std::fs::canonicalize(existing) {
            return rest.iter().rev().fold(real, |acc, part| acc.join(part));
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                existing = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
}
