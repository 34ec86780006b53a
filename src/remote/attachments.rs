//! Attachments beside the exported commits (docs/design.md, "Sharing through git").
//!
//! A commit's tree must stay what `git add -A` would commit, so a checkpoint's
//! attachments are not in it: its message names each one with its git blob
//! (`Checkpoint-Attachment: <size> <blob> <name>`), and one more ref per branch,
//! `refs/checkpoints-attachments/<branch>`, points at a parentless commit whose tree
//! holds `<checkpoint commit>/<attachment name>` for every checkpoint reachable from the
//! branch's tip. That ref keeps the blobs reachable, so `git push` sends them and
//! `git fetch` brings them, and it is outside `refs/heads`, so ordinary clones never
//! see them. Its content is derived from the branch alone; each push builds the new
//! commit on the remote's last one (when this repository has it), so that git sends
//! only new attachments, and pushes it forced: the branch's own update, fast-forward
//! only and in the same atomic push, is what guards against losing checkpoints.

use std::collections::{BTreeMap, HashSet};
use std::io::Write;

use super::cat_file::CatFile;
use super::export::{quote_path, run_fast_import, IDENTITY};
use super::message::{self, AttachmentBlob};
use crate::git::repo::Repo;
use crate::model::tree::is_safe_name;
use crate::model::Checkpoint;
use crate::storage::Snapshot;
use crate::{CheckpointId, Error, Result};

/// The scratch ref the attachments commit is made on; dropped before fast-import ends.
const SCRATCH_REF: &str = "refs/checkpoint-export/attachments";

/// The remote ref that keeps the attachments of `branch`'s checkpoints.
pub fn attachments_ref(branch: &str) -> String {
    format!("refs/checkpoints-attachments/{branch}")
}

/// The local ref the fetched attachments ref of `remote`'s `branch` is kept at.
pub fn tracking_attachments_ref(remote: &str, branch: &str) -> String {
    format!("refs/checkpoints-remote-attachments/{remote}/{branch}")
}

/// The checkpoints reachable from `tips` that have attachments, each once.
pub(crate) fn with_attachments(
    snapshot: &Snapshot,
    tips: &[CheckpointId],
) -> Result<Vec<(CheckpointId, Checkpoint)>> {
    let mut seen = HashSet::new();
    let mut pending = tips.to_vec();
    let mut out = Vec::new();
    while let Some(id) = pending.pop() {
        if !seen.insert(id) {
            continue;
        }
        let record = snapshot.checkpoint(id)?;
        pending.extend(record.parents.iter().copied());
        if !record.attachments.is_empty() {
            out.push((id, record));
        }
    }
    Ok(out)
}

/// Makes the commit `attachments_ref` of the branch at `tip` points at (the checkpoints
/// must be exported); `None` when no checkpoint reachable from it carries an exported
/// attachment (those exported before attachments travelled only name theirs).
///
/// `previous` is the remote's current attachments commit, when this repository has it.
/// The new commit is made on top of it, holding only what changed, so that `git push`
/// finds the old tree as the boundary of what to send and sends only new blobs (a
/// parentless commit would make it send every attachment again); and when nothing
/// changed it is `previous` itself.
pub(crate) fn side_commit(
    repo: &Repo,
    snapshot: &Snapshot,
    tip: CheckpointId,
    previous: Option<&str>,
) -> Result<Option<String>> {
    let mut commits = HashSet::new();
    for (id, _) in with_attachments(snapshot, &[tip])? {
        if let Some(commit) = snapshot.commit_of(id)? {
            commits.insert(commit);
        }
    }
    if commits.is_empty() {
        return Ok(None);
    }
    let mut before = match previous {
        Some(previous) => listed_entries(repo, previous)?,
        None => BTreeMap::new(),
    };
    // Entries other than `<commit>/<safe name>` (a crafted remote's) are not built on:
    // the commit starts afresh, without them.
    let previous = match before.keys().all(|path| is_entry_path(path)) {
        true => previous,
        false => {
            before.clear();
            None
        }
    };
    let entries = entries_of(repo, &commits, &before)?;
    if entries.is_empty() {
        return Ok(None);
    }
    if let Some(previous) = previous.filter(|_| entries == before) {
        return Ok(Some(previous.to_string()));
    }
    let secs = snapshot.checkpoint(tip)?.time_ns.div_euclid(1_000_000_000);
    write_side_commit(repo, secs, previous, &before, &entries).map(Some)
}

/// What attachments commit `commit` holds, path -> blob.
fn listed_entries(repo: &Repo, commit: &str) -> Result<BTreeMap<Vec<u8>, String>> {
    let listing = super::git_ok(
        &repo.root,
        &["ls-tree", "-r", "-z", "--full-tree", commit],
        b"",
    )?;
    let mut entries = BTreeMap::new();
    for item in listing.split(|&b| b == 0).filter(|i| !i.is_empty()) {
        let text = String::from_utf8_lossy(item);
        if let Some((head, path)) = text.split_once('\t') {
            if let Some(blob) = head.split(' ').nth(2) {
                entries.insert(path.as_bytes().to_vec(), blob.to_string());
            }
        }
    }
    Ok(entries)
}

/// The entries of an attachments commit for checkpoint commits `commits`, path -> blob:
/// those `before` (the previous attachments commit) holds for them kept without reading
/// their commits again, the others read from each commit's message.
fn entries_of(
    repo: &Repo,
    commits: &HashSet<String>,
    before: &BTreeMap<Vec<u8>, String>,
) -> Result<BTreeMap<Vec<u8>, String>> {
    let dir_of = |path: &[u8]| -> String {
        let end = path.iter().position(|&b| b == b'/').unwrap_or(path.len());
        String::from_utf8_lossy(&path[..end]).into_owned()
    };
    let mut entries: BTreeMap<Vec<u8>, String> = before
        .iter()
        .filter(|(path, _)| commits.contains(&dir_of(path)))
        .map(|(path, blob)| (path.clone(), blob.clone()))
        .collect();
    let kept: HashSet<String> = entries.keys().map(|path| dir_of(path)).collect();
    let mut cat: Option<CatFile> = None;
    let mut sorted: Vec<&String> = commits.iter().filter(|c| !kept.contains(*c)).collect();
    sorted.sort();
    for commit in sorted {
        let reader = match cat.as_mut() {
            Some(reader) => reader,
            None => cat.insert(CatFile::start(repo)?),
        };
        // A name no file can have (`.`, `..`, empty: an import leaves those out, but the
        // commit it came from still names them) would make an entry git rejects.
        for blob in exported_attachments(reader, commit)?
            .into_iter()
            .filter(|blob| is_safe_name(blob.name.as_bytes()))
        {
            let path = format!("{commit}/{}", blob.name).into_bytes();
            entries.insert(path, blob.blob);
        }
    }
    Ok(entries)
}

/// Writes the attachments commit holding `entries` (one `git fast-import`), on top of
/// `previous` (which holds `before`) when there is one, dated `secs`; returns its id.
fn write_side_commit(
    repo: &Repo,
    secs: i128,
    previous: Option<&str>,
    before: &BTreeMap<Vec<u8>, String>,
    entries: &BTreeMap<Vec<u8>, String>,
) -> Result<String> {
    let message = "Attachments of checkpoints, by commit\n";
    let marks = run_fast_import(repo, |out, _| {
        let io = |e: std::io::Error| Error::Git {
            command: "fast-import".into(),
            message: format!("writing its input: {e}"),
        };
        writeln!(out, "reset {SCRATCH_REF}\ncommit {SCRATCH_REF}\nmark :1").map_err(io)?;
        writeln!(out, "author {IDENTITY} {secs} +0000").map_err(io)?;
        writeln!(out, "committer {IDENTITY} {secs} +0000").map_err(io)?;
        writeln!(out, "data {}\n{message}", message.len()).map_err(io)?;
        if let Some(previous) = previous {
            writeln!(out, "from {previous}").map_err(io)?;
        }
        let mut line = Vec::new();
        for path in before.keys().filter(|path| !entries.contains_key(*path)) {
            line.clear();
            line.extend_from_slice(b"D ");
            quote_path(&mut line, b"", path);
            line.push(b'\n');
            out.write_all(&line).map_err(io)?;
        }
        for (path, blob) in entries
            .iter()
            .filter(|(path, blob)| before.get(*path) != Some(*blob))
        {
            line.clear();
            write!(line, "M 100644 {blob} ").map_err(io)?;
            quote_path(&mut line, b"", path);
            line.push(b'\n');
            out.write_all(&line).map_err(io)?;
        }
        writeln!(out, "\nreset {SCRATCH_REF}\n\ndone").map_err(io)?;
        out.flush().map_err(io)
    })?;
    marks.get(&1).cloned().ok_or_else(|| Error::Git {
        command: "fast-import".into(),
        message: "it did not name the attachments commit".into(),
    })
}

/// Whether `path` is `<commit id>/<safe name>`, an entry [`side_commit`] writes.
fn is_entry_path(path: &[u8]) -> bool {
    match path.iter().position(|&b| b == b'/') {
        Some(at) => path[..at].iter().all(u8::is_ascii_hexdigit) && is_safe_name(&path[at + 1..]),
        None => false,
    }
}

/// The attachments commit `commit`'s message names with their blobs.
pub(crate) fn exported_attachments(cat: &mut CatFile, commit: &str) -> Result<Vec<AttachmentBlob>> {
    let bytes = cat.get(commit, "commit")?;
    let text = String::from_utf8_lossy(&bytes);
    let message = text.split_once("\n\n").map(|(_, m)| m).unwrap_or_default();
    Ok(message::decode(message)
        .map_err(|e| match e {
            Error::RemoteCommit { commit: None, why } => Error::RemoteCommit {
                commit: Some(commit.to_string()),
                why,
            },
            other => other,
        })?
        .attachments)
}
