//! Revisions that name a change rather than one checkpoint: a prompt's turn
//! (`<session>:turn<N>`, from the checkpoint saved as prompt N was submitted to the last
//! checkpoint of its turn) and a range `A..B`. `show`, `diff` and `revert` take them;
//! wherever one checkpoint is expected, a turn names its end ([`Snapshot::resolve`]).

use super::Snapshot;
use crate::model::command_checkpoint::made_by_call;
use crate::model::revision;
use crate::model::session::PromptNumber;
use crate::{CheckpointId, Error, Result};

/// A prompt's turn: everything the agent did for one prompt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Turn {
    /// The checkpoint saved as the prompt was submitted: the worktree before the turn.
    pub start: CheckpointId,
    /// The last checkpoint the session saved before its next prompt (its last of all,
    /// for its last prompt): the worktree the turn left. `start` itself when the turn
    /// saved nothing.
    pub end: CheckpointId,
}

/// The change a revision names, from one checkpoint to another.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChangeRange {
    /// The old side: `None` for a first checkpoint, which changed everything from
    /// nothing.
    pub from: Option<CheckpointId>,
    /// The new side.
    pub to: CheckpointId,
    /// Whether the revision named a prompt's turn.
    pub turn: bool,
}

impl Snapshot<'_> {
    /// The turn `rev` names, if it is a turn revision (`<session>:turn<N>`,
    /// `<session>:turn-<K>` for the K-th prompt from the end, or either behind
    /// `<remote>:`); `None` for any other revision. A turn takes no `~` or `^`.
    pub fn resolve_turn(&self, rev: &str) -> Result<Option<Turn>> {
        let parsed = revision::parse(rev)?;
        let Some((head, selector)) = parsed.base.rsplit_once(':') else {
            return Ok(None);
        };
        let Some(number) = selector.strip_prefix("turn") else {
            return Ok(None);
        };
        if PromptNumber::parse(number).is_none() {
            return Ok(None);
        }
        if !parsed.steps.is_empty() {
            return Err(Error::MalformedRevision {
                rev: rev.to_string(),
                why: "a turn names two checkpoints; name one of them with ':prompt<N>' or ':turn<N>' alone to step back from it".to_string(),
            });
        }
        // Both ends go through `resolve`, so a turn is found among exactly the
        // checkpoints a prompt revision is (local ones, or those of `<remote>:`).
        let end = self.resolve(rev)?;
        let start = self.resolve(&format!("{head}:prompt{number}"))?;
        Ok(Some(Turn { start, end }))
    }

    /// The change `rev` names: a turn's (from its start to its end), `A..B`'s (from A
    /// to B), or one checkpoint's (from its first parent to it, [`Snapshot::step_parent`]). What "undo the change
    /// of `rev`" and "show what `rev` did" work on.
    pub fn resolve_change(&self, rev: &str) -> Result<ChangeRange> {
        if let Some(range) = crate::model::revision::parse_range(rev)? {
            return Ok(ChangeRange {
                from: Some(self.resolve(range.from)?),
                to: self.resolve(range.to)?,
                turn: false,
            });
        }
        if let Some(turn) = self.resolve_turn(rev)? {
            return Ok(ChangeRange {
                from: Some(turn.start),
                to: turn.end,
                turn: true,
            });
        }
        let to = self.resolve(rev)?;
        Ok(ChangeRange {
            from: self.step_parent(to)?,
            to,
            turn: false,
        })
    }

    /// What checkpoint `id`'s step started from: its first parent, or, for the step of a
    /// tool call that filed a command's result under its session (an agent's revert
    /// through our MCP server, [`made_by_call`]), that result's first parent, so that
    /// the step is what the call did.
    pub fn step_parent(&self, id: CheckpointId) -> Result<Option<CheckpointId>> {
        let record = self.checkpoint(id)?;
        Ok(match made_by_call(&record) {
            Some(made) => self.checkpoint(made)?.parents.first().copied(),
            None => record.parents.first().copied(),
        })
    }
}
