//! `git checkpoint pull`

use git_checkpoint::remote::pull::{pull, PullStatus};
use git_checkpoint::remote::remote_name;
use git_checkpoint::storage::StoreRead;
use git_checkpoint::text::counted;

use super::restore::restore_shorts;
use super::Context;
use crate::ui::answer::restore::{restored, said_restore, Done};
use crate::ui::json::{self, PullJson};

/// Fetch a checkpoint branch from a git remote and fast-forward the local branch to it.
///
/// Runs `fetch <remote> <branch>`, then moves the local checkpoint branch of the same
/// name to <remote>/<branch> when that only adds checkpoints (a fast-forward), making it
/// if it does not exist. For the current branch this is a restore, so the worktree
/// follows (unsaved changes are saved as a checkpoint first, as every restore does);
/// another branch only has its tip moved. A local branch with checkpoints the remote
/// lacks is left alone: if the remote's has none it lacks, push them; if both have
/// some (diverged), pull refuses, changes nothing, and says how to compare them, work on
/// theirs (fork) or replace the remote's (push --force).
///
/// Examples:
///
///   git checkpoint pull
///
///   git checkpoint pull origin ci/1234
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The remote (default: checkpoint.remote, else origin).
    remote: Option<String>,
    /// The branch (default: the current one).
    branch: Option<String>,
}

/// Runs `pull`.
pub fn run(context: &Context, args: Args) -> anyhow::Result<()> {
    let remote = remote_name(&context.workspace.repo, args.remote.as_deref());
    let report = pull(
        &context.workspace.repo,
        || context.open_read_store(),
        || context.open_store(),
        &remote,
        args.branch.as_deref(),
        &context.workspace.settings,
    )?;
    if context.json {
        if let Some(restore) = &report.restore {
            for warning in &restore.warnings {
                context.warn(warning);
            }
        }
        return json::print(&PullJson::new(&remote, &report));
    }
    let store = context.open_read_store()?;
    let read = store.snapshot()?;
    if report.fetch.imported > 0 {
        context.say(&format!(
            "Fetched {} from {remote}",
            counted(report.fetch.imported, "new checkpoint")
        ));
    }
    let to = read.short_id(report.to)?;
    let branch = &report.branch;
    let line = match (report.status, report.from) {
        (PullStatus::UpToDate, _) => format!("{branch} is up to date with {remote}/{branch}"),
        (PullStatus::Ahead, _) => format!(
            "{branch} is ahead of {remote}/{branch} ({to}); 'git checkpoint push' publishes it"
        ),
        (PullStatus::FastForward, Some(from)) => {
            format!("{branch}: {} -> {to} (fast-forward)", read.short_id(from)?)
        }
        (PullStatus::FastForward, None) | (PullStatus::Created, _) => {
            format!("{branch}: new branch at {to}")
        }
    };
    match &report.restore {
        Some(restore) => {
            let shorts = restore_shorts(&read, restore)?;
            let done = Done::Pulled(line);
            let said = said_restore(restore, restored(restore)?, &shorts, &done, context.front());
            context.print(&said)
        }
        None => {
            context.say(&line);
            Ok(())
        }
    }
}
