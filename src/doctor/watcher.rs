//! Whether a watcher runs for the worktree (docs/watcher.md), or why none does. None is
//! not a problem, only slower: a save then walks the worktree. The one case worth a
//! command is the share of the user's inotify limits refusing hook runs a watcher here.

use super::{Check, Finding, Status};
use crate::ops::workspace::Workspace;
use crate::watch::{self, client, share};

/// The watcher of `workspace`'s worktree: running, or why none does.
pub fn check(workspace: &Workspace) -> Finding {
    let repo = &workspace.repo;
    if let Some(pid) = client::running(repo) {
        return Finding::new(
            Check::Watcher,
            Status::Ok,
            format!("a watcher runs for this worktree (pid {pid}): saves read only what changed"),
        );
    }
    if let Some(watches) = share::over_share_noted(&watch::dir(repo)) {
        return Finding::new(
            Check::Watcher,
            Status::Note,
            format!(
                "hook runs start no watcher here: this worktree needs {watches} watched \
                 directories, more than their share of your file-watch limits leaves, so saves \
                 walk the worktree; a watcher you start is not counted"
            ),
        )
        .fixed_by("git checkpoint watch --daemon");
    }
    let message = if workspace.settings.auto_watch.get().is_ok_and(|on| !on) {
        "none runs, and checkpoint.autoWatch is false: hook runs start none, and saves walk \
         the worktree"
    } else if watch::platform::available().is_err() {
        "this system has no watcher: saves walk the worktree"
    } else {
        "none runs now: the next hook run starts one"
    };
    Finding::new(Check::Watcher, Status::Ok, message)
}
