//! `git checkpoint export`

use git_checkpoint::remote::export::promote;
use git_checkpoint::storage::StoreRead;

use super::Context;
use crate::ui::json::{self, ExportJson};

/// Make a checkpoint a real git commit, to review, merge or push as code.
///
/// The commit has the checkpoint's files as its tree, its message (with a
/// Checkpoint-Id trailer), your git identity, and as parent the commit HEAD was at when
/// the checkpoint was saved, or the current HEAD with --onto. The index, the worktree
/// and HEAD are not touched; -b creates a branch at the commit, otherwise its id is
/// printed.
///
/// Examples:
///
///   git checkpoint export @ -b agent-attempt
///
///   git checkpoint export origin/ci/1234 --onto -b ci-fix
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The checkpoint to export.
    rev: String,
    /// Create this git branch at the new commit (an existing one is refused).
    #[arg(short = 'b', value_name = "git-branch")]
    branch: Option<String>,
    /// Build on the current HEAD instead of the commit recorded at save time.
    #[arg(long)]
    onto: bool,
}

/// Runs `export`.
pub fn run(context: &Context, args: Args) -> anyhow::Result<()> {
    let store = context.open_store()?;
    let id = store.snapshot()?.resolve(&args.rev)?;
    let promoted = promote(
        &context.workspace.repo,
        &store,
        id,
        args.branch.as_deref(),
        args.onto,
    )?;
    if context.json {
        return json::print(&ExportJson::new(id, &promoted));
    }
    match &promoted.branch {
        Some(branch) => context.say(&format!(
            "Created branch '{branch}' at {} (checkpoint {})",
            promoted.commit,
            store.snapshot()?.short_id(id)?
        )),
        None if !context.quiet => println!("{}", promoted.commit),
        None => {}
    }
    Ok(())
}
