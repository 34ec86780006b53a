//! Agent sessions, as the checkpoints their hooks saved record them: each carries
//! `agent`, `session`, `kind` and `prompt` metadata (see `agents::event`). A session is never
//! stored on its own; it is what those records say.

use std::collections::BTreeMap;

use crate::error::Candidate;
use crate::model::Checkpoint;
use crate::{CheckpointId, Error, Result};

/// The `kind` of the checkpoint a hook saves when the user submits a prompt, whatever
/// the agent calls that event.
const PROMPT_KIND: &str = "prompt";

/// The `kind` of the checkpoint a hook saves after a tool call: the one
/// `<session>:<tool call>` names.
pub const TOOL_KIND: &str = "tool";

/// The `kind` of the checkpoint a hook saves just before a tool call runs (an event
/// such as Claude Code's `PreToolUse`): with the one after it, it brackets what the call
/// did.
pub const BEFORE_TOOL_KIND: &str = "before-tool";

/// Metadata key: the file a tool call's payload names, relative to the worktree's top,
/// as the agent gave it and whether or not the call changed it (unlike `path`, which
/// falls back to the first path changed). What `restore --only-session` counts as the
/// session's own at a tool call that no hook before it brackets.
pub const NAMED_PATH_KEY: &str = "named_path";

/// Metadata key: every file a tool call's payload names, as a JSON array of paths
/// relative to the worktree's top, for a call that names more than one (an
/// `apply_patch` of several files); [`NAMED_PATH_KEY`] holds the first of them.
pub const NAMED_PATHS_KEY: &str = "named_paths";

/// The files a tool call's checkpoint `record` says its payload named: the list of
/// [`NAMED_PATHS_KEY`], else the one [`NAMED_PATH_KEY`] (every record before lists
/// existed, and a call naming one file), else none.
pub fn named_paths(record: &Checkpoint) -> Vec<Vec<u8>> {
    let listed = meta(record, NAMED_PATHS_KEY)
        .and_then(|list| serde_json::from_str::<Vec<String>>(list).ok());
    match listed {
        Some(paths) => paths.into_iter().map(String::into_bytes).collect(),
        None => meta(record, NAMED_PATH_KEY)
            .map(|path| vec![path.as_bytes().to_vec()])
            .unwrap_or_default(),
    }
}

/// The shortest session id prefix [`Session::short_id`] gives, as checkpoint ids show at
/// least 7 digits.
const MIN_SHORT_SESSION: usize = 8;

/// One agent session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Session {
    /// The agent (`claude`, …).
    pub agent: String,
    /// The agent's session id.
    pub id: String,
    /// The first line of the first prompt, where a checkpoint of it is left.
    pub first_prompt: Option<String>,
    /// Prompts submitted in it.
    pub prompts: u64,
    /// Checkpoints its hooks saved.
    pub checkpoints: u64,
    /// When its first and last checkpoints were saved (nanoseconds since the epoch).
    pub first_ns: i128,
    /// See `first_ns`.
    pub last_ns: i128,
}

fn meta<'a>(record: &'a Checkpoint, key: &str) -> Option<&'a str> {
    record
        .meta
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

fn is_prompt_of(record: &Checkpoint, session: &str) -> bool {
    meta(record, "session") == Some(session) && meta(record, "kind") == Some(PROMPT_KIND)
}

/// The session and prompt number `record` was saved for, when it is a prompt's
/// checkpoint that carries its number: what the store's per-session index of prompt
/// numbers is kept from.
pub fn numbered_prompt(record: &Checkpoint) -> Option<(&str, u64)> {
    if meta(record, "kind") != Some(PROMPT_KIND) {
        return None;
    }
    let number = meta(record, "prompt")?.parse().ok()?;
    Some((meta(record, "session")?, number))
}

/// The first characters of session id `id` that a message shows when it has no list of
/// sessions to make it unique against ([`Session::short_id`] grows it until it is).
pub fn abbreviate(id: &str) -> &str {
    let mut len = MIN_SHORT_SESSION.min(id.len());
    while !id.is_char_boundary(len) {
        len += 1;
    }
    &id[..len]
}

impl Session {
    /// Every session the records name, the most recently active first.
    pub fn all(records: &[(CheckpointId, Checkpoint)]) -> Vec<Session> {
        let mut by_id: BTreeMap<&str, Session> = BTreeMap::new();
        let mut first_prompt_at: BTreeMap<&str, i128> = BTreeMap::new();
        for (_, record) in records {
            let Some(id) = meta(record, "session") else {
                continue;
            };
            let session = by_id.entry(id).or_insert_with(|| Session {
                agent: meta(record, "agent").unwrap_or("unknown").to_string(),
                id: id.to_string(),
                first_prompt: None,
                prompts: 0,
                checkpoints: 0,
                first_ns: record.time_ns,
                last_ns: record.time_ns,
            });
            session.checkpoints += 1;
            session.first_ns = session.first_ns.min(record.time_ns);
            session.last_ns = session.last_ns.max(record.time_ns);
            if meta(record, "kind") == Some(PROMPT_KIND) {
                session.prompts += 1;
                let earliest = first_prompt_at.entry(id).or_insert(i128::MAX);
                if record.time_ns < *earliest {
                    *earliest = record.time_ns;
                    session.first_prompt = Some(prompt_text(&record.message));
                }
            }
        }
        let mut out: Vec<Session> = by_id.into_values().collect();
        out.sort_by(|a, b| b.last_ns.cmp(&a.last_ns).then(a.id.cmp(&b.id)));
        out
    }

    /// The shortest prefix of this session's id, at least 8 characters, that no other
    /// session of `all` begins with: what `sessions` shows, and a prefix that names this
    /// session in a revision.
    pub fn short_id<'a>(&'a self, all: &[Session]) -> &'a str {
        let id = self.id.as_str();
        let mut len = abbreviate(id).len();
        while len < id.len()
            && all
                .iter()
                .any(|other| other.id != id && other.id.starts_with(&id[..len]))
        {
            len += 1;
        }
        while !id.is_char_boundary(len) {
            len += 1;
        }
        &id[..len]
    }

    /// How many prompts of `session` the records hold.
    pub fn prompts_in(records: &[(CheckpointId, Checkpoint)], session: &str) -> u64 {
        records
            .iter()
            .filter(|(_, record)| is_prompt_of(record, session))
            .count() as u64
    }

    /// The session whose id `prefix` begins, if exactly one does.
    pub fn find(records: &[(CheckpointId, Checkpoint)], prefix: &str) -> Result<String> {
        let mut found: Vec<&str> = records
            .iter()
            .filter_map(|(_, record)| meta(record, "session"))
            .filter(|id| id.starts_with(prefix))
            .collect();
        found.sort_unstable();
        found.dedup();
        match found.as_slice() {
            [one] => Ok(one.to_string()),
            [] => Err(Error::UnknownSession(prefix.to_string())),
            many => {
                let sessions = Session::all(records);
                let candidates = many
                    .iter()
                    .take(Candidate::MAX)
                    .filter_map(|&id| sessions.iter().find(|s| s.id == id))
                    .map(|s| Candidate {
                        name: s.id.clone(),
                        time_ns: s.first_ns,
                        about: match &s.first_prompt {
                            Some(prompt) => format!("{}: {prompt}", s.agent),
                            None => s.agent.clone(),
                        },
                    })
                    .collect();
                Err(Error::AmbiguousRevision {
                    rev: prefix.to_string(),
                    noun: "session",
                    candidates,
                    more: many.len() > Candidate::MAX,
                })
            }
        }
    }

    /// Who belongs to `session`: every checkpoint whose `session` metadata is its id,
    /// whatever its `kind` (a hook's prompt, tool and other saves alike, and a save made
    /// by hand with `--meta session=<id>`). `drop --session` removes exactly these.
    pub fn members<'a>(
        records: &'a [(CheckpointId, Checkpoint)],
        session: &'a str,
    ) -> impl Iterator<Item = CheckpointId> + 'a {
        records
            .iter()
            .filter(move |(_, record)| {
                record
                    .meta
                    .iter()
                    .any(|(key, value)| key == "session" && value == session)
            })
            .map(|(id, _)| *id)
    }

    /// The checkpoint saved when prompt `n` of `session` was submitted: the worktree just
    /// before the agent worked on it.
    pub fn prompt(
        records: &[(CheckpointId, Checkpoint)],
        session: &str,
        n: u64,
    ) -> Option<CheckpointId> {
        let number = n.to_string();
        records
            .iter()
            .filter(|(_, record)| {
                is_prompt_of(record, session) && meta(record, "prompt") == Some(&number)
            })
            .min_by_key(|(id, record)| (record.time_ns, *id))
            .map(|(id, _)| *id)
    }

    /// The checkpoint saved after the tool call whose id `prefix` begins, in `session`.
    pub fn tool_call(
        records: &[(CheckpointId, Checkpoint)],
        session: &str,
        prefix: &str,
    ) -> Result<Option<CheckpointId>> {
        let mut found: Vec<(CheckpointId, &Checkpoint, &str)> = records
            .iter()
            .filter(|(_, record)| meta(record, "session") == Some(session))
            // The checkpoint after the call, not one a `PreToolUse` hook saved before it
            // under the same call id.
            .filter(|(_, record)| meta(record, "kind") == Some(TOOL_KIND))
            .filter_map(|(id, record)| Some((*id, record, meta(record, "tool_use_id")?)))
            .filter(|(_, _, call)| call.starts_with(prefix))
            .collect();
        found.sort_unstable_by_key(|(_, _, call)| *call);
        found.dedup_by_key(|(_, _, call)| *call);
        match found.as_slice() {
            [] => Ok(None),
            [(id, _, _)] => Ok(Some(*id)),
            many => Err(Error::AmbiguousRevision {
                rev: prefix.to_string(),
                noun: "tool call",
                candidates: many
                    .iter()
                    .take(Candidate::MAX)
                    .map(|(_, record, call)| Candidate {
                        name: call.to_string(),
                        time_ns: record.time_ns,
                        about: record.message.lines().next().unwrap_or("").to_string(),
                    })
                    .collect(),
                more: many.len() > Candidate::MAX,
            }),
        }
    }
}

impl Session {
    /// The highest prompt number recorded for `session`: its last prompt.
    pub fn last_prompt(records: &[(CheckpointId, Checkpoint)], session: &str) -> Option<u64> {
        records
            .iter()
            .filter(|(_, record)| is_prompt_of(record, session))
            .filter_map(|(_, record)| meta(record, "prompt")?.parse::<u64>().ok())
            .max()
    }

    /// The prompt number a selector's `<N>` or `-<K>` names (`-1` is the last prompt).
    pub fn prompt_number(
        records: &[(CheckpointId, Checkpoint)],
        session: &str,
        number: PromptNumber,
    ) -> Option<u64> {
        match number {
            PromptNumber::Nth(n) => Some(n),
            PromptNumber::FromEnd(k) => {
                let last = Self::last_prompt(records, session)?;
                (k >= 1 && k <= last).then(|| last + 1 - k)
            }
        }
    }

    /// The last checkpoint of prompt `n`'s turn: the last checkpoint of `session` saved
    /// before the session's next prompt checkpoint, or its last checkpoint of all for its
    /// last prompt; the prompt checkpoint itself when nothing followed it. The session's
    /// own checkpoints are followed in the order they were saved, not by prompt number,
    /// so a prompt submitted after a rewind ends the turn before it as any other does;
    /// a checkpoint numbered for another prompt ends it too, so that a turn ends where it
    /// ended when gc has removed the next prompt's checkpoint ([`in_turn`]).
    pub fn turn_end(
        records: &[(CheckpointId, Checkpoint)],
        session: &str,
        n: u64,
    ) -> Option<CheckpointId> {
        let start = Self::prompt(records, session, n)?;
        let mut own: Vec<(i128, CheckpointId, &Checkpoint)> = records
            .iter()
            .filter(|(_, record)| meta(record, "session") == Some(session))
            .map(|(id, record)| (record.time_ns, *id, record))
            .collect();
        own.sort_unstable_by_key(|(time, id, _)| (*time, *id));
        let at = own.iter().position(|(_, id, _)| *id == start)?;
        let end = own[at + 1..]
            .iter()
            .take_while(|(_, _, record)| in_turn(record, n))
            .last()
            .map_or(start, |(_, id, _)| *id);
        Some(end)
    }
}

/// Whether `record`, one of a session's own checkpoints saved after prompt `n`'s
/// (and after every one of the turn before it), still belongs to prompt `n`'s turn:
/// it is no prompt's checkpoint, and it carries no other prompt's number (a step made
/// before any prompt carries none).
pub fn in_turn(record: &Checkpoint, n: u64) -> bool {
    let number = meta(record, "prompt").and_then(|p| p.parse::<u64>().ok());
    meta(record, "kind") != Some(PROMPT_KIND) && number.is_none_or(|p| p == n)
}

/// How a session revision numbers a prompt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PromptNumber {
    /// Prompt N, counted from 1.
    Nth(u64),
    /// The K-th prompt from the end: 1 is the last.
    FromEnd(u64),
}

impl PromptNumber {
    /// Reads `<N>` or `-<K>` (the text after `prompt` or `turn`).
    pub fn parse(text: &str) -> Option<PromptNumber> {
        match text.strip_prefix('-') {
            Some(k) if k.bytes().all(|b| b.is_ascii_digit()) => {
                k.parse().ok().map(PromptNumber::FromEnd)
            }
            None if text.bytes().all(|b| b.is_ascii_digit()) => {
                text.parse().ok().map(PromptNumber::Nth)
            }
            _ => None,
        }
    }
}

/// The prompt's text in a prompt checkpoint's message (`before prompt 3: text`): its
/// first line without the hook's prefix (a message without one is given as it is).
pub fn prompt_text(message: &str) -> String {
    let line = message.lines().next().unwrap_or_default();
    match line.split_once(": ") {
        Some((head, text)) if head.starts_with("before prompt") => text.to_string(),
        _ => line.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(session: &str, event: &str, prompt: Option<u64>, time_ns: i128) -> Checkpoint {
        let mut meta = vec![
            ("agent".to_string(), "claude".to_string()),
            ("session".to_string(), session.to_string()),
        ];
        if let Some(n) = prompt {
            meta.push(("prompt".to_string(), n.to_string()));
        }
        meta.push(("kind".to_string(), event.to_string()));
        Checkpoint {
            time_ns,
            message: format!("before prompt {}: do thing {time_ns}", prompt.unwrap_or(0)),
            meta,
            ..Checkpoint::default()
        }
    }

    #[test]
    fn sessions_count_prompts_and_resolve_by_unique_prefix() {
        let records = vec![
            (CheckpointId(1), record("abc1", PROMPT_KIND, Some(1), 10)),
            (CheckpointId(2), record("abc1", "tool", Some(1), 11)),
            (CheckpointId(3), record("abc1", PROMPT_KIND, Some(2), 12)),
            (CheckpointId(4), record("abd9", PROMPT_KIND, Some(1), 20)),
        ];
        let all = Session::all(&records);
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].id, "abd9");
        assert_eq!(
            (
                all[1].prompts,
                all[1].checkpoints,
                all[1].first_ns,
                all[1].last_ns
            ),
            (2, 3, 10, 12)
        );
        assert_eq!(all[1].first_prompt.as_deref(), Some("do thing 10"));
        assert_eq!(Session::prompts_in(&records, "abc1"), 2);
        // Shorter than the minimum: the whole id.
        assert_eq!(all[0].short_id(&all), "abd9");
        assert_eq!(
            Session::members(&records, "abc1").collect::<Vec<_>>(),
            [CheckpointId(1), CheckpointId(2), CheckpointId(3)]
        );
        match Session::find(&records, "ab") {
            Err(Error::AmbiguousRevision {
                noun, candidates, ..
            }) => {
                assert_eq!(noun, "session");
                let named: Vec<(&str, i128)> = candidates
                    .iter()
                    .map(|c| (c.name.as_str(), c.time_ns))
                    .collect();
                assert_eq!(named, [("abc1", 10), ("abd9", 20)]);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(Session::find(&records, "abc").unwrap(), "abc1");
        assert_eq!(Session::find(&records, "abd").unwrap(), "abd9");
        assert!(Session::find(&records, "zz").is_err());
        assert_eq!(Session::prompt(&records, "abc1", 2), Some(CheckpointId(3)));
        assert_eq!(Session::prompt(&records, "abc1", 3), None);
    }

    #[test]
    fn short_ids_grow_until_unique() {
        let records = vec![
            (
                CheckpointId(1),
                record("4f2a9c1d-aaaa", PROMPT_KIND, Some(1), 10),
            ),
            (
                CheckpointId(2),
                record("4f2a9c1d-abcd", PROMPT_KIND, Some(1), 11),
            ),
            (
                CheckpointId(3),
                record("77d0b52e-0000", PROMPT_KIND, Some(1), 12),
            ),
        ];
        let all = Session::all(&records);
        let shorts: Vec<&str> = all.iter().map(|s| s.short_id(&all)).collect();
        assert_eq!(shorts, ["77d0b52e", "4f2a9c1d-ab", "4f2a9c1d-aa"]);
    }

    #[test]
    fn a_turn_ends_before_the_sessions_next_prompt_checkpoint_whatever_its_number() {
        let records = vec![
            (CheckpointId(1), record("s", PROMPT_KIND, Some(1), 10)),
            (CheckpointId(2), record("s", TOOL_KIND, Some(1), 11)),
            (CheckpointId(3), record("other", TOOL_KIND, Some(1), 12)),
            (CheckpointId(4), record("s", TOOL_KIND, Some(1), 13)),
            (CheckpointId(5), record("s", PROMPT_KIND, Some(2), 14)),
            (CheckpointId(6), record("s", PROMPT_KIND, Some(3), 15)),
            (CheckpointId(7), record("s", TOOL_KIND, Some(3), 16)),
            // After a rewind to prompt 2, prompt 4 ends turn 3.
            (CheckpointId(8), record("s", PROMPT_KIND, Some(4), 17)),
            (CheckpointId(9), record("s", TOOL_KIND, Some(4), 18)),
        ];
        assert_eq!(Session::turn_end(&records, "s", 1), Some(CheckpointId(4)));
        assert_eq!(Session::turn_end(&records, "s", 2), Some(CheckpointId(5)));
        assert_eq!(Session::turn_end(&records, "s", 3), Some(CheckpointId(7)));
        assert_eq!(Session::turn_end(&records, "s", 4), Some(CheckpointId(9)));
        assert_eq!(Session::turn_end(&records, "s", 5), None);
        assert_eq!(Session::last_prompt(&records, "s"), Some(4));
        let last = PromptNumber::parse("-1").unwrap();
        assert_eq!(Session::prompt_number(&records, "s", last), Some(4));
        let first = PromptNumber::FromEnd(4);
        assert_eq!(Session::prompt_number(&records, "s", first), Some(1));
        assert_eq!(
            Session::prompt_number(&records, "s", PromptNumber::FromEnd(5)),
            None
        );
        assert_eq!(PromptNumber::parse("3"), Some(PromptNumber::Nth(3)));
        assert_eq!(PromptNumber::parse("x"), None);
        assert_eq!(PromptNumber::parse("-"), None);
        assert_eq!(PromptNumber::parse(""), None);
    }
}
