//! The operation log's records (docs/design.md, "The operation log"; docs/undo.md): what
//! a command that changed the worktree, a branch or the store did, with the state before
//! and after it, so that `undo`, `redo` and `op restore` can go back and forth.
//!
//! A record is a codec record (append-only, like every other: fields and enum variants
//! are only ever added at the end) in the `operations` table, keyed by a number that
//! only grows. It is written in the same transaction as the change it records.

use serde::{Deserialize, Serialize};

use crate::format::path::shell_word;
use crate::model::Head;
use crate::CheckpointId;

/// How long after an operation gc keeps everything undoing it needs: the checkpoints its
/// state before and after names, and what a `drop` dropped. A gc after that may remove
/// them, and the record then says what went and when.
pub const UNDO_WINDOW_NS: i128 = 7 * 24 * 3600 * 1_000_000_000;

/// How many of the newest records gc keeps past the undo window, so that `op log` still
/// tells the story after a quiet week. Older ones go with the gc that finds them.
pub const KEPT_PAST_WINDOW: usize = 100;

/// What made an operation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Invocation {
    /// A command line: the arguments after the program's name, as typed (text that is
    /// not UTF-8 is kept lossily: the record is for reading, not for running again).
    Command(Vec<String>),
    /// A call of the MCP server's tool `tool`, with its arguments as JSON text.
    Mcp {
        /// The tool's name.
        tool: String,
        /// Its arguments, as the client sent them.
        arguments: String,
    },
    /// An agent's hook run.
    Hook {
        /// The agent (`claude`, `codex`, …).
        agent: String,
        /// The event it reported (`PostToolUse`, …).
        event: String,
    },
}

impl Invocation {
    /// A command line of this process: its arguments after the program's name.
    pub fn command_line(args: impl IntoIterator<Item = std::ffi::OsString>) -> Invocation {
        Invocation::Command(
            args.into_iter()
                .map(|arg| arg.to_string_lossy().into_owned())
                .collect(),
        )
    }

    /// How a person reads it: the command as it would be typed again
    /// (`git checkpoint restore 3fa9c1e`, each argument one shell word), `mcp <tool>
    /// <arguments>`, or `hook <agent> <event>`. Not escaped for a terminal.
    pub fn display(&self) -> String {
        match self {
            Invocation::Command(args) => {
                let mut line = "git checkpoint".to_string();
                for arg in args {
                    line.push(' ');
                    line.push_str(&shell_word(arg.as_bytes()));
                }
                line
            }
            Invocation::Mcp { tool, arguments } => format!("mcp {tool} {arguments}"),
            Invocation::Hook { agent, event } => format!("hook {agent} {event}"),
        }
    }
}

/// What an operation was. Undo and redo go by it: see [`OpKind::undoable`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum OpKind {
    /// `restore`, whole or of some paths (also `--only-session`).
    Restore,
    /// `fork`: a restore onto a new branch.
    Fork,
    /// `switch`: a restore of another branch's tip.
    Switch,
    /// `revert`.
    Revert,
    /// `drop`: checkpoints taken out of the history, kept for undo.
    Drop,
    /// `pin`.
    Pin,
    /// `unpin`.
    Unpin,
    /// `gc`: nothing it removed comes back, so undo passes over it.
    Gc,
    /// `fetch` (also the fetch of a `pull`): fetched branches moved.
    Fetch,
    /// `pull`'s fast-forward of a local branch.
    Pull,
    /// `branch -d`.
    BranchDelete,
    /// `branch -m`.
    BranchRename,
    /// `undo` of the operation numbered so.
    Undo(u64),
    /// `redo` of the operation numbered so (an undo of the undo that undid it).
    Redo(u64),
    /// `op restore` to the state after the operation numbered so.
    OpRestore(u64),
}

impl OpKind {
    /// The word `op log` and `--json` show.
    pub fn name(self) -> &'static str {
        match self {
            OpKind::Restore => "restore",
            OpKind::Fork => "fork",
            OpKind::Switch => "switch",
            OpKind::Revert => "revert",
            OpKind::Drop => "drop",
            OpKind::Pin => "pin",
            OpKind::Unpin => "unpin",
            OpKind::Gc => "gc",
            OpKind::Fetch => "fetch",
            OpKind::Pull => "pull",
            OpKind::BranchDelete => "branch-delete",
            OpKind::BranchRename => "branch-rename",
            OpKind::Undo(_) => "undo",
            OpKind::Redo(_) => "redo",
            OpKind::OpRestore(_) => "op-restore",
        }
    }

    /// The operation an undo, a redo or an `op restore` acted on.
    pub fn acts_on(self) -> Option<u64> {
        match self {
            OpKind::Undo(n) | OpKind::Redo(n) | OpKind::OpRestore(n) => Some(n),
            _ => None,
        }
    }

    /// Whether `undo` can put back what it did. A gc's removals are gone for good, so
    /// undo passes over a gc to the operation before it.
    pub fn undoable(self) -> bool {
        self != OpKind::Gc
    }
}

/// The references of the store at one moment: what HEAD names, every branch tip, the
/// pins and the fetched branches. Each list is sorted, so that two views compare equal
/// exactly when the references are the same.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct View {
    /// What HEAD names.
    pub head: Head,
    /// Every branch and its tip, by name.
    pub branches: Vec<(String, CheckpointId)>,
    /// The pinned checkpoints.
    pub pins: Vec<CheckpointId>,
    /// Every fetched branch (`<remote>/<branch>`) and its tip, by name.
    pub fetched: Vec<(String, CheckpointId)>,
}

impl View {
    /// The checkpoint HEAD names in this view, if any.
    pub fn current(&self) -> Option<CheckpointId> {
        match &self.head {
            Head::Branch(name) => tip(&self.branches, name),
            Head::Detached(id) => Some(*id),
        }
    }

    /// Every checkpoint the view names.
    pub fn ids(&self) -> impl Iterator<Item = CheckpointId> + '_ {
        let detached = match &self.head {
            Head::Detached(id) => Some(*id),
            Head::Branch(_) => None,
        };
        (self.branches.iter().map(|(_, id)| *id))
            .chain(self.pins.iter().copied())
            .chain(self.fetched.iter().map(|(_, id)| *id))
            .chain(detached)
    }
}

/// The tip `name` has in `list`, if any.
fn tip(list: &[(String, CheckpointId)], name: &str) -> Option<CheckpointId> {
    list.iter().find(|(n, _)| n == name).map(|(_, id)| *id)
}

/// What an operation did to the worktree.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorktreeChange {
    /// The checkpoint holding the worktree as the operation found it: its safety
    /// checkpoint when there were unsaved changes, else the current checkpoint.
    pub before: CheckpointId,
    /// The checkpoint holding the whole worktree as the operation left it, when one
    /// does (a whole restore's target; not a restore of some paths, nor a revert):
    /// what `op restore` returns to.
    pub after: Option<CheckpointId>,
    /// The paths the operation changed, when it was limited to some (a restore of paths,
    /// a revert); empty: the whole worktree.
    pub paths: Vec<Vec<u8>>,
}

/// A checkpoint an operation needs that a gc removed, and when.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lost {
    /// The checkpoint.
    pub id: CheckpointId,
    /// When the gc removed it, in nanoseconds since the epoch.
    pub time_ns: i128,
}

/// One record of the operation log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Operation {
    /// When it was committed, in nanoseconds since the epoch.
    pub time_ns: i128,
    /// What made it.
    pub invocation: Invocation,
    /// What it was.
    pub kind: OpKind,
    /// What it did, in a few words (`restore to 3fa9c1e`).
    pub summary: String,
    /// The references before it.
    pub before: View,
    /// The references after it.
    pub after: View,
    /// What it did to the worktree, if anything.
    pub worktree: Option<WorktreeChange>,
    /// Checkpoints it took out of the history, kept in the `dropped` table.
    pub dropped: Vec<CheckpointId>,
    /// Checkpoints it brought back from the `dropped` table.
    pub undropped: Vec<CheckpointId>,
    /// Checkpoints whose parents it changed, each with its parents before.
    pub reparented: Vec<(CheckpointId, Vec<CheckpointId>)>,
    /// A checkpoint undoing it needs that a gc removed since, if any.
    pub lost: Option<Lost>,
}

impl Operation {
    /// Every checkpoint going back to the state before this operation, or forward to the
    /// state after it, needs: what the views name, the worktree's checkpoints, what it
    /// dropped and brought back, and the parents it changed.
    pub fn needs(&self) -> impl Iterator<Item = CheckpointId> + '_ {
        let worktree = self
            .worktree
            .iter()
            .flat_map(|w| std::iter::once(w.before).chain(w.after));
        (self.before.ids())
            .chain(self.after.ids())
            .chain(worktree)
            .chain(self.dropped.iter().copied())
            .chain(self.undropped.iter().copied())
            .chain(
                self.reparented
                    .iter()
                    .flat_map(|(id, parents)| std::iter::once(*id).chain(parents.iter().copied())),
            )
    }
}

/// What an operation is about to record, before the store adds its time, invocation and
/// the references after it ([`crate::storage::Transaction::record_operation`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewOperation {
    /// What it is.
    pub kind: OpKind,
    /// What it did, in a few words.
    pub summary: String,
    /// The references before it, read before it changed anything.
    pub before: View,
    /// What it did to the worktree, if anything.
    pub worktree: Option<WorktreeChange>,
    /// Checkpoints it took out of the history.
    pub dropped: Vec<CheckpointId>,
    /// Checkpoints it brought back.
    pub undropped: Vec<CheckpointId>,
    /// Checkpoints whose parents it changed, each with its parents before.
    pub reparented: Vec<(CheckpointId, Vec<CheckpointId>)>,
}

impl NewOperation {
    /// An operation of `kind` that changed references only, starting from `before`.
    pub fn new(kind: OpKind, summary: impl Into<String>, before: View) -> NewOperation {
        NewOperation {
            kind,
            summary: summary.into(),
            before,
            worktree: None,
            dropped: Vec::new(),
            undropped: Vec::new(),
            reparented: Vec::new(),
        }
    }
}

/// How an operation that runs a restore (an undo, a redo, an `op restore`, a pull) is
/// recorded, and what the restore's final transaction changes besides the worktree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpStep {
    /// What the operation is.
    pub kind: OpKind,
    /// What it does, in a few words; the safety checkpoint is saved "before" it.
    pub summary: String,
    /// What it changes besides the worktree.
    pub change: ViewChange,
}

/// What an undo, a redo or an `op restore` changes besides the worktree, applied in the
/// transaction that records it ([`crate::storage::Transaction::apply_change`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ViewChange {
    /// What HEAD is to name, if that changes.
    pub head: Option<Head>,
    /// Branches to point elsewhere (`Some`) or delete (`None`).
    pub branches: Vec<(String, Option<CheckpointId>)>,
    /// Checkpoints to pin (`true`) or unpin.
    pub pins: Vec<(CheckpointId, bool)>,
    /// Fetched branches to point elsewhere or forget.
    pub fetched: Vec<(String, Option<CheckpointId>)>,
    /// Checkpoints to bring back from the `dropped` table.
    pub undrop: Vec<CheckpointId>,
    /// Checkpoints to take out of the history again (into the `dropped` table).
    pub drop: Vec<CheckpointId>,
    /// Checkpoints to give these parents.
    pub parents: Vec<(CheckpointId, Vec<CheckpointId>)>,
}

impl ViewChange {
    /// What makes `from` into `to`: every reference that differs takes `to`'s value.
    /// Undoing an operation is `towards(before, after)`: what it changed goes back,
    /// what it did not change stays as it is now; `op restore` is
    /// `towards(after, now)`.
    pub fn towards(to: &View, from: &View) -> ViewChange {
        let mut change = ViewChange {
            head: (to.head != from.head).then(|| to.head.clone()),
            branches: differing(&to.branches, &from.branches),
            fetched: differing(&to.fetched, &from.fetched),
            ..ViewChange::default()
        };
        for id in &to.pins {
            if !from.pins.contains(id) {
                change.pins.push((*id, true));
            }
        }
        for id in &from.pins {
            if !to.pins.contains(id) {
                change.pins.push((*id, false));
            }
        }
        change
    }

    /// Whether it changes nothing.
    pub fn is_empty(&self) -> bool {
        *self == ViewChange::default()
    }

    /// Every checkpoint it points a reference at, or gives as a parent: each must exist
    /// once the change is made.
    pub fn targets(&self) -> impl Iterator<Item = CheckpointId> + '_ {
        let head = match &self.head {
            Some(Head::Detached(id)) => Some(*id),
            _ => None,
        };
        (self.branches.iter().filter_map(|(_, id)| *id))
            .chain(self.fetched.iter().filter_map(|(_, id)| *id))
            .chain(self.pins.iter().filter(|(_, pin)| *pin).map(|(id, _)| *id))
            .chain(self.parents.iter().flat_map(|(_, p)| p.iter().copied()))
            .chain(head)
    }
}

/// The names whose tips differ between `to` and `from`, each with its tip in `to`
/// (`None`: not in `to`).
fn differing(
    to: &[(String, CheckpointId)],
    from: &[(String, CheckpointId)],
) -> Vec<(String, Option<CheckpointId>)> {
    let mut names: Vec<&String> = to.iter().chain(from).map(|(name, _)| name).collect();
    names.sort();
    names.dedup();
    names
        .into_iter()
        .filter(|name| tip(to, name) != tip(from, name))
        .map(|name| (name.clone(), tip(to, name)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(head: &str, branches: &[(&str, u128)], pins: &[u128]) -> View {
        View {
            head: Head::Branch(head.to_string()),
            branches: branches
                .iter()
                .map(|(n, id)| (n.to_string(), CheckpointId(*id)))
                .collect(),
            pins: pins.iter().map(|id| CheckpointId(*id)).collect(),
            fetched: Vec::new(),
        }
    }

    #[test]
    fn a_change_towards_a_view_moves_only_what_differs() {
        let before = view("main", &[("main", 1), ("old", 5)], &[7]);
        let after = view("feat", &[("main", 2), ("feat", 3), ("old", 5)], &[8]);
        let change = ViewChange::towards(&before, &after);
        assert_eq!(change.head, Some(Head::Branch("main".into())));
        assert_eq!(
            change.branches,
            vec![
                ("feat".to_string(), None),
                ("main".to_string(), Some(CheckpointId(1)))
            ]
        );
        assert_eq!(
            change.pins,
            vec![(CheckpointId(7), true), (CheckpointId(8), false)]
        );
        assert!(ViewChange::towards(&before, &before).is_empty());
    }

    #[test]
    fn a_command_reads_as_it_would_be_typed_again() {
        let typed = Invocation::Command(vec!["restore".into(), "a b".into(), "it's".into()]);
        assert_eq!(typed.display(), "git checkpoint restore 'a b' 'it'\\''s'");
        let hook = Invocation::Hook {
            agent: "claude".into(),
            event: "PostToolUse".into(),
        };
        assert_eq!(hook.display(), "hook claude PostToolUse");
    }

    #[test]
    fn only_a_gc_cannot_be_undone() {
        assert!(!OpKind::Gc.undoable());
        assert!(OpKind::Drop.undoable() && OpKind::Undo(3).undoable());
    }
}
