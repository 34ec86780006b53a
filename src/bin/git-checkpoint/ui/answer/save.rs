//! What a save answers: `save`, and the MCP server's `save`.

use git_checkpoint::format::size::human_bytes;
use git_checkpoint::model::Checkpoint;
use git_checkpoint::ops::gc::AutoGc;
use git_checkpoint::text::counted;
use git_checkpoint::CheckpointId;

use super::{Answer, Front, Said};
use crate::ui::json::{CheckpointJson, SaveJson, UnchangedJson};
use crate::ui::output::signed_bytes;

/// What a save made.
pub enum Saved {
    /// A new checkpoint.
    Made {
        /// Its id.
        id: CheckpointId,
        /// Its shortest unique abbreviation.
        short: String,
        /// Its record.
        checkpoint: Box<Checkpoint>,
    },
    /// Nothing: the worktree equals the current checkpoint.
    Unchanged {
        /// The current checkpoint.
        current: CheckpointId,
        /// Its shortest unique abbreviation.
        short: String,
    },
}

/// A save's answer.
pub struct SaveAnswer {
    /// What it made.
    pub saved: Saved,
    /// What the save went on without, and an interrupted restore it found.
    pub warnings: Vec<String>,
    /// What the automatic gc after it did, if one ran.
    pub gc: Option<AutoGc>,
}

impl Answer for SaveAnswer {
    type Json = SaveJson;

    fn json(&self) -> SaveJson {
        match &self.saved {
            Saved::Made {
                id,
                short,
                checkpoint,
            } => SaveJson::Saved(Box::new(CheckpointJson::new(
                *id,
                short.clone(),
                checkpoint,
            ))),
            Saved::Unchanged { current, .. } => SaveJson::Unchanged(UnchangedJson::new(*current)),
        }
    }

    fn said(&self, _front: Front) -> anyhow::Result<Said> {
        let mut said = Said::default();
        for warning in &self.warnings {
            said.warning(warning);
        }
        match &self.saved {
            Saved::Made {
                short, checkpoint, ..
            } => {
                let branch = checkpoint
                    .branch
                    .as_deref()
                    .map(|b| format!(" on {b}"))
                    .unwrap_or_default();
                said.line(format!(
                    "Saved checkpoint {short}{branch} ({}, {})",
                    counted(checkpoint.files, "file"),
                    human_bytes(checkpoint.bytes)
                ));
            }
            Saved::Unchanged { short, .. } => {
                said.line(format!("Nothing changed since checkpoint {short}"))
            }
        }
        // The checkpoint is saved whatever happened in the gc after it, so a problem
        // there is a warning, never a failed save.
        match &self.gc {
            Some(AutoGc::Ran {
                options,
                plan,
                outcome,
            }) => said.line(format!(
                "gc ({}): removed {}{}",
                if options.policy.is_empty() {
                    "checkpoint.gc.maxSize".to_string()
                } else {
                    options.policy.describe()
                },
                counted(plan.removed.len(), "checkpoint"),
                if outcome.freed() > 0 {
                    format!(", {} freed on disk", signed_bytes(outcome.freed()))
                } else {
                    String::new()
                }
            )),
            Some(AutoGc::Skipped(e)) => said.warning(format!("automatic gc skipped: {e}")),
            Some(AutoGc::Failed(e)) => said.warning(format!("automatic gc failed: {e}")),
            None => {}
        }
        Ok(said)
    }
}
