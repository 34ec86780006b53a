//! Applying a restore's plan to the worktree (steps 4 to 7 of the order in the module
//! doc of [`crate::ops::restore`]): leftovers removed, deletions, then files written in
//! parallel at their own names or under temporary ones renamed over their targets once
//! durable, then the directories the deletions emptied. Every change goes through a
//! handle of the directory it concerns ([`crate::worktree`]).

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use rayon::prelude::*;
use rustix::fs::FileType;

use crate::diff::Change;
use crate::format::chunk::Hasher;
use crate::model::tree::Node;
use crate::progress::Progress;
use crate::storage::pack::{LastPack, ReadChunks};
use crate::worktree::{self, temp_name, Barrier, Worktree, TEMP_LINK_SUFFIX, TEMP_RANDOM_CHARS};
use crate::{Error, Result};

/// Carries out `changes`, which passed [`preflight`](super::preflight::preflight), in the
/// worktree at `root`, after removing `leftovers` (an interrupted restore's temporary
/// files). Every change goes through a handle of the directory it concerns
/// ([`crate::worktree`]), so a directory swapped for a symlink while this runs stops the
/// restore instead of redirecting it.
pub(super) fn apply(
    root: &Path,
    hasher: &Hasher,
    chunks: &ReadChunks,
    changes: &[Change],
    leftovers: &[Vec<u8>],
    progress: Option<&dyn Progress>,
) -> Result<()> {
    let worktree = Worktree::open(root, barrier_for(changes, leftovers))?;
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
    delete_files(worktree, deletions)?;
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
    let writer = Writer {
        worktree,
        hasher,
        chunks,
        progress,
        keep_files: worktree.barrier() == Barrier::EachEntry,
    };
    let mut staged = writer.stage(&batches, writes)?;
    if writes == 0 {
        return Ok(());
    }
    // Every byte written (in place or under a temporary name), the new names, the
    // deletions and the new directories made durable at once. A restore that only adds
    // files needs no other barrier.
    {
        let _span = crate::trace::span("restore: sync");
        let written: Vec<File> = staged
            .iter_mut()
            .flat_map(|(_, placed)| placed)
            .filter_map(|placed| placed.file.take())
            .collect();
        worktree.sync(&written)?;
    }
    rename_staged(worktree, &batches, staged)
}

/// The most files and directories a restore makes durable one by one (`fdatasync` of
/// each written file, `fsync` of each changed directory, in parallel), which waits for
/// its own data only; a restore that changes more syncs the whole filesystem once
/// (`syncfs`), which then costs less than a drive flush for every few files, but also
/// waits for other processes' dirty data there (docs/performance.md, "The restore's
/// barrier"). Each is held open until the barrier: well below the usual limit of 1,024
/// open files.
const EACH_ENTRY_MAX: usize = 256;

/// How a restore of `changes` (after removing `leftovers`) makes what it wrote durable:
/// each entry when the files it writes and the directories whose entries it may change
/// (those above a changed path) are few, else the whole filesystem
/// ([`EACH_ENTRY_MAX`]).
fn barrier_for(changes: &[Change], leftovers: &[Vec<u8>]) -> Barrier {
    let files = changes.iter().filter(|c| c.new.is_some()).count();
    let paths = changes
        .iter()
        .map(|c| c.path.as_slice())
        .chain(leftovers.iter().map(Vec::as_slice));
    let mut dirs: BTreeSet<&[u8]> = BTreeSet::new();
    for path in paths {
        let mut dir = split_name(path).0;
        // A directory seen before had its own above it counted with it.
        while dirs.insert(dir) && !dir.is_empty() {
            dir = split_name(dir).0;
        }
        if files + dirs.len() > EACH_ENTRY_MAX {
            return Barrier::Filesystem;
        }
    }
    Barrier::EachEntry
}

/// Step 4 of a restore: the deletions. A directory that is gone holds nothing to delete.
fn delete_files(worktree: &Worktree, deletions: &[Directory<'_, ()>]) -> Result<()> {
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
    Ok(())
}

/// What the parallel writers of a restore share.
struct Writer<'a> {
    worktree: &'a Worktree,
    hasher: &'a Hasher,
    chunks: &'a ReadChunks,
    progress: Option<&'a dyn Progress>,
    /// Whether each written file is kept open for the barrier ([`Barrier::EachEntry`]).
    keep_files: bool,
}

/// Each batch's directory (as it was when written into) and where its files went.
type StagedBatch = (DirId, Vec<Staged>);

impl Writer<'_> {
    /// Writes every batch in parallel (`writes` files in all), each file at its own
    /// name or a temporary one ([`place_node`]). If any batch fails, what the others
    /// wrote is taken back (the restore replaced no file) and the first error returned.
    fn stage(&self, batches: &[Batch<'_>], writes: usize) -> Result<Vec<StagedBatch>> {
        let done = AtomicUsize::new(0);
        let half = writes / 2;
        let staged: Vec<Result<StagedBatch>> = batches
            .par_iter()
            .map_init(
                || (Vec::new(), LastPack::default()),
                |(buf, last), (dir_path, files)| {
                    let dir = created(self.worktree, dir_path)?;
                    let mut staged: Vec<Staged> = Vec::with_capacity(files.len());
                    for (name, write) in files.iter() {
                        let placed =
                            place_node(self.hasher, self.chunks, last, write, &dir, name, buf);
                        let placed = match placed {
                            Ok(mut placed) => {
                                if !self.keep_files {
                                    placed.file = None;
                                }
                                placed
                            }
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
                        if let Some(progress) = self.progress {
                            progress.file_done(file_size(write.node));
                        }
                    }
                    Ok((dir.identity()?, staged))
                },
            )
            .collect();
        if let Some(progress) = self.progress {
            progress.end();
        }
        let Some(failed) = staged.iter().position(Result::is_err) else {
            return staged.into_iter().collect();
        };
        // Take back what the other batches wrote: temporary files, and the files written
        // at names where nothing was. The restore replaced no file.
        for ((dir_path, files), placed) in batches.iter().zip(&staged) {
            if let (Ok((_, placed)), Ok(Some(dir))) = (placed, self.worktree.dir(dir_path, false)) {
                for (placed, (name, _)) in placed.iter().zip(files.iter()) {
                    let _ = dir.remove_file(placed.written_name(name));
                }
            }
        }
        match staged.into_iter().nth(failed) {
            Some(Err(e)) => Err(e),
            _ => Ok(Vec::new()),
        }
    }
}

/// Renames each file written under a temporary name over its target, then makes the
/// renames durable. Each directory is opened again, as its path leads now: if it was
/// swapped since (for a symlink, or another directory), this fails, and whatever was
/// written there stays where it went, for the next restore to find. Without this, a
/// restore that wrote only at new names would end as done with its files moved away.
fn rename_staged(
    worktree: &Worktree,
    batches: &[Batch<'_>],
    staged: Vec<StagedBatch>,
) -> Result<()> {
    let _span = crate::trace::span("restore: check the directories, rename, sync");
    let renames: usize = staged
        .iter()
        .flat_map(|(_, placed)| placed)
        .filter(|p| p.tmp.is_some())
        .count();
    let half = renames / 2;
    let mut renamed = 0;
    for ((dir_path, files), (written_in, placed)) in batches.iter().zip(staged) {
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
    // marker is cleared, beside old files. With a barrier of each entry, that is each
    // directory with a rename, in parallel, so that the journal commits are shared.
    worktree.sync(&[])
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
    /// The file written, held open for a barrier of each entry; `None` for a symlink,
    /// or once closed.
    file: Option<File>,
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
        if let Some(file) = write_new(hasher, chunks, last, node, dir, name, name, buf)? {
            return Ok(Staged { tmp: None, file });
        }
        if dir.kind(name)? == Some(FileType::Directory) {
            dir.remove_empty_tree(name)?;
            if let Some(file) = write_new(hasher, chunks, last, node, dir, name, name, buf)? {
                return Ok(Staged { tmp: None, file });
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
        Some(file) => Ok(Staged {
            tmp: Some(tmp),
            file,
        }),
        None => Err(Error::io(
            dir.display(&tmp),
            std::io::Error::from(std::io::ErrorKind::AlreadyExists),
        )),
    }
}

/// Creates `at` in `dir` (`O_EXCL`) holding `node`, which is to become `name`: the file
/// written, still open (`None` for a symlink); `None` if something is at `at` already.
/// A file that fails half-way is removed.
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
) -> Result<Option<Option<File>>> {
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
                return Ok(None);
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
                })
                .and_then(|()| {
                    worktree::platform::push_to_device(&file)
                        .map_err(|e| Error::io(dir.display(at), e))
                });
            if let Err(e) = written {
                drop(file);
                let _ = dir.remove_file(at);
                return Err(e);
            }
            Ok(Some(Some(file)))
        }
        Node::Symlink { target: link } => Ok(dir.symlink(link, at)?.then_some(None)),
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
pub(super) fn file_size(node: &Node) -> u64 {
    match node {
        Node::File { size, .. } | Node::FileWithMode { size, .. } => *size,
        _ => 0,
    }
}
