//! Errors the binary finds itself (an argument of a tool, a command line that asks for
//! two things at once, a revert's conflicts said to a front end), each with its
//! [`ErrorKind`], as the library's errors have one: the exit status, the `--json` error
//! and the MCP tool error read it (`commands::error_line`).

use git_checkpoint::error::ErrorKind;

/// An error of the binary's own, of a known kind.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Failure {
    /// What it is about.
    pub kind: ErrorKind,
    /// One line a user can act on, without a trailing period.
    pub message: String,
}

impl Failure {
    /// An error of `kind` saying `message`.
    pub fn error(kind: ErrorKind, message: impl Into<String>) -> anyhow::Error {
        Failure {
            kind,
            message: message.into(),
        }
        .into()
    }

    /// What was asked does not fit: fixed by asking differently.
    pub fn input(message: impl Into<String>) -> anyhow::Error {
        Failure::error(ErrorKind::Input, message)
    }

    /// Stopped rather than do what is not allowed here; nothing was changed.
    pub fn refused(message: impl Into<String>) -> anyhow::Error {
        Failure::error(ErrorKind::Refused, message)
    }
}
