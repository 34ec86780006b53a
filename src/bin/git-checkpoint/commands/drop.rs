//! `git checkpoint drop`

use std::collections::BTreeSet;
use std::time::Instant;

use git_checkpoint::format::size::human_bytes;
use git_checkpoint::model::session::Session;
use git_checkpoint::ops::gc::{self, Outcome, Plan};
use git_checkpoint::remote::{configured_remotes, has_remote};
use git_checkpoint::storage::{Snapshot, StoreRead};
use git_checkpoint::CheckpointId;

use super::{print_json, Context};
use crate::ui::output::relative_time;

/// Remove checkpoints: the ones named, or every checkpoint of an agent session.
///
/// Each checkpoint named goes, with the content only it holds; its children are
/// re-linked to its parents, as gc does. A branch (or a detached HEAD) whose tip goes
/// moves back to its nearest first-parent ancestor that stays. The worktree is never
/// touched. Pinned checkpoints and the target of an interrupted restore are refused, and
/// so is a drop that would leave a branch or HEAD without any checkpoint. The tip of a
/// fetched branch stays while it mirrors a remote; once its remote is removed, or when
/// its record or tree is damaged, it can be dropped, and the fetched branch is
/// forgotten (a fetch brings it back if the remote still has it). --session
/// drops a whole agent session once its work is kept elsewhere (a commit, a branch).
///
/// Examples:
///
///   git checkpoint drop 3fa9c1e 77d0b52
///
///   git checkpoint drop --session 4f2a9c1d --dry-run
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The checkpoints to remove.
    #[arg(value_name = "rev", required_unless_present = "session")]
    revs: Vec<String>,
    /// Also every checkpoint of the agent session whose id starts so.
    #[arg(long, value_name = "id-prefix")]
    session: Option<String>,
    /// Say what would go, and change nothing.
    #[arg(long)]
    dry_run: bool,
}

/// Runs `drop`.
pub fn run(context: &Context, args: Args) -> anyhow::Result<()> {
    let started = Instant::now();
    if args.dry_run {
        let store = context.open_read_store()?;
        let plan = plan(context, &store.snapshot()?, &args)?;
        return report(context, &plan, None);
    }
    let mut store = context.open_store()?;
    let plan = plan(context, &store.snapshot()?, &args)?;
    let outcome = gc::apply(&mut store, &plan, started, |_| true)?;
    report(context, &plan, Some(&outcome))
}

fn plan(context: &Context, snapshot: &Snapshot, args: &Args) -> anyhow::Result<Plan> {
    let mut ids: BTreeSet<CheckpointId> = args
        .revs
        .iter()
        .map(|rev| snapshot.resolve(rev))
        .collect::<Result<_, _>>()?;
    if let Some(prefix) = &args.session {
        let records = snapshot.checkpoints()?;
        let session = Session::find(&records, prefix)?;
        ids.extend(records.iter().filter_map(|(id, record)| {
            record
                .meta
                .iter()
                .any(|(k, v)| k == "session" && *v == session)
                .then_some(*id)
        }));
    }
    let remotes = configured_remotes(&context.workspace.repo)?;
    let mut released = BTreeSet::new();
    for (name, tip) in snapshot.remote_branches()? {
        if ids.contains(&tip) && (!has_remote(&name, &remotes) || damaged(snapshot, tip)) {
            released.insert(name);
        }
    }
    Ok(gc::plan_drop(snapshot, &ids, &released)?)
}

/// Whether checkpoint `id`'s record, or a tree below it, is damaged: such a checkpoint
/// can always be dropped, so that a store is never stuck with it.
fn damaged(snapshot: &Snapshot, id: CheckpointId) -> bool {
    match snapshot.checkpoint(id) {
        Ok(record) => snapshot.tree_graph(std::iter::once(record.tree)).is_err(),
        Err(_) => true,
    }
}

fn report(context: &Context, plan: &Plan, outcome: Option<&Outcome>) -> anyhow::Result<()> {
    if context.json {
        return print_json(&serde_json::json!({
            "dry_run": outcome.is_none(),
            "removed": plan.removed.iter().map(|r| serde_json::json!({
                "id": r.id.hex(),
                "short_id": r.short_id,
                "message": r.checkpoint.message,
            })).collect::<Vec<_>>(),
            "reparented": plan.reparented.len(),
            "moved_branches": plan.moved_branches.iter().map(|(name, tip)| serde_json::json!({
                "branch": name,
                "tip": tip.hex(),
            })).collect::<Vec<_>>(),
            "moved_head": plan.moved_head.map(|id| id.hex()),
            "forgotten_fetched": plan.forgotten_fetched,
            "stored_bytes_removed": plan.removed_bytes,
        }));
    }
    let verb = if outcome.is_some() {
        "Dropped"
    } else {
        "Would drop"
    };
    context.say(&format!(
        "{verb} {} checkpoint(s), {} of stored data",
        plan.removed.len(),
        human_bytes(plan.removed_bytes)
    ));
    let now = git_checkpoint::clock::now_ns();
    for removal in &plan.removed {
        context.say(&format!(
            "  {} {:>15}  {}",
            removal.short_id,
            relative_time(removal.checkpoint.time_ns, now),
            removal.checkpoint.message
        ));
    }
    let moves = if outcome.is_some() {
        "moved"
    } else {
        "would move"
    };
    for (name, tip) in &plan.moved_branches {
        context.say(&format!(
            "Branch {name} {moves} back to {}; the worktree is as it was",
            &tip.hex()[..7]
        ));
    }
    if let Some(id) = plan.moved_head {
        context.say(&format!("HEAD {moves} back to {}", &id.hex()[..7]));
    }
    let forgets = if outcome.is_some() {
        "forgotten"
    } else {
        "would be forgotten"
    };
    for name in &plan.forgotten_fetched {
        context.say(&format!("Fetched branch {name} {forgets}"));
    }
    Ok(())
}
