//! `git checkpoint fork`

use git_checkpoint::model::branch::BranchName;
use git_checkpoint::ops::restore::{restore, HeadUpdate, RestoreOptions, RestoreReport};
use git_checkpoint::storage::{Store, StoreRead};

use super::restore::restore_shorts;
use super::Context;
use crate::ui::answer::restore::{restored, said_restore, Done};
use crate::ui::json::{self, SwitchJson};

/// Start a new branch at a checkpoint, switch to it and restore it.
///
/// Unsaved changes are first saved on the current branch, which keeps its tip. The new
/// branch is named fork-1, fork-2, … unless -b names it. Later saves go on the new
/// branch; `git checkpoint switch <branch>` goes back.
///
/// Examples:
///
///   git checkpoint fork @~2
///
///   git checkpoint fork 3fa9c1e -b try-other-parser
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The checkpoint to start from.
    rev: String,
    /// The new branch's name (default: the first free fork-N).
    #[arg(short = 'b', value_name = "name")]
    branch: Option<String>,
}

/// Runs `fork`.
pub fn run(context: &Context, args: Args) -> anyhow::Result<()> {
    let store = context.open_store()?;
    let branch = match args.branch {
        Some(name) => BranchName::new(&name)?,
        None => store.snapshot()?.next_fork_name()?,
    };
    let options = RestoreOptions {
        settings: context.workspace.settings.clone(),
        head: HeadUpdate::NewBranch(branch.clone()),
        ..RestoreOptions::default()
    };
    let report = restore(&context.workspace.repo, &store, &args.rev, &options)?;
    tell(context, &store, &report, branch.as_str(), "a new branch")
}

/// Reports a fork or switch: the JSON object, or the restore's report under
/// `Switched to <what> '<branch>'`.
pub(super) fn tell(
    context: &Context,
    store: &Store,
    report: &RestoreReport,
    branch: &str,
    what: &'static str,
) -> anyhow::Result<()> {
    let target = restored(report)?;
    let done = Done::Switched {
        what,
        branch: branch.to_string(),
    };
    let shorts = restore_shorts(&store.snapshot()?, report)?;
    let said = said_restore(report, target, &shorts, &done, context.front());
    context.print(&said)?;
    if context.json {
        json::print(&SwitchJson::new(branch, target, report))?;
    }
    Ok(())
}
