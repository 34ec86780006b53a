//! Writing a revert's plan: the race check before anything is written
//! ([`still_as_saved`]), then deletions and new files or symlinks through handles of
//! their directories ([`crate::worktree::Dir`]), each made under a temporary name beside
//! its target and renamed over it, and directories a deletion emptied removed.

use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;

use crate::git::repo::Repo;
use crate::model::tree::Node;
use crate::worktree::{temp_name, Worktree, TEMP_LINK_SUFFIX, TEMP_RANDOM_CHARS};
use crate::{Error, Result};

use super::merge::is_file;
use super::{PathReport, Status, Written};

/// Whether anything (a file the scan left out: ignored, or new) is at `path`.
pub(super) fn occupied(worktree: &Worktree, path: &[u8]) -> Result<bool> {
    let (dir, name) = split_name(path);
    match worktree.dir(dir, false) {
        Ok(Some(dir)) => Ok(dir.kind(name)?.is_some()),
        Ok(None) => Ok(false),
        // A symlink or a file where a directory of the path belongs: in the way.
        Err(_) => Ok(true),
    }
}

/// `path` split at its last `/` into its directory (empty at the top) and its name.
fn split_name(path: &[u8]) -> (&[u8], &[u8]) {
    match path.iter().rposition(|&b| b == b'/') {
        Some(slash) => (&path[..slash], &path[slash + 1..]),
        None => (&[], path),
    }
}

/// Checks, before anything is written, that each path the plan changes still holds
/// what the plan merged: the same kind (or nothing), a file of the same size and
/// executable bit, a symlink to the same target. A cheap look that catches a file
/// rewritten since the save; content rewritten in place at the same size within the
/// moment between is left to the safety checkpoint, which holds what was merged.
pub(super) fn still_as_saved(repo: &Repo, paths: &[PathReport]) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    for entry in paths
        .iter()
        .filter(|p| p.status == Status::Applied || p.markers)
    {
        let full = repo.root.join(std::ffi::OsStr::from_bytes(&entry.path));
        let found = match std::fs::symlink_metadata(&full) {
            Ok(meta) => Some(meta),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(Error::io(full, e)),
        };
        let same = match (&entry.ours, &found) {
            (None, None) => true,
            (Some(Node::Symlink { target }), Some(meta)) => {
                meta.file_type().is_symlink()
                    && std::fs::read_link(&full)
                        .is_ok_and(|t| t.as_os_str().as_bytes() == target.as_slice())
            }
            (Some(node), Some(meta)) if is_file(node) => {
                let size = match node {
                    Node::File { size, .. } | Node::FileWithMode { size, .. } => *size,
                    _ => 0,
                };
                meta.is_file()
                    && meta.len() == size
                    && (meta.mode() & 0o100 != 0) == node.is_executable()
            }
            _ => false,
        };
        if !same {
            return Err(Error::RevertRaced { path: full });
        }
    }
    Ok(())
}

/// Writes the plan: deletions first (a file may give way to a directory the change had),
/// then each new file or symlink under a temporary name beside its target, renamed over
/// it. Returns the paths changed.
pub(super) fn apply(repo: &Repo, paths: &[PathReport]) -> Result<Vec<Vec<u8>>> {
    let worktree = Worktree::open(&repo.root)?;
    let mut changed = Vec::new();
    for entry in paths
        .iter()
        .filter(|p| p.status == Status::Applied && p.result.is_none())
    {
        let (dir, name) = split_name(&entry.path);
        if let Some(handle) = worktree.dir(dir, false)? {
            handle.remove_file(name)?;
            changed.push(entry.path.clone());
        }
        remove_empty_parents(&worktree, dir);
    }
    for entry in paths.iter().filter(|p| p.status != Status::Unchanged) {
        let Some(result) = &entry.result else {
            continue;
        };
        let (dir_path, name) = split_name(&entry.path);
        let dir = worktree.dir(dir_path, true)?.ok_or_else(|| {
            Error::io(
                worktree.display(dir_path),
                std::io::Error::from(std::io::ErrorKind::NotFound),
            )
        })?;
        if dir.kind(name)? == Some(rustix::fs::FileType::Directory) {
            // Emptied by the deletions above, or holding what the plan did not see.
            dir.remove_dir_if_empty(name);
        }
        let tmp = match result {
            Written::Symlink(target) => {
                let tmp = temp_name(TEMP_RANDOM_CHARS, TEMP_LINK_SUFFIX);
                if !dir.symlink(target, &tmp)? {
                    return Err(Error::io(
                        dir.display(&tmp),
                        std::io::Error::from(std::io::ErrorKind::AlreadyExists),
                    ));
                }
                tmp
            }
            Written::File {
                bytes,
                mode,
                executable,
            } => {
                let tmp = temp_name(TEMP_RANDOM_CHARS, "");
                // git's two modes go through the umask as any new file; a file's own
                // bits are set exactly once written (owner-only until then).
                let create = match (mode, executable) {
                    (Some(_), _) => 0o600,
                    (None, true) => 0o777,
                    (None, false) => 0o666,
                };
                let Some(mut file) = dir.create_file(&tmp, create)? else {
                    return Err(Error::io(
                        dir.display(&tmp),
                        std::io::Error::from(std::io::ErrorKind::AlreadyExists),
                    ));
                };
                let done = file
                    .write_all(bytes)
                    .and_then(|()| match mode {
                        Some(mode) => file.set_permissions(std::fs::Permissions::from_mode(*mode)),
                        None => Ok(()),
                    })
                    .and_then(|()| file.sync_all());
                if let Err(e) = done {
                    drop(file);
                    let _ = dir.remove_file(&tmp);
                    return Err(Error::io(dir.display(&entry.path), e));
                }
                tmp
            }
        };
        if let Err(e) = dir.rename(&tmp, name) {
            let _ = dir.remove_file(&tmp);
            return Err(e);
        }
        changed.push(entry.path.clone());
    }
    Ok(changed)
}

/// Removes `dir` and the directories above it while they are empty, as git does when a
/// revert deletes a directory's last file.
fn remove_empty_parents(worktree: &Worktree, mut dir: &[u8]) {
    while !dir.is_empty() {
        let (parent, name) = split_name(dir);
        let Ok(Some(handle)) = worktree.dir(parent, false) else {
            return;
        };
        handle.remove_dir_if_empty(name);
        if matches!(handle.kind(name), Ok(Some(_))) {
            return;
        }
        dir = parent;
    }
}
