//! Restoring: make the worktree equal to a checkpoint (or some of its paths), writing
//! only the files that differ.
//!
//! Order of work, chosen so that nothing is lost and nothing escapes the worktree
//! (docs/design.md invariants 1, 3, 8 and 13):
//! 1. Unless told not to, save the worktree first, so the restore can be undone; the
//!    diff is then taken from exactly what was saved. The safety checkpoint is made
//!    beside HEAD's branch, which does not move yet.
//! 2. Check the whole plan before anything changes (the preflight): nothing in the way
//!    that no checkpoint holds (also where a directory is to be made), names a
//!    filesystem takes, room for the new bytes. A refused restore (and `--dry-run`)
//!    stops here, before the restore is recorded; the safety checkpoint goes again, so
//!    a refused restore changes nothing at all, HEAD's branch included.
//! 3. Record the restore as started, with its paths (the marker `status` reports until
//!    it is done); HEAD's branch moves to the safety checkpoint, as a save would have
//!    moved it, unless the restore is limited to paths.
//! 4. Delete captured files the target lacks. Only paths that are in the current
//!    snapshot are ever deleted, so ignored files are never touched.
//! 5. Create missing directories and clear directories that become files.
//! 6. Write files in parallel: a path that held nothing at its own name, a file that
//!    replaces another under a temporary name beside it; sync the filesystem once; if
//!    there were temporary names, rename each over its target and sync once more.
//! 7. Remove directories that step 4 emptied (also when a later step failed).
//! 8. Move the branch to the target (not for a path-limited restore, which leaves it where
//!    it was; for `fork` and `switch`, make a branch or point HEAD at one), clear the
//!    marker and drop the rewritten paths from the stat cache, in one commit.
//!
//! Steps 4 to 7 go through handles of the directories they change ([`crate::worktree`]),
//! never through a path string below the worktree's top.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::ffi::OsStr;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use rayon::prelude::*;
use rustix::fs::FileType;

use crate::diff::{self, Change, PathFilter};
use crate::format::chunk::Hasher;
use crate::git::repo::Repo;
use crate::model::branch::BranchName;
use crate::model::tree::Node;
use crate::model::{Head, PendingTrees, SkippedFile};
use crate::ops::save::{self, SaveOptions, SaveOutcome, Warning};
use crate::progress::Progress;
use crate::settings::Settings;
use crate::storage::pack::{LastPack, ReadChunks};
use crate::storage::{Snapshot, Store, StoreRead};
use crate::worktree::exempt::ExemptPaths;
use crate::worktree::{self, temp_name, Worktree, TEMP_LINK_SUFFIX, TEMP_RANDOM_CHARS};
use crate::{CheckpointId, Error, Result, TreeId};

/// How a restore runs.
#[derive(Clone, Debug, Default)]
pub struct RestoreOptions {
    /// Print the plan only.
    pub dry_run: bool,
    /// Do not save the worktree first.
    pub no_save: bool,
    /// Restore only these root-relative paths (and what is below them).
    pub paths: Vec<Vec<u8>>,
    /// The `checkpoint.*` settings the safety save applies (and a look without one
    /// uses), from the caller's [`crate::ops::workspace::Workspace`].
    pub settings: Settings,
    /// Where to report progress, if anywhere.
    pub progress: Option<Arc<dyn Progress>>,
    /// Where HEAD goes once the worktree is restored.
    pub head: HeadUpdate,
}

/// What a restore does with HEAD, in the same transaction that ends it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum HeadUpdate {
    /// The current branch moves to the restored checkpoint (not with paths).
    #[default]
    MoveBranch,
    /// A new branch is made at the restored checkpoint and HEAD names it (`fork`); the
    /// current branch keeps its tip.
    NewBranch(BranchName),
    /// HEAD names this existing branch, whose tip is what is restored (`switch`).
    SwitchBranch(String),
}

/// What a restore did (or, in a dry run, would do).
#[derive(Debug, Default)]
pub struct RestoreReport {
    /// The checkpoint restored.
    pub target: Option<CheckpointId>,
    /// The checkpoint the worktree was saved as first, if it had unsaved changes.
    pub safety_checkpoint: Option<CheckpointId>,
    /// Whether a dry run found unsaved changes that a real run would save first.
    pub would_save: bool,
    /// Paths written (files and symlinks), sorted.
    pub written: Vec<Vec<u8>>,
    /// Paths deleted, sorted.
    pub deleted: Vec<Vec<u8>>,
    /// Whether nothing was changed because this was a dry run.
    pub dry_run: bool,
    /// Things the user should hear about.
    pub warnings: Vec<Warning>,
    /// Paths left as they are, sorted: files in the worktree that no checkpoint holds
    /// because they are larger than `checkpoint.maxFileSize` or were unreadable (now, or
    /// when the target was saved), and the paths of [`RestoreReport::exempt`].
    pub untouched: Vec<Vec<u8>>,
    /// Of `untouched`, the paths the target or the current snapshot has inside the
    /// repository's own git dirs or a linked worktree of it, or at an agent settings file
    /// ([`crate::worktree::exempt`]): a checkpoint an older build made may hold them, and
    /// a restore never writes or deletes them.
    pub exempt: Vec<Vec<u8>>,
}

/// Restores the checkpoint named by `rev` into the worktree. A dry run is [`dry_run`].
pub fn restore(
    repo: &Repo,
    store: &Store,
    rev: &str,
    options: &RestoreOptions,
) -> Result<RestoreReport> {
    if options.dry_run {
        return dry_run(repo, store, rev, options);
    }
    let before = store.snapshot()?;
    let Target {
        id: mut target,
        tree: mut target_tree,
        skipped: mut target_skipped,
    } = Target::of(&before, rev, options)?;
    let short = before.short_id(target)?;
    let safety_message = match &options.head {
        HeadUpdate::MoveBranch => format!("before restore to {short}"),
        HeadUpdate::NewBranch(name) => format!("before fork {name} at {short}"),
        HeadUpdate::SwitchBranch(name) => format!("before switch to {name}"),
    };
    let mut report = RestoreReport {
        target: Some(target),
        ..RestoreReport::default()
    };

    // The worktree as it is now: saved first, or only scanned. The safety checkpoint
    // is made beside HEAD's branch, which moves only once the restore has started (or
    // not at all, for a path-limited one): a refused restore leaves it where it was.
    let leftovers;
    let (current_tree, scanned_trees, current_skipped) = if options.no_save {
        let snapshot =
            save::look_by_walking(repo, &options.settings, store, options.progress.as_deref())?;
        report.warnings.extend(snapshot.warnings);
        leftovers = snapshot.leftovers;
        (snapshot.root, Some(snapshot.trees), snapshot.skipped)
    } else {
        let head = before.head()?;
        drop(before);
        let saved = save::save(
            repo,
            store,
            &SaveOptions {
                message: safety_message,
                // Recorded as skipped, so the restore leaves them alone.
                skip_unreadable: true,
                walk: true,
                settings: options.settings.clone(),
                progress: options.progress.clone(),
                keep_head: true,
                ..SaveOptions::default()
            },
        )?;
        report.warnings.extend(saved.warnings);
        leftovers = saved.leftovers;
        let id = match saved.outcome {
            SaveOutcome::Saved { id, .. } => {
                report.safety_checkpoint = Some(id);
                id
            }
            SaveOutcome::Unchanged { current } => current,
        };
        if let HeadUpdate::SwitchBranch(name) = &options.head {
            // Switching to the current branch: its tip is the worktree as saved now.
            if head == Head::Branch(name.clone()) {
                let record = store.snapshot()?.checkpoint(id)?;
                (target, target_tree, target_skipped) = (id, record.tree, record.skipped);
                report.target = Some(target);
            }
        }
        let tree = store.snapshot()?.checkpoint(id)?.tree;
        (tree, None, saved.skipped)
    };

    // What the restore reads from here on does not change until it is done: the store is
    // held, and the restore's own marker touches no tree or chunk.
    let snapshot = store.snapshot()?;
    let filter = PathFilter::new(options.paths.clone());
    let planned = plan(
        repo,
        &snapshot,
        &store.hasher,
        (current_tree, scanned_trees.as_ref(), &current_skipped),
        (target_tree, &target_skipped),
        &filter,
        &mut report,
    );
    let changes = match planned {
        Ok(changes) => changes,
        Err(refused) => {
            drop(snapshot);
            if let Some(safety) = report.safety_checkpoint {
                // The worktree is as it was, so the safety checkpoint protects nothing;
                // it goes, so that a refused restore leaves the store as it found it
                // too. Should that fail, it stays beside the branch, which is harmless.
                let _ = discard(store, safety);
            }
            return Err(refused);
        }
    };
    // A restore that changes no file needs no way back, and a path-limited one leaves
    // the branch where it is: run twice, the second run changes nothing at all.
    if let (true, HeadUpdate::MoveBranch, Some(safety)) = (
        changes.is_empty() && leftovers.is_empty(),
        &options.head,
        report.safety_checkpoint,
    ) {
        drop(snapshot);
        if discard(store, safety).is_ok() {
            report.safety_checkpoint = None;
        }
        finish(store, target, &filter, options, &report)?;
        return Ok(report);
    }
    // Recorded durably first, so that a crash in the middle is reported and can be
    // finished by running the restore again (with the same paths). Until then, HEAD's
    // branch holds the safety checkpoint, as a save would have left it; a path-limited
    // restore never moves it.
    {
        let _span = crate::trace::span("restore: record the restore as started");
        let txn = store.transaction()?;
        txn.set_restoring(target, &options.paths)?;
        let moves = !matches!(options.head, HeadUpdate::MoveBranch) || filter.is_everything();
        if let (true, Some(safety)) = (moves, report.safety_checkpoint) {
            txn.move_head(safety)?;
        }
        txn.commit()?;
    }
    {
        let _span = crate::trace::span("restore: change the worktree");
        let chunks = snapshot.chunks()?;
        apply(
            &repo.root,
            &store.hasher,
            &chunks,
            &changes,
            &leftovers,
            options.progress.as_deref(),
        )?;
    }

    drop(snapshot);
    finish(store, target, &filter, options, &report)?;
    Ok(report)
}

/// What [`restore`] would do, changing nothing: not the worktree, not the store, which
/// may be open only for reading. Refuses exactly what the restore would.
pub fn dry_run(
    repo: &Repo,
    store: &impl StoreRead,
    rev: &str,
    options: &RestoreOptions,
) -> Result<RestoreReport> {
    let before = store.snapshot()?;
    let target = Target::of(&before, rev, options)?;
    let scan = save::look_by_walking(repo, &options.settings, store, options.progress.as_deref())?;
    let current_tree = match before.current()? {
        Some(id) => Some(before.checkpoint(id)?.tree),
        None => None,
    };
    let mut report = RestoreReport {
        target: Some(target.id),
        would_save: !options.no_save && current_tree != Some(scan.root),
        dry_run: true,
        warnings: scan.warnings,
        ..RestoreReport::default()
    };
    plan(
        repo,
        &before,
        store.hasher(),
        (scan.root, Some(&scan.trees), &scan.skipped),
        (target.tree, &target.skipped),
        &PathFilter::new(options.paths.clone()),
        &mut report,
    )?;
    Ok(report)
}

/// The checkpoint a restore restores.
struct Target {
    id: CheckpointId,
    tree: TreeId,
    skipped: Vec<SkippedFile>,
}

impl Target {
    /// The checkpoint `rev` names (the branch, for a switch), once the HEAD update
    /// `options` asks for is known to be possible.
    fn of(snapshot: &Snapshot, rev: &str, options: &RestoreOptions) -> Result<Target> {
        check_head_update(snapshot, &options.head, &options.paths)?;
        let rev = match &options.head {
            HeadUpdate::SwitchBranch(name) => name.as_str(),
            _ => rev,
        };
        let id = snapshot.resolve(rev)?;
        let record = snapshot.checkpoint(id)?;
        Ok(Target {
            id,
            tree: record.tree,
            skipped: record.skipped,
        })
    }
}

/// The changes that make the worktree (the tree `current`, with its pending trees if
/// only scanned, and the files it skipped) equal to the checkpoint's tree `target` (with
/// the files its save skipped) under `filter`, less the skipped and exempt paths, which
/// go to `report` as untouched; the paths to write and delete go there too. Checked by
/// [`preflight`]: what can be known before a change is checked before any, and before
/// the restore is recorded as started, so a refused restore changes nothing and leaves
/// nothing to finish, and a dry run refuses exactly what the real run would.
fn plan(
    repo: &Repo,
    snapshot: &Snapshot,
    hasher: &Hasher,
    current: (TreeId, Option<&PendingTrees>, &[SkippedFile]),
    target: (TreeId, &[SkippedFile]),
    filter: &PathFilter,
    report: &mut RestoreReport,
) -> Result<Vec<Change>> {
    let (current_tree, scanned_trees, current_skipped) = current;
    let (target_tree, target_skipped) = target;
    let mut changes = {
        let reader = snapshot.checked_trees(scanned_trees)?;
        diff::diff_trees(&reader, Some(current_tree), Some(target_tree), filter)?
    };
    report.untouched = spare_skipped_files(
        &repo.root,
        &mut changes,
        current_skipped.iter().chain(target_skipped),
    );
    report.exempt = spare_exempt_paths(repo, &mut changes);
    if !report.exempt.is_empty() {
        report.untouched.extend(report.exempt.iter().cloned());
        report.untouched.sort_unstable();
        report.untouched.dedup();
    }
    for change in &changes {
        match change.new {
            Some(_) => report.written.push(change.path.clone()),
            None => report.deleted.push(change.path.clone()),
        }
    }
    preflight(&repo.root, hasher, &snapshot.chunks()?, &changes)?;
    Ok(changes)
}

/// The final transaction of a restore: clears the marker, moves HEAD as `options` ask, and
/// forgets the stat-cache entries of the paths written and deleted.
fn finish(
    store: &Store,
    target: CheckpointId,
    filter: &PathFilter,
    options: &RestoreOptions,
    report: &RestoreReport,
) -> Result<()> {
    let _span = crate::trace::span("restore: record the restore as done");
    let txn = store.transaction()?;
    txn.clear_restoring()?;
    match &options.head {
        HeadUpdate::MoveBranch if filter.is_everything() => txn.move_head(target)?,
        HeadUpdate::MoveBranch => {}
        HeadUpdate::NewBranch(name) => {
            txn.create_branch(name, target)?;
            txn.set_head(&Head::Branch(name.to_string()))?;
        }
        HeadUpdate::SwitchBranch(name) => txn.set_head(&Head::Branch(name.clone()))?,
    }
    txn.forget_cached(&report.written)?;
    txn.forget_cached(&report.deleted)?;
    txn.commit()
}

/// Removes the safety checkpoint `id` that a restore made and no longer needs, with the
/// data only it holds, as `drop` would. Nothing points at it: it was saved beside HEAD's
/// branch, and it has no children.
fn discard(store: &Store, id: CheckpointId) -> Result<()> {
    let plan =
        crate::ops::gc::plan_drop(&store.snapshot()?, &BTreeSet::from([id]), &BTreeSet::new())?;
    crate::ops::gc::commit(store, &plan)
}

/// Keeps files that a save skipped (too large, or unreadable) out of `changes`: no
/// checkpoint holds their content, so writing over them or deleting them would lose it.
/// Returns those that exist in the worktree, which the restore leaves as they are.
fn spare_skipped_files<'a>(
    root: &Path,
    changes: &mut Vec<Change>,
    skipped: impl Iterator<Item = &'a SkippedFile>,
) -> Vec<Vec<u8>> {
    let spared: BTreeSet<&[u8]> = skipped.map(|file| file.path.as_slice()).collect();
    if spared.is_empty() {
        return Vec::new();
    }
    changes.retain(|change| !spared.contains(change.path.as_slice()));
    spared
        .into_iter()
        .filter(|path| std::fs::symlink_metadata(root.join(OsStr::from_bytes(path))).is_ok())
        .map(<[u8]>::to_vec)
        .collect()
}

/// Keeps the paths no checkpoint of this build holds out of `changes`: an agent settings
/// file, anything inside a linked worktree of the same repository (which an older build
/// captured as a nested repository) or inside the repository's own git dirs (which an
/// older build captured under a name other than `.git`). Writing or deleting there would
/// rewind another worktree's work or git's refs, replace the store, or take the agent's
/// hooks away. Returns them, sorted.
fn spare_exempt_paths(repo: &Repo, changes: &mut Vec<Change>) -> Vec<Vec<u8>> {
    let mut exempt = ExemptPaths::of(repo);
    let mut spared = Vec::new();
    changes.retain(|change| {
        let spare = exempt.contains(&change.path);
        if spare {
            spared.push(change.path.clone());
        }
        !spare
    });
    spared.sort_unstable();
    spared
}

/// Refuses, before anything changes, a HEAD update that the final transaction would
/// refuse: a taken or invalid new branch name, a missing branch, or paths with either.
fn check_head_update(snapshot: &Snapshot, head: &HeadUpdate, paths: &[Vec<u8>]) -> Result<()> {
    match head {
        HeadUpdate::MoveBranch => return Ok(()),
        HeadUpdate::NewBranch(name) => {
            if snapshot.branch(name.as_str())?.is_some() {
                return Err(Error::BranchExists(name.to_string()));
            }
        }
        HeadUpdate::SwitchBranch(name) => {
            if snapshot.branch(name)?.is_none() {
                return Err(Error::UnknownBranch(name.clone()));
            }
        }
    }
    if !paths.is_empty() {
        return Err(Error::InvalidArgument(
            "a fork or switch restores the whole worktree, not paths".into(),
        ));
    }
    Ok(())
}

/// Carries out `changes`, which passed [`preflight`], in the worktree at `root`, after
/// removing `leftovers` (an interrupted restore's temporary files). Every change goes
/// through a handle of the directory it concerns ([`crate::worktree`]), so a directory
/// swapped for a symlink while this runs stops the restore instead of redirecting it.
fn apply(
    root: &Path,
    hasher: &Hasher,
    chunks: &ReadChunks,
    changes: &[Change],
    leftovers: &[Vec<u8>],
    progress: Option<&dyn Progress>,
) -> Result<()> {
    let worktree = Worktree::open(root)?;
    for (dir, names) in by_directory(leftovers.iter().map(|path| (path.as_slice(), ()))) {
        if let Some(dir) = worktree.dir(dir, false)? {
            for (name, ()) in names {
                dir.remove_file(name)?;
            }
        }
    }
    let deletions = by_directory(
        changes
            .iter()
            .filter(|c| c.new.is_none())
            .map(|c| (c.path.as_slice(), ())),
    );
    let mut emptied: BTreeSet<&[u8]> = BTreeSet::new();
    for (dir_path, _) in &deletions {
        let mut parent = *dir_path;
        while !parent.is_empty() {
            emptied.insert(parent);
            parent = split_name(parent).0;
        }
    }
    let changed = change_files(&worktree, hasher, chunks, changes, &deletions, progress);
    // 7. Directories the deletions emptied, deepest first, also after a failure, so that
    // a refused or failed restore leaves no directory it emptied; a directory that still
    // holds anything (an ignored file, say) stays.
    for dir_path in emptied.iter().rev() {
        let (parent, name) = split_name(dir_path);
        // A directory the restore replaced by a symlink or file is no longer one to empty.
        if let Ok(Some(parent)) = worktree.dir(parent, false) {
            parent.remove_dir_if_empty(name);
        }
    }
    changed
}

/// Steps 4 to 6 of a restore: deletions, then directories and files.
fn change_files(
    worktree: &Worktree,
    hasher: &Hasher,
    chunks: &ReadChunks,
    changes: &[Change],
    deletions: &[Directory<'_, ()>],
    progress: Option<&dyn Progress>,
) -> Result<()> {
    // 4. Deletions. A directory that is gone holds nothing to delete.
    let half_deleted = deletions
        .iter()
        .map(|(_, names)| names.len())
        .sum::<usize>()
        / 2;
    let mut deleted = 0;
    for (dir_path, names) in deletions {
        if let Some(dir) = worktree.dir(dir_path, false)? {
            for (name, ()) in names {
                if deleted == half_deleted {
                    crate::fault::point("restore-mid-delete");
                }
                dir.remove_file(name)?;
                deleted += 1;
            }
        }
    }
    // 5 and 6. Files, written in parallel in batches of one directory each (a directory
    // is opened, and made if missing, once per batch). A path that held nothing of the
    // current snapshot gets its file written at its own name (`O_EXCL`): there is nothing
    // old there to keep whole. A path that held a file gets a temporary name beside it,
    // renamed over it only once every written byte is durable, so that a crash leaves
    // it old or new, never torn (docs/design.md, section 4, "Restore").
    let groups = by_directory(changes.iter().filter_map(|c| {
        Some((
            c.path.as_slice(),
            PlannedWrite {
                node: c.new.as_ref()?,
                in_place: c.old.is_none(),
            },
        ))
    }));
    let writes: usize = groups.iter().map(|(_, files)| files.len()).sum();
    let batches: Vec<Batch> = groups
        .iter()
        .flat_map(|(dir, files)| files.chunks(BATCH_FILES).map(move |files| (*dir, files)))
        .collect();
    if let Some(progress) = progress {
        let bytes = groups
            .iter()
            .flat_map(|(_, files)| files)
            .map(|(_, write)| file_size(write.node));
        progress.begin("Restoring", writes as u64, bytes.sum());
    }
    let done = AtomicUsize::new(0);
    let half = writes / 2;
    let staged: Vec<Result<(DirId, Vec<Staged>)>> = batches
        .par_iter()
        .map_init(
            || (Vec::new(), LastPack::default()),
            |(buf, last), (dir_path, files)| {
                let dir = created(worktree, dir_path)?;
                let mut staged: Vec<Staged> = Vec::with_capacity(files.len());
                for (name, write) in files.iter() {
                    let placed = place_node(hasher, chunks, last, write, &dir, name, buf);
                    let placed = match placed {
                        Ok(placed) => placed,
                        Err(e) => {
                            for (placed, (name, _)) in staged.iter().zip(files.iter()) {
                                let _ = dir.remove_file(placed.written_name(name));
                            }
                            return Err(e);
                        }
                    };
                    staged.push(placed);
                    if done.fetch_add(1, Ordering::Relaxed) + 1 == half {
                        crate::fault::point("restore-mid-write");
                    }
                    if let Some(progress) = progress {
                        progress.file_done(file_size(write.node));
                    }
                }
                Ok((dir.identity()?, staged))
            },
        )
        .collect();
    if let Some(progress) = progress {
        progress.end();
    }
    if let Some(failed) = staged.iter().position(Result::is_err) {
        // Take back what the other batches wrote: temporary files, and the files written
        // at names where nothing was. The restore replaced no file.
        for ((dir_path, files), placed) in batches.iter().zip(&staged) {
            if let (Ok((_, placed)), Ok(Some(dir))) = (placed, worktree.dir(dir_path, false)) {
                for (placed, (name, _)) in placed.iter().zip(files.iter()) {
                    let _ = dir.remove_file(placed.written_name(name));
                }
            }
        }
        return staged
            .into_iter()
            .nth(failed)
            .map_or(Ok(()), |r| r.map(drop));
    }
    if writes == 0 {
        return Ok(());
    }
    // Every byte written (in place or under a temporary name), the new names, the
    // deletions and the new directories made durable at once. A restore that only adds
    // files needs no other barrier.
    {
        let _span = crate::trace::span("restore: sync");
        worktree.sync()?;
    }
    // Each directory is opened again, as its path leads now: if it was swapped since
    // (for a symlink, or another directory), this fails, and whatever was written there
    // stays where it went, for the next restore to find. Without this, a restore that
    // wrote only at new names would end as done with its files moved away.
    let _span = crate::trace::span("restore: check the directories, rename, sync");
    let renames: usize = staged
        .iter()
        .flatten()
        .flat_map(|(_, placed)| placed)
        .filter(|p| p.tmp.is_some())
        .count();
    let half = renames / 2;
    let mut renamed = 0;
    for ((dir_path, files), (written_in, placed)) in
        batches.iter().zip(staged.into_iter().flatten())
    {
        let dir = created(worktree, dir_path)?;
        if dir.identity()? != written_in {
            return Err(Error::RestoreBlocked {
                path: worktree.display(dir_path),
                why: "the directory was replaced while the restore wrote into it; run the restore again".into(),
            });
        }
        for ((name, _), placed) in files.iter().zip(&placed) {
            let Some(tmp) = &placed.tmp else { continue };
            if renamed == half {
                crate::fault::point("restore-mid-rename");
            }
            dir.rename(tmp, name)?;
            renamed += 1;
        }
    }
    if renames == 0 {
        return Ok(());
    }
    // The renames are made durable before the restore is recorded as done: otherwise a
    // crash of the machine could leave temporary files, no longer leftovers once the
    // marker is cleared, beside old files. (A sync of each directory they changed costs
    // one journal commit each, several times this on ext4.)
    worktree.sync()
}

/// A directory's device and inode.
type DirId = (u64, u64);

/// One file or symlink to write, and whether it may be written at its own name.
struct PlannedWrite<'a> {
    node: &'a Node,
    /// The current snapshot has nothing at this path: no old content to keep whole.
    in_place: bool,
}

/// Where [`place_node`] wrote a file.
struct Staged {
    /// The temporary name to rename over the target, or `None` if written in place.
    tmp: Option<Vec<u8>>,
}

impl Staged {
    /// The name the content now has in its directory.
    fn written_name<'a>(&'a self, name: &'a [u8]) -> &'a [u8] {
        self.tmp.as_deref().unwrap_or(name)
    }
}

/// Files staged or renamed per opening of their directory.
const BATCH_FILES: usize = 64;

/// `path` split at its last `/` into its directory (empty at the top) and its name.
fn split_name(path: &[u8]) -> (&[u8], &[u8]) {
    match path.iter().rposition(|&b| b == b'/') {
        Some(slash) => (&path[..slash], &path[slash + 1..]),
        None => (&[], path),
    }
}

/// One directory's entries: its worktree path, and each entry's name with what goes with
/// it.
type Directory<'p, T> = (&'p [u8], Vec<(&'p [u8], T)>);

/// Up to [`BATCH_FILES`] files of one directory, written with one opening of it.
type Batch<'a> = (&'a [u8], &'a [(&'a [u8], PlannedWrite<'a>)]);

/// Worktree paths, each with what goes with it, grouped by their directory: directories
/// in byte order, each with its entries' names in the order given.
fn by_directory<'p, T>(items: impl Iterator<Item = (&'p [u8], T)>) -> Vec<Directory<'p, T>> {
    let mut groups: BTreeMap<&[u8], Vec<(&[u8], T)>> = BTreeMap::new();
    for (path, item) in items {
        let (dir, name) = split_name(path);
        groups.entry(dir).or_default().push((name, item));
    }
    groups.into_iter().collect()
}

/// The directory `dir_path`, made if missing.
fn created<'w>(worktree: &'w Worktree, dir_path: &[u8]) -> Result<worktree::Dir<'w>> {
    worktree.dir(dir_path, true)?.ok_or_else(|| {
        Error::io(
            worktree.display(dir_path),
            std::io::Error::from(std::io::ErrorKind::NotFound),
        )
    })
}

/// Longest name (one path component) Linux filesystems take.
const NAME_MAX: usize = 255;

/// Refuses, before anything is changed, a restore that would overwrite something no
/// checkpoint holds (a file at a path the current snapshot lacks is ignored, or appeared
/// after the scan, and writing there would lose it for good, unless it holds exactly what
/// is to be written), that would write through a symlink or where something other than
/// a directory stands in the way of a directory (an ignored or skipped file, an ignored
/// symlink, or one the paths given leave alone), or that is known to fail half-way: a
/// name longer than a filesystem takes, or more bytes to write than the worktree's
/// filesystem has free (each new file exists beside the old one until the renames).
fn preflight(root: &Path, hasher: &Hasher, chunks: &ReadChunks, changes: &[Change]) -> Result<()> {
    let deleted: HashSet<&[u8]> = changes
        .iter()
        .filter(|c| c.new.is_none())
        .map(|c| c.path.as_slice())
        .collect();
    let mut needed: u64 = 0;
    for change in changes.iter().filter(|c| c.new.is_some()) {
        if let Some(long) = change
            .path
            .split(|&b| b == b'/')
            .find(|c| c.len() > NAME_MAX)
        {
            return Err(Error::RestoreBlocked {
                path: root.join(OsStr::from_bytes(&change.path)),
                why: format!(
                    "the name {:?} is {} bytes long; filesystems take at most {NAME_MAX}",
                    String::from_utf8_lossy(long),
                    long.len()
                ),
            });
        }
        needed = needed.saturating_add(change.new.as_ref().map_or(0, file_size));
    }
    // Where the filesystem cannot say, the write itself reports a full disk.
    if let Some(free) = crate::worktree::platform::free_bytes(root) {
        if needed > free {
            return Err(Error::RestoreBlocked {
                path: root.to_path_buf(),
                why: format!(
                    "the files to write take {}, and its filesystem has {} free; free some space and retry",
                    crate::format::size::human_bytes(needed),
                    crate::format::size::human_bytes(free)
                ),
            });
        }
    }
    // Directories already found to be real ones, or missing, so each is looked at once
    // (a restore into an emptied worktree writes thousands of paths below a few).
    let mut real_dirs: HashSet<&[u8]> = HashSet::new();
    let mut missing_dirs: HashSet<&[u8]> = HashSet::new();
    let mut last = LastPack::default();
    for change in changes {
        let Some(node) = &change.new else { continue };
        // Each directory above the path, from the top: the restore opens them without
        // following symlinks and makes the missing ones, so anything else in the way
        // would stop it half-way. Below a path the restore deletes first (a symlink to a
        // directory, a file), nothing in the way can be the worktree's: looking there
        // would follow that symlink into its target.
        let mut below_deleted = false;
        // Below a missing directory nothing can be in the way (a path written there is
        // created with O_EXCL all the same).
        let mut below_missing = false;
        for (i, _) in change.path.iter().enumerate().filter(|(_, &b)| b == b'/') {
            let dir = &change.path[..i];
            if deleted.contains(dir) {
                below_deleted = true;
                break;
            }
            if real_dirs.contains(dir) {
                continue;
            }
            if missing_dirs.contains(dir) {
                below_missing = true;
                break;
            }
            let full = root.join(OsStr::from_bytes(dir));
            match std::fs::symlink_metadata(&full) {
                Ok(meta) if meta.is_dir() => {
                    real_dirs.insert(dir);
                }
                Ok(meta) => {
                    return Err(Error::RestoreBlocked {
                        path: full,
                        why: if meta.file_type().is_symlink() {
                            "the checkpoint has a directory here, and the worktree a symlink that this restore does not replace (it is ignored, or outside the paths given); restore never writes through one: move it away and retry".into()
                        } else {
                            "the checkpoint has a directory here, and the worktree a file that this restore does not replace (it is ignored, larger than checkpoint.maxFileSize, or outside the paths given); move it away and retry".into()
                        },
                    })
                }
                // Missing: the restore makes it, and everything below it.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    missing_dirs.insert(dir);
                    below_missing = true;
                    break;
                }
                Err(e) => return Err(Error::io(full, e)),
            }
        }
        if below_deleted || below_missing || change.old.is_some() {
            continue;
        }
        let full = root.join(OsStr::from_bytes(&change.path));
        match std::fs::symlink_metadata(&full) {
            Ok(meta) if meta.is_dir() => holds_nothing_else(root, &full, &deleted)?,
            Ok(meta) => {
                if !holds_the_same(&full, &meta, node, hasher, chunks, &mut last)? {
                    return Err(Error::RestoreBlocked {
                        path: full,
                        why: "it exists but is not in the current checkpoint (it is ignored, or new); move it away and retry".into(),
                    });
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(full, e)),
        }
    }
    Ok(())
}

/// Whether the file or symlink at `full` (whose metadata is `meta`) holds exactly what
/// `node` holds: then writing `node` over it loses nothing (a permission bit at most,
/// which the checkpoint decides).
fn holds_the_same<'a>(
    full: &Path,
    meta: &std::fs::Metadata,
    node: &Node,
    hasher: &Hasher,
    chunks: &'a ReadChunks,
    last: &mut LastPack<'a>,
) -> Result<bool> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    match node {
        Node::Symlink { target } => Ok(meta.file_type().is_symlink()
            && std::fs::read_link(full)
                .map_err(|e| Error::io(full, e))?
                .as_os_str()
                .as_bytes()
                == target.as_slice()),
        Node::File {
            size, chunks: ids, ..
        }
        | Node::FileWithMode {
            size, chunks: ids, ..
        } => {
            if !meta.is_file() || meta.len() != *size {
                return Ok(false);
            }
            // Not through a symlink swapped in since, and never blocking on a FIFO.
            let mut file = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
                .open(full)
                .map_err(|e| Error::io(full, e))?;
            let (mut want, mut have) = (Vec::new(), Vec::new());
            for &id in ids {
                want.clear();
                chunks.read(hasher, id, &mut want, last)?;
                have.resize(want.len(), 0);
                if file.read_exact(&mut have).is_err() || have != want {
                    return Ok(false);
                }
            }
            // Nothing past the recorded size (the file may have grown since the look).
            let mut more = [0u8; 1];
            Ok(matches!(file.read(&mut more), Ok(0)))
        }
        Node::Dir { .. } => Ok(false),
    }
}

/// Checks that `dir` holds only directories and files in `deleted`.
fn holds_nothing_else(root: &Path, dir: &Path, deleted: &HashSet<&[u8]>) -> Result<()> {
    for entry in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        let path = entry.path();
        if entry.file_type().map_err(|e| Error::io(&path, e))?.is_dir() {
            holds_nothing_else(root, &path, deleted)?;
        } else {
            let rel = path
                .strip_prefix(root)
                .unwrap_or(&path)
                .as_os_str()
                .as_bytes();
            if !deleted.contains(rel) {
                return Err(Error::RestoreBlocked {
                    path,
                    why: "it is not part of any checkpoint, and the checkpoint has a file where its directory is; move it away and retry".into(),
                });
            }
        }
    }
    Ok(())
}

/// Writes `write`'s node, to be `name` in `dir`, and says where: at `name` itself when
/// the current snapshot has nothing there and nothing appeared since (a directory the
/// deletions emptied gives way first); otherwise under a new temporary name beside it.
fn place_node<'a>(
    hasher: &Hasher,
    chunks: &'a ReadChunks,
    last: &mut LastPack<'a>,
    write: &PlannedWrite<'_>,
    dir: &worktree::Dir<'_>,
    name: &[u8],
    buf: &mut Vec<u8>,
) -> Result<Staged> {
    let node = write.node;
    if write.in_place {
        if write_new(hasher, chunks, last, node, dir, name, name, buf)? {
            return Ok(Staged { tmp: None });
        }
        if dir.kind(name)? == Some(FileType::Directory) {
            dir.remove_empty_tree(name)?;
            if write_new(hasher, chunks, last, node, dir, name, name, buf)? {
                return Ok(Staged { tmp: None });
            }
        }
        // Something appeared there after the preflight: it is replaced like a file of the
        // current snapshot, whole.
    }
    let suffix = match node {
        Node::Symlink { .. } => TEMP_LINK_SUFFIX,
        _ => "",
    };
    let tmp = temp_name(TEMP_RANDOM_CHARS, suffix);
    match write_new(hasher, chunks, last, node, dir, &tmp, name, buf)? {
        true => Ok(Staged { tmp: Some(tmp) }),
        false => Err(Error::io(
            dir.display(&tmp),
            std::io::Error::from(std::io::ErrorKind::AlreadyExists),
        )),
    }
}

/// Creates `at` in `dir` (`O_EXCL`) holding `node`, which is to become `name`; `false`
/// if something is at `at` already. A file that fails half-way is removed.
#[allow(clippy::too_many_arguments)]
fn write_new<'a>(
    hasher: &Hasher,
    chunks: &'a ReadChunks,
    last: &mut LastPack<'a>,
    node: &Node,
    dir: &worktree::Dir<'_>,
    at: &[u8],
    name: &[u8],
    buf: &mut Vec<u8>,
) -> Result<bool> {
    match node {
        Node::File {
            size, chunks: ids, ..
        }
        | Node::FileWithMode {
            size, chunks: ids, ..
        } => {
            // A file that keeps only git's executable bit gets the mode a new file gets
            // (the kernel applies the umask); one with its own permissions gets exactly
            // those once written (owner-only while it is written).
            let (create_mode, exact_mode) = match node {
                // Masked: a crafted store cannot ask for set-id or sticky bits.
                Node::FileWithMode { mode, .. } => (0o600, Some(*mode & 0o777)),
                _ if node.is_executable() => (0o777, None),
                _ => (0o666, None),
            };
            let Some(mut file) = dir.create_file(at, create_mode)? else {
                return Ok(false);
            };
            let mut total: u64 = 0;
            let written = ids.iter().try_for_each(|&id| {
                buf.clear();
                chunks.read(hasher, id, buf, last)?;
                // A chunk index that understates lengths must not make a restore write
                // more than the tree records.
                total = total.saturating_add(buf.len() as u64);
                if total > *size {
                    return Err(wrong_size(dir, name, *size));
                }
                file.write_all(buf)
                    .map_err(|e| Error::io(dir.display(at), e))
            });
            let written = written
                .and_then(|()| match total == *size {
                    true => Ok(()),
                    false => Err(wrong_size(dir, name, *size)),
                })
                .and_then(|()| match exact_mode {
                    Some(mode) => file
                        .set_permissions(std::fs::Permissions::from_mode(mode))
                        .map_err(|e| Error::io(dir.display(at), e)),
                    None => Ok(()),
                });
            if let Err(e) = written {
                drop(file);
                let _ = dir.remove_file(at);
                return Err(e);
            }
            Ok(true)
        }
        Node::Symlink { target: link } => dir.symlink(link, at),
        Node::Dir { .. } => unreachable!("changes never carry directories"),
    }
}

/// The error for stored content whose length is not the size its tree records.
fn wrong_size(dir: &worktree::Dir<'_>, name: &[u8], size: u64) -> Error {
    Error::Corrupt(format!(
        "the stored content of {} does not have its recorded size ({size} bytes)",
        String::from_utf8_lossy(&dir.rel(name))
    ))
}

/// The bytes a node's file holds (0 for a symlink), for progress.
fn file_size(node: &Node) -> u64 {
    match node {
        Node::File { size, .. } | Node::FileWithMode { size, .. } => *size,
        _ => 0,
    }
}
