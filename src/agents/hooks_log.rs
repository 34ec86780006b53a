//! `<git-dir>/checkpoint/hooks.log`: what hook runs could not do. A hook must never stop
//! the agent, so what goes wrong is appended here instead of being reported, one line
//! each: its time (RFC 3339, UTC), then the message. A run that saved but left
//! something out (an unreadable file, a transcript) writes a note (`note: …`), which is
//! not a failure; every other line is one. `doctor` reads the failures back
//! ([`failures`]).

use std::io::{Read, Seek, SeekFrom, Write};

use crate::git::repo::Repo;

/// Where hook runs log, inside `<git-dir>/checkpoint`.
pub const HOOKS_LOG: &str = "hooks.log";

/// What starts the message of a line that is a note, not a failure.
const NOTE: &str = "note: ";

/// How much of the end of the log [`failures`] reads: the recent lines, whatever the
/// log's length.
const TAIL_BYTES: u64 = 64 << 10;

/// Appends a failure to the hooks log; a hook has nowhere else to say it.
pub fn log_failure(repo: &Repo, message: &str) {
    append(repo, message);
}

/// Appends a note to the hooks log: the run saved, but left something out.
pub fn log_note(repo: &Repo, message: &str) {
    append(repo, &format!("{NOTE}{message}"));
}

fn append(repo: &Repo, message: &str) {
    let dir = repo.checkpoint_dir();
    let _ = std::fs::create_dir_all(&dir);
    let now = crate::clock::now_ns();
    let line = format!("{} {message}\n", crate::clock::rfc3339(now));
    if let Ok(mut log) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(dir.join(HOOKS_LOG))
    {
        let _ = log.write_all(line.as_bytes());
    }
}

/// One failure the log holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// When it was logged, in nanoseconds since the Unix epoch.
    pub time_ns: i128,
    /// What went wrong, as logged.
    pub message: String,
}

/// The failures among the last lines of `repo`'s hooks log, oldest first; none when
/// there is no log. A line whose time cannot be read is not one of ours and is left
/// out.
pub fn failures(repo: &Repo) -> Vec<Failure> {
    let Ok(mut log) = std::fs::File::open(repo.checkpoint_dir().join(HOOKS_LOG)) else {
        return Vec::new();
    };
    let length = log.metadata().map(|meta| meta.len()).unwrap_or(0);
    let start = length.saturating_sub(TAIL_BYTES);
    let mut tail = Vec::new();
    if log.seek(SeekFrom::Start(start)).is_err() || log.read_to_end(&mut tail).is_err() {
        return Vec::new();
    }
    let text = String::from_utf8_lossy(&tail);
    let mut lines = text.lines();
    if start > 0 {
        // Read from the middle of a line.
        lines.next();
    }
    lines
        .filter_map(|line| {
            let (time, message) = line.split_once(' ')?;
            let time_ns = crate::clock::parse_rfc3339(time)?;
            (!message.starts_with(NOTE)).then(|| Failure {
                time_ns,
                message: message.to_string(),
            })
        })
        .collect()
}
