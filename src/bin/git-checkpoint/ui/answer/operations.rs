//! What the operation log answers: `undo`, `redo` and `op restore` (and the MCP
//! server's `undo` and `redo`), and `op log`'s lines (and the MCP server's `op_log`, a
//! page at a time).

use git_checkpoint::model::operation::OpKind;
use git_checkpoint::model::Head;
use git_checkpoint::ops::op_log::{Entry, UndoReport};
use git_checkpoint::text::counted;
use git_checkpoint::CheckpointId;

use super::{Answer, Front, Said, Shorts};
use crate::ui::json::{
    ListedOperationJson, OperationBriefJson, OperationJson, OperationPageJson, UndoJson,
};
use crate::ui::output::relative_time;

/// What `undo`, `redo` or `op restore` did.
pub struct UndoAnswer {
    /// The library's report.
    pub report: UndoReport,
    /// The short ids of every checkpoint the report names.
    pub shorts: Shorts,
}

impl Answer for UndoAnswer {
    type Json = UndoJson;

    fn json(&self) -> UndoJson {
        UndoJson::new(&self.report)
    }

    /// What was undone (or redone, or returned to), where unsaved changes went, what
    /// the worktree became, and every reference moved.
    fn said(&self, front: Front) -> anyhow::Result<Said> {
        let (report, short) = (&self.report, |id| self.shorts.of(id));
        let mut said = Said::default();
        // The restore's warnings (a file left as it was, …), as restore says them.
        for warning in report.restore.iter().flat_map(|restore| &restore.warnings) {
            said.warning(warning);
        }
        let (headline, way_back) = match report.kind {
            OpKind::Undo(_) => ("Undid op", front.command("redo")),
            OpKind::Redo(_) => ("Redid op", front.command("undo")),
            _ => ("Returned to the state after op", front.command("undo")),
        };
        said.line(format!(
            "{headline} {}: {}",
            report.target, report.target_op.summary
        ));
        if let Some(restore) = &report.restore {
            if let Some(safety) = restore.safety_checkpoint {
                said.line(format!(
                    "Saved unsaved changes as checkpoint {} first ('{way_back}' brings them back)",
                    short(safety)
                ));
            }
            if let (Some(target), false) = (
                restore.target,
                restore.written.is_empty() && restore.deleted.is_empty(),
            ) {
                said.line(format!(
                    "Restored the worktree as checkpoint {} holds it: {} written, {} deleted",
                    short(target),
                    restore.written.len(),
                    restore.deleted.len()
                ));
            }
        }
        for moved in &report.moved {
            let line = match (moved.from, moved.to) {
                (Some(from), Some(to)) => {
                    format!("Branch {}: {} -> {}", moved.name, short(from), short(to))
                }
                (None, Some(to)) => format!("Branch {} made at {}", moved.name, short(to)),
                (Some(from), None) => {
                    format!("Branch {} deleted (was {})", moved.name, short(from))
                }
                (None, None) => continue,
            };
            said.line(match moved.saved_since {
                true => format!(
                    "{line}; the checkpoints saved on it since op {} are kept ('{way_back}' brings the branch back to them)",
                    report.target
                ),
                false => line,
            });
        }
        if let Some((_, to)) = &report.head {
            said.line(match to {
                Head::Branch(name) => format!("HEAD names branch {name}"),
                Head::Detached(id) => format!("HEAD is detached at {}", short(*id)),
            });
        }
        if !report.undropped.is_empty() {
            let ids: Vec<String> = report.undropped.iter().map(|id| short(*id)).collect();
            let noun = match ids.len() {
                1 => "checkpoint",
                _ => "checkpoints",
            };
            said.line(format!("Brought back dropped {noun} {}", ids.join(", ")));
        }
        if !report.dropped.is_empty() {
            said.line(format!(
                "Dropped again {}",
                counted(report.dropped.len(), "checkpoint")
            ));
        }
        Ok(said)
    }
}

/// Every checkpoint an undo's report names, for its [`Shorts`].
pub fn named(report: &UndoReport) -> Vec<CheckpointId> {
    let mut ids = Vec::new();
    if let Some(restore) = &report.restore {
        ids.extend(restore.safety_checkpoint);
        ids.extend(restore.target);
    }
    for moved in &report.moved {
        ids.extend(moved.from);
        ids.extend(moved.to);
    }
    if let Some((_, Head::Detached(id))) = &report.head {
        ids.push(*id);
    }
    ids.extend(&report.undropped);
    ids
}

/// An operation's two lines in `op log`: its number, age (from `now`), summary and what
/// became of it; then what made it.
pub fn op_lines(entry: &Entry, now: i128) -> [String; 2] {
    let op = &entry.op;
    let mut line = format!(
        "op {:<4} {:<16} {}",
        entry.number,
        relative_time(op.time_ns, now),
        op.summary
    );
    if let Some(by) = entry.undone_by {
        line.push_str(&format!(" (undone by op {by})"));
    } else if op.lost.is_some() || !op.kind.undoable() {
        if let Some(why) = entry.refusal() {
            line.push_str(&format!(" ({why})"));
        }
    }
    [line, format!("      {}", op.invocation.display())]
}

/// A page of the operation log, newest first: `op_log`.
pub struct OperationPage {
    /// The operations on it.
    pub entries: Vec<Entry>,
    /// The time their ages are counted from.
    pub now: i128,
    /// Where the next page starts, when there is one.
    pub next_offset: Option<usize>,
    /// Whether its structured content gives `op log --json`'s whole records.
    pub verbose: bool,
}

impl Answer for OperationPage {
    type Json = OperationPageJson;

    fn json(&self) -> OperationPageJson {
        let listed = |entry| match self.verbose {
            true => ListedOperationJson::Full(Box::new(OperationJson::new(entry))),
            false => ListedOperationJson::Brief(OperationBriefJson::new(entry)),
        };
        OperationPageJson {
            operations: self.entries.iter().map(listed).collect(),
            next_offset: self.next_offset,
        }
    }

    /// `op log`'s lines, then where the next page starts.
    fn said(&self, _front: Front) -> anyhow::Result<Said> {
        let mut said = Said::default();
        if self.entries.is_empty() {
            said.line(NO_OPERATIONS);
        }
        for entry in &self.entries {
            for line in op_lines(entry, self.now) {
                said.line(line);
            }
        }
        if let Some(next) = self.next_offset {
            said.line(format!("More: call op_log again with offset={next}."));
        }
        Ok(said)
    }
}

/// What an empty operation log says.
pub const NO_OPERATIONS: &str =
    "no operations yet: restore, revert, fork, switch, drop, pin, gc, fetch and pull each record one";
