//! `git checkpoint pin`

use git_checkpoint::ops::gc;
use git_checkpoint::storage::StoreRead;

use super::Context;
use crate::ui::answer::pin::PinAnswer;

/// Pin a checkpoint: gc never removes it, whatever the policy or size budget.
///
/// `log` marks pinned checkpoints with [pinned]; `unpin` releases one. Pinning a
/// checkpoint that is already pinned changes nothing and succeeds.
///
/// Examples:
///
///   git checkpoint pin @
///
///   git checkpoint pin 3fa9c1e
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The checkpoint to pin.
    rev: String,
}

/// Runs `pin`.
pub fn run(context: &Context, args: Args) -> anyhow::Result<()> {
    context.tell(&answer(context, &args.rev)?)
}

/// Pins `rev`: `pin`'s answer, and the MCP server's.
pub fn answer(context: &Context, rev: &str) -> anyhow::Result<PinAnswer> {
    let store = context.open_store()?;
    let (id, changed) = gc::pin(&store, rev)?;
    let short = store.snapshot()?.short_id(id)?;
    Ok(PinAnswer { id, short, changed })
}
