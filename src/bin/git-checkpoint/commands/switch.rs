//! `git checkpoint switch`

use git_checkpoint::ops::restore::{restore, HeadUpdate, RestoreOptions};

use super::Context;

/// Go to a branch: make the worktree equal to its tip, and save there from now on.
///
/// Unsaved changes are first saved on the current branch, so nothing is lost. Switching
/// to the current branch only saves unsaved changes.
///
/// Examples:
///
///   git checkpoint switch main
///
///   git checkpoint switch fork-1
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The branch to go to.
    branch: String,
}

/// Runs `switch`.
pub fn run(context: &Context, args: Args) -> anyhow::Result<()> {
    let store = context.open_store()?;
    let options = RestoreOptions {
        settings: context.workspace.settings.clone(),
        head: HeadUpdate::SwitchBranch(args.branch.clone()),
        ..RestoreOptions::default()
    };
    let report = restore(&context.workspace.repo, &store, &args.branch, &options)?;
    super::fork::tell(context, &store, &report, &args.branch, "branch")
}
