//! Retention in the units users think in: whole prompts and whole sessions of agents
//! (`gc --keep-prompts N`, `--keep-sessions N`), and the rule every gc keeps: a kept
//! prompt's turn stays addressable, its last checkpoint kept with its first. What gc
//! removed of each session is recorded ([`GcRemoval`]), so that a turn that is no longer
//! there says gc removed it, and when.
//!
//! A prompt's turn is what [`Session::turn_end`](crate::model::session::Session::turn_end)
//! names: the session's own checkpoints from the prompt's, in the order they were saved,
//! while they belong to it ([`in_turn`]). Kept whole, it is those and every checkpoint on
//! the first-parent line from its end back to its start: a save the user made during the
//! turn, a revert's result filed under one of its tool calls, a safety checkpoint.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use super::Reason;
use crate::model::session::in_turn;
use crate::model::Checkpoint;
use crate::CheckpointId;

/// One prompt's turn, as its session's own checkpoints record it.
#[derive(Debug)]
struct TurnSpan {
    /// The session.
    session: String,
    /// The prompt's checkpoint.
    start: CheckpointId,
    /// When it was saved.
    start_ns: i128,
    /// The turn's last checkpoint (`start` when nothing followed).
    end: CheckpointId,
    /// The session's own checkpoints of the turn, `start` and `end` included.
    own: Vec<CheckpointId>,
}

fn meta<'a>(record: &'a Checkpoint, key: &str) -> Option<&'a str> {
    record
        .meta
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

/// The sessions and turns of a list of checkpoint records.
pub struct Turns<'r> {
    /// Each record by id.
    by_id: HashMap<CheckpointId, &'r Checkpoint>,
    /// Every turn, oldest prompt first.
    turns: Vec<TurnSpan>,
    /// Each session: when its last checkpoint was saved, and every checkpoint of it.
    sessions: BTreeMap<String, (i128, Vec<CheckpointId>)>,
}

impl<'r> Turns<'r> {
    /// The turns and sessions that `records` hold.
    pub fn of(records: impl IntoIterator<Item = (CheckpointId, &'r Checkpoint)>) -> Turns<'r> {
        let by_id: HashMap<CheckpointId, &Checkpoint> = records.into_iter().collect();
        let mut sessions: BTreeMap<String, (i128, Vec<CheckpointId>)> = BTreeMap::new();
        for (id, record) in &by_id {
            if let Some(session) = meta(record, "session") {
                let entry = sessions.entry(session.to_string()).or_default();
                entry.0 = entry.0.max(record.time_ns);
                entry.1.push(*id);
            }
        }
        let mut turns = Vec::new();
        for (session, (_, own)) in &mut sessions {
            own.sort_unstable_by_key(|id| (by_id[id].time_ns, *id));
            let mut open: Option<(TurnSpan, Option<u64>)> = None;
            for id in own.iter() {
                let record = by_id[id];
                if meta(record, "kind") == Some("prompt") {
                    turns.extend(open.take().map(|(turn, _)| turn));
                    let number = meta(record, "prompt").and_then(|p| p.parse().ok());
                    let turn = TurnSpan {
                        session: session.clone(),
                        start: *id,
                        start_ns: record.time_ns,
                        end: *id,
                        own: vec![*id],
                    };
                    open = Some((turn, number));
                    continue;
                }
                match &mut open {
                    Some((turn, number)) if number.is_none_or(|n| in_turn(record, n)) => {
                        turn.end = *id;
                        turn.own.push(*id);
                    }
                    // Numbered for another prompt, whose checkpoint is gone: no turn's.
                    _ => turns.extend(open.take().map(|(turn, _)| turn)),
                }
            }
            turns.extend(open.map(|(turn, _)| turn));
        }
        turns.sort_by_key(|turn| (turn.start_ns, turn.start));
        Turns {
            by_id,
            turns,
            sessions,
        }
    }

    /// Every checkpoint of `turn` kept whole: its own, and those on the first-parent line
    /// from its end back to its start (when that line reaches the start; a turn after a
    /// rewind has only its own).
    fn whole(&self, turn: &TurnSpan) -> Vec<CheckpointId> {
        let mut all = turn.own.clone();
        let mut line = Vec::new();
        let mut at = turn.end;
        while at != turn.start {
            let Some(record) = self.by_id.get(&at) else {
                return all;
            };
            if record.time_ns < turn.start_ns {
                return all;
            }
            line.push(at);
            match record.parents.first() {
                Some(parent) => at = *parent,
                None => return all,
            }
        }
        all.extend(line);
        all
    }

    /// What `--keep-prompts` (`prompts`) and `--keep-sessions` (`sessions`) keep: the
    /// `prompts` newest prompts of any session, each turn whole; every checkpoint of the
    /// `sessions` sessions last active, each of their turns whole.
    pub fn select(
        &self,
        prompts: Option<usize>,
        sessions: Option<usize>,
    ) -> BTreeMap<CheckpointId, Vec<Reason>> {
        let mut kept: BTreeMap<CheckpointId, Vec<Reason>> = BTreeMap::new();
        let mut keep = |ids: Vec<CheckpointId>, reason: Reason| {
            for id in ids {
                let reasons = kept.entry(id).or_default();
                if !reasons.contains(&reason) {
                    reasons.push(reason);
                }
            }
        };
        if let Some(n) = prompts {
            for turn in self.turns.iter().rev().take(n) {
                keep(self.whole(turn), Reason::Prompt);
            }
        }
        if let Some(n) = sessions {
            let mut active: Vec<(&String, &(i128, Vec<CheckpointId>))> =
                self.sessions.iter().collect();
            active.sort_by(|a, b| b.1 .0.cmp(&a.1 .0).then(a.0.cmp(b.0)));
            for (session, (_, own)) in active.into_iter().take(n) {
                keep(own.clone(), Reason::Session);
                for turn in self.turns.iter().filter(|turn| &turn.session == session) {
                    keep(self.whole(turn), Reason::Session);
                }
            }
        }
        kept
    }

    /// The last checkpoints of the turns whose first `is_kept` keeps, where it does not
    /// keep them: what keeps each kept prompt's turn addressable.
    pub fn ends_of_kept_turns(&self, is_kept: impl Fn(CheckpointId) -> bool) -> Vec<CheckpointId> {
        self.turns
            .iter()
            .filter(|turn| is_kept(turn.start) && !is_kept(turn.end))
            .map(|turn| turn.end)
            .collect()
    }
}

/// What one gc removed of one session: what a turn that is no longer there reports.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GcRemoval {
    /// The highest prompt number among the prompt checkpoints it removed, if any.
    pub highest_prompt: Option<u64>,
    /// Whether it removed every checkpoint of the session.
    pub whole: bool,
    /// When (nanoseconds since the epoch).
    pub time_ns: i128,
}

impl GcRemoval {
    /// What a gc that removes the records `removed` and keeps the records `kept` removes
    /// of each session it touches.
    pub fn of<'a>(
        removed: impl IntoIterator<Item = &'a Checkpoint>,
        kept: impl IntoIterator<Item = &'a Checkpoint>,
        time_ns: i128,
    ) -> BTreeMap<String, GcRemoval> {
        let mut out: BTreeMap<String, GcRemoval> = BTreeMap::new();
        for record in removed {
            let Some(session) = meta(record, "session") else {
                continue;
            };
            let entry = out.entry(session.to_string()).or_insert(GcRemoval {
                highest_prompt: None,
                whole: true,
                time_ns,
            });
            if meta(record, "kind") == Some("prompt") {
                let number = meta(record, "prompt").and_then(|p| p.parse::<u64>().ok());
                entry.highest_prompt = entry.highest_prompt.max(number);
            }
        }
        for record in kept {
            if let Some(entry) = meta(record, "session").and_then(|s| out.get_mut(s)) {
                entry.whole = false;
            }
        }
        out.retain(|_, removal| removal.whole || removal.highest_prompt.is_some());
        out
    }

    /// Of a session's removals (oldest first), the one that took prompt `n`'s
    /// checkpoint: the first that removed the whole session or a prompt numbered `n` or
    /// higher.
    pub fn of_prompt(removals: &[GcRemoval], n: u64) -> Option<&GcRemoval> {
        removals
            .iter()
            .find(|r| r.whole || r.highest_prompt.is_some_and(|h| h >= n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(session: &str, kind: &str, prompt: u64, time_ns: i128, parent: u128) -> Checkpoint {
        Checkpoint {
            time_ns,
            parents: vec![CheckpointId(parent)],
            meta: vec![
                ("session".to_string(), session.to_string()),
                ("prompt".to_string(), prompt.to_string()),
                ("kind".to_string(), kind.to_string()),
            ],
            ..Checkpoint::default()
        }
    }

    fn plain(time_ns: i128, parent: u128) -> Checkpoint {
        Checkpoint {
            time_ns,
            parents: vec![CheckpointId(parent)],
            ..Checkpoint::default()
        }
    }

    /// Session s: prompt 1 (ids 1, 2), a save by hand (3), prompt 2 (4, 5, a revert's
    /// result 6 between its tool calls, 7); session t: prompt 1 (8, 9), the newest.
    fn history() -> Vec<(CheckpointId, Checkpoint)> {
        let list = [
            (1, record("s", "prompt", 1, 10, 0)),
            (2, record("s", "tool", 1, 11, 1)),
            (3, plain(12, 2)),
            (4, record("s", "prompt", 2, 13, 3)),
            (5, record("s", "tool", 2, 14, 4)),
            (6, plain(15, 5)),
            (7, record("s", "tool", 2, 16, 6)),
            (8, record("t", "prompt", 1, 17, 7)),
            (9, record("t", "tool", 1, 18, 8)),
        ];
        list.into_iter()
            .map(|(id, record)| (CheckpointId(id), record))
            .collect()
    }

    fn ids(kept: &BTreeMap<CheckpointId, Vec<Reason>>) -> Vec<u128> {
        kept.keys().map(|id| id.0).collect()
    }

    #[test]
    fn prompts_and_sessions_are_kept_whole() {
        let records = history();
        let turns = Turns::of(records.iter().map(|(id, r)| (*id, r)));
        assert_eq!(ids(&turns.select(Some(1), None)), [8, 9]);
        // Prompt 2's turn holds the revert's result on its line, not the save before it.
        assert_eq!(ids(&turns.select(Some(2), None)), [4, 5, 6, 7, 8, 9]);
        assert_eq!(ids(&turns.select(None, Some(1))), [8, 9]);
        assert_eq!(ids(&turns.select(None, Some(2))), [1, 2, 4, 5, 6, 7, 8, 9]);
        assert!(turns.select(Some(0), Some(0)).is_empty());
    }

    #[test]
    fn a_kept_prompt_keeps_its_turns_end_even_without_the_next_prompt() {
        let mut records = history();
        // Prompt 2's checkpoint is gone: its steps end no turn of prompt 1.
        records.retain(|(id, _)| id.0 != 4);
        let turns = Turns::of(records.iter().map(|(id, r)| (*id, r)));
        assert_eq!(turns.ends_of_kept_turns(|id| id.0 == 1), [CheckpointId(2)]);
        assert!(turns
            .ends_of_kept_turns(|id| id.0 == 1 || id.0 == 2)
            .is_empty());
    }

    #[test]
    fn removals_name_the_highest_prompt_and_whole_sessions() {
        let records = history();
        let (removed, kept): (Vec<_>, Vec<_>) =
            records.iter().partition(|(id, _)| id.0 <= 5 || id.0 == 8);
        let removals = GcRemoval::of(
            removed.iter().map(|(_, r)| r),
            kept.iter().map(|(_, r)| r),
            99,
        );
        assert_eq!(removals["s"].highest_prompt, Some(2));
        assert!(!removals["s"].whole);
        assert_eq!(removals["t"].highest_prompt, Some(1));
        let list = [removals["s"].clone()];
        assert_eq!(GcRemoval::of_prompt(&list, 2), Some(&list[0]));
        assert_eq!(GcRemoval::of_prompt(&list, 3), None);
    }
}
