//! `git checkpoint drop`

use std::collections::BTreeSet;

use git_checkpoint::format::size::human_bytes;
use git_checkpoint::model::session::Session;
use git_checkpoint::ops::drop::Dropped;
use git_checkpoint::ops::gc::{self, Plan};
use git_checkpoint::remote::{configured_remotes, has_remote};
use git_checkpoint::storage::{Snapshot, StoreRead};
use git_checkpoint::text::counted;
use git_checkpoint::CheckpointId;

use super::Context;
use crate::ui::json::{self, DropJson};

/// Remove checkpoints: the ones named, or every checkpoint of an agent session.
///
/// Each checkpoint named goes from the history; its children are re-linked to its
/// parents, as gc does. Its record and the content only it holds stay for the undo
/// window (7 days): `git checkpoint undo` brings it all back, and a gc after that
/// deletes them. A branch (or a detached HEAD) whose tip goes
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
    if args.dry_run {
        let store = context.open_read_store()?;
        let snapshot = store.snapshot()?;
        let plan = plan(context, &snapshot, &args)?;
        return report(context, &snapshot, &plan, None);
    }
    let store = context.open_store()?;
    let plan = plan(context, &store.snapshot()?, &args)?;
    let dropped = git_checkpoint::ops::drop::drop(&store, &plan)?;
    report(context, &store.snapshot()?, &plan, Some(dropped))
}

/// What the drop removes: the checkpoints named and the session's, with the fetched
/// branches whose tips go released when nothing holds them (their remote is gone, or the
/// tip is damaged).
fn plan(context: &Context, snapshot: &Snapshot, args: &Args) -> anyhow::Result<Plan> {
    let mut ids: BTreeSet<CheckpointId> = args
        .revs
        .iter()
        .map(|rev| snapshot.resolve(rev))
        .collect::<Result<_, _>>()?;
    if let Some(prefix) = &args.session {
        let records = snapshot.checkpoints()?;
        let session = Session::find(&records, prefix)?;
        ids.extend(Session::members(&records, &session));
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

/// Reports what the drop did (`applied`: what became of the checkpoints) or would do
/// (`None`); `snapshot` reads the store as it is now, for the short ids of the
/// checkpoints that stay.
fn report(
    context: &Context,
    snapshot: &Snapshot,
    plan: &Plan,
    applied: Option<Dropped>,
) -> anyhow::Result<()> {
    if context.json {
        return json::print(&DropJson::new(plan, applied));
    }
    let (n, size) = (
        counted(plan.removed.len(), "checkpoint"),
        human_bytes(plan.removed_bytes),
    );
    context.say(&match applied {
        Some(Dropped::KeptForUndo) => {
            let (them, their) = match plan.removed.len() {
                1 => ("it", "its"),
                _ => ("them", "their"),
            };
            format!(
                "Dropped {n}; 'git checkpoint undo' brings {them} back ({their} {size} of stored data stay until a gc 7 days from now)"
            )
        }
        Some(Dropped::Deleted) => format!(
            "Dropped {n}, {size} of stored data, for good: a damaged checkpoint cannot be kept for undo"
        ),
        None => format!("Would drop {n}, {size} of stored data"),
    });
    let applied = applied.is_some();
    super::gc::say_removals(context, &plan.removed, plan.removed.len());
    let moves = if applied { "moved" } else { "would move" };
    for (name, tip) in &plan.moved_branches {
        context.say(&format!(
            "Branch {name} {moves} back to {}; the worktree is as it was",
            snapshot.short_id(*tip)?
        ));
    }
    if let Some(id) = plan.moved_head {
        context.say(&format!("HEAD {moves} back to {}", snapshot.short_id(id)?));
    }
    let forgets = if applied {
        "forgotten"
    } else {
        "would be forgotten"
    };
    for name in &plan.forgotten_fetched {
        context.say(&format!("Fetched branch {name} {forgets}"));
    }
    Ok(())
}
