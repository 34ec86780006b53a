//! Phase timings on stderr when `GIT_CHECKPOINT_TRACE` is set (like git's
//! `GIT_TRACE_PERFORMANCE`): the first thing to look at when a save feels slow.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Instant;

fn enabled() -> bool {
    static ENABLED: OnceLock<bool> = OnceLock::new();
    *ENABLED.get_or_init(|| std::env::var_os("GIT_CHECKPOINT_TRACE").is_some_and(|v| !v.is_empty()))
}

/// Prints one line of facts (not a timing) when tracing is on: which way a phase went.
pub fn note(what: std::fmt::Arguments) {
    if enabled() {
        eprintln!("trace: {what}");
    }
}

/// A timed phase; prints its duration when dropped, if tracing is on.
pub struct Span {
    name: &'static str,
    start: Instant,
}

/// Starts timing the phase `name`.
pub fn span(name: &'static str) -> Span {
    Span {
        name,
        start: Instant::now(),
    }
}

impl Drop for Span {
    fn drop(&mut self) {
        if enabled() {
            eprintln!(
                "trace: {:>8.3} ms  {}",
                self.start.elapsed().as_secs_f64() * 1e3,
                self.name
            );
        }
    }
}

/// A count of one kind of work a command did, reported by [`note_counts`] when tracing
/// is on: how a test sees that a save after a few edits did work in proportion to the
/// edits, not to the tree (a count, unlike a time, is the same on every machine).
pub struct Count(AtomicU64);

impl Count {
    const fn new() -> Count {
        Count(AtomicU64::new(0))
    }

    /// Counts `n` more.
    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    /// The count so far.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Worktree paths a scan looked at (each one `lstat`ed by the walk or the watched path).
pub static PATHS_LOOKED_AT: Count = Count::new();
/// Stat cache entries read from the store.
pub static CACHE_ENTRIES_READ: Count = Count::new();
/// Trees read (from the store or from memory) through the checked tree reader.
pub static TREES_READ: Count = Count::new();
/// Checkpoint records decoded from the store: a hook run reads a few, not the history.
pub static RECORDS_READ: Count = Count::new();
/// `.gitignore` files read and compiled into matchers by a walk (reported in the walk's
/// own note): a walk that takes every listing from the directory cache needs none.
pub static IGNORE_FILES_READ: Count = Count::new();

/// Prints the counts so far in one line, when tracing is on.
pub fn note_counts() {
    note(format_args!(
        "counts: paths looked at {}, stat cache entries read {}, trees read {}, checkpoint records read {}",
        PATHS_LOOKED_AT.get(),
        CACHE_ENTRIES_READ.get(),
        TREES_READ.get(),
        RECORDS_READ.get()
    ));
}
