//! The preflight of a revert, as restore has one ([`crate::ops::restore`]): what can be
//! known before the worktree changes is checked before it does, so that a refused revert
//! changes nothing and its dry run refuses exactly what the real run would. Checked: the
//! names and the room the new files need, no two names the worktree's filesystem takes
//! for one, that each directory to change may be written, and that no file to replace or
//! delete is immutable.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::diff::Change;
use crate::git::repo::Repo;
use crate::model::tree::Node;
use crate::ops::restore::{check_directories_writable, check_names_and_room, check_no_collisions};
use crate::worktree::names::NameRules;
use crate::{Error, Result};

use super::apply::changes;
use super::{PathReport, Written};

/// Refuses, before anything changes, a revert of `paths` (the plan) that the worktree at
/// `repo`'s worktree could not take whole.
pub(super) fn preflight(repo: &Repo, paths: &[PathReport]) -> Result<()> {
    let root = repo.root.as_path();
    let planned: Vec<Change> = paths
        .iter()
        .filter(|p| changes(p))
        .map(|p| Change {
            path: p.path.clone(),
            old: p.ours.clone(),
            new: p.result.as_ref().map(node_of),
        })
        .collect();
    let as_revert = |e: Error| match e {
        Error::RestoreBlocked { path, why } => Error::RevertBlocked { path, why },
        e => e,
    };
    check_names_and_room(root, &planned).map_err(as_revert)?;
    check_no_collisions(root, NameRules::of(repo), &planned).map_err(as_revert)?;
    check_directories_writable(root, &planned).map_err(as_revert)?;
    for change in planned.iter().filter(|c| c.old.is_some()) {
        let full = root.join(OsStr::from_bytes(&change.path));
        if is_immutable(&full) {
            return Err(Error::RevertBlocked {
                path: full,
                why: "the file is immutable: it cannot be replaced or deleted".into(),
            });
        }
    }
    Ok(())
}

/// The node a written result stands for, for the checks: its kind and size.
fn node_of(result: &Written) -> Node {
    match result {
        Written::File {
            bytes, executable, ..
        } => Node::File {
            size: bytes.len() as u64,
            executable: *executable,
            chunks: Vec::new(),
        },
        Written::Symlink(target) => Node::Symlink {
            target: target.clone(),
        },
    }
}

/// Whether the regular file at `full` refuses to be written even by its owner: the
/// kernel answers a write check on an immutable file with `EPERM`, where mere permission
/// bits give `EACCES` (and do not stop a rename over the file, which the revert makes).
fn is_immutable(full: &Path) -> bool {
    use rustix::fs::{Access, AtFlags, CWD};
    if !std::fs::symlink_metadata(full).is_ok_and(|meta| meta.is_file()) {
        return false;
    }
    matches!(
        rustix::fs::accessat(CWD, full, Access::WRITE_OK, AtFlags::EACCESS),
        Err(rustix::io::Errno::PERM)
    )
}
