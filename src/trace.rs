//! Phase timings on stderr when `GIT_CHECKPOINT_TRACE` is set (like git's
//! `GIT_TRACE_PERFORMANCE`): the first thing to look at when a save feels slow.

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
