//! Reverting: undo what one checkpoint changed (or a range of them), in today's worktree,
//! keeping everything since, as `git revert` does for a commit.
//!
//! The change undone is "from tree X to tree Y" ([`Undo`]): a checkpoint against its
//! first parent, or a range `A..B`; any revision form that resolves to such a pair plugs
//! in. Each path that differs between X and Y is merged three ways: base Y (what the
//! change made), ours the worktree, theirs X (what was there before). Paths the change did
//! not touch are never looked at.
//!
//! Per path, with O the worktree's node, B the base's and T theirs:
//! - O is B (nothing changed it since): it becomes T (written, or deleted). Where
//!   something is in the way of T, it goes only if the revert itself removes it: a file
//!   the change turned into a directory comes back once the directory's files are
//!   deleted, and the reverse; anything else in the way is a conflict.
//! - O is T already: unchanged.
//! - Files on all three sides: the content and the permission bits are merged apart.
//!   Content: O is B's → T's; T is B's or O's → O's; otherwise a text merge by
//!   [`diffy`] (clean, or with git's conflict markers); binary content is never merged
//!   (conflict, O is left). Bits: O kept B's → T's, else O's.
//! - Anything else (a symlink changed on both sides, a file R created and ours changed
//!   since, a file R deleted that something now occupies, a directory in the way) is a
//!   conflict that leaves the worktree's path as it is.
//!
//! Order of work, as restore's (docs/design.md invariant 1): the worktree is saved first
//! (the safety checkpoint, beside HEAD's branch), the plan is made from exactly what was
//! saved, and then checked whole before anything is written: `--no-conflicts`, the race
//! check (a path changed since the save), the preflight (names, room, directories that
//! may be written, no immutable file to replace). A refused revert drops its safety
//! checkpoint again and changes nothing; its dry run refuses the same with the same
//! error. Then every new file or symlink is written under a temporary name beside its
//! target (a failure takes them back: still nothing changed), HEAD's branch moves to the
//! safety checkpoint, and the deletions and renames are made, through handles of the
//! directories they concern ([`crate::worktree`]), never through a path that could be a
//! symlink. A failure among those has changed some paths: [`Error::RevertStopped`] says
//! so and names the checkpoint whose restore undoes the revert. Last, a revert that left
//! no conflict saves its result as a checkpoint of its own, named after what it undid as
//! the user typed it ([`Undo::described`]), HEAD's branch moved to it; one that left
//! conflicts leaves them to the user, who saves once they are resolved.
//!
//! The work is split by job: this file holds the options, the report, [`Undo`] and the
//! two entry points ([`revert`], [`dry_run`]); `plan` decides per path (and clears the
//! way between files and directories), `merge` merges a path both sides changed
//! ([`ConflictStyle`], the relabelled markers), `preflight` checks the plan whole, and
//! `apply` stages and commits it through [`crate::worktree::Dir`] handles.

mod apply;
mod merge;
mod plan;
mod preflight;

use std::collections::BTreeSet;
use std::sync::Arc;

use crate::diff::content::{Content, ContentReader};
use crate::git::repo::Repo;
use crate::model::command_checkpoint::{
    KIND_KEY, REVERTED_KEY, REVERTED_PATHS_KEY, REVERT_KIND, REVISION_KEY,
};
use crate::model::operation::{NewOperation, OpKind, WorktreeChange};
use crate::model::revision;
use crate::model::tree::Node;
use crate::ops::save::{self, Warning};
use crate::progress::Progress;
use crate::settings::Settings;
use crate::storage::{Snapshot, Store, StoreRead};
use crate::text::counted;
use crate::worktree::{Barrier, Worktree};
use crate::{CheckpointId, Error, Result, TreeId};

use apply::still_as_saved;
use merge::read_ours;
pub use merge::ConflictStyle;
use plan::plan;
use preflight::preflight;

/// The change to undo: from tree `before` to tree `after`. Reverting it makes each path
/// it touched what it was in `before`, merged with what the worktree made of it since.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Undo {
    /// The state the change started from (the merge's "theirs").
    pub before: TreeId,
    /// The state the change made (the merge's base).
    pub after: TreeId,
    /// The checkpoints, where the pair came from checkpoints: (before, after).
    pub checkpoints: Option<(CheckpointId, CheckpointId)>,
    /// How conflict markers name the base side (`3fa9c1e`, `3fa9c1e..8b0d2aa`).
    pub after_label: String,
    /// How they name the side being gone back to (`parent of 3fa9c1e`).
    pub before_label: String,
    /// The revision as the user typed it (`5f1c:turn2`, `@~1`): what the checkpoints
    /// the revert saves are named after.
    pub revision: String,
    /// Undo the change for these paths only (from the worktree's top; a directory
    /// stands for what is below it); none: every path it touched. Each must match a
    /// path the change touched, as git's pathspecs must match a file.
    pub paths: Vec<Vec<u8>>,
}

impl Undo {
    /// The change `rev` names ([`Snapshot::resolve_change`]): a checkpoint against its
    /// first parent, a range `A..B` (from A to B) or a prompt's turn `<session>:turn<N>`
    /// (from its before-prompt checkpoint to its end). A first checkpoint has no parent
    /// to go back to: an error.
    pub fn resolve(snapshot: &Snapshot, rev: &str) -> Result<Undo> {
        let change = snapshot.resolve_change(rev)?;
        let to_short = snapshot.short_id(change.to)?;
        let Some(from) = change.from else {
            return Err(Error::NoParentToRevert {
                rev: rev.to_string(),
                checkpoint: to_short,
            });
        };
        let from_short = snapshot.short_id(from)?;
        let single = !change.turn && revision::parse_range(rev)?.is_none();
        let (before_label, after_label) = if single {
            (format!("parent of {to_short}"), to_short)
        } else {
            (from_short.clone(), format!("{from_short}..{to_short}"))
        };
        Ok(Undo {
            before: snapshot.checkpoint(from)?.tree,
            after: snapshot.checkpoint(change.to)?.tree,
            checkpoints: Some((from, change.to)),
            after_label,
            before_label,
            revision: rev.to_string(),
            paths: Vec::new(),
        })
    }

    /// The same change, undone for `paths` only ([`Undo::paths`]).
    pub fn limited_to(self, paths: Vec<Vec<u8>>) -> Undo {
        Undo { paths, ..self }
    }

    /// What was undone as the user wrote it: the revision, and the paths it was limited
    /// to as `-- <path>…` (`5f1c:turn2 -- src/a.rs`).
    pub fn described(&self) -> String {
        let mut text = self.revision.clone();
        if !self.paths.is_empty() {
            text.push_str(" --");
            for path in &self.paths {
                text.push(' ');
                text.push_str(&String::from_utf8_lossy(path));
            }
        }
        text
    }
}

/// How a revert runs.
#[derive(Clone, Debug, Default)]
pub struct RevertOptions {
    /// Plan only: change nothing, the store included.
    pub dry_run: bool,
    /// Change nothing if any path would conflict.
    pub no_conflicts: bool,
    /// How text conflicts are written.
    pub conflict_style: ConflictStyle,
    /// The `checkpoint.*` settings the safety save applies, from the caller's
    /// [`crate::ops::workspace::Workspace`].
    pub settings: Settings,
    /// Where to report progress, if anywhere.
    pub progress: Option<Arc<dyn Progress>>,
}

/// What became of one path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// The change to it was undone (written or deleted).
    Applied,
    /// Both the change and the worktree changed it; see [`PathReport::markers`].
    Conflict,
    /// Nothing to do: it is already as it was before the change, or the merge gives
    /// what the worktree holds.
    Unchanged,
}

impl Status {
    /// The word `--json` and the text report use.
    pub fn name(self) -> &'static str {
        match self {
            Status::Applied => "applied",
            Status::Conflict => "conflict",
            Status::Unchanged => "unchanged",
        }
    }
}

/// A file or symlink as the revert writes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Written {
    /// A regular file.
    File {
        /// Its content.
        bytes: Vec<u8>,
        /// Its permission bits, when they are not git's two (a `0600` key file).
        mode: Option<u32>,
        /// Whether it is executable (git's notion).
        executable: bool,
    },
    /// A symlink and its target.
    Symlink(Vec<u8>),
}

/// What the revert did (or would do) to one path the change touched.
#[derive(Clone, Debug)]
pub struct PathReport {
    /// Its worktree path.
    pub path: Vec<u8>,
    /// What became of it.
    pub status: Status,
    /// For a conflict: whether the file was written with conflict markers (a text
    /// conflict) or left as the worktree had it.
    pub markers: bool,
    /// Why, in a few words, for conflicts and unchanged paths.
    pub why: Option<String>,
    /// The worktree's node before the revert (`None`: nothing there).
    pub ours: Option<Node>,
    /// The worktree's content before the revert, read for a dry run's diff (`Absent`
    /// otherwise).
    pub ours_content: Content,
    /// What the path holds after the revert; `None` for a deletion, or when nothing is
    /// written.
    pub result: Option<Written>,
}

/// What a revert did, or would do.
#[derive(Debug, Default)]
pub struct RevertReport {
    /// The checkpoint the worktree was saved as first, if it had unsaved changes.
    pub safety_checkpoint: Option<CheckpointId>,
    /// The checkpoint holding the worktree as the revert found it: the safety checkpoint,
    /// or the current one when nothing was unsaved. Restoring it undoes the revert.
    pub worktree: Option<CheckpointId>,
    /// The checkpoint the revert saved its result as, HEAD's branch moved to it
    /// (`revert of <revision> (N files)`). `None` in a dry run, when nothing was
    /// written, when conflicts are left for the user to resolve and save, and when that
    /// save failed (a warning says so).
    pub checkpoint: Option<CheckpointId>,
    /// Whether a dry run found unsaved changes that a real run would save first.
    pub would_save: bool,
    /// Whether nothing was changed because this was a dry run.
    pub dry_run: bool,
    /// Every path the change touched, sorted.
    pub paths: Vec<PathReport>,
    /// Things the user should hear about.
    pub warnings: Vec<Warning>,
}

impl RevertReport {
    /// The paths with `status`.
    pub fn with(&self, status: Status) -> impl Iterator<Item = &PathReport> {
        self.paths.iter().filter(move |p| p.status == status)
    }

    /// The conflicting paths, as shown to the user.
    pub fn conflicts(&self) -> Vec<String> {
        self.with(Status::Conflict)
            .map(|p| String::from_utf8_lossy(&p.path).into_owned())
            .collect()
    }
}

/// Reverts `undo` in the worktree: saves it first, merges each path the change touched,
/// writes the result, and saves it as a checkpoint ([`RevertReport::checkpoint`]). Conflicts are written (or left) and reported; with
/// `no_conflicts`, any conflict refuses the whole revert before anything changes. So
/// does anything the preflight finds (names, room, directories that may be written,
/// immutable files): a refused revert changes nothing, and its safety checkpoint goes
/// again. A failure once the worktree began to change is [`Error::RevertStopped`],
/// which names the checkpoint that undoes it. A dry run is [`dry_run`].
pub fn revert(
    repo: &Repo,
    store: &Store,
    undo: &Undo,
    options: &RevertOptions,
) -> Result<RevertReport> {
    if options.dry_run {
        return dry_run(repo, store, undo, options);
    }
    let mut report = RevertReport::default();
    let view_before = store.snapshot()?.view()?;
    let saved = save::save_before_change(
        repo,
        store,
        format!("before revert of {}", undo.described()),
        &options.settings,
        options.progress.clone(),
    )?;
    report.warnings.extend(saved.report.warnings);
    report.safety_checkpoint = saved.made;
    let ours_id = saved.worktree;
    report.worktree = Some(ours_id);
    let skipped: BTreeSet<Vec<u8>> = saved.report.skipped.into_iter().map(|s| s.path).collect();
    let planned = {
        let snapshot = store.snapshot()?;
        let ours_tree = snapshot.checkpoint(ours_id)?.tree;
        let chunks = snapshot.chunks()?;
        let reader = ContentReader::new(&store.hasher, &chunks, None);
        let planned = plan(
            repo,
            &snapshot,
            (ours_tree, None),
            &skipped,
            undo,
            &reader,
            &reader,
            options,
        );
        planned.and_then(|paths| Ok((paths, snapshot.short_id(ours_id)?)))
    };
    let (paths, way_back) = match planned {
        Ok(planned) => planned,
        Err(e) => {
            forget(store, report.safety_checkpoint);
            return Err(e);
        }
    };
    report.paths = paths;
    if let Err(e) = refusal(&report, options) {
        forget(store, report.safety_checkpoint);
        return Err(e);
    }
    if !report.paths.iter().any(apply::changes) {
        // Nothing is written: the worktree is as it was saved, and needs no way back.
        forget(store, report.safety_checkpoint);
        report.safety_checkpoint = None;
        report.worktree = None;
        return Ok(report);
    }
    // Something may have changed the worktree since it was saved (an agent still at
    // work): what the plan replaces must still be what it merged, else nothing is done.
    crate::fault::point("revert-planned");
    let worktree = Worktree::open(&repo.root, Barrier::Filesystem)?;
    let checked = still_as_saved(repo, &report.paths)
        .and_then(|()| preflight(repo, &report.paths))
        .and_then(|()| apply::stage(&worktree, &report.paths));
    let staged = match checked {
        Ok(staged) => staged,
        Err(e) => {
            forget(store, report.safety_checkpoint);
            return Err(e);
        }
    };
    crate::fault::point("revert-staged");
    // HEAD's branch takes the safety checkpoint, as a save would have moved it: the
    // worktree it records is the one the revert starts from.
    if let Some(safety) = report.safety_checkpoint {
        let moved = store.transaction().and_then(|txn| {
            txn.move_head(safety)?;
            txn.commit()
        });
        if let Err(e) = moved {
            apply::unstage(&worktree, &report.paths, &staged);
            forget(store, report.safety_checkpoint);
            return Err(e);
        }
    }
    let total = report.paths.iter().filter(|p| apply::changes(p)).count();
    let changed = apply::commit(&worktree, &report.paths, staged);
    // The operation log's record of the revert (docs/undo.md): the worktree before it
    // and the paths it changed. It goes into the revert's last transaction: the save of
    // its result, or, when there is none, the one that forgets the stat cache.
    let operation = |paths: &[Vec<u8>]| {
        let mut op = NewOperation::new(
            OpKind::Revert,
            format!("revert of {}", undo.described()),
            view_before.clone(),
        );
        op.worktree = Some(WorktreeChange {
            before: ours_id,
            after: None,
            paths: paths.to_vec(),
        });
        op
    };
    // The stat cache may hold the old files' metadata, equal in size and time to the new
    // ones within the clock's grain: forgotten before anything saves, so that the next
    // save (the result's first) reads them.
    let forget_cached = |paths: &[Vec<u8>], op: Option<NewOperation>| -> Result<()> {
        let txn = store.transaction()?;
        txn.forget_cached(paths)?;
        if let Some(op) = op {
            txn.record_operation(op)?;
        }
        txn.commit()
    };
    match changed {
        // Conflicts are left to the user, who saves once they are resolved.
        Ok(changed) if !report.conflicts().is_empty() => {
            forget_cached(&changed, Some(operation(&changed)))?;
        }
        Ok(changed) => {
            forget_cached(&changed, None)?;
            save_the_result(repo, store, undo, options, operation(&changed), &mut report)?;
        }
        Err(stopped) => {
            let _ = forget_cached(&stopped.changed, Some(operation(&stopped.changed)));
            return Err(Error::RevertStopped {
                done: stopped.changed.len(),
                total,
                cause: Box::new(stopped.error),
                checkpoint: way_back,
            });
        }
    }
    Ok(report)
}

/// Saves what the revert made of the worktree as a checkpoint of its own, child of the
/// one that holds the worktree as the revert found it: `revert of <revision> (N
/// files)`, its metadata naming the change undone by id. The save's transaction records
/// `operation`, the revert, with the result as the worktree it left, so that the two
/// commit together (docs/design.md invariant 27). The revert is done whatever happens
/// to the save: a failed one is a warning, and the revert is then recorded on its own.
fn save_the_result(
    repo: &Repo,
    store: &Store,
    undo: &Undo,
    options: &RevertOptions,
    operation: NewOperation,
    report: &mut RevertReport,
) -> Result<()> {
    let changed = operation.worktree.as_ref().map_or(0, |w| w.paths.len());
    let mut meta = vec![
        (KIND_KEY.to_string(), REVERT_KIND.to_string()),
        (REVISION_KEY.to_string(), undo.revision.clone()),
    ];
    if let Some((from, to)) = undo.checkpoints {
        meta.push((REVERTED_KEY.to_string(), format!("{from}..{to}")));
    }
    if !undo.paths.is_empty() {
        let paths: Vec<String> = (undo.paths.iter())
            .map(|path| String::from_utf8_lossy(path).into_owned())
            .collect();
        meta.push((REVERTED_PATHS_KEY.to_string(), paths.join("\n")));
    }
    let message = format!(
        "revert of {} ({})",
        undo.described(),
        counted(changed, "file")
    );
    let saved = save::save_result(
        repo,
        store,
        message,
        meta,
        operation.clone(),
        &options.settings,
    );
    match saved {
        Ok(saved) => report.checkpoint = saved,
        Err(error) => {
            report.warnings.push(Warning::ResultNotSaved {
                what: "revert",
                error,
            });
            save::record_unsaved_result(store, operation)?;
        }
    }
    Ok(())
}

/// What [`revert`] would do, changing nothing: not the worktree, not the store, which
/// may be open only for reading. Each path's worktree content is read for the diff. It
/// refuses what the real run would refuse, with the same error (`no_conflicts`, the
/// preflight).
pub fn dry_run(
    repo: &Repo,
    store: &impl StoreRead,
    undo: &Undo,
    options: &RevertOptions,
) -> Result<RevertReport> {
    let scan = save::look_by_walking(repo, &options.settings, store, options.progress.as_deref())?;
    let snapshot = store.snapshot()?;
    let current_tree = match snapshot.current()? {
        Some(id) => Some(snapshot.checkpoint(id)?.tree),
        None => None,
    };
    let skipped: BTreeSet<Vec<u8>> = scan.skipped.iter().map(|s| s.path.clone()).collect();
    let chunks = snapshot.chunks()?;
    let stored = ContentReader::new(store.hasher(), &chunks, None);
    // The scan stored nothing: the worktree's side is read from the files themselves.
    let worktree = ContentReader::new(store.hasher(), &chunks, Some(&repo.root));
    let mut paths = plan(
        repo,
        &snapshot,
        (scan.root, Some(&scan.trees)),
        &skipped,
        undo,
        &stored,
        &worktree,
        options,
    )?;
    for path in paths
        .iter_mut()
        .filter(|p| p.result.is_some() || p.status == Status::Applied)
    {
        path.ours_content = read_ours(&worktree, &path.path, path.ours.as_ref())?;
    }
    let report = RevertReport {
        would_save: current_tree != Some(scan.root),
        dry_run: true,
        paths,
        warnings: scan.warnings,
        ..RevertReport::default()
    };
    refusal(&report, options)?;
    if report.paths.iter().any(apply::changes) {
        preflight(repo, &report.paths)?;
    }
    Ok(report)
}

/// The refusal `--no-conflicts` makes of a plan with conflicts.
fn refusal(report: &RevertReport, options: &RevertOptions) -> Result<()> {
    let conflicts = report.conflicts();
    if options.no_conflicts && !conflicts.is_empty() {
        return Err(Error::RevertWouldConflict { paths: conflicts });
    }
    Ok(())
}

/// Drops the safety checkpoint `id` a revert made and no longer needs, as restore drops
/// its own: nothing points at it (it was saved beside HEAD's branch). Should that fail,
/// it stays beside the branch, which is harmless.
fn forget(store: &Store, id: Option<CheckpointId>) {
    let Some(id) = id else { return };
    let dropped = store.snapshot().and_then(|snapshot| {
        crate::ops::gc::plan_drop(&snapshot, &BTreeSet::from([id]), &BTreeSet::new())
    });
    if let Ok(plan) = dropped {
        let _ = crate::ops::gc::commit(store, &plan);
    }
}
