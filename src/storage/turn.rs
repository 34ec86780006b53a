//! Revisions that name a change rather than one checkpoint: a prompt's turn
//! (`<session>:turn<N>`, from the checkpoint saved as prompt N was submitted to the last
//! checkpoint of its turn) and a range `A..B`. `show`, `diff` and `revert` take them;
//! wherever one checkpoint is expected, a turn names its end ([`Snapshot::resolve`]).
//! Also what gc removed of each session, which tells a turn that is no longer there
//! from one that never was.

use super::tables::GC_REMOVALS;
use super::Snapshot;
use crate::format::codec;
use crate::model::command_checkpoint::made_by_call;
use crate::model::retention::GcRemoval;
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

    /// What each gc that removed some of `session`'s checkpoints removed, oldest first.
    pub fn gc_removals(&self, session: &str) -> Result<Vec<GcRemoval>> {
        let Some(table) = self.optional(GC_REMOVALS)? else {
            return Ok(Vec::new());
        };
        match table.get(session)? {
            Some(row) => codec::decode(row.value(), "gc removals"),
            None => Ok(Vec::new()),
        }
    }

    /// `error`, the failure to resolve a session revision, told as what it is when gc
    /// removed what the revision names: a prompt or turn whose prompt checkpoint went, a
    /// session all of whose checkpoints went. Any other error is returned as it is.
    pub(super) fn explain_removed(&self, error: Error) -> Result<Error> {
        match error {
            Error::NotInSession {
                session,
                what,
                prompts,
            } => {
                let number = ["prompt", "turn"]
                    .iter()
                    .find_map(|word| what.strip_prefix(word))
                    .and_then(PromptNumber::parse);
                let removals = self.gc_removals(&session)?;
                let removal = match number {
                    Some(PromptNumber::Nth(n)) => GcRemoval::of_prompt(&removals, n),
                    _ => None,
                };
                Ok(match removal {
                    Some(removal) => Error::RemovedByGc {
                        session,
                        what,
                        highest: removal.highest_prompt.unwrap_or_default(),
                        at: utc_seconds(removal.time_ns),
                    },
                    None => Error::NotInSession {
                        session,
                        what,
                        prompts,
                    },
                })
            }
            Error::UnknownSession(prefix) => {
                let Some(table) = self.optional(GC_REMOVALS)? else {
                    return Ok(Error::UnknownSession(prefix));
                };
                let mut gone = Vec::new();
                for row in table.range(prefix.as_str()..)? {
                    let (session, removals) = row?;
                    if !session.value().starts_with(prefix.as_str()) {
                        break;
                    }
                    let removals: Vec<GcRemoval> = codec::decode(removals.value(), "gc removals")?;
                    if let Some(whole) = removals.iter().rev().find(|r| r.whole) {
                        gone.push((session.value().to_string(), whole.time_ns));
                    }
                }
                Ok(match gone.as_slice() {
                    [(session, time_ns)] => Error::SessionRemovedByGc {
                        session: session.clone(),
                        at: utc_seconds(*time_ns),
                    },
                    _ => Error::UnknownSession(prefix),
                })
            }
            other => Ok(other),
        }
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

/// `time_ns` as an RFC 3339 time in UTC, to the second.
fn utc_seconds(time_ns: i128) -> String {
    let seconds = i64::try_from(time_ns.div_euclid(1_000_000_000)).unwrap_or(0);
    jiff::Timestamp::from_second(seconds)
        .map(|t| t.to_string())
        .unwrap_or_else(|_| "an unknown time".to_string())
}
