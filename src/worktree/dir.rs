//! Writing the worktree relative to directory handles, never through a path string below
//! the worktree's top.
//!
//! A restore may run while another process (an agent, a build) changes the worktree. A
//! check of a path followed by a write to the same path is a race: a directory checked
//! to be real can be swapped for a symlink before the write, which then lands wherever
//! the symlink points. So every directory below the top is opened one component at a
//! time with `O_DIRECTORY | O_NOFOLLOW` from the one above it, and every change
//! (`unlinkat`, `mkdirat`, `openat(O_CREAT | O_EXCL | O_NOFOLLOW)`, `symlinkat`,
//! `renameat`) is made relative to the handle of the directory it concerns. A swapped
//! directory then fails the open (the restore stops with an error), or the handle still
//! names the directory that was checked, wherever it has been moved to.
//!
//! Invariant (docs/design.md, "Nothing is written outside the worktree"): no function
//! here resolves a symlink below the top, and none takes a path string except names of
//! one component, checked by [`crate::model::tree::is_safe_name`] or generated here.

use std::ffi::OsStr;
use std::fs::File;
use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;

use crate::{Error, Result};

/// The worktree's top directory, held open.
pub struct Worktree {
    top: OwnedFd,
    path: PathBuf,
    /// The first changed directory whose entries could not be pushed to the drive where
    /// the barrier needs that ([`super::platform::BARRIER_NEEDS_PUSHES`]): [`Worktree::sync`]
    /// reports it, since the barrier cannot make those entries durable.
    push_failure: Mutex<Option<Error>>,
}

/// One directory of the worktree, held open, with its worktree path for messages.
pub struct Dir<'w> {
    fd: OwnedFd,
    /// Its path relative to the top (empty for the top itself).
    rel: Vec<u8>,
    worktree: &'w Worktree,
    /// Whether an entry was made, renamed or removed here through this handle: on a
    /// system whose barrier covers only what was pushed, it is pushed when dropped.
    changed: AtomicBool,
}

impl Worktree {
    /// Opens the worktree's top directory. The top itself may be reached through
    /// symlinks (it is where the user works); nothing below it is.
    pub fn open(path: &Path) -> Result<Worktree> {
        let top = rustix::fs::open(
            path,
            OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| Error::io(path, e.into()))?;
        Ok(Worktree {
            top,
            path: path.to_path_buf(),
            push_failure: Mutex::new(None),
        })
    }

    /// The full path of `rel`, for messages only.
    pub fn display(&self, rel: &[u8]) -> PathBuf {
        self.path.join(OsStr::from_bytes(rel))
    }

    /// The directory `rel` (a `/`-separated worktree path; empty for the top), opened
    /// component by component without following a symlink. With `create`, missing
    /// directories are made. `Ok(None)` when a component is missing and `create` is
    /// off. A component that is a symlink or not a directory is refused.
    pub fn dir(&self, rel: &[u8], create: bool) -> Result<Option<Dir<'_>>> {
        let mut fd = rustix::fs::openat(
            &self.top,
            ".",
            OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| Error::io(&self.path, e.into()))?;
        let mut end = 0;
        for name in rel.split(|&b| b == b'/').filter(|c| !c.is_empty()) {
            end += name.len() + usize::from(end > 0);
            let here = &rel[..end];
            let open = |parent: &OwnedFd| {
                rustix::fs::openat(
                    parent,
                    OsStr::from_bytes(name),
                    OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::RDONLY | OFlags::CLOEXEC,
                    Mode::empty(),
                )
            };
            fd = match open(&fd) {
                Ok(child) => child,
                Err(Errno::NOENT) if create => {
                    match rustix::fs::mkdirat(&fd, OsStr::from_bytes(name), Mode::from(0o777)) {
                        Ok(()) => super::platform::push_to_device(&fd)
                            .map_err(|e| Error::io(self.display(here), e))?,
                        Err(Errno::EXIST) => {}
                        Err(e) => return Err(Error::io(self.display(here), e.into())),
                    }
                    open(&fd).map_err(|e| self.refusal(here, e))?
                }
                Err(Errno::NOENT) => return Ok(None),
                Err(e) => return Err(self.refusal(here, e)),
            };
        }
        Ok(Some(Dir {
            fd,
            rel: rel.to_vec(),
            worktree: self,
            changed: AtomicBool::new(false),
        }))
    }

    /// The error for a directory component that did not open.
    fn refusal(&self, rel: &[u8], e: Errno) -> Error {
        let path = self.display(rel);
        match e {
            // O_NOFOLLOW on a symlink gives ELOOP; O_DIRECTORY on anything else ENOTDIR.
            Errno::LOOP | Errno::NOTDIR => {
                let is_link = rustix::fs::statat(
                    &self.top,
                    OsStr::from_bytes(rel),
                    AtFlags::SYMLINK_NOFOLLOW,
                )
                .is_ok_and(|st| {
                    rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Symlink
                });
                Error::RestoreBlocked {
                    path,
                    why: if is_link {
                        "this directory of the checkpoint is a symlink in the worktree; restore never writes through one".into()
                    } else {
                        "a file that is not part of any checkpoint is where a directory belongs; move it away and retry".into()
                    },
                }
            }
            e => Error::io(path, e.into()),
        }
    }

    /// Flushes everything written to the filesystem holding the worktree: one call that
    /// costs about one fsync, instead of one fsync per file (on Apple systems, one drive
    /// flush after each file and changed directory was pushed: see
    /// [`super::platform::sync_filesystem`]). Fails if a changed directory could not be
    /// pushed.
    pub fn sync(&self) -> Result<()> {
        let failed = self
            .push_failure
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        if let Some(e) = failed {
            return Err(e);
        }
        super::platform::sync_filesystem(&self.top).map_err(|e| Error::io(&self.path, e))
    }
}

impl Dir<'_> {
    /// The worktree path of `name` in this directory.
    pub fn rel(&self, name: &[u8]) -> Vec<u8> {
        let mut rel = self.rel.clone();
        if !rel.is_empty() {
            rel.push(b'/');
        }
        rel.extend_from_slice(name);
        rel
    }

    /// The full path of `name` in this directory, for messages only.
    pub fn display(&self, name: &[u8]) -> PathBuf {
        self.worktree.display(&self.rel(name))
    }

    fn io(&self, name: &[u8], e: Errno) -> Error {
        Error::io(self.display(name), e.into())
    }

    /// Records that an entry here changed, for the push when this handle is dropped.
    fn mark_changed(&self) {
        if super::platform::BARRIER_NEEDS_PUSHES {
            self.changed.store(true, Ordering::Relaxed);
        }
    }

    /// The device and inode of this directory: which directory the handle holds,
    /// wherever it has been moved to since it was opened.
    pub fn identity(&self) -> Result<(u64, u64)> {
        let st = rustix::fs::fstat(&self.fd)
            .map_err(|e| Error::io(self.worktree.display(&self.rel), e.into()))?;
        Ok((st.st_dev as u64, st.st_ino as u64))
    }

    /// What `name` is here, without following a symlink; `None` if nothing is.
    pub fn kind(&self, name: &[u8]) -> Result<Option<rustix::fs::FileType>> {
        match rustix::fs::statat(&self.fd, OsStr::from_bytes(name), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some(rustix::fs::FileType::from_raw_mode(st.st_mode))),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(self.io(name, e)),
        }
    }

    /// Removes the file or symlink `name`; nothing there is fine.
    pub fn remove_file(&self, name: &[u8]) -> Result<()> {
        self.mark_changed();
        match rustix::fs::unlinkat(&self.fd, OsStr::from_bytes(name), AtFlags::empty()) {
            Ok(()) | Err(Errno::NOENT) => Ok(()),
            Err(e) => Err(self.io(name, e)),
        }
    }

    /// Removes the directory `name` if it is empty; a directory that still holds
    /// something (an ignored file, say), or nothing there, is left alone.
    pub fn remove_dir_if_empty(&self, name: &[u8]) {
        self.mark_changed();
        let _ = rustix::fs::unlinkat(&self.fd, OsStr::from_bytes(name), AtFlags::REMOVEDIR);
    }

    /// Removes the directory `name` and the directories below it, which must hold
    /// nothing else (the preflight found only files that the deletions have removed
    /// since); anything else there makes it fail.
    pub fn remove_empty_tree(&self, name: &[u8]) -> Result<()> {
        let child = rustix::fs::openat(
            &self.fd,
            OsStr::from_bytes(name),
            OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::RDONLY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| self.io(name, e))?;
        let child = Dir {
            fd: child,
            rel: self.rel(name),
            worktree: self.worktree,
            changed: AtomicBool::new(false),
        };
        let mut below = Vec::new();
        for entry in rustix::fs::Dir::read_from(&child.fd).map_err(|e| self.io(name, e))? {
            let entry = entry.map_err(|e| self.io(name, e))?;
            let entry_name = entry.file_name().to_bytes();
            if entry_name != b"." && entry_name != b".." {
                below.push(entry_name.to_vec());
            }
        }
        for entry_name in below {
            child.remove_empty_tree(&entry_name)?;
        }
        self.mark_changed();
        rustix::fs::unlinkat(&self.fd, OsStr::from_bytes(name), AtFlags::REMOVEDIR)
            .map_err(|e| self.io(name, e))
    }

    /// Creates the new file `name` for writing with `mode` (less the umask, as any new
    /// file); `Ok(None)` if anything is there already, so that the caller can look at
    /// what it is instead of failing.
    pub fn create_file(&self, name: &[u8], mode: u32) -> Result<Option<File>> {
        self.mark_changed();
        match rustix::fs::openat(
            &self.fd,
            OsStr::from_bytes(name),
            OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::WRONLY | OFlags::CLOEXEC,
            super::platform::permission_mode(mode),
        ) {
            Ok(fd) => Ok(Some(File::from(fd))),
            Err(Errno::EXIST) => Ok(None),
            Err(e) => Err(self.io(name, e)),
        }
    }

    /// Creates the symlink `name` pointing at `target`; `Ok(false)` if anything is there
    /// already.
    pub fn symlink(&self, target: &[u8], name: &[u8]) -> Result<bool> {
        self.mark_changed();
        match rustix::fs::symlinkat(OsStr::from_bytes(target), &self.fd, OsStr::from_bytes(name)) {
            Ok(()) => Ok(true),
            Err(Errno::EXIST) => Ok(false),
            Err(e) => Err(self.io(name, e)),
        }
    }

    /// Renames `from` over `to`, both in this directory, atomically replacing a file or
    /// symlink at `to`.
    pub fn rename(&self, from: &[u8], to: &[u8]) -> Result<()> {
        self.mark_changed();
        rustix::fs::renameat(
            &self.fd,
            OsStr::from_bytes(from),
            &self.fd,
            OsStr::from_bytes(to),
        )
        .map_err(|e| self.io(to, e))
    }
}

/// Pushes a changed directory's entries to the drive where the barrier needs it (see
/// `Dir::mark_changed`); a failure is kept for [`Worktree::sync`] to report.
impl Drop for Dir<'_> {
    fn drop(&mut self) {
        if !self.changed.load(Ordering::Relaxed) {
            return;
        }
        if let Err(e) = super::platform::push_to_device(&self.fd) {
            let mut failure = self
                .worktree
                .push_failure
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            failure.get_or_insert_with(|| Error::io(self.worktree.display(&self.rel), e));
        }
    }
}
