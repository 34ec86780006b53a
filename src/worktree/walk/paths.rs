//! The targeted walk: what a walk of the whole worktree would find at the paths a
//! watcher reported changed ([`walk_paths`]), and which paths a walk passes by
//! ([`IgnoredPaths`]). Each path is reached as a walk would come down to it, through
//! the rules of every directory on the way.

use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::found::{classify, Walk};
use super::parallel::{walk_dir, WalkState};
use super::rules::{dir_rules, DirRules, LazyRules, Rules};
use super::tracked::add_tracked;
use crate::git::repo::Repo;
use crate::worktree::exempt::{is_agent_file, is_watch_cookie, GitDirs};
use crate::Result;

/// How a directory named by a watched path stands, for [`walk_paths`].
#[derive(Clone)]
enum Reach {
    /// A real directory whose entries the walk would list, under these rules.
    Open(Option<Arc<Rules>>),
    /// Ignored, or below an ignored directory: only tracked files there are captured.
    Ignored,
    /// Gone, not a directory, or not the worktree's own (a linked worktree, a git dir).
    Out,
}

/// What a walk of the whole worktree would find at `changed` (worktree paths, each a
/// file, a directory or nothing now) and below them: the entry point for a save that a
/// watcher told which paths changed. Every path goes through the rules of [`walk_into`](super::walk_into):
/// `.gitignore` files on the way down, the excludes files, the exemptions, tracked files
/// that an ignore rule matches. A changed directory is walked whole. The entries of the
/// result are sorted; nothing outside `changed` and their subtrees is in it.
pub fn walk_paths(repo: &Repo, leftovers_possible: bool, changed: &[Vec<u8>]) -> Result<Walk> {
    // No tracked list: a tracked file an ignore rule matches is looked up afterwards.
    let git_dirs = GitDirs::of(repo);
    let state = WalkState::new(repo, leftovers_possible, &[], &git_dirs, None)?;
    let mut dirs: HashMap<Vec<u8>, Reach> = HashMap::new();
    let mut found = Walk::default();
    let mut subtrees = Vec::new();
    // Paths whose tracked files must be looked up, since no listing reaches them.
    let mut only_tracked: Vec<&[u8]> = Vec::new();
    for path in changed {
        if path.is_empty()
            || !path
                .split(|&b| b == b'/')
                .all(crate::model::tree::is_safe_name)
            || git_dirs.contains(path)
            || is_watch_cookie(path)
        {
            continue;
        }
        let (parent, _) = split_parent(path);
        let rules = match reach(&state, &mut dirs, parent) {
            Reach::Open(rules) => rules,
            Reach::Ignored => {
                only_tracked.push(path);
                continue;
            }
            Reach::Out => continue,
        };
        let full = state.root.join(OsStr::from_bytes(path));
        let Ok(meta) = std::fs::symlink_metadata(&full) else {
            continue;
        };
        let is_dir = meta.is_dir();
        if state.ignores(rules.as_deref(), path, is_dir) {
            only_tracked.push(path);
        } else if is_dir {
            if state.linked.is_linked(&full) {
                found.linked_worktrees.push(path.clone());
            } else {
                subtrees.push((path.clone(), rules));
            }
        } else if !is_agent_file(repo, path) {
            classify(path.clone(), &meta, leftovers_possible, &mut found);
        }
    }
    let walked_subtrees: Vec<Vec<u8>> = subtrees.iter().map(|(dir, _)| dir.clone()).collect();
    rayon::scope(|scope| {
        for (dir, rules) in subtrees {
            let state = &state;
            let rules = DirRules::uncached(LazyRules::built(rules));
            scope.spawn(move |scope| walk_dir(scope, state, dir, rules));
        }
    });
    let look_up_tracked = !only_tracked.is_empty() || state.ignored_any.load(Ordering::Relaxed);
    let mut below = state.into_walk()?;
    found.entries.append(&mut below.entries);
    found.special.append(&mut below.special);
    found.leftovers.append(&mut below.leftovers);
    found.linked_worktrees.append(&mut below.linked_worktrees);
    found.entries.sort_unstable_by(|a, b| a.path.cmp(&b.path));
    let tracked = if look_up_tracked {
        let tops: HashSet<&[u8]> = only_tracked
            .iter()
            .copied()
            .chain(walked_subtrees.iter().map(Vec::as_slice))
            .collect();
        repo.tracked_paths_where(|path| at_or_below_any(&tops, path))?
    } else {
        Vec::new()
    };
    add_tracked(repo, tracked, leftovers_possible, &git_dirs, &mut found)?;
    Ok(found)
}

/// Which worktree paths a walk passes by: the watcher asks about every path an event
/// names, so that a change a save never captures (an ignored file, a build tree) does
/// not count as use of the worktree. The rules of each directory are read once and kept
/// until [`IgnoredPaths::forget_rules`]. Tracked files an ignore rule matches count as
/// passed by here (what a save captures is decided by the save, never by this).
pub struct IgnoredPaths<'a> {
    state: WalkState<'a>,
    known: HashMap<Vec<u8>, Reach>,
}

impl<'a> IgnoredPaths<'a> {
    /// The checker of `repo`'s worktree, its excludes files read now.
    pub fn new(repo: &'a Repo, git_dirs: &'a GitDirs) -> Result<IgnoredPaths<'a>> {
        Ok(IgnoredPaths {
            state: WalkState::new(repo, false, &[], git_dirs, None)?,
            known: HashMap::new(),
        })
    }

    /// Whether a walk would pass the worktree path `path` (a directory if `is_dir`; it
    /// may be gone) by: ignored, below an ignored directory, or not the worktree's own.
    pub fn passes_by(&mut self, path: &[u8], is_dir: bool) -> bool {
        let (parent, _) = split_parent(path);
        match reach(&self.state, &mut self.known, parent) {
            Reach::Open(rules) => self.state.ignores(rules.as_deref(), path, is_dir),
            Reach::Ignored | Reach::Out => true,
        }
    }

    /// Forgets the rules read so far (a `.gitignore` changed): they are read again.
    pub fn forget_rules(&mut self) {
        self.known.clear();
    }
}

/// Whether `path` or one of the directories above it is in `tops`.
fn at_or_below_any(tops: &HashSet<&[u8]>, path: &[u8]) -> bool {
    tops.contains(path)
        || path
            .iter()
            .enumerate()
            .any(|(i, &b)| b == b'/' && tops.contains(&path[..i]))
}

/// `path` split at its last slash: its directory (empty at the top) and its name.
fn split_parent(path: &[u8]) -> (&[u8], &[u8]) {
    match path.iter().rposition(|&b| b == b'/') {
        Some(slash) => (&path[..slash], &path[slash + 1..]),
        None => (&[], path),
    }
}

/// How the directory `dir` stands for a walk, found component by component from the
/// top as a walk would come down to it; each answer is kept in `known`.
fn reach(state: &WalkState<'_>, known: &mut HashMap<Vec<u8>, Reach>, dir: &[u8]) -> Reach {
    if let Some(reach) = known.get(dir) {
        return reach.clone();
    }
    let full = state.root.join(OsStr::from_bytes(dir));
    let reach = if dir.is_empty() {
        let rules = full
            .join(".gitignore")
            .symlink_metadata()
            .is_ok()
            .then(|| dir_rules(&full, 0, None))
            .flatten();
        Reach::Open(rules)
    } else if state.git_dirs.is(dir) {
        Reach::Out
    } else {
        let (parent, _) = split_parent(dir);
        match reach(state, known, parent) {
            Reach::Open(rules) => match std::fs::symlink_metadata(&full) {
                Ok(meta) if meta.is_dir() => {
                    if state.ignores(rules.as_deref(), dir, true) {
                        Reach::Ignored
                    } else if state.linked.is_linked(&full) {
                        Reach::Out
                    } else if full.join(".gitignore").symlink_metadata().is_ok() {
                        Reach::Open(dir_rules(&full, dir.len() + 1, rules))
                    } else {
                        Reach::Open(rules)
                    }
                }
                _ => Reach::Out,
            },
            // Below an ignored directory only tracked files count, and a walk would not
            // have looked for a linked worktree there either.
            Reach::Ignored => match std::fs::symlink_metadata(&full) {
                Ok(meta) if meta.is_dir() => Reach::Ignored,
                _ => Reach::Out,
            },
            Reach::Out => Reach::Out,
        }
    };
    known.insert(dir.to_vec(), reach.clone());
    reach
}
