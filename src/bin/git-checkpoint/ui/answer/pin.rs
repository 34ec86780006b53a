//! What a pin answers: `pin`, and the MCP server's `pin`.

use git_checkpoint::CheckpointId;

use super::{Answer, Front, Said};
use crate::ui::json::PinJson;

/// A pin's answer.
pub struct PinAnswer {
    /// The checkpoint pinned.
    pub id: CheckpointId,
    /// Its shortest unique abbreviation.
    pub short: String,
    /// Whether this pin changed anything (it was not pinned before).
    pub changed: bool,
}

impl Answer for PinAnswer {
    type Json = PinJson;

    fn json(&self) -> PinJson {
        PinJson {
            id: self.id.hex(),
            pinned: true,
            changed: self.changed,
        }
    }

    fn said(&self, _front: Front) -> anyhow::Result<Said> {
        let short = &self.short;
        let mut said = Said::default();
        said.line(match self.changed {
            true => format!("Pinned checkpoint {short}: gc will keep it"),
            false => format!("Checkpoint {short} was already pinned"),
        });
        Ok(said)
    }
}
