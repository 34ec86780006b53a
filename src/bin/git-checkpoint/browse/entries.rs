//! The list's entries and the folds they make: each run of neighbours from one agent
//! session, and in it each prompt with the tool calls made after it.

use git_checkpoint::CheckpointId;

/// One checkpoint as the list shows it.
#[derive(Clone, Debug)]
pub struct Entry {
    /// Its id.
    pub id: CheckpointId,
    /// Its short id, as `log` shows it.
    pub short: String,
    /// When it was made (nanoseconds since the epoch).
    pub time_ns: i128,
    /// Its whole message.
    pub message: String,
    /// Its metadata (an agent's hooks record `agent`, `session`, `kind`, `prompt`).
    pub meta: Vec<(String, String)>,
    /// The labels `log` puts after it (`HEAD -> main`, …).
    pub labels: Vec<String>,
    /// Whether it is pinned.
    pub pinned: bool,
    /// Its parents among the listed checkpoints.
    pub graph_parents: Vec<CheckpointId>,
}

impl Entry {
    /// The value of metadata `key`.
    pub fn meta(&self, key: &str) -> Option<&str> {
        self.meta
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// The two kinds of fold: an agent session's run of checkpoints, and within it one
/// prompt's (the prompt's checkpoint and the tool calls after it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Level {
    /// An agent session.
    Session,
    /// A prompt and its tool calls.
    Prompt,
}

/// A fold: a run of list entries `start..end` (the newest first) shown, when folded, as
/// its first entry alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Group {
    /// Which kind.
    pub level: Level,
    /// The first entry's index.
    pub start: usize,
    /// One past the last entry's index.
    pub end: usize,
}

/// How many of `entries` have final rows: all, unless more are to be read and the last
/// ones are a session's tool calls whose prompt is not read yet (their prompt's fold
/// is not known), which wait for the next read.
pub fn settled(entries: &[Entry], more: bool) -> usize {
    let Some(session) = entries
        .last()
        .filter(|_| more)
        .and_then(|e| e.meta("session"))
    else {
        return entries.len();
    };
    let mut i = entries.len();
    while i > 0 && entries[i - 1].meta("session") == Some(session) {
        if entries[i - 1].meta("kind") == Some("prompt") {
            return i;
        }
        i -= 1;
    }
    i
}

/// The folds of `entries`: each run of neighbours from one agent session, and in it
/// each prompt's checkpoint with the tool calls listed above it (the ones made after
/// it, up to the next prompt).
pub fn groups(entries: &[Entry]) -> Vec<Group> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < entries.len() {
        let Some(session) = entries[i].meta("session") else {
            i += 1;
            continue;
        };
        let start = i;
        while i < entries.len() && entries[i].meta("session") == Some(session) {
            i += 1;
        }
        out.push(Group {
            level: Level::Session,
            start,
            end: i,
        });
        // Prompt runs: up to and including each prompt's own checkpoint.
        let mut run = start;
        for (j, entry) in entries.iter().enumerate().take(i).skip(start) {
            if entry.meta("kind") == Some("prompt") {
                out.push(Group {
                    level: Level::Prompt,
                    start: run,
                    end: j + 1,
                });
                run = j + 1;
            }
        }
    }
    out
}
