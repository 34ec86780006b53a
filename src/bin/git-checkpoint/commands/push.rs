//! `git checkpoint push`

use std::path::PathBuf;

use git_checkpoint::remote::push::{dry_run, push, push_remote, PushOptions};
use git_checkpoint::remote::remote_ref;
use git_checkpoint::storage::StoreRead;
use git_checkpoint::text::counted;

use super::Context;
use crate::ui::json::{self, PushJson};
use crate::ui::output::{short_commit, show_path};

/// Publish checkpoint branches to a git remote, under refs/checkpoints/<branch>.
///
/// Each checkpoint becomes a git commit (written once, remembered in the store) and the
/// remote's refs/checkpoints/<branch> is updated with your own `git push`: your
/// transport, credentials and configuration; pre-push hooks are skipped for these refs.
/// Nothing goes under refs/heads, so ordinary clones and fetches never download
/// checkpoints. Only fast-forwards are pushed unless --force; if one branch is refused,
/// none is changed.
///
/// Attachments (agent transcripts) go beside the commits, kept by
/// refs/checkpoints-attachments/<branch>; fetch brings them back.
///
/// The remote is the one named, else checkpoint.remote; with neither, push refuses
/// (a clone's origin is often the upstream project). Every push lists the files git does
/// not track and the attachments it publishes that the remote does not have yet, and
/// refuses, among everything new it publishes, files and attachments that look like
/// secrets (private keys, .env files, access tokens) unless --allow names them: tracked
/// files too, when the checkpoint's content is not what the index holds. --dry-run
/// writes nothing anywhere.
///
/// Examples:
///
///   git checkpoint push origin
///
///   git checkpoint push backup --all
///
///   git checkpoint push origin ci/1234 --allow config/dev.env
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The remote (default: checkpoint.remote; there is no other default).
    remote: Option<String>,
    /// Checkpoint branches to push (default: the current one).
    branches: Vec<String>,
    /// Push every checkpoint branch.
    #[arg(long, conflicts_with = "branches")]
    all: bool,
    /// Say what a push would do; write nothing, here or on the remote.
    #[arg(long)]
    dry_run: bool,
    /// Replace remote branches even when that loses checkpoints they hold.
    #[arg(long)]
    force: bool,
    /// Publish this file (or attachment, by name) although it looks like a secret
    /// (repeatable).
    #[arg(long, value_name = "path")]
    allow: Vec<PathBuf>,
}

/// Runs `push`.
pub fn run(context: &Context, args: Args) -> anyhow::Result<()> {
    let options = PushOptions {
        remote: push_remote(&context.workspace.repo, args.remote.as_deref())?,
        branches: args.branches,
        all: args.all,
        dry_run: args.dry_run,
        force: args.force,
        allow: context.workspace.repo.worktree_paths(&args.allow)?,
    };
    // A dry run only reads: the store file stays byte-identical.
    let report = if options.dry_run {
        dry_run(
            &context.workspace.repo,
            &context.open_read_store()?,
            &options,
        )?
    } else {
        push(&context.workspace.repo, &context.open_store()?, &options)?
    };
    if context.json {
        return json::print(&PushJson::new(&options.remote, options.dry_run, &report));
    }
    if !report.untracked.is_empty() {
        context.say(&format!(
            "Publishing {} git does not track:",
            counted(report.untracked.len(), "file")
        ));
        for path in &report.untracked {
            context.say(&format!("  {}", show_path(path)));
        }
    }
    if !report.attachments.is_empty() {
        let read = context.open_read_store()?;
        let snapshot = read.snapshot()?;
        context.say(&format!(
            "Publishing {}:",
            counted(report.attachments.len(), "attachment")
        ));
        for (id, name) in &report.attachments {
            context.say(&format!("  {} {name}", snapshot.short_id(*id)?));
        }
    }
    let would = if options.dry_run { "would be " } else { "" };
    for branch in &report.branches {
        let commit = match &branch.commit {
            Some(commit) => short_commit(commit).to_string(),
            None => "not yet exported".to_string(),
        };
        context.say(&format!(
            "{} -> {}:{} ({would}{}, {commit})",
            branch.branch,
            options.remote,
            remote_ref(&branch.branch),
            branch.status,
        ));
    }
    if options.dry_run && report.exported > 0 {
        context.say(&format!(
            "{} would be exported as new {}",
            counted(report.exported, "checkpoint"),
            if report.exported == 1 {
                "commit"
            } else {
                "commits"
            }
        ));
    }
    Ok(())
}
