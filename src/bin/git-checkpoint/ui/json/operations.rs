//! The shapes of the operation log: `op log`, and what `undo`, `redo` and `op restore`
//! did.

use serde::Serialize;

use git_checkpoint::clock::rfc3339;
use git_checkpoint::model::operation::{Invocation, View};
use git_checkpoint::model::Head;
use git_checkpoint::ops::op_log::{Entry, UndoReport};
use git_checkpoint::CheckpointId;

use super::{hexes, paths};

/// One record of `op log`.
#[derive(Debug, Serialize)]
pub struct OperationJson {
    /// Its number, which `undo <op>` and `op restore <op>` take.
    pub number: u64,
    /// When it was made, RFC 3339 in UTC.
    pub time: String,
    /// What it was: `restore`, `fork`, `switch`, `revert`, `drop`, `pin`, `unpin`, `gc`,
    /// `fetch`, `pull`, `branch-delete`, `branch-rename`, `undo`, `redo`, `op-restore`.
    pub kind: &'static str,
    /// What it did, in a few words.
    pub summary: String,
    /// What made it.
    pub invocation: InvocationJson,
    /// The references before it.
    pub before: ViewJson,
    /// The references after it.
    pub after: ViewJson,
    /// What it did to the worktree, if anything.
    pub worktree: Option<WorktreeChangeJson>,
    /// Checkpoints it took out of the history (kept for undo until a gc after the undo
    /// window).
    pub dropped: Vec<String>,
    /// Checkpoints it brought back.
    pub undropped: Vec<String>,
    /// For an undo, a redo or an `op restore`: the operation it acted on.
    pub acts_on: Option<u64>,
    /// The undo that undid it, while it stays undone.
    pub undone_by: Option<u64>,
    /// Why `undo` cannot act on it (a gc; a checkpoint a gc removed), if it cannot.
    pub cannot_undo: Option<String>,
}

/// A page of the operation log: the MCP server's `op_log`.
#[derive(Debug, Serialize)]
pub struct OperationPageJson {
    /// The operations, newest first.
    pub operations: Vec<ListedOperationJson>,
    /// The `offset` of the next page; null on the last.
    pub next_offset: Option<usize>,
}

/// An operation on a page: brief, or `op log --json`'s whole record when asked for.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum ListedOperationJson {
    /// What an agent acts on.
    Brief(OperationBriefJson),
    /// Everything (`verbose`).
    Full(Box<OperationJson>),
}

/// What an agent acts on of an operation: which it is (the number `undo` takes), what
/// it did and what made it, and whether undo can act on it.
#[derive(Debug, Serialize)]
pub struct OperationBriefJson {
    /// Its number.
    pub number: u64,
    /// When it was made, RFC 3339 in UTC.
    pub time: String,
    /// What it was, as [`OperationJson::kind`].
    pub kind: &'static str,
    /// What it did, in a few words.
    pub summary: String,
    /// What made it, as `op log` shows it (`mcp restore {"rev":"@~2"}`).
    pub invocation: String,
    /// Present while it stays undone: the undo that undid it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub undone_by: Option<u64>,
    /// Present when `undo` cannot act on it: why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cannot_undo: Option<String>,
}

impl OperationBriefJson {
    /// The brief view of `entry`.
    pub fn new(entry: &Entry) -> Self {
        let op = &entry.op;
        OperationBriefJson {
            number: entry.number,
            time: rfc3339(op.time_ns),
            kind: op.kind.name(),
            summary: op.summary.clone(),
            invocation: op.invocation.display(),
            undone_by: entry.undone_by,
            cannot_undo: entry.refusal(),
        }
    }
}

/// What made an operation.
#[derive(Debug, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum InvocationJson {
    /// A command line.
    Command {
        /// As it would be typed again, each argument one shell word.
        line: String,
        /// The arguments after the program's name.
        args: Vec<String>,
    },
    /// An MCP tool call.
    Mcp {
        /// The tool.
        tool: String,
        /// Its arguments, as JSON text.
        arguments: String,
    },
    /// An agent's hook.
    Hook {
        /// The agent.
        agent: String,
        /// The event.
        event: String,
    },
}

/// The references at one moment.
#[derive(Debug, Serialize)]
pub struct ViewJson {
    /// The branch HEAD names; null when detached.
    pub branch: Option<String>,
    /// The checkpoint HEAD names, if any.
    pub current: Option<String>,
    /// Every branch, by name.
    pub branches: Vec<TipJson>,
    /// The pinned checkpoints.
    pub pins: Vec<String>,
    /// Every fetched branch (`<remote>/<branch>`), by name.
    pub fetched: Vec<TipJson>,
}

/// A branch and its tip.
#[derive(Debug, Serialize)]
pub struct TipJson {
    /// The branch.
    pub name: String,
    /// Its tip.
    pub tip: String,
}

/// What an operation did to the worktree.
#[derive(Debug, Serialize)]
pub struct WorktreeChangeJson {
    /// The checkpoint holding the worktree as the operation found it.
    pub before: String,
    /// The checkpoint holding the whole worktree as it left it, when one does.
    pub after: Option<String>,
    /// The paths it changed, when it was limited to some; empty: all.
    pub paths: Vec<String>,
}

impl OperationJson {
    /// The JSON view of `entry`.
    pub fn new(entry: &Entry) -> Self {
        let op = &entry.op;
        OperationJson {
            number: entry.number,
            time: rfc3339(op.time_ns),
            kind: op.kind.name(),
            summary: op.summary.clone(),
            invocation: InvocationJson::new(&op.invocation),
            before: ViewJson::new(&op.before),
            after: ViewJson::new(&op.after),
            worktree: op.worktree.as_ref().map(|w| WorktreeChangeJson {
                before: w.before.hex(),
                after: w.after.map(CheckpointId::hex),
                paths: paths(&w.paths),
            }),
            dropped: hexes(&op.dropped),
            undropped: hexes(&op.undropped),
            acts_on: op.kind.acts_on(),
            undone_by: entry.undone_by,
            cannot_undo: entry.refusal(),
        }
    }
}

impl InvocationJson {
    /// The JSON view of `invocation`.
    pub fn new(invocation: &Invocation) -> Self {
        match invocation {
            Invocation::Command(args) => InvocationJson::Command {
                line: invocation.display(),
                args: args.clone(),
            },
            Invocation::Mcp { tool, arguments } => InvocationJson::Mcp {
                tool: tool.clone(),
                arguments: arguments.clone(),
            },
            Invocation::Hook { agent, event } => InvocationJson::Hook {
                agent: agent.clone(),
                event: event.clone(),
            },
        }
    }
}

impl ViewJson {
    /// The JSON view of `view`.
    pub fn new(view: &View) -> Self {
        let tips = |list: &[(String, CheckpointId)]| {
            (list.iter())
                .map(|(name, tip)| TipJson {
                    name: name.clone(),
                    tip: tip.hex(),
                })
                .collect()
        };
        ViewJson {
            branch: match &view.head {
                Head::Branch(name) => Some(name.clone()),
                Head::Detached(_) => None,
            },
            current: view.current().map(CheckpointId::hex),
            branches: tips(&view.branches),
            pins: hexes(&view.pins),
            fetched: tips(&view.fetched),
        }
    }
}

/// What `undo`, `redo` or `op restore` did.
#[derive(Debug, Serialize)]
pub struct UndoJson {
    /// The number the operation log gave it.
    pub operation: u64,
    /// `undo`, `redo` or `op-restore`.
    pub kind: &'static str,
    /// The operation it acted on.
    pub target: u64,
    /// That operation's summary.
    pub target_summary: String,
    /// The checkpoint unsaved changes were saved as first, if there were any.
    pub safety_checkpoint: Option<String>,
    /// The checkpoint the worktree was restored to, when it was.
    pub restored: Option<String>,
    /// Paths written.
    pub written: Vec<String>,
    /// Paths deleted.
    pub deleted: Vec<String>,
    /// Branches moved, created (`from` null) or deleted (`to` null).
    pub moved_branches: Vec<MovedJson>,
    /// What HEAD named before and after, when that changed.
    pub head: Option<HeadMoveJson>,
    /// Checkpoints brought back from a drop.
    pub undropped: Vec<String>,
    /// Checkpoints taken out of the history again.
    pub dropped: Vec<String>,
}

/// A branch moved.
#[derive(Debug, Serialize)]
pub struct MovedJson {
    /// The branch.
    pub branch: String,
    /// Its tip before; null when it did not exist.
    pub from: Option<String>,
    /// Its tip after; null when it was deleted.
    pub to: Option<String>,
    /// Whether checkpoints were saved on it since the operation undone (`redo` brings
    /// the branch back to them).
    pub saved_since: bool,
}

/// HEAD before and after.
#[derive(Debug, Serialize)]
pub struct HeadMoveJson {
    /// What HEAD named before: a branch's name, or a checkpoint's full id.
    pub from: String,
    /// What it names after.
    pub to: String,
}

impl UndoJson {
    /// The JSON view of `report`.
    pub fn new(report: &UndoReport) -> Self {
        let head_name = |head: &Head| match head {
            Head::Branch(name) => name.clone(),
            Head::Detached(id) => id.hex(),
        };
        let restore = report.restore.as_ref();
        UndoJson {
            operation: report.operation,
            kind: report.kind.name(),
            target: report.target,
            target_summary: report.target_op.summary.clone(),
            safety_checkpoint: restore
                .and_then(|r| r.safety_checkpoint)
                .map(CheckpointId::hex),
            restored: restore.and_then(|r| r.target).map(CheckpointId::hex),
            written: restore.map(|r| paths(&r.written)).unwrap_or_default(),
            deleted: restore.map(|r| paths(&r.deleted)).unwrap_or_default(),
            moved_branches: (report.moved.iter())
                .map(|m| MovedJson {
                    branch: m.name.clone(),
                    from: m.from.map(CheckpointId::hex),
                    to: m.to.map(CheckpointId::hex),
                    saved_since: m.saved_since,
                })
                .collect(),
            head: report.head.as_ref().map(|(from, to)| HeadMoveJson {
                from: head_name(from),
                to: head_name(to),
            }),
            undropped: hexes(&report.undropped),
            dropped: hexes(&report.dropped),
        }
    }
}
