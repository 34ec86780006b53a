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

use std::collections::HashMap;
use std::ffi::OsStr;
use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;

use crate::{Error, Result};

/// What [`Worktree::sync`] makes durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Barrier {
    /// Everything written to the worktree's filesystem, by anyone
    /// ([`super::platform::sync_filesystem`]): one call, which also waits for other
    /// processes' dirty data there.
    Filesystem,
    /// Only the files handed to [`Worktree::sync`] and the directories whose entries
    /// changed through this worktree's handles since the last sync, each with
    /// [`super::platform::sync_entry`], in parallel. Where the system cannot
    /// ([`super::platform::BARRIER_PER_ENTRY`]), the same as `Filesystem`.
    EachEntry,
}

/// Directories held for a [`Barrier::EachEntry`] sync, by device and inode, each with its
/// worktree path for messages.
type ChangedDirs = HashMap<(u64, u64), (OwnedFd, Vec<u8>)>;

/// The worktree's top directory, held open.
pub struct Worktree {
    top: OwnedFd,
    path: PathBuf,
    barrier: Barrier,
    /// The directories whose entries changed since the last [`Worktree::sync`], by device
    /// and inode, each held open for that sync (with [`Barrier::EachEntry`] only).
    changed_dirs: Mutex<ChangedDirs>,
    /// A changed directory could not be held for a [`Barrier::EachEntry`] sync (no
    /// descriptor left, say): the next sync is of the whole filesystem instead, which
    /// covers it.
    changed_dir_lost: AtomicBool,
    /// The first changed directory whose entries could not be pushed to the drive where
    /// the barrier needs that ([`super::platform::BARRIER_NEEDS_PUSHES`]):
    /// [`Worktree::sync`] reports it, since the barrier cannot make those entries durable.
    push_failure: Mutex<Option<Error>>,
}

/// One directory of the worktree, held open, with its worktree path for messages.
pub struct Dir<'w> {
    fd: OwnedFd,
    /// Its path relative to the top (empty for the top itself).
    rel: Vec<u8>,
    worktree: &'w Worktree,
    /// Whether an entry was made, renamed or removed here through this handle: on a
    /// system whose barrier covers only what was pushed, it is pushed when dropped; for a
    /// [`Barrier::EachEntry`] sync, it is kept for that sync.
    changed: AtomicBool,
}

impl Worktree {
    /// Opens the worktree's top directory, for changes that [`Worktree::sync`] makes
    /// durable as `barrier` says. The top itself may be reached through symlinks (it is
    /// where the user works); nothing below it is.
    pub fn open(path: &Path, barrier: Barrier) -> Result<Worktree> {
        let top = rustix::fs::open(
            path,
            OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC,
            Mode::empty(),
        )
        .map_err(|e| Error::io(path, e.into()))?;
        let barrier = match super::platform::BARRIER_PER_ENTRY {
            true => barrier,
            false => Barrier::Filesystem,
        };
        Ok(Worktree {
            top,
            path: path.to_path_buf(),
            barrier,
            changed_dirs: Mutex::new(HashMap::new()),
            changed_dir_lost: AtomicBool::new(false),
            push_failure: Mutex::new(None),
        })
    }

    /// What [`Worktree::sync`] makes durable: as opened, or [`Barrier::Filesystem`] where
    /// the system cannot sync each entry alone.
    pub fn barrier(&self) -> Barrier {
        self.barrier
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
                        Ok(()) => {
                            if super::platform::BARRIER_NEEDS_PUSHES {
                                super::platform::push_to_device(&fd)
                                    .map_err(|e| Error::io(self.display(here), e))?;
                            }
                            // The parent's new entry, for a sync of each changed directory.
                            self.changed(&fd, &rel[..(end - name.len()).saturating_sub(1)]);
                        }
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

    /// Makes the changes made through this worktree's handles durable, as its
    /// [`Barrier`] says: with [`Barrier::EachEntry`], each of `written` (files written
    /// through [`Dir::create_file`]) and each directory whose entries changed since the
    /// last sync; with [`Barrier::Filesystem`], everything on the filesystem holding the
    /// worktree, one call that costs about one fsync (on Apple systems, one drive flush
    /// after each file and changed directory was pushed: see
    /// [`super::platform::sync_filesystem`]). Fails if a changed directory could not be
    /// pushed or held.
    pub fn sync(&self, written: &[File]) -> Result<()> {
        let failed = self
            .push_failure
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        if let Some(e) = failed {
            return Err(e);
        }
        // Taken in any case: a sync of the whole filesystem covers them, and closes them.
        let dirs: Vec<(OwnedFd, Vec<u8>)> = std::mem::take(
            &mut *self
                .changed_dirs
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        )
        .into_values()
        .collect();
        let lost = self.changed_dir_lost.swap(false, Ordering::Relaxed);
        if self.barrier == Barrier::Filesystem || lost {
            let _span = crate::trace::span("worktree sync: the filesystem");
            return super::platform::sync_filesystem(&self.top)
                .map_err(|e| Error::io(&self.path, e));
        }
        let _span = crate::trace::span("worktree sync: each entry");
        crate::trace::note(format_args!(
            "worktree sync: {} files and {} directories, each",
            written.len(),
            dirs.len()
        ));
        let entries: Vec<(BorrowedFd<'_>, Option<&[u8]>)> = written
            .iter()
            .map(|file| (file.as_fd(), None))
            .chain(
                dirs.iter()
                    .map(|(fd, rel)| (fd.as_fd(), Some(rel.as_slice()))),
            )
            .collect();
        sync_in_parallel(&entries).map_err(|(rel, e)| match rel {
            Some(rel) => Error::io(self.display(rel), e),
            None => Error::io(&self.path, e),
        })
    }

    /// Notes that the entries of the directory `fd` (at `rel`) changed, for the next
    /// [`Barrier::EachEntry`] sync, which holds it open (a duplicate of `fd`) until then.
    fn changed(&self, fd: &OwnedFd, rel: &[u8]) {
        if self.barrier != Barrier::EachEntry {
            return;
        }
        let held = device_and_inode(fd).and_then(|id| {
            let mut dirs = self
                .changed_dirs
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            if let std::collections::hash_map::Entry::Vacant(slot) = dirs.entry(id) {
                let dup = rustix::io::fcntl_dupfd_cloexec(fd, 0)?;
                slot.insert((dup, rel.to_vec()));
            }
            Ok(())
        });
        if held.is_err() {
            self.changed_dir_lost.store(true, Ordering::Relaxed);
        }
    }
}

/// The device and inode of the file `fd`.
fn device_and_inode(fd: &OwnedFd) -> rustix::io::Result<(u64, u64)> {
    let st = rustix::fs::fstat(fd)?;
    // Not `u64` on every system (`dev_t` is `i32` on macOS).
    #[allow(clippy::unnecessary_cast)]
    Ok((st.st_dev as u64, st.st_ino as u64))
}

/// Threads that wait on [`super::platform::sync_entry`] calls at once: the more wait
/// together, the more share one journal commit and one drive flush.
const SYNC_THREADS: usize = 32;

/// Syncs each of `entries` (a file, or a directory with its worktree path) on up to
/// [`SYNC_THREADS`] threads; the first failure, with the path of the directory it was.
fn sync_in_parallel<'a>(
    entries: &[(BorrowedFd<'_>, Option<&'a [u8]>)],
) -> std::result::Result<(), (Option<&'a [u8]>, std::io::Error)> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failure = Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..SYNC_THREADS.min(entries.len()) {
            scope.spawn(|| {
                while let Some((fd, rel)) = entries.get(next.fetch_add(1, Ordering::Relaxed)) {
                    if let Err(e) = super::platform::sync_entry(fd, rel.is_some()) {
                        let mut failure = failure
                            .lock()
                            .unwrap_or_else(|poisoned| poisoned.into_inner());
                        failure.get_or_insert((*rel, e));
                    }
                }
            });
        }
    });
    match failure
        .into_inner()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
    {
        Some(failed) => Err(failed),
        None => Ok(()),
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

    /// Records that an entry here changed, for the push when this handle is dropped, or
    /// the next [`Barrier::EachEntry`] sync.
    fn mark_changed(&self) {
        if super::platform::BARRIER_NEEDS_PUSHES || self.worktree.barrier == Barrier::EachEntry {
            self.changed.store(true, Ordering::Relaxed);
        }
    }

    /// The device and inode of this directory: which directory the handle holds,
    /// wherever it has been moved to since it was opened.
    pub fn identity(&self) -> Result<(u64, u64)> {
        device_and_inode(&self.fd)
            .map_err(|e| Error::io(self.worktree.display(&self.rel), e.into()))
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

/// Pushes a changed directory's entries to the drive where the barrier needs it, or keeps
/// the directory for the next [`Barrier::EachEntry`] sync (see `Dir::mark_changed`); a
/// failure is kept for [`Worktree::sync`] to report.
impl Drop for Dir<'_> {
    fn drop(&mut self) {
        if !self.changed.load(Ordering::Relaxed) {
            return;
        }
        self.worktree.changed(&self.fd, &self.rel);
        if !super::platform::BARRIER_NEEDS_PUSHES {
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
