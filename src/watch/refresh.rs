//! The save's side of the watcher: the worktree as the last watched save recorded it
//! (its base tree, with the stat cache's metadata) plus what the paths changed since are
//! now, read through the rules of a walk ([`walk::walk_paths`]), is what a walk would
//! find. Whenever that is in doubt the save walks (docs/design.md, "The watcher").

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

use super::client::{self, Answer};
use super::Token;
use crate::git::repo::Repo;
use crate::model::stat_cache::FileStat;
use crate::model::tree::Node;
use crate::model::Checkpoint;
use crate::storage::Snapshot;
use crate::worktree::walk::{self, Kind, Walk, WalkEntry};
use crate::{CheckpointId, Result, TreeId};

/// What a save that asked the watcher records once it has committed: the token it got
/// before it looked at the worktree, and the state of the files outside the worktree
/// that decide what a walk captures.
#[derive(Debug, Clone)]
pub struct Watched {
    token: Token,
    fingerprint: String,
}

/// The base a watched save recorded.
#[derive(Debug, PartialEq, Eq)]
struct Base {
    token: Token,
    tree: TreeId,
    fingerprint: String,
}

impl Watched {
    /// Records that the worktree as of this token is `tree`: the next save asks for the
    /// paths changed since. Called only after the save's commit, so the recorded tree
    /// is in the store; a failure to write is only a missed shortcut (the next save
    /// walks), never an error of the save.
    pub fn record(&self, repo: &Repo, tree: TreeId) {
        let path = super::base_path(repo);
        let text = format!(
            "v1\n{}\n{}\n{}\n",
            self.token.encode(),
            tree.hex(),
            self.fingerprint
        );
        let temp = path.with_extension("tmp");
        if std::fs::write(&temp, text).is_ok() {
            let _ = std::fs::rename(&temp, &path);
        }
    }
}

fn read_base(repo: &Repo) -> Option<Base> {
    let text = std::fs::read_to_string(super::base_path(repo)).ok()?;
    let mut lines = text.lines();
    if lines.next()? != "v1" {
        return None;
    }
    Some(Base {
        token: Token::decode(lines.next()?)?,
        tree: TreeId(u128::from_str_radix(lines.next()?, 16).ok()?),
        fingerprint: lines.next()?.to_string(),
    })
}

/// The state of everything outside the worktree that changes what a walk captures
/// without an event in the worktree: the index (tracked files an ignore rule matches are
/// still captured), `info/exclude` and the excludes file, the linked worktrees, and the
/// settings a save applies to what it found.
fn fingerprint(repo: &Repo) -> String {
    let mut hasher = blake3::Hasher::new();
    let excludes = repo.excludes_file();
    let files = [
        Some(repo.git_dir.join("index")),
        Some(repo.common_dir.join("info").join("exclude")),
        Some(repo.common_dir.join("worktrees")),
        excludes.clone(),
    ];
    for file in files.iter().flatten() {
        hasher.update(file.as_os_str().as_bytes());
        let stat = std::fs::symlink_metadata(file)
            .map(|m| FileStat::from_metadata(&m))
            .ok();
        hasher.update(format!("{stat:?}\n").as_bytes());
    }
    for key in [
        "checkpoint.maxfilesize",
        "checkpoint.keeppermissions",
        "core.excludesfile",
    ] {
        hasher.update(format!("{key}={:?}\n", repo.config(key)).as_bytes());
    }
    hasher.update(format!("{:?}", std::env::var_os("GIT_INDEX_FILE")).as_bytes());
    hasher.finalize().to_hex().to_string()
}

/// What the watcher said, and whether the recorded base lets a save trust it.
struct Asked {
    /// The token to record once the save commits.
    watched: Watched,
    /// The changed paths and the current checkpoint, when the recorded base is the
    /// current checkpoint's tree and nothing outside the worktree that decides what a
    /// walk captures changed since.
    usable: Option<(Vec<Vec<u8>>, CheckpointId, Checkpoint)>,
}

/// Asks the watcher what changed since the recorded base; `None` if none answered.
fn ask(repo: &Repo, read: &Snapshot<'_>) -> Result<Option<Asked>> {
    let fingerprint = fingerprint(repo);
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
    let usable = match (paths, recorded, current) {
        (Some(paths), Some(base), Some((id, current)))
            if base.fingerprint == fingerprint && base.tree == current.tree =>
        {
            Some((paths, id, current))
        }
        _ => None,
    };
    Ok(Some(Asked {
        watched: Watched { token, fingerprint },
        usable,
    }))
}

/// The current checkpoint, when the watcher vouches that nothing in the worktree changed
/// since the last watched save recorded it as that checkpoint's tree: a save without
/// attachments then has nothing to do, and need not look at any file.
pub fn unchanged(repo: &Repo, read: &Snapshot<'_>) -> Result<Option<CheckpointId>> {
    if read.interrupted_restore()?.is_some() {
        return Ok(None);
    }
    Ok(match ask(repo, read)? {
        Some(Asked {
            usable: Some((paths, id, _)),
            ..
        }) if paths.is_empty() => Some(id),
        _ => None,
    })
}

/// The worktree's files for a save or a look: through the watcher when one answers and
/// the recorded base can be trusted, else by a walk. Also the token to record once the
/// save has committed, when a watcher answered.
pub fn walk(
    repo: &Repo,
    read: &Snapshot<'_>,
    leftovers_possible: bool,
) -> Result<(Walk, Option<Watched>)> {
    // Leftovers of an interrupted restore are recognised only by a walk.
    if leftovers_possible {
        return Ok((full_walk(repo, true)?, None));
    }
    let Some(asked) = ask(repo, read)? else {
        return Ok((full_walk(repo, false)?, None));
    };
    let Some((paths, _, current)) = asked.usable else {
        return Ok((full_walk(repo, false)?, Some(asked.watched)));
    };
    let _span = crate::trace::span("watch");
    // Files a save left out are not in its tree; a walk would find them again.
    let left_out: Vec<Vec<u8>> = current.skipped.iter().map(|s| s.path.clone()).collect();
    match refreshed(repo, read, current.tree, &paths, &left_out)? {
        Some(found) => Ok((found, Some(asked.watched))),
        None => Ok((full_walk(repo, false)?, Some(asked.watched))),
    }
}

fn full_walk(repo: &Repo, leftovers_possible: bool) -> Result<Walk> {
    let _span = crate::trace::span("walk");
    walk::walk(repo, leftovers_possible)
}

/// The base tree's files with every path at or below one of `paths` replaced by what is
/// there now. `None` when only a walk can tell (the top's `.gitignore` changed).
fn refreshed(
    repo: &Repo,
    read: &Snapshot<'_>,
    tree: TreeId,
    paths: &[Vec<u8>],
    left_out: &[Vec<u8>],
) -> Result<Option<Walk>> {
    let mut changed = paths.to_vec();
    for path in paths {
        // A `.gitignore` decides about its whole directory: that is looked at again.
        let (dir, name) = match path.iter().rposition(|&b| b == b'/') {
            Some(slash) => (&path[..slash], &path[slash + 1..]),
            None => (&[][..], path.as_slice()),
        };
        if name == b".gitignore" {
            if dir.is_empty() {
                return Ok(None);
            }
            changed.push(dir.to_vec());
        }
    }
    if changed.iter().any(Vec::is_empty) {
        return Ok(None);
    }
    changed.sort_unstable();
    changed.dedup();
    let mut found = {
        let _span = crate::trace::span("watch: changed paths");
        walk::walk_paths(repo, false, &changed)?
    };

    let span = crate::trace::span("watch: base tree");
    let mut base = Vec::new();
    read.trees(None)?.flatten(tree, b"", &mut base)?;
    let mut base: Vec<(Vec<u8>, Option<Kind>)> = base
        .into_iter()
        .map(|(path, node)| {
            let kind = match node {
                Node::Symlink { .. } => Some(Kind::Symlink),
                _ => Some(Kind::File),
            };
            (path, kind)
        })
        .chain(left_out.iter().map(|path| (path.clone(), None)))
        .collect();
    base.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    base.dedup_by(|a, b| a.0 == b.0);
    let mut keep = vec![true; base.len()];
    for path in &changed {
        let start = base.partition_point(|(p, _)| p.as_slice() < path.as_slice());
        let mut end = start;
        while end < base.len() && is_at_or_below(&base[end].0, path) {
            keep[end] = false;
            end += 1;
        }
        // `a/b` and below sort together, but `a/b.txt` may sit between `a/b` and `a/b/`.
        let mut below = path.clone();
        below.push(b'/');
        let mut i = base.partition_point(|(p, _)| p.as_slice() < below.as_slice());
        while i < base.len() && base[i].0.starts_with(&below) {
            keep[i] = false;
            i += 1;
        }
    }
    drop(span);
    let span = crate::trace::span("watch: stat cache");
    let mut stats: Vec<Option<FileStat>> = vec![None; base.len()];
    let mut i = 0;
    read.for_each_cached(|key, entry| {
        while i < base.len() && base[i].0.as_slice() < key {
            i += 1;
        }
        if i < base.len() && base[i].0.as_slice() == key && keep[i] && base[i].1 == Some(Kind::File)
        {
            stats[i] = entry.decode().ok().map(|e| e.stat);
        }
    })?;
    drop(span);
    let _span = crate::trace::span("watch: the rest");
    for (((path, kind), keep), stat) in base.into_iter().zip(keep).zip(stats) {
        if !keep {
            continue;
        }
        match (kind, stat) {
            (Some(kind), Some(stat)) => found.entries.push(WalkEntry { path, kind, stat }),
            // Not vouched for by the cache (not settled when saved, a symlink, a file
            // left out): its metadata now, as a walk would see it.
            _ => {
                let full = repo.root.join(OsStr::from_bytes(&path));
                if let Ok(meta) = std::fs::symlink_metadata(&full) {
                    let kind = if meta.is_file() {
                        Kind::File
                    } else if meta.file_type().is_symlink() {
                        Kind::Symlink
                    } else {
                        continue;
                    };
                    found.entries.push(WalkEntry {
                        path,
                        kind,
                        stat: FileStat::from_metadata(&meta),
                    });
                }
            }
        }
    }
    found.entries.sort_unstable_by(|a, b| a.path.cmp(&b.path));
    found.entries.dedup_by(|a, b| a.path == b.path);
    Ok(Some(found))
}

fn is_at_or_below(path: &[u8], top: &[u8]) -> bool {
    path.strip_prefix(top)
        .is_some_and(|rest| rest.is_empty() || rest.first() == Some(&b'/'))
}
