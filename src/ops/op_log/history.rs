//! The operation log read as a history: which operations are in effect, which are
//! undone and by what, and so what `undo` and `redo` act on next.
//!
//! Two stacks, replayed from the oldest record: an operation that can be undone goes on
//! the *done* stack and empties the *undone* one (new work ends what redo could go back
//! to, as in jj and every editor); an undo takes its operation off *done* onto *undone*;
//! a redo takes it back. `undo` acts on the top of *done*, `redo` on the top of
//! *undone*. A gc is on neither: nothing it removed comes back, and undo passes over it.

use crate::model::operation::{OpKind, Operation};
use crate::storage::Snapshot;
use crate::{Error, Result};

/// One record of the log, with what became of it.
#[derive(Clone, Debug)]
pub struct Entry {
    /// Its number.
    pub number: u64,
    /// The record.
    pub op: Operation,
    /// The undo that undid it, while it stays undone.
    pub undone_by: Option<u64>,
}

impl Entry {
    /// Why `undo` (or `op restore`) cannot act on it, if it cannot: a gc removed a
    /// checkpoint it needs, or it is a gc.
    pub fn refusal(&self) -> Option<String> {
        if let Some(lost) = &self.op.lost {
            return Some(format!(
                "cannot be undone: gc removed checkpoint {} on {}",
                short(lost.id.hex()),
                date(lost.time_ns)
            ));
        }
        (!self.op.kind.undoable())
            .then(|| "cannot be undone: what a gc removed is gone for good".to_string())
    }
}

/// The day of `time_ns` (`2026-11-29`, UTC).
fn date(time_ns: i128) -> String {
    let time = crate::clock::rfc3339(time_ns);
    time.get(..10).unwrap_or(&time).to_string()
}

/// The first digits of a full id, for a message about a checkpoint that is gone (no
/// store can shorten it any more).
fn short(hex: String) -> String {
    hex[..12.min(hex.len())].to_string()
}

/// The operation log with its two stacks.
#[derive(Debug, Default)]
pub struct History {
    /// Every record, oldest first.
    pub entries: Vec<Entry>,
    /// Numbers of the operations in effect that undo can reach, oldest first.
    done: Vec<u64>,
    /// Operations undone that redo can bring back, each with the undo that undid it,
    /// oldest first.
    undone: Vec<(u64, u64)>,
}

impl History {
    /// The log as `snapshot` holds it.
    pub fn read(snapshot: &Snapshot) -> Result<History> {
        Ok(History::replay(snapshot.operations()?))
    }

    /// The history of `records` (oldest first), the stacks replayed.
    fn replay(records: Vec<(u64, Operation)>) -> History {
        let mut history = History::default();
        for (number, op) in records {
            match op.kind {
                OpKind::Undo(of) => {
                    history.done.retain(|n| *n != of);
                    history.undone.push((of, number));
                }
                OpKind::Redo(of) => {
                    history.undone.retain(|(n, _)| *n != of);
                    history.done.push(of);
                }
                kind if kind.undoable() => {
                    history.done.push(number);
                    history.undone.clear();
                }
                _ => {}
            }
            history.entries.push(Entry {
                number,
                op,
                undone_by: None,
            });
        }
        for (of, by) in &history.undone {
            if let Some(entry) = history.entries.iter_mut().find(|e| e.number == *of) {
                entry.undone_by = Some(*by);
            }
        }
        history
    }

    /// The record numbered `number`.
    pub fn get(&self, number: u64) -> Result<&Entry> {
        self.entries
            .iter()
            .find(|e| e.number == number)
            .ok_or_else(|| Error::UnknownOperation(number.to_string()))
    }

    /// What `undo` undoes: the newest operation in effect.
    pub fn next_undo(&self) -> Result<&Entry> {
        let number = self.done.last().ok_or(Error::NothingToUndo)?;
        self.get(*number)
    }

    /// What `redo` brings back, and the undo that undid it (which redo undoes).
    pub fn next_redo(&self) -> Result<(&Entry, &Entry)> {
        let (of, by) = self.undone.last().ok_or(Error::NothingToRedo)?;
        Ok((self.get(*of)?, self.get(*by)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::operation::{Invocation, View};
    use crate::model::Head;

    fn history(kinds: &[OpKind]) -> History {
        let view = View {
            head: Head::Branch("main".into()),
            branches: Vec::new(),
            pins: Vec::new(),
            fetched: Vec::new(),
        };
        let record = |kind: &OpKind| Operation {
            time_ns: 0,
            invocation: Invocation::Command(Vec::new()),
            kind: *kind,
            summary: String::new(),
            before: view.clone(),
            after: view.clone(),
            worktree: None,
            dropped: Vec::new(),
            undropped: Vec::new(),
            reparented: Vec::new(),
            lost: None,
        };
        History::replay(
            (kinds.iter().enumerate())
                .map(|(at, kind)| (at as u64 + 1, record(kind)))
                .collect(),
        )
    }

    #[test]
    fn undo_twice_undoes_the_two_newest_and_passes_over_a_gc() {
        use OpKind::*;
        let h = history(&[Restore, Drop, Gc]);
        assert_eq!(h.next_undo().unwrap().number, 2);
        let h = history(&[Restore, Drop, Gc, Undo(2)]);
        assert_eq!(h.next_undo().unwrap().number, 1);
        assert_eq!(h.next_redo().unwrap().0.number, 2);
        let h = history(&[Restore, Drop, Gc, Undo(2), Undo(1)]);
        assert!(matches!(h.next_undo(), Err(Error::NothingToUndo)));
        let (op, undo) = h.next_redo().unwrap();
        assert_eq!((op.number, undo.number), (1, 5));
    }

    #[test]
    fn redo_goes_forward_until_a_new_operation_ends_it() {
        use OpKind::*;
        let h = history(&[Restore, Pin, Undo(2), Undo(1), Redo(1)]);
        assert_eq!(h.next_undo().unwrap().number, 1);
        assert_eq!(h.next_redo().unwrap().0.number, 2);
        let h = history(&[Restore, Pin, Undo(2), Fork]);
        assert!(matches!(h.next_redo(), Err(Error::NothingToRedo)));
        assert_eq!(h.next_undo().unwrap().number, 4);
    }
}
