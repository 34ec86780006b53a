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
//! passes down), `parallel` (one directory listed, with `cache_use`, the directory
//! cache), `ordered` (the walk of the whole worktree in path order, on every core),
//! `tracked` (the tracked files an ignore rule matches, added in their places),
//! `paths` (the walk of the paths a watcher reported, and which paths a walk passes by).
//! This file holds the walk of the whole worktree.

mod cache_use;
mod found;
mod ordered;
mod parallel;
mod paths;
mod rules;
mod tracked;

use std::ops::ControlFlow;

use super::exempt::GitDirs;
use crate::git::repo::Repo;
use crate::model::dir_cache::{DirListing, DirListings};
use crate::Result;
use cache_use::dir_cache_hook;
use ordered::walk_in_order;
use parallel::WalkState;
use rules::{DirRules, LazyRules};
use tracked::TrackedMerge;

pub use found::{Kind, Walk, WalkEntry};
pub use paths::{walk_paths, IgnoredPaths};

/// Where a walk in path order ([`walk_into`]) hands what it finds as it comes to it.
/// Either may stop the walk by breaking.
pub trait WalkSink {
    /// The next file or symlink, in path-byte order.
    fn entry(&mut self, entry: WalkEntry) -> Result<ControlFlow<()>>;
    /// A directory's listing, made afresh and settled, which the directory cache may
    /// record ([`crate::model::dir_cache`]).
    fn listing(&mut self, dir: Vec<u8>, listing: DirListing) -> Result<ControlFlow<()>>;
}

/// A walk collected whole: the entries, and the listings as directory cache puts.
impl WalkSink for Walk {
    fn entry(&mut self, entry: WalkEntry) -> Result<ControlFlow<()>> {
        self.entries.push(entry);
        Ok(ControlFlow::Continue(()))
    }

    fn listing(&mut self, dir: Vec<u8>, listing: DirListing) -> Result<ControlFlow<()>> {
        self.dir_cache.put.push((dir, listing));
        Ok(ControlFlow::Continue(()))
    }
}

/// Walks the worktree of `repo`, handing what it finds to `sink` in path-byte order as
/// it goes: each file and symlink, and each listing the directory cache may record.
/// `leftovers_possible`: a restore is recorded as interrupted, so files named as its
/// temporary files are leftovers, not the user's (and no cache is used: a listing does
/// not tell them). With `cache` (the listings earlier walks recorded,
/// [`crate::model::dir_cache`]), a directory whose metadata and ignore files did not
/// change since its listing was recorded is not listed again nor matched against the
/// ignore rules; only its files are `lstat`ed; what is found is what a walk without it
/// finds. Returns the rest of what it found: the special files, leftovers
/// and linked worktrees, and the listings to forget (no entries, no listings to put);
/// where `sink` stopped the walk, what it found until then, and no listing to forget.
/// It holds no list of every file: the directories are listed a bounded window ahead of
/// what it has handed on (docs/design.md, "Save", memory).
pub fn walk_into(
    repo: &Repo,
    leftovers_possible: bool,
    cache: Option<&dyn DirListings>,
    sink: &mut dyn WalkSink,
) -> Result<Walk> {
    let cache = match dir_cache_hook().as_deref() {
        Some("off") => None,
        _ if leftovers_possible => None,
        _ => cache,
    };
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
    let _span = crate::trace::span("walk: directories");
    let state = WalkState::new(repo, leftovers_possible, &tracked, &git_dirs, cache)?;
    let top = DirRules {
        rules: LazyRules::None,
        fingerprint: state.cache.as_ref().map_or(0, |c| c.top_rules),
        settled: state.cache.as_ref().is_some_and(|c| c.top_rules_settled),
    };
    let mut merge = TrackedMerge::new(
        repo,
        tracked.iter().map(Vec::as_slice),
        leftovers_possible,
        &git_dirs,
    );
    let flow = walk_in_order(&state, top, &mut |item| merge.item(item, sink))?;
    let mut rest = merge.finish(sink, flow.is_break())?;
    if flow.is_continue() {
        rest.dir_cache = state.dir_cache_removals()?;
    }
    Ok(rest)
}
