//! `git checkpoint gc`, and the report of the automatic gc after a save.

use std::time::Instant;

use crate::ui::output::{relative_time, signed_bytes};
use git_checkpoint::format::size::human_bytes;
use git_checkpoint::format::size::parse_size;
use git_checkpoint::model::retention::GcOptions;
use git_checkpoint::model::retention::{Policy, Span};
use git_checkpoint::ops::gc::{self, Outcome, Plan, Removal};
use git_checkpoint::text::counted;

use git_checkpoint::storage::StoreRead;

use super::{Context, SUMMARY_ROWS};
use crate::ui::json::{self, GcJson};

/// Remove old checkpoints by a retention policy, and give the space back.
///
/// Keeps the union of: the newest N (--keep); the newest checkpoint of each of the last N
/// hours, days, weeks, months or years that have one (--keep-hourly …, with restic's
/// `forget` meaning: natural calendar periods in local time, weeks Monday to Sunday);
/// everything made within a duration of the newest checkpoint (--keep-within); the N
/// newest prompts of agent sessions, each whole: every checkpoint of its turn, from the
/// prompt's to the turn's last, and those on the line between (--keep-prompts); every
/// checkpoint of the N agent sessions last active (--keep-sessions); every branch tip,
/// fetched ones (<remote>/<branch>) too; the current checkpoint; pinned checkpoints (see
/// `pin`); for 7 days after an operation, what undoing it needs, and what a `drop` took
/// out (see `op log`). Every other checkpoint is removed, except that a prompt's
/// checkpoint kept for any reason keeps its turn's last one too, so that the turn can
/// still be shown, diffed and reverted. A kept checkpoint whose parent goes is re-linked
/// to its nearest kept ancestor. A turn gc removed says so, and when, where it is named.
/// Then the trees and chunks no kept checkpoint reaches are deleted and the store file is
/// compacted, so the disk space goes back to the system.
///
/// Without any --keep option no checkpoint is removed: gc only deletes data that nothing
/// reaches and compacts the file.
///
/// --max-size: after the rules, also remove the oldest checkpoints that are neither a
/// branch tip, nor current, nor pinned, until the live data (stored bytes of everything
/// kept) fits.
///
/// Durations are numbers with y, m (months), w, d or h: 2d, 12h, 1w, 1y6m. Sizes take K,
/// M, G or T (powers of 1024): 500M, 2G. The same rules in git config
/// (checkpoint.gc.keep, checkpoint.gc.keepWithin, checkpoint.gc.keepDaily …,
/// checkpoint.gc.keepPrompts, checkpoint.gc.keepSessions, checkpoint.gc.maxSize) make
/// every save run this gc when the rules would remove something.
///
/// Examples:
///
///   git checkpoint gc --keep 10
///
///   git checkpoint gc --keep-prompts 20 --keep-within 7d
///
///   git checkpoint gc --keep-within 2d --keep-daily 7 --keep-weekly 4 --dry-run -v
///
///   git checkpoint gc --max-size 2G
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Keep the N newest checkpoints.
    #[arg(long, value_name = "N")]
    keep: Option<usize>,
    /// Keep every checkpoint made within this long before the newest one (e.g. 2d, 12h).
    #[arg(long, value_name = "duration")]
    keep_within: Option<Span>,
    /// Keep the newest checkpoint of each of the last N hours that have one.
    #[arg(long, value_name = "N")]
    keep_hourly: Option<usize>,
    /// Keep the newest checkpoint of each of the last N days that have one.
    #[arg(long, value_name = "N")]
    keep_daily: Option<usize>,
    /// Keep the newest checkpoint of each of the last N weeks that have one.
    #[arg(long, value_name = "N")]
    keep_weekly: Option<usize>,
    /// Keep the newest checkpoint of each of the last N months that have one.
    #[arg(long, value_name = "N")]
    keep_monthly: Option<usize>,
    /// Keep the newest checkpoint of each of the last N years that have one.
    #[arg(long, value_name = "N")]
    keep_yearly: Option<usize>,
    /// Keep the N newest prompts of agent sessions whole: each prompt's turn, every
    /// checkpoint from the prompt's to the turn's last.
    #[arg(long, value_name = "N")]
    keep_prompts: Option<usize>,
    /// Keep every checkpoint of the N agent sessions last active.
    #[arg(long, value_name = "N")]
    keep_sessions: Option<usize>,
    /// Then remove the oldest unprotected checkpoints until the live data fits this size.
    #[arg(long, value_name = "size", value_parser = parse_size_arg)]
    max_size: Option<u64>,
    /// Print what would go and what it would free, and change nothing.
    #[arg(long)]
    dry_run: bool,
    /// List every checkpoint removed, not only the first few.
    #[arg(short, long)]
    verbose: bool,
}

/// Reads `--max-size` as `checkpoint.gc.maxSize` is read.
fn parse_size_arg(text: &str) -> Result<u64, String> {
    parse_size(text).map_err(|e| e.to_string())
}

/// Runs `gc`.
pub fn run(context: &Context, args: Args) -> anyhow::Result<()> {
    let options = GcOptions {
        policy: Policy {
            last: args.keep,
            hourly: args.keep_hourly,
            daily: args.keep_daily,
            weekly: args.keep_weekly,
            monthly: args.keep_monthly,
            yearly: args.keep_yearly,
            within: args.keep_within,
            prompts: args.keep_prompts,
            sessions: args.keep_sessions,
        },
        max_size: args.max_size,
    };
    if args.dry_run {
        let started = Instant::now();
        let store = context.open_read_store()?;
        let plan = gc::plan(
            &store.snapshot()?,
            &options,
            git_checkpoint::clock::now_ns(),
        )?;
        let seconds = started.elapsed().as_secs_f64();
        return report(context, &options, &plan, None, seconds, args.verbose);
    }
    let mut store = context.open_store()?;
    let (plan, outcome) = gc::run(&mut store, &options)?;
    report(
        context,
        &options,
        &plan,
        Some(&outcome),
        outcome.seconds,
        args.verbose,
    )
}

/// Reports what the gc did (`outcome`) or would do (`None`).
fn report(
    context: &Context,
    options: &GcOptions,
    plan: &Plan,
    outcome: Option<&Outcome>,
    seconds: f64,
    verbose: bool,
) -> anyhow::Result<()> {
    let policy = (!options.policy.is_empty()).then(|| options.policy.describe());
    if context.json {
        return json::print(&GcJson::new(
            policy,
            options.max_size,
            plan,
            outcome,
            seconds,
        ));
    }
    let (verb, data_verb) = match outcome {
        Some(_) => ("Removed", "Deleted"),
        None => ("Would remove", "Would delete"),
    };
    let rule = policy.unwrap_or_else(|| "no --keep rule: only unreachable data".into());
    context.say(&format!(
        "{verb} {} of {} ({rule})",
        plan.removed.len(),
        counted(plan.total, "checkpoint")
    ));
    let shown = if verbose {
        plan.removed.len()
    } else {
        SUMMARY_ROWS
    };
    say_removals(context, &plan.removed, shown);
    if let Some(budget) = options.max_size {
        let for_size = plan.removed.iter().filter(|r| r.for_size).count();
        context.say(&format!(
            "--max-size {}: {} {} to fit; live data {}",
            human_bytes(budget),
            counted(for_size, "oldest unprotected checkpoint"),
            if outcome.is_some() {
                "went"
            } else {
                "would go"
            },
            human_bytes(plan.live_bytes.unwrap_or(0))
        ));
        if plan.over_budget {
            context.warn(format!(
                "live data {} still exceeds --max-size {}: branch tips, the current checkpoint and pinned checkpoints alone need that much",
                human_bytes(plan.live_bytes.unwrap_or(0)),
                human_bytes(budget)
            ));
        }
    }
    if !plan.reparented.is_empty() {
        context.say(&format!(
            "{} {} to {} nearest kept ancestor",
            if outcome.is_some() {
                "Re-linked"
            } else {
                "Would re-link"
            },
            counted(plan.reparented.len(), "kept checkpoint"),
            if plan.reparented.len() == 1 {
                "its"
            } else {
                "their"
            }
        ));
    }
    context.say(&format!(
        "{data_verb} {} and {}: {} of stored data{}",
        counted(plan.chunks.len(), "chunk"),
        counted(plan.trees.len(), "tree"),
        human_bytes(plan.removed_bytes),
        plan.live_bytes
            .map(|live| format!(" (live data left: {})", human_bytes(live)))
            .unwrap_or_default()
    ));
    if let Some(outcome) = outcome {
        context.say(&format!(
            "Store file: {} -> {}, {} freed on disk ({seconds:.2} s)",
            human_bytes(outcome.file_before),
            human_bytes(outcome.file_after),
            signed_bytes(outcome.freed())
        ));
    }
    Ok(())
}

/// Lists the first `shown` of the checkpoints a gc or a drop removes, one line each:
/// short id, age, `[max-size]` when the size budget took it, message.
pub(super) fn say_removals(context: &Context, removed: &[Removal], shown: usize) {
    let now = git_checkpoint::clock::now_ns();
    for removal in removed.iter().take(shown) {
        context.say(&format!(
            "  {} {:>15}  {}{}",
            removal.short_id,
            relative_time(removal.checkpoint.time_ns, now),
            if removal.for_size { "[max-size] " } else { "" },
            removal.checkpoint.message
        ));
    }
    if removed.len() > shown {
        context.say(&format!(
            "  ... and {} more (-v lists every one)",
            removed.len() - shown
        ));
    }
}
