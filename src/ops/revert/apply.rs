//! Writing a revert's plan, in two phases so that whatever can fail before the worktree
//! changes fails then: [`stage`] writes every new file or symlink under a temporary name
//! beside its target (a failure takes them back: nothing changed), and [`commit`] makes
//! the deletions, renames each staged file over its target and writes the few whose
//! directory a deletion makes way for (a failure there has changed some paths, which
//! [`Stopped`] counts). Every change goes through a handle of its directory
//! ([`crate::worktree::Dir`]), opened without following a symlink. Before either,
//! [`still_as_saved`] checks that the worktree is still what the plan merged.

use std::collections::HashSet;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;

use crate::git::repo::Repo;
use crate::model::tree::Node;
use crate::worktree::{self, temp_name, Worktree, TEMP_LINK_SUFFIX, TEMP_RANDOM_CHARS};
use crate::{Error, Result};

use super::merge::is_file;
use super::{PathReport, Status, Written};

/// `path` split at its last `/` into its directory (empty at the top) and its name.
fn split_name(path: &[u8]) -> (&[u8], &[u8]) {
    match path.iter().rposition(|&b| b == b'/') {
        Some(slash) => (&path[..slash], &path[slash + 1..]),
        None => (&[], path),
    }
}

/// Whether the plan changes `entry`: writes it (a merge, markers included) or deletes it.
pub(super) fn changes(entry: &PathReport) -> bool {
    entry.status == Status::Applied || entry.markers
}

/// Whether the plan deletes `entry`.
fn deletes(entry: &PathReport) -> bool {
    entry.status == Status::Applied && entry.result.is_none()
}

/// Checks, before anything is written, that each path the plan changes still holds
/// what the plan merged: the same kind (or nothing), a file of the same size and
/// executable bit, a symlink to the same target. A cheap look that catches a file
/// rewritten since the save; content rewritten in place at the same size within the
/// moment between is left to the safety checkpoint, which holds what was merged.
pub(super) fn still_as_saved(repo: &Repo, paths: &[PathReport]) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    for entry in paths.iter().filter(|p| changes(p)) {
        let full = repo.root.join(std::ffi::OsStr::from_bytes(&entry.path));
        let found = match std::fs::symlink_metadata(&full) {
            Ok(meta) => Some(meta),
            // A file above it, which the plan deletes first.
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
                ) =>
            {
                None
            }
            Err(e) => return Err(Error::io(full, e)),
        };
        let same = match (&entry.ours, &found) {
            (None, None) => true,
            // Nothing of a checkpoint's, where the plan cleared the way (a directory
            // the revert empties, a file it deletes above): looked at by the plan.
            (None, Some(meta)) => meta.is_dir(),
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

/// One file or symlink written under a temporary name, to be renamed over its target.
pub(super) struct StagedFile {
    /// Its index in the plan.
    entry: usize,
    /// The directory it was written into, as it was then (device, inode).
    dir: (u64, u64),
    /// Its temporary name there.
    tmp: Vec<u8>,
}

/// What [`stage`] wrote, and what it left for [`commit`].
pub(super) struct Staged {
    files: Vec<StagedFile>,
    /// Plan indices of files whose directory is to be made where the plan deletes a file
    /// first: written by [`commit`], after the deletions.
    later: Vec<usize>,
}

/// Writes each new file or symlink of the plan under a temporary name beside its target
/// (making missing directories). If one fails, what was staged is taken back and the
/// error names the target: the worktree is as it was, but for directories made.
pub(super) fn stage(worktree: &Worktree, paths: &[PathReport]) -> Result<Staged> {
    let deleted: HashSet<&[u8]> = paths
        .iter()
        .filter(|p| deletes(p))
        .map(|p| p.path.as_slice())
        .collect();
    let mut staged = Staged {
        files: Vec::new(),
        later: Vec::new(),
    };
    for (i, entry) in paths.iter().enumerate().filter(|(_, p)| changes(p)) {
        let Some(result) = &entry.result else {
            continue;
        };
        let (dir_path, name) = split_name(&entry.path);
        let above_deleted = dir_path
            .iter()
            .enumerate()
            .filter(|(_, &b)| b == b'/')
            .map(|(at, _)| &dir_path[..at])
            .chain(std::iter::once(dir_path))
            .any(|dir| deleted.contains(dir));
        if above_deleted {
            staged.later.push(i);
            continue;
        }
        let written = opened(worktree, dir_path).and_then(|dir| {
            let tmp = write_temp(&dir, name, result)?;
            Ok(StagedFile {
                entry: i,
                dir: dir.identity()?,
                tmp,
            })
        });
        match written {
            Ok(file) => staged.files.push(file),
            Err(e) => {
                unstage(worktree, paths, &staged);
                return Err(e);
            }
        }
    }
    Ok(staged)
}

/// Removes what [`stage`] wrote, as well as it can (a failure here leaves a temporary
/// file, which the next save or restore removes).
pub(super) fn unstage(worktree: &Worktree, paths: &[PathReport], staged: &Staged) {
    for file in &staged.files {
        let (dir_path, _) = split_name(&paths[file.entry].path);
        if let Ok(Some(dir)) = worktree.dir(dir_path, false) {
            if dir.identity().is_ok_and(|id| id == file.dir) {
                let _ = dir.remove_file(&file.tmp);
            }
        }
    }
}

/// A [`commit`] that failed: the error, and the paths changed before it.
pub(super) struct Stopped {
    /// What failed.
    pub error: Error,
    /// The paths changed before the failure.
    pub changed: Vec<Vec<u8>>,
}

/// Carries out the plan once staged: deletions (and the directories they empty), then
/// each staged file renamed over its target (a directory the deletions emptied gives
/// way), then the files written after the deletions. Returns the paths changed.
pub(super) fn commit(
    worktree: &Worktree,
    paths: &[PathReport],
    staged: Staged,
) -> std::result::Result<Vec<Vec<u8>>, Stopped> {
    let mut changed = Vec::new();
    let mut renamed = 0;
    let done = commit_in_order(worktree, paths, &staged, &mut changed, &mut renamed);
    match done {
        Ok(()) => Ok(changed),
        Err(error) => {
            let left = Staged {
                files: staged.files.into_iter().skip(renamed).collect(),
                later: Vec::new(),
            };
            unstage(worktree, paths, &left);
            Err(Stopped { error, changed })
        }
    }
}

fn commit_in_order(
    worktree: &Worktree,
    paths: &[PathReport],
    staged: &Staged,
    changed: &mut Vec<Vec<u8>>,
    renamed: &mut usize,
) -> Result<()> {
    for entry in paths.iter().filter(|p| deletes(p)) {
        let (dir, name) = split_name(&entry.path);
        if let Some(handle) = worktree.dir(dir, false)? {
            handle.remove_file(name)?;
            changed.push(entry.path.clone());
        }
        remove_empty_parents(worktree, dir);
    }
    for file in &staged.files {
        let entry = &paths[file.entry];
        let (dir_path, name) = split_name(&entry.path);
        let dir = opened(worktree, dir_path)?;
        if dir.identity()? != file.dir {
            return Err(Error::io(
                worktree.display(dir_path),
                std::io::Error::other("the directory was replaced while the revert wrote into it"),
            ));
        }
        give_way(&dir, name)?;
        dir.rename(&file.tmp, name)?;
        *renamed += 1;
        changed.push(entry.path.clone());
    }
    for &i in &staged.later {
        let entry = &paths[i];
        let Some(result) = &entry.result else {
            continue;
        };
        let (dir_path, name) = split_name(&entry.path);
        let dir = opened(worktree, dir_path)?;
        let tmp = write_temp(&dir, name, result)?;
        give_way(&dir, name)?;
        if let Err(e) = dir.rename(&tmp, name) {
            let _ = dir.remove_file(&tmp);
            return Err(e);
        }
        changed.push(entry.path.clone());
    }
    Ok(())
}

/// The directory `dir_path`, made if missing.
fn opened<'w>(worktree: &'w Worktree, dir_path: &[u8]) -> Result<worktree::Dir<'w>> {
    worktree.dir(dir_path, true)?.ok_or_else(|| {
        Error::io(
            worktree.display(dir_path),
            std::io::Error::from(std::io::ErrorKind::NotFound),
        )
    })
}

/// Removes the directory at `name`, which the deletions emptied, so that a file can take
/// its place; one that still holds anything makes the rename fail, naming the path.
fn give_way(dir: &worktree::Dir<'_>, name: &[u8]) -> Result<()> {
    if dir.kind(name)? == Some(rustix::fs::FileType::Directory) {
        dir.remove_empty_tree(name)?;
    }
    Ok(())
}

/// Writes `result`, to become `name` in `dir`, under a new temporary name there and
/// returns that name. A failure removes what was written and names `name`.
fn write_temp(dir: &worktree::Dir<'_>, name: &[u8], result: &Written) -> Result<Vec<u8>> {
    // The error names the file the revert was writing, not its temporary name.
    let about_target = |e: Error| match e {
        Error::Io { error, .. } => Error::io(dir.display(name), error),
        e => e,
    };
    let exists = || {
        Error::io(
            dir.display(name),
            std::io::Error::from(std::io::ErrorKind::AlreadyExists),
        )
    };
    match result {
        Written::Symlink(target) => {
            let tmp = temp_name(TEMP_RANDOM_CHARS, TEMP_LINK_SUFFIX);
            if !dir.symlink(target, &tmp).map_err(about_target)? {
                return Err(exists());
            }
            Ok(tmp)
        }
        Written::File {
            bytes,
            mode,
            executable,
        } => {
            let tmp = temp_name(TEMP_RANDOM_CHARS, "");
            // git's two modes go through the umask as any new file; a file's own bits
            // are set exactly once written (owner-only until then).
            let create = match (mode, executable) {
                (Some(_), _) => 0o600,
                (None, true) => 0o777,
                (None, false) => 0o666,
            };
            let Some(mut file) = dir.create_file(&tmp, create).map_err(about_target)? else {
                return Err(exists());
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
                return Err(Error::io(dir.display(name), e));
            }
            Ok(tmp)
        }
    }
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
