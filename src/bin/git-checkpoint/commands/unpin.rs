//! `git checkpoint unpin`

use git_checkpoint::ops::gc;

use git_checkpoint::storage::StoreRead;

use super::{print_json, Context};

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
        return print_json(
            &serde_json::json!({"id": id.hex(), "pinned": false, "changed": changed}),
        );
    }
    let short = store.snapshot()?.short_id(id)?;
    context.say(&if changed {
        format!("Unpinned checkpoint {short}")
    } else {
        format!("Checkpoint {short} was not pinned")
    });
    Ok(())
}
