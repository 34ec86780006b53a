//! `git checkpoint diff`

use std::path::PathBuf;

use crate::ui::failure::Failure;
use crate::ui::json::DiffJson;
use crate::ui::patch;
use git_checkpoint::diff::content::{ContentReader, EXPAND_LIMIT};
use git_checkpoint::diff::{checkpoint_root, diff_trees, Change, PathFilter};
use git_checkpoint::ops::save::look;
use git_checkpoint::CheckpointId;

use git_checkpoint::storage::StoreRead;

use super::{Context, FormatArgs, Output};

/// Show changes between two checkpoints, or a checkpoint and the worktree.
///
/// With two revisions, or one range `A..B`: from the first to the second. With one: from
/// it to the worktree. With none: from the current checkpoint to the worktree. The output is
/// git's: a unified diff with three lines of context, `diff --git` headers, mode lines,
/// new and deleted files, symlinks as their target, and `Binary files … differ`.
/// Unchanged directories are skipped without being read. Nothing is written to the
/// store.
///
/// A prompt's turn, `<session>:turn<N>` (`turn-1` for the last prompt), given alone, is
/// what the turn changed: from the checkpoint saved as the prompt was submitted to the
/// last one the session saved before its next prompt. Given as one of two, it names that
/// last checkpoint.
///
/// Examples:
///
///   git checkpoint diff
///
///   git checkpoint diff @~3 @ --stat
///
///   git checkpoint diff main fork-1 -- src/
///
///   git checkpoint diff 5f1c:turn3
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Zero, one or two checkpoints.
    #[arg(value_name = "rev", num_args = 0..=2)]
    revs: Vec<String>,
    #[command(flatten)]
    format: FormatArgs,
    /// Only these files or directories (relative to the current directory).
    #[arg(last = true, value_name = "path")]
    paths: Vec<PathBuf>,
}

/// Runs `diff`.
pub fn run(context: &Context, args: Args) -> anyhow::Result<()> {
    let output = render(context, args)?;
    context.emit(output)
}

/// Everything `diff` prints, made while the store is open.
fn render(context: &Context, args: Args) -> anyhow::Result<Output> {
    let paths = context.workspace.repo.worktree_paths(&args.paths)?;
    with_changes(context, &args.revs, paths, |compared| {
        let Compared {
            from,
            to,
            changes,
            reader,
        } = compared;
        if context.json {
            return Output::json(&DiffJson {
                from: from.map(CheckpointId::hex),
                to: to.map(CheckpointId::hex),
                changes: patch::summarize(changes, reader)?,
            });
        }
        if context.quiet {
            return Ok(Output::Nothing);
        }
        let mut out = Vec::new();
        patch::write_changes(
            &mut out,
            changes,
            reader,
            args.format.format(),
            context.colour(),
        )?;
        Ok(Output::Paged(out))
    })
}

/// What `diff` compared, read while the store is open: handed to the function given to
/// [`with_changes`].
pub struct Compared<'a> {
    /// The old side's checkpoint; `None` when there is no checkpoint yet.
    pub from: Option<CheckpointId>,
    /// The new side's checkpoint; `None` for the worktree.
    pub to: Option<CheckpointId>,
    /// Each changed file, in path order.
    pub changes: &'a [Change],
    /// Reads what each change holds.
    pub reader: &'a ContentReader<'a>,
}

/// Opens the store read-only and compares zero, one or two revisions (`revs`, as
/// `diff` takes them) limited to `paths` (worktree paths; none for everything), and
/// hands the changes to `f`; the store is closed when this returns (`diff`, and the
/// MCP server's `diff`). Warnings of the worktree scan go to stderr.
pub fn with_changes<T>(
    context: &Context,
    revs: &[String],
    paths: Vec<Vec<u8>>,
    f: impl FnOnce(&Compared<'_>) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    if revs.len() > 2 {
        return Err(Failure::input(format!(
            "diff compares at most two checkpoints, not {}",
            revs.len()
        )));
    }
    let filter = PathFilter::new(paths);
    let store = context.open_read_store()?;
    // A prompt's turn or a range `A..B`, given alone, is two checkpoints.
    let pair = match revs {
        [rev] => {
            let read = store.snapshot()?;
            if rev.contains("..") || read.resolve_turn(rev)?.is_some() {
                Some(read.resolve_change(rev)?)
            } else {
                None
            }
        }
        _ => None,
    };
    // The worktree side, scanned without storing anything, when fewer than two
    // revisions are given.
    let snapshot = if revs.len() < 2 && pair.is_none() {
        let snapshot = look(&context.workspace.repo, &context.workspace.settings, &store)?;
        for warning in &snapshot.warnings {
            context.warn(warning);
        }
        Some(snapshot)
    } else {
        None
    };
    let read = store.snapshot()?;
    let from = match (pair, revs.first()) {
        (Some(pair), _) => pair.from,
        (None, Some(rev)) => Some(read.resolve(rev)?),
        (None, None) => read.current()?,
    };
    let to = match (pair, revs.get(1)) {
        (Some(pair), _) => Some(pair.to),
        (None, Some(rev)) => Some(read.resolve(rev)?),
        (None, None) => None,
    };
    // Checked against the store, and each checkpoint's side bounded by its record.
    let tree_reader = read.checked_trees(snapshot.as_ref().map(|s| &s.trees))?;
    let tree_of = |id: Option<CheckpointId>| {
        id.map(|id| checkpoint_root(&read, &tree_reader, id))
            .transpose()
    };
    let old_tree = tree_of(from)?;
    let new_tree = match &snapshot {
        Some(snapshot) => Some(snapshot.root),
        None => tree_of(to)?,
    };
    let changes = diff_trees(&tree_reader, old_tree, new_tree, &filter)?;
    let chunks = read.chunks()?;
    let worktree = snapshot
        .as_ref()
        .map(|_| context.workspace.repo.root.as_path());
    let reader =
        ContentReader::new(&store.hasher, &chunks, worktree).expanding_at_most(EXPAND_LIMIT);
    f(&Compared {
        from,
        to,
        changes: &changes,
        reader: &reader,
    })
}
