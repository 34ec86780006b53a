//! Git commits back into checkpoints (docs/design.md, "Sharing through git"): each
//! commit an export made becomes a checkpoint again, its files cut by the store's own
//! chunker (so fetched content deduplicates against local content), its record read
//! from the commit's trailers, and the id it had where it was saved kept beside it.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use super::message;
use crate::git::repo::Repo;
use crate::model::tree::{self, is_safe_name};
use crate::model::{Attachment, Checkpoint, Node, PendingTrees};
use crate::ops::save::store_attachments;
use crate::storage::{Store, StoreRead};
use crate::{CheckpointId, ChunkId, Error, Result};

/// Imports `commits` (parents before children; commits already in the store are
/// skipped) and returns the checkpoint of every commit asked for. All of it commits in
/// one transaction: an import that fails adds nothing.
pub fn import(
    repo: &Repo,
    store: &Store,
    commits: &[String],
    level: i32,
) -> Result<(HashMap<String, CheckpointId>, usize)> {
    let _span = crate::trace::span("import");
    let mut found = HashMap::new();
    let mut todo = Vec::new();
    let mut queued = std::collections::HashSet::new();
    // Kept for the parents outside `commits`: a fetch lists only commits past the tips
    // it imported before, and a branch forked below one of those has its parent there.
    let snapshot = store.snapshot()?;
    {
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
    }
    if todo.is_empty() {
        return Ok((found, 0));
    }
    let mut cat = CatFile::start(repo)?;
    let mut blobs: HashMap<String, (u64, Vec<ChunkId>)> = HashMap::new();
    let txn = store.transaction()?;
    for sha in &todo {
        let bytes = cat.get(sha, "commit")?;
        let commit = parse_commit(sha, &bytes)?;
        let trailers = message::decode(&commit.message)
            .map_err(|e| Error::InvalidArgument(format!("commit {sha}: {e}")))?;
        let parents = commit
            .parents
            .iter()
            .map(|p| {
                let known = match found.get(p) {
                    Some(&id) => Some(id),
                    None => snapshot.checkpoint_of(p)?,
                };
                known.ok_or_else(|| {
                    Error::InvalidArgument(format!(
                        "commit {sha} has parent {p}, which is not a checkpoint"
                    ))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let listing = super::git_ok(
            &repo.root,
            &["ls-tree", "-r", "-z", "--full-tree", &commit.tree],
            b"",
        )?;
        let mut files: Vec<(Vec<u8>, Node)> = Vec::new();
        let mut batch = BlobBatch::default();
        // An attachment whose blob did not come (its branch's attachments ref was not
        // pushed, or not fetched) is left out of the checkpoint.
        let mut attached = Vec::new();
        for attachment in &trailers.attachments {
            if !blobs.contains_key(&attachment.blob) && !batch.names.contains(&attachment.blob) {
                let Some(content) = cat.get_if_present(&attachment.blob, "blob")? else {
                    continue;
                };
                if content.len() as u64 != attachment.size {
                    return Err(bad_tree(
                        sha,
                        &format!(
                            "attachment {} is {} bytes, its blob {}",
                            attachment.name,
                            attachment.size,
                            content.len()
                        ),
                    ));
                }
                batch.names.insert(attachment.blob.clone());
                batch.bytes += batch.push(&attachment.blob, content);
            }
            attached.push(attachment);
        }
        let mut links: Vec<(Vec<u8>, String)> = Vec::new();
        let mut regular: Vec<(Vec<u8>, bool, String)> = Vec::new();
        for item in listing.split(|&b| b == 0).filter(|i| !i.is_empty()) {
            let (head, path) = split_once(item, b'\t')
                .ok_or_else(|| bad_tree(sha, "an ls-tree line without a path"))?;
            let head = String::from_utf8_lossy(head);
            let mut parts = head.split(' ');
            let (Some(mode), Some(_), Some(object)) = (parts.next(), parts.next(), parts.next())
            else {
                return Err(bad_tree(sha, "an ls-tree line it cannot read"));
            };
            if !path.split(|&b| b == b'/').all(is_safe_name) {
                return Err(Error::InvalidArgument(format!(
                    "refusing to import commit {sha}: its path {:?} is not safe to restore",
                    String::from_utf8_lossy(path)
                )));
            }
            match mode {
                "120000" => links.push((path.to_vec(), object.to_string())),
                "100644" | "100755" => {
                    if !blobs.contains_key(object) && batch.names.insert(object.to_string()) {
                        batch.bytes += batch.push(object, cat.get(object, "blob")?);
                        if batch.bytes >= BATCH_BYTES {
                            batch.store(&txn, store, level, &mut blobs)?;
                        }
                    }
                    regular.push((path.to_vec(), mode == "100755", object.to_string()));
                }
                other => {
                    return Err(bad_tree(
                        sha,
                        &format!("mode {other} at {}", String::from_utf8_lossy(path)),
                    ))
                }
            }
        }
        batch.store(&txn, store, level, &mut blobs)?;
        for (path, executable, object) in regular {
            let (size, chunks) = blobs
                .get(&object)
                .cloned()
                .ok_or_else(|| bad_tree(sha, "a blob it did not read"))?;
            let mode = if executable { 0o755 } else { 0o644 };
            files.push((path, Node::file(size, mode, chunks, true)));
        }
        for (path, object) in links {
            let target = cat.get(&object, "blob")?;
            files.push((path, Node::Symlink { target }));
        }
        files.sort_by(|a, b| a.0.cmp(&b.0));
        let mut pending = PendingTrees::new();
        let (root, totals) = tree::build(&store.hasher, &files, &mut pending);
        let like = match parents.first() {
            Some(&parent) => Some(txn.checkpoint(parent)?.tree),
            None => None,
        };
        txn.add_trees(&pending, root, like)?;
        let mut record = Checkpoint {
            tree: root,
            parents,
            time_ns: trailers.time_ns,
            message: trailers.message,
            branch: trailers.branch,
            git_head: trailers.git_head,
            git_branch: trailers.git_branch,
            meta: trailers.meta,
            attachments: attached
                .iter()
                .map(|a| {
                    let (size, chunks) = blobs
                        .get(&a.blob)
                        .cloned()
                        .ok_or_else(|| bad_tree(sha, "an attachment it did not read"))?;
                    Ok(Attachment {
                        name: a.name.clone(),
                        size,
                        chunks,
                    })
                })
                .collect::<Result<_>>()?,
            files: totals.files,
            bytes: totals.bytes,
            skipped: trailers.skipped,
        };
        let id = txn.add_checkpoint(&mut record)?;
        txn.map_commit(id, sha)?;
        txn.set_origin(id, trailers.id)?;
        found.insert(sha.clone(), id);
    }
    txn.commit()?;
    Ok((found, todo.len()))
}

/// How much new blob content an import holds before it stores it: bounds its memory
/// (to this and the largest blob) while still filling packs as a save does.
const BATCH_BYTES: usize = 64 << 20;

/// New blobs read and not yet stored, by object id.
#[derive(Default)]
struct BlobBatch {
    blobs: Vec<(String, Vec<u8>)>,
    /// Every blob queued since the last store, so none is read twice.
    names: std::collections::HashSet<String>,
    bytes: usize,
}

impl BlobBatch {
    /// Queues `content` as blob `object`; returns its length.
    fn push(&mut self, object: &str, content: Vec<u8>) -> usize {
        let len = content.len();
        self.blobs.push((object.to_string(), content));
        len
    }

    /// Cuts and stores the queued blobs ([`store_attachments`]: the path every stored
    /// byte takes) and records each one's size and chunks in `known`.
    fn store(
        &mut self,
        txn: &crate::storage::Transaction<'_>,
        store: &Store,
        level: i32,
        known: &mut HashMap<String, (u64, Vec<ChunkId>)>,
    ) -> Result<()> {
        let blobs = std::mem::take(&mut self.blobs);
        let sizes: Vec<u64> = blobs.iter().map(|(_, b)| b.len() as u64).collect();
        for (stored, size) in store_attachments(txn, &store.hasher, blobs, level)?
            .into_iter()
            .zip(sizes)
        {
            known.insert(stored.name, (size, stored.chunks));
        }
        self.names.clear();
        self.bytes = 0;
        Ok(())
    }
}

fn bad_tree(sha: &str, what: &str) -> Error {
    Error::InvalidArgument(format!("commit {sha} is not a checkpoint's: {what}"))
}

fn split_once(bytes: &[u8], at: u8) -> Option<(&[u8], &[u8])> {
    let i = bytes.iter().position(|&b| b == at)?;
    Some((&bytes[..i], &bytes[i + 1..]))
}

/// The parts of a commit an import reads.
struct Commit {
    tree: String,
    parents: Vec<String>,
    message: String,
}

fn parse_commit(sha: &str, bytes: &[u8]) -> Result<Commit> {
    let text = String::from_utf8_lossy(bytes);
    let (header, message) = text
        .split_once("\n\n")
        .ok_or_else(|| bad_tree(sha, "a commit without a message"))?;
    let mut tree = None;
    let mut parents = Vec::new();
    for line in header.lines() {
        if let Some(t) = line.strip_prefix("tree ") {
            tree = Some(t.to_string());
        } else if let Some(p) = line.strip_prefix("parent ") {
            parents.push(p.to_string());
        }
    }
    Ok(Commit {
        tree: tree.ok_or_else(|| bad_tree(sha, "a commit without a tree"))?,
        parents,
        message: message.to_string(),
    })
}

/// One `git cat-file --batch` for a whole import: objects are asked for one at a time
/// and read back in turn.
pub(crate) struct CatFile {
    child: Child,
    input: Option<BufWriter<ChildStdin>>,
    output: BufReader<ChildStdout>,
}

impl CatFile {
    /// Starts the process.
    pub(crate) fn start(repo: &Repo) -> Result<CatFile> {
        let cannot = |e: String| Error::Git {
            command: "cat-file".into(),
            message: e,
        };
        let mut child = Command::new("git")
            .arg("-C")
            .arg(&repo.root)
            .args(["cat-file", "--batch"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| cannot(format!("cannot run git: {e}")))?;
        let input = child.stdin.take().map(BufWriter::new);
        let output = child
            .stdout
            .take()
            .map(BufReader::new)
            .ok_or_else(|| cannot("no output".into()))?;
        Ok(CatFile {
            child,
            input,
            output,
        })
    }

    /// The content of object `sha`, which must be of type `kind`.
    pub(crate) fn get(&mut self, sha: &str, kind: &str) -> Result<Vec<u8>> {
        self.get_if_present(sha, kind)?.ok_or_else(|| Error::Git {
            command: "cat-file".into(),
            message: format!("object {sha} is missing"),
        })
    }

    /// The content of object `sha`, which must be of type `kind`; `None` when the
    /// repository does not have it.
    pub(crate) fn get_if_present(&mut self, sha: &str, kind: &str) -> Result<Option<Vec<u8>>> {
        let failed = |why: String| Error::Git {
            command: "cat-file".into(),
            message: why,
        };
        let input = self
            .input
            .as_mut()
            .ok_or_else(|| failed("its input is closed".into()))?;
        writeln!(input, "{sha}")
            .and_then(|_| input.flush())
            .map_err(|e| failed(e.to_string()))?;
        let mut header = String::new();
        self.output
            .read_line(&mut header)
            .map_err(|e| failed(e.to_string()))?;
        let mut parts = header.split_whitespace();
        if parts.clone().nth(1) == Some("missing") {
            return Ok(None);
        }
        let (Some(_), Some(found), Some(size)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(failed(format!("object {sha}: {}", header.trim())));
        };
        if found != kind {
            return Err(failed(format!("object {sha} is a {found}, not a {kind}")));
        }
        let size: usize = size
            .parse()
            .map_err(|_| failed(format!("object {sha}: size '{size}'")))?;
        let mut content = vec![0; size + 1];
        self.output
            .read_exact(&mut content)
            .map_err(|e| failed(e.to_string()))?;
        content.pop();
        Ok(Some(content))
    }
}

impl Drop for CatFile {
    fn drop(&mut self) {
        drop(self.input.take());
        let _ = self.child.wait();
    }
}
