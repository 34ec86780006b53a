//! What a walk finds: each file and symlink of the worktree ([`WalkEntry`]), with the
//! special files, leftovers and linked worktrees beside them ([`Walk`]), and how a found
//! path is sorted into them (`classify`).

use crate::model::dir_cache::DirCacheUpdates;
use crate::model::stat_cache::FileStat;

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
    /// Whether it had more than one name (hard links) when walked: a write through
    /// another name raises no event for this one (docs/design.md, "The watcher").
    pub many_links: bool,
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
    /// What a walk with the directory cache ([`walk_into`](super::walk_into)) found to
    /// write to it.
    pub dir_cache: DirCacheUpdates,
}

/// Whether the last component of `path` is named as a restore's temporary file.
fn is_restore_temp(path: &[u8]) -> bool {
    let name = path.rsplit(|&b| b == b'/').next().unwrap_or(path);
    crate::worktree::is_temp_name(name)
}

/// Sorts one walked path into `into`. With `leftovers_possible` (a restore is recorded as
/// interrupted), a file named as restore's temporary files are is a leftover to remove,
/// never captured; otherwise it is the user's and saved like any other.
pub(super) fn classify(
    path: Vec<u8>,
    meta: &std::fs::Metadata,
    leftovers_possible: bool,
    into: &mut Walk,
) {
    use std::os::unix::fs::MetadataExt;
    classify_stat(
        path,
        FileStat::from_metadata(meta),
        meta.nlink(),
        leftovers_possible,
        into,
    );
}

/// [`classify`] of a path whose metadata is `stat`, with `links` names.
pub(super) fn classify_stat(
    path: Vec<u8>,
    stat: FileStat,
    links: u64,
    leftovers_possible: bool,
    into: &mut Walk,
) {
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
    into.entries.push(WalkEntry {
        path,
        kind,
        stat,
        many_links: links > 1,
    });
}

/// The kind of file `stat` describes.
pub(super) fn file_type(stat: &FileStat) -> rustix::fs::FileType {
    rustix::fs::FileType::from_raw_mode(stat.mode as rustix::fs::RawMode)
}
