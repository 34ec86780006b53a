//! The shapes of the commands that restore the worktree: `restore`, `fork`, `switch`
//! and `pull`.

use serde::Serialize;

use git_checkpoint::ops::restore::RestoreReport;
use git_checkpoint::ops::revert::{ConflictStyle, RevertReport, Status};
use git_checkpoint::ops::session_restore::{ChangedBy, SessionRestoreReport};
use git_checkpoint::remote::pull::PullReport;
use git_checkpoint::CheckpointId;

use super::paths;
use crate::ui::output::show_path;

/// `restore`.
#[derive(Debug, Serialize)]
pub struct RestoreJson {
    /// The checkpoint restored.
    pub target: String,
    /// The checkpoint unsaved changes were saved as first, if there were any.
    pub safety_checkpoint: Option<String>,
    /// With `--dry-run`: whether a real run would save unsaved changes first.
    pub would_save: bool,
    /// Paths written (or that would be).
    pub written: Vec<String>,
    /// Paths deleted (or that would be).
    pub deleted: Vec<String>,
    /// Whether nothing was changed.
    pub dry_run: bool,
    /// Paths left as they are (too large or unreadable when saved, or never restored).
    pub untouched: Vec<String>,
    /// The checkpoint to restore to undo the restore (the safety checkpoint, or the one
    /// that held the worktree already), when something was written.
    pub worktree_checkpoint: Option<String>,
}

impl RestoreJson {
    /// The JSON view of a restore of `target`.
    pub fn new(target: CheckpointId, report: &RestoreReport) -> Self {
        RestoreJson {
            target: target.hex(),
            safety_checkpoint: report.safety_checkpoint.map(CheckpointId::hex),
            would_save: report.would_save,
            written: paths(&report.written),
            deleted: paths(&report.deleted),
            dry_run: report.dry_run,
            untouched: paths(&report.untouched),
            worktree_checkpoint: report.worktree.map(CheckpointId::hex),
        }
    }
}

/// `restore`'s document: a whole or path-limited restore's, or `--only-session`'s.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum RestoreCommandJson {
    /// The worktree, or some paths, restored.
    Whole(RestoreJson),
    /// Only a session's files put back.
    Session(SessionRestoreJson),
}

/// `restore --only-session`.
#[derive(Debug, Serialize)]
pub struct SessionRestoreJson {
    /// The checkpoint the session's paths were put back to.
    pub target: Option<String>,
    /// The session whose tool calls' changes were put back.
    pub session: String,
    /// Every path the session's tool calls changed after the target.
    pub changed_by_session: Vec<String>,
    /// Paths left alone unless forced: the session and someone else both changed them,
    /// or a tool call of the session changed them without naming them.
    pub conflicts: Vec<SessionConflictJson>,
    /// The checkpoint unsaved changes were saved as first, if there were any.
    pub safety_checkpoint: Option<String>,
    /// The checkpoint to restore to undo the restore (the safety checkpoint, or the one
    /// that held the worktree already), when something was written.
    pub worktree_checkpoint: Option<String>,
    /// The checkpoint the restore saved its result as, when something was written.
    pub checkpoint: Option<String>,
    /// With `--dry-run`: whether a real run would save unsaved changes first.
    pub would_save: bool,
    /// Paths written (or that would be).
    pub written: Vec<String>,
    /// Paths deleted (or that would be).
    pub deleted: Vec<String>,
    /// Whether nothing was changed.
    pub dry_run: bool,
    /// Paths left as they are (too large or unreadable when saved, or never restored).
    pub untouched: Vec<String>,
}

/// One path of [`SessionRestoreJson::conflicts`].
#[derive(Debug, Serialize)]
pub struct SessionConflictJson {
    /// The path.
    pub path: String,
    /// Who else changed it.
    pub changed_by: Vec<ChangedByJson>,
    /// Whether it was put back all the same (`--force`).
    pub restored: bool,
}

/// Who changed a path besides the session: unsaved changes in the worktree, or a
/// checkpoint (a tool call of another session, the user's changes seen at it, or a tool
/// call of the session that does not name the path).
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum ChangedByJson {
    /// `{"worktree": true}`.
    Worktree {
        /// Always true.
        worktree: bool,
    },
    /// The checkpoint the change was seen at.
    Checkpoint {
        /// Its id.
        checkpoint: String,
        /// The session that saved it, if any.
        session: Option<String>,
        /// Whether it was saved after a tool call.
        tool_call: bool,
        /// Whether it is a tool call of the session itself that does not name the path,
        /// with no hook of the session just before it: who changed the path is unsure.
        unsure: bool,
    },
}

impl SessionRestoreJson {
    /// The JSON view of a session-limited restore (`restored`: its restore's report, or
    /// an empty one when nothing was restored).
    pub fn new(report: &SessionRestoreReport, restored: &RestoreReport, dry_run: bool) -> Self {
        let conflicts = report
            .conflicts
            .iter()
            .map(|conflict| SessionConflictJson {
                path: show_path(&conflict.path),
                changed_by: conflict
                    .by
                    .iter()
                    .map(|by| match by {
                        ChangedBy::Worktree => ChangedByJson::Worktree { worktree: true },
                        ChangedBy::Checkpoint {
                            id,
                            session,
                            tool_call,
                        } => ChangedByJson::Checkpoint {
                            checkpoint: id.hex(),
                            session: session.clone(),
                            tool_call: *tool_call,
                            unsure: false,
                        },
                        ChangedBy::UnsureToolCall { id } => ChangedByJson::Checkpoint {
                            checkpoint: id.hex(),
                            session: Some(report.session.clone()),
                            tool_call: true,
                            unsure: true,
                        },
                    })
                    .collect(),
                restored: report.forced,
            })
            .collect();
        SessionRestoreJson {
            target: report.target.map(CheckpointId::hex),
            session: report.session.clone(),
            changed_by_session: paths(&report.changed_by_session),
            conflicts,
            safety_checkpoint: restored.safety_checkpoint.map(CheckpointId::hex),
            worktree_checkpoint: restored.worktree.map(CheckpointId::hex),
            checkpoint: report.checkpoint.map(CheckpointId::hex),
            would_save: restored.would_save,
            written: paths(&restored.written),
            deleted: paths(&restored.deleted),
            dry_run,
            untouched: paths(&restored.untouched),
        }
    }
}

/// `revert`.
#[derive(Debug, Serialize)]
pub struct RevertJson {
    /// The revision as given (a checkpoint or a range).
    pub revision: String,
    /// The checkpoint unsaved changes were saved as first, if there were any.
    pub safety_checkpoint: Option<String>,
    /// The checkpoint to restore to undo the revert.
    pub worktree_checkpoint: Option<String>,
    /// The checkpoint the revert saved its result as (not with conflicts, nor in a dry
    /// run).
    pub checkpoint: Option<String>,
    /// With `--dry-run`: whether a real run would save unsaved changes first.
    pub would_save: bool,
    /// Whether nothing was changed.
    pub dry_run: bool,
    /// How text conflicts are written: `merge` or `diff3`.
    pub conflict_style: &'static str,
    /// How many paths were reverted.
    pub applied: usize,
    /// How many paths conflict.
    pub conflicts: usize,
    /// How many paths needed nothing.
    pub unchanged: usize,
    /// Each path the change touched.
    pub paths: Vec<RevertPathJson>,
}

/// One path of [`RevertJson::paths`].
#[derive(Debug, Serialize)]
pub struct RevertPathJson {
    /// The path.
    pub path: String,
    /// `applied`, `conflict` or `unchanged`.
    pub status: &'static str,
    /// What was done to the file: `write`, `delete`, `markers` (a conflict written with
    /// conflict markers), `left` (a conflict left as it was) or `none`.
    pub action: &'static str,
    /// Why, for a conflict or a path left alone.
    pub why: Option<String>,
}

impl RevertJson {
    /// The JSON view of a revert of `rev`.
    pub fn new(rev: &str, report: &RevertReport, style: ConflictStyle) -> Self {
        let count = |status| report.with(status).count();
        RevertJson {
            revision: rev.to_string(),
            safety_checkpoint: report.safety_checkpoint.map(CheckpointId::hex),
            worktree_checkpoint: report.worktree.map(CheckpointId::hex),
            checkpoint: report.checkpoint.map(CheckpointId::hex),
            would_save: report.would_save,
            dry_run: report.dry_run,
            conflict_style: style.name(),
            applied: count(Status::Applied),
            conflicts: count(Status::Conflict),
            unchanged: count(Status::Unchanged),
            paths: report
                .paths
                .iter()
                .map(|entry| RevertPathJson {
                    path: show_path(&entry.path),
                    status: entry.status.name(),
                    action: match (entry.status, entry.markers, &entry.result) {
                        (Status::Conflict, true, _) => "markers",
                        (Status::Conflict, false, _) => "left",
                        (Status::Applied, _, Some(_)) => "write",
                        (Status::Applied, _, None) => "delete",
                        (Status::Unchanged, ..) => "none",
                    },
                    why: entry.why.clone(),
                })
                .collect(),
        }
    }
}

/// `fork` and `switch`.
#[derive(Debug, Serialize)]
pub struct SwitchJson {
    /// The branch HEAD now names.
    pub branch: String,
    /// The checkpoint restored: the branch's tip.
    pub target: String,
    /// The checkpoint unsaved changes were saved as first, if there were any.
    pub safety_checkpoint: Option<String>,
    /// Paths written.
    pub written: Vec<String>,
    /// Paths deleted.
    pub deleted: Vec<String>,
}

impl SwitchJson {
    /// The JSON view of a restore of `target` that moved HEAD to `branch`.
    pub fn new(branch: &str, target: CheckpointId, report: &RestoreReport) -> Self {
        SwitchJson {
            branch: branch.to_string(),
            target: target.hex(),
            safety_checkpoint: report.safety_checkpoint.map(CheckpointId::hex),
            written: paths(&report.written),
            deleted: paths(&report.deleted),
        }
    }
}

/// `pull`.
#[derive(Debug, Serialize)]
pub struct PullJson {
    /// The remote.
    pub remote: String,
    /// The local branch.
    pub branch: String,
    /// `up to date`, `ahead`, `fast-forward` or `new`.
    pub status: &'static str,
    /// Its tip before; null when it is new.
    pub from: Option<String>,
    /// The remote's tip.
    pub to: String,
    /// Checkpoints the fetch imported.
    pub imported: usize,
    /// When the pull restored: the checkpoint unsaved changes were saved as first.
    pub safety_checkpoint: Option<String>,
    /// Paths the restore wrote; null when the pull did not restore (another branch, or
    /// nothing moved).
    pub written: Option<Vec<String>>,
    /// Paths the restore deleted; null likewise.
    pub deleted: Option<Vec<String>>,
}

impl PullJson {
    /// The JSON view of a pull from `remote`.
    pub fn new(remote: &str, report: &PullReport) -> Self {
        let restore = report.restore.as_ref();
        PullJson {
            remote: remote.to_string(),
            branch: report.branch.clone(),
            status: report.status.word(),
            from: report.from.map(CheckpointId::hex),
            to: report.to.hex(),
            imported: report.fetch.imported,
            safety_checkpoint: restore
                .and_then(|r| r.safety_checkpoint)
                .map(CheckpointId::hex),
            written: restore.map(|r| paths(&r.written)),
            deleted: restore.map(|r| paths(&r.deleted)),
        }
    }
}
