//! What a revert answers: `revert`, and the MCP server's `revert`.

use git_checkpoint::diff::content::Content;
use git_checkpoint::diff::Change;
use git_checkpoint::error::ErrorKind;
use git_checkpoint::model::tree::Node;
use git_checkpoint::ops::revert::{ConflictStyle, PathReport, RevertReport, Status, Written};
use git_checkpoint::Error;

use super::{Answer, Front, Said};
use crate::ui::failure::Failure;
use crate::ui::json::RevertJson;
use crate::ui::output::show_path;

/// A revert's answer.
pub struct RevertAnswer {
    /// The revision as given (a checkpoint or a range).
    pub rev: String,
    /// What was undone as the user wrote it: the revision, and the paths it was limited
    /// to (`5f1c:turn2 -- src/a.rs`).
    pub described: String,
    /// The revert's report.
    pub report: RevertReport,
    /// How its text conflicts are written.
    pub style: ConflictStyle,
    /// What the user should hear of the repository's settings (an unknown
    /// `merge.conflictStyle`).
    pub warnings: Vec<String>,
    /// The short id of the checkpoint that holds the worktree as the revert found it
    /// (restoring it undoes the revert); `None` for a dry run.
    pub worktree: Option<String>,
    /// The short id and the message of the checkpoint the revert saved its result as;
    /// `None` for a dry run, and when conflicts are left to resolve.
    pub result: Option<(String, String)>,
}

impl Answer for RevertAnswer {
    type Json = RevertJson;

    fn json(&self) -> RevertJson {
        RevertJson::new(&self.rev, &self.report, self.style)
    }

    /// The warnings; for a dry run the diff it would apply; the checkpoint that undoes
    /// it; then each path and what became of it, and the checkpoint of the result.
    fn said(&self, front: Front) -> anyhow::Result<Said> {
        let report = &self.report;
        let described = &self.described;
        let mut said = Said::default();
        for warning in &self.warnings {
            said.warning(warning);
        }
        for warning in &report.warnings {
            said.warning(warning);
        }
        if report.dry_run {
            if report.would_save {
                said.line("Would first save unsaved changes as a checkpoint");
            }
            let mut diff = Vec::new();
            for entry in &report.paths {
                write_diff(&mut diff, entry, front.colour())?;
            }
            said.raw(diff);
        }
        if let Some(short) = &self.worktree {
            let undo = front.command("undo");
            said.line(match report.safety_checkpoint {
                Some(_) => format!(
                    "Saved unsaved changes as checkpoint {short} (undo the revert with: {undo})"
                ),
                None => format!(
                    "The worktree was saved already as checkpoint {short} (undo the revert with: {undo})"
                ),
            });
        }
        if report.paths.is_empty() {
            said.line(format!("Nothing to revert: {described} changed no file"));
            return Ok(said);
        }
        let verb = if report.dry_run {
            "Would revert"
        } else {
            "Reverted"
        };
        said.line(format!(
            "{verb} {described}: {} applied, {} conflicting, {} unchanged",
            report.with(Status::Applied).count(),
            report.with(Status::Conflict).count(),
            report.with(Status::Unchanged).count()
        ));
        for entry in &report.paths {
            let why = entry
                .why
                .as_deref()
                .map(|why| format!(" ({why})"))
                .unwrap_or_default();
            said.line(format!(
                "  {:<9} {}{why}",
                entry.status.name(),
                show_path(&entry.path)
            ));
        }
        if let Some((short, message)) = &self.result {
            said.line(format!("Saved the revert as checkpoint {short}: {message}"));
        }
        Ok(said)
    }

    /// A revert that left conflicts fails after saying so; a dry run fails as the real
    /// run would (`--no-conflicts` refuses before anything is said).
    fn failure(&self, _front: Front) -> Option<anyhow::Error> {
        let paths = self.report.conflicts();
        if paths.is_empty() {
            return None;
        }
        Some(match self.report.dry_run {
            // The kind the real run's error has: a conflict, not a refusal.
            true => Failure::error(
                ErrorKind::Conflict,
                Error::RevertWouldConflict { paths }.to_string(),
            ),
            false => Error::RevertConflicts { paths }.into(),
        })
    }
}

/// Writes the diff from the worktree to what the revert makes of `entry`, as `diff`
/// shows changes.
fn write_diff(out: &mut Vec<u8>, entry: &PathReport, colour: bool) -> anyhow::Result<()> {
    let deleted = entry.status == Status::Applied && entry.result.is_none();
    if entry.result.is_none() && !deleted {
        return Ok(());
    }
    let new = entry.result.as_ref().map(|result| match result {
        // Chunks are not needed to show a node: only its kind and mode.
        Written::File {
            bytes,
            mode: Some(mode),
            ..
        } => Node::FileWithMode {
            size: bytes.len() as u64,
            mode: *mode,
            chunks: Vec::new(),
        },
        Written::File {
            bytes, executable, ..
        } => Node::File {
            size: bytes.len() as u64,
            executable: *executable,
            chunks: Vec::new(),
        },
        Written::Symlink(target) => Node::Symlink {
            target: target.clone(),
        },
    });
    let new_content = match &entry.result {
        Some(Written::File { bytes, .. }) => Content::Bytes(bytes.clone()),
        Some(Written::Symlink(target)) => Content::Bytes(target.clone()),
        None => Content::Absent,
    };
    let change = Change {
        path: entry.path.clone(),
        old: entry.ours.clone(),
        new,
    };
    crate::ui::patch::write_patch(out, &change, &entry.ours_content, &new_content, colour)?;
    Ok(())
}
