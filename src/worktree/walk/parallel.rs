//! One directory of a walk ([`list_dir`]): listed (or taken from its recorded listing,
//! [`super::cache_use`]), its entries matched against the ignore rules in force there
//! ([`super::rules`]), its files and symlinks `lstat`ed through its open descriptor, and
//! its subdirectories named, each with the rules in force there, for the walk to go on
//! into: in path order ([`super::ordered`]), or as rayon tasks ([`walk_dir`], the walk of
//! a watcher's changed paths).

use std::borrow::Cow;
use std::ffi::OsStr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use rustix::fs::{AtFlags, Mode, OFlags};

use super::cache_use::CacheUse;
use super::found::{classify_stat, file_type, Walk};
use super::rules::{is_ignored, read_excludes, DirRules, Rules};
use crate::format::path::join;
use crate::git::repo::{AgentFiles, Repo};
use crate::model::dir_cache::{
    may_record, DirCacheUpdates, DirListing, DirListings, ListedEntry, ListedKind,
};
use crate::model::stat_cache::FileStat;
use crate::worktree::exempt::{is_watch_cookie, GitDirs, LinkedWorktrees};
use crate::worktree::ignore_file::Patterns;
use crate::worktree::names::{precompose, NameRules};
use crate::{Error, Result};

/// What every directory of one walk shares.
pub(super) struct WalkState<'a> {
    pub(super) root: &'a Path,
    /// `core.excludesFile`, then `info/exclude` (later files win, as in git).
    excludes: Patterns,
    found: Mutex<Walk>,
    failed: Mutex<Option<Error>>,
    /// A restore is recorded as interrupted, so its temporary files may be about.
    leftovers_possible: bool,
    /// Which directories holding a `.git` file are this repository's linked worktrees.
    pub(super) linked: LinkedWorktrees,
    /// The repository's own directories inside the worktree, never entered.
    pub(super) git_dirs: &'a GitDirs,
    /// The agents' files ([`Repo::agent_files`]), never captured.
    agent_files: &'a AgentFiles,
    /// The tracked paths, sorted: a tracked file is captured whatever the ignore rules say.
    tracked: &'a [Vec<u8>],
    /// Whether an ignore rule left anything out: only then can a tracked file lie where
    /// the walk did not look.
    pub(super) ignored_any: AtomicBool,
    /// The directory cache this walk uses and renews, if it does.
    pub(super) cache: Option<CacheUse<'a>>,
    /// The worktree's filesystem ignores Unicode normalization: names are taken in NFC
    /// ([`precomposed`]).
    precompose: bool,
}

impl WalkState<'_> {
    /// Whether git ignores `rel`, given the `.gitignore` rules of its directory and those
    /// above it (`None` where no directory on the way has one).
    pub(super) fn ignores(&self, rules: Option<&Rules>, rel: &[u8], is_dir: bool) -> bool {
        is_ignored(rules, &self.excludes, rel, is_dir)
    }
}

/// What listing one directory found ([`list_dir`]).
pub(super) struct Listed {
    /// Its files and symlinks, sorted by path; its special files and leftovers; itself,
    /// in `linked_worktrees`, when it is a linked worktree (then nothing else).
    pub(super) batch: Walk,
    /// Its subdirectories to walk into, each with the rules in force there.
    pub(super) subdirs: Vec<(Vec<u8>, DirRules)>,
    /// The listing to record in the directory cache: made afresh by a walk that uses the
    /// cache, and settled.
    pub(super) record: Option<DirListing>,
}

impl Listed {
    /// A directory with nothing in it to walk (deleted while the walk ran).
    pub(super) fn empty() -> Listed {
        Listed {
            batch: Walk::default(),
            subdirs: Vec::new(),
            record: None,
        }
    }
}

impl<'a> WalkState<'a> {
    /// The state of a walk of `repo`'s worktree: its repository-wide excludes read, and,
    /// with `cache`, the filesystem's clock read first (before any file that decides a
    /// listing is looked at, as [`crate::model::dir_cache`] requires).
    pub(super) fn new(
        repo: &'a Repo,
        leftovers_possible: bool,
        tracked: &'a [Vec<u8>],
        git_dirs: &'a GitDirs,
        cache: Option<&'a dyn DirListings>,
    ) -> Result<WalkState<'a>> {
        let root = repo.root.as_path();
        let info_exclude = repo.common_dir.join("info").join("exclude");
        let excludes_files = [repo.excludes_file(), Some(info_exclude)];
        // Before the files are read: a listing depends on what they said, and an edit
        // after their metadata was taken must show in it.
        let cache = cache.map(|listings| CacheUse::new(repo, listings, &excludes_files));
        let excludes = read_excludes(root, excludes_files)?;
        Ok(WalkState {
            root,
            excludes,
            found: Mutex::new(Walk::default()),
            failed: Mutex::new(None),
            leftovers_possible,
            linked: LinkedWorktrees::of(repo),
            git_dirs,
            agent_files: &repo.agent_files,
            tracked,
            ignored_any: AtomicBool::new(false),
            cache,
            precompose: NameRules::of(repo).ignores_normalization,
        })
    }

    /// What [`walk_dir`] tasks found, or the first error they met.
    pub(super) fn into_walk(self) -> Result<Walk> {
        if let Some(error) = self.failed.into_inner().unwrap_or_else(|e| e.into_inner()) {
            return Err(error);
        }
        Ok(self.found.into_inner().unwrap_or_else(|e| e.into_inner()))
    }

    /// The directory cache changes besides the listings handed on as they were made:
    /// every recorded listing this walk neither used nor renewed is removed (gone,
    /// changed and not settled, or no longer walked into). Nothing when the walk uses no
    /// cache, or could read no clock (then it records nothing either).
    pub(super) fn dir_cache_removals(&self) -> Result<DirCacheUpdates> {
        if let Some(cache) = &self.cache {
            crate::trace::note(format_args!(
                "walk: {} directories from the directory cache, {} listed, {} .gitignore files read",
                cache.used.load(Ordering::Relaxed),
                cache.listed.load(Ordering::Relaxed),
                crate::trace::IGNORE_FILES_READ.get()
            ));
        }
        let Some(cache) = self.cache.as_ref().filter(|c| c.clock_ns.is_some()) else {
            return Ok(DirCacheUpdates::default());
        };
        let mut kept = std::mem::take(&mut *cache.kept.lock().unwrap_or_else(|e| e.into_inner()));
        kept.sort_unstable();
        let mut remove = Vec::new();
        cache.listings.each_dir(&mut |dir| {
            if kept.binary_search_by(|k| k.as_slice().cmp(dir)).is_err() {
                remove.push(dir.to_vec());
            }
        })?;
        Ok(DirCacheUpdates {
            put: Vec::new(),
            remove,
        })
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

/// The name `name`, as listed in the directory open as `dir` on a filesystem that
/// ignores Unicode normalization, in NFC, as git's `core.precomposeUnicode` takes it:
/// a name written in NFC and handed back in NFD (HFS+, some network filesystems) is then
/// the name the checkpoint, the stat cache and git's index hold. Kept as listed where
/// the NFC form does not find the entry (the setting said so, the filesystem does not),
/// so that no file drops out of a save.
fn precomposed(dir: BorrowedFd<'_>, name: &[u8]) -> Vec<u8> {
    match precompose(name) {
        Cow::Owned(nfc) if stat_at(dir, &nfc).is_ok() => nfc,
        _ => name.to_vec(),
    }
}

/// `lstat` of `name` in the directory open as `dir`.
fn stat_at(dir: BorrowedFd<'_>, name: &[u8]) -> std::io::Result<FileStat> {
    Ok(stat_with_links_at(dir, name)?.0)
}

/// [`stat_at`], with the number of links to the file.
fn stat_with_links_at(dir: BorrowedFd<'_>, name: &[u8]) -> std::io::Result<(FileStat, u64)> {
    let st = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)?;
    #[allow(clippy::unnecessary_cast)] // the field's type differs between systems
    Ok((file_stat(&st), st.st_nlink as u64))
}

/// Walks the directory `dir` and, as rayon tasks, every directory below it, into the
/// walk state's findings (a directory deleted meanwhile is simply not there).
pub(super) fn walk_dir<'s>(
    scope: &rayon::Scope<'s>,
    state: &'s WalkState<'s>,
    dir: Vec<u8>,
    rules: DirRules,
) {
    match list_dir(state, &dir, rules) {
        Ok(listed) => {
            for (rel, rules) in listed.subdirs {
                scope.spawn(move |scope| walk_dir(scope, state, rel, rules));
            }
            let batch = listed.batch;
            let mut found = state.found.lock().unwrap_or_else(|e| e.into_inner());
            found.entries.extend(batch.entries);
            found.special.extend(batch.special);
            found.leftovers.extend(batch.leftovers);
            found.linked_worktrees.extend(batch.linked_worktrees);
        }
        Err(e) => {
            state
                .failed
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get_or_insert(e);
        }
    }
}

/// One directory's files and subdirectories: from its recorded listing when that still
/// holds, else listed. A directory deleted while the walk runs is simply not part of the
/// checkpoint: it lists as empty.
pub(super) fn list_dir(state: &WalkState<'_>, dir: &[u8], parent: DirRules) -> Result<Listed> {
    let mut listed = match open_and_list(state, dir, parent) {
        Err(Error::Io { error, .. }) if error.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Listed::empty())
        }
        other => other?,
    };
    // Listed in the order the directory gave: the walk goes on in path order.
    listed
        .batch
        .entries
        .sort_unstable_by(|a, b| a.path.cmp(&b.path));
    Ok(listed)
}

fn open_and_list(state: &WalkState<'_>, dir: &[u8], parent: DirRules) -> Result<Listed> {
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
            if let Some(listed) = from_listing(state, dir, fd.as_fd(), &listing, &parent)? {
                return Ok(listed);
            }
        }
    }
    read_dir(state, dir, fd, dir_stat, parent)
}

/// The directory `dir` (open as `fd`, its metadata that of `listing`) as its recorded
/// `listing` says, when that still holds: the same ignore rules above it and in it, every
/// entry kept for being tracked still tracked, and every other entry still there and
/// still not a directory. `None` when it does not hold.
fn from_listing(
    state: &WalkState<'_>,
    dir: &[u8],
    fd: BorrowedFd<'_>,
    listing: &DirListing,
    parent: &DirRules,
) -> Result<Option<Listed>> {
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
        match stat_with_links_at(fd, &entry.name) {
            Ok((stat, links)) if file_type(&stat) != rustix::fs::FileType::Directory => {
                classify_stat(rel, stat, links, state.leftovers_possible, &mut batch)
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
    let subdirs = subdirs.into_iter().map(|rel| (rel, here.clone())).collect();
    cache
        .kept
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(dir.to_vec());
    cache.used.fetch_add(1, Ordering::Relaxed);
    Ok(Some(Listed {
        batch,
        subdirs,
        record: None,
    }))
}

/// Lists one directory (open as `fd`, its metadata `dir_stat` when the walk uses the
/// directory cache); with the cache, the listing to record when it is settled.
fn read_dir(
    state: &WalkState<'_>,
    dir: &[u8],
    fd: OwnedFd,
    dir_stat: Option<FileStat>,
    parent: DirRules,
) -> Result<Listed> {
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
        let name = match state.precompose {
            true => precomposed(listed.fd().map_err(io)?, name),
            false => name.to_vec(),
        };
        entries.push((name, entry.file_type()));
    }
    crate::fault::point("walk-listed");
    // The top is the worktree being walked, which may itself be a linked one.
    if has_git_file && !dir.is_empty() && state.linked.is_linked(&full) {
        return Ok(Listed {
            batch: Walk {
                linked_worktrees: vec![dir.to_vec()],
                ..Walk::default()
            },
            ..Listed::empty()
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
    let mut subdirs = Vec::new();
    for (name, file_type) in entries {
        let rel = join(dir, &name);
        let mut stat = None;
        let is_dir = match file_type {
            rustix::fs::FileType::Unknown => match stat_with_links_at(fd, &name) {
                Ok(s) => stat.insert(s).0.mode & 0o170000 == 0o040000,
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
            if !state.git_dirs.is(&rel) {
                subdirs.push((rel, here.clone()));
            }
            continue;
        }
        if state.agent_files.contains(&rel) {
            continue;
        }
        let stat = match stat {
            Some(stat) => Ok(stat),
            None => stat_with_links_at(fd, &name),
        };
        match stat {
            Ok((stat, links)) => {
                classify_stat(rel, stat, links, state.leftovers_possible, &mut batch)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(full.join(OsStr::from_bytes(&name)), e)),
        }
    }
    let mut recorded = None;
    if let (Some(cache), Some(mut entries), Some(stat)) = (&state.cache, record, dir_stat) {
        let settled = cache
            .clock_ns
            .is_some_and(|clock| may_record(&stat, here.settled, clock));
        if settled {
            // Recorded in name order, so that the files of a listing used again come in
            // path order already, and [`list_dir`]'s sort of them only checks.
            entries.sort_unstable_by(|a, b| a.name.cmp(&b.name));
            recorded = Some(DirListing {
                stat,
                gitignore,
                rules: here.fingerprint,
                entries,
            });
            (cache.kept.lock().unwrap_or_else(|e| e.into_inner())).push(dir.to_vec());
        }
    }
    Ok(Listed {
        batch,
        subdirs,
        record: recorded,
    })
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
