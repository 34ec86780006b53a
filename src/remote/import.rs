//! Git commits back into checkpoints (docs/design.md, "Sharing through git"): each
//! commit an export made becomes a checkpoint again, its files cut by the store's own
//! chunker (so fetched content deduplicates against local content), its record read
//! from the commit's trailers, and the id it had where it was saved kept beside it.
//!
//! A remote is not trusted (docs/design.md invariant 23): every commit is checked whole
//! before any of its content is stored, and one that could not have come from an export
//! (unsafe or colliding paths, skipped paths outside the worktree, a commit that is not
//! a checkpoint's) is refused with its descendants, never half-imported; the other
//! commits still import. Blobs are streamed through the chunker, never held whole, and
//! files larger than `checkpoint.maxFileSize` are recorded as skipped, as a save does.

use std::collections::{HashMap, HashSet};

use super::cat_file::CatFile;
use super::commit_check::{Checked, Look, Refusal};
use crate::format::chunk::Hasher;
use crate::git::repo::Repo;
use crate::model::tree;
use crate::model::{Attachment, Checkpoint, Node, PendingTrees};
use crate::ops::save::store_content;
use crate::settings::Settings;
use crate::storage::{ChunkSink, Packer, Snapshot, Store, StoreRead, Transaction};
use crate::{CheckpointId, ChunkId, Error, Result};

/// What an import did.
#[derive(Debug, Default)]
pub struct Imported {
    /// The checkpoint of every commit asked for that the store holds now.
    pub found: HashMap<String, CheckpointId>,
    /// How many checkpoints it added.
    pub count: usize,
    /// Commits refused (and so not in `found`), each with why, as one line.
    pub refused: HashMap<String, String>,
    /// What the added checkpoints left out, one line each: files larger than
    /// `checkpoint.maxFileSize`, attachments whose names no file can have.
    pub warnings: Vec<String>,
}

/// Imports `commits` (parents before children; commits already in the store are
/// skipped) and reports the checkpoint of every commit asked for. All of it commits in
/// one transaction: an import that fails adds nothing. A commit the checks refuse is
/// left out with its descendants ([`Imported::refused`]); a failure of git itself or of
/// the store fails the whole import. `settings` give the compression and the largest
/// file kept (`checkpoint.maxFileSize`), as a save's do.
pub fn import(
    repo: &Repo,
    store: &Store,
    commits: &[String],
    settings: &Settings,
) -> Result<Imported> {
    let _span = crate::trace::span("import");
    let mut out = Imported::default();
    // Kept for the parents outside `commits`: a fetch lists only commits past the tips
    // it imported before, and a branch forked below one of those has its parent there.
    let snapshot = store.snapshot()?;
    let todo = not_in_store(&snapshot, commits, &mut out.found)?;
    if todo.is_empty() {
        return Ok(out);
    }
    let level = settings.compression.get()?;
    let max_file_size = settings.max_file_size.get()?;
    let mut check = CatFile::start_mode(repo, "--batch-check")?;
    let mut writer = Writer {
        hasher: &store.hasher,
        level,
        cat: CatFile::start(repo)?,
        blobs: HashMap::new(),
        packer: Packer::default(),
        buf: Vec::new(),
    };
    let txn = store.transaction()?;
    for sha in &todo {
        let looked = Look {
            repo,
            snapshot: &snapshot,
            found: &out.found,
            refused: &out.refused,
            stored: &writer.blobs,
            max_file_size,
        };
        let commit = match looked.commit(&mut check, &mut writer.cat, sha)? {
            Ok(commit) => commit,
            Err(Refusal::Own(why)) => {
                out.refused
                    .insert(sha.clone(), format!("commit {sha} {why}"));
                continue;
            }
            // Named after the commit that is wrong, not its descendant.
            Err(Refusal::Inherited(line)) => {
                out.refused.insert(sha.clone(), line);
                continue;
            }
        };
        out.warnings.extend(commit.warnings.iter().cloned());
        writer.store_blobs(&txn, &commit)?;
        let id = writer.add_checkpoint(&txn, sha, commit)?;
        out.found.insert(sha.clone(), id);
        out.count += 1;
    }
    txn.commit()?;
    Ok(out)
}

/// Records in `found` the checkpoint of each of `commits` the store has; returns the
/// others, once each, in their order.
fn not_in_store(
    snapshot: &Snapshot,
    commits: &[String],
    found: &mut HashMap<String, CheckpointId>,
) -> Result<Vec<String>> {
    let mut todo = Vec::new();
    let mut queued = HashSet::new();
    for sha in commits {
        if found.contains_key(sha) || !queued.insert(sha.clone()) {
            continue;
        }
        match snapshot.checkpoint_of(sha)? {
            Some(id) => {
                found.insert(sha.clone(), id);
            }
            None => todo.push(sha.clone()),
        }
    }
    Ok(todo)
}

/// The storing side of an import: checked commits' blobs into packs, their trees and
/// records into the transaction.
struct Writer<'a> {
    hasher: &'a Hasher,
    level: i32,
    /// A `--batch` process, for the content of blobs.
    cat: CatFile,
    /// Every blob this import stored: its size and chunks.
    blobs: HashMap<String, (u64, Vec<ChunkId>)>,
    packer: Packer,
    buf: Vec<u8>,
}

impl Writer<'_> {
    /// Stores every blob of `commit`'s files and attachments that this import has not
    /// stored yet.
    fn store_blobs(&mut self, txn: &Transaction<'_>, commit: &Checked) -> Result<()> {
        let mut new: Vec<&str> = Vec::new();
        let mut queued = HashSet::new();
        let objects = commit
            .attachments
            .iter()
            .map(|a| a.blob.as_str())
            .chain(commit.regular.iter().map(|f| f.object.as_str()));
        for object in objects {
            if !self.blobs.contains_key(object) && queued.insert(object) {
                new.push(object);
            }
        }
        if new.is_empty() {
            return Ok(());
        }
        let Writer {
            hasher,
            level,
            cat,
            blobs,
            packer,
            buf,
        } = self;
        txn.pack_chunks(packer, |sink| {
            for object in new {
                let stored = store_blob(cat, sink, hasher, *level, object, buf)?;
                blobs.insert(object.to_string(), stored);
            }
            Ok(())
        })
    }

    /// Adds the checkpoint of commit `sha`, whose blobs are stored: its trees, its
    /// record, the commit it came from and the id it had where it was saved.
    fn add_checkpoint(
        &mut self,
        txn: &Transaction<'_>,
        sha: &str,
        commit: Checked,
    ) -> Result<CheckpointId> {
        let mut files: Vec<(Vec<u8>, Node)> =
            Vec::with_capacity(commit.regular.len() + commit.links.len());
        for file in &commit.regular {
            let (size, chunks) = self.stored(sha, &file.object, "a blob it names")?;
            let mode = if file.executable { 0o755 } else { 0o644 };
            files.push((file.path.clone(), Node::file(size, mode, chunks, true)));
        }
        for (path, object) in &commit.links {
            let target = self.cat.get(object, "blob")?;
            files.push((path.clone(), Node::Symlink { target }));
        }
        files.sort_by(|a, b| a.0.cmp(&b.0));
        let mut pending = PendingTrees::new();
        let (root, totals) = tree::build(self.hasher, &mut files, &mut pending)?;
        let like = match commit.parents.first() {
            Some(&parent) => Some(txn.checkpoint(parent)?.tree),
            None => None,
        };
        txn.add_trees(&pending, root, like)?;
        let attachments = commit
            .attachments
            .iter()
            .map(|a| {
                let (size, chunks) = self.stored(sha, &a.blob, "an attachment it names")?;
                Ok(Attachment {
                    name: a.name.clone(),
                    size,
                    chunks,
                })
            })
            .collect::<Result<_>>()?;
        let trailers = commit.trailers;
        let mut record = Checkpoint {
            tree: root,
            parents: commit.parents,
            time_ns: trailers.time_ns,
            message: trailers.message,
            branch: trailers.branch,
            git_head: trailers.git_head,
            git_branch: trailers.git_branch,
            meta: trailers.meta,
            attachments,
            files: totals.files,
            bytes: totals.bytes,
            skipped: commit.skipped,
        };
        let id = txn.add_checkpoint(&mut record)?;
        txn.map_commit(id, sha)?;
        txn.set_origin(id, trailers.id)?;
        Ok(id)
    }

    /// The size and chunks of blob `object`, which commit `sha` names as `what`.
    fn stored(&self, sha: &str, object: &str, what: &str) -> Result<(u64, Vec<ChunkId>)> {
        self.blobs
            .get(object)
            .cloned()
            .ok_or_else(|| not_stored(sha, what))
    }
}

/// Streams blob `object` from `cat` through the chunker into `sink`
/// ([`store_content`]: whole when small, in pieces past that); returns its size and
/// chunks.
fn store_blob(
    cat: &mut CatFile,
    sink: &mut ChunkSink<'_, '_>,
    hasher: &Hasher,
    level: i32,
    object: &str,
    buf: &mut Vec<u8>,
) -> Result<(u64, Vec<ChunkId>)> {
    let size = cat.open(object, "blob")?;
    let failed = |e: std::io::Error| Error::Git {
        command: "cat-file".into(),
        message: format!("object {object}: {e}"),
    };
    let (read, ids) = store_content(sink, hasher, &mut cat.output, size, level, buf, failed)?;
    if read != size {
        return Err(failed(std::io::Error::other("its content ended early")));
    }
    cat.end_object()?;
    Ok((size, ids))
}

/// Every blob a checked commit names was stored before its tree is built, so one
/// missing is a bug here, not the commit's fault.
fn not_stored(sha: &str, what: &str) -> Error {
    Error::Internal(format!("commit {sha}: {what} was not stored"))
}
