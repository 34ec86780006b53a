//! The index a watched save saw, kept beside its base (issue 37). The index decides what
//! a walk captures (a tracked file an ignore rule matches is captured), and agents run
//! `git add`, `git commit`, `git checkout -- <paths>` and `git stash` all the time: a
//! save that walked whenever the index changed would walk after each. So the save that
//! records a base keeps the index it saw, a hard link in the watcher's directory (git,
//! libgit2 and JGit replace the index by renaming a new file over it, so the old file
//! stays as it was, and the link costs nothing in proportion to the tree), and records
//! the index's state with the base. The next save compares the kept index with the
//! current one entry by entry ([`crate::git::index::changed_paths`]) and looks again at
//! the paths whose entries changed, as it does at the paths the watcher reports. An
//! index written in place (the kept name is the same file, so it tells nothing of what
//! the index held), one this tool does not read (split, sparse), a kept link that is
//! gone or not the one recorded, or a great many changed entries (a checkout of another
//! branch): the save walks.

use std::fs::OpenOptions;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::PathBuf;
use std::sync::Mutex;

use crate::git::repo::Repo;
use crate::model::stat_cache::FileStat;
use crate::watch as watcher;

/// Changed index entries beyond which a save walks: a checkout of another branch, not an
/// agent's `git add`.
const MAX_INDEX_CHANGES: usize = 10_000;

/// The index file as a save found it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum IndexState {
    /// There is none (a repository with nothing added yet).
    Absent,
    /// A regular file with this metadata.
    File(FileStat),
}

/// The index file's state now; `None` when it is neither absent nor a regular file (a
/// symlink, unreadable), which no recorded state vouches for.
pub(super) fn index_state(repo: &Repo) -> Option<IndexState> {
    match std::fs::symlink_metadata(repo.index_file()) {
        Ok(meta) if meta.is_file() => Some(IndexState::File(FileStat::from_metadata(&meta))),
        Ok(_) => None,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(IndexState::Absent),
        Err(_) => None,
    }
}

/// `state` as a line of the base file; `?` for none, which never vouches.
pub(super) fn encode(state: Option<IndexState>) -> String {
    match state {
        None => "?".into(),
        Some(IndexState::Absent) => "-".into(),
        Some(IndexState::File(stat)) => format!(
            "{} {} {} {} {} {}",
            stat.size, stat.mtime_ns, stat.ctime_ns, stat.ino, stat.dev, stat.mode
        ),
    }
}

/// The state [`encode`] wrote as `line`; `None` for `?` or anything else.
pub(super) fn decode(line: &str) -> Option<IndexState> {
    if line == "-" {
        return Some(IndexState::Absent);
    }
    let mut fields = line.split(' ');
    let mut field = || fields.next()?.parse::<u64>().ok();
    let (size, mtime, ctime, ino, dev, mode) =
        (field()?, field()?, field()?, field()?, field()?, field()?);
    Some(IndexState::File(FileStat {
        size,
        mtime_ns: i64::try_from(mtime).ok()?,
        ctime_ns: i64::try_from(ctime).ok()?,
        ino,
        dev,
        mode: u32::try_from(mode).ok()?,
    }))
}

/// Where the kept index is: a fixed name in the watcher's directory.
fn kept_path(repo: &Repo) -> PathBuf {
    watcher::base_path(repo).with_file_name("index")
}

/// Whether `a` and `b` describe the same file with the same content: a link changes
/// the file's ctime, and git's rename of a new index over it (one link fewer) too, so
/// only the rest counts.
fn same_file(a: &FileStat, b: &FileStat) -> bool {
    (a.dev, a.ino, a.size, a.mtime_ns) == (b.dev, b.ino, b.size, b.mtime_ns)
}

/// The paths whose index entries changed since the base that `recorded` the index's
/// state: none when the index is the recorded one; those the kept index and the current
/// one (`now`, as the save found it before it looked at the worktree) disagree about
/// otherwise. `None` when only a walk can tell.
pub(super) fn index_changes(
    repo: &Repo,
    recorded: Option<IndexState>,
    now: Option<IndexState>,
) -> Option<Vec<Vec<u8>>> {
    let (then, now) = match (recorded?, now?) {
        (IndexState::Absent, IndexState::Absent) => return Some(Vec::new()),
        (IndexState::File(then), IndexState::File(now)) => (then, now),
        _ => return None,
    };
    if then == now {
        return Some(Vec::new());
    }
    // Written in place: the kept name is the same file, holding what the index holds now.
    if (then.dev, then.ino) == (now.dev, now.ino) {
        return None;
    }
    let kept = watcher::open_own_file(&kept_path(repo), OpenOptions::new().read(true)).ok()?;
    if !same_file(&FileStat::from_metadata(&kept.metadata().ok()?), &then) {
        return None;
    }
    let current = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(repo.index_file())
        .ok()?;
    if !same_file(&FileStat::from_metadata(&current.metadata().ok()?), &now) {
        return None;
    }
    let mut last = LAST_COMPARED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(compared) = last.as_ref().filter(|c| (c.kept, c.current) == (then, now)) {
        return compared.changed.clone();
    }
    let _span = crate::trace::span("watch: index changes");
    let changed =
        crate::git::index::changed_paths(kept, current, repo.hash_len(), MAX_INDEX_CHANGES);
    *last = Some(Compared {
        kept: then,
        current: now,
        changed: changed.clone(),
    });
    changed
}

/// The last comparison of two indexes this process made: a save asks the watcher twice
/// (whether anything changed, then what) and need not compare the same files twice.
/// Files are told apart by their stat, as everywhere the save trusts a recorded state.
struct Compared {
    kept: FileStat,
    current: FileStat,
    changed: Option<Vec<Vec<u8>>>,
}

static LAST_COMPARED: Mutex<Option<Compared>> = Mutex::new(None);

/// Keeps the index the save saw (`seen`, found before it looked at the worktree) as a
/// hard link in the watcher's directory, made under a temporary name and renamed over
/// the kept one (a link planted as either name is replaced, never written through), and
/// returns the index's state to record with the base; `None` (the next save walks) when
/// the index changed since the save found it. Where no link can be made (another
/// filesystem) the state is recorded all the same: an unchanged index needs no copy, and
/// a changed one finds none that is the recorded file, and walks.
pub(super) fn keep(repo: &Repo, seen: Option<IndexState>) -> Option<IndexState> {
    let seen = match seen? {
        IndexState::Absent => {
            return (index_state(repo)? == IndexState::Absent).then_some(IndexState::Absent)
        }
        IndexState::File(seen) => seen,
    };
    let kept = kept_path(repo);
    let index = repo.index_file();
    // The index the last base kept: linking it again and renaming the new name over
    // the old would do nothing (both name one file), and leave the new name behind.
    let kept_already = std::fs::symlink_metadata(&kept)
        .is_ok_and(|m| m.is_file() && (m.dev(), m.ino()) == (seen.dev, seen.ino));
    if !kept_already {
        let temp = kept.with_extension("tmp");
        let _ = std::fs::remove_file(&temp);
        if std::fs::hard_link(&index, &temp).is_ok() && std::fs::rename(&temp, &kept).is_err() {
            let _ = std::fs::remove_file(&temp);
        }
    }
    // Whatever was linked, the index must still be the file the save found: the kept
    // copy is checked against this state when it is used.
    let meta = std::fs::symlink_metadata(&index).ok()?;
    let now = FileStat::from_metadata(&meta);
    (meta.is_file() && same_file(&now, &seen)).then_some(IndexState::File(now))
}
