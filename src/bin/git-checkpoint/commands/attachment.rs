//! `git checkpoint attachment`

use git_checkpoint::storage::{LastPack, StoreRead};

use super::{Context, Output};

/// Write a file attached to a checkpoint to stdout, byte for byte.
///
/// Attachments are stored with `git checkpoint save --attach <file>` under the file's
/// name; `git checkpoint show <rev>` lists them.
///
/// Examples:
///
///   git checkpoint attachment @ transcript.jsonl > transcript.jsonl
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The checkpoint.
    rev: String,
    /// The attachment's name.
    name: String,
}

/// Runs `attachment`.
pub fn run(context: &Context, args: Args) -> anyhow::Result<()> {
    let output = read(context, args)?;
    context.emit(output)
}

/// The attachment's bytes, read whole while the store is open: whatever reads them
/// (a terminal, a pipe) may take its time, and the store must not wait for it.
fn read(context: &Context, args: Args) -> anyhow::Result<Output> {
    let store = context.open_read_store()?;
    let read = store.snapshot()?;
    let id = read.resolve(&args.rev)?;
    let record = read.checkpoint(id)?;
    let short = read.short_id(id)?;
    let attachment = record.attachment(&short, &args.name)?;
    let chunks = read.chunks()?;
    let mut out = Vec::new();
    let mut buf = Vec::new();
    let mut last = LastPack::default();
    for &chunk_id in &attachment.chunks {
        buf.clear();
        chunks.read(&store.hasher, chunk_id, &mut buf, &mut last)?;
        out.extend_from_slice(&buf);
    }
    Ok(Output::Plain(out))
}
