//! An agent's JSON settings file, read and written back so that a rewrite changes only
//! what the caller changed: keys keep their order (serde_json's `preserve_order`), every
//! top-level entry the caller did not change is written back as the exact text it was
//! read as (numbers such as `1e3` or integers past 64 bits included), the indentation or
//! one-line style is kept, and so are a trailing newline, the file's permissions and a
//! symlink to it. What the settings mean is the agent module's business.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::kinds::HooksState;
use crate::{Error, Result};

/// A settings file as read: its parsed value and how it was laid out, so that a rewrite
/// changes no more than the caller did.
pub(super) struct SettingsFile {
    /// The file written: the path given, or where a symlink there points, so that a
    /// settings file kept elsewhere (a dotfiles repository) stays linked.
    pub(super) target: PathBuf,
    /// The settings as read; edit a copy and [`write`](SettingsFile::write) it.
    pub(super) value: Value,
    layout: Layout,
    /// Each top-level entry's text as read, written back as it was when left unchanged.
    raw: BTreeMap<String, Box<RawValue>>,
    trailing_newline: bool,
    mode: Option<u32>,
}

impl SettingsFile {
    /// Reads the file at `path`; a missing or blank one reads as an empty object, laid
    /// out as a new file is (two-space indent, trailing newline).
    pub(super) fn read(path: &Path) -> Result<SettingsFile> {
        let target = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        let text = match std::fs::read(&target) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(Error::io(&target, e)),
        };
        let mode = std::fs::metadata(&target)
            .ok()
            .map(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()));
        if text.iter().all(u8::is_ascii_whitespace) {
            return Ok(SettingsFile {
                target,
                value: Value::Object(Map::new()),
                layout: Layout::Indented(b"  ".to_vec()),
                raw: BTreeMap::new(),
                trailing_newline: true,
                mode,
            });
        }
        let value = serde_json::from_slice(&text).map_err(|e| {
            Error::InvalidArgument(format!("{} is not valid JSON: {e}", target.display()))
        })?;
        // Only an object has entries to keep; anything else is refused by the callers.
        let raw = serde_json::from_slice(&text).unwrap_or_default();
        let body = text.trim_ascii_end();
        let layout = match body.iter().position(|&b| b == b'\n') {
            Some(newline) => Layout::Indented(
                body[newline + 1..]
                    .iter()
                    .take_while(|&&b| b == b' ' || b == b'\t')
                    .copied()
                    .collect(),
            ),
            None if body.windows(3).any(|w| w == b"\": ") => Layout::Spaced,
            None => Layout::Compact,
        };
        Ok(SettingsFile {
            target,
            value,
            layout,
            raw,
            trailing_newline: text.ends_with(b"\n"),
            mode,
        })
    }

    /// Writes `value` in the file's layout, atomically.
    pub(super) fn write(&self, value: &Value) -> Result<()> {
        let encoding = |e: serde_json::Error| {
            Error::InvalidArgument(format!("cannot encode the settings: {e}"))
        };
        let mut text = match value.as_object() {
            Some(entries) => {
                let mut kept = Vec::with_capacity(entries.len());
                for (key, entry) in entries {
                    let text = match self.raw.get(key) {
                        Some(raw)
                            if serde_json::from_str::<Value>(raw.get()).ok().as_ref()
                                == Some(entry) =>
                        {
                            raw.clone()
                        }
                        _ => self.layout.nested(entry).map_err(encoding)?,
                    };
                    kept.push((key.as_str(), text));
                }
                self.layout.render(&Entries(kept))
            }
            None => self.layout.render(value),
        }
        .map_err(encoding)?;
        if self.trailing_newline {
            text.push(b'\n');
        }
        replace_file(&self.target, &text, self.mode)
    }

    /// Deletes the file, once nothing is left in it, and its directory if that is then
    /// empty, so that a file (and directory) a write created goes again.
    pub(super) fn remove(&self) -> Result<()> {
        std::fs::remove_file(&self.target).map_err(|e| Error::io(&self.target, e))?;
        if let Some(dir) = self.target.parent() {
            // Only succeeds if the directory is empty, i.e. the write created it.
            let _ = std::fs::remove_dir(dir);
        }
        Ok(())
    }
}

/// Makes `target` hold `text`, atomically (a temporary file beside it, synced, then
/// renamed over it), with permissions `mode` (a new file's: `0644`), creating its
/// directory if needed. A reader sees the old file or the new one, never half of one.
pub(super) fn replace_file(target: &Path, text: &[u8], mode: Option<u32>) -> Result<()> {
    let dir = target.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| Error::io(dir, e))?;
    tmp.write_all(text)
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(|e| Error::io(target, e))?;
    let mode = mode.unwrap_or(0o644) & 0o7777;
    std::fs::set_permissions(
        tmp.path(),
        std::os::unix::fs::PermissionsExt::from_mode(mode),
    )
    .map_err(|e| Error::io(target, e))?;
    tmp.persist(target)
        .map_err(|e| Error::io(target, e.error))?;
    Ok(())
}

/// Adds our hooks to the settings file at `path`, creating it if needed: `add` edits the
/// parsed settings and says whether it changed them (false: ours were there already, and
/// the file is left alone), or why they are not laid out as `what` (an install then
/// fails with that reason). Returns whether the file was written.
pub(super) fn add_hooks(
    path: &Path,
    what: &str,
    add: impl FnOnce(&mut Value) -> std::result::Result<bool, String>,
) -> Result<bool> {
    let file = SettingsFile::read(path)?;
    let mut settings = file.value.clone();
    let added = add(&mut settings).map_err(|why| {
        Error::InvalidArgument(format!(
            "{} is not laid out as {what}: {why}",
            file.target.display()
        ))
    })?;
    if added {
        file.write(&settings)?;
    }
    Ok(added)
}

/// Takes our hooks out of the settings file at `path`: `remove` edits the parsed settings
/// and says whether it removed anything. The file itself goes once only keys in
/// `scaffolding` (what install writes besides the hooks) are left. Returns false if
/// there was no file or nothing to remove.
pub(super) fn remove_hooks(
    path: &Path,
    scaffolding: &[&str],
    remove: impl FnOnce(&mut Value) -> bool,
) -> Result<bool> {
    if std::fs::symlink_metadata(path).is_err() {
        return Ok(false);
    }
    let file = SettingsFile::read(path)?;
    let mut settings = file.value.clone();
    if !remove(&mut settings) {
        return Ok(false);
    }
    let nothing_left = settings
        .as_object()
        .is_some_and(|root| root.keys().all(|key| scaffolding.contains(&key.as_str())));
    if nothing_left {
        file.remove()?;
    } else {
        file.write(&settings)?;
    }
    Ok(true)
}

/// Whether our hooks are in the settings file at `path`: all of `wanted` (as
/// [`hooks_hold_all`] tests it), or some, which `remove` (taking ours out of parsed
/// settings, saying whether it took any) finds.
pub(super) fn hooks_state(
    path: &Path,
    wanted: &[(&str, Value)],
    remove: impl FnOnce(&mut Value) -> bool,
) -> Result<HooksState> {
    if std::fs::symlink_metadata(path).is_err() {
        return Ok(HooksState::Missing);
    }
    let mut settings = SettingsFile::read(path)?.value;
    Ok(if hooks_hold_all(&settings, wanted) {
        HooksState::Current
    } else if remove(&mut settings) {
        HooksState::Outdated
    } else {
        HooksState::Missing
    })
}

/// Whether each `(event, entry)` stands in the list `hooks.<event>` of parsed settings,
/// exactly as given: the one test of "installed already" both hook layouts make.
pub(super) fn hooks_hold_all(settings: &Value, entries: &[(&str, Value)]) -> bool {
    entries.iter().all(|(event, entry)| {
        settings
            .pointer(&format!("/hooks/{event}"))
            .and_then(Value::as_array)
            .is_some_and(|list| list.contains(entry))
    })
}

/// Appends each `(event, entry)` to the list `hooks.<event>` of parsed settings, creating
/// the `hooks` object and the lists as needed. Fails (with the reason) if the settings
/// are not shaped so.
pub(super) fn push_to_hooks(
    settings: &mut Value,
    entries: Vec<(&str, Value)>,
) -> std::result::Result<(), String> {
    let hooks = settings
        .as_object_mut()
        .ok_or("the top level is not a JSON object")?
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or("\"hooks\" is not an object")?;
    for (event, entry) in entries {
        hooks
            .entry(event)
            .or_insert_with(|| Value::Array(Vec::new()))
            .as_array_mut()
            .ok_or_else(|| format!("\"hooks\".\"{event}\" is not an array"))?
            .push(entry);
    }
    Ok(())
}

/// Runs `take` (which takes our hooks out of one list and says whether it did) on the
/// list `hooks.<event>` of parsed settings for each of `events`, then drops each list it
/// emptied and the `hooks` object if nothing is left in it. Returns whether anything was
/// taken.
pub(super) fn take_from_hooks<'e>(
    settings: &mut Value,
    events: impl IntoIterator<Item = &'e str>,
    mut take: impl FnMut(&mut Vec<Value>) -> bool,
) -> bool {
    let Some(root) = settings.as_object_mut() else {
        return false;
    };
    let Some(hooks) = root.get_mut("hooks").and_then(Value::as_object_mut) else {
        return false;
    };
    let mut removed = false;
    for event in events {
        let Some(list) = hooks.get_mut(event).and_then(Value::as_array_mut) else {
            continue;
        };
        if take(list) {
            removed = true;
            if list.is_empty() {
                hooks.remove(event);
            }
        }
    }
    if removed && hooks.is_empty() {
        root.remove("hooks");
    }
    removed
}

fn render(
    value: &impl serde::Serialize,
    formatter: impl serde_json::ser::Formatter,
) -> serde_json::Result<Vec<u8>> {
    let mut text = Vec::new();
    value.serialize(&mut serde_json::Serializer::with_formatter(
        &mut text, formatter,
    ))?;
    Ok(text)
}

/// Top-level entries in order, each as JSON text.
struct Entries<'a>(Vec<(&'a str, Box<RawValue>)>);

impl serde::Serialize for Entries<'_> {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        serializer.collect_map(self.0.iter().map(|(key, text)| (key, text)))
    }
}

impl Layout {
    /// `value` in this layout.
    fn render(&self, value: &impl serde::Serialize) -> serde_json::Result<Vec<u8>> {
        match self {
            Layout::Indented(indent) => {
                render(value, serde_json::ser::PrettyFormatter::with_indent(indent))
            }
            Layout::Compact => render(value, serde_json::ser::CompactFormatter),
            Layout::Spaced => render(value, SpacedFormatter),
        }
    }

    /// `value` as the text of a top-level entry: rendered, and in an indented file each
    /// line after the first indented one level, as it stands one level deep.
    fn nested(&self, value: &Value) -> serde_json::Result<Box<RawValue>> {
        let text = String::from_utf8(self.render(value)?).map_err(serde::ser::Error::custom)?;
        let text = match self {
            Layout::Indented(indent) => {
                let indent = String::from_utf8_lossy(indent);
                text.replace('\n', &format!("\n{indent}"))
            }
            Layout::Compact | Layout::Spaced => text,
        };
        RawValue::from_string(text)
    }
}

/// How a settings file is laid out.
enum Layout {
    /// One entry a line, indented by this much a level.
    Indented(Vec<u8>),
    /// One line, no spaces.
    Compact,
    /// One line, a space after each `:` and `,` (as Python's json.dumps writes it).
    Spaced,
}

/// Writes JSON on one line with a space after each `:` and `,`.
struct SpacedFormatter;

impl serde_json::ser::Formatter for SpacedFormatter {
    fn begin_array_value<W: ?Sized + Write>(
        &mut self,
        out: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        if first {
            Ok(())
        } else {
            out.write_all(b", ")
        }
    }

    fn begin_object_key<W: ?Sized + Write>(
        &mut self,
        out: &mut W,
        first: bool,
    ) -> std::io::Result<()> {
        // Entries are separated as array values are.
        self.begin_array_value(out, first)
    }

    fn begin_object_value<W: ?Sized + Write>(&mut self, out: &mut W) -> std::io::Result<()> {
        out.write_all(b": ")
    }
}
