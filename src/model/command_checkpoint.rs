//! Checkpoints a command saves of its own result (a revert, a `restore --only-session`),
//! and the metadata that tells them apart: which command, what it undid by id, and the
//! revision as the user typed it. Made through the MCP server, such a checkpoint is
//! filed under the agent's turn by the hook that runs after the call: the hook's own
//! checkpoint names it ([`MADE_KEY`]), so that what the call did counts as the call's.

use crate::model::Checkpoint;
use crate::CheckpointId;

/// Metadata key: what saved the checkpoint ([`REVERT_KIND`], [`RESTORE_KIND`]; a hook's
/// checkpoints use it for `prompt`, `tool`, …).
pub const KIND_KEY: &str = "kind";

/// The `kind` of a revert's result.
pub const REVERT_KIND: &str = "revert";

/// The `kind` of a `restore --only-session`'s result.
pub const RESTORE_KIND: &str = "restore";

/// Metadata key: the revision as the user (or the agent) typed it.
pub const REVISION_KEY: &str = "revision";

/// Metadata key of a revert: the change undone, `<from>..<to>` in full ids.
pub const REVERTED_KEY: &str = "reverted";

/// Metadata key of a revert limited to paths: those paths, one per line, from the
/// worktree's top.
pub const REVERTED_PATHS_KEY: &str = "reverted_paths";

/// Metadata key of a session-limited restore: the checkpoint restored from, in full.
pub const RESTORED_KEY: &str = "restored";

/// Metadata key of a session-limited restore: the session whose files went back, in
/// full. (Not `session`: the checkpoint is not one of the session's own.)
pub const RESTORED_SESSION_KEY: &str = "restored_session";

/// Metadata key of the checkpoint a hook saves after a tool call of our MCP server that
/// saved a checkpoint of its own result: that checkpoint's full id. The hook's
/// checkpoint is its child, so that the call's step spans both.
pub const MADE_KEY: &str = "made_checkpoint";

fn meta<'a>(record: &'a Checkpoint, key: &str) -> Option<&'a str> {
    record
        .meta
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

/// Whether `record` is a command's own result (a revert's, a session-limited
/// restore's), saved by no hook.
pub fn is_command_result(record: &Checkpoint) -> bool {
    matches!(meta(record, KIND_KEY), Some(REVERT_KIND | RESTORE_KIND))
        && meta(record, "session").is_none()
}

/// The command's result a hook's checkpoint files under its tool call: the checkpoint
/// [`MADE_KEY`] names, when it is still `record`'s first parent (a gc that removed it
/// re-linked `record` past it, and then `record`'s own change is the whole step).
pub fn made_by_call(record: &Checkpoint) -> Option<CheckpointId> {
    let made = u128::from_str_radix(meta(record, MADE_KEY)?, 16).ok()?;
    let made = CheckpointId(made);
    (record.parents.first() == Some(&made)).then_some(made)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(meta: &[(&str, &str)], parents: &[u128]) -> Checkpoint {
        Checkpoint {
            meta: meta
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            parents: parents.iter().map(|p| CheckpointId(*p)).collect(),
            ..Checkpoint::default()
        }
    }

    #[test]
    fn a_call_files_only_the_result_that_is_its_first_parent() {
        let made = CheckpointId(0xabc);
        let step = record(&[(MADE_KEY, &made.hex())], &[0xabc]);
        assert_eq!(made_by_call(&step), Some(made));
        let relinked = record(&[(MADE_KEY, &made.hex())], &[0x123]);
        assert_eq!(made_by_call(&relinked), None);
        assert_eq!(made_by_call(&record(&[(MADE_KEY, "not hex")], &[1])), None);
        assert_eq!(made_by_call(&record(&[], &[0xabc])), None);
    }

    #[test]
    fn a_command_result_is_no_hooks() {
        assert!(is_command_result(&record(&[(KIND_KEY, REVERT_KIND)], &[])));
        assert!(is_command_result(&record(&[(KIND_KEY, RESTORE_KIND)], &[])));
        assert!(!is_command_result(&record(
            &[(KIND_KEY, REVERT_KIND), ("session", "s")],
            &[]
        )));
        assert!(!is_command_result(&record(&[(KIND_KEY, "tool")], &[])));
    }
}
