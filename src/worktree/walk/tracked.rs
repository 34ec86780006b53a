//! The files git tracks that an ignore rule matches: a walk passes them by, so they are
//! added as the walk goes ([`TrackedMerge`]), where they are still in the worktree and
//! safe to capture. The tracked paths and the walk come in the same order (git sorts its
//! index by path bytes), so one pass over both finds what the walk did not reach.

use std::ffi::OsStr;
use std::ops::ControlFlow;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::found::{classify, Walk, WalkEntry};
use super::ordered::Item;
use super::WalkSink;
use crate::git::repo::Repo;
use crate::worktree::exempt::{is_agent_file, GitDirs};
use crate::Result;

/// The walk in path order with the tracked paths it did not reach added in their
/// places: each walked item goes through [`TrackedMerge::item`], the tracked paths
/// sorted before it first; [`TrackedMerge::finish`] adds those after the last. A
/// tracked path the walk did not reach is deleted, or ignored although tracked, which
/// `git add -A` still records. Nothing in `git_dirs` is added, whatever the index says.
pub(super) struct TrackedMerge<'a, 't, I: Iterator<Item = &'t [u8]>> {
    repo: &'a Repo,
    /// The tracked paths not yet passed, sorted.
    tracked: std::iter::Peekable<I>,
    leftovers_possible: bool,
    git_dirs: &'a GitDirs,
    /// What the walk found besides its files and symlinks, and the tracked paths among
    /// them (a tracked FIFO is still a FIFO).
    pub(super) side: Walk,
    /// The last tracked path passed: the index holds a path once per merge stage.
    last: Option<&'t [u8]>,
}

impl<'a, 't, I: Iterator<Item = &'t [u8]>> TrackedMerge<'a, 't, I> {
    /// A merge of a walk with `tracked` (sorted).
    pub(super) fn new(
        repo: &'a Repo,
        tracked: I,
        leftovers_possible: bool,
        git_dirs: &'a GitDirs,
    ) -> Self {
        TrackedMerge {
            repo,
            tracked: tracked.peekable(),
            leftovers_possible,
            git_dirs,
            side: Walk::default(),
            last: None,
        }
    }

    /// Takes the walk's next item: a file or symlink goes to `sink` after the tracked
    /// paths before it; the rest is kept aside (or handed on, a listing). Breaks where
    /// `sink` does.
    pub(super) fn item(&mut self, item: Item, sink: &mut dyn WalkSink) -> Result<ControlFlow<()>> {
        match item {
            Item::Entry(entry) => {
                if self.add_before(Some(&entry.path), sink)?.is_break() {
                    return Ok(ControlFlow::Break(()));
                }
                if let Some(path) = self.tracked.next_if(|path| *path == entry.path) {
                    self.last = Some(path);
                }
                sink.entry(entry)
            }
            Item::Listing(dir, listing) => sink.listing(dir, listing),
            Item::Linked(dir) => {
                self.side.linked_worktrees.push(dir);
                Ok(ControlFlow::Continue(()))
            }
            Item::Special(path) => {
                self.side.special.push(path);
                Ok(ControlFlow::Continue(()))
            }
            Item::Leftover(path) => {
                self.side.leftovers.push(path);
                Ok(ControlFlow::Continue(()))
            }
        }
    }

    /// Adds the tracked paths after the walk's last file (unless the walk was
    /// stopped), and returns what was kept aside, sorted.
    pub(super) fn finish(mut self, sink: &mut dyn WalkSink, stopped: bool) -> Result<Walk> {
        if !stopped {
            // A sink that breaks here knows it did: nothing is left to stop.
            let _ = self.add_before(None, sink)?;
        }
        let mut side = self.side;
        side.special.sort_unstable();
        side.special.dedup();
        side.leftovers.sort_unstable();
        side.leftovers.dedup();
        Ok(side)
    }

    /// Adds each tracked path sorted before `bound` (all of them with `None`) that is
    /// still in the worktree and may be captured.
    fn add_before(
        &mut self,
        bound: Option<&[u8]>,
        sink: &mut dyn WalkSink,
    ) -> Result<ControlFlow<()>> {
        while let Some(path) = self
            .tracked
            .next_if(|path| bound.is_none_or(|bound| *path < bound))
        {
            if self.last == Some(path) {
                continue;
            }
            self.last = Some(path);
            if let Some(entry) = self.still_there(path) {
                if sink.entry(entry)?.is_break() {
                    return Ok(ControlFlow::Break(()));
                }
            }
        }
        Ok(ControlFlow::Continue(()))
    }

    /// The tracked `path`, which the walk did not reach, as a walk entry if it is still in
    /// the worktree (special files and leftovers go aside).
    fn still_there(&mut self, path: &[u8]) -> Option<WalkEntry> {
        // The index is a file anyone with write access to `.git` can craft: a name that
        // is not a plain component (`..`, an absolute path, `.git`) would lead the save
        // out of the worktree, and is never captured.
        if !path
            .split(|&b| b == b'/')
            .all(crate::model::tree::is_safe_name)
            || is_agent_file(self.repo, path)
            || self.git_dirs.contains(path)
            || inside_any(&self.side.linked_worktrees, path)
        {
            return None;
        }
        let full = self.repo.root.join(OsStr::from_bytes(path));
        let meta = std::fs::symlink_metadata(&full).ok()?;
        // Below a directory that is now a symlink, the path is not in the worktree at
        // all: git reports it deleted, and so does a save.
        if !below_real_directories(&self.repo.root, path) {
            return None;
        }
        let mut found = Walk::default();
        classify(path.to_vec(), &meta, self.leftovers_possible, &mut found);
        self.side.special.append(&mut found.special);
        self.side.leftovers.append(&mut found.leftovers);
        found.entries.pop()
    }
}

/// Adds to `found` (entries sorted) each path of `tracked` (sorted) it lacks that is
/// still in the worktree, as [`TrackedMerge`] does for a walk in progress.
pub(super) fn add_tracked(
    repo: &Repo,
    mut tracked: Vec<Vec<u8>>,
    leftovers_possible: bool,
    git_dirs: &GitDirs,
    found: &mut Walk,
) -> Result<()> {
    if !tracked.is_sorted() {
        tracked.sort_unstable();
    }
    let mut merge = TrackedMerge::new(
        repo,
        tracked.iter().map(Vec::as_slice),
        leftovers_possible,
        git_dirs,
    );
    merge.side = Walk {
        special: std::mem::take(&mut found.special),
        leftovers: std::mem::take(&mut found.leftovers),
        linked_worktrees: std::mem::take(&mut found.linked_worktrees),
        ..Walk::default()
    };
    let walked = std::mem::take(&mut found.entries);
    found.entries.reserve(walked.len());
    for entry in walked {
        // Collecting never breaks.
        let _ = merge.item(Item::Entry(entry), found)?;
    }
    let side = merge.finish(found, false)?;
    found.special = side.special;
    found.leftovers = side.leftovers;
    found.linked_worktrees = side.linked_worktrees;
    Ok(())
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
