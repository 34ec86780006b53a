//! What a restore answers: `restore` (whole, some paths, or only a session's files) and
//! the MCP server's `restore`; and the one report of every command that restores the
//! worktree (`fork`, `switch`, `pull`), [`said_restore`].

use git_checkpoint::model::session::abbreviate;
use git_checkpoint::ops::restore::RestoreReport;
use git_checkpoint::ops::session_restore::{ChangedBy, SessionRestoreReport};
use git_checkpoint::CheckpointId;

use super::{Answer, Front, Said, Shorts};
use crate::ui::failure::Failure;
use crate::ui::json::{RestoreCommandJson, RestoreJson, SessionRestoreJson};
use crate::ui::output::show_path;

/// What the restore was for, which names the line that says where the worktree went.
pub enum Done {
    /// `restore`: `Restored checkpoint <id>`.
    Restored,
    /// `fork` (`what` = "a new branch") and `switch` (`what` = "branch"):
    /// `Switched to <what> '<branch>' at <id>`.
    Switched {
        /// How the branch is introduced.
        what: &'static str,
        /// Its name.
        branch: String,
    },
    /// `pull`: its line on the branch, then `Restored checkpoint <id>`.
    Pulled(String),
}

/// The one report of a restore, whichever command made it (restore, fork, switch, pull):
/// the warnings, the checkpoint unsaved changes were saved as and how to undo, then what
/// was written and deleted (each path, for a dry run) and the files left alone.
/// `target` is the checkpoint restored; `shorts` holds it and the safety checkpoint.
pub fn said_restore(
    report: &RestoreReport,
    target: CheckpointId,
    shorts: &Shorts,
    done: &Done,
    front: Front,
) -> Said {
    let mut said = Said::default();
    for warning in &report.warnings {
        said.warning(warning);
    }
    let short = shorts.of(target);
    if let Some(safety) = report.safety_checkpoint {
        let safety = shorts.of(safety);
        said.line(format!(
            "Saved unsaved changes as checkpoint {safety} (undo with: {})",
            front.command("undo")
        ));
    }
    let headline = match done {
        _ if report.dry_run => {
            if report.would_save {
                said.line("Would first save unsaved changes as a checkpoint");
            }
            for path in &report.written {
                said.line(format!("write {}", show_path(path)));
            }
            for path in &report.deleted {
                said.line(format!("delete {}", show_path(path)));
            }
            None
        }
        Done::Restored => Some(format!("Restored checkpoint {short}")),
        Done::Switched { what, branch } => {
            Some(format!("Switched to {what} '{branch}' at {short}"))
        }
        Done::Pulled(line) => {
            said.line(line.clone());
            Some(format!("Restored checkpoint {short}"))
        }
    };
    if let Some(headline) = headline {
        said.line(format!(
            "{headline}: {} written, {} deleted",
            report.written.len(),
            report.deleted.len()
        ));
    }
    for path in &report.untouched {
        let why = if report.exempt.contains(path) {
            "it belongs to the repository's git dir, a linked worktree or the agent's settings, which a restore never changes"
        } else {
            "no checkpoint holds it (larger than checkpoint.maxFileSize, or unreadable when saved)"
        };
        said.line(format!("Left {} untouched: {why}", show_path(path)));
    }
    said
}

/// A restore's answer.
pub enum RestoreAnswer {
    /// The whole worktree, or some paths, made equal to a checkpoint.
    Whole {
        /// The restore's report.
        report: RestoreReport,
        /// The checkpoint restored.
        target: CheckpointId,
        /// The short ids of the target and the safety checkpoint.
        shorts: Shorts,
    },
    /// Only the files an agent session changed put back (`--only-session`).
    Session {
        /// The session restore's report.
        report: SessionRestoreReport,
        /// Whether it was a dry run.
        dry_run: bool,
        /// The short ids of every checkpoint the report names.
        shorts: Shorts,
        /// The short id and the message of the checkpoint the restore saved its result
        /// as; `None` for a dry run, and when nothing was written.
        result: Option<(String, String)>,
    },
}

/// The checkpoint a restore restored: every restore has one, so its absence is a bug.
pub fn restored(report: &RestoreReport) -> anyhow::Result<CheckpointId> {
    let no_target = || git_checkpoint::Error::Internal("a restore reported no target".into());
    Ok(report.target.ok_or_else(no_target)?)
}

impl Answer for RestoreAnswer {
    type Json = RestoreCommandJson;

    fn json(&self) -> RestoreCommandJson {
        match self {
            RestoreAnswer::Whole { report, target, .. } => {
                RestoreCommandJson::Whole(RestoreJson::new(*target, report))
            }
            RestoreAnswer::Session {
                report, dry_run, ..
            } => {
                let empty = RestoreReport::default();
                let restored = report.restore.as_ref().unwrap_or(&empty);
                RestoreCommandJson::Session(SessionRestoreJson::new(report, restored, *dry_run))
            }
        }
    }

    fn said(&self, front: Front) -> anyhow::Result<Said> {
        match self {
            RestoreAnswer::Whole {
                report,
                target,
                shorts,
            } => Ok(said_restore(
                report,
                *target,
                shorts,
                &Done::Restored,
                front,
            )),
            RestoreAnswer::Session {
                report,
                dry_run,
                shorts,
                result,
            } => said_session(report, *dry_run, shorts, result.as_ref(), front),
        }
    }

    /// A session restore that left paths alone fails, dry run or not (the dry run says
    /// what the real run will).
    fn failure(&self, front: Front) -> Option<anyhow::Error> {
        let RestoreAnswer::Session { report, .. } = self else {
            return None;
        };
        let unsure = report.conflicts.iter().any(|conflict| {
            conflict
                .by
                .iter()
                .any(|by| matches!(by, ChangedBy::UnsureToolCall { .. }))
        });
        match report.left_alone() {
            0 => None,
            n => Some(Failure::error(
                git_checkpoint::error::ErrorKind::Conflict,
                format!(
                    "left {n} path{} alone that someone else changed too{} (see above; {} puts {} back)",
                    if n == 1 { "" } else { "s" },
                    if unsure { ", or may have" } else { "" },
                    front.option("force"),
                    if n == 1 { "it" } else { "them" }
                ),
            )),
        }
    }
}

/// The report of a session-limited restore: each conflict and who else changed it, then
/// the restore's own report and the checkpoint of its result (`result`: its short id and
/// message), or that there was nothing to restore.
fn said_session(
    report: &SessionRestoreReport,
    dry_run: bool,
    shorts: &Shorts,
    result: Option<&(String, String)>,
    front: Front,
) -> anyhow::Result<Said> {
    let by = |by: &ChangedBy| match by {
        ChangedBy::Worktree => "unsaved changes in the worktree".to_string(),
        ChangedBy::UnsureToolCall { id } => format!(
            "someone during a tool call of this session that does not name it (checkpoint {})",
            shorts.of(*id)
        ),
        ChangedBy::Checkpoint {
            id,
            session: Some(s),
            tool_call: true,
        } => format!(
            "a tool call of session {} (checkpoint {})",
            abbreviate(s),
            shorts.of(*id)
        ),
        ChangedBy::Checkpoint { id, .. } => format!(
            "the user (seen at checkpoint {}, not a tool call)",
            shorts.of(*id)
        ),
    };
    let mut said = Said::default();
    for conflict in &report.conflicts {
        let others: Vec<String> = conflict.by.iter().map(by).collect();
        let what = if report.forced { "Overwrote" } else { "Left" };
        let also = if conflict.by_session {
            "this session and by "
        } else {
            ""
        };
        said.line(format!(
            "{what} {}: changed by {also}{}",
            show_path(&conflict.path),
            others.join(", ")
        ));
    }
    match &report.restore {
        Some(restore) => {
            let target = restored(restore)?;
            // Nothing was unsaved: the way back is the checkpoint that held the
            // worktree already (a restore with unsaved changes names its own).
            if let (None, Some(held), false) =
                (restore.safety_checkpoint, restore.worktree, dry_run)
            {
                let held = shorts.of(held);
                said.line(format!(
                    "The worktree was saved already as checkpoint {held} (undo with: {})",
                    front.command("undo")
                ));
            }
            said.0
                .extend(said_restore(restore, target, shorts, &Done::Restored, front).0);
            if let Some((short, message)) = result {
                said.line(format!(
                    "Saved the restore as checkpoint {short}: {message}"
                ));
            }
        }
        None => {
            let changed = report.changed_by_session.len();
            said.line(format!(
                "Nothing to restore: session {} changed {changed} path{} since {}",
                abbreviate(&report.session),
                if changed == 1 { "" } else { "s" },
                report.target.map(|id| shorts.of(id)).unwrap_or_default(),
            ));
        }
    }
    Ok(said)
}
