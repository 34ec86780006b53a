//! Restoring: make the worktree equal to a checkpoint (or some of its paths), writing
//! only the files that differ.
//!
//! Order of work, chosen so that nothing is lost and nothing escapes the worktree
//! (docs/design.md invariants 1, 3, 8 and 13):
//! 1. Unless told not to, save the worktree first, so the restore can be undone; the
//!    diff is then taken from exactly what was saved.
//! 2. Check the whole plan before anything changes (the preflight): nothing in the way
//!    that no checkpoint holds, names a filesystem takes, room for the new bytes. A
//!    refused restore (and `--dry-run`) stops here, before the restore is recorded.
//! 3. Record the restore as started (the marker `status` reports until it is done).
//! 4. Delete captured files the target lacks. Only paths that are in the current
//!    snapshot are ever deleted, so ignored files are never touched.
//! 5. Create missing directories and clear directories that become files.
//! 6. Write files in parallel: a path that held nothing at its own name, a file that
//!    replaces another under a temporary name beside it; sync the filesystem once; if
//!    there were temporary names, rename each over its target and sync once more.
//! 7. Remove directories that step 4 emptied (also when a later step failed).
//! 8. Move the branch (or, for `fork` and `switch`, make a branch and point HEAD at it),
//!    clear the marker and drop the rewritten paths from the stat cache, in one commit.
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
use crate::model::{Head, SkippedFile};
use crate::ops::save::{self, SaveOptions, SaveOutcome, ScanMode, Warning};
use crate::progress::Progress;
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
    /// zstd level for the safety save.
    pub compression_level: i32,
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
    /// Of `untouched`, the paths the target or the current snapshot has inside a linked
    /// worktree of the same repository or at an agent settings file
    /// ([`crate::worktree::exempt`]): a checkpoint an older build made may hold them, and
    /// a restore never writes or deletes them.
    pub exempt: Vec<Vec<u8>>,
}

/// Restores the checkpoint named by `rev` into the worktree.
pub fn restore(
    repo: &Repo,
    store: &Store,
    rev: &str,
    options: &RestoreOptions,
) -> Result<RestoreReport> {
    let locate =
        |snapshot: &Snapshot, rev: &str| -> Result<(CheckpointId, TreeId, Vec<SkippedFile>)> {
            let target = snapshot.resolve(rev)?;
            let record = snapshot.checkpoint(target)?;
            Ok((target, record.tree, record.skipped))
        };
    let before = store.snapshot()?;
    check_head_update(&before, &options.head, &options.paths)?;
    let (mut target, mut target_tree, mut target_skipped) = match &options.head {
        HeadUpdate::SwitchBranch(name) => locate(&before, name)?,
        _ => locate(&before, rev)?,
    };
    let short = before.short_id(target)?;
    let safety_message = match &options.head {
        HeadUpdate::MoveBranch => format!("before restore to {short}"),
        HeadUpdate::NewBranch(name) => format!("before fork {name} at {short}"),
        HeadUpdate::SwitchBranch(name) => format!("before switch to {name}"),
    };
    let mut report = RestoreReport {
        target: Some(target),
        dry_run: options.dry_run,
        ..RestoreReport::default()
    };

    // The worktree as it is now: saved first, or only scanned.
    let leftovers;
    let (current_tree, scanned_trees, current_skipped) = if options.dry_run || options.no_save {
        let snapshot =
            save::scan_with_progress(repo, store, ScanMode::HashOnly, options.progress.as_deref())?;
        report.warnings.extend(snapshot.warnings);
        leftovers = snapshot.leftovers;
        let current_tree = match before.current()? {
            Some(id) => Some(before.checkpoint(id)?.tree),
            None => None,
        };
        report.would_save = current_tree != Some(snapshot.root);
        (snapshot.root, Some(snapshot.trees), snapshot.skipped)
    } else {
        drop(before);
        let saved = save::save(
            repo,
            store,
            &SaveOptions {
                message: safety_message,
                // Recorded as skipped, so the restore leaves them alone.
                skip_unreadable: true,
                walk: true,
                compression_level: options.compression_level,
                progress: options.progress.clone(),
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
            // Switching to the current branch: its tip is now the safety checkpoint.
            (target, target_tree, target_skipped) = locate(&store.snapshot()?, name)?;
            report.target = Some(target);
        }
        let tree = store.snapshot()?.checkpoint(id)?.tree;
        (tree, None, saved.skipped)
    };

    // What the restore reads from here on does not change until it is done: the store is
    // held, and the restore's own marker touches no tree or chunk.
    let snapshot = store.snapshot()?;
    let filter = PathFilter::new(options.paths.clone());
    let mut changes = {
        let reader = snapshot.checked_trees(scanned_trees.as_ref())?;
        diff::diff_trees(&reader, Some(current_tree), Some(target_tree), &filter)?
    };
    report.untouched = spare_skipped_files(
        &repo.root,
        &mut changes,
        current_skipped.iter().chain(&target_skipped),
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
    // What can be known before a change is checked before any, and before the restore
    // is recorded as started: a refused restore changed nothing and left nothing to
    // finish, and a dry run refuses exactly what the real run would.
    preflight(&repo.root, &changes)?;
    if options.dry_run {
        return Ok(report);
    }
    // Recorded durably first, so that a crash in the middle is reported and can be
    // finished by running the restore again.
    {
        let _span = crate::trace::span("restore: record the restore as started");
        let txn = store.transaction()?;
        txn.set_restoring(target)?;
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
    txn.commit()?;
    Ok(report)
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
/// file, and anything inside a linked worktree of the same repository (which an older
/// build captured as a nested repository). Writing or deleting there would rewind another
/// worktree's work, or take the agent's hooks away. Returns them, sorted.
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
/// after the scan, and writing there would lose it for good), or that is known to fail
/// half-way: a name longer than a filesystem takes, or more bytes to write than the
/// worktree's filesystem has free (each new file exists beside the old one until the
/// renames).
fn preflight(root: &Path, changes: &[Change]) -> Result<()> {
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
    for change in changes.iter().filter(|c| c.old.is_none()) {
        // Below a path the restore deletes first (a symlink to a directory, a file),
        // nothing in the way can be the worktree's: looking there would follow that
        // symlink into its target.
        let below_deleted = change
            .path
            .iter()
            .enumerate()
            .any(|(i, &b)| b == b'/' && deleted.contains(&change.path[..i]));
        if below_deleted {
            continue;
        }
        let full = root.join(OsStr::from_bytes(&change.path));
        match std::fs::symlink_metadata(&full) {
            Ok(meta) if meta.is_dir() => holds_nothing_else(root, &full, &deleted)?,
            Ok(_) => {
                return Err(Error::RestoreBlocked {
                    path: full,
                    why: "it exists but is not in the current checkpoint (it is ignored, or new); move it away and retry".into(),
                })
            }
            Err(_) => {}
        }
    }
    Ok(())
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
