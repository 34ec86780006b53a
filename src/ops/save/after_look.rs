//! The write path of a save after its read-only look found something changed
//! ([`super::look`]): the look walked, matched the stat cache, read the few files the
//! cache could not vouch for and built the worktree's tree, but could store nothing. Its
//! findings come here ([`LookedScan`]) instead of being made again over every file: the
//! write path reads again only the entries the look read (now storing their new
//! chunks), and where one came out differently (it changed between the look and the
//! save) splices the new entries into the look's tree along those paths
//! ([`crate::model::tree::splice`], as a watched save does). The stat cache matches and
//! the trees of every other path are the look's. What the save records is what a save
//! that walked afresh would record of the worktree as the look saw it, with the files
//! read again as they now are (docs/design.md invariant 20).

use super::readers::{read_and_gather, FileRules, Files, Reading};
use super::scan::{complete, Handing, Scan, ScanRequest};
use super::stat_match::Cached;
use super::strategy::scan_store;
use super::watched::Watched;
use super::Warning;
use crate::git::repo::Repo;
use crate::model::dir_cache::DirCacheUpdates;
use crate::model::tree::{self, PendingTrees, Totals};
use crate::model::SkippedFile;
use crate::storage::StoreRead;
use crate::worktree::walk::{self, Kind};
use crate::{Result, TreeId};

/// What a save's look found, handed to its write path.
pub(super) struct LookedScan {
    /// The store's generation the look was made under: if anything was committed since,
    /// the write path looks afresh.
    pub(super) generation: u64,
    /// The entries the look read (files the stat cache could not vouch for, symlinks),
    /// sorted by path, each with its stat cache entry (the version new chunks may be
    /// deltas of).
    pub(super) reread: Vec<(walk::WalkEntry, Option<Cached>)>,
    /// What the look captured of those entries, by path, sorted.
    pub(super) looked: Files,
    /// The worktree's tree as the look built it.
    pub(super) root: TreeId,
    /// Its files and bytes.
    pub(super) totals: Totals,
    /// Every tree of it, encoded.
    pub(super) trees: PendingTrees,
    /// What the look found before reading anything (special files, files too large).
    pub(super) warnings: Vec<Warning>,
    /// The files it left out before reading anything (too large).
    pub(super) skipped: Vec<SkippedFile>,
    /// Cached paths its walk did not find.
    pub(super) stale: Vec<Vec<u8>>,
    /// Temporary files of an interrupted restore its walk found.
    pub(super) leftovers: Vec<Vec<u8>>,
    /// The directory cache changes its walk found.
    pub(super) dir_cache: DirCacheUpdates,
    /// The watcher's token, when a watcher answered.
    pub(super) watched: Option<Watched>,
}

/// A test hook: `GIT_CHECKPOINT_SAVE_AFTER_LOOK=off` makes the write path look at the
/// worktree afresh instead, so that tests can compare the two.
fn disabled() -> bool {
    cfg!(feature = "test-hooks")
        && std::env::var("GIT_CHECKPOINT_SAVE_AFTER_LOOK").is_ok_and(|v| v == "off")
}

/// The scan of the write path after a look: from what the look found, which holds only
/// while nothing was committed since it was made (another save, a restore); else of the
/// worktree afresh, as `request` asks.
pub(super) fn scan<'s, S: StoreRead>(
    repo: &Repo,
    store: &'s S,
    request: ScanRequest<'_, 's>,
    looked: LookedScan,
) -> Result<Scan<'s>> {
    if looked.generation != store.generation()? || disabled() {
        return complete(scan_store(repo, store, request)?);
    }
    from_look(repo, store, request, looked)
}

/// The scan of the write path from what the look found: the entries the look read are
/// read again (storing what is new), and the look's tree is kept, spliced along the
/// paths whose entries came out differently.
fn from_look<'s, S: StoreRead>(
    repo: &Repo,
    store: &'s S,
    request: ScanRequest<'_, 's>,
    looked: LookedScan,
) -> Result<Scan<'s>> {
    let LookedScan {
        generation: _,
        reread,
        looked,
        root,
        totals,
        trees,
        mut warnings,
        mut skipped,
        stale,
        leftovers,
        dir_cache,
        watched,
    } = looked;
    let _span = crate::trace::span("read again what the look read, splice");
    let rules = FileRules::read(request.settings, request.mode, &mut warnings)?;
    let read = store.snapshot()?;
    let (mut entries, cached): (Vec<_>, Vec<_>) = reread.into_iter().unzip();
    let to_read = entries.iter().filter(|e| e.kind == Kind::File).count();
    let (files, mut cache_updates, written) = read_and_gather(
        repo,
        store,
        &read,
        Reading {
            mode: request.mode,
            rules: &rules,
            writer: request.writer,
            progress: request.progress,
            to_read,
        },
        &mut entries,
        cached,
        &mut warnings,
        &mut skipped,
    )?;
    cache_updates.remove.extend(stale);
    let differ = differing(&looked, &files);
    let (root, totals, trees) = if differ.is_empty() {
        (root, totals, trees)
    } else {
        let _span = crate::trace::span("splice what changed since the look");
        let new: Files = files
            .into_iter()
            .filter(|(path, _)| differ.binary_search(path).is_ok())
            .collect();
        let mut made = PendingTrees::new();
        let spliced = {
            let reader = read.trees(Some(&trees))?;
            tree::splice(
                store.hasher(),
                root,
                &mut |id| reader.get(id),
                &differ,
                &new,
                &mut made,
            )?
        };
        let mut trees = trees;
        trees.extend(made);
        // The look's trees that the splice replaced are no part of the checkpoint.
        tree::keep_reachable(&mut trees, spliced.root)?;
        (spliced.root, spliced.totals(totals), trees)
    };
    Ok(Scan {
        root,
        totals,
        trees,
        warnings,
        leftovers,
        skipped,
        cache_updates,
        dir_cache,
        chunk_txn: written,
        handing: None,
        watched,
    })
}

impl LookedScan {
    /// What the look's `scan` found, for the save's write path to go on from
    /// ([`scan`]); `None` unless the scan was given a read limit.
    pub(super) fn of(scan: Scan<'_>) -> Option<LookedScan> {
        let Handing {
            generation,
            reread,
            looked,
            found_warnings,
            found_skipped,
            stale,
        } = scan.handing?;
        let mut warnings = scan.warnings;
        warnings.truncate(found_warnings);
        let mut skipped = scan.skipped;
        skipped.truncate(found_skipped);
        Some(LookedScan {
            generation,
            reread,
            looked,
            root: scan.root,
            totals: scan.totals,
            trees: scan.trees,
            warnings,
            skipped,
            stale,
            leftovers: scan.leftovers,
            dir_cache: scan.dir_cache,
            watched: scan.watched,
        })
    }
}

/// The paths (sorted) whose entry differs between `before` and `after` (both sorted by
/// path): captured in one and not the other, or captured as different nodes.
fn differing(before: &Files, after: &Files) -> Vec<Vec<u8>> {
    let mut differ = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < before.len() || j < after.len() {
        match (before.get(i), after.get(j)) {
            (Some((a, an)), Some((b, bn))) if a == b => {
                if an != bn {
                    differ.push(a.clone());
                }
                i += 1;
                j += 1;
            }
            (Some((a, _)), Some((b, _))) if a < b => {
                differ.push(a.clone());
                i += 1;
            }
            (Some((a, _)), None) => {
                differ.push(a.clone());
                i += 1;
            }
            (_, Some((b, _))) => {
                differ.push(b.clone());
                j += 1;
            }
            (None, None) => break,
        }
    }
    differ
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::tree::Node;

    fn file(path: &str, size: u64) -> (Vec<u8>, Node) {
        (
            path.as_bytes().to_vec(),
            Node::File {
                size,
                executable: false,
                chunks: Vec::new(),
            },
        )
    }

    /// Every kind of difference between the look's entries and the write path's is
    /// found, and only those: gone, new, changed; the same entry is not.
    #[test]
    fn differing_finds_gone_new_and_changed_entries() {
        let before = vec![file("a", 1), file("b", 2), file("d", 4)];
        let after = vec![file("b", 3), file("c", 1), file("d", 4)];
        let differ: Vec<&[u8]> = Vec::new();
        let found = differing(&before, &after);
        let found: Vec<&[u8]> = found.iter().map(Vec::as_slice).collect();
        assert_eq!(found, [&b"a"[..], b"b", b"c"]);
        assert_eq!(differing(&after, &after), differ);
    }
}
