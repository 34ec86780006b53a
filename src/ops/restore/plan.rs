//! The plan of a restore: the changes that make the worktree equal to the target, less
//! the paths no checkpoint holds (files a save skipped, the repository's own git dirs and
//! agent settings), checked by the preflight before anything changes.

use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::preflight::preflight;
use super::RestoreReport;
use crate::diff::{self, Change, PathFilter};
use crate::format::chunk::Hasher;
use crate::git::repo::Repo;
use crate::model::{PendingTrees, SkippedFile};
use crate::storage::Snapshot;
use crate::worktree::exempt::ExemptPaths;
use crate::{Result, TreeId};

/// The changes that make the worktree (the tree `current`, with its pending trees if
/// only scanned, and the files it skipped) equal to the checkpoint's tree `target` (with
/// the files its save skipped) under `filter`, less the skipped and exempt paths, which
/// go to `report` as untouched; the paths to write and delete go there too. Checked by
/// [`preflight`]: what can be known before a change is checked before any, and before
/// the restore is recorded as started, so a refused restore changes nothing and leaves
/// nothing to finish, and a dry run refuses exactly what the real run would.
pub(super) fn plan(
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
