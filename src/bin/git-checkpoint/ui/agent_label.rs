//! How a hook checkpoint names its step on one line (`log`, `blame`): the agent, the
//! session's short id and the prompt, as `claude 4f2a9c1d:prompt3`, which is also the
//! revision that names the prompt.

use std::collections::HashMap;

use git_checkpoint::model::session::Session;
use git_checkpoint::model::Checkpoint;
use git_checkpoint::CheckpointId;

/// The session short ids of a store, to label hook checkpoints with.
pub struct AgentLabels {
    short: HashMap<String, String>,
}

impl AgentLabels {
    /// Labels for the sessions `records` (every checkpoint of the store, so that each
    /// short id is unique among them all) name.
    pub fn new(records: &[(CheckpointId, Checkpoint)]) -> Self {
        let all = Session::all(records);
        let short = all
            .iter()
            .map(|s| (s.id.clone(), s.short_id(&all).to_string()))
            .collect();
        AgentLabels { short }
    }

    /// The short id of the session of a hook checkpoint; `None` for any other.
    pub fn session(&self, record: &Checkpoint) -> Option<String> {
        let session = meta(record, "session")?;
        Some(
            self.short
                .get(session)
                .map_or(session, String::as_str)
                .to_string(),
        )
    }

    /// `<agent> <session>:prompt<N>` (or without the prompt, before the session's first
    /// one) for a hook checkpoint; `None` for any other.
    pub fn label(&self, record: &Checkpoint) -> Option<String> {
        let short = self.session(record)?;
        let agent = meta(record, "agent").unwrap_or("agent");
        Some(match meta(record, "prompt") {
            Some(n) => format!("{agent} {short}:prompt{n}"),
            None => format!("{agent} {short}"),
        })
    }
}

/// The value of `key` in `record`'s metadata.
fn meta<'a>(record: &'a Checkpoint, key: &str) -> Option<&'a str> {
    (record.meta.iter())
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}
