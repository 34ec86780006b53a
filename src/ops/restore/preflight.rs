//! The preflight of a restore: everything that can be known before a change is checked
//! before any (docs/design.md invariant 1), so that a refused restore changes nothing
//! and a dry run refuses exactly what the real run would.

use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::apply::file_size;
use crate::diff::Change;
use crate::format::chunk::Hasher;
use crate::model::tree::Node;
use crate::storage::pack::{LastPack, ReadChunks};
use crate::{Error, Result};

/// Longest name (one path component) Linux filesystems take.
const NAME_MAX: usize = 255;

/// Refuses, before anything is changed, a restore that would overwrite something no
/// checkpoint holds (a file at a path the current snapshot lacks is ignored, or appeared
/// after the scan, and writing there would lose it for good, unless it holds exactly what
/// is to be written), that would write through a symlink or where something other than
/// a directory stands in the way of a directory (an ignored or skipped file, an ignored
/// symlink, or one the paths given leave alone), or that is known to fail half-way: a
/// name longer than a filesystem takes, or more bytes to write than the worktree's
/// filesystem has free (each new file exists beside the old one until the renames).
pub(super) fn preflight(
    root: &Path,
    hasher: &Hasher,
    chunks: &ReadChunks,
    changes: &[Change],
) -> Result<()> {
    let deleted: HashSet<&[u8]> = changes
        .iter()
        .filter(|c| c.new.is_none())
        .map(|c| c.path.as_slice())
        .collect();
    check_names_and_room(root, changes)?;
    check_directories_writable(root, changes)?;
    let mut dirs = DirsSeen::default();
    let mut last = LastPack::default();
    for change in changes {
        let Some(node) = &change.new else { continue };
        if !dirs.way_is_clear(root, &change.path, &deleted)? || change.old.is_some() {
            continue;
        }
        let full = root.join(OsStr::from_bytes(&change.path));
        match std::fs::symlink_metadata(&full) {
            Ok(meta) if meta.is_dir() => holds_nothing_else(root, &full, &deleted)?,
            Ok(meta) => {
                if !holds_the_same(&full, &meta, node, hasher, chunks, &mut last)? {
                    return Err(Error::RestoreBlocked {
                        path: full,
                        why: "it exists but is not in the current checkpoint (it is ignored, or new); move it away and retry".into(),
                    });
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(full, e)),
        }
    }
    Ok(())
}

/// Refuses a restore known to fail half-way: a name longer than a filesystem takes, or
/// more bytes to write than the worktree's filesystem has free.
pub(crate) fn check_names_and_room(root: &Path, changes: &[Change]) -> Result<()> {
    let mut needed: u64 = 0;
    for change in changes.iter().filter(|c| c.new.is_some()) {
        if let Some(long) = change
            .path
            .split(|&b| b == b'/')
            .find(|c| c.len() > NAME_MAX)
        {
            return Err(Error::RestoreBlocked {
                path: root.join(OsStr::from_bytes(&change.path)),
                why: format!(
                    "the name {:?} is {} bytes long; filesystems take at most {NAME_MAX}",
                    String::from_utf8_lossy(long),
                    long.len()
                ),
            });
        }
        needed = needed.saturating_add(change.new.as_ref().map_or(0, file_size));
    }
    // Where the filesystem cannot say, the write itself reports a full disk.
    if let Some(free) = crate::worktree::platform::free_bytes(root) {
        if needed > free {
            return Err(Error::RestoreBlocked {
                path: root.to_path_buf(),
                why: format!(
                    "the files to write take {}, and its filesystem has {} free; free some space and retry",
                    crate::format::size::human_bytes(needed),
                    crate::format::size::human_bytes(free)
                ),
            });
        }
    }
    Ok(())
}

/// Refuses a change that a directory would stop half-way: the directory that gets each
/// new entry or loses one (the deepest real one on the way, where directories are to be
/// made or a file in the way is deleted first) must be one this user may write (not
/// read-only for them, not immutable, not on a read-only filesystem). The way is looked
/// at from the top down and never through a symlink; each directory is looked at once.
pub(crate) fn check_directories_writable(root: &Path, changes: &[Change]) -> Result<()> {
    let mut real: HashMap<&[u8], bool> = HashMap::new();
    let mut checked: HashSet<&[u8]> = HashSet::new();
    for change in changes {
        let parent = parent_of(&change.path);
        let ends = parent
            .iter()
            .enumerate()
            .filter(|(_, &b)| b == b'/')
            .map(|(i, _)| i)
            .chain((!parent.is_empty()).then_some(parent.len()));
        let mut deepest: &[u8] = &[];
        for end in ends {
            let dir = &parent[..end];
            let is_dir = *real.entry(dir).or_insert_with(|| {
                std::fs::symlink_metadata(root.join(OsStr::from_bytes(dir)))
                    .is_ok_and(|meta| meta.is_dir())
            });
            if !is_dir {
                break;
            }
            deepest = dir;
        }
        if !checked.insert(deepest) {
            continue;
        }
        let full = root.join(OsStr::from_bytes(deepest));
        if let Err(e) = may_write_in(&full) {
            return Err(Error::RestoreBlocked {
                path: full,
                why: format!("this directory cannot be written ({e}); make it writable and retry"),
            });
        }
    }
    Ok(())
}

/// Whether this process may add and remove entries in the directory `dir`, as the kernel
/// decides for its effective user (permissions, ACLs, the immutable flag, a read-only
/// mount).
fn may_write_in(dir: &Path) -> std::io::Result<()> {
    use rustix::fs::{Access, AtFlags, CWD};
    rustix::fs::accessat(
        CWD,
        dir,
        Access::WRITE_OK | Access::EXEC_OK,
        AtFlags::EACCESS,
    )
    .map_err(std::io::Error::from)
}

/// The directory holding `path` (empty at the top).
fn parent_of(path: &[u8]) -> &[u8] {
    match path.iter().rposition(|&b| b == b'/') {
        Some(slash) => &path[..slash],
        None => &[],
    }
}

/// Directories already found to be real ones, or missing, so each is looked at once
/// (a restore into an emptied worktree writes thousands of paths below a few).
#[derive(Default)]
struct DirsSeen<'c> {
    real: HashSet<&'c [u8]>,
    missing: HashSet<&'c [u8]>,
}

impl<'c> DirsSeen<'c> {
    /// Checks each directory above `path`, from the top: the restore opens them without
    /// following symlinks and makes the missing ones, so anything else in the way would
    /// stop it half-way. Returns whether something of the worktree's may stand at
    /// `path` itself: not below a path the restore deletes first (a symlink to a
    /// directory, a file; looking there would follow that symlink into its target), nor
    /// below a missing directory (a path written there is created with `O_EXCL` all the
    /// same).
    fn way_is_clear(
        &mut self,
        root: &Path,
        path: &'c [u8],
        deleted: &HashSet<&[u8]>,
    ) -> Result<bool> {
        for (i, _) in path.iter().enumerate().filter(|(_, &b)| b == b'/') {
            let dir = &path[..i];
            if deleted.contains(dir) || self.missing.contains(dir) {
                return Ok(false);
            }
            if self.real.contains(dir) {
                continue;
            }
            let full = root.join(OsStr::from_bytes(dir));
            match std::fs::symlink_metadata(&full) {
                Ok(meta) if meta.is_dir() => {
                    self.real.insert(dir);
                }
                Ok(meta) => {
                    return Err(Error::RestoreBlocked {
                        path: full,
                        why: if meta.file_type().is_symlink() {
                            "the checkpoint has a directory here, and the worktree a symlink that this restore does not replace (it is ignored, or outside the paths given); restore never writes through one: move it away and retry".into()
                        } else {
                            "the checkpoint has a directory here, and the worktree a file that this restore does not replace (it is ignored, larger than checkpoint.maxFileSize, or outside the paths given); move it away and retry".into()
                        },
                    })
                }
                // Missing: the restore makes it, and everything below it.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    self.missing.insert(dir);
                    return Ok(false);
                }
                Err(e) => return Err(Error::io(full, e)),
            }
        }
        Ok(true)
    }
}

/// Whether the file or symlink at `full` (whose metadata is `meta`) holds exactly what
/// `node` holds: then writing `node` over it loses nothing (a permission bit at most,
/// which the checkpoint decides).
fn holds_the_same<'a>(
    full: &Path,
    meta: &std::fs::Metadata,
    node: &Node,
    hasher: &Hasher,
    chunks: &'a ReadChunks,
    last: &mut LastPack<'a>,
) -> Result<bool> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    match node {
        Node::Symlink { target } => Ok(meta.file_type().is_symlink()
            && std::fs::read_link(full)
                .map_err(|e| Error::io(full, e))?
                .as_os_str()
                .as_bytes()
                == target.as_slice()),
        Node::File {
            size, chunks: ids, ..
        }
        | Node::FileWithMode {
            size, chunks: ids, ..
        } => {
            if !meta.is_file() || meta.len() != *size {
                return Ok(false);
            }
            // Not through a symlink swapped in since, and never blocking on a FIFO.
            let mut file = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
                .open(full)
                .map_err(|e| Error::io(full, e))?;
            let (mut want, mut have) = (Vec::new(), Vec::new());
            for &id in ids {
                want.clear();
                chunks.read(hasher, id, &mut want, last)?;
                have.resize(want.len(), 0);
                if file.read_exact(&mut have).is_err() || have != want {
                    return Ok(false);
                }
            }
            // Nothing past the recorded size (the file may have grown since the look).
            let mut more = [0u8; 1];
            Ok(matches!(file.read(&mut more), Ok(0)))
        }
        Node::Dir { .. } => Ok(false),
    }
}

/// Checks that `dir` holds only directories and files in `deleted`.
pub(crate) fn holds_nothing_else(root: &Path, dir: &Path, deleted: &HashSet<&[u8]>) -> Result<()> {
    for entry in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        let path = entry.path();
        if entry.file_type().map_err(|e| Error::io(&path, e))?.is_dir() {
            holds_nothing_else(root, &path, deleted)?;
        } else {
            let rel = path
                .strip_prefix(root)
                .unwrap_or(&path)
                .as_os_str()
                .as_bytes();
            if !deleted.contains(rel) {
                return Err(Error::RestoreBlocked {
                    path,
                    why: "it is not part of any checkpoint, and the checkpoint has a file where its directory is; move it away and retry".into(),
                });
            }
        }
    }
    Ok(())
}
