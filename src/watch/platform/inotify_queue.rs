//! Reading inotify's queue into the watcher's [`Event`]s: what the Linux source reads as
//! events are queued (`linux.rs`) and what the test builds' late source holds back
//! (`delayed.rs`), apart from both so that neither imports the other.

use std::os::unix::ffi::OsStrExt;

use inotify::{EventMask, Inotify};

use super::{Change, Event};

/// How many bytes of events one read takes at most.
pub(super) const READ_BUFFER: usize = 256 * 1024;

/// The events `inotify` holds now, as many as fit in `buffer`; empty when none is.
pub(super) fn read_now(inotify: &mut Inotify, buffer: &mut [u8]) -> std::io::Result<Vec<Event>> {
    match inotify.read_events(buffer) {
        Ok(events) => Ok(events
            .map(|e| Event {
                watch: e.wd,
                name: e.name.map(|n| n.as_bytes().to_vec()),
                change: change(e.mask),
            })
            .collect()),
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

/// What an inotify event's mask says changed.
fn change(mask: EventMask) -> Change {
    Change {
        overflow: mask.contains(EventMask::Q_OVERFLOW),
        unwatched: mask.contains(EventMask::IGNORED),
        self_gone: mask.intersects(EventMask::DELETE_SELF | EventMask::MOVE_SELF),
        is_dir: mask.contains(EventMask::ISDIR),
        left: mask.intersects(EventMask::MOVED_FROM | EventMask::DELETE),
        arrived: mask.intersects(EventMask::CREATE | EventMask::MOVED_TO),
        attributes_only: mask.difference(EventMask::ISDIR) == EventMask::ATTRIB,
    }
}
