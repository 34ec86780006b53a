//! What `browse` reads from the store and does to it. Each function opens the store,
//! does one thing and closes it again, so that the UI never holds the store while it
//! waits for a key: agents' hooks and other commands go on meanwhile.

use std::collections::BTreeSet;

use git_checkpoint::diff::{changes_from_parent, checkpoint_root, diff_trees, PathFilter};
use git_checkpoint::ops::drop::{self, Dropped};
use git_checkpoint::ops::gc;
use git_checkpoint::ops::log_walk::LogWalk;
use git_checkpoint::ops::op_log::{self, History, UndoOptions};
use git_checkpoint::ops::restore::{restore, HeadUpdate, RestoreOptions, RestoreReport};
use git_checkpoint::ops::revert::{Status, Undo};
use git_checkpoint::ops::session_restore::{self, SessionRestoreOptions};
use git_checkpoint::storage::StoreRead;
use git_checkpoint::text::{counted, escape_controls};
use git_checkpoint::CheckpointId;

use super::action::{short_session, Action};
use super::entries::Entry;
use crate::commands::revert::{answer as revert_answer, RevertRequest};
use crate::commands::{op, Context};
use crate::ui::answer::{Answer, Front, Part};
use crate::ui::output::{labels, show_path};

/// The list, read a page at a time in `log --all` order ([`LogWalk`]): the walk keeps
/// what it has read between pages, the store is opened for each page only.
pub struct Lister {
    walk: LogWalk,
}

impl Lister {
    /// Starts the list; returns it with how many checkpoints the store holds.
    pub fn start(context: &Context) -> anyhow::Result<(Lister, u64)> {
        let store = context.open_read_store()?;
        let read = store.snapshot()?;
        let walk = LogWalk::all(&read)?;
        Ok((Lister { walk }, read.checkpoint_count()?))
    }

    /// Whether the whole list has been read.
    pub fn done(&self) -> bool {
        self.walk.is_done()
    }

    /// The next `n` checkpoints of the list, with what the list shows of each.
    pub fn page(&mut self, context: &Context, n: usize) -> anyhow::Result<Vec<Entry>> {
        let store = context.open_read_store()?;
        let read = store.snapshot()?;
        let entries = self.walk.next_page(&read, n)?;
        let pinned = read.pins()?;
        let head = read.head()?;
        let branches = read.branches_and_fetched()?;
        let checkpoints = read.checkpoint_reader()?;
        entries
            .into_iter()
            .map(|e| {
                Ok(Entry {
                    short: checkpoints.short_id(e.id)?,
                    labels: labels(e.id, &head, &branches),
                    pinned: pinned.contains(&e.id),
                    time_ns: e.record.time_ns,
                    message: e.record.message,
                    meta: e.record.meta,
                    id: e.id,
                    graph_parents: e.graph_parents,
                })
            })
            .collect()
    }
}

/// The paths checkpoint `id` changed against its first parent: the files a file
/// restore offers.
pub fn changed_paths(context: &Context, id: CheckpointId) -> anyhow::Result<Vec<Vec<u8>>> {
    let store = context.open_read_store()?;
    let read = store.snapshot()?;
    let record = read.checkpoint(id)?;
    let trees = read.checked_trees(None)?;
    Ok(changes_from_parent(&read, &trees, &record)?
        .into_iter()
        .map(|change| change.path)
        .collect())
}

/// The paths the change `rev` names changed ([`Undo::resolve`]: a step against its
/// first parent, a range from A to B): the files a file revert offers.
pub fn change_paths(context: &Context, rev: &str) -> anyhow::Result<Vec<Vec<u8>>> {
    let store = context.open_read_store()?;
    let read = store.snapshot()?;
    let trees = read.checked_trees(None)?;
    // Resolved as the revert resolves it: a first checkpoint has nothing to go back to.
    let Some((from, to)) = Undo::resolve(&read, rev)?.checkpoints else {
        return Ok(Vec::new());
    };
    let from = checkpoint_root(&read, &trees, from)?;
    let to = checkpoint_root(&read, &trees, to)?;
    Ok(
        diff_trees(&trees, Some(from), Some(to), &PathFilter::default())?
            .into_iter()
            .map(|change| change.path)
            .collect(),
    )
}

/// The first of `candidates` (an id, and whether its message or metadata matched
/// already) that matched, or that changed a path containing `needle`: the search.
/// Trees are read only for candidates before the first text match.
pub fn find(
    context: &Context,
    candidates: &[(usize, CheckpointId, bool)],
    needle: &str,
) -> anyhow::Result<Option<usize>> {
    let store = context.open_read_store()?;
    let read = store.snapshot()?;
    let trees = read.checked_trees(None)?;
    let needle = needle.to_lowercase();
    for &(index, id, matched) in candidates {
        if matched {
            return Ok(Some(index));
        }
        let record = read.checkpoint(id)?;
        let changes = changes_from_parent(&read, &trees, &record)?;
        if changes
            .iter()
            .any(|c| show_path(&c.path).to_lowercase().contains(&needle))
        {
            return Ok(Some(index));
        }
    }
    Ok(None)
}

/// Carries out `action` and says, in one line, what it did.
pub fn act(context: &Context, action: &Action) -> anyhow::Result<String> {
    match action {
        Action::Restore { id, .. } => {
            let report = restore_to(context, *id, Vec::new(), HeadUpdate::default())?;
            restored(context, &report, "Restored checkpoint")
        }
        Action::RestoreFile { id, path, .. } => {
            let report = restore_to(context, *id, vec![path.clone()], HeadUpdate::default())?;
            restored(
                context,
                &report,
                &format!("Restored {} from", escape_controls(&show_path(path))),
            )
        }
        Action::Fork { id, .. } => {
            let branch = context.open_read_store()?.snapshot()?.next_fork_name()?;
            let report = restore_to(
                context,
                *id,
                Vec::new(),
                HeadUpdate::NewBranch(branch.clone()),
            )?;
            restored(
                context,
                &report,
                &format!("Switched to a new branch '{}' at", branch.as_str()),
            )
        }
        Action::Pin { id, .. } => {
            let store = context.open_store()?;
            let (id, changed) = gc::pin(&store, &id.hex())?;
            let short = store.snapshot()?.short_id(id)?;
            Ok(match changed {
                true => format!("Pinned checkpoint {short}: gc will keep it"),
                false => format!("Checkpoint {short} was already pinned"),
            })
        }
        Action::Drop { id, short } => {
            // As `drop` does: recorded in the operation log, kept for `undo`.
            let store = context.open_store()?;
            let ids = BTreeSet::from([*id]);
            let plan = gc::plan_drop(&store.snapshot()?, &ids, &BTreeSet::new())?;
            Ok(match drop::drop(&store, &plan)? {
                Dropped::KeptForUndo => {
                    format!("Dropped checkpoint {short}; 'git checkpoint undo' brings it back")
                }
                Dropped::Deleted => format!(
                    "Dropped checkpoint {short} for good: a damaged checkpoint cannot be kept for undo"
                ),
            })
        }
        Action::RestoreSession { id, short, session } => {
            restore_session(context, *id, short, session)
        }
        Action::Revert { rev, .. } => revert_change(context, rev, Vec::new(), rev),
        Action::RevertFile { rev, path } => {
            let what = format!("{} in {rev}", escape_controls(&show_path(path)));
            revert_change(context, rev, vec![path.clone()], &what)
        }
        Action::Undo { number, .. } => undo(context, *number),
    }
}

/// What `U` asks: to undo the operation `undo` would undo now.
pub fn next_undo(context: &Context) -> anyhow::Result<Action> {
    let store = context.open_read_store()?;
    let history = History::read(&store.snapshot()?)?;
    let entry = history.next_undo()?;
    Ok(Action::Undo {
        number: entry.number,
        summary: entry.op.summary.clone(),
    })
}

/// `undo <number>`, as the command runs it but without a progress bar (the terminal is
/// the UI's), said in one line: `undo`'s lines joined, escaped as the CLI prints them.
fn undo(context: &Context, number: u64) -> anyhow::Result<String> {
    let store = context.open_store()?;
    let options = UndoOptions {
        settings: context.workspace.settings.clone(),
        progress: None,
    };
    let report = op_log::undo_op(&context.workspace.repo, &store, number, &options)?;
    let said = op::undo_answer(&store, report)?.said(Front::Cli { colour: false })?;
    let parts: Vec<String> = (said.0.into_iter())
        .filter_map(|part| match part {
            Part::Line(line) => Some(escape_controls(&line).into_owned()),
            Part::Warning(warning) => Some(format!("warning: {}", escape_controls(&warning))),
            Part::Raw(_) => None,
        })
        .collect();
    Ok(parts.join("; "))
}

/// `restore <id> --only-session <session>`, as the command runs it (conflicting paths
/// left alone), said in one line.
fn restore_session(
    context: &Context,
    id: CheckpointId,
    short: &str,
    session: &str,
) -> anyhow::Result<String> {
    let options = SessionRestoreOptions {
        session: Some(session.to_string()),
        force: false,
        restore: RestoreOptions {
            settings: context.workspace.settings.clone(),
            ..RestoreOptions::default()
        },
    };
    let report = {
        let store = context.open_store()?;
        session_restore::restore_session(&context.workspace.repo, &store, &id.hex(), &options)?
    };
    let name = escape_controls(&short_session(&report.session)).into_owned();
    let mut line = match &report.restore {
        Some(restore) => restored(
            context,
            restore,
            &format!("Restored the files of session {name} from"),
        )?,
        None => format!(
            "Nothing to restore: session {name} changed {} since {short}",
            counted(report.changed_by_session.len(), "path")
        ),
    };
    let left = report.left_alone();
    if left > 0 {
        let paths: Vec<String> = report
            .conflicts
            .iter()
            .map(|c| escape_controls(&show_path(&c.path)).into_owned())
            .collect();
        line += &format!(
            "; left {} alone that someone else changed too: {}",
            counted(left, "path"),
            paths.join(", ")
        );
    }
    Ok(line)
}

/// `revert <rev> [-- <paths>]`, through the answer the command gives (conflicts written
/// with markers or left), said in one line: what was undone (`label`), how it went, the
/// checkpoint it was saved as and the one that undoes it.
fn revert_change(
    context: &Context,
    rev: &str,
    paths: Vec<Vec<u8>>,
    label: &str,
) -> anyhow::Result<String> {
    let request = RevertRequest {
        rev: rev.to_string(),
        paths,
        ..RevertRequest::default()
    };
    // Quiet: no progress bar, and no note that it waits for the store, drawn over the UI.
    let quiet = Context {
        workspace: context.workspace.clone(),
        quiet: true,
        json: false,
    };
    let answer = revert_answer(&quiet, request)?;
    let report = &answer.report;
    if report.paths.is_empty() {
        return Ok(format!("Nothing to revert: {label} changed no file"));
    }
    let mut line = format!(
        "Reverted {label}: {} applied, {} conflicting, {} unchanged",
        report.with(Status::Applied).count(),
        report.with(Status::Conflict).count(),
        report.with(Status::Unchanged).count()
    );
    if let Some((short, _)) = &answer.result {
        line += &format!("; saved as checkpoint {short}");
    }
    if let Some(short) = &answer.worktree {
        line += &match report.safety_checkpoint {
            Some(_) => format!("; unsaved changes saved as {short} (U undoes it)"),
            None => format!("; the worktree was saved already as {short} (U undoes it)"),
        };
    }
    let conflicts = report.conflicts();
    if !conflicts.is_empty() {
        let paths: Vec<String> = conflicts
            .iter()
            .map(|p| escape_controls(p).into_owned())
            .collect();
        line += &format!("; conflicts: {}", paths.join(", "));
    }
    let warning = (answer.warnings.first().cloned())
        .or_else(|| report.warnings.first().map(ToString::to_string));
    if let Some(warning) = warning {
        line += &format!("; warning: {}", escape_controls(&warning));
    }
    Ok(line)
}

/// Restores checkpoint `id` (only `paths`, if any) as `restore` and `fork` do: unsaved
/// changes are saved first, so the restore can be undone.
fn restore_to(
    context: &Context,
    id: CheckpointId,
    paths: Vec<Vec<u8>>,
    head: HeadUpdate,
) -> anyhow::Result<RestoreReport> {
    let store = context.open_store()?;
    let options = RestoreOptions {
        paths,
        head,
        settings: context.workspace.settings.clone(),
        ..RestoreOptions::default()
    };
    Ok(restore(
        &context.workspace.repo,
        &store,
        &id.hex(),
        &options,
    )?)
}

/// The line that reports a restore: `<done> <id>: N written, M deleted`, the checkpoint
/// that holds the unsaved changes, and how many warnings there were.
fn restored(context: &Context, report: &RestoreReport, done: &str) -> anyhow::Result<String> {
    let store = context.open_read_store()?;
    let read = store.snapshot()?;
    let target = crate::ui::answer::restore::restored(report)?;
    let mut line = format!(
        "{done} {}: {} written, {} deleted",
        read.short_id(target)?,
        report.written.len(),
        report.deleted.len()
    );
    if let Some(safety) = report.safety_checkpoint {
        line += &format!(
            "; unsaved changes saved as {} (U undoes it)",
            read.short_id(safety)?
        );
    }
    if let Some(warning) = report.warnings.first() {
        line += &format!("; warning: {}", escape_controls(&warning.to_string()));
    }
    Ok(line)
}
