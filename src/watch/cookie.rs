//! The sync point of an event source that delivers late (FSEvents on macOS; the delayed
//! events of the test builds, `platform/delayed.rs`). Reading what has arrived before an
//! answer does not cover a change made just before the question: its event may still be
//! on its way. So the watcher writes a cookie, an empty file, in the worktree's top and
//! waits for the cookie's own event: events arrive in the order of the changes, so once
//! the cookie's has arrived, so has the event of every change made before it was
//! written (watchman does the same on macOS). The cookie is removed at once after.
//!
//! Its name begins with [`WATCH_COOKIE_PREFIX`], which the walk passes by at the top
//! (`worktree::exempt`): no save, status or restore sees a cookie, and the watcher
//! journals none. Cookies a killed watcher left are removed by the next one to start.

use std::fs::OpenOptions;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::worktree::exempt::{is_watch_cookie, WATCH_COOKIE_PREFIX};

/// A cookie written in the worktree's top, removed when dropped.
pub(crate) struct Cookie {
    path: PathBuf,
    name: Vec<u8>,
}

impl Cookie {
    /// Writes this watcher's `n`th cookie in the worktree's top `root` (never through a
    /// symlink, never over a file already there).
    pub(crate) fn write(root: &Path, n: u64) -> std::io::Result<Cookie> {
        let name = format!("{WATCH_COOKIE_PREFIX}{}-{n}", std::process::id());
        let path = root.join(&name);
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)?;
        Ok(Cookie {
            path,
            name: name.into_bytes(),
        })
    }

    /// Its name in the top directory, as its event names it.
    pub(crate) fn name(&self) -> &[u8] {
        &self.name
    }
}

impl Drop for Cookie {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Removes the cookies a watcher that was killed while it waited left in `root` (only
/// one watcher runs per worktree: any cookie there when one starts is a dead one's).
pub(crate) fn remove_left_behind(root: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        if is_watch_cookie(entry.file_name().as_bytes())
            && entry.file_type().is_ok_and(|t| t.is_file())
        {
            let _ = std::fs::remove_file(entry.path());
        }
    }
}
