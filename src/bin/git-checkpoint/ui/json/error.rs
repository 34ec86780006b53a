//! The error document: what a command run with `--json` prints on stdout when it fails
//! before printing its own, and what an MCP tool error carries as structured content.

use serde::Serialize;

/// A failure.
#[derive(Debug, Serialize)]
pub struct ErrorJson {
    /// What went wrong, one line as the text says it (without `error: `), with what to
    /// do about it when that is known.
    pub error: String,
    /// Its kind (`ErrorKind::name`): `input`, `config`, `busy`, `refused`, `conflict`,
    /// `damaged`, `remote`, `git`, `io` or `internal`.
    pub kind: &'static str,
}
