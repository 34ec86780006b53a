//! A personal file an install writes into the worktree (Claude Code's
//! `.claude/settings.local.json`, "personal, not committed") kept out of `git status` and
//! `git add -A` through the repository's own `info/exclude`, which git never commits.
//! Install adds one pattern under a comment of ours; uninstall takes out exactly that
//! pair, and nothing else, so a pattern the user wrote stays.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::git::repo::Repo;
use crate::{Error, Result};

/// The comment line above the pattern install adds: how uninstall knows the pattern is
/// ours.
const MARKER: &str = "# added by 'git checkpoint hooks install' (personal settings, not committed)";

/// `<common-dir>/info/exclude`: the exclude file of every worktree of the repository.
fn exclude_file(repo: &Repo) -> PathBuf {
    repo.common_dir.join("info").join("exclude")
}

/// The pattern that matches exactly `path` (relative to the worktree's top).
fn pattern(path: &Path) -> String {
    format!("/{}", path.display())
}

/// Adds `path` (relative to the worktree's top) to the repository's `info/exclude`.
/// Returns false when a line already names it (the user's own, or an earlier install):
/// the file is then left alone.
pub fn add(repo: &Repo, path: &Path) -> Result<bool> {
    let file = exclude_file(repo);
    let text = read(&file)?;
    let wanted = pattern(path);
    if text.lines().any(|line| line.trim_end() == wanted) {
        return Ok(false);
    }
    let mut new = text;
    if !new.is_empty() && !new.ends_with('\n') {
        new.push('\n');
    }
    new.push_str(MARKER);
    new.push('\n');
    new.push_str(&wanted);
    new.push('\n');
    write(&file, &new)?;
    Ok(true)
}

/// Takes out of `info/exclude` the pattern [`add`] added for `path`, with its comment.
/// Returns false when that pair is not there (the file is then left alone).
pub fn remove(repo: &Repo, path: &Path) -> Result<bool> {
    let file = exclude_file(repo);
    let text = read(&file)?;
    let wanted = pattern(path);
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let Some(at) = lines
        .windows(2)
        .position(|pair| pair[0].trim_end() == MARKER && pair[1].trim_end() == wanted)
    else {
        return Ok(false);
    };
    let kept: String = lines
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != at && *i != at + 1)
        .map(|(_, line)| *line)
        .collect();
    write(&file, &kept)?;
    Ok(true)
}

/// The exclude file's text; empty when it does not exist. Bytes that are not UTF-8 (a
/// comment in another encoding) are refused rather than rewritten.
fn read(file: &Path) -> Result<String> {
    match std::fs::read(file) {
        Ok(bytes) => String::from_utf8(bytes).map_err(|_| {
            Error::InvalidArgument(format!(
                "{} is not UTF-8 text; add the line yourself if you want it",
                file.display()
            ))
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(e) => Err(Error::io(file, e)),
    }
}

/// Replaces the exclude file with `text` through a temporary file in its directory, so
/// a reader never sees it half written.
fn write(file: &Path, text: &str) -> Result<()> {
    let dir = file.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let mut temp = tempfile::NamedTempFile::new_in(dir).map_err(|e| Error::io(dir, e))?;
    temp.write_all(text.as_bytes())
        .map_err(|e| Error::io(temp.path(), e))?;
    temp.persist(file).map_err(|e| Error::io(file, e.error))?;
    Ok(())
}
