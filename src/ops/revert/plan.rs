//! The plan of a revert: which paths the change touched, what the worktree made of
//! each since, and per path what to do (write, delete, merge, or leave as a conflict).

use std::collections::{BTreeMap, BTreeSet};

use crate::diff::content::{Content, ContentReader};
use crate::diff::{diff_trees, Change, PathFilter};
use crate::git::repo::Repo;
use crate::model::tree::Node;
use crate::storage::Snapshot;
use crate::worktree::exempt::ExemptPaths;
use crate::worktree::Worktree;
use crate::{Result, TreeId};

use super::apply::occupied;
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
        &PathFilter::default(),
    )?;
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
    let worktree = Worktree::open(&repo.root)?;
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
        let conflict = |entry: &mut PathReport, why: &str| {
            entry.status = Status::Conflict;
            entry.why = Some(why.to_string());
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
            take_theirs(&mut entry, theirs, &worktree, stored)?;
        } else {
            merge_changed(
                &mut entry,
                (base, ours_node.as_ref(), theirs),
                stored,
                ours_reader,
                undo,
                options.conflict_style,
            )?;
        }
        out.push(entry);
    }
    Ok(out)
}

/// A path the worktree left as the change made it (O is B): it becomes what it was before
/// the change (T), deleted when the change created it, unless something no checkpoint
/// holds stands where it is to be recreated.
fn take_theirs(
    entry: &mut PathReport,
    theirs: Option<&Node>,
    worktree: &Worktree,
    stored: &ContentReader<'_>,
) -> Result<()> {
    let conflict = |entry: &mut PathReport, why: &str| {
        entry.status = Status::Conflict;
        entry.why = Some(why.to_string());
    };
    match theirs {
        None => {
            entry.status = Status::Applied;
        }
        Some(node) => {
            if entry.ours.is_none() && occupied(worktree, &entry.path)? {
                conflict(
                    entry,
                    "something no checkpoint holds is there now (an ignored file?); left as it is",
                );
            } else {
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
            }
        }
    }
    Ok(())
}
