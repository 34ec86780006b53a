//! Codex's `config.toml`: our server as the table `[mcp_servers.checkpoint]`, edited
//! with `toml_edit`, which keeps the comments, order and spacing of everything it does
//! not touch. Uninstall takes out our table and nothing else: a comment the user wrote
//! above it stays, where it was. (toml_edit refuses a key written twice itself.)

use std::path::Path;

use toml_edit::{value, Array, DocumentMut, Item, Table};

use super::mcp_entry::{taken, Entry, Registered, Registration, SERVER_NAME};
use super::settings_file::replace_file;
use crate::{Error, Result};

/// The table Codex keeps its servers in.
const SERVERS: &str = "mcp_servers";

/// The file's parsed document, `None` when there is no file. Also Codex's own
/// `config.toml`, read for its hook trust (`codex_trust`).
pub(super) fn read(path: &Path) -> Result<Option<DocumentMut>> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(path, e)),
    };
    let document = text.parse::<DocumentMut>().map_err(|e| {
        Error::InvalidArgument(format!(
            "{} is not valid TOML: {}",
            path.display(),
            e.to_string().lines().next().unwrap_or_default()
        ))
    })?;
    Ok(Some(document))
}

/// Writes `document` over the file at `path`, keeping its permissions.
fn write(path: &Path, document: &DocumentMut) -> Result<()> {
    let mode = std::fs::metadata(path)
        .ok()
        .map(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()));
    replace_file(path, document.to_string().as_bytes(), mode)
}

/// Whether `item` is exactly the table install writes for `entry`.
fn is_entry(item: &Item, entry: &Entry) -> bool {
    let Some(table) = item.as_table_like() else {
        return false;
    };
    let args = table.get("args").and_then(Item::as_array).map(|args| {
        args.iter()
            .map(|a| a.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
    });
    table.len() == 2
        && table.get("command").and_then(Item::as_str) == Some(&entry.command)
        && args == Some(Some(entry.args.clone()))
}

/// The servers table of `document`, created (as `[mcp_servers.checkpoint]` alone,
/// without an empty `[mcp_servers]`) if it has none.
fn servers<'d>(
    document: &'d mut DocumentMut,
    path: &Path,
) -> Result<&'d mut dyn toml_edit::TableLike> {
    document
        .entry(SERVERS)
        .or_insert_with(|| {
            let mut table = Table::new();
            table.set_implicit(true);
            Item::Table(table)
        })
        .as_table_like_mut()
        .ok_or_else(|| {
            Error::InvalidArgument(format!(
                "{} is not laid out as Codex's config: mcp_servers is not a table",
                path.display()
            ))
        })
}

/// Adds `entry` as `[mcp_servers.checkpoint]`; one exactly as one of `older` (what an
/// earlier build wrote) is replaced, any other of that name refused.
pub(super) fn install(path: &Path, entry: &Entry, older: &[Entry]) -> Result<Registered> {
    let mut document = read(path)?.unwrap_or_default();
    let servers = servers(&mut document, path)?;
    if let Some(found) = servers.get(SERVER_NAME) {
        if is_entry(found, entry) {
            return Ok(Registered::AlreadyThere);
        }
        if !older.iter().any(|old| is_entry(found, old)) {
            return Err(taken(path));
        }
        // An earlier build's: its place, comments and spacing kept, its values ours.
        if let Some(table) = servers
            .get_mut(SERVER_NAME)
            .and_then(Item::as_table_like_mut)
        {
            table.insert("command", value(entry.command.as_str()));
            table.insert("args", value(entry.args.iter().collect::<Array>()));
        }
    } else {
        let mut table = Table::new();
        table.insert("command", value(entry.command.as_str()));
        table.insert("args", value(entry.args.iter().collect::<Array>()));
        servers.insert(SERVER_NAME, Item::Table(table));
    }
    write(path, &document)?;
    Ok(Registered::Added)
}

/// `[mcp_servers.checkpoint]` in the file at `path`: its command, and whether it is
/// exactly one of `ours`; `None` when there is none. Changes nothing.
pub(super) fn registration(path: &Path, ours: &[Entry]) -> Result<Option<Registration>> {
    let Some(document) = read(path)? else {
        return Ok(None);
    };
    let found = document
        .get(SERVERS)
        .and_then(Item::as_table_like)
        .and_then(|servers| servers.get(SERVER_NAME));
    Ok(found.map(|found| Registration {
        command: found
            .as_table_like()
            .and_then(|table| table.get("command"))
            .and_then(Item::as_str)
            .map(str::to_string),
        ours: ours.iter().any(|entry| is_entry(found, entry)),
    }))
}

/// Removes `[mcp_servers.checkpoint]` if it is exactly one of `ours`, then the servers
/// table once empty, then the file once nothing else is in it. A comment written above
/// our table is not ours: it stays, before whatever followed the table. Returns false
/// if there was nothing of ours to remove.
pub(super) fn uninstall(path: &Path, ours: &[Entry]) -> Result<bool> {
    let Some(mut document) = read(path)? else {
        return Ok(false);
    };
    let Some(servers) = document.get_mut(SERVERS).and_then(Item::as_table_like_mut) else {
        return Ok(false);
    };
    let Some(found) = servers.get(SERVER_NAME) else {
        return Ok(false);
    };
    if !ours.iter().any(|entry| is_entry(found, entry)) {
        return Ok(false);
    }
    // What stands above our table's header (its decor): the blank line install puts
    // there, and whatever the user wrote since.
    let above = found
        .as_table()
        .and_then(|table| table.decor().prefix())
        .and_then(|prefix| prefix.as_str())
        .filter(|prefix| !prefix.trim().is_empty())
        .map(str::to_string);
    let position = found.as_table().and_then(Table::position);
    servers.remove(SERVER_NAME);
    if servers.is_empty() {
        document.remove(SERVERS);
    }
    if let Some(above) = above {
        keep_before_next(&mut document, position, &above);
    }
    if document.is_empty()
        && document
            .trailing()
            .as_str()
            .is_none_or(|t| t.trim().is_empty())
    {
        std::fs::remove_file(path).map_err(|e| Error::io(path, e))?;
        if let Some(dir) = path.parent() {
            // Only succeeds if the directory is empty, i.e. the install created it.
            let _ = std::fs::remove_dir(dir);
        }
    } else {
        write(path, &document)?;
    }
    Ok(true)
}

/// Puts `text` (comments that stood above a table that was at `position`) in front of
/// the table that followed it, or at the end of the document if none did.
fn keep_before_next(document: &mut DocumentMut, position: Option<isize>, text: &str) {
    let next = position.and_then(|ours| {
        let mut best = None;
        next_table(document.as_table(), &mut Vec::new(), ours, &mut best);
        best
    });
    let table = next.and_then(|(_, path)| {
        let mut table = document.as_table_mut();
        for key in path {
            table = table.get_mut(&key)?.as_table_mut()?;
        }
        Some(table)
    });
    match table {
        Some(table) => {
            let before = table
                .decor()
                .prefix()
                .and_then(|p| p.as_str())
                .unwrap_or("");
            let prefix = format!("{text}{before}");
            table.decor_mut().set_prefix(prefix);
        }
        None => {
            let trailing = document.trailing().as_str().unwrap_or("").to_string();
            document.set_trailing(format!("{text}{trailing}"));
        }
    }
}

/// The table written first after position `ours` among those below `table` (each at
/// `path` of keys), kept in `best` with its position.
fn next_table(
    table: &Table,
    path: &mut Vec<String>,
    ours: isize,
    best: &mut Option<(isize, Vec<String>)>,
) {
    for (key, item) in table.iter() {
        let Item::Table(child) = item else {
            continue;
        };
        path.push(key.to_string());
        if let Some(at) = child
            .position()
            .filter(|&at| at > ours && !child.is_implicit())
        {
            if best.as_ref().is_none_or(|(known, _)| at < *known) {
                *best = Some((at, path.clone()));
            }
        }
        next_table(child, path, ours, best);
        path.pop();
    }
}
