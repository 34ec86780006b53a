//! What tab completion offers for a word: revisions, branches, sessions and attachment
//! names, read from a [`Snapshot`] of a store its caller opened with
//! `Workspace::open_read_store_now` (read-only, never waiting, never writing). The
//! binary's completion glue (`src/bin/git-checkpoint/complete.rs`) hands these to the
//! shells.
//!
//! Every list is bounded: a store of thousands of checkpoints offers its
//! [`RECENT_CHECKPOINTS`] newest ids, not all of them.

use std::collections::BTreeMap;

use crate::model::session::{Session, TOOL_KIND};
use crate::model::Checkpoint;
use crate::storage::Snapshot;
use crate::{CheckpointId, Result};

/// How many of the newest checkpoints' ids a revision completion offers.
pub const RECENT_CHECKPOINTS: usize = 50;

/// How many of the most recently active sessions a revision completion offers as
/// `<session>:`.
const RECENT_SESSIONS: usize = 20;

/// The longest description shown beside a candidate (zsh and fish show them).
const HELP_CHARS: usize = 60;

/// One word a completion offers, with what it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// The word.
    pub value: String,
    /// One short line describing it (a checkpoint's message, a session's first prompt).
    pub help: Option<String>,
}

impl Candidate {
    fn new(value: impl Into<String>, help: impl AsRef<str>) -> Candidate {
        Candidate {
            value: value.into(),
            help: Some(one_line(help.as_ref())),
        }
    }
}

/// Revisions that start with `current`: `@`, local branches, fetched
/// `<remote>/<branch>`es, `<session>:` for the recently active sessions and the short
/// ids of the [`RECENT_CHECKPOINTS`] newest checkpoints (their message as help). A word
/// with a `:` completes the session revisions (`<session>:prompt<N>`, `turn<N>`, tool
/// call ids) of the session its part before the `:` begins.
pub fn revisions(snapshot: &Snapshot, current: &str) -> Result<Vec<Candidate>> {
    let records = snapshot.checkpoints()?;
    if let Some((session, _)) = current.split_once(':') {
        let mut out = session_revisions(&records, session);
        out.retain(|c| c.value.starts_with(current));
        return Ok(out);
    }
    let mut out = vec![Candidate::new("@", "the current checkpoint")];
    out.extend(branches(snapshot, "")?);
    for (name, _) in snapshot.remote_branches()? {
        out.push(Candidate::new(name, "fetched branch"));
    }
    let sessions = Session::all(&records);
    for session in sessions.iter().take(RECENT_SESSIONS) {
        let about = session.first_prompt.as_deref().unwrap_or_default();
        out.push(Candidate::new(
            format!("{}:", session.short_id(&sessions)),
            format!("{} session: {about}", session.agent),
        ));
    }
    let mut newest: Vec<&(CheckpointId, Checkpoint)> = records.iter().collect();
    newest.sort_by(|a, b| b.1.time_ns.cmp(&a.1.time_ns).then(a.0.cmp(&b.0)));
    for (id, record) in newest.into_iter().take(RECENT_CHECKPOINTS) {
        out.push(Candidate::new(snapshot.short_id(*id)?, &record.message));
    }
    out.retain(|c| c.value.starts_with(current));
    Ok(out)
}

/// Local branches that start with `current`.
pub fn branches(snapshot: &Snapshot, current: &str) -> Result<Vec<Candidate>> {
    let head = snapshot.head()?;
    Ok(snapshot
        .branches()?
        .into_iter()
        .filter(|(name, _)| name.starts_with(current))
        .map(|(name, _)| {
            let current = matches!(&head, crate::model::Head::Branch(b) if *b == name);
            Candidate::new(name, if current { "current branch" } else { "branch" })
        })
        .collect())
}

/// Session id prefixes (as `sessions` shows them) that start with `current`, the most
/// recently active first.
pub fn sessions(snapshot: &Snapshot, current: &str) -> Result<Vec<Candidate>> {
    let records = snapshot.checkpoints()?;
    let sessions = Session::all(&records);
    Ok(sessions
        .iter()
        .filter(|s| s.id.starts_with(current))
        .map(|s| {
            let about = s.first_prompt.as_deref().unwrap_or_default();
            Candidate::new(s.short_id(&sessions), format!("{}: {about}", s.agent))
        })
        .collect())
}

/// The names of the files attached to the checkpoint `rev` names that start with
/// `current`; none when `rev` names no checkpoint.
pub fn attachments(snapshot: &Snapshot, rev: &str, current: &str) -> Result<Vec<Candidate>> {
    let Ok(id) = snapshot.resolve(rev) else {
        return Ok(Vec::new());
    };
    Ok(snapshot
        .checkpoint(id)?
        .attachments
        .into_iter()
        .filter(|a| a.name.starts_with(current))
        .map(|a| Candidate::new(a.name, format!("{} bytes", a.size)))
        .collect())
}

/// The session revisions of the session whose id starts with `typed` (spelled with
/// `typed`, as the user began it): `<typed>:prompt<N>` and `<typed>:turn<N>` for every
/// prompt (the prompt's text as help), then `<typed>:<tool call id>` for its
/// [`RECENT_CHECKPOINTS`] latest tool calls (the checkpoint's message as help); none when
/// `typed` begins more than one session's id.
fn session_revisions(records: &[(CheckpointId, Checkpoint)], typed: &str) -> Vec<Candidate> {
    let mut prompts: BTreeMap<(&str, u64), &str> = BTreeMap::new();
    let mut calls: BTreeMap<&str, (i128, &str, &str)> = BTreeMap::new();
    for (_, record) in records {
        let meta = |key: &str| {
            record
                .meta
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.as_str())
        };
        let Some(session) = meta("session").filter(|s| s.starts_with(typed)) else {
            continue;
        };
        match (meta("kind"), meta("prompt"), meta("tool_use_id")) {
            (Some("prompt"), Some(n), _) => {
                if let Ok(n) = n.parse::<u64>() {
                    prompts.entry((session, n)).or_insert(&record.message);
                }
            }
            (Some(TOOL_KIND), _, Some(call)) => {
                calls
                    .entry(call)
                    .or_insert((record.time_ns, session, &record.message));
            }
            _ => {}
        }
    }
    let mut sessions = prompts
        .keys()
        .map(|(session, _)| *session)
        .chain(calls.values().map(|(_, session, _)| *session));
    let first = sessions.next();
    if sessions.any(|other| Some(other) != first) {
        // What was typed begins several sessions' ids: the revision would be ambiguous.
        return Vec::new();
    }
    let prompt_text = |message: &str| -> String {
        message
            .split_once(": ")
            .map_or(message, |(_, text)| text)
            .to_string()
    };
    let mut out: Vec<Candidate> = prompts
        .iter()
        .map(|((_, n), message)| Candidate::new(format!("{typed}:prompt{n}"), prompt_text(message)))
        .collect();
    out.extend(prompts.iter().map(|((_, n), message)| {
        Candidate::new(
            format!("{typed}:turn{n}"),
            format!("turn of prompt {n}: {}", prompt_text(message)),
        )
    }));
    let mut calls: Vec<(&str, (i128, &str, &str))> = calls.into_iter().collect();
    calls.sort_by_key(|(call, (time, _, _))| (*time, *call));
    let latest = calls.len().saturating_sub(RECENT_CHECKPOINTS);
    out.extend(
        calls[latest..]
            .iter()
            .map(|(call, (_, _, message))| Candidate::new(format!("{typed}:{call}"), message)),
    );
    out
}

/// The first line of `text`, control characters made spaces (a tab would split a fish
/// candidate), cut to [`HELP_CHARS`].
fn one_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    let mut out: String = line
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .take(HELP_CHARS)
        .collect();
    if line.chars().count() > HELP_CHARS {
        out.push('…');
    }
    out.trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn help_is_one_bounded_line_without_controls() {
        assert_eq!(one_line("fix\tthe bug\nsecond line"), "fix the bug");
        let long = "x".repeat(100);
        assert_eq!(one_line(&long).chars().count(), HELP_CHARS + 1);
    }
}
