//! Checkpoint records and what HEAD names: the values the store keeps in its
//! `checkpoints` and `state` tables (docs/design.md, "Tables").

use serde::{Deserialize, Serialize};

use crate::{CheckpointId, ChunkId, Error, Result, TreeId};

/// A file stored with a checkpoint but outside its tree.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attachment {
    /// The name it was attached under.
    pub name: String,
    /// Its length in bytes.
    pub size: u64,
    /// Its content chunks.
    pub chunks: Vec<ChunkId>,
}

/// A file a save left out; restore never overwrites or deletes it, since no checkpoint
/// holds its content.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedFile {
    /// Its worktree path.
    #[serde(with = "serde_bytes")]
    pub path: Vec<u8>,
    /// Its size when it was skipped.
    pub size: u64,
    /// Why it was left out.
    pub reason: SkipReason,
}

/// Why a save left a file out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SkipReason {
    /// Larger than `checkpoint.maxFileSize`.
    TooLarge,
    /// It could not be read, and the save was told to go on (`--skip-unreadable`).
    Unreadable,
}

/// One save point. `Default` is the empty record that tests and crafted stores fill in.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// The root tree of the worktree.
    pub tree: TreeId,
    /// Parent checkpoints; the first is the one it was saved on top of.
    pub parents: Vec<CheckpointId>,
    /// When it was made, in nanoseconds since the Unix epoch.
    pub time_ns: i128,
    /// The message given with `-m`, or one the tool wrote (e.g. before a restore).
    pub message: String,
    /// The checkpoint branch it was made on, if HEAD named one.
    pub branch: Option<String>,
    /// The real repository's HEAD commit at that moment.
    pub git_head: Option<String>,
    /// The real repository's branch at that moment.
    pub git_branch: Option<String>,
    /// Free-form `key=value` metadata, in the order given.
    pub meta: Vec<(String, String)>,
    /// Attached files.
    pub attachments: Vec<Attachment>,
    /// Files and symlinks in the tree.
    pub files: u64,
    /// Total size of the files in the tree.
    pub bytes: u64,
    /// Files left out for their size; restore leaves them alone. (Appended last: the
    /// encoding is positional.)
    pub skipped: Vec<SkippedFile>,
}

/// What HEAD names.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Head {
    /// A branch; it may not exist yet in a new store.
    Branch(String),
    /// A checkpoint with no branch.
    Detached(CheckpointId),
}

impl Checkpoint {
    /// The value of its metadata `key`, if it has one.
    pub fn meta_value(&self, key: &str) -> Option<&str> {
        self.meta
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Its attachment named `name`; `short` names the checkpoint in the error.
    pub fn attachment(&self, short: &str, name: &str) -> Result<&Attachment> {
        self.attachments
            .iter()
            .find(|a| a.name == name)
            .ok_or_else(|| Error::UnknownAttachment {
                checkpoint: short.to_string(),
                name: name.to_string(),
                available: if self.attachments.is_empty() {
                    "none".to_string()
                } else {
                    self.attachments
                        .iter()
                        .map(|a| a.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                },
            })
    }
}
