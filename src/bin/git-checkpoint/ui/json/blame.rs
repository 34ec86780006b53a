//! `blame --json`.

use serde::Serialize;

/// One line of `blame --json`.
#[derive(Debug, Serialize)]
pub struct BlameLineJson {
    /// Its line number, from 1, in the file as blamed.
    pub line: usize,
    /// Full id of the checkpoint that last changed it.
    pub id: String,
    /// That checkpoint's shortest unique abbreviation.
    pub short_id: String,
    /// Its line number, from 1, in that checkpoint's version of the file.
    pub origin_line: usize,
    /// The agent of a hook checkpoint, else null.
    pub agent: Option<String>,
    /// The session id of a hook checkpoint, else null.
    pub session: Option<String>,
    /// The prompt number of a hook checkpoint, else null.
    pub prompt: Option<u64>,
    /// The line, without its line ending (lossy UTF-8).
    pub text: String,
}
