//! What a listing of checkpoints answers: the line `log` prints for each
//! ([`LogRow::line`]), and a page of them for the MCP server's `list_checkpoints`, whose
//! structured content is cut to what an agent acts on unless it asks for more.

use git_checkpoint::diff::SizeDelta;
use git_checkpoint::model::Checkpoint;
use git_checkpoint::text::escape_controls;
use git_checkpoint::CheckpointId;

use super::{Answer, Front, Said};
use crate::ui::json::{CheckpointBriefJson, CheckpointJson, CheckpointPageJson, ListedJson};
use crate::ui::output::{format_labels, format_size_delta, paint, style};

/// One checkpoint as `log` lists it, read while the store was open.
pub struct LogRow {
    /// Its shortest unique abbreviation.
    pub short: String,
    /// How long ago it was made.
    pub age: String,
    /// The labels git would put after it (`HEAD -> main`, other branches at it).
    pub labels: Vec<String>,
    /// Whether it is pinned.
    pub pinned: bool,
    /// The agent, session and prompt of a hook checkpoint (`claude 4f2a9c1d:prompt3`).
    pub agent: Option<String>,
    /// The first line of its message.
    pub message: String,
    /// What changed against its parent.
    pub delta: SizeDelta,
}

impl LogRow {
    /// Its line as `log` prints it, without the graph: the short id, the age right-aligned
    /// to `age_width`, the labels, the agent's label, the message and what changed,
    /// coloured if `colour`; what a person or an agent wrote is escaped.
    pub fn line(&self, age_width: usize, colour: bool) -> String {
        let mut line = paint(&self.short, style::ID, colour);
        line += " ";
        line += &paint(&format!("{:>age_width$}", self.age), style::DIM, colour);
        line += "  ";
        let mut labels = format_labels(&self.labels, colour);
        if self.pinned {
            if !labels.is_empty() {
                labels += " ";
            }
            labels += &paint("[pinned]", style::DIM, colour);
        }
        let agent = match &self.agent {
            Some(label) => paint(&escape_controls(label), style::META, colour),
            None => String::new(),
        };
        let message = escape_controls(&self.message);
        for part in [labels.as_str(), &agent, &message] {
            if !part.is_empty() {
                line += part;
                line += " ";
            }
        }
        line += &paint(&format_size_delta(&self.delta), style::DIM, colour);
        line
    }
}

/// The width of the widest age of `rows`, which the ages are right-aligned to.
pub fn age_width(rows: &[&LogRow]) -> usize {
    rows.iter().map(|row| row.age.len()).max().unwrap_or(0)
}

/// One checkpoint of a page.
pub struct Listed {
    /// Its id.
    pub id: CheckpointId,
    /// Its record.
    pub record: Checkpoint,
    /// Whether it is the current checkpoint.
    pub current: bool,
    /// For a hook checkpoint, its session's shortest unique prefix.
    pub session: Option<String>,
    /// Its line.
    pub row: LogRow,
}

/// A page of checkpoints: `list_checkpoints`.
pub struct CheckpointPage {
    /// The checkpoints on it, newest first.
    pub listed: Vec<Listed>,
    /// Where the next page starts, when there is one.
    pub next_offset: Option<usize>,
    /// Whether its structured content gives `log --json`'s whole records.
    pub verbose: bool,
    /// Whether the worktree has a store at all.
    pub has_store: bool,
}

impl Answer for CheckpointPage {
    type Json = CheckpointPageJson;

    fn json(&self) -> CheckpointPageJson {
        let checkpoints = (self.listed.iter())
            .map(|listed| match self.verbose {
                true => ListedJson::Full(Box::new(CheckpointJson {
                    pinned: listed.row.pinned,
                    ..CheckpointJson::new(listed.id, listed.row.short.clone(), &listed.record)
                })),
                false => ListedJson::Brief(CheckpointBriefJson::new(
                    listed.row.short.clone(),
                    &listed.record,
                    listed.current,
                    listed.row.pinned,
                    listed.session.clone(),
                )),
            })
            .collect();
        CheckpointPageJson {
            checkpoints,
            next_offset: self.next_offset,
        }
    }

    /// `log`'s lines, then where the next page starts.
    fn said(&self, _front: Front) -> anyhow::Result<Said> {
        let mut said = Said::default();
        if !self.has_store {
            said.line("No checkpoints yet: the save tool, or the agent's hooks, make the first.");
            return Ok(said);
        }
        if self.listed.is_empty() {
            said.line("No checkpoints match.");
        }
        let rows: Vec<&LogRow> = self.listed.iter().map(|listed| &listed.row).collect();
        let width = age_width(&rows);
        for row in rows {
            said.line(row.line(width, false));
        }
        if let Some(next) = self.next_offset {
            said.line(format!(
                "More: call list_checkpoints again with offset={next}."
            ));
        }
        Ok(said)
    }
}
