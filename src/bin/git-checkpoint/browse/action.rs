//! What the keys that change the store or the worktree ask for: an [`Action`], the
//! question the confirmation dialog asks of it, and what the status line says while it
//! runs. `store.rs` carries it out.

use git_checkpoint::text::{counted, escape_controls};
use git_checkpoint::CheckpointId;

/// Something the user asked for that changes the store or the worktree, asked to be
/// confirmed first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Make the worktree equal to the checkpoint.
    Restore {
        /// The checkpoint.
        id: CheckpointId,
        /// Its short id.
        short: String,
    },
    /// Restore one path from the checkpoint.
    RestoreFile {
        /// The checkpoint.
        id: CheckpointId,
        /// Its short id.
        short: String,
        /// The worktree path.
        path: Vec<u8>,
    },
    /// Start a new branch at the checkpoint, as `fork` does.
    Fork {
        /// The checkpoint.
        id: CheckpointId,
        /// Its short id.
        short: String,
    },
    /// Pin the checkpoint.
    Pin {
        /// The checkpoint.
        id: CheckpointId,
        /// Its short id.
        short: String,
    },
    /// Remove the checkpoint, as `drop` does.
    Drop {
        /// The checkpoint.
        id: CheckpointId,
        /// Its short id.
        short: String,
    },
    /// Put back, as they were at the checkpoint, the files one agent session's tool
    /// calls changed since, as `restore --only-session` does.
    RestoreSession {
        /// The checkpoint.
        id: CheckpointId,
        /// Its short id.
        short: String,
        /// The session's full id.
        session: String,
    },
    /// Undo one step (a checkpoint against its first parent) or a prompt's turn (from
    /// the prompt's checkpoint to its last tool call), keeping everything since, as
    /// `revert` does.
    Revert {
        /// The revision `revert` is given, as the list shows it: a short id, or a range
        /// `A..B` of short ids. The dialog, the status line and the checkpoint the revert
        /// saves are named after it. (A short id is unique when the list is read; one
        /// that a checkpoint saved since made ambiguous is refused, never mistaken.)
        rev: String,
        /// How many tool calls the turn holds, when a turn is reverted.
        turn: Option<usize>,
    },
    /// Undo one file's change in a step or a prompt's turn, keeping everything since,
    /// as `revert <rev> -- <path>` does.
    RevertFile {
        /// The revision `revert` is given, as for [`Action::Revert`].
        rev: String,
        /// The worktree path.
        path: Vec<u8>,
    },
    /// Undo the newest operation, as `undo` does.
    Undo {
        /// Its number in the operation log: the undo is refused if another came since
        /// the question was asked.
        number: u64,
        /// What it did, in a few words.
        summary: String,
    },
}

impl Action {
    /// The question the confirmation dialog asks.
    pub fn question(&self) -> String {
        match self {
            Action::Restore { short, .. } => format!(
                "Restore the worktree to checkpoint {short}? Unsaved changes are saved first as a checkpoint."
            ),
            Action::RestoreFile { short, path, .. } => format!(
                "Restore {} from checkpoint {short}? Unsaved changes are saved first as a checkpoint.",
                escape_controls(&String::from_utf8_lossy(path))
            ),
            Action::Fork { short, .. } => format!(
                "Start a new branch at checkpoint {short} and restore it? Unsaved changes are saved first."
            ),
            Action::Pin { short, .. } => {
                format!("Pin checkpoint {short}, so that gc never removes it?")
            }
            Action::Drop { short, .. } => format!(
                "Drop checkpoint {short}? Its children are re-linked to its parents; the worktree is not touched."
            ),
            Action::RestoreSession { short, session, .. } => format!(
                "Put back the files session {}'s tool calls changed since checkpoint {short}? Files someone else changed too are left alone; unsaved changes are saved first.",
                escape_controls(&short_session(session))
            ),
            Action::Revert { rev, turn: None, .. } => format!(
                "Undo what checkpoint {rev} changed, keeping everything since? Unsaved changes are saved first as a checkpoint."
            ),
            Action::Revert { rev, turn: Some(n), .. } => format!(
                "Undo this prompt's turn ({rev}: what its {} changed), keeping everything since? Unsaved changes are saved first as a checkpoint.",
                counted(*n, "tool call")
            ),
            Action::RevertFile { rev, path, .. } => format!(
                "Revert {} in {rev}? Its change there is undone, keeping everything since; unsaved changes are saved first as a checkpoint.",
                escape_controls(&String::from_utf8_lossy(path))
            ),
            Action::Undo { number, summary } => format!(
                "Undo op {number} ({})? The worktree, branches and pins go back to before it; unsaved changes are saved first.",
                escape_controls(summary)
            ),
        }
    }

    /// What the status line says while the action runs (keys typed meanwhile wait for
    /// its end, and act then).
    pub fn doing(&self) -> String {
        match self {
            Action::Restore { short, .. } => {
                format!("Restoring the worktree to checkpoint {short}…")
            }
            Action::RestoreFile { short, path, .. } => format!(
                "Restoring {} from checkpoint {short}…",
                escape_controls(&String::from_utf8_lossy(path))
            ),
            Action::Fork { short, .. } => format!("Forking at checkpoint {short}…"),
            Action::Pin { short, .. } => format!("Pinning checkpoint {short}…"),
            Action::Drop { short, .. } => format!("Dropping checkpoint {short}…"),
            Action::RestoreSession { short, .. } => {
                format!("Restoring the session's files from checkpoint {short}…")
            }
            Action::Revert { rev, .. } => format!("Reverting {rev}…"),
            Action::RevertFile { rev, path, .. } => format!(
                "Reverting {} in {rev}…",
                escape_controls(&String::from_utf8_lossy(path))
            ),
            Action::Undo { number, .. } => format!("Undoing op {number}…"),
        }
    }
}

/// A session id as rows show it: its first eight characters.
pub fn short_session(session: &str) -> String {
    session.chars().take(8).collect()
}
