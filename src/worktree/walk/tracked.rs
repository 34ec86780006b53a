//! The files git tracks that an ignore rule matches: a walk passes them by, so they are
//! added after it (`add_tracked`), where they are still in the worktree and safe to
//! capture.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::found::{classify, Walk};
use crate::git::repo::Repo;
use crate::worktree::exempt::{is_agent_file, GitDirs};

/// Adds to `found` (entries sorted) each path of `tracked` it lacks that is still in the
/// worktree, then sorts and dedups every list. A tracked path the walk did not reach is
/// deleted, or ignored although tracked, which `git add -A` still records. Nothing in
/// `git_dirs` is added, whatever the index says.
pub(super) fn add_tracked(
    repo: &Repo,
    mut tracked: Vec<Vec<u8>>,
    leftovers_possible: bool,
    git_dirs: &GitDirs,
    found: &mut Walk,
) {
    if !tracked.is_sorted() {
        tracked.sort_unstable();
    }
    let mut ignored_but_tracked = Walk::default();
    // Both sorted alike: one ordered pass over both finds what the walk reached (a
    // binary search for each path cost more).
    let mut next = 0;
    for path in tracked {
        while found
            .entries
            .get(next)
            .is_some_and(|e| e.path.as_slice() < path.as_slice())
        {
            next += 1;
        }
        let walked = found.entries.get(next).is_some_and(|e| e.path == path);
        // The index is a file anyone with write access to `.git` can craft: a name
        // that is not a plain component (`..`, an absolute path, `.git`) would lead
        // the save out of the worktree, and is never captured.
        if walked
            || !path
                .split(|&b| b == b'/')
                .all(crate::model::tree::is_safe_name)
            || is_agent_file(repo, &path)
            || git_dirs.contains(&path)
            || inside_any(&found.linked_worktrees, &path)
        {
            continue;
        }
        let full = repo.root.join(OsStr::from_bytes(&path));
        if let Ok(meta) = std::fs::symlink_metadata(&full) {
            // Below a directory that is now a symlink, the path is not in the
            // worktree at all: git reports it deleted, and so does a save.
            if below_real_directories(&repo.root, &path) {
                classify(path, &meta, leftovers_possible, &mut ignored_but_tracked);
            }
        }
    }
    if !ignored_but_tracked.entries.is_empty() {
        found.entries.append(&mut ignored_but_tracked.entries);
        found.entries.sort_unstable_by(|a, b| a.path.cmp(&b.path));
    }
    found.special.append(&mut ignored_but_tracked.special);
    found.leftovers.append(&mut ignored_but_tracked.leftovers);
    found.entries.dedup_by(|a, b| a.path == b.path);
    found.special.sort_unstable();
    found.special.dedup();
    found.leftovers.sort_unstable();
    found.leftovers.dedup();
}

/// Whether the worktree path `path` is one of `dirs` or lies below one.
fn inside_any(dirs: &[Vec<u8>], path: &[u8]) -> bool {
    dirs.iter().any(|dir| {
        path.strip_prefix(dir.as_slice())
            .is_some_and(|rest| rest.is_empty() || rest.first() == Some(&b'/'))
    })
}

/// Whether every directory above the worktree path `path` is a real directory, not a
/// symlink (nor anything else).
fn below_real_directories(root: &Path, path: &[u8]) -> bool {
    let mut end = 0;
    while let Some(slash) = path[end..].iter().position(|&b| b == b'/') {
        end += slash;
        let dir = root.join(OsStr::from_bytes(&path[..end]));
        if !std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir()) {
            return false;
        }
        end += 1;
    }
    true
}
