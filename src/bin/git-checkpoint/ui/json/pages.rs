//! The shapes only the MCP server answers with: pages of the listings (`list_checkpoints`,
//! `list_sessions`) and of a diff cut to a budget (`diff`). A model reads these, not the
//! text (Claude Code and Codex hand it the structured content), so a page holds what an
//! agent acts on, and the rest on request.

use serde::Serialize;

use git_checkpoint::clock::rfc3339;
use git_checkpoint::model::Checkpoint;

use super::{CheckpointJson, DiffJson, SessionJson};

/// A checkpoint as `list_checkpoints` gives it unless asked for more: which one (a
/// revision to pass on), what it was, when, and which prompt of which agent session
/// made it.
#[derive(Debug, Serialize)]
pub struct CheckpointBriefJson {
    /// Its shortest unique abbreviation.
    pub short_id: String,
    /// When it was made, RFC 3339 in UTC.
    pub time: String,
    /// The first line of its message.
    pub message: String,
    /// For a hook checkpoint, its session's shortest unique prefix (at least 8
    /// characters): with `prompt`, the revision `<session>:prompt<N>`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// For a hook checkpoint, the number of the prompt it belongs to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt: Option<u64>,
    /// Present, and true, for the current checkpoint.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub current: bool,
    /// Present, and true, for a pinned checkpoint.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub pinned: bool,
}

impl CheckpointBriefJson {
    /// The brief view of `record`, shown as `short_id`; `session` is its session's
    /// short id, for a hook checkpoint.
    pub fn new(
        short_id: String,
        record: &Checkpoint,
        current: bool,
        pinned: bool,
        session: Option<String>,
    ) -> Self {
        let prompt = record
            .meta
            .iter()
            .find(|(key, _)| key == "prompt")
            .and_then(|(_, value)| value.parse().ok());
        CheckpointBriefJson {
            short_id,
            time: rfc3339(record.time_ns),
            message: record.message.lines().next().unwrap_or("").to_string(),
            session,
            prompt,
            current,
            pinned,
        }
    }
}

/// A checkpoint on a page: brief, or `log --json`'s whole record when asked for.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum ListedJson {
    /// What an agent acts on.
    Brief(CheckpointBriefJson),
    /// Everything (`verbose`).
    Full(Box<CheckpointJson>),
}

/// `list_checkpoints`.
#[derive(Debug, Serialize)]
pub struct CheckpointPageJson {
    /// The checkpoints, newest first.
    pub checkpoints: Vec<ListedJson>,
    /// The `offset` of the next page; null on the last.
    pub next_offset: Option<usize>,
}

/// `list_sessions`.
#[derive(Debug, Serialize)]
pub struct SessionPageJson {
    /// The sessions, the most recently active first.
    pub sessions: Vec<SessionJson>,
    /// How many sessions the store has in all.
    pub total: usize,
}

/// `diff`: `diff --json`'s document, then the page of the patch.
#[derive(Debug, Serialize)]
pub struct DiffPageJson {
    /// From, to, and every changed file summarised.
    #[serde(flatten)]
    pub diff: DiffJson,
    /// Whether the patch was cut at the budget.
    pub cut: bool,
    /// The bytes of the whole patch.
    pub patch_bytes: usize,
    /// What the patch left out: paths, or `the rest of <path>`.
    pub left_out: Vec<String>,
    /// The patch as far as it fits, as `diff` prints it.
    pub patch: String,
}
