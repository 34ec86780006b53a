//! `git checkpoint fork`

use git_checkpoint::model::branch::BranchName;
use git_checkpoint::ops::restore::{restore, HeadUpdate, RestoreOptions, RestoreReport};
use git_checkpoint::ops::save::show;
use git_checkpoint::storage::{Store, StoreRead};

use super::{print_json, Context};

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

/// Reports a fork or switch: the safety checkpoint, then where HEAD went and what the
/// restore wrote; or the JSON object `{branch, target, safety_checkpoint, written,
/// deleted}`.
pub(super) fn tell(
    context: &Context,
    store: &Store,
    report: &RestoreReport,
    branch: &str,
    what: &str,
) -> anyhow::Result<()> {
    for warning in &report.warnings {
        context.warn(warning);
    }
    let target = report.target.expect("a restore has a target");
    if context.json {
        let paths = |list: &[Vec<u8>]| list.iter().map(|p| show(p)).collect::<Vec<_>>();
        return print_json(&serde_json::json!({
            "branch": branch,
            "target": target.hex(),
            "safety_checkpoint": report.safety_checkpoint.map(|id| id.hex()),
            "written": paths(&report.written),
            "deleted": paths(&report.deleted),
        }));
    }
    let read = store.snapshot()?;
    if let Some(safety) = report.safety_checkpoint {
        let safety = read.short_id(safety)?;
        context.say(&format!(
            "Saved unsaved changes as checkpoint {safety} (undo with: git checkpoint restore {safety})"
        ));
    }
    context.say(&format!(
        "Switched to {what} '{branch}' at {}: {} written, {} deleted",
        read.short_id(target)?,
        report.written.len(),
        report.deleted.len()
    ));
    Ok(())
}
