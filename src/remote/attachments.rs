//! Attachments beside the exported commits (docs/design.md, "Sharing through git").
//!
//! A commit's tree must stay what `git add -A` would commit, so a checkpoint's
//! attachments are not in it: its message names each one with its git blob
//! (`Checkpoint-Attachment: <size> <blob> <name>`), and one more ref per branch,
//! `refs/checkpoints-attachments/<branch>`, points at a parentless commit whose tree
//! holds `<checkpoint commit>/<attachment name>` for every checkpoint reachable from the
//! branch's tip. That ref keeps the blobs reachable, so `git push` sends them and
//! `git fetch` brings them, and it is outside `refs/heads`, so ordinary clones never
//! see them. It is derived from the branch alone: the same checkpoints give the same
//! commit wherever it is made, and it is replaced (not fast-forwarded) on every push.

use std::collections::HashSet;
use std::io::Write;

use super::export::{quote_path, run_fast_import, IDENTITY};
use super::import::CatFile;
use super::message::{self, AttachmentBlob};
use crate::git::repo::Repo;
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
pub(crate) fn side_commit(
    repo: &Repo,
    snapshot: &Snapshot,
    tip: CheckpointId,
) -> Result<Option<String>> {
    let mut commits = Vec::new();
    for (id, _) in with_attachments(snapshot, &[tip])? {
        if let Some(commit) = snapshot.commit_of(id)? {
            commits.push(commit);
        }
    }
    if commits.is_empty() {
        return Ok(None);
    }
    let mut entries: Vec<(Vec<u8>, String)> = Vec::new();
    {
        let mut cat = CatFile::start(repo)?;
        for commit in &commits {
            for blob in exported_attachments(&mut cat, commit)? {
                let path = format!("{commit}/{}", blob.name).into_bytes();
                entries.push((path, blob.blob));
            }
        }
    }
    if entries.is_empty() {
        return Ok(None);
    }
    entries.sort();
    let secs = snapshot.checkpoint(tip)?.time_ns.div_euclid(1_000_000_000);
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
        let mut line = Vec::new();
        for (path, blob) in &entries {
            line.clear();
            write!(line, "M 100644 {blob} ").map_err(io)?;
            quote_path(&mut line, b"", path);
            line.push(b'\n');
            out.write_all(&line).map_err(io)?;
        }
        writeln!(out, "\nreset {SCRATCH_REF}\n\ndone").map_err(io)?;
        out.flush().map_err(io)
    })?;
    marks.get(&1).cloned().map(Some).ok_or_else(|| Error::Git {
        command: "fast-import".into(),
        message: "it did not name the attachments commit".into(),
    })
}

/// The attachments commit `commit`'s message names with their blobs.
pub(crate) fn exported_attachments(cat: &mut CatFile, commit: &str) -> Result<Vec<AttachmentBlob>> {
    let bytes = cat.get(commit, "commit")?;
    let text = String::from_utf8_lossy(&bytes);
    let message = text.split_once("\n\n").map(|(_, m)| m).unwrap_or_default();
    Ok(message::decode(message)
        .map_err(|e| Error::InvalidArgument(format!("commit {commit}: {e}")))?
        .attachments)
}
