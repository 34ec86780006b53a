//! `git checkpoint revert`

use std::path::PathBuf;

use git_checkpoint::ops::revert::{dry_run, revert, ConflictStyle, RevertOptions, Undo};
use git_checkpoint::storage::StoreRead;

use super::Context;
use crate::ui::answer::revert::RevertAnswer;

/// Undo what a checkpoint changed, keeping everything since.
///
/// Each path the checkpoint changed against its first parent is merged three ways, as
/// `git revert` merges a commit: the base is the checkpoint, ours the worktree as it is
/// now, theirs the checkpoint's parent. A path nothing changed since goes back to what
/// the parent had (written, deleted or recreated); a text file changed since too is
/// merged line by line, and where both changed the same lines it gets git's conflict
/// markers (merge.conflictStyle: merge or diff3; zdiff3 is written as diff3). Binary
/// files, symlinks, files the checkpoint created or deleted and the worktree changed
/// since are conflicts left as the worktree has them. The executable bit is merged apart
/// from the content. Paths the checkpoint did not change are never touched.
///
/// The worktree is saved first as a checkpoint of its own, so every revert can be undone
/// with `git checkpoint restore <that checkpoint>`; the reverted worktree is then saved
/// as a checkpoint too ("revert of <rev> (N files)", HEAD's branch moved to it), unless
/// conflicts are left to resolve (then save once they are). Before anything is written, the
/// whole revert is checked (directories writable, room, names): one the worktree
/// cannot take is refused with nothing changed; one that fails part-way says so and
/// names that restore. Exit status 1 when anything conflicts (each conflict is listed);
/// --dry-run exits as the real run would.
///
/// <rev> is any revision restore takes (`3fa9c1e`, `@~2`, `<session>:prompt3`,
/// `<session>:<tool-call-id>`), or a range `A..B`: undo everything from A to B (an empty
/// side is `@`).
///
/// With paths, only the change to those files (or to what is below those directories)
/// is undone; each must match a path the change touched, as git's pathspecs must, or
/// the revert fails and nothing is changed.
///
/// Examples:
///
///   git checkpoint revert 5f1c:toolu_01A
///
///   git checkpoint revert 3fa9c1e --dry-run
///
///   git checkpoint revert 3fa9c1e..8b0d2aa --no-conflicts
///
///   git checkpoint revert 5f1c:turn2 -- src/parser.rs
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The checkpoint whose change to undo, or a range A..B.
    rev: String,
    /// Print the diff the revert would apply to the worktree, and change nothing.
    #[arg(long)]
    dry_run: bool,
    /// Change nothing if any path would conflict.
    #[arg(long)]
    no_conflicts: bool,
    /// Undo the change to these files or directories only (relative to the current
    /// directory).
    #[arg(last = true, value_name = "path")]
    paths: Vec<PathBuf>,
}

/// What a revert is asked for, from the command line or the MCP server's `revert`.
#[derive(Debug, Default)]
pub struct RevertRequest {
    /// The checkpoint whose change to undo, or a range A..B.
    pub rev: String,
    /// Say what would change, and change nothing.
    pub dry_run: bool,
    /// Change nothing if any path would conflict.
    pub no_conflicts: bool,
    /// Undo the change to these paths only (from the worktree's top; a directory stands
    /// for what is below it); none: to every path it touched.
    pub paths: Vec<Vec<u8>>,
}

/// Runs `revert`.
pub fn run(context: &Context, args: Args) -> anyhow::Result<()> {
    let request = RevertRequest {
        rev: args.rev,
        dry_run: args.dry_run,
        no_conflicts: args.no_conflicts,
        paths: context.workspace.repo.worktree_paths(&args.paths)?,
    };
    context.tell(&answer(context, request)?)
}

/// Reverts as `request` asks (a dry run changes nothing, the store file included: it
/// opens it read-only): `revert`'s answer, and the MCP server's.
pub fn answer(context: &Context, request: RevertRequest) -> anyhow::Result<RevertAnswer> {
    let repo = &context.workspace.repo;
    let (conflict_style, style_warning) = ConflictStyle::of_repo(repo)?;
    let options = RevertOptions {
        dry_run: request.dry_run,
        no_conflicts: request.no_conflicts,
        conflict_style,
        settings: context.workspace.settings.clone(),
        progress: context.progress(),
    };
    let (report, undo, store) = if request.dry_run {
        let store = context.open_read_store()?;
        let undo = Undo::resolve(&store.snapshot()?, &request.rev)?.limited_to(request.paths);
        (dry_run(repo, &store, &undo, &options)?, undo, None)
    } else {
        let store = context.open_store()?;
        let undo = Undo::resolve(&store.snapshot()?, &request.rev)?.limited_to(request.paths);
        let report = revert(repo, &store, &undo, &options)?;
        (report, undo, Some(store))
    };
    // The checkpoints a real revert made, by short id, read while its store is open.
    let (worktree, result) = match &store {
        Some(store) => {
            let snapshot = store.snapshot()?;
            let worktree = match report.worktree {
                Some(id) => Some(snapshot.short_id(id)?),
                None => None,
            };
            (worktree, super::saved_as(&snapshot, report.checkpoint)?)
        }
        None => (None, None),
    };
    Ok(RevertAnswer {
        rev: request.rev,
        described: undo.described(),
        report,
        style: conflict_style,
        warnings: style_warning.into_iter().collect(),
        worktree,
        result,
    })
}
