//! What a save or a look at the worktree could not do as asked and went on without,
//! as typed values; the binary prints each as a warning line.

use crate::format::size::human_bytes;
use crate::Error;

/// Something a save or a look at the worktree could not do as asked, and went on
/// without. The binary prints each as a warning; `Display` is that line.
#[derive(Debug)]
pub enum Warning {
    /// A special file (fifo, socket, device), never captured.
    NotAFile {
        /// Its worktree path.
        path: Vec<u8>,
    },
    /// A file larger than `checkpoint.maxFileSize`, left out and recorded as skipped.
    TooLarge {
        /// Its worktree path.
        path: Vec<u8>,
        /// Its size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// A file that could not be read, left out and recorded as skipped
    /// (`--skip-unreadable`, and always for a look).
    Unreadable(Error),
    /// A file that kept changing while it was read, left out (never stored torn).
    KeptChanging {
        /// Its worktree path.
        path: Vec<u8>,
    },
    /// A file that vanished or was replaced while it was read, left out.
    Vanished {
        /// Its worktree path.
        path: Vec<u8>,
    },
    /// A setting that cannot be used; a look went on with the default.
    DefaultSetting {
        /// Why the setting's value cannot be used.
        error: Error,
        /// The default used instead.
        default: String,
    },
    /// A command changed the worktree (a revert, a session-limited restore) but could
    /// not save the result as a checkpoint; the change stands, unsaved.
    ResultNotSaved {
        /// The command (`revert`, `restore`).
        what: &'static str,
        /// Why the save failed.
        error: Error,
    },
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Warning::NotAFile { path } => {
                write!(
                    f,
                    "skipped {}: not a regular file or symlink",
                    String::from_utf8_lossy(path)
                )
            }
            Warning::TooLarge { path, size, limit } => write!(
                f,
                "skipped {} ({}): larger than checkpoint.maxFileSize ({})",
                String::from_utf8_lossy(path),
                human_bytes(*size),
                human_bytes(*limit)
            ),
            Warning::Unreadable(error) => write!(f, "skipped unreadable {error}"),
            Warning::KeptChanging { path } => write!(
                f,
                "{} kept changing while it was read; left out of this checkpoint",
                String::from_utf8_lossy(path)
            ),
            Warning::Vanished { path } => write!(
                f,
                "{} vanished or was replaced while it was saved; left out of this checkpoint",
                String::from_utf8_lossy(path)
            ),
            Warning::DefaultSetting { error, default } => {
                write!(f, "{error}; comparing with the default ({default})")
            }
            Warning::ResultNotSaved { what, error } => write!(
                f,
                "the {what} is done but its result could not be saved as a checkpoint: {error}; 'git checkpoint save' saves it"
            ),
        }
    }
}
