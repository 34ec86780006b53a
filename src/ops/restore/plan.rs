//! The plan of a restore: the changes that make the worktree equal to the target, less
//! the paths no checkpoint holds (files a save skipped, the repository's own git dirs and
//! agent settings), checked by the preflight before anything changes.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::collisions::check_no_collisions;
use super::preflight::preflight;
use super::{RestoreReport, Target};
use crate::diff::{self, Change, PathFilter};
use crate::format::chunk::Hasher;
use crate::git::repo::Repo;
use crate::model::{PendingTrees, SkippedFile};
use crate::storage::{Snapshot, TreeReader};
use crate::worktree::exempt::ExemptPaths;
use crate::worktree::names::NameRules;
use crate::{Error, Result, TreeId};

/// The changes that make the worktree (the tree `current`, with its pending trees if
/// only scanned, and the files it skipped) equal to the checkpoint `target` under the
/// given `paths` (none: everything), less the skipped and exempt paths, which go to
/// `report` as untouched; the paths to write and delete go there too. A path that names
/// nothing on either side is refused, as git refuses a pathspec that matches nothing
/// (but for an undo's: its paths are those an operation changed, and one may be gone
/// from both sides since, with nothing left to do there).
/// Checked by [`check_no_collisions`] and [`preflight`]: what can be known before a change is checked before any,
/// and before the restore is recorded as started, so a refused restore changes nothing
/// and leaves nothing to finish, and a dry run refuses exactly what the real run would.
pub(super) fn plan(
    repo: &Repo,
    snapshot: &Snapshot,
    hasher: &Hasher,
    current: (TreeId, Option<&PendingTrees>, &[SkippedFile]),
    target: &Target,
    paths: &[Vec<u8>],
    report: &mut RestoreReport,
) -> Result<Vec<Change>> {
    let (current_tree, scanned_trees, current_skipped) = current;
    let (target_tree, target_skipped) = (target.tree, target.skipped.as_slice());
    let filter = PathFilter::new(paths.to_vec());
    let mut changes = {
        let reader = snapshot.checked_trees(scanned_trees)?;
        let changes = diff::diff_trees(&reader, Some(current_tree), Some(target_tree), &filter)?;
        let skipped = current_skipped.iter().chain(target_skipped);
        let unmatched = unmatched_paths(
            &reader,
            [current_tree, target_tree],
            paths,
            &changes,
            skipped,
        )?;
        if let (false, Some(path)) = (target.for_operation, unmatched) {
            return Err(Error::PathspecNoMatch {
                path: String::from_utf8_lossy(&path).into_owned(),
                checkpoint: snapshot.short_id(target.id)?,
            });
        }
        changes
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
    // Before the preflight, whose look at what is in the way would find the other name
    // and say less.
    check_no_collisions(&repo.root, NameRules::of(repo), &changes)?;
    preflight(&repo.root, hasher, &snapshot.chunks()?, &changes)?;
    Ok(changes)
}

/// The first of `paths` that names nothing: no change lies at or below it, no skipped
/// file either, and neither tree of `trees` (the worktree's and the target's) holds a
/// file there. Only the paths no change covers are looked up, down their own branches.
fn unmatched_paths<'a>(
    reader: &TreeReader<'_>,
    trees: [TreeId; 2],
    paths: &[Vec<u8>],
    changes: &[Change],
    skipped: impl Iterator<Item = &'a SkippedFile>,
) -> Result<Option<Vec<u8>>> {
    let skipped: Vec<&[u8]> = skipped.map(|file| file.path.as_slice()).collect();
    for path in paths.iter().filter(|path| !path.is_empty()) {
        let one = PathFilter::new(vec![path.clone()]);
        if changes.iter().any(|c| one.covers(&c.path)) || skipped.iter().any(|s| one.covers(s)) {
            continue;
        }
        let mut found = false;
        for tree in trees {
            if !diff::diff_trees(reader, None, Some(tree), &one)?.is_empty() {
                found = true;
                break;
            }
        }
        if !found {
            return Ok(Some(path.clone()));
        }
    }
    Ok(None)
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
