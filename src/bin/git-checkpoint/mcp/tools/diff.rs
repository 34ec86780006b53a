//! `diff`: `diff`'s patch, cut at a byte budget with a note of what was left out.

use schemars::JsonSchema;
use serde::Deserialize;

use super::{require_store, worktree_paths, Effect, Reply, Tool, REPO};
use crate::commands::{diff, Context};
use crate::ui::answer::diff::DiffPage;
use crate::ui::failure::Failure;

/// `diff`.
pub struct Diff;

/// Its arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    // Read by `call` from the raw arguments, before these are parsed; here for the schema.
    #[allow(dead_code)]
    #[schemars(description = REPO)]
    repo: Option<String>,
    /// The old side: a checkpoint (default: the current one). Alone, a prompt's turn <session>:turn<N> or a range A..B is what that turn or range changed.
    from: Option<String>,
    /// The new side: a checkpoint (default: the worktree as it is now). Needs from.
    to: Option<String>,
    /// Only these files or directories (relative to the worktree's top).
    paths: Option<Vec<String>>,
    /// The most bytes of patch to return (default 20000, at most 1000000); a longer patch is cut, with a note naming what was left out.
    max_bytes: Option<usize>,
}

/// The bytes of patch it returns unless told.
const DEFAULT_DIFF_BYTES: usize = 20_000;
/// The most it returns at once, whatever it is asked.
const MAX_DIFF_BYTES: usize = 1_000_000;

impl Tool for Diff {
    const NAME: &'static str = "diff";
    const DESCRIPTION: &'static str = "Show the changes, as a unified diff, from one checkpoint to another or to the worktree as it is now (by default from the current checkpoint to the worktree: the unsaved changes). The patch is cut at max_bytes; then a note says which files were left out, and a second call with paths, or a larger max_bytes, shows them.";
    const EFFECT: Effect = Effect::Reads;
    type Args = Args;

    fn call(context: &Context, args: Args) -> anyhow::Result<Reply> {
        let budget = match args.max_bytes.unwrap_or(DEFAULT_DIFF_BYTES) {
            0 => return Err(Failure::input("max_bytes must be at least 1")),
            n => n.min(MAX_DIFF_BYTES),
        };
        let revs: Vec<String> = match (args.from, args.to) {
            (None, Some(_)) => return Err(Failure::input("to needs from: name the old side too")),
            (from, to) => from.into_iter().chain(to).collect(),
        };
        require_store(context)?;
        let paths = worktree_paths(context, args.paths.as_deref().unwrap_or_default())?;
        let page = diff::with_changes(context, &revs, paths, |compared| {
            DiffPage::new(
                (compared.from, compared.to),
                compared.changes,
                compared.reader,
                budget,
                MAX_DIFF_BYTES,
            )
        })?;
        Reply::of(&page)
    }
}
