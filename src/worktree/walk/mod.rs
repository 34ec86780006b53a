//! The files a checkpoint holds: what `git add -A` would consider. That is the parallel
//! walk of the `ignore` crate (gitignore at every level, `info/exclude`, the excludes
//! file) joined with the files git tracks although an ignore rule matches them, which
//! the walk alone skips. Never anything named `.git`. Nested repositories are walked
//! into: their files are captured under their own ignore rules, their `.git` is not. The
//! paths [`super::exempt`] names are never captured: the repository's own git dirs and
//! the linked worktrees of the same repository are not entered, and the agent settings
//! files and a watcher's cookies at the top are left out.
//!
//! Ignore files are read as git reads them (`ignore_file`): as bytes, line by line, each
//! pattern matched on bytes, and a `.gitignore` that is a symlink is not followed.
//!
//! The walk's rooms: `found` (what a walk finds), `rules` (the ignore rules a walk
//! passes down), `parallel` (the traversal, with `cache_use`, the directory cache),
//! `tracked` (the tracked files an ignore rule matches, added after the traversal),
//! `paths` (the walk of the paths a watcher reported, and which paths a walk passes by).
//! This file holds the walk of the whole worktree.

mod cache_use;
mod found;
mod parallel;
mod paths;
mod rules;
mod tracked;

use rayon::slice::ParallelSliceMut;

use super::exempt::GitDirs;
use crate::git::repo::Repo;
use crate::model::dir_cache::DirCache;
use crate::Result;
use cache_use::dir_cache_hook;
use parallel::walk_tree;
use tracked::add_tracked;

pub use found::{Kind, Walk, WalkEntry};
pub use paths::{walk_paths, IgnoredPaths};

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
