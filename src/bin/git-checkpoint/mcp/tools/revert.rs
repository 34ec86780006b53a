//! `revert`: `revert <rev> [--dry-run] [--no-conflicts] [-- <paths>]`.

use schemars::JsonSchema;
use serde::Deserialize;

use super::{require_store, worktree_paths, Effect, Reply, Tool, REPO};
use crate::commands::revert::{self, RevertRequest};
use crate::commands::Context;

/// `revert`.
pub struct Revert;

/// Its arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    // Read by `call` from the raw arguments, before these are parsed; here for the schema.
    #[allow(dead_code)]
    #[schemars(description = REPO)]
    repo: Option<String>,
    /// The change to undo: a checkpoint (what it changed against its parent, e.g. a tool call's checkpoint <session>:<tool-call-id> or an id), a prompt's turn <session>:turn<N> (turn-1 for the last one), or a range A..B (everything from A to B).
    rev: String,
    /// Undo the change to these files or directories only (relative to the worktree's top), e.g. one file a step changed; each must be a path the change touched.
    paths: Option<Vec<String>>,
    /// Only say what would change, as a diff; change nothing.
    dry_run: Option<bool>,
    /// Change nothing if any file would conflict.
    no_conflicts: Option<bool>,
}

impl Tool for Revert {
    const NAME: &'static str = "revert";
    const DESCRIPTION: &'static str = "Undo one change and keep everything done since, as git revert does: a step (a checkpoint: what it changed against its parent), a prompt's whole turn (<session>:turn<N>), or a range A..B; with paths, only the change to those files. Each file the change touched is merged three ways with the worktree as it is now; where later work changed the same lines, the file gets conflict markers (listed in the answer). The worktree is first saved as a safety checkpoint, whose id the answer gives; the undo tool takes the revert back. With dry_run, only shows the diff it would apply. Use restore instead to go back to a point in time.";
    const EFFECT: Effect = Effect::Writes {
        destructive: true,
        idempotent: false,
        dry_run: true,
    };
    type Args = Args;

    fn dry_run(args: &Args) -> bool {
        args.dry_run.unwrap_or(false)
    }

    fn call(context: &Context, args: Args) -> anyhow::Result<Reply> {
        let dry_run = Self::dry_run(&args);
        let paths = worktree_paths(context, args.paths.as_deref().unwrap_or_default())?;
        if dry_run {
            // A dry run reads: it must not create a store.
            require_store(context)?;
        }
        let request = RevertRequest {
            rev: args.rev,
            dry_run,
            no_conflicts: args.no_conflicts.unwrap_or(false),
            paths,
        };
        Reply::of(&revert::answer(context, request)?)
    }
}
