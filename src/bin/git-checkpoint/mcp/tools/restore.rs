//! `restore`: `restore <rev> [--dry-run] [--only-session [<session>] [--force]] [-- <paths>]`.

use schemars::JsonSchema;
use serde::Deserialize;

use super::{require_store, worktree_paths, Effect, Reply, Tool, REPO};
use crate::commands::restore::{self, RestoreRequest};
use crate::commands::Context;
use crate::ui::failure::Failure;

/// `restore`.
pub struct Restore;

/// Its arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Args {
    // Read by `call` from the raw arguments, before these are parsed; here for the schema.
    #[allow(dead_code)]
    #[schemars(description = REPO)]
    repo: Option<String>,
    /// The checkpoint to restore: an id or unique prefix, a branch, @~N (N steps before the current one), <session>:prompt<N>.
    rev: String,
    /// Restore only these files or directories (relative to the worktree's top); the current branch then stays where it is.
    paths: Option<Vec<String>>,
    /// Put back only the files an agent session's own tool calls changed since rev, leaving the user's and other sessions' changes; the session is the one rev names (as in <session>:prompt2) unless session is given. Not with paths.
    only_session: Option<bool>,
    /// With only_session: the session (an id or unique prefix, as list_sessions shows it).
    session: Option<String>,
    /// With only_session: also put back files someone else changed too since rev (otherwise they are left alone and listed).
    force: Option<bool>,
    /// Only say what would be written and deleted; change nothing.
    dry_run: Option<bool>,
}

impl Tool for Restore {
    const NAME: &'static str = "restore";
    const DESCRIPTION: &'static str = "Make the worktree (or only some paths, or only the files an agent session changed) equal to a checkpoint, e.g. rev \"@~2\" to undo the last two steps. Unsaved changes are first saved as a safety checkpoint, whose id the answer gives, so the undo tool can take the restore back; files git ignores are never touched. With only_session, only the files the session's own tool calls changed since rev are put back, and the user's edits stay. With dry_run, only says what would be written and deleted.";
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
        let only_session = match args.only_session.unwrap_or(false) {
            true if !paths.is_empty() => {
                return Err(Failure::input(
                    "only_session and paths cannot be used together",
                ))
            }
            true => Some(args.session),
            false if args.session.is_some() || args.force.is_some() => {
                return Err(Failure::input(
                    "session and force go with only_session=true",
                ))
            }
            false => None,
        };
        if dry_run {
            // A dry run reads: it must not create a store.
            require_store(context)?;
        }
        let request = RestoreRequest {
            rev: args.rev,
            paths,
            dry_run,
            only_session,
            force: args.force.unwrap_or(false),
            ..RestoreRequest::default()
        };
        Reply::of(&restore::answer(context, request)?)
    }
}
