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

use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use ignore::Match;
use rayon::slice::ParallelSliceMut;
use rustix::fs::{AtFlags, Mode, OFlags};

use super::exempt::{is_agent_file, is_watch_cookie, GitDirs, LinkedWorktrees};
use super::ignore_file::{Patterns, PatternsBuilder};
use crate::git::repo::{AgentFiles, Repo};
use crate::model::dir_cache::{
    may_record, rule_settled, rules_fingerprint, DirCache, DirCacheUpdates, DirListing,
    ListedEntry, ListedKind,
};
use crate::model::stat_cache::{FileStat, RACY_MARGIN_NS};
use crate::{Error, Result};

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

/// Under the test hooks, `GIT_CHECKPOINT_DIR_CACHE`: `off` walks without the directory
/// cache; `eager` records listings with no racy margin beyond the clock's own tick (a
/// listing is still written only when older than the clock), so that a test need not
/// wait two seconds for its directories to settle.
fn dir_cache_hook() -> Option<String> {
    if !cfg!(feature = "test-hooks") {
        return None;
    }
    std::env::var("GIT_CHECKPOINT_DIR_CACHE").ok()
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
/// watcher told which paths changed. Every path goes through the rules of [`walk`]:
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
        repo.tracked_paths()?
            .into_iter()
            .filter(|path| at_or_below_any(&tops, path))
            .collect()
    } else {
        Vec::new()
    };
    add_tracked(repo, tracked, leftovers_possible, &git_dirs, &mut found);
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

/// The ignore rules that apply in one directory: its own `.gitignore`, then those of the
/// directories above it, then the repository-wide excludes. A path is decided by the
/// nearest level with a matching pattern, as git decides it.
struct Rules {
    /// Matches paths relative to the directory whose `.gitignore` this is.
    matcher: Patterns,
    /// Length of that directory's worktree-relative path plus its slash (0 at the root).
    prefix: usize,
    parent: Option<Arc<Rules>>,
}

/// What every directory of one walk shares.
struct WalkState<'a> {
    root: &'a Path,
    /// `core.excludesFile`, then `info/exclude` (later files win, as in git).
    excludes: Patterns,
    found: Mutex<Walk>,
    failed: Mutex<Option<Error>>,
    /// A restore is recorded as interrupted, so its temporary files may be about.
    leftovers_possible: bool,
    /// Which directories holding a `.git` file are this repository's linked worktrees.
    linked: LinkedWorktrees,
    /// The repository's own directories inside the worktree, never entered.
    git_dirs: &'a GitDirs,
    /// The agents' files ([`Repo::agent_files`]), never captured.
    agent_files: &'a AgentFiles,
    /// The tracked paths, sorted: a tracked file is captured whatever the ignore rules say.
    tracked: &'a [Vec<u8>],
    /// Whether an ignore rule left anything out: only then can a tracked file lie where
    /// the walk did not look.
    ignored_any: AtomicBool,
    /// The directory cache this walk uses and renews, if it does.
    cache: Option<CacheUse<'a>>,
}

/// How a walk uses the directory cache ([`crate::model::dir_cache`]).
struct CacheUse<'a> {
    /// The listings recorded by earlier walks.
    listings: &'a DirCache,
    /// The filesystem's clock, read before anything was listed: a listing made now is
    /// written only if settled by it. `None`: none is written.
    clock_ns: Option<i64>,
    /// The fingerprint of the excludes files, the rules above the top's `.gitignore`.
    top_rules: u128,
    /// Whether the excludes files are settled by the clock.
    top_rules_settled: bool,
    /// Directories whose recorded listing this walk used, or listed afresh and settled.
    kept: Mutex<Vec<Vec<u8>>>,
    /// Listings made by this walk that may be written.
    put: Mutex<Vec<(Vec<u8>, DirListing)>>,
    /// How many directories the walk took from their recorded listing.
    used: AtomicUsize,
    /// How many it listed.
    listed: AtomicUsize,
}

/// The ignore rules in force in one directory, as the walk passes them down: the
/// matchers, and their fingerprint for the directory cache.
#[derive(Clone)]
struct DirRules {
    /// The `.gitignore` matchers of this directory and those above it, built when a
    /// directory under them is listed.
    rules: LazyRules,
    /// The fingerprint of every ignore file that decides them.
    fingerprint: u128,
    /// Whether every one of those files is settled (see [`CacheUse::clock_ns`]).
    settled: bool,
}

/// `.gitignore` matchers that are built only when first asked for. A directory whose
/// listing comes from the directory cache matches nothing against the rules, so the
/// `.gitignore` files above it are read and compiled only if some directory below is
/// listed afresh (which a save with nothing changed never does). The file is read then,
/// after its metadata went into the listing's fingerprint: an edit in between leaves a
/// fingerprint that no longer matches, so that listing is made again at the next walk.
#[derive(Clone, Default)]
enum LazyRules {
    /// No `.gitignore` on the way down.
    #[default]
    None,
    /// Matchers already built.
    Built(Arc<Rules>),
    /// A directory's `.gitignore`, on top of the rules above it, not read yet.
    Pending(Arc<PendingRules>),
}

/// A `.gitignore` whose matcher [`LazyRules`] builds on first use.
struct PendingRules {
    /// The directory holding it.
    dir: PathBuf,
    /// Its worktree path's length plus the slash (0 at the top).
    prefix: usize,
    /// The rules of the directories above it.
    parent: LazyRules,
    /// The matchers, once built (`None`: none apply here).
    built: OnceLock<Option<Arc<Rules>>>,
}

impl LazyRules {
    /// Rules already built (or none).
    fn built(rules: Option<Arc<Rules>>) -> Self {
        rules.map_or(LazyRules::None, LazyRules::Built)
    }

    /// These rules with the `.gitignore` of the directory `dir` (whose worktree path
    /// with its slash is `prefix` bytes long) on top, read when first asked for.
    fn with_gitignore(&self, dir: PathBuf, prefix: usize) -> Self {
        LazyRules::Pending(Arc::new(PendingRules {
            dir,
            prefix,
            parent: self.clone(),
            built: OnceLock::new(),
        }))
    }

    /// The matchers, built now if they were not yet (each `.gitignore` at most once per
    /// walk, whichever directory below asks first).
    fn get(&self) -> Option<Arc<Rules>> {
        match self {
            LazyRules::None => None,
            LazyRules::Built(rules) => Some(rules.clone()),
            LazyRules::Pending(pending) => pending
                .built
                .get_or_init(|| dir_rules(&pending.dir, pending.prefix, pending.parent.get()))
                .clone(),
        }
    }
}

impl WalkState<'_> {
    /// Whether git ignores `rel`, given the `.gitignore` rules of its directory and those
    /// above it (`None` where no directory on the way has one).
    fn ignores(&self, rules: Option<&Rules>, rel: &[u8], is_dir: bool) -> bool {
        let mut level = rules;
        while let Some(rules) = level {
            match rules.matcher.matched(&rel[rules.prefix..], is_dir) {
                Match::Ignore(_) => return true,
                Match::Whitelist(_) => return false,
                Match::None => level = rules.parent.as_deref(),
            }
        }
        self.excludes.matched(rel, is_dir).is_ignore()
    }
}

/// The rules of the directory `full` (worktree path length plus slash: `prefix`), which
/// holds a `.gitignore`, on top of those of the directories above it.
fn dir_rules(full: &Path, prefix: usize, parent: Option<Arc<Rules>>) -> Option<Arc<Rules>> {
    crate::trace::IGNORE_FILES_READ.add(1);
    let mut builder = PatternsBuilder::new(full);
    // git warns about a `.gitignore` it cannot read (a symlink, no permission) and goes
    // on as if it were empty; so does the walk, which has no one to warn.
    if builder.add_file(&full.join(".gitignore"), false).is_err() {
        return parent;
    }
    Some(Arc::new(Rules {
        matcher: builder.build(),
        prefix,
        parent,
    }))
}

/// Walks the worktree in parallel, one task per directory: `readdir` gives each entry's
/// type, and only files and symlinks are `lstat`ed, relative to their directory's open
/// descriptor. Ignored directories are not entered, as in git, so a rule inside one
/// cannot re-include. With `cache`, a directory whose recorded listing still holds is not
/// listed (see [`walk_cached`]).
fn walk_tree(
    repo: &Repo,
    leftovers_possible: bool,
    tracked: &[Vec<u8>],
    git_dirs: &GitDirs,
    cache: Option<&DirCache>,
) -> Result<Walk> {
    let state = WalkState::new(repo, leftovers_possible, tracked, git_dirs, cache)?;
    let top = DirRules {
        rules: LazyRules::None,
        fingerprint: state.cache.as_ref().map_or(0, |c| c.top_rules),
        settled: state.cache.as_ref().is_some_and(|c| c.top_rules_settled),
    };
    rayon::scope(|scope| walk_dir(scope, &state, Vec::new(), top));
    state.into_walk()
}

impl<'a> WalkState<'a> {
    /// The state of a walk of `repo`'s worktree: its repository-wide excludes read, and,
    /// with `cache`, the filesystem's clock read first (before any file that decides a
    /// listing is looked at, as [`crate::model::dir_cache`] requires).
    fn new(
        repo: &'a Repo,
        leftovers_possible: bool,
        tracked: &'a [Vec<u8>],
        git_dirs: &'a GitDirs,
        cache: Option<&'a DirCache>,
    ) -> Result<WalkState<'a>> {
        let root = repo.root.as_path();
        let info_exclude = repo.common_dir.join("info").join("exclude");
        let excludes_files = [repo.excludes_file(), Some(info_exclude)];
        // Before the files are read: a listing depends on what they said, and an edit
        // after their metadata was taken must show in it.
        let cache = cache.map(|listings| CacheUse::new(repo, listings, &excludes_files));
        let mut excludes = PatternsBuilder::new(root);
        for file in excludes_files.into_iter().flatten() {
            // These two may be symlinks (a dotfiles manager's `~/.config/git/ignore`):
            // git follows them.
            if file.is_file() {
                if let Err(err) = excludes.add_file(&file, true) {
                    return Err(Error::InvalidArgument(format!(
                        "cannot read excludes file {}: {err}",
                        file.display()
                    )));
                }
            }
        }
        Ok(WalkState {
            root,
            excludes: excludes.build(),
            // About one entry per tracked file: the batches of every directory land in
            // room reserved once, not in a list grown (and its pages touched) again and
            // again while the walk's threads wait for its lock.
            found: Mutex::new(Walk {
                entries: Vec::with_capacity(tracked.len() + tracked.len() / 16),
                ..Walk::default()
            }),
            failed: Mutex::new(None),
            leftovers_possible,
            linked: LinkedWorktrees::of(repo),
            git_dirs,
            agent_files: &repo.agent_files,
            tracked,
            ignored_any: AtomicBool::new(false),
            cache,
        })
    }

    /// What the walk found, or the first error it met; with the directory cache, the
    /// listings to write and those to forget (every recorded one the walk neither used
    /// nor renewed: gone, changed and not settled, or no longer walked into).
    fn into_walk(self) -> Result<Walk> {
        if let Some(error) = self.failed.into_inner().unwrap_or_else(|e| e.into_inner()) {
            return Err(error);
        }
        let mut found = self.found.into_inner().unwrap_or_else(|e| e.into_inner());
        if let Some(cache) = &self.cache {
            crate::trace::note(format_args!(
                "walk: {} directories from the directory cache, {} listed, {} .gitignore files read",
                cache.used.load(Ordering::Relaxed),
                cache.listed.load(Ordering::Relaxed),
                crate::trace::IGNORE_FILES_READ.get()
            ));
        }
        if let Some(cache) = self.cache.filter(|c| c.clock_ns.is_some()) {
            let kept: HashSet<Vec<u8>> = cache
                .kept
                .into_inner()
                .unwrap_or_else(|e| e.into_inner())
                .into_iter()
                .collect();
            let mut remove: Vec<Vec<u8>> = (cache.listings.keys())
                .filter(|dir| !kept.contains(*dir))
                .cloned()
                .collect();
            remove.sort_unstable();
            let mut put = cache.put.into_inner().unwrap_or_else(|e| e.into_inner());
            put.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            found.dir_cache = DirCacheUpdates { put, remove };
        }
        Ok(found)
    }
}

/// The paths of `tracked` (sorted) inside the directory `dir` (at any depth), and how
/// many bytes of each are the directory's path and its slash: a contiguous run of the
/// sorted list, in which a name is found by comparing only what follows.
fn tracked_in<'t>(tracked: &'t [Vec<u8>], dir: &[u8]) -> (&'t [Vec<u8>], usize) {
    if dir.is_empty() {
        return (tracked, 0);
    }
    let mut prefix = Vec::with_capacity(dir.len() + 1);
    prefix.extend_from_slice(dir);
    prefix.push(b'/');
    let start = tracked.partition_point(|p| p.as_slice() < prefix.as_slice());
    let rest = &tracked[start..];
    let len = rest.partition_point(|p| p.starts_with(&prefix));
    (&rest[..len], prefix.len())
}

/// Whether `name` is tracked, in the run of tracked paths [`tracked_in`] gave.
fn is_tracked((run, skip): (&[Vec<u8>], usize), name: &[u8]) -> bool {
    run.binary_search_by(|path| path[skip..].cmp(name)).is_ok()
}

impl<'a> CacheUse<'a> {
    /// The cache state of a walk: the clock, then the excludes files' fingerprint.
    fn new(repo: &Repo, listings: &'a DirCache, excludes_files: &[Option<PathBuf>]) -> Self {
        let eager = dir_cache_hook().as_deref() == Some("eager");
        let clock_ns =
            super::filesystem_clock(&repo.checkpoint_dir())
                .ok()
                .map(|clock| match eager {
                    true => clock.saturating_add(RACY_MARGIN_NS),
                    false => clock,
                });
        let mut fingerprint = 0;
        let mut settled = clock_ns.is_some();
        for file in excludes_files {
            let path = file
                .as_deref()
                .map_or(&[][..], |p| p.as_os_str().as_bytes());
            // The link and what it leads to: editing a dotfiles manager's target changes
            // nothing about the link.
            let stats = file.as_deref().map(|file| {
                [std::fs::symlink_metadata(file), std::fs::metadata(file)]
                    .map(|meta| meta.ok().map(|m| FileStat::from_metadata(&m)))
            });
            for stat in stats.into_iter().flatten() {
                fingerprint = rules_fingerprint(fingerprint, path, stat.as_ref());
                settled &= clock_ns.is_some_and(|clock| rule_settled(stat.as_ref(), clock));
            }
        }
        CacheUse {
            listings,
            clock_ns,
            top_rules: fingerprint,
            top_rules_settled: settled,
            kept: Mutex::new(Vec::new()),
            put: Mutex::new(Vec::new()),
            used: AtomicUsize::new(0),
            listed: AtomicUsize::new(0),
        }
    }
}

impl DirRules {
    /// Rules for a walk without the directory cache.
    fn uncached(rules: LazyRules) -> Self {
        DirRules {
            rules,
            fingerprint: 0,
            settled: false,
        }
    }

    /// The fingerprint and settledness of the rules in the directory `dir`, whose own
    /// `.gitignore` has the metadata `gitignore` (`None`: it has none); the matchers are
    /// not built here.
    fn below(&self, dir: &[u8], gitignore: Option<&FileStat>, clock_ns: Option<i64>) -> Self {
        let Some(stat) = gitignore else {
            return self.clone();
        };
        let mut path = dir.to_vec();
        if !path.is_empty() {
            path.push(b'/');
        }
        path.extend_from_slice(b".gitignore");
        DirRules {
            rules: self.rules.clone(),
            fingerprint: rules_fingerprint(self.fingerprint, &path, Some(stat)),
            settled: self.settled && clock_ns.is_some_and(|c| rule_settled(Some(stat), c)),
        }
    }
}

/// `FileStat` of what `stat`/`fstat` returned, as [`FileStat::from_metadata`] makes it.
fn file_stat(st: &rustix::fs::Stat) -> FileStat {
    #[allow(clippy::unnecessary_cast)] // the field types differ between systems
    let (mtime, mtime_nsec, ctime, ctime_nsec) = (
        st.st_mtime as i64,
        st.st_mtime_nsec as i64,
        st.st_ctime as i64,
        st.st_ctime_nsec as i64,
    );
    #[allow(clippy::unnecessary_cast)]
    FileStat {
        size: st.st_size as u64,
        mtime_ns: mtime
            .saturating_mul(1_000_000_000)
            .saturating_add(mtime_nsec),
        ctime_ns: ctime
            .saturating_mul(1_000_000_000)
            .saturating_add(ctime_nsec),
        ino: st.st_ino as u64,
        dev: st.st_dev as u64,
        mode: st.st_mode as u32,
    }
}

/// The kind of file `stat` describes.
fn file_type(stat: &FileStat) -> rustix::fs::FileType {
    rustix::fs::FileType::from_raw_mode(stat.mode as rustix::fs::RawMode)
}

/// `lstat` of `name` in the directory open as `dir`.
fn stat_at(dir: BorrowedFd<'_>, name: &[u8]) -> std::io::Result<FileStat> {
    let st = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)?;
    Ok(file_stat(&st))
}

/// `dir` and `name` joined by a slash (just `name` at the top).
fn join(dir: &[u8], name: &[u8]) -> Vec<u8> {
    let mut rel = Vec::with_capacity(dir.len() + 1 + name.len());
    if !dir.is_empty() {
        rel.extend_from_slice(dir);
        rel.push(b'/');
    }
    rel.extend_from_slice(name);
    rel
}

fn walk_dir<'s>(scope: &rayon::Scope<'s>, state: &'s WalkState<'s>, dir: Vec<u8>, rules: DirRules) {
    match list_dir(scope, state, &dir, rules) {
        Ok(batch) => {
            let mut found = state.found.lock().unwrap_or_else(|e| e.into_inner());
            found.entries.extend(batch.entries);
            found.special.extend(batch.special);
            found.leftovers.extend(batch.leftovers);
            found.linked_worktrees.extend(batch.linked_worktrees);
        }
        // A directory deleted while the walk runs is simply not part of the checkpoint.
        Err(Error::Io { error, .. }) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            state
                .failed
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get_or_insert(e);
        }
    }
}

/// One directory's files into a batch, spawning a task for each subdirectory to walk:
/// from its recorded listing when that still holds, else listed.
fn list_dir<'s>(
    scope: &rayon::Scope<'s>,
    state: &'s WalkState<'s>,
    dir: &[u8],
    parent: DirRules,
) -> Result<Walk> {
    let full = state.root.join(OsStr::from_bytes(dir));
    let io = |e: rustix::io::Errno| Error::io(&full, e.into());
    let fd = rustix::fs::open(
        &full,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(io)?;
    // Taken before the listing: an entry made after it moves the times past these.
    let dir_stat = match &state.cache {
        Some(_) => Some(file_stat(&rustix::fs::fstat(&fd).map_err(io)?)),
        None => None,
    };
    if let (Some(cache), Some(stat)) = (&state.cache, &dir_stat) {
        if let Some(listing) = cache.listings.get(dir).filter(|l| l.stat == *stat) {
            if let Some(batch) = from_listing(scope, state, dir, fd.as_fd(), listing, &parent)? {
                return Ok(batch);
            }
        }
    }
    read_dir(scope, state, dir, fd, dir_stat, parent)
}

/// The directory `dir` (open as `fd`, its metadata that of `listing`) as its recorded
/// `listing` says, when that still holds: the same ignore rules above it and in it, every
/// entry kept for being tracked still tracked, and every other entry still there and
/// still not a directory. `None` when it does not hold; nothing is spawned then.
fn from_listing<'s>(
    scope: &rayon::Scope<'s>,
    state: &'s WalkState<'s>,
    dir: &[u8],
    fd: BorrowedFd<'_>,
    listing: &DirListing,
    parent: &DirRules,
) -> Result<Option<Walk>> {
    let Some(cache) = &state.cache else {
        return Ok(None);
    };
    // Its times are the recorded ones, so a `.gitignore` is there exactly if one was.
    let gitignore = match listing.gitignore {
        Some(_) => stat_at(fd, b".gitignore").ok(),
        None => None,
    };
    if listing.gitignore.is_some() && gitignore.is_none() {
        return Ok(None);
    }
    let mut here = parent.below(dir, gitignore.as_ref(), cache.clock_ns);
    if here.fingerprint != listing.rules {
        return Ok(None);
    }
    let tracked = tracked_in(state.tracked, dir);
    if (listing.entries.iter())
        .any(|e| e.kind == ListedKind::Tracked && !is_tracked(tracked, &e.name))
    {
        return Ok(None);
    }
    let mut batch = Walk::default();
    let mut subdirs = Vec::new();
    for entry in &listing.entries {
        let rel = join(dir, &entry.name);
        if entry.kind == ListedKind::Dir {
            if !state.git_dirs.is(&rel) {
                subdirs.push(rel);
            }
            continue;
        }
        if state.agent_files.contains(&rel) {
            continue;
        }
        match stat_at(fd, &entry.name) {
            Ok(stat) if file_type(&stat) != rustix::fs::FileType::Directory => {
                classify_stat(rel, stat, state.leftovers_possible, &mut batch)
            }
            // Gone or now a directory: the listing is out of date after all.
            Ok(_) => return Ok(None),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(state.root.join(OsStr::from_bytes(&rel)), e)),
        }
    }
    if gitignore.is_some() {
        // Read only if a directory below is listed afresh: the listing needs no matcher.
        let full = state.root.join(OsStr::from_bytes(dir));
        let prefix = if dir.is_empty() { 0 } else { dir.len() + 1 };
        here.rules = here.rules.with_gitignore(full, prefix);
    }
    for rel in subdirs {
        let rules = here.clone();
        scope.spawn(move |scope| walk_dir(scope, state, rel, rules));
    }
    cache
        .kept
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(dir.to_vec());
    cache.used.fetch_add(1, Ordering::Relaxed);
    Ok(Some(batch))
}

/// Lists one directory (open as `fd`, its metadata `dir_stat` when the walk uses the
/// directory cache) into a batch, spawning a task for each subdirectory to walk; with the
/// cache, records the listing when it is settled.
fn read_dir<'s>(
    scope: &rayon::Scope<'s>,
    state: &'s WalkState<'s>,
    dir: &[u8],
    fd: OwnedFd,
    dir_stat: Option<FileStat>,
    parent: DirRules,
) -> Result<Walk> {
    let full = state.root.join(OsStr::from_bytes(dir));
    let io = |e: rustix::io::Errno| Error::io(&full, e.into());
    if let Some(cache) = &state.cache {
        cache.listed.fetch_add(1, Ordering::Relaxed);
    }
    let mut listed = rustix::fs::Dir::new(fd).map_err(io)?;
    let mut entries = Vec::new();
    let mut has_gitignore = false;
    let mut has_git_file = false;
    while let Some(entry) = listed.read() {
        let entry = entry.map_err(io)?;
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        if name.eq_ignore_ascii_case(b".git") {
            has_git_file |= name == b".git"
                && match entry.file_type() {
                    rustix::fs::FileType::Unknown => stat_at(listed.fd().map_err(io)?, name)
                        .is_ok_and(|s| file_type(&s) == rustix::fs::FileType::RegularFile),
                    kind => kind == rustix::fs::FileType::RegularFile,
                };
            continue;
        }
        if dir.is_empty() && is_watch_cookie(name) {
            continue;
        }
        has_gitignore |= name == b".gitignore";
        entries.push((name.to_vec(), entry.file_type()));
    }
    crate::fault::point("walk-listed");
    // The top is the worktree being walked, which may itself be a linked one.
    if has_git_file && !dir.is_empty() && state.linked.is_linked(&full) {
        return Ok(Walk {
            linked_worktrees: vec![dir.to_vec()],
            ..Walk::default()
        });
    }
    let fd = listed.fd().map_err(io)?;
    let prefix = if dir.is_empty() { 0 } else { dir.len() + 1 };
    // Before the `.gitignore` is read: an edit after this shows in the record.
    let gitignore = match (&state.cache, has_gitignore) {
        (Some(_), true) => stat_at(fd, b".gitignore").ok(),
        _ => None,
    };
    let mut here = parent.below(
        dir,
        gitignore.as_ref(),
        state.cache.as_ref().and_then(|c| c.clock_ns),
    );
    if has_gitignore {
        here.rules = here.rules.with_gitignore(full.clone(), prefix);
    }
    // This listing is matched against the rules: they are built now, once per walk
    // for each `.gitignore`, and the directories below share them.
    let rules = here.rules.get();
    let tracked = tracked_in(state.tracked, dir);
    // A directory holding a `.git` file is a linked worktree or not by what that file
    // and the repository say, which its times do not follow: never recorded.
    let mut record =
        (state.cache.is_some() && !has_git_file && has_gitignore == gitignore.is_some())
            .then(Vec::new);
    let mut batch = Walk::default();
    for (name, file_type) in entries {
        let rel = join(dir, &name);
        let mut stat = None;
        let is_dir = match file_type {
            rustix::fs::FileType::Unknown => match stat_at(fd, &name) {
                Ok(s) => stat.insert(s).mode & 0o170000 == 0o040000,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(Error::io(full.join(OsStr::from_bytes(&name)), e)),
            },
            kind => kind == rustix::fs::FileType::Directory,
        };
        let tracked_file = !is_dir && is_tracked(tracked, &name);
        if !tracked_file && state.ignores(rules.as_deref(), &rel, is_dir) {
            state.ignored_any.store(true, Ordering::Relaxed);
            continue;
        }
        if let Some(record) = &mut record {
            record.push(ListedEntry {
                name: name.clone(),
                kind: match (is_dir, tracked_file) {
                    (true, _) => ListedKind::Dir,
                    (false, true) => ListedKind::Tracked,
                    (false, false) => ListedKind::Other,
                },
            });
        }
        if is_dir {
            if state.git_dirs.is(&rel) {
                continue;
            }
            let rules = here.clone();
            scope.spawn(move |scope| walk_dir(scope, state, rel, rules));
            continue;
        }
        if state.agent_files.contains(&rel) {
            continue;
        }
        let stat = match stat {
            Some(stat) => Ok(stat),
            None => stat_at(fd, &name),
        };
        match stat {
            Ok(stat) => classify_stat(rel, stat, state.leftovers_possible, &mut batch),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(full.join(OsStr::from_bytes(&name)), e)),
        }
    }
    if let (Some(cache), Some(entries), Some(stat)) = (&state.cache, record, dir_stat) {
        let settled = cache
            .clock_ns
            .is_some_and(|clock| may_record(&stat, here.settled, clock));
        if settled {
            let listing = DirListing {
                stat,
                gitignore,
                rules: here.fingerprint,
                entries,
            };
            (cache.put.lock().unwrap_or_else(|e| e.into_inner())).push((dir.to_vec(), listing));
            (cache.kept.lock().unwrap_or_else(|e| e.into_inner())).push(dir.to_vec());
        }
    }
    Ok(batch)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_through_a_directory_descriptor_reads_as_std_metadata_does() {
        // The stat cache compares what each way of looking recorded: a file must never
        // look changed only because another call read its metadata.
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("f"), b"x").unwrap();
        std::os::unix::fs::symlink("f", dir.path().join("l")).unwrap();
        let fd = rustix::fs::open(
            dir.path(),
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .unwrap();
        for name in ["f", "l"] {
            let ours = stat_at(fd.as_fd(), name.as_bytes()).unwrap();
            let meta = std::fs::symlink_metadata(dir.path().join(name)).unwrap();
            assert_eq!(ours, FileStat::from_metadata(&meta), "{name}");
        }
        let meta = std::fs::metadata(dir.path()).unwrap();
        let ours = file_stat(&rustix::fs::fstat(&fd).unwrap());
        assert_eq!(ours, FileStat::from_metadata(&meta));
    }

    #[test]
    fn a_directory_s_tracked_run_holds_its_names_only() {
        let tracked: Vec<Vec<u8>> = ["a/b", "a/c/d", "a0", "ab", "b"]
            .iter()
            .map(|p| p.as_bytes().to_vec())
            .collect();
        let run = tracked_in(&tracked, b"a");
        assert_eq!(run.0.len(), 2);
        assert!(is_tracked(run, b"b"));
        // A path deeper down is not a name of the directory.
        assert!(!is_tracked(run, b"c"));
        assert!(!is_tracked(run, b"ab"));
        let top = tracked_in(&tracked, b"");
        assert!(is_tracked(top, b"ab"));
        assert!(is_tracked(top, b"b"));
        assert!(!is_tracked(top, b"a"));
        assert!(tracked_in(&tracked, b"c").0.is_empty());
    }
}
