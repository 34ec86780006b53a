//! The scan strategy a watcher allows, the save's side of the watcher (which itself
//! only reports changed paths, [`crate::watch`]): the worktree is the tree the last
//! watched save recorded, but for the paths changed since (and the files that save left
//! out), which are read through the rules of a walk ([`walk::walk_paths`]); the scan
//! consults the stat cache for those paths only and splices what it found into the
//! base tree ([`crate::model::tree::splice`]), so that a save after a few edits costs in
//! proportion to the edits. Whenever that is in doubt the save
//! walks (docs/design.md, "The watcher"): a changed file that has gained a second hard
//! link (a write through the other name raises no event for it, and where that name is
//! only a walk finds), a filesystem mounted below the worktree's top (the watcher
//! watches the directory it covers), a change to anything outside the worktree that
//! decides what a walk captures (the fingerprint follows symlinks, so an excludes file
//! that is a link into a dotfiles directory counts), but for the index: the paths whose
//! index entries changed since the base are looked at again ([`super::kept_index`]), and
//! only an index this tool cannot compare makes the save walk. A file a save found with more than
//! one link is not vouched for by the journal at all: every watched save looks at it
//! again, whichever name (in the worktree or outside it) a write went through.

use std::borrow::Cow;
use std::ffi::OsStr;
use std::fs::OpenOptions;
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use super::kept_index::{self, IndexState};
use super::stat_match::{Cached, StatCacheMatch};
use crate::git::repo::Repo;
use crate::model::stat_cache::FileStat;
use crate::model::tree::{self, Node, PendingTrees, Totals};
use crate::model::{Checkpoint, SkippedFile};
use crate::storage::Snapshot;
use crate::watch::client::{self, Answer};
use crate::watch::{self as watcher, Token};
use crate::worktree::names::{precompose, NameRules};
use crate::worktree::walk::{self, Kind, Walk, WalkEntry};
use crate::{CheckpointId, Result, TreeId};

/// What a save that asked the watcher records once it has committed: the token it got
/// before it looked at the worktree, and the state of the files outside the worktree
/// that decide what a walk captures.
#[derive(Debug, Clone)]
pub(super) struct Watched {
    token: Token,
    fingerprint: String,
    /// The index as the save found it before it looked at the worktree.
    index: Option<IndexState>,
    /// Whether the index changed since the recorded base, whose kept copy the save then
    /// compared with it entry by entry: worth recording again even when nothing else
    /// changed, so that the next save need not compare them again.
    index_moved: bool,
    /// The files the save found with more than one link (hard links), which the next
    /// save looks at again whatever the journal says.
    linked: Vec<Vec<u8>>,
}

/// The base a watched save recorded.
#[derive(Debug, PartialEq, Eq)]
struct Base {
    token: Token,
    tree: TreeId,
    fingerprint: String,
    /// The index the save saw, kept beside the base ([`kept_index`]).
    index: Option<IndexState>,
    /// The files the save found but left out of `tree` (too large, unreadable): a save
    /// that starts from this base looks at them again, as a walk would find them.
    left_out: Vec<Vec<u8>>,
    /// The files the save found with more than one link: a save that starts from this
    /// base looks at them again, as a write through another name raises no event.
    linked: Vec<Vec<u8>>,
}

/// The most a base file is read; a larger one (a great many files left out) is not used.
const MAX_BASE_BYTES: u64 = 1 << 20;

impl Watched {
    /// The same token, recording `linked`, the files the save found with more than one
    /// link.
    pub(super) fn with_linked(self, linked: Vec<Vec<u8>>) -> Watched {
        Watched { linked, ..self }
    }

    /// Records that the worktree as of this token is `tree` plus the files `left_out`
    /// (the save's skipped files): the next save asks for the paths changed since.
    /// Called only after the save's commit, so the recorded tree is in the store; a
    /// failure to write is only a missed shortcut (the next save walks), never an error
    /// of the save.
    pub(super) fn record(&self, repo: &Repo, tree: TreeId, left_out: &[SkippedFile]) {
        self.record_paths(repo, tree, left_out.iter().map(|file| file.path.as_slice()));
    }

    /// [`Watched::record`] when the index changed since the base and nothing else did:
    /// a save whose tree is the current checkpoint's commits nothing, and would record
    /// nothing.
    pub(super) fn record_if_index_moved(
        &self,
        repo: &Repo,
        tree: TreeId,
        left_out: &[SkippedFile],
    ) {
        if self.index_moved {
            self.record(repo, tree, left_out);
        }
    }

    /// [`Watched::record`] of the `left_out` paths.
    fn record_paths<'p>(
        &self,
        repo: &Repo,
        tree: TreeId,
        left_out: impl Iterator<Item = &'p [u8]>,
    ) {
        if watcher::trusted_dir(repo).is_none() {
            return;
        }
        let path = watcher::base_path(repo);
        let index = kept_index::keep(repo, self.index);
        // Five lines, then the left-out paths, each ended by a NUL (no path holds one),
        // a NUL, and the linked paths, each ended by a NUL.
        let mut text = format!(
            "v4\n{}\n{}\n{}\n{}\n",
            self.token.encode(),
            tree.hex(),
            self.fingerprint,
            kept_index::encode(index)
        )
        .into_bytes();
        for path in left_out {
            text.extend_from_slice(path);
            text.push(0);
        }
        text.push(0);
        for path in &self.linked {
            text.extend_from_slice(path);
            text.push(0);
        }
        // A fresh file (O_EXCL never follows a symlink), renamed over the base: a link
        // planted as either name is replaced, never written through.
        let temp = path.with_extension("tmp");
        let _ = std::fs::remove_file(&temp);
        let written = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp)
            .and_then(|mut file| file.write_all(&text));
        if written.is_ok() {
            let _ = std::fs::rename(&temp, &path);
        }
    }
}

fn read_base(repo: &Repo) -> Option<Base> {
    watcher::trusted_dir(repo)?;
    let file =
        watcher::open_own_file(&watcher::base_path(repo), OpenOptions::new().read(true)).ok()?;
    let mut bytes = Vec::new();
    file.take(MAX_BASE_BYTES + 1).read_to_end(&mut bytes).ok()?;
    if bytes.len() as u64 > MAX_BASE_BYTES {
        return None;
    }
    let mut parts = bytes.splitn(6, |&b| b == b'\n');
    let mut line = || std::str::from_utf8(parts.next()?).ok();
    if line()? != "v4" {
        return None;
    }
    let token = Token::decode(line()?)?;
    let tree = TreeId(u128::from_str_radix(line()?, 16).ok()?);
    let fingerprint = line()?.to_string();
    let index = kept_index::decode(line()?);
    let rest = parts.next()?;
    // The first empty path ends the left-out files; the linked ones follow.
    let mut paths = rest.split(|&b| b == 0);
    let left_out = paths
        .by_ref()
        .take_while(|path| !path.is_empty())
        .map(<[u8]>::to_vec)
        .collect();
    let linked = paths
        .filter(|path| !path.is_empty())
        .map(<[u8]>::to_vec)
        .collect();
    Some(Base {
        token,
        tree,
        fingerprint,
        index,
        left_out,
        linked,
    })
}

/// The state of everything outside the worktree but the index that changes what a walk
/// captures without an event in the worktree: `info/exclude` and the excludes file, the
/// linked worktrees, the settings a save applies to what it found, and which index file
/// git uses (`GIT_INDEX_FILE`; the index itself is compared entry by entry,
/// [`kept_index`]). Each file is looked at as a link and as
/// what it leads to: dotfile managers make the excludes file a symlink, and editing its
/// target changes nothing about the link. The worktree's top is in it too, by device and
/// inode (its times change with every entry made in it): a filesystem mounted over it is
/// another directory.
fn fingerprint(repo: &Repo) -> String {
    let mut hasher = blake3::Hasher::new();
    let top = std::fs::metadata(&repo.root)
        .map(|m| (m.dev(), m.ino()))
        .ok();
    hasher.update(format!("{top:?}\n").as_bytes());
    let excludes = repo.excludes_file();
    let files = [
        Some(repo.common_dir.join("info").join("exclude")),
        Some(repo.common_dir.join("worktrees")),
        excludes.clone(),
    ];
    for file in files.iter().flatten() {
        hasher.update(file.as_os_str().as_bytes());
        for meta in [std::fs::symlink_metadata(file), std::fs::metadata(file)] {
            let stat = meta.map(|m| FileStat::from_metadata(&m)).ok();
            hasher.update(format!("{stat:?}\n").as_bytes());
        }
    }
    for key in [
        "checkpoint.maxfilesize",
        "checkpoint.keeppermissions",
        "core.excludesfile",
    ] {
        hasher.update(format!("{key}={:?}\n", repo.config(key)).as_bytes());
    }
    hasher.update(format!("{:?}", std::env::var_os("GIT_INDEX_FILE")).as_bytes());
    // Whether the walk takes names in NFC (`worktree::names`).
    let precomposes = NameRules::of(repo).ignores_normalization;
    hasher.update(format!("\nprecompose={precomposes}").as_bytes());
    hasher.finalize().to_hex().to_string()
}

/// What the watcher said, and whether the recorded base lets a save trust it.
struct Asked {
    /// The token to record once the save commits.
    watched: Watched,
    /// What a save can start from, when the recorded base is the current checkpoint's
    /// tree, nothing outside the worktree that decides what a walk captures changed
    /// since but index entries it can name, and no filesystem is mounted below the
    /// worktree's top.
    usable: Option<Usable>,
}

/// A base a save can start from instead of walking.
struct Usable {
    /// The paths changed since the base: those the watcher reports, and those whose
    /// index entries changed.
    paths: Vec<Vec<u8>>,
    /// The current checkpoint, whose tree the base is.
    id: CheckpointId,
    current: Checkpoint,
    /// The files the base's save left out.
    left_out: Vec<Vec<u8>>,
    /// The files the base's save found with more than one link.
    linked: Vec<Vec<u8>>,
}

/// Asks the watcher what changed since the recorded base; `None` if none answered.
fn ask(repo: &Repo, read: &Snapshot<'_>) -> Result<Option<Asked>> {
    let fingerprint = fingerprint(repo);
    // Before the question, as the token: a later index change is the next save's.
    let index = kept_index::index_state(repo);
    let recorded = read_base(repo);
    let answer = {
        let _span = crate::trace::span("watch: ask");
        client::ask(repo, recorded.as_ref().map(|base| base.token))
    };
    let (token, paths) = match answer {
        None => return Ok(None),
        Some(Answer::Stale { token }) => (token, None),
        Some(Answer::Changes { token, paths }) => (token, Some(paths)),
    };
    let current = match read.current()? {
        Some(id) => Some((id, read.checkpoint(id)?)),
        None => None,
    };
    let mut index_moved = false;
    let usable = match (paths, recorded, current) {
        (Some(mut paths), Some(base), Some((id, current)))
            if base.fingerprint == fingerprint
                && base.tree == current.tree
                && !crate::watch::platform::mounts_below(&repo.root) =>
        {
            index_moved = base.index != index;
            kept_index::index_changes(repo, base.index, index).map(|changed| {
                paths.extend(changed);
                Usable {
                    paths,
                    id,
                    current,
                    left_out: base.left_out,
                    linked: base.linked,
                }
            })
        }
        _ => None,
    };
    Ok(Some(Asked {
        watched: Watched {
            token,
            fingerprint,
            index,
            index_moved,
            linked: Vec::new(),
        },
        usable,
    }))
}

/// The current checkpoint, when the watcher vouches that nothing in the worktree changed
/// since the last watched save recorded it as that checkpoint's tree, and that save found
/// no file with a second link (which a write through that link could have changed
/// unseen): a save without attachments then has nothing to do, and need not look at any
/// file.
pub(super) fn unchanged(repo: &Repo, read: &Snapshot<'_>) -> Result<Option<CheckpointId>> {
    if read.interrupted_restore()?.is_some() {
        return Ok(None);
    }
    Ok(match ask(repo, read)? {
        Some(Asked {
            usable: Some(usable),
            watched,
        }) if usable.paths.is_empty() && usable.linked.is_empty() => {
            // A commit that changed no entry (it rewrote the index all the same): the
            // base is recorded again with this index, so that the next save need not
            // compare the indexes again.
            if watched.index_moved {
                let left_out = usable.left_out.iter().map(Vec::as_slice);
                watched.record_paths(repo, usable.current.tree, left_out);
            }
            Some(usable.id)
        }
        _ => None,
    })
}

/// What a scan starts from when a watcher may answer.
pub(super) enum Listing {
    /// A walk of the whole worktree; `Some` token, when a watcher answered (stale, or
    /// with a base it cannot vouch from), to record with the files the walk finds with
    /// more than one link once the save has committed.
    Walk(Option<Watched>),
    /// The watcher vouches for everything but the paths `partial` replaces: `walk` holds
    /// what a walk finds at and below them, the entries go into the base.
    Partial {
        walk: Box<Walk>,
        watched: Watched,
        partial: Partial,
    },
}

/// The worktree as a watcher vouches for it: the base tree, but for the paths
/// `replaced`, whose entries (and those below them) are what the scan's walk found.
/// The scan then consults the stat cache for those paths only and splices the new
/// entries into the base tree ([`crate::model::tree::splice`]): a save after a few
/// edits costs in proportion to the edits, not to the tree.
#[derive(Clone, Debug)]
pub(super) struct Partial {
    /// The current checkpoint's tree, which the recorded base is.
    pub(super) base: TreeId,
    /// Its files and bytes, as the checkpoint records them.
    pub(super) base_totals: Totals,
    /// The paths looked at again, sorted, none below another.
    pub(super) replaced: Vec<Vec<u8>>,
}

impl Partial {
    /// The stat cache entry of each of `entries` (aligned with them; those the listing
    /// found, all at or below the replaced paths), and the cached paths at or below the
    /// replaced paths the listing did not find: one lookup per replaced path, not a pass
    /// over the whole cache. The cache entries of every other path stand, as the files
    /// they vouch for do.
    pub(super) fn match_stat_cache(
        &self,
        read: &Snapshot<'_>,
        entries: &[WalkEntry],
    ) -> Result<StatCacheMatch> {
        let mut cached = vec![None; entries.len()];
        let mut stale = Vec::new();
        for path in &self.replaced {
            read.for_each_cached_at_or_below(path, |key, entry| {
                match entries.binary_search_by(|e| e.path.as_slice().cmp(key)) {
                    Ok(i) if entries[i].kind == Kind::File => {
                        cached[i] = entry.decode().ok().map(|e| Cached::of(e, &entries[i]))
                    }
                    Ok(_) => {}
                    Err(_) => stale.push(key.to_vec()),
                }
            })?;
        }
        Ok(StatCacheMatch { cached, stale })
    }

    /// The tree of the worktree: `files` (what the scan made of the listing's entries)
    /// spliced into the base tree, the trees made into `pending`; and its totals.
    pub(super) fn build(
        &self,
        read: &Snapshot<'_>,
        files: &[(Vec<u8>, Node)],
        pending: &mut PendingTrees,
    ) -> Result<(TreeId, Totals)> {
        let _span = crate::trace::span("watch: splice");
        let reader = read.trees(None)?;
        let spliced = tree::splice(
            read.hasher(),
            self.base,
            &mut |id| reader.get(id),
            &self.replaced,
            files,
            pending,
        )?;
        Ok((spliced.root, spliced.totals(self.base_totals)))
    }
}

/// Where a save or a look finds the worktree's entries: through the watcher when one
/// answers and the recorded base can be trusted, else by a walk.
pub(super) fn walk(repo: &Repo, read: &Snapshot<'_>, leftovers_possible: bool) -> Result<Listing> {
    // Leftovers of an interrupted restore are recognised only by a walk.
    if leftovers_possible {
        return Ok(Listing::Walk(None));
    }
    let Some(asked) = ask(repo, read)? else {
        return Ok(Listing::Walk(None));
    };
    let watched = asked.watched;
    let Some(usable) = asked.usable else {
        return Ok(Listing::Walk(Some(watched)));
    };
    let _span = crate::trace::span("watch");
    // Files a save left out are not in its tree; a walk would find them again.
    let mut left_out = usable.left_out;
    left_out.extend(usable.current.skipped.iter().map(|s| s.path.clone()));
    Ok(
        match refreshed(repo, &usable.paths, &left_out, &usable.linked)? {
            Some(Refreshed {
                found,
                replaced,
                linked,
            }) => Listing::Partial {
                walk: Box::new(found),
                watched: Watched { linked, ..watched },
                partial: Partial {
                    base: usable.current.tree,
                    base_totals: Totals {
                        files: usable.current.files,
                        bytes: usable.current.bytes,
                    },
                    replaced,
                },
            },
            None => Listing::Walk(Some(watched)),
        },
    )
}

/// What [`refreshed`] found.
struct Refreshed {
    /// What a walk would find at and below `replaced`.
    found: Walk,
    /// The paths looked at again, sorted, none below another.
    replaced: Vec<Vec<u8>>,
    /// The files found with more than one link.
    linked: Vec<Vec<u8>>,
}

/// What a walk would find at and below the paths to look at again for the changed
/// `paths`, the files the base left out and those it found `linked` (more than one
/// link). `None` when only a walk can tell: the top's `.gitignore` changed, or a file
/// has gained another name, which may be in the worktree, unchanged by the journal's
/// account.
fn refreshed(
    repo: &Repo,
    paths: &[Vec<u8>],
    left_out: &[Vec<u8>],
    linked: &[Vec<u8>],
) -> Result<Option<Refreshed>> {
    let Some(mut changed) = to_look_at(repo, paths) else {
        return Ok(None);
    };
    changed.extend(
        left_out
            .iter()
            .chain(linked)
            .filter(|p| !p.is_empty())
            .cloned(),
    );
    let replaced = topmost(changed);
    let found = {
        let _span = crate::trace::span("watch: changed paths");
        walk::walk_paths(repo, false, &replaced)?
    };
    let now_linked: Vec<Vec<u8>> = (found.entries.iter())
        .filter(|entry| entry.kind == Kind::File && has_other_links(&repo.root, &entry.path))
        .map(|entry| entry.path.clone())
        .collect();
    let known: std::collections::HashSet<&[u8]> = linked.iter().map(Vec::as_slice).collect();
    if now_linked
        .iter()
        .any(|path| !known.contains(path.as_slice()))
    {
        return Ok(None);
    }
    Ok(Some(Refreshed {
        found,
        replaced,
        linked: now_linked,
    }))
}

/// `paths` sorted, without duplicates and without any path below another of them.
fn topmost(mut paths: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
    paths.sort_unstable();
    paths.dedup();
    let below_another = |path: &[u8]| {
        path.iter().enumerate().any(|(i, &b)| {
            b == b'/'
                && paths
                    .binary_search_by(|p| p.as_slice().cmp(&path[..i]))
                    .is_ok()
        })
    };
    let keep: Vec<bool> = paths.iter().map(|p| !below_another(p)).collect();
    paths
        .into_iter()
        .zip(keep)
        .filter_map(|(path, keep)| keep.then_some(path))
        .collect()
}

/// The paths to look at again for the changed `paths`, sorted: each one, and the
/// directory of each changed `.gitignore` (it decides about its whole directory).
/// `None` when only a walk can tell (the top's `.gitignore`, or the top itself, or,
/// where the walk takes names in NFC, a path that is not: whether its NFC form is the
/// same file, or was, only a listing tells).
fn to_look_at(repo: &Repo, paths: &[Vec<u8>]) -> Option<Vec<Vec<u8>>> {
    if NameRules::of(repo).ignores_normalization
        && paths
            .iter()
            .any(|path| matches!(precompose(path), Cow::Owned(_)))
    {
        return None;
    }
    let mut changed = paths.to_vec();
    for path in paths {
        let (dir, name) = match path.iter().rposition(|&b| b == b'/') {
            Some(slash) => (&path[..slash], &path[slash + 1..]),
            None => (&[][..], path.as_slice()),
        };
        if name == b".gitignore" {
            if dir.is_empty() {
                return None;
            }
            changed.push(dir.to_vec());
        }
    }
    if changed.iter().any(Vec::is_empty) {
        return None;
    }
    changed.sort_unstable();
    changed.dedup();
    Some(changed)
}

/// Whether the file at worktree path `path` has more than one name. A write through
/// one name raises an event for that name only: another name in the worktree would keep
/// its old content in a save that trusted the events.
fn has_other_links(root: &Path, path: &[u8]) -> bool {
    std::fs::symlink_metadata(root.join(OsStr::from_bytes(path))).is_ok_and(|m| m.nlink() > 1)
}
