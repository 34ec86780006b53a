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
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};

use super::message::{self, AttachmentBlob, Trailers};
use crate::format::chunk::Hasher;
use crate::git::repo::Repo;
use crate::model::tree::{self, is_safe_name};
use crate::model::{Attachment, Checkpoint, Node, PendingTrees, SkipReason, SkippedFile};
use crate::ops::save::store_content;
use crate::settings::Settings;
use crate::storage::{ChunkSink, Packer, Snapshot, Store, StoreRead};
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

/// The longest commit object an import reads: far more than any checkpoint's trailers
/// need, and it keeps a crafted commit from taking the memory of a blob.
const MAX_COMMIT_BYTES: u64 = 64 << 20;

/// The longest symlink target an import reads: `PATH_MAX`, what a save can record.
const MAX_LINK_BYTES: u64 = 4096;

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
    let mut todo = Vec::new();
    let mut queued = HashSet::new();
    // Kept for the parents outside `commits`: a fetch lists only commits past the tips
    // it imported before, and a branch forked below one of those has its parent there.
    let snapshot = store.snapshot()?;
    for sha in commits {
        if out.found.contains_key(sha) || !queued.insert(sha.clone()) {
            continue;
        }
        match snapshot.checkpoint_of(sha)? {
            Some(id) => {
                out.found.insert(sha.clone(), id);
            }
            None => todo.push(sha.clone()),
        }
    }
    if todo.is_empty() {
        return Ok(out);
    }
    let level = settings.compression.get()?;
    let max_file_size = settings.max_file_size.get()?;
    let mut check = CatFile::start_mode(repo, "--batch-check")?;
    let mut cat = CatFile::start(repo)?;
    let mut blobs: HashMap<String, (u64, Vec<ChunkId>)> = HashMap::new();
    let mut packer = Packer::default();
    let mut buf = Vec::new();
    let txn = store.transaction()?;
    for sha in &todo {
        let looked = Look {
            repo,
            snapshot: &snapshot,
            found: &out.found,
            refused: &out.refused,
            stored: &blobs,
            max_file_size,
        };
        let commit = match looked.commit(&mut check, &mut cat, sha)? {
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
        let mut new: Vec<&str> = Vec::new();
        {
            let mut queued = HashSet::new();
            let objects = commit
                .attachments
                .iter()
                .map(|a| a.blob.as_str())
                .chain(commit.regular.iter().map(|f| f.object.as_str()));
            for object in objects {
                if !blobs.contains_key(object) && queued.insert(object) {
                    new.push(object);
                }
            }
        }
        if !new.is_empty() {
            txn.pack_chunks(&mut packer, |sink| {
                for object in new {
                    let stored =
                        store_blob(&mut cat, sink, &store.hasher, level, object, &mut buf)?;
                    blobs.insert(object.to_string(), stored);
                }
                Ok(())
            })?;
        }
        let mut files: Vec<(Vec<u8>, Node)> =
            Vec::with_capacity(commit.regular.len() + commit.links.len());
        for file in &commit.regular {
            let (size, chunks) = blobs
                .get(&file.object)
                .cloned()
                .ok_or_else(|| bad_tree(sha, "a blob it did not read"))?;
            let mode = if file.executable { 0o755 } else { 0o644 };
            files.push((file.path.clone(), Node::file(size, mode, chunks, true)));
        }
        for (path, object) in &commit.links {
            let target = cat.get(object, "blob")?;
            files.push((path.clone(), Node::Symlink { target }));
        }
        files.sort_by(|a, b| a.0.cmp(&b.0));
        let mut pending = PendingTrees::new();
        let (root, totals) = tree::build(&store.hasher, &files, &mut pending);
        let like = match commit.parents.first() {
            Some(&parent) => Some(txn.checkpoint(parent)?.tree),
            None => None,
        };
        txn.add_trees(&pending, root, like)?;
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
            attachments: commit
                .attachments
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
            skipped: commit.skipped,
        };
        let id = txn.add_checkpoint(&mut record)?;
        txn.map_commit(id, sha)?;
        txn.set_origin(id, trailers.id)?;
        out.found.insert(sha.clone(), id);
        out.count += 1;
    }
    txn.commit()?;
    Ok(out)
}

/// A file of a commit's tree that the import stores.
struct RegularFile {
    path: Vec<u8>,
    executable: bool,
    object: String,
}

/// A commit checked whole, nothing of it stored yet.
struct Checked {
    parents: Vec<CheckpointId>,
    trailers: Trailers,
    regular: Vec<RegularFile>,
    links: Vec<(Vec<u8>, String)>,
    /// The origin's skipped files, then those over `checkpoint.maxFileSize` here.
    skipped: Vec<SkippedFile>,
    /// The attachments kept: safe, distinct names, blob present with the size named.
    attachments: Vec<AttachmentBlob>,
    warnings: Vec<String>,
}

/// What checking a commit needs to know.
struct Look<'a> {
    repo: &'a Repo,
    snapshot: &'a Snapshot<'a>,
    found: &'a HashMap<String, CheckpointId>,
    refused: &'a HashMap<String, String>,
    /// Blobs this import stored already.
    stored: &'a HashMap<String, (u64, Vec<ChunkId>)>,
    max_file_size: Option<u64>,
}

/// Why a commit is refused.
enum Refusal {
    /// Its own fault: a phrase that follows "commit <sha> ".
    Own(String),
    /// A parent's refusal, as that was reported.
    Inherited(String),
}

impl From<String> for Refusal {
    fn from(why: String) -> Self {
        Refusal::Own(why)
    }
}

/// The inner `Err` is why a commit is refused.
type Checking = Result<std::result::Result<Checked, Refusal>>;

fn refuse(why: String) -> Checking {
    Ok(Err(Refusal::Own(why)))
}

impl Look<'_> {
    /// Reads and checks commit `sha`, its tree listing and the objects its trailers
    /// name, storing nothing.
    fn commit(&self, check: &mut CatFile, cat: &mut CatFile, sha: &str) -> Checking {
        match check.info(sha)? {
            Some((kind, _)) if kind != "commit" => {
                return refuse(format!("is a {kind}, not a commit"))
            }
            Some((_, size)) if size > MAX_COMMIT_BYTES => {
                return refuse(format!(
                    "is {size} bytes, more than a checkpoint's commit holds"
                ))
            }
            Some(_) => {}
            None => return Ok(Err(Refusal::Own("is missing".into()))),
        }
        let bytes = cat.get(sha, "commit")?;
        let commit = match parse_commit(&bytes) {
            Ok(commit) => commit,
            Err(why) => return Ok(Err(why.into())),
        };
        let mut trailers = match message::decode(&commit.message) {
            Ok(trailers) => trailers,
            Err(e) => return refuse(format!("is not a checkpoint's: {e}")),
        };
        let mut parents = Vec::with_capacity(commit.parents.len());
        for p in &commit.parents {
            if let Some(line) = self.refused.get(p) {
                return Ok(Err(Refusal::Inherited(line.clone())));
            }
            let known = match self.found.get(p) {
                Some(&id) => Some(id),
                None => self.snapshot.checkpoint_of(p)?,
            };
            match known {
                Some(id) => parents.push(id),
                None => return refuse(format!("has parent {p}, which is not a checkpoint")),
            }
        }
        for file in &trailers.skipped {
            if !is_safe_path(&file.path) {
                return refuse(format!(
                    "records the skipped file {}, which is not a path inside a worktree",
                    tree::quoted(&file.path)
                ));
            }
        }
        let listing = super::git_ok(
            &self.repo.root,
            &["ls-tree", "-r", "-z", "-l", "--full-tree", &commit.tree],
            b"",
        )?;
        let mut regular = Vec::new();
        let mut links = Vec::new();
        let mut skipped = std::mem::take(&mut trailers.skipped);
        let mut warnings = Vec::new();
        let mut paths: Vec<&[u8]> = Vec::new();
        for item in listing.split(|&b| b == 0).filter(|i| !i.is_empty()) {
            let Some((head, path)) = split_once(item, b'\t') else {
                return Ok(Err(Refusal::Own(
                    "has an ls-tree line without a path".into(),
                )));
            };
            let head = String::from_utf8_lossy(head);
            let mut parts = head.split_whitespace();
            let (Some(mode), Some(_), Some(object), Some(size)) =
                (parts.next(), parts.next(), parts.next(), parts.next())
            else {
                return Ok(Err(Refusal::Own(
                    "has an ls-tree line it cannot read".into(),
                )));
            };
            if !is_safe_path(path) {
                return refuse(format!(
                    "has the path {}, which is not safe to restore",
                    tree::quoted(path)
                ));
            }
            paths.push(path);
            let size: u64 = match (mode, size.parse()) {
                ("120000" | "100644" | "100755", Ok(size)) => size,
                ("120000" | "100644" | "100755", Err(_)) => {
                    return refuse(format!("lists {} with size '{size}'", tree::quoted(path)))
                }
                (other, _) => {
                    return refuse(format!(
                        "is not a checkpoint's: mode {other} at {}",
                        tree::quoted(path)
                    ))
                }
            };
            if mode == "120000" {
                if size > MAX_LINK_BYTES {
                    return refuse(format!(
                        "has the symlink {} of {size} bytes, longer than any path",
                        tree::quoted(path)
                    ));
                }
                links.push((path.to_vec(), object.to_string()));
            } else if self.max_file_size.is_some_and(|limit| size > limit) {
                warnings.push(format!(
                    "left out {} ({} bytes) of commit {sha}: larger than checkpoint.maxFileSize",
                    tree::quoted(path),
                    size
                ));
                skipped.push(SkippedFile {
                    path: path.to_vec(),
                    size,
                    reason: SkipReason::TooLarge,
                });
            } else {
                regular.push(RegularFile {
                    path: path.to_vec(),
                    executable: mode == "100755",
                    object: object.to_string(),
                });
            }
        }
        if let Some(why) = colliding(&mut paths) {
            return Ok(Err(why.into()));
        }
        // `ls-tree` gives the type an entry's mode implies; what the object is, only the
        // object database knows, and reading a tree as a file would stop the import.
        let mut asked = HashSet::new();
        let objects = regular
            .iter()
            .map(|f| (&f.path, &f.object))
            .chain(links.iter().map(|(path, object)| (path, object)));
        for (path, object) in objects {
            if self.stored.contains_key(object) || !asked.insert(object) {
                continue;
            }
            match check.info(object)? {
                Some((kind, _)) if kind == "blob" => {}
                Some((kind, _)) => {
                    return refuse(format!(
                        "has a {kind} at {}, where a file's content belongs",
                        tree::quoted(path)
                    ))
                }
                None => {
                    return refuse(format!(
                        "lacks the content of {} (object {object})",
                        tree::quoted(path)
                    ))
                }
            }
        }
        let mut attachments: Vec<AttachmentBlob> = Vec::new();
        for attachment in std::mem::take(&mut trailers.attachments) {
            let name = attachment.name.as_bytes();
            if !is_safe_name(name) || attachments.iter().any(|a| a.name == attachment.name) {
                warnings.push(format!(
                    "left out attachment {} of commit {sha}: not a file name, or named twice",
                    tree::quoted(name)
                ));
                continue;
            }
            // A blob that did not come (its branch's attachments ref was not pushed,
            // or not fetched) leaves the attachment out.
            match check.info(&attachment.blob)? {
                None => continue,
                Some((kind, _)) if kind != "blob" => {
                    return refuse(format!(
                        "names attachment {} as {}, a {kind}",
                        tree::quoted(name),
                        attachment.blob
                    ))
                }
                Some((_, size)) if size != attachment.size => {
                    return refuse(format!(
                        "names attachment {} of {} bytes, its blob {size}",
                        tree::quoted(name),
                        attachment.size
                    ))
                }
                Some(_) => attachments.push(attachment),
            }
        }
        Ok(Ok(Checked {
            parents,
            trailers,
            regular,
            links,
            skipped,
            attachments,
            warnings,
        }))
    }
}

/// Whether `path` is relative, `/`-separated, and every part a safe name.
fn is_safe_path(path: &[u8]) -> bool {
    path.split(|&b| b == b'/').all(is_safe_name)
}

/// Why `paths` cannot be one tree: a path listed twice, or a file where another path
/// needs a directory. `None` when they can. Sorts `paths`.
fn colliding(paths: &mut [&[u8]]) -> Option<String> {
    paths.sort_unstable();
    if let Some(pair) = paths.windows(2).find(|pair| pair[0] == pair[1]) {
        return Some(format!("holds the path {} twice", tree::quoted(pair[0])));
    }
    let files: HashSet<&[u8]> = paths.iter().copied().collect();
    for path in paths.iter() {
        for (at, _) in path.iter().enumerate().filter(|(_, &b)| b == b'/') {
            if files.contains(&path[..at]) {
                return Some(format!(
                    "holds {} both as a file and as the directory of {}",
                    tree::quoted(&path[..at]),
                    tree::quoted(path)
                ));
            }
        }
    }
    None
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

/// Whether `text` is a full object id (SHA-1 or SHA-256 hex): what a commit's header
/// names, and all that may reach git's command line from it.
fn is_object_id(text: &str) -> bool {
    matches!(text.len(), 40 | 64) && text.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The tree, parents and message of a commit; `Err` says why it is not one an export
/// writes.
fn parse_commit(bytes: &[u8]) -> std::result::Result<Commit, String> {
    let text = String::from_utf8_lossy(bytes);
    let (header, message) = text
        .split_once("\n\n")
        .ok_or_else(|| "has no message".to_string())?;
    let mut tree = None;
    let mut parents = Vec::new();
    for line in header.lines() {
        if let Some(t) = line.strip_prefix("tree ") {
            tree = Some(t.to_string());
        } else if let Some(p) = line.strip_prefix("parent ") {
            parents.push(p.to_string());
        }
    }
    let tree = tree.ok_or_else(|| "has no tree".to_string())?;
    if let Some(bad) = std::iter::once(&tree)
        .chain(&parents)
        .find(|id| !is_object_id(id))
    {
        return Err(format!("names '{bad}', which is not an object id"));
    }
    Ok(Commit {
        tree,
        parents,
        message: message.to_string(),
    })
}

/// One `git cat-file --batch` (or `--batch-check`) for a whole import: objects are
/// asked for one at a time and read back in turn.
pub(crate) struct CatFile {
    child: Child,
    input: Option<BufWriter<ChildStdin>>,
    output: BufReader<ChildStdout>,
}

impl CatFile {
    /// Starts `git cat-file --batch`.
    pub(crate) fn start(repo: &Repo) -> Result<CatFile> {
        Self::start_mode(repo, "--batch")
    }

    /// Starts `git cat-file` in `mode`: `--batch` for [`CatFile::get`] and
    /// [`CatFile::open`], `--batch-check` for [`CatFile::info`].
    fn start_mode(repo: &Repo, mode: &str) -> Result<CatFile> {
        let cannot = |e: String| Error::Git {
            command: "cat-file".into(),
            message: e,
        };
        let mut child = Command::new("git")
            .arg("-C")
            .arg(&repo.root)
            .args(["cat-file", mode])
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

    fn failed(why: String) -> Error {
        Error::Git {
            command: "cat-file".into(),
            message: why,
        }
    }

    /// Asks for `sha` and reads the answer's header: `None` when the repository does
    /// not have it, else its type and size.
    fn ask(&mut self, sha: &str) -> Result<Option<(String, u64)>> {
        let input = self
            .input
            .as_mut()
            .ok_or_else(|| Self::failed("its input is closed".into()))?;
        writeln!(input, "{sha}")
            .and_then(|_| input.flush())
            .map_err(|e| Self::failed(e.to_string()))?;
        let mut header = String::new();
        self.output
            .read_line(&mut header)
            .map_err(|e| Self::failed(e.to_string()))?;
        let mut parts = header.split_whitespace();
        if parts.clone().nth(1) == Some("missing") {
            return Ok(None);
        }
        let (Some(_), Some(found), Some(size)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(Self::failed(format!("object {sha}: {}", header.trim())));
        };
        let size = size
            .parse()
            .map_err(|_| Self::failed(format!("object {sha}: size '{size}'")))?;
        Ok(Some((found.to_string(), size)))
    }

    /// The type and size of object `sha` (a `--batch-check` process); `None` when the
    /// repository does not have it.
    fn info(&mut self, sha: &str) -> Result<Option<(String, u64)>> {
        self.ask(sha)
    }

    /// Starts reading object `sha`, which must be of type `kind`: returns its size, and
    /// its content is next on [`CatFile::output`], to be read whole and then followed by
    /// [`CatFile::end_object`].
    fn open(&mut self, sha: &str, kind: &str) -> Result<u64> {
        match self.ask(sha)? {
            None => Err(Self::failed(format!("object {sha} is missing"))),
            Some((found, size)) if found != kind => {
                // Its content is still on the way: read past it, so the next answer
                // is read from its start.
                std::io::copy(&mut (&mut self.output).take(size + 1), &mut std::io::sink())
                    .map_err(|e| Self::failed(e.to_string()))?;
                Err(Self::failed(format!(
                    "object {sha} is a {found}, not a {kind}"
                )))
            }
            Some((_, size)) => Ok(size),
        }
    }

    /// Reads the line end that follows an object's content.
    fn end_object(&mut self) -> Result<()> {
        let mut end = [0u8; 1];
        self.output
            .read_exact(&mut end)
            .map_err(|e| Self::failed(e.to_string()))
    }

    /// The content of object `sha`, which must be of type `kind`.
    pub(crate) fn get(&mut self, sha: &str, kind: &str) -> Result<Vec<u8>> {
        let size = self.open(sha, kind)?;
        let mut content = Vec::new();
        (&mut self.output)
            .take(size)
            .read_to_end(&mut content)
            .map_err(|e| Self::failed(e.to_string()))?;
        if content.len() as u64 != size {
            return Err(Self::failed(format!(
                "object {sha}: its content ended early"
            )));
        }
        self.end_object()?;
        Ok(content)
    }
}

impl Drop for CatFile {
    fn drop(&mut self) {
        drop(self.input.take());
        let _ = self.child.wait();
    }
}
