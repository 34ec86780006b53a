//! The plan of a revert: which paths the change touched, what the worktree made of
//! each since, and per path what to do (write, delete, merge, or leave as a conflict).

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use crate::diff::content::{Content, ContentReader};
use crate::diff::{diff_trees, Change, PathFilter};
use crate::git::repo::Repo;
use crate::model::tree::Node;
use crate::ops::restore::holds_nothing_else;
use crate::storage::Snapshot;
use crate::worktree::exempt::ExemptPaths;
use crate::{Error, Result, TreeId};

use super::merge::{merge_changed, read, same, written};
use super::{PathReport, RevertOptions, Status, Undo};

/// The merge of every path `undo` touched with the worktree (`ours`: its tree, with its
/// pending trees if only scanned). `stored` reads the two sides of the change, `ours`
/// the worktree's side.
#[allow(clippy::too_many_arguments)]
pub(super) fn plan(
    repo: &Repo,
    snapshot: &Snapshot,
    ours: (TreeId, Option<&crate::model::PendingTrees>),
    skipped: &BTreeSet<Vec<u8>>,
    undo: &Undo,
    stored: &ContentReader<'_>,
    ours_reader: &ContentReader<'_>,
    options: &RevertOptions,
) -> Result<Vec<PathReport>> {
    let tree_reader = snapshot.checked_trees(ours.1)?;
    // old: theirs (before the change), new: the base (what the change made).
    let reverted = diff_trees(
        &tree_reader,
        Some(undo.before),
        Some(undo.after),
        &PathFilter::new(undo.paths.clone()),
    )?;
    // As git refuses a pathspec that matches no file, a path that matches nothing the
    // change touched is refused: a typo must not pass for "nothing to undo there".
    for path in undo.paths.iter().filter(|path| !path.is_empty()) {
        let one = PathFilter::new(vec![path.clone()]);
        if !reverted.iter().any(|change| one.covers(&change.path)) {
            return Err(Error::RevertPathspecNoMatch {
                path: String::from_utf8_lossy(path).into_owned(),
                rev: undo.revision.clone(),
            });
        }
    }
    if reverted.is_empty() {
        return Ok(Vec::new());
    }
    // What the worktree changed since, on those paths only: old the base, new ours.
    let filter = PathFilter::new(reverted.iter().map(|c| c.path.clone()).collect());
    let since: BTreeMap<Vec<u8>, Change> =
        diff_trees(&tree_reader, Some(undo.after), Some(ours.0), &filter)?
            .into_iter()
            .map(|c| (c.path.clone(), c))
            .collect();
    let mut exempt = ExemptPaths::of(repo);
    let mut out = Vec::with_capacity(reverted.len());
    for change in reverted {
        let (theirs, base) = (change.old.as_ref(), change.new.as_ref());
        let ours_node = match since.get(&change.path) {
            Some(c) => c.new.clone(),
            None => base.cloned(),
        };
        let mut entry = PathReport {
            path: change.path.clone(),
            status: Status::Unchanged,
            markers: false,
            why: None,
            ours: ours_node.clone(),
            ours_content: Content::Absent,
            result: None,
        };
        // A directory of the worktree where the change had a file: something below it
        // differs from the base.
        let mut below = change.path.clone();
        below.push(b'/');
        let directory_here = since
            .range(below.clone()..)
            .next()
            .is_some_and(|(p, c)| p.starts_with(&below) && c.new.is_some());
        if exempt.contains(&change.path) {
            entry.why = Some(
                "a revert never changes the git dir, a linked worktree or an agent's settings"
                    .into(),
            );
        } else if skipped.contains(&change.path) {
            conflict(&mut entry, "no checkpoint holds what the worktree has there (larger than checkpoint.maxFileSize, or unreadable); left as it is");
        } else if directory_here {
            conflict(
                &mut entry,
                "the worktree has a directory here now; left as it is",
            );
        } else if same(ours_node.as_ref(), theirs) {
            entry.why = Some("already as it was before the change".into());
        } else if same(ours_node.as_ref(), base) {
            take_theirs(&mut entry, theirs, stored)?;
        } else {
            merge_changed(
                &mut entry,
                (base, ours_node.as_ref(), theirs),
                stored,
                ours_reader,
                undo,
                options,
            )?;
        }
        out.push(entry);
    }
    clear_the_way(&repo.root, &since, &mut out)?;
    Ok(out)
}

/// Marks `entry` a conflict, left as the worktree has it, for `why`.
fn conflict(entry: &mut PathReport, why: &str) {
    entry.status = Status::Conflict;
    entry.why = Some(why.to_string());
}

/// A path the worktree left as the change made it (O is B): it becomes what it was before
/// the change (T), deleted when the change created it. Whether the way to it is clear is
/// decided once every path is planned ([`clear_the_way`]).
fn take_theirs(
    entry: &mut PathReport,
    theirs: Option<&Node>,
    stored: &ContentReader<'_>,
) -> Result<()> {
    let Some(node) = theirs else {
        entry.status = Status::Applied;
        return Ok(());
    };
    match written(node, read(stored, &entry.path, node)?) {
        Some(result) => {
            entry.status = Status::Applied;
            entry.result = Some(result);
        }
        None => conflict(
            entry,
            "too big to revert by merging; use restore <rev> -- <path>",
        ),
    }
    Ok(())
}

/// Decides, for each path the revert is to create where the worktree has nothing of a
/// checkpoint's, whether what stands in the way goes: a file where its directory belongs
/// goes only if the revert deletes it, and a directory where the file belongs only if
/// everything in it is deleted by the revert (a step that turned a file into a
/// directory, or the reverse, is undone whole). Anything else in the way (an ignored
/// file, something the worktree made since) makes the path a conflict, left as it is.
/// `since` holds the worktree's changes since the change, on its paths and below them.
fn clear_the_way(
    root: &Path,
    since: &BTreeMap<Vec<u8>, Change>,
    out: &mut [PathReport],
) -> Result<()> {
    let deleted: HashSet<Vec<u8>> = out
        .iter()
        .filter(|p| p.status == Status::Applied && p.result.is_none())
        .map(|p| p.path.clone())
        .collect();
    let reverted: HashSet<&[u8]> = out.iter().map(|p| p.path.as_slice()).collect();
    // Whether the worktree keeps a file below `dir` after the revert: one of the
    // change's paths that is not deleted, or one the worktree made since.
    let kept_below = |dir: &[u8]| {
        let mut below = dir.to_vec();
        below.push(b'/');
        let reverted_kept = out
            .iter()
            .any(|p| p.path.starts_with(&below) && p.ours.is_some() && !deleted.contains(&p.path));
        let made_since = since
            .range(below.clone()..)
            .take_while(|(p, _)| p.starts_with(&below))
            .any(|(p, c)| c.new.is_some() && !reverted.contains(p.as_slice()));
        reverted_kept || made_since
    };
    let mut blocked = Vec::new();
    for (i, entry) in out.iter().enumerate() {
        if entry.status != Status::Applied || entry.result.is_none() || entry.ours.is_some() {
            continue;
        }
        let why = match obstacle(root, &entry.path)? {
            None => continue,
            Some(Obstacle::Above(file)) if deleted.contains(&file) => continue,
            Some(Obstacle::Above(_)) => {
                "something the revert does not remove stands where its directory belongs; left as it is"
            }
            Some(Obstacle::Directory) if kept_below(&entry.path) => {
                "the worktree has a directory here now; left as it is"
            }
            Some(Obstacle::Directory) => {
                let refs: HashSet<&[u8]> = deleted.iter().map(Vec::as_slice).collect();
                let full = root.join(OsStr::from_bytes(&entry.path));
                match holds_nothing_else(root, &full, &refs) {
                    Ok(()) => continue,
                    Err(Error::RestoreBlocked { .. }) => {
                        "something no checkpoint holds is there now (an ignored file?); left as it is"
                    }
                    Err(e) => return Err(e),
                }
            }
            Some(Obstacle::Other) => {
                "something no checkpoint holds is there now (an ignored file?); left as it is"
            }
        };
        blocked.push((i, why));
    }
    for (i, why) in blocked {
        out[i].result = None;
        conflict(&mut out[i], why);
    }
    Ok(())
}

/// What stands where a path is to be created.
enum Obstacle {
    /// A file or symlink at this directory of the path (a worktree path).
    Above(Vec<u8>),
    /// A directory at the path itself.
    Directory,
    /// Anything else at the path itself.
    Other,
}

/// What is in the way of creating `path` in the worktree at `root`, if anything: looked
/// at without following symlinks, from the top down.
fn obstacle(root: &Path, path: &[u8]) -> Result<Option<Obstacle>> {
    let look = |rel: &[u8]| {
        let full = root.join(OsStr::from_bytes(rel));
        match std::fs::symlink_metadata(&full) {
            Ok(meta) => Ok(Some(meta.file_type())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io(full, e)),
        }
    };
    for (i, _) in path.iter().enumerate().filter(|(_, &b)| b == b'/') {
        match look(&path[..i])? {
            Some(kind) if kind.is_dir() => {}
            Some(_) => return Ok(Some(Obstacle::Above(path[..i].to_vec()))),
            // Missing: the revert makes it, and nothing below it is in the way.
            None => return Ok(None),
        }
    }
    Ok(match look(path)? {
        None => None,
        Some(kind) if kind.is_dir() => Some(Obstacle::Directory),
        Some(_) => Some(Obstacle::Other),
    })
}
