//! `git checkpoint unpin`

use git_checkpoint::ops::gc;

use git_checkpoint::storage::StoreRead;

use super::Context;
use crate::ui::json::{self, PinJson};

/// Unpin a checkpoint, so that gc may remove it again.
///
/// Unpinning a checkpoint that is not pinned changes nothing and succeeds.
///
/// Examples:
///
///   git checkpoint unpin 3fa9c1e
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The checkpoint to unpin.
    rev: String,
}

/// Runs `unpin`.
pub fn run(context: &Context, args: Args) -> anyhow::Result<()> {
    let store = context.open_store()?;
    let (id, changed) = gc::unpin(&store, &args.rev)?;
    if context.json {
        return json::print(&PinJson {
            id: id.hex(),
            pinned: false,
            changed,
        });
    }
    let short = store.snapshot()?.short_id(id)?;
    context.say(&if changed {
        format!("Unpinned checkpoint {short}")
    } else {
        format!("Checkpoint {short} was not pinned")
    });
    Ok(())
}
