//! The watcher's kernel interface: the one place that names the system's file-change
//! events, so that the rest of the watcher (and a build for another system) never does.
//! One daemon, one journal, one protocol: only the event source differs.
//!
//! - Linux (`linux.rs`): inotify, one watch per directory. An event is queued in the very
//!   system call that makes the change, so reading the queue dry before an answer covers
//!   every change that completed before the question.
//! - macOS (`macos.rs`): one FSEvents stream on the worktree's top, recursive. FSEvents
//!   delivers events in batches, some milliseconds after the change, so reading what has
//!   arrived covers nothing: before it answers, the watcher writes a cookie in the
//!   worktree and waits for the cookie's own event (`Events::delivers_late`,
//!   `watch::cookie`). What an FSEvents event says is read by `fsevents.rs`, compiled
//!   everywhere its unit tests run.
//! - In test builds on Linux, `GIT_CHECKPOINT_WATCH_DELAYED` makes inotify's events arrive
//!   as FSEvents' do (`delayed.rs`): late, in batches, coalesced, now and then replaced by
//!   "rescan", through the same inbox (`inbox.rs`) and the same cookie, so that the
//!   watcher's test suite checks the macOS contract where it runs.
//! - Elsewhere (`other.rs`) there is no watcher: [`available`] says so in one line, and
//!   every save walks the worktree as it does without a watcher.
//!
//! The mount table is here too: a filesystem mounted below the worktree after the
//! watcher started hides changes from it, and where the table is kept is the system's
//! business. So are the per-user [`Limits`] of the kernel's interface.

#[cfg(target_os = "linux")]
mod delayed;
#[cfg(any(target_os = "macos", test))]
mod fsevents;
#[cfg(any(target_os = "linux", target_os = "macos"))]
mod inbox;
#[cfg(target_os = "linux")]
mod inotify_queue;
#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
pub(crate) use linux::{limits, mounts_below, Events, WatchId};

// FSEvents has only a C interface: the one file of the library with `unsafe` blocks,
// each with what makes it sound (scripts/layers.py allows them nowhere else).
#[cfg(target_os = "macos")]
#[allow(unsafe_code)]
mod macos;
#[cfg(target_os = "macos")]
pub(crate) use macos::{limits, mounts_below, Events, WatchId};

#[cfg(not(any(target_os = "linux", target_os = "macos")))]
mod other;
#[cfg(not(any(target_os = "linux", target_os = "macos")))]
pub(crate) use other::{limits, mounts_below, Events, WatchId};

use crate::{Error, Result};

/// Whether this build has a watcher: Linux's (inotify) and macOS's (FSEvents).
pub const AVAILABLE: bool = cfg!(any(target_os = "linux", target_os = "macos"));

/// `Ok` where a watcher can run; elsewhere the one line `watch` answers with.
pub fn available() -> Result<()> {
    if AVAILABLE {
        return Ok(());
    }
    Err(Error::InvalidArgument(
        "git checkpoint watch is not available on this system (it needs Linux's inotify \
         or macOS's FSEvents); saves walk the worktree as they do without a watcher"
            .into(),
    ))
}

/// What the kernel lets one user hold of its file-change events at once, over all its
/// programs: the watchers started by hook runs take only a share of it
/// ([`super::share`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Event queues (inotify instances, FSEvents streams): one per watcher.
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
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Change {
    /// Events were lost (the queue overflowed, FSEvents says "rescan"): nothing
    /// journaled can be vouched for.
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

/// Whether the mount point `point` lies strictly below the directory `root` (both
/// canonical, as bytes): a filesystem mounted there hides changes from the watcher.
#[cfg(any(target_os = "linux", target_os = "macos"))]
fn is_strictly_below(point: &[u8], root: &[u8]) -> bool {
    point.len() > root.len()
        && point.starts_with(root)
        && (point[root.len()] == b'/' || root == b"/")
}
