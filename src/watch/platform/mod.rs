//! The watcher's kernel interface: the one place that names the kernel's file-change
//! events, so that the rest of the watcher (and a build for another system) never does.
//!
//! Linux has it (`linux.rs`, through inotify). Elsewhere (`other.rs`) there is no
//! watcher: [`available`] says so in one line, and every save walks the worktree as it
//! does without a watcher. The daemon relies on one promise of the backend: an event is
//! queued in the very system call that makes the change, so reading the queue dry before
//! an answer covers every change that completed before the question. A backend that
//! cannot keep that promise (FSEvents batches with a latency) must not be plugged in here.
//!
//! The mount table is here too: a filesystem mounted below the worktree after the
//! watcher started hides changes from it, and where the table is kept is the system's
//! business. So are the per-user [`Limits`] of the kernel's interface.

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
pub(crate) use linux::{limits, mounts_below, Events, WatchId};

#[cfg(not(target_os = "linux"))]
mod other;
#[cfg(not(target_os = "linux"))]
pub(crate) use other::{limits, mounts_below, Events, WatchId};

use crate::{Error, Result};

/// Whether this build has a watcher: only Linux's has a kernel interface that keeps
/// the promise above.
pub const AVAILABLE: bool = cfg!(target_os = "linux");

/// `Ok` where a watcher can run; elsewhere the one line `watch` answers with.
pub fn available() -> Result<()> {
    if AVAILABLE {
        return Ok(());
    }
    Err(Error::InvalidArgument(
        "git checkpoint watch is not available on this system (it needs Linux's inotify); \
         saves walk the worktree as they do without a watcher"
            .into(),
    ))
}

/// What the kernel lets one user hold of its file-change events at once, over all its
/// programs: the watchers started by hook runs take only a share of it
/// ([`super::share`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Event queues (inotify instances): one per watcher.
    pub instances: u64,
    /// Watched directories, over all queues.
    pub watches: u64,
}

/// One event of the kernel's queue, in the words the daemon needs.
pub(crate) struct Event {
    /// The watched directory the event is about.
    pub watch: WatchId,
    /// The entry of that directory it names; `None` for the directory itself.
    pub name: Option<Vec<u8>>,
    /// What happened.
    pub change: Change,
}

/// What an [`Event`] says happened. Several may be set at once.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Change {
    /// Events were lost (the queue overflowed): nothing journaled can be vouched for.
    pub overflow: bool,
    /// The kernel dropped this watch (its directory is gone, or it was removed).
    pub unwatched: bool,
    /// The watched directory itself was deleted or moved.
    pub self_gone: bool,
    /// The entry named is a directory.
    pub is_dir: bool,
    /// The entry left the directory (deleted, or moved away).
    pub left: bool,
    /// The entry arrived in the directory (created, or moved in).
    pub arrived: bool,
    /// Only the entry's attributes (times, mode, owner) changed.
    pub attributes_only: bool,
}
