//! Test hooks for crash and concurrency tests, driven by environment variables so that
//! tests can stop or pause the real binary at a named point.
//!
//! - `GIT_CHECKPOINT_PAUSE=<point>:<ms>` sleeps at `<point>`.
//! - `GIT_CHECKPOINT_FAULT=<point>` aborts the process at `<point>`, as a crash would.
//!
//! Points: `locked` (the store was just opened), `save-chunks-written` (all chunks written,
//! checkpoint not yet), `restore-mid-write` (half the files of a restore written),
//! `progress-file` (a file done, when a progress bar is in use: makes a save slow enough
//! for the bar to appear).

/// Pauses or aborts if the environment names `point`.
pub fn point(point: &str) {
    if let Ok(spec) = std::env::var("GIT_CHECKPOINT_PAUSE") {
        if let Some((name, ms)) = spec.split_once(':') {
            if name == point {
                if let Ok(ms) = ms.parse::<u64>() {
                    std::thread::sleep(std::time::Duration::from_millis(ms));
                }
            }
        }
    }
    if std::env::var("GIT_CHECKPOINT_FAULT").is_ok_and(|name| name == point) {
        std::process::abort();
    }
}
