//! Test hooks for crash and concurrency tests, driven by environment variables so that
//! tests can stop or pause the real binary at a named point. They act only in builds with
//! the `test-hooks` feature, which the test suite turns on (Cargo.toml's dev-dependency
//! on the package itself); a release build ignores every variable below.
//!
//! - `GIT_CHECKPOINT_PAUSE=<point>:<ms>` sleeps at `<point>`; with
//!   `GIT_CHECKPOINT_PAUSED_FILE=<path>` it first writes the point's name to `<path>`.
//! - `GIT_CHECKPOINT_FAULT=<point>` aborts the process at `<point>`, as a crash would.
//! - `GIT_CHECKPOINT_PANIC=<point>` panics at `<point>`, as a bug would: unlike an
//!   abort, the panic hooks run (`browse` restores the terminal in one).
//! - `GIT_CHECKPOINT_NOW=<rfc3339>` is the time [`crate::clock::now_ns`] reports, so that tests can
//!   make checkpoints with chosen times for the retention policies.
//! - `GIT_CHECKPOINT_WATCH_ANSWER_MS=<ms>` is how long a save waits for the watcher's
//!   answer (`watch::client`), instead of 100 ms: the suite sets it, so that a watcher
//!   slowed by the other tests still answers.
//! - `GIT_CHECKPOINT_WATCH_EVICT_IDLE_MS=<ms>` is how long a hook-started watcher must
//!   have been idle before a hook run of another worktree may ask it to make room
//!   (`watch::share`), instead of a minute.
//! - `GIT_CHECKPOINT_WATCH_DELAYED=<min ms>-<max ms>[:<n>]` makes a watcher on Linux get
//!   inotify's events as FSEvents delivers events on macOS (`watch::platform`, its
//!   `delayed.rs`): in batches, each a latency between the bounds after its first event,
//!   coalesced per path, and with `:<n>` one batch in `n` dropped for "events were lost";
//!   the watcher then waits for a cookie's event before every answer, as on macOS. The
//!   suite's watcher modules run once more with it (.ci/run).
//! - `GIT_CHECKPOINT_NAMES_PROBE=<exact|case|normalization|case,normalization>` is the
//!   answer of the probe that asks whether the worktree's filesystem ignores case or
//!   Unicode normalization (`worktree::names`), so that a worktree on Linux's own
//!   filesystems can be given a Mac's rules; git's `core.ignorecase` still decides over
//!   it.
//!
//! Points: `locked` (the store was just opened), `walk-listed` (a directory's entries
//! are listed, none looked at yet), `save-walked` (the files to save are listed, none
//! read yet), `save-looked` (a save's read-only look found a change and let go of the
//! store, which it has not yet opened for writing), `save-batch-committed` (a full batch of
//! chunks committed, more may follow), `save-chunks-written` (all chunks written,
//! checkpoint not yet), `restore-mid-delete` (half the deletions of a restore done),
//! `restore-mid-write` (half the files of a restore staged under
//! temporary names, none renamed), `restore-mid-rename` (half the staged files renamed
//! into place: the worktree is half old, half new), `revert-planned` (a revert saved
//! the worktree and merged every path, nothing written yet), `revert-staged` (every
//! file a revert writes is staged under a temporary name, nothing deleted or renamed),
//! `progress-file` (a file done, when a progress bar is in use: makes a save slow enough
//! for the bar to appear), `gc-planned` (gc decided what goes, nothing written),
//! `gc-before-commit` (every removal staged in the write transaction, not committed),
//! `gc-committed` (removals committed, file not compacted), `gc-compacting` (after each
//! compaction step), `log-line-sent` (a line of `log` handed to the output, the next
//! not yet made), `browse-key` (`browse` read a key, before acting on it), `op-recorded`
//! (an operation's record written into the transaction of its change, not committed).

/// Pauses or aborts if the environment names `point`, in builds with the `test-hooks`
/// feature only (`cargo test` turns it on), so that no variable can stop or slow an
/// installed binary.
pub fn point(point: &str) {
    if !cfg!(feature = "test-hooks") {
        return;
    }
    if let Ok(spec) = std::env::var("GIT_CHECKPOINT_PAUSE") {
        if let Some((name, ms)) = spec.split_once(':') {
            if name == point {
                if let Ok(ms) = ms.parse::<u64>() {
                    // Tells a waiting test that the process is inside the pause, so that
                    // a kill it sends now is known to land at this point.
                    if let Some(path) = std::env::var_os("GIT_CHECKPOINT_PAUSED_FILE") {
                        let _ = std::fs::write(path, point);
                    }
                    std::thread::sleep(std::time::Duration::from_millis(ms));
                }
            }
        }
    }
    if std::env::var("GIT_CHECKPOINT_FAULT").is_ok_and(|name| name == point) {
        std::process::abort();
    }
    if std::env::var("GIT_CHECKPOINT_PANIC").is_ok_and(|name| name == point) {
        panic!("test panic at {point}");
    }
}
