//! The files a checkpoint holds: what `git add -A` would consider. That is the parallel
//! walk of the `ignore` crate (gitignore at every level, `info/exclude`, the excludes
//! file) joined with the files git tracks although an ignore rule matches them, which
//! the walk alone skips. Never anything named `.git`. Nested repositories are walked
//! into: their files are captured under their own ignore rules, their `.git` is not.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;

use crate::repo::Repo;
use crate::stat_cache::FileStat;
use crate::{Error, Result};

/// The kind of a walked entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A regular file.
    File,
    /// A symbolic link (never followed).
    Symlink,
}

/// One file or symlink of the worktree.
#[derive(Clone, Debug)]
pub struct WalkEntry {
    /// Path relative to the worktree root, `/`-separated, raw bytes.
    pub path: Vec<u8>,
    /// Its kind.
    pub kind: Kind,
    /// Its metadata, from `lstat`.
    pub stat: FileStat,
}

/// What the walk found.
#[derive(Debug, Default)]
pub struct Walk {
    /// Files and symlinks, sorted by path bytes.
    pub entries: Vec<WalkEntry>,
    /// FIFOs, sockets and devices, which are never captured.
    pub special: Vec<Vec<u8>>,
    /// Temporary files an interrupted restore left behind, which are never captured.
    pub leftovers: Vec<Vec<u8>>,
}

fn is_dot_git(name: &OsStr) -> bool {
    name.as_bytes().eq_ignore_ascii_case(b".git")
}

/// Walks the worktree of `repo`.
pub fn walk(repo: &Repo) -> Result<Walk> {
    std::thread::scope(|scope| {
        let tracked = scope.spawn(|| repo.tracked_but_ignored());
        let mut found = {
            let _span = crate::trace::span("walk: directories");
            walk_tree(repo)?
        };
        let tracked = tracked
            .join()
            .unwrap_or_else(|_| Err(Error::InvalidArgument("git ls-files panicked".into())))?;
        for path in tracked {
            if path
                .split(|&b| b == b'/')
                .any(|c| is_dot_git(OsStr::from_bytes(c)))
            {
                continue;
            }
            let full = repo.root.join(OsStr::from_bytes(&path));
            // A tracked file deleted from the worktree is simply not there.
            if let Ok(meta) = std::fs::symlink_metadata(&full) {
                classify(path, &meta, &mut found);
            }
        }
        found.entries.sort_unstable_by(|a, b| a.path.cmp(&b.path));
        found.entries.dedup_by(|a, b| a.path == b.path);
        found.special.sort_unstable();
        found.special.dedup();
        found.leftovers.sort_unstable();
        found.leftovers.dedup();
        Ok(found)
    })
}

/// Whether the last component of `path` is a restore's temporary file.
fn is_restore_temp(path: &[u8]) -> bool {
    let name = path.rsplit(|&b| b == b'/').next().unwrap_or(path);
    name.starts_with(crate::restore::TEMP_PREFIX.as_bytes())
}

fn classify(path: Vec<u8>, meta: &std::fs::Metadata, into: &mut Walk) {
    let ft = meta.file_type();
    if is_restore_temp(&path) && !ft.is_dir() {
        into.leftovers.push(path);
        return;
    }
    let kind = if ft.is_file() {
        Kind::File
    } else if ft.is_symlink() {
        Kind::Symlink
    } else if ft.is_fifo() || ft.is_socket() || ft.is_block_device() || ft.is_char_device() {
        into.special.push(path);
        return;
    } else {
        return;
    };
    into.entries.push(WalkEntry {
        path,
        kind,
        stat: FileStat::from_metadata(meta),
    });
}

fn walk_tree(repo: &Repo) -> Result<Walk> {
    let root = repo.root.as_path();
    let mut builder = ignore::WalkBuilder::new(root);
    builder
        .standard_filters(false)
        .hidden(false)
        .parents(false)
        .ignore(false)
        .git_ignore(true)
        .git_exclude(true)
        // git reads only the effective excludes file; it is added below.
        .git_global(false)
        .require_git(false)
        .follow_links(false)
        .current_dir(root)
        .filter_entry(|e| !is_dot_git(e.file_name()));
    if let Some(excludes) = repo.excludes_file().filter(|p| p.is_file()) {
        if let Some(err) = builder.add_ignore(&excludes) {
            return Err(Error::InvalidArgument(format!(
                "cannot read excludes file {}: {err}",
                excludes.display()
            )));
        }
    }
    let (tx, rx) = crossbeam_channel::unbounded::<Result<Walk>>();
    let mut visitors = VisitorBuilder { root, tx };
    builder.build_parallel().visit(&mut visitors);
    drop(visitors);
    let mut all = Walk::default();
    for batch in rx {
        let batch = batch?;
        all.entries.extend(batch.entries);
        all.special.extend(batch.special);
        all.leftovers.extend(batch.leftovers);
    }
    Ok(all)
}

struct VisitorBuilder<'a> {
    root: &'a Path,
    tx: crossbeam_channel::Sender<Result<Walk>>,
}

impl<'s> ignore::ParallelVisitorBuilder<'s> for VisitorBuilder<'s> {
    fn build(&mut self) -> Box<dyn ignore::ParallelVisitor + 's> {
        Box::new(Visitor {
            root: self.root,
            tx: self.tx.clone(),
            batch: Walk::default(),
        })
    }
}

/// One walker thread's state: entries are sent in batches, the last one on drop.
struct Visitor<'a> {
    root: &'a Path,
    tx: crossbeam_channel::Sender<Result<Walk>>,
    batch: Walk,
}

impl Visitor<'_> {
    fn take(&mut self, result: Result<ignore::DirEntry, ignore::Error>) -> Result<()> {
        let entry = result.map_err(|e| walk_error(self.root, e))?;
        if entry.depth() == 0 || entry.file_type().is_some_and(|t| t.is_dir()) {
            return Ok(());
        }
        let meta = entry.metadata().map_err(|e| walk_error(self.root, e))?;
        classify(relative(self.root, entry.path()), &meta, &mut self.batch);
        Ok(())
    }
}

impl ignore::ParallelVisitor for Visitor<'_> {
    fn visit(&mut self, result: Result<ignore::DirEntry, ignore::Error>) -> ignore::WalkState {
        match self.take(result) {
            Ok(()) => {
                if self.batch.entries.len() >= 4096 {
                    let _ = self.tx.send(Ok(std::mem::take(&mut self.batch)));
                }
                ignore::WalkState::Continue
            }
            // A file deleted while the walk runs is simply not part of the checkpoint.
            Err(e) if is_vanished(&e) => ignore::WalkState::Continue,
            Err(e) => {
                let _ = self.tx.send(Err(e));
                ignore::WalkState::Quit
            }
        }
    }
}

impl Drop for Visitor<'_> {
    fn drop(&mut self) {
        let _ = self.tx.send(Ok(std::mem::take(&mut self.batch)));
    }
}

fn relative(root: &Path, path: &Path) -> Vec<u8> {
    path.strip_prefix(root)
        .unwrap_or(path)
        .as_os_str()
        .as_bytes()
        .to_vec()
}

fn walk_error(root: &Path, e: ignore::Error) -> Error {
    match e.io_error().map(std::io::Error::kind) {
        Some(kind) => Error::io(root, std::io::Error::new(kind, e.to_string())),
        None => Error::InvalidArgument(format!("walking the worktree: {e}")),
    }
}

fn is_vanished(e: &Error) -> bool {
    matches!(e, Error::Io { error, .. } if error.kind() == std::io::ErrorKind::NotFound)
}
