//! `git checkpoint fetch`

use git_checkpoint::error::ErrorKind;
use git_checkpoint::remote::fetch::fetch;
use git_checkpoint::remote::remote_name;
use git_checkpoint::storage::StoreRead;
use git_checkpoint::text::counted;

use super::Context;
use crate::ui::failure::Failure;
use crate::ui::json::{self, FetchJson};

/// Fetch checkpoint branches from a git remote and add their checkpoints to the store.
///
/// Fetches refs/checkpoints/* (or the branches named) with your own `git fetch` into
/// refs/checkpoints-remote/<remote>/, and imports the checkpoints not yet in the store,
/// keeping the ids they had where they were saved. Each branch is then a revision,
/// <remote>/<branch>, for log, diff, show, restore and fork; `log --all` lists them.
/// Fetching an unchanged remote changes nothing.
///
/// Examples:
///
///   git checkpoint fetch
///
///   git checkpoint fetch origin ci/1234 && git checkpoint fork origin/ci/1234
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The remote (default: checkpoint.remote, else origin).
    remote: Option<String>,
    /// Branches to fetch (default: all).
    branches: Vec<String>,
}

/// Runs `fetch`.
pub fn run(context: &Context, args: Args) -> anyhow::Result<()> {
    let remote = remote_name(&context.workspace.repo, args.remote.as_deref());
    let report = fetch(
        &context.workspace.repo,
        || context.open_read_store(),
        || context.open_store(),
        &remote,
        &args.branches,
        &context.workspace.settings,
    )?;
    for line in &report.warnings {
        context.warn(line);
    }
    for (name, why) in &report.refused {
        context.warn(format!("refused {name}: {why}"));
    }
    let refused = || -> anyhow::Result<()> {
        match report.refused.len() {
            0 => Ok(()),
            n => Err(Failure::error(
                ErrorKind::Remote,
                format!(
                    "refused {} of {remote}, kept as they were (see the warnings above); the others were fetched",
                    counted(n, "branch")
                ),
            )),
        }
    };
    let store = context.open_read_store()?;
    let read = store.snapshot()?;
    if context.json {
        json::print(&FetchJson::new(&remote, &report, |tip| read.origin(tip))?)?;
        return refused();
    }
    if report.imported == 0
        && report.removed.is_empty()
        && report.branches.iter().all(|b| !b.changed)
    {
        context.say(&format!("{remote}: up to date"));
        return refused();
    }
    context.say(&format!(
        "Fetched {} from {remote}",
        counted(report.imported, "new checkpoint")
    ));
    for b in report.branches.iter().filter(|b| b.changed) {
        context.say(&format!("  {} -> {}", b.name, read.short_id(b.tip)?));
    }
    for name in &report.removed {
        context.say(&format!("  {name} (gone from the remote; forgotten)"));
    }
    refused()
}
