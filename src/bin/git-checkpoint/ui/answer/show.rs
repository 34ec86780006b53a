//! What `show --stat` answers, as the MCP server's `show` forwards it: the text `show`
//! makes of it (`commands::show`) and `show --json`'s document.

use super::{Answer, Front, Said};
use crate::ui::json::ShowJson;

/// A checkpoint, or a prompt's turn, shown with a summary of its changes.
pub struct ShowAnswer {
    /// `show --stat`'s text, uncoloured, what a person or an agent wrote escaped.
    pub text: Vec<u8>,
    /// `show --json`'s document.
    pub document: ShowJson,
}

impl Answer for ShowAnswer {
    type Json = ShowJson;

    fn json(&self) -> ShowJson {
        self.document.clone()
    }

    fn said(&self, _front: Front) -> anyhow::Result<Said> {
        let mut said = Said::default();
        said.raw(self.text.clone());
        Ok(said)
    }
}
