//! `git checkpoint stats`

use crate::ui::output::relative_time;
use git_checkpoint::format::size::human_bytes;
use git_checkpoint::storage::stats;
use git_checkpoint::text::{counted, escape_controls};

use git_checkpoint::storage::StoreRead;

use super::{Context, Output, SUMMARY_ROWS};
use crate::ui::json::StatsJson;

/// Show what the store holds and what it costs.
///
/// The store file's size on disk; the live data (stored bytes of everything some
/// checkpoint reaches) and the unreachable data a gc would delete; the deduplication
/// ratio (the sum of every checkpoint's file sizes over the unique content) and the
/// compression ratio (unique content over its stored size); and the checkpoints that
/// hold the most stored bytes only they hold: what removing each alone would free (every
/// checkpoint, newest first, with -v or --json). The store is opened read-only.
///
/// Examples:
///
///   git checkpoint stats
///
///   git checkpoint stats -v
///
///   git checkpoint stats --json | jq '.per_checkpoint | max_by(.exclusive_bytes)'
#[derive(Debug, clap::Args)]
pub struct Args {
    /// List every checkpoint, newest first, not only the few that hold the most.
    #[arg(short, long)]
    verbose: bool,
}

/// Runs `stats`.
pub fn run(context: &Context, args: Args) -> anyhow::Result<()> {
    let output = render(context, args.verbose)?;
    context.emit(output)
}

/// Everything `stats` prints, made while the store is open.
fn render(context: &Context, verbose: bool) -> anyhow::Result<Output> {
    let store = context.open_read_store()?;
    let read = store.snapshot()?;
    let stats = stats::collect(&read, &store.path)?;
    let per_checkpoint = stats
        .per_checkpoint
        .iter()
        .map(|c| Ok((read.short_id(c.id)?, c)))
        .collect::<anyhow::Result<Vec<_>>>()?;
    if context.json {
        let path = store.path.display().to_string();
        return Output::json(&StatsJson::new(path, &stats, &per_checkpoint));
    }
    let mut lines = Vec::new();
    lines.push(format!(
        "Store file:    {} ({} on disk)",
        store.path.display(),
        human_bytes(stats.file_size)
    ));
    lines.push(format!(
        "Checkpoints:   {} on {}, {} pinned",
        stats.checkpoints,
        counted(stats.branches, "branch"),
        stats.pinned
    ));
    lines.push(format!(
        "Live data:     {} ({} of {}, {})",
        human_bytes(stats.live_bytes),
        stats.live_chunks,
        counted(stats.chunks, "chunk"),
        counted(stats.trees, "tree")
    ));
    lines.push(format!(
        "Unreachable:   {} (git checkpoint gc deletes it)",
        human_bytes(stats.unreachable_bytes)
    ));
    lines.push(format!(
        "Deduplication: {:.1}x ({} in all checkpoints, {} unique)",
        stats.dedup_ratio(),
        human_bytes(stats.logical_bytes),
        human_bytes(stats.unique_bytes)
    ));
    lines.push(format!(
        "Compression:   {:.1}x ({} stored as {})",
        stats.compression_ratio(),
        human_bytes(stats.unique_bytes),
        human_bytes(stats.stored_chunk_bytes)
    ));
    let mut shown: Vec<_> = per_checkpoint.iter().collect();
    if !verbose {
        // The biggest few answer "what costs the space"; the whole list is -v.
        shown.sort_by_key(|(_, c)| std::cmp::Reverse(c.exclusive_bytes));
        shown.truncate(SUMMARY_ROWS);
    }
    if !shown.is_empty() {
        lines.push(String::new());
        lines.push(if verbose {
            "Bytes only each checkpoint holds (what removing it alone would free):".into()
        } else {
            "Checkpoints holding the most bytes only they hold (what removing each alone would free):".into()
        });
    }
    let now = git_checkpoint::clock::now_ns();
    for (short, c) in &shown {
        lines.push(format!(
            "  {short} {:>15} {:>10}  {}",
            relative_time(c.checkpoint.time_ns, now),
            human_bytes(c.exclusive_bytes),
            // One line per checkpoint, whatever the message holds.
            escape_controls(&c.checkpoint.message)
        ));
    }
    if let Some(more) = per_checkpoint
        .len()
        .checked_sub(shown.len())
        .filter(|n| *n > 0)
    {
        lines.push(format!("  ... and {more} more (-v lists every checkpoint)"));
    }
    Ok(Output::Lines(lines))
}
