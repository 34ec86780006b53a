//! The files a checkpoint holds: what `git add -A` would consider. That is the parallel
//! walk of the `ignore` crate (gitignore at every level, `info/exclude`, the excludes
//! file) joined with the files git tracks although an ignore rule matches them, which
//! the walk alone skips. Never anything named `.git`. Nested repositories are walked
//! into: their files are captured under their own ignore rules, their `.git` is not. The
//! paths [`super::exempt`] names are never captured: the repository's own git dirs and
//! the linked worktrees of the same repository are not entered, and the agent settings
//! files at the top are left out.
//!
//! Ignore files are read as git reads them (`ignore_file`): as bytes, line by line, each
//! pattern matched on bytes, and a `.gitignore` that is a symlink is not followed.
//!
//! The walk's rooms: `rules` (the ignore rules a walk passes down), `parallel` (the
//! traversal, with `cache_use`, the directory cache), `paths` (the walk of the paths a
//! watcher reported, and which paths a walk passes by). This file holds what a walk
//! finds and the walk of the whole worktree.

mod cache_use;
mod parallel;
mod paths;
mod rules;

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rayon::slice::ParallelSliceMut;

use super::exempt::{is_agent_file, GitDirs};
use crate::git::repo::Repo;
use crate::model::dir_cache::{DirCache, DirCacheUpdates};
use crate::model::stat_cache::FileStat;
use crate::Result;
use cache_use::dir_cache_hook;
use parallel::{file_type, walk_tree};

pub use paths::{walk_paths, IgnoredPaths};

/// The kind of a walked entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A regular file.
    File,
    /// A symbolic link (never followed).
    Symlink,
}

/// One file or symlink of the worktree.
#[derive(Clone, Debug)]
pub struct WalkEntry {
    /// Path relative to the worktree root, `/`-separated, raw bytes.
    pub path: Vec<u8>,
    /// Its kind.
    pub kind: Kind,
    /// Its metadata, from `lstat`.
    pub stat: FileStat,
}

/// What the walk found.
#[derive(Debug, Default)]
pub struct Walk {
    /// Files and symlinks, sorted by path bytes.
    pub entries: Vec<WalkEntry>,
    /// FIFOs, sockets and devices, which are never captured.
    pub special: Vec<Vec<u8>>,
    /// Temporary files an interrupted restore left behind, which are never captured.
    pub leftovers: Vec<Vec<u8>>,
    /// Directories that are linked worktrees of the same repository, not entered.
    pub linked_worktrees: Vec<Vec<u8>>,
    /// What a walk with the directory cache ([`walk_cached`]) found to write to it.
    pub dir_cache: DirCacheUpdates,
}

/// Walks the worktree of `repo`. `leftovers_possible`: a restore is recorded as
/// interrupted, so files named as its temporary files are leftovers, not the user's.
pub fn walk(repo: &Repo, leftovers_possible: bool) -> Result<Walk> {
    walk_with(repo, leftovers_possible, None)
}

/// [`walk`], using and renewing the directory cache `cache` (the listings earlier walks
/// recorded, [`crate::model::dir_cache`]): a directory whose metadata and ignore files
/// did not change since its listing was recorded is not listed again nor matched against
/// the ignore rules; only its files are `lstat`ed. The listings to write, and those to
/// forget, are in [`Walk::dir_cache`]. The result is what [`walk`] finds. No cache is used
/// while a restore is recorded as interrupted (a listing does not tell its temporary
/// files).
pub fn walk_cached(repo: &Repo, leftovers_possible: bool, cache: &DirCache) -> Result<Walk> {
    let cache = match dir_cache_hook().as_deref() {
        Some("off") => None,
        _ if leftovers_possible => None,
        _ => Some(cache),
    };
    walk_with(repo, leftovers_possible, cache)
}

fn walk_with(repo: &Repo, leftovers_possible: bool, cache: Option<&DirCache>) -> Result<Walk> {
    // Read first, so that the walk need not match tracked files against the ignore
    // rules (as git status does not): they are captured either way.
    let mut tracked = {
        let _span = crate::trace::span("walk: tracked paths");
        repo.tracked_paths()?
    };
    if !tracked.is_sorted() {
        tracked.sort_unstable();
    }
    let git_dirs = GitDirs::of(repo);
    let mut found = {
        let _span = crate::trace::span("walk: directories");
        walk_tree(repo, leftovers_possible, &tracked, &git_dirs, cache)?
    };
    // Long shared prefixes make each comparison cost: both cores sort.
    found
        .entries
        .par_sort_unstable_by(|a, b| a.path.cmp(&b.path));
    add_tracked(repo, tracked, leftovers_possible, &git_dirs, &mut found);
    Ok(found)
}

/// Adds to `found` (entries sorted) each path of `tracked` it lacks that is still in the
/// worktree, then sorts and dedups every list. A tracked path the walk did not reach is
/// deleted, or ignored although tracked, which `git add -A` still records. Nothing in
/// `git_dirs` is added, whatever the index says.
fn add_tracked(
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

/// Whether the last component of `path` is named as a restore's temporary file.
fn is_restore_temp(path: &[u8]) -> bool {
    let name = path.rsplit(|&b| b == b'/').next().unwrap_or(path);
    super::is_temp_name(name)
}

/// Sorts one walked path into `into`. With `leftovers_possible` (a restore is recorded as
/// interrupted), a file named as restore's temporary files are is a leftover to remove,
/// never captured; otherwise it is the user's and saved like any other.
fn classify(path: Vec<u8>, meta: &std::fs::Metadata, leftovers_possible: bool, into: &mut Walk) {
    classify_stat(
        path,
        FileStat::from_metadata(meta),
        leftovers_possible,
        into,
    );
}

/// [`classify`] of a path whose metadata is `stat`.
fn classify_stat(path: Vec<u8>, stat: FileStat, leftovers_possible: bool, into: &mut Walk) {
    use rustix::fs::FileType;
    let file_type = file_type(&stat);
    if leftovers_possible && is_restore_temp(&path) && file_type != FileType::Directory {
        into.leftovers.push(path);
        return;
    }
    let kind = match file_type {
        FileType::RegularFile => Kind::File,
        FileType::Symlink => Kind::Symlink,
        FileType::Fifo | FileType::Socket | FileType::BlockDevice | FileType::CharacterDevice => {
            into.special.push(path);
            return;
        }
        _ => return,
    };
    into.entries.push(WalkEntry { path, kind, stat });
}
