//! Where an agent's settings file is, checked so that installing never edits a file
//! outside the directory it belongs to through a symlink a repository can carry.

use std::path::{Path, PathBuf};

use super::kinds::Scope;
use crate::git::repo::Repo;
use crate::{Error, Result};

/// The user's home directory, from `HOME`. Every agent keeps its user-scope hooks and MCP
/// files under it on macOS exactly as on Linux (each agent's module cites where its
/// documentation says so; docs/agents.md, "On macOS"), none under `~/Library/Application
/// Support`, which holds only their system-wide managed settings: no path here depends
/// on the system.
pub(super) fn home_dir() -> Result<PathBuf> {
    std::env::var_os("HOME")
        .filter(|home| !home.is_empty())
        .map(PathBuf::from)
        .ok_or_else(|| Error::InvalidArgument("HOME is not set".into()))
}

/// An agent's own directory: `$<var>` when it is set and not empty (the agent's own
/// override), else `default` in the user's home directory; `None` without either.
pub(super) fn agent_home(var: &str, default: &str) -> Option<PathBuf> {
    match std::env::var_os(var).filter(|dir| !dir.is_empty()) {
        Some(dir) => Some(PathBuf::from(dir)),
        None => home_dir().ok().map(|home| home.join(default)),
    }
}

/// The top of the worktree `start` is in: where a worktree's agent files are.
pub(super) fn worktree_top(start: &Path) -> Result<PathBuf> {
    Ok(Repo::discover(start)?.root)
}

/// The agent file `relative` in the worktree `start` is in, or for [`Scope::Global`] in
/// the user's home directory; refused as [`settings_path_under`] refuses it.
pub(super) fn worktree_or_home_file(
    scope: Scope,
    start: &Path,
    relative: &Path,
) -> Result<PathBuf> {
    let base = match scope {
        Scope::Global => home_dir()?,
        Scope::Personal | Scope::Shared => worktree_top(start)?,
    };
    settings_path_under(&base, relative)
}

/// The agent file `relative` in the directory `start` itself, for an agent that reads a
/// project's settings only from the directory it is started in, or for
/// [`Scope::Global`] in the user's home directory. `start` must be in a worktree, and the
/// file is refused as [`settings_path_under`] refuses it, the worktree's top being the
/// directory it must not lead out of.
pub(super) fn start_dir_or_home_file(
    scope: Scope,
    start: &Path,
    relative: &Path,
) -> Result<PathBuf> {
    if scope == Scope::Global {
        return settings_path_under(&home_dir()?, relative);
    }
    let top = worktree_top(start)?;
    let real_top = std::fs::canonicalize(&top).map_err(|e| Error::io(&top, e))?;
    let here = std::fs::canonicalize(start).map_err(|e| Error::io(start, e))?;
    let below = here.strip_prefix(&real_top).map_err(|_| {
        Error::InvalidArgument(format!(
            "{} is not inside the worktree {}",
            start.display(),
            top.display()
        ))
    })?;
    settings_path_under(&top, &below.join(relative))
}

/// `base/relative`, refused if it is, or lies below, a symlink leading outside `base`.
pub(super) fn settings_path_under(base: &Path, relative: &Path) -> Result<PathBuf> {
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
pub(super) fn resolved(path: &Path) -> PathBuf {
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

/// Whether the file at `path` is a regular file holding exactly `content` (a script
/// install wrote, which uninstall may remove); `None` when there is nothing at `path`.
pub(super) fn holds_exactly(path: &Path, content: &[u8]) -> Result<Option<bool>> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Error::io(path, e)),
        Ok(meta) if !meta.is_file() => Ok(Some(false)),
        Ok(_) => {
            let found = std::fs::read(path).map_err(|e| Error::io(path, e))?;
            Ok(Some(found == content))
        }
    }
}
