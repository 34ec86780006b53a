//! A fetched commit checked whole before anything of it is stored (docs/design.md
//! invariant 23): it is a checkpoint's commit, its parents are checkpoints, its tree's
//! paths are safe, distinct and never both a file and a directory, its skipped paths
//! are safe worktree paths, and the objects it names are what it says they are. A
//! commit that fails is refused with a phrase saying why ([`Refusal`]); the import
//! ([`super::import`]) leaves it out with its descendants.

use std::collections::{HashMap, HashSet};

use super::cat_file::CatFile;
use super::message::{self, AttachmentBlob, Trailers};
use crate::git::repo::Repo;
use crate::model::tree::{self, is_safe_name};
use crate::model::{SkipReason, SkippedFile};
use crate::storage::Snapshot;
use crate::{CheckpointId, ChunkId, Result};

/// The longest commit object an import reads: far more than any checkpoint's trailers
/// need, and it keeps a crafted commit from taking the memory of a blob.
const MAX_COMMIT_BYTES: u64 = 64 << 20;

/// The longest symlink target an import reads: `PATH_MAX`, what a save can record.
const MAX_LINK_BYTES: u64 = 4096;

/// A file of a commit's tree that the import stores.
pub(super) struct RegularFile {
    /// Its path in the tree.
    pub(super) path: Vec<u8>,
    /// Whether its mode is 100755.
    pub(super) executable: bool,
    /// Its blob.
    pub(super) object: String,
}

/// A commit checked whole, nothing of it stored yet.
pub(super) struct Checked {
    /// Its parents' checkpoints.
    pub(super) parents: Vec<CheckpointId>,
    /// Its record, as its message gives it (skipped files and attachments taken out).
    pub(super) trailers: Trailers,
    /// The files to store.
    pub(super) regular: Vec<RegularFile>,
    /// The symlinks: path and blob.
    pub(super) links: Vec<(Vec<u8>, String)>,
    /// The origin's skipped files, then those over `checkpoint.maxFileSize` here.
    pub(super) skipped: Vec<SkippedFile>,
    /// The attachments kept: safe, distinct names, blob present with the size named.
    pub(super) attachments: Vec<AttachmentBlob>,
    /// What it leaves out, one line each.
    pub(super) warnings: Vec<String>,
}

/// What checking a commit needs to know.
pub(super) struct Look<'a> {
    /// The repository the commits are in.
    pub(super) repo: &'a Repo,
    /// The store before this import.
    pub(super) snapshot: &'a Snapshot<'a>,
    /// The checkpoint of every commit this import has found or added so far.
    pub(super) found: &'a HashMap<String, CheckpointId>,
    /// The commits this import has refused so far, each with its line.
    pub(super) refused: &'a HashMap<String, String>,
    /// Blobs this import stored already.
    pub(super) stored: &'a HashMap<String, (u64, Vec<ChunkId>)>,
    /// `checkpoint.maxFileSize`.
    pub(super) max_file_size: Option<u64>,
}

/// Why a commit is refused.
pub(super) enum Refusal {
    /// Its own fault: a phrase that follows "commit <sha> ".
    Own(String),
    /// A parent's refusal, as that was reported.
    Inherited(String),
}

/// The inner `Err` is why a commit is refused; the outer one, that git or the store
/// failed, which fails the whole import.
pub(super) type Checking<T = Checked> = Result<std::result::Result<T, Refusal>>;

fn refuse<T>(why: String) -> Checking<T> {
    Ok(Err(Refusal::Own(why)))
}

/// The value of a check that passed; a refusal returns from the enclosing check.
macro_rules! passed {
    ($check:expr) => {
        match $check? {
            Ok(value) => value,
            Err(refusal) => return Ok(Err(refusal)),
        }
    };
}

/// A commit's tree, sorted into what an import does with each entry.
struct Listing {
    regular: Vec<RegularFile>,
    links: Vec<(Vec<u8>, String)>,
    skipped: Vec<SkippedFile>,
    warnings: Vec<String>,
}

impl Look<'_> {
    /// Reads and checks commit `sha`, its tree listing and the objects its trailers
    /// name, storing nothing.
    pub(super) fn commit(&self, check: &mut CatFile, cat: &mut CatFile, sha: &str) -> Checking {
        let commit = passed!(read_commit(check, cat, sha));
        let mut trailers = match message::decode(&commit.message) {
            Ok(trailers) => trailers,
            Err(e) => return refuse(format!("is not a checkpoint's: {e}")),
        };
        let parents = passed!(self.parents(&commit.parents));
        for file in &trailers.skipped {
            if !is_safe_path(&file.path) {
                return refuse(format!(
                    "records the skipped file {}, which is not a path inside a worktree",
                    tree::quoted(&file.path)
                ));
            }
        }
        let skipped = std::mem::take(&mut trailers.skipped);
        let mut listing = passed!(self.listing(sha, &commit.tree, skipped));
        passed!(self.objects_are_blobs(check, &listing));
        let attachments = std::mem::take(&mut trailers.attachments);
        let attachments = passed!(attachments_kept(
            check,
            sha,
            attachments,
            &mut listing.warnings
        ));
        Ok(Ok(Checked {
            parents,
            trailers,
            regular: listing.regular,
            links: listing.links,
            skipped: listing.skipped,
            attachments,
            warnings: listing.warnings,
        }))
    }

    /// The checkpoints of commits `shas`: each imported already, or by this import.
    fn parents(&self, shas: &[String]) -> Checking<Vec<CheckpointId>> {
        let mut parents = Vec::with_capacity(shas.len());
        for p in shas {
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
        Ok(Ok(parents))
    }

    /// Lists tree `tree` of commit `sha` (`git ls-tree`), checking every entry;
    /// `skipped` are the files the commit's record says its save left out.
    fn listing(&self, sha: &str, tree: &str, skipped: Vec<SkippedFile>) -> Checking<Listing> {
        let bytes = super::git_ok(
            &self.repo.root,
            &["ls-tree", "-r", "-z", "-l", "--full-tree", tree],
            b"",
        )?;
        let mut listing = Listing {
            regular: Vec::new(),
            links: Vec::new(),
            skipped,
            warnings: Vec::new(),
        };
        let mut paths: Vec<&[u8]> = Vec::new();
        for item in bytes.split(|&b| b == 0).filter(|i| !i.is_empty()) {
            let entry = match Entry::parse(item) {
                Ok(entry) => entry,
                Err(why) => return refuse(why),
            };
            paths.push(entry.path);
            let path = entry.path.to_vec();
            let size = entry.size;
            match entry.mode {
                Mode::Link => listing.links.push((path, entry.object)),
                Mode::File { .. } if self.max_file_size.is_some_and(|limit| size > limit) => {
                    listing.warnings.push(format!(
                        "left out {} ({} bytes) of commit {sha}: larger than checkpoint.maxFileSize",
                        tree::quoted(&path),
                        size
                    ));
                    listing.skipped.push(SkippedFile {
                        path,
                        size,
                        reason: SkipReason::TooLarge,
                    });
                }
                Mode::File { executable } => listing.regular.push(RegularFile {
                    path,
                    executable,
                    object: entry.object,
                }),
            }
        }
        if let Some(why) = colliding(&mut paths) {
            return refuse(why);
        }
        Ok(Ok(listing))
    }

    /// `ls-tree` gives the type an entry's mode implies; what the object is, only the
    /// object database knows, and reading a tree as a file would stop the import.
    fn objects_are_blobs(&self, check: &mut CatFile, listing: &Listing) -> Checking<()> {
        let mut asked = HashSet::new();
        let objects = listing
            .regular
            .iter()
            .map(|f| (&f.path, &f.object))
            .chain(listing.links.iter().map(|(path, object)| (path, object)));
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
        Ok(Ok(()))
    }
}

/// Reads commit `sha`: its size first (`check`, a `--batch-check`), so a crafted object
/// is never read whole, then its content (`cat`).
fn read_commit(check: &mut CatFile, cat: &mut CatFile, sha: &str) -> Checking<Commit> {
    match check.info(sha)? {
        Some((kind, _)) if kind != "commit" => return refuse(format!("is a {kind}, not a commit")),
        Some((_, size)) if size > MAX_COMMIT_BYTES => {
            return refuse(format!(
                "is {size} bytes, more than a checkpoint's commit holds"
            ))
        }
        Some(_) => {}
        None => return refuse("is missing".into()),
    }
    let bytes = cat.get(sha, "commit")?;
    Ok(parse_commit(&bytes).map_err(Refusal::Own))
}

/// The attachments of commit `sha` to import: a name no file can have, or one named
/// twice, is left out with a warning; one whose blob did not come (its branch's
/// attachments ref was not pushed, or not fetched) is left out; one whose blob is not a
/// blob of the size named refuses the commit.
fn attachments_kept(
    check: &mut CatFile,
    sha: &str,
    named: Vec<AttachmentBlob>,
    warnings: &mut Vec<String>,
) -> Checking<Vec<AttachmentBlob>> {
    let mut kept: Vec<AttachmentBlob> = Vec::new();
    for attachment in named {
        let name = attachment.name.as_bytes();
        if !is_safe_name(name) || kept.iter().any(|a| a.name == attachment.name) {
            warnings.push(format!(
                "left out attachment {} of commit {sha}: not a file name, or named twice",
                tree::quoted(name)
            ));
            continue;
        }
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
            Some(_) => kept.push(attachment),
        }
    }
    Ok(Ok(kept))
}

/// What an entry of a checkpoint's tree can be.
enum Mode {
    /// 120000.
    Link,
    /// 100644 or 100755.
    File { executable: bool },
}

/// One line of `git ls-tree -r -z -l`, checked.
struct Entry<'a> {
    mode: Mode,
    object: String,
    size: u64,
    path: &'a [u8],
}

impl<'a> Entry<'a> {
    /// Reads `item`; `Err` says why no export writes it (a phrase after "commit <sha> ").
    fn parse(item: &'a [u8]) -> std::result::Result<Entry<'a>, String> {
        let Some((head, path)) = split_once(item, b'\t') else {
            return Err("has an ls-tree line without a path".into());
        };
        let head = String::from_utf8_lossy(head);
        let mut parts = head.split_whitespace();
        let (Some(mode), Some(_), Some(object), Some(size)) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err("has an ls-tree line it cannot read".into());
        };
        if !is_safe_path(path) {
            return Err(format!(
                "has the path {}, which is not safe to restore",
                tree::quoted(path)
            ));
        }
        let size: u64 = match (mode, size.parse()) {
            ("120000" | "100644" | "100755", Ok(size)) => size,
            ("120000" | "100644" | "100755", Err(_)) => {
                return Err(format!("lists {} with size '{size}'", tree::quoted(path)))
            }
            (other, _) => {
                return Err(format!(
                    "is not a checkpoint's: mode {other} at {}",
                    tree::quoted(path)
                ))
            }
        };
        let mode = match mode {
            "120000" if size > MAX_LINK_BYTES => {
                return Err(format!(
                    "has the symlink {} of {size} bytes, longer than any path",
                    tree::quoted(path)
                ))
            }
            "120000" => Mode::Link,
            _ => Mode::File {
                executable: mode == "100755",
            },
        };
        Ok(Entry {
            mode,
            object: object.to_string(),
            size,
            path,
        })
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
