//! The watcher's kernel interface where there is none we use (the BSDs, Windows): nothing
//! can be watched, so no watcher runs and every save walks. The types exist so
//! that the daemon builds unchanged; none of them can be made.

use std::convert::Infallible;
use std::os::fd::{AsFd, BorrowedFd};
use std::path::Path;

use super::{Event, Limits};

/// A watched directory: there are none. Not `Copy`, as Linux's is not, so that the
/// daemon's code is lint-clean on both.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct WatchId(Infallible);

/// The kernel's queue of file-change events: never made here.
pub(crate) struct Events {
    never: Infallible,
}

impl Events {
    /// Always refused: this system has no watcher (see [`super::available`]).
    pub(crate) fn new(_root: &Path) -> std::io::Result<Events> {
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "file-change events are not available on this system",
        ))
    }

    /// Unreachable: no [`Events`] exists.
    pub(crate) fn delivers_late(&self) -> bool {
        match self.never {}
    }

    /// Unreachable: no [`Events`] exists.
    pub(crate) fn add(&mut self, _dir: &Path) -> std::io::Result<Option<WatchId>> {
        match self.never {}
    }

    /// Unreachable: no [`Events`] exists.
    pub(crate) fn remove(&mut self, id: WatchId) {
        match id.0 {}
    }

    /// Unreachable: no [`Events`] exists.
    pub(crate) fn read(&mut self) -> std::io::Result<Vec<Event>> {
        match self.never {}
    }
}

/// Unreachable: no [`Events`] exists.
impl AsFd for Events {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self.never {}
    }
}

/// Without a watcher nothing asks; and nothing is known of the mount table here, which
/// is the answer that makes a save walk.
pub(crate) fn mounts_below(_root: &Path) -> bool {
    true
}

/// No watcher runs here, so there is nothing to share.
pub(crate) fn limits() -> Option<Limits> {
    None
}
