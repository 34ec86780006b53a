//! The watcher's kernel interface on Linux: inotify, one watch per directory (inotify is
//! not recursive), read without blocking, and its per-user limits from `/proc/sys`; and
//! the mount table from `/proc/self/mountinfo`. In test builds the events may instead be
//! handed over late, as FSEvents hands them (`delayed.rs`).

use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use inotify::{Inotify, WatchDescriptor, WatchMask, Watches};

use super::inbox::Inbox;
use super::inotify_queue::{read_now, READ_BUFFER};
use super::{delayed, Event, Limits};

/// A watched directory, as the kernel numbers it.
pub(crate) type WatchId = WatchDescriptor;

/// The kernel's queue of file-change events for this watcher.
pub(crate) struct Events {
    /// Adds and removes watches, wherever the queue is read.
    watches: Watches,
    source: Source,
}

/// Where the watcher reads the queue.
enum Source {
    /// On its own thread, as the kernel queues them.
    Direct {
        inotify: Inotify,
        /// Reused by every read: a read takes as many queued events as fit.
        buffer: Vec<u8>,
    },
    /// Test builds: late and in batches, from the thread that holds them back.
    Delayed(Inbox),
}

/// What every watched directory reports. Not `IN_ACCESS`/`IN_OPEN`: reads change nothing.
fn dir_mask() -> WatchMask {
    WatchMask::CREATE
        | WatchMask::DELETE
        | WatchMask::MODIFY
        | WatchMask::ATTRIB
        | WatchMask::MOVED_FROM
        | WatchMask::MOVED_TO
        | WatchMask::DELETE_SELF
        | WatchMask::MOVE_SELF
        | WatchMask::DONT_FOLLOW
        | WatchMask::ONLYDIR
        | WatchMask::EXCL_UNLINK
}

impl Events {
    /// A new, empty queue (non-blocking). The worktree's top is not needed: inotify
    /// watches each directory as it is added.
    pub(crate) fn new(_root: &Path) -> std::io::Result<Events> {
        let inotify = Inotify::init()?;
        let watches = inotify.watches();
        let source = match delayed::Delay::from_env() {
            Some(delay) => Source::Delayed(delayed::start(inotify, delay)?),
            None => Source::Direct {
                inotify,
                buffer: vec![0u8; READ_BUFFER],
            },
        };
        Ok(Events { watches, source })
    }

    /// Whether an event may reach the watcher after the call that made the change has
    /// returned: only with the test builds' delayed events.
    pub(crate) fn delivers_late(&self) -> bool {
        matches!(self.source, Source::Delayed(_))
    }

    /// Watches the directory `dir` (not what is below it; never through a symlink).
    /// `None` when it is gone again or is not a directory: its parent's events say so.
    pub(crate) fn add(&mut self, dir: &Path) -> std::io::Result<Option<WatchId>> {
        match self.watches.add(dir, dir_mask()) {
            Ok(id) => Ok(Some(id)),
            Err(e)
                if e.kind() == std::io::ErrorKind::NotFound
                    || e.raw_os_error() == Some(libc::ENOTDIR) =>
            {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// Stops watching a directory (an error means the kernel already dropped it).
    pub(crate) fn remove(&mut self, id: WatchId) {
        let _ = self.watches.remove(id);
    }

    /// The events queued now, as many as one read takes; empty when none is.
    pub(crate) fn read(&mut self) -> std::io::Result<Vec<Event>> {
        match &mut self.source {
            Source::Direct { inotify, buffer } => read_now(inotify, buffer),
            Source::Delayed(inbox) => inbox.take(),
        }
    }
}

/// Polled for readability: something is queued.
impl AsFd for Events {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match &self.source {
            Source::Direct { inotify, .. } => inotify.as_fd(),
            Source::Delayed(inbox) => inbox.as_fd(),
        }
    }
}

/// The user's inotify limits: for each, the lower of the system's
/// (`/proc/sys/fs/inotify/max_user_*`) and this user namespace's
/// (`/proc/sys/user/max_inotify_*`, lower in a container), both of which the kernel
/// enforces; `None` when neither can be read.
pub(crate) fn limits() -> Option<Limits> {
    let lowest = |files: [&str; 2]| {
        files
            .iter()
            .filter_map(|file| {
                std::fs::read_to_string(file)
                    .ok()?
                    .trim()
                    .parse::<u64>()
                    .ok()
            })
            .min()
    };
    Some(Limits {
        instances: lowest([
            "/proc/sys/fs/inotify/max_user_instances",
            "/proc/sys/user/max_inotify_instances",
        ])?,
        watches: lowest([
            "/proc/sys/fs/inotify/max_user_watches",
            "/proc/sys/user/max_inotify_watches",
        ])?,
    })
}

/// Whether a filesystem is mounted strictly below the worktree's top `root` (in this
/// process's view, `/proc/self/mountinfo`). The watcher watches directories, and one
/// mounted over after it started is not the directory it watches: changes there raise
/// no event it sees. Also when the mount table cannot be read: then nothing is known.
pub(crate) fn mounts_below(root: &Path) -> bool {
    let (Ok(table), Ok(root)) = (
        std::fs::read("/proc/self/mountinfo"),
        std::fs::canonicalize(root),
    ) else {
        return true;
    };
    let root = root.as_os_str().as_bytes();
    table.split(|&b| b == b'\n').any(|line| {
        // The fifth field is the mount point, with space, tab, newline and backslash
        // written as octal escapes.
        let Some(field) = line.split(|&b| b == b' ').nth(4) else {
            return false;
        };
        super::is_strictly_below(&unescape_mount_point(field), root)
    })
}

/// A mount point as `/proc/self/mountinfo` writes it, with its `\NNN` escapes decoded.
fn unescape_mount_point(field: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(field.len());
    let mut i = 0;
    while i < field.len() {
        let octal = field
            .get(i + 1..i + 4)
            .filter(|digits| field[i] == b'\\' && digits.iter().all(|d| (b'0'..=b'7').contains(d)))
            .and_then(|digits| u8::from_str_radix(std::str::from_utf8(digits).ok()?, 8).ok());
        match octal {
            Some(byte) => {
                out.push(byte);
                i += 4;
            }
            None => {
                out.push(field[i]);
                i += 1;
            }
        }
    }
    out
}
