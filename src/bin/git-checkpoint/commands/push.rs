//! `git checkpoint push`

use std::path::PathBuf;

use git_checkpoint::ops::save::show;
use git_checkpoint::remote::push::{push, PushOptions};
use git_checkpoint::remote::{remote_name, remote_ref};

use super::{print_json, Context};

/// Publish checkpoint branches to a git remote, under refs/checkpoints/<branch>.
///
/// Each checkpoint becomes a git commit (written once, remembered in the store) and the
/// remote's refs/checkpoints/<branch> is updated with your own `git push`: your
/// transport, credentials and configuration; pre-push hooks are skipped for these refs.
/// Nothing goes under refs/heads, so ordinary clones and fetches never download
/// checkpoints. Only fast-forwards are pushed unless --force; if one branch is refused,
/// none is changed.
///
/// The remote is the one named, else checkpoint.remote, else origin. The first push of a
/// branch lists the files it publishes that git does not track, and refuses files that
/// look like secrets (private keys, .env files, access tokens) unless --allow names them.
///
/// Examples:
///
///   git checkpoint push
///
///   git checkpoint push backup --all
///
///   git checkpoint push origin ci/1234 --allow config/dev.env
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The remote (default: checkpoint.remote, else origin).
    remote: Option<String>,
    /// Checkpoint branches to push (default: the current one).
    branches: Vec<String>,
    /// Push every checkpoint branch.
    #[arg(long, conflicts_with = "branches")]
    all: bool,
    /// Say what would be pushed; change nothing on the remote.
    #[arg(long)]
    dry_run: bool,
    /// Replace remote branches even when that loses checkpoints they hold.
    #[arg(long)]
    force: bool,
    /// Publish this file although it looks like a secret (repeatable).
    #[arg(long, value_name = "path")]
    allow: Vec<PathBuf>,
}

/// Runs `push`.
pub fn run(context: &Context, args: Args) -> anyhow::Result<()> {
    let store = context.open_store()?;
    let options = PushOptions {
        remote: remote_name(&context.repo, args.remote.as_deref()),
        branches: args.branches,
        all: args.all,
        dry_run: args.dry_run,
        force: args.force,
        allow: context.repo.worktree_paths(&args.allow)?,
    };
    let report = push(&context.repo, &store, &options)?;
    drop(store);
    if context.json {
        return print_json(&serde_json::json!({
            "remote": options.remote,
            "dry_run": options.dry_run,
            "exported": report.exported,
            "branches": report.branches.iter().map(|b| serde_json::json!({
                "branch": b.branch,
                "ref": remote_ref(&b.branch),
                "commit": b.commit,
                "status": b.status,
            })).collect::<Vec<_>>(),
            "untracked": report.untracked.iter().map(|p| show(p)).collect::<Vec<_>>(),
        }));
    }
    if !report.untracked.is_empty() {
        context.say(&format!(
            "Publishing {} file(s) git does not track:",
            report.untracked.len()
        ));
        for path in &report.untracked {
            context.say(&format!("  {}", show(path)));
        }
    }
    let would = if options.dry_run { "would be " } else { "" };
    for branch in &report.branches {
        context.say(&format!(
            "{} -> {}:{} ({would}{}, {})",
            branch.branch,
            options.remote,
            remote_ref(&branch.branch),
            branch.status,
            &branch.commit[..12.min(branch.commit.len())]
        ));
    }
    Ok(())
}
