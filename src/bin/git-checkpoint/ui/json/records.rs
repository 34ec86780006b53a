//! The shapes of what a checkpoint is and holds: `save`, `log`, `show`, `diff`,
//! `status`, and the listings of `branch` and `sessions`.

use serde::Serialize;

use git_checkpoint::clock::rfc3339;
use git_checkpoint::model::session::Session;
use git_checkpoint::model::{Checkpoint, SkipReason};
use git_checkpoint::CheckpointId;

use super::hexes;
use crate::ui::output::show_path;

/// A checkpoint: `save`, each entry of `log`, and the start of `show`.
#[derive(Clone, Debug, Serialize)]
pub struct CheckpointJson {
    /// Full id.
    pub id: String,
    /// Shortest unique abbreviation.
    pub short_id: String,
    /// Full ids of the parents.
    pub parents: Vec<String>,
    /// The checkpoint branch it was made on.
    pub branch: Option<String>,
    /// Its message.
    pub message: String,
    /// When it was made, RFC 3339 in UTC.
    pub time: String,
    /// The real repository's HEAD commit then.
    pub git_head: Option<String>,
    /// The real repository's branch then.
    pub git_branch: Option<String>,
    /// Metadata as an object of strings.
    pub meta: serde_json::Map<String, serde_json::Value>,
    /// Files and symlinks in its tree.
    pub files: u64,
    /// Total bytes of its files.
    pub bytes: u64,
    /// Files left out: larger than `checkpoint.maxFileSize`, or unreadable.
    pub skipped: Vec<SkippedJson>,
    /// Files stored with it outside its tree.
    pub attachments: Vec<AttachmentJson>,
    /// Whether it is pinned (gc never removes it); only `log` looks, the others say
    /// false.
    pub pinned: bool,
}

/// A file a save skipped.
#[derive(Clone, Debug, Serialize)]
pub struct SkippedJson {
    /// Its worktree path.
    pub path: String,
    /// Its size in bytes.
    pub size: u64,
    /// Why: `too-large` or `unreadable`.
    pub reason: &'static str,
}

/// An attachment of a checkpoint.
#[derive(Clone, Debug, Serialize)]
pub struct AttachmentJson {
    /// The name it was attached under.
    pub name: String,
    /// Its length in bytes.
    pub size: u64,
}

impl CheckpointJson {
    /// The JSON view of checkpoint `id`, not pinned.
    pub fn new(id: CheckpointId, short_id: String, record: &Checkpoint) -> Self {
        CheckpointJson {
            id: id.hex(),
            short_id,
            parents: hexes(&record.parents),
            branch: record.branch.clone(),
            message: record.message.clone(),
            time: rfc3339(record.time_ns),
            git_head: record.git_head.clone(),
            git_branch: record.git_branch.clone(),
            meta: record
                .meta
                .iter()
                .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
                .collect(),
            files: record.files,
            bytes: record.bytes,
            skipped: record
                .skipped
                .iter()
                .map(|file| SkippedJson {
                    path: show_path(&file.path),
                    size: file.size,
                    reason: match file.reason {
                        SkipReason::TooLarge => "too-large",
                        SkipReason::Unreadable => "unreadable",
                    },
                })
                .collect(),
            attachments: record
                .attachments
                .iter()
                .map(|a| AttachmentJson {
                    name: a.name.clone(),
                    size: a.size,
                })
                .collect(),
            pinned: false,
        }
    }
}

/// `save` when nothing changed: `id` is always null, so that `.id` tells the two
/// answers of a save apart.
#[derive(Debug, Serialize)]
pub struct UnchangedJson {
    /// Always null: nothing was made.
    pub id: Option<String>,
    /// Always true.
    pub unchanged: bool,
    /// The current checkpoint, which the worktree still equals.
    pub current: String,
}

impl UnchangedJson {
    /// A save that found the worktree equal to `current`.
    pub fn new(current: CheckpointId) -> Self {
        UnchangedJson {
            id: None,
            unchanged: true,
            current: current.hex(),
        }
    }
}

/// `save`: the checkpoint made, or what says nothing was.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum SaveJson {
    /// A checkpoint was made.
    Saved(Box<CheckpointJson>),
    /// Nothing changed.
    Unchanged(UnchangedJson),
}

/// How `diff` and `show` describe one changed file, and what `--stat` counts.
#[derive(Clone, Debug, Serialize)]
pub struct FileSummary {
    /// Its worktree path.
    pub path: String,
    /// `A`, `D`, `M` or `T`.
    pub status: String,
    /// git's mode on the old side (`100644`, `100755`, `120000`), if present.
    pub old_mode: Option<String>,
    /// git's mode on the new side, if present.
    pub new_mode: Option<String>,
    /// Bytes on the old side.
    pub old_size: u64,
    /// Bytes on the new side.
    pub new_size: u64,
    /// Whether either side is binary (then there are no line counts).
    pub binary: bool,
    /// Lines added, for text.
    pub insertions: Option<u64>,
    /// Lines removed, for text.
    pub deletions: Option<u64>,
    /// Left unread: reading it would have taken the content one diff reads past its
    /// limit, so it shows as binary with its recorded sizes. Present only when true.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub unexpanded: bool,
}

/// `show`: the checkpoint's fields, then its changes against its first parent.
#[derive(Clone, Debug, Serialize)]
pub struct ShowJson {
    /// The checkpoint, its fields at the top level.
    #[serde(flatten)]
    pub checkpoint: CheckpointJson,
    /// For a prompt's turn (`<session>:turn<N>`): the checkpoint it ends at (the changes
    /// are up to it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn_end: Option<String>,
    /// Its changes.
    pub changes: Vec<FileSummary>,
}

/// `diff`.
#[derive(Debug, Serialize)]
pub struct DiffJson {
    /// The old side's checkpoint; null when there is no checkpoint yet.
    pub from: Option<String>,
    /// The new side's checkpoint; null for the worktree.
    pub to: Option<String>,
    /// Each changed file.
    pub changes: Vec<FileSummary>,
}

/// `status`.
#[derive(Debug, Serialize)]
pub struct StatusJson {
    /// The current checkpoint, if there is one.
    pub checkpoint: Option<String>,
    /// The branch HEAD names; null when detached.
    pub branch: Option<String>,
    /// Whether the worktree equals the current checkpoint.
    pub clean: bool,
    /// The short id of the checkpoint an interrupted restore was restoring, if one was.
    pub interrupted_restore: Option<String>,
    /// Each changed path.
    pub changes: Vec<StatusChangeJson>,
}

/// One changed path of `status`.
#[derive(Debug, Serialize)]
pub struct StatusChangeJson {
    /// `A`, `D`, `M` or `T`.
    pub status: String,
    /// Its worktree path.
    pub path: String,
}

/// One branch of `branch`'s listing.
#[derive(Debug, Serialize)]
pub struct BranchJson {
    /// Its name.
    pub name: String,
    /// Its tip.
    pub id: String,
    /// Its tip's shortest unique abbreviation.
    pub short_id: String,
    /// Whether HEAD names it.
    pub current: bool,
    /// Its tip's message.
    pub message: String,
}

/// `branch -d`.
#[derive(Debug, Serialize)]
pub struct BranchDeletedJson {
    /// The branch deleted.
    pub deleted: String,
    /// The tip it had.
    pub id: String,
}

/// `branch -m`.
#[derive(Debug, Serialize)]
pub struct BranchRenamedJson {
    /// The old name.
    pub renamed: String,
    /// The new name.
    pub to: String,
    /// Its tip.
    pub id: String,
}

/// One session of `sessions`.
#[derive(Debug, Serialize)]
pub struct SessionJson {
    /// The agent (`claude`, `codex`, …).
    pub agent: String,
    /// The agent's session id.
    pub id: String,
    /// Its shortest unique prefix, at least 8 characters.
    pub short_id: String,
    /// Prompts submitted in it.
    pub prompts: u64,
    /// Checkpoints its hooks saved.
    pub checkpoints: u64,
    /// The first line of its first prompt, if a checkpoint of it is left.
    pub first_prompt: Option<String>,
    /// When its first checkpoint was saved.
    pub started: String,
    /// When its last checkpoint was saved.
    pub ended: String,
}

impl SessionJson {
    /// The JSON view of `session`, shown as `short_id`.
    pub fn new(session: &Session, short_id: &str) -> Self {
        SessionJson {
            agent: session.agent.clone(),
            id: session.id.clone(),
            short_id: short_id.to_string(),
            prompts: session.prompts,
            checkpoints: session.checkpoints,
            first_prompt: session.first_prompt.clone(),
            started: rfc3339(session.first_ns),
            ended: rfc3339(session.last_ns),
        }
    }
}
