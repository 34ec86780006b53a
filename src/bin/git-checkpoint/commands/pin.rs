//! `git checkpoint pin`

use git_checkpoint::ops::gc;

use git_checkpoint::storage::StoreRead;

use super::Context;
use crate::ui::json::{self, PinJson};

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
    let store = context.open_store()?;
    let (id, changed) = gc::pin(&store, &args.rev)?;
    if context.json {
        return json::print(&PinJson {
            id: id.hex(),
            pinned: true,
            changed,
        });
    }
    let short = store.snapshot()?.short_id(id)?;
    context.say(&if changed {
        format!("Pinned checkpoint {short}: gc will keep it")
    } else {
        format!("Checkpoint {short} was already pinned")
    });
    Ok(())
}
