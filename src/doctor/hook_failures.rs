//! The hooks log's recent failures (`<git-dir>/checkpoint/hooks.log`,
//! [`crate::agents::hooks_log`]). A hook never stops the agent, so a hook run that could
//! not save says so only there (and once per session in the agents that show a hook's
//! message). Failures after the last checkpoint mean the hooks fail now; those before
//! it were followed by a save that worked.

use super::{Check, Finding, Status};
use crate::agents::hooks_log::{self, HOOKS_LOG};
use crate::git::repo::Repo;

/// How far back a failure that a later save followed is still told of, in nanoseconds:
/// a day.
const RECENT_NS: i128 = 24 * 3600 * 1_000_000_000;

/// The failures of `repo`'s hook runs since the checkpoint made at `last_checkpoint_ns`
/// (all of them before the first checkpoint).
pub fn check(repo: &Repo, last_checkpoint_ns: Option<i128>) -> Finding {
    let failures = hooks_log::failures(repo);
    let log = repo.checkpoint_dir().join(HOOKS_LOG);
    let after = |time_ns: i128| last_checkpoint_ns.is_none_or(|last| time_ns > last);
    let since: Vec<_> = failures.iter().filter(|f| after(f.time_ns)).collect();
    let count = |n: usize| match n {
        1 => "1 hook run".to_string(),
        n => format!("{n} hook runs"),
    };
    if let Some(newest) = since.last() {
        return Finding::new(
            Check::HooksLog,
            Status::Problem,
            format!(
                "{} failed since the last checkpoint, the newest at {}: {} (all of them in {})",
                count(since.len()),
                crate::clock::rfc3339(newest.time_ns),
                newest.message,
                log.display()
            ),
        );
    }
    let now = crate::clock::now_ns();
    let recent: Vec<_> = failures
        .iter()
        .filter(|f| now - f.time_ns < RECENT_NS)
        .collect();
    match recent.last() {
        Some(newest) => Finding::new(
            Check::HooksLog,
            Status::Note,
            format!(
                "{} failed in the last day, the newest at {}, and a checkpoint was saved \
                 since: {} (all of them in {})",
                count(recent.len()),
                crate::clock::rfc3339(newest.time_ns),
                newest.message,
                log.display()
            ),
        ),
        None => Finding::new(
            Check::HooksLog,
            Status::Ok,
            "no hook run failed since the last checkpoint",
        ),
    }
}
