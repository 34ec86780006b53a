//! Checkpoints as git commits (docs/design.md, "Sharing through git").
//!
//! Each checkpoint becomes one commit: its tree holds the checkpoint's files as git
//! blobs (modes 100644, 100755, 120000), its parents are its parents' commits, author
//! and committer are the fixed identity [`IDENTITY`] at the checkpoint's time in UTC,
//! and its message is [`super::message::encode`]. Nothing depends on the machine, so a
//! checkpoint exports to the same commit wherever it is exported. Everything not yet
//! exported goes to one `git fast-import` run, each commit described as its changes
//! against its first parent (found by comparing tree ids in the store, so unchanged
//! directories are never read), and the commits are recorded in the store, so the next
//! export writes only new checkpoints.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::process::{ChildStdin, ChildStdout, Command, Stdio};

use super::message;
use crate::git::repo::Repo;
use crate::model::{Node, Tree};
use crate::storage::pack::{LastPack, ReadChunks};
use crate::storage::{Snapshot, Store, StoreRead, TreeReader};
use crate::{CheckpointId, ChunkId, Error, Result, TreeId};

/// Author and committer of every exported checkpoint.
pub const IDENTITY: &str = "git-checkpoint <git-checkpoint@localhost>";

/// The ref the import writes its commits on; it is dropped before fast-import ends
/// (`reset` without `from`), so the repository keeps no ref of it.
const SCRATCH_REF: &str = "refs/checkpoint-export/scratch";

/// What an export did.
#[derive(Debug, Default)]
pub struct ExportReport {
    /// The commit of each checkpoint asked for, in the order asked.
    pub commits: Vec<String>,
    /// How many checkpoints were written as new commits.
    pub written: usize,
}

/// Exports `tips` and every ancestor not yet exported, and returns their commits.
/// A recorded commit the repository no longer has (a `git gc` pruned it), or whose
/// history is no longer the checkpoint's (`stale`), is exported again.
pub fn export(repo: &Repo, store: &Store, tips: &[CheckpointId]) -> Result<ExportReport> {
    export_for(repo, store, tips, &HashSet::new())
}

/// [`export`] for a push to a remote that already has `published` (and their
/// ancestors): their commits are kept as they are, whatever changed here since, since
/// the remote holds them and what builds on them must still be a fast-forward.
pub fn export_for(
    repo: &Repo,
    store: &Store,
    tips: &[CheckpointId],
    published: &HashSet<CheckpointId>,
) -> Result<ExportReport> {
    let _span = crate::trace::span("export");
    let snapshot = store.snapshot()?;
    let gone = stale(repo, &snapshot, tips, published)?;
    let (order, known) = plan(&snapshot, tips, &gone)?;
    let written = if order.is_empty() {
        HashMap::new()
    } else {
        fast_import(repo, &snapshot, &order, &known)?
    };
    drop(snapshot);
    if !written.is_empty() || !gone.is_empty() {
        let txn = store.transaction()?;
        for id in &gone {
            txn.unmap_commit(*id)?;
        }
        for (id, sha) in &written {
            txn.map_commit(*id, sha)?;
        }
        txn.commit()?;
    }
    let commits = tips
        .iter()
        .map(|id| {
            written
                .get(id)
                .or_else(|| known.get(id))
                .cloned()
                .ok_or_else(|| Error::Internal(format!("checkpoint {id} was not exported")))
        })
        .collect::<Result<_>>()?;
    Ok(ExportReport {
        commits,
        written: written.len(),
    })
}

/// The checkpoints reachable from `tips` (not through `published`) whose recorded
/// commit must not be used: the repository lacks it (a `git gc` pruned it), or its
/// parents are not the commits of the checkpoint's parents now, or one of its ancestors
/// is such a checkpoint. `drop` and gc re-parent checkpoints around the ones they remove
/// under the same ids; an old commit would still carry the removed checkpoint (the
/// secret guard's advice is to drop the one holding a secret) in its history.
fn stale(
    repo: &Repo,
    snapshot: &Snapshot,
    tips: &[CheckpointId],
    published: &HashSet<CheckpointId>,
) -> Result<HashSet<CheckpointId>> {
    // Parents before children, each once, with its recorded commit.
    let order = parents_first(snapshot, tips, |id| Ok(published.contains(&id)))?
        .into_iter()
        .map(|(id, parents)| Ok((id, parents, snapshot.commit_of(id)?)))
        .collect::<Result<Vec<_>>>()?;
    let shas: Vec<String> = order.iter().filter_map(|(_, _, sha)| sha.clone()).collect();
    let missing: HashSet<String> = super::missing_commits(repo, &shas)?.into_iter().collect();
    let present: Vec<&str> = shas
        .iter()
        .filter(|sha| !missing.contains(*sha))
        .map(String::as_str)
        .collect();
    let recorded = commit_parents(repo, &present)?;
    let mut gone = HashSet::new();
    let mut unusable: HashSet<CheckpointId> = HashSet::new();
    for (id, parents, sha) in &order {
        let usable = match sha {
            Some(sha) if !missing.contains(sha) => {
                let mut expected = Vec::with_capacity(parents.len());
                for parent in parents {
                    if unusable.contains(parent) {
                        break;
                    }
                    match snapshot.commit_of(*parent)? {
                        Some(commit) => expected.push(commit),
                        None => break,
                    }
                }
                expected.len() == parents.len() && recorded.get(sha.as_str()) == Some(&expected)
            }
            _ => false,
        };
        if !usable {
            unusable.insert(*id);
            if sha.is_some() {
                gone.insert(*id);
            }
        }
    }
    Ok(gone)
}

/// The parents of each of `commits` (all present in the repository), as git records them.
fn commit_parents(repo: &Repo, commits: &[&str]) -> Result<HashMap<String, Vec<String>>> {
    if commits.is_empty() {
        return Ok(HashMap::new());
    }
    let input = commits.join("\n") + "\n";
    let out = super::git_ok(
        &repo.root,
        &["rev-list", "--no-walk=unsorted", "--parents", "--stdin"],
        input.as_bytes(),
    )?;
    Ok(String::from_utf8_lossy(&out)
        .lines()
        .filter_map(|line| {
            let mut words = line.split(' ');
            let commit = words.next()?.to_string();
            Some((commit, words.map(str::to_string).collect()))
        })
        .collect())
}

/// How many checkpoints [`export_for`] of `tips` would write as new commits; it only
/// reads (the store, and the repository's commits).
pub fn unexported(
    repo: &Repo,
    snapshot: &Snapshot,
    tips: &[CheckpointId],
    published: &HashSet<CheckpointId>,
) -> Result<usize> {
    let gone = stale(repo, snapshot, tips, published)?;
    Ok(plan(snapshot, tips, &gone)?.0.len())
}

/// The checkpoints to write, parents first, and the exported ones they build on.
type Plan = (Vec<CheckpointId>, HashMap<CheckpointId, String>);

/// Finds what `tips` need exported: ancestors without a commit (or whose commit is in
/// `gone`), in an order that puts every parent before its children.
fn plan(snapshot: &Snapshot, tips: &[CheckpointId], gone: &HashSet<CheckpointId>) -> Result<Plan> {
    let mut known = HashMap::new();
    let order = parents_first(snapshot, tips, |id| {
        if !gone.contains(&id) {
            if let Some(sha) = snapshot.commit_of(id)? {
                known.insert(id, sha);
                return Ok(true);
            }
        }
        Ok(false)
    })?;
    Ok((order.into_iter().map(|(id, _)| id).collect(), known))
}

/// `tips` and their ancestors, each once with its parents, every parent before its
/// children; the walk does not go into (nor list) a checkpoint `stop` says is done with.
/// A parent cycle, which only a damaged store holds, is an error.
fn parents_first(
    snapshot: &Snapshot,
    tips: &[CheckpointId],
    mut stop: impl FnMut(CheckpointId) -> Result<bool>,
) -> Result<Vec<(CheckpointId, Vec<CheckpointId>)>> {
    let mut order = Vec::new();
    // false while its parents are being visited, true once it is in `order`.
    let mut state: HashMap<CheckpointId, bool> = HashMap::new();
    let mut parents_of: HashMap<CheckpointId, Vec<CheckpointId>> = HashMap::new();
    // (id, whether its parents have been visited)
    let mut stack: Vec<(CheckpointId, bool)> = tips.iter().rev().map(|&id| (id, false)).collect();
    while let Some((id, expanded)) = stack.pop() {
        if expanded {
            if state.insert(id, true) == Some(false) {
                order.push((id, parents_of.remove(&id).unwrap_or_default()));
            }
            continue;
        }
        if state.contains_key(&id) || stop(id)? {
            continue;
        }
        state.insert(id, false);
        stack.push((id, true));
        let parents = snapshot.checkpoint(id)?.parents;
        for &parent in parents.iter().rev() {
            match state.get(&parent) {
                Some(false) => {
                    return Err(Error::Corrupt(format!(
                        "checkpoint {parent} is its own ancestor (a parent cycle)"
                    )))
                }
                Some(true) => {}
                None => stack.push((parent, false)),
            }
        }
        parents_of.insert(id, parents);
    }
    Ok(order)
}

/// Writes `order` (parents first) with one `git fast-import` and returns each
/// checkpoint's commit.
fn fast_import(
    repo: &Repo,
    snapshot: &Snapshot,
    order: &[CheckpointId],
    known: &HashMap<CheckpointId, String>,
) -> Result<HashMap<CheckpointId, String>> {
    let chunks = snapshot.chunks()?;
    let marks = run_fast_import(repo, |out, answers| {
        let mut stream = Stream {
            out,
            answers,
            trees: snapshot.trees(None)?,
            chunks: &chunks,
            hasher: snapshot.hasher(),
            last: LastPack::default(),
            next_mark: order.len() as u64 + 1,
            blobs: HashMap::new(),
            links: HashMap::new(),
            names: HashMap::new(),
            buf: Vec::new(),
        };
        stream.write_all(snapshot, order, known)
    })?;
    let out: HashMap<CheckpointId, String> = marks
        .into_iter()
        .filter_map(|(mark, sha)| {
            let index = usize::try_from(mark).ok()?.checked_sub(1)?;
            order.get(index).map(|&id| (id, sha))
        })
        .collect();
    if out.len() != order.len() {
        return Err(Error::Git {
            command: "fast-import".into(),
            message: format!("it named {} of {} commits", out.len(), order.len()),
        });
    }
    Ok(out)
}

/// Runs one `git fast-import`, `write` giving its input and reading its answers to
/// `get-mark`, and returns the object of every mark the input set.
pub(crate) fn run_fast_import(
    repo: &Repo,
    write: impl FnOnce(&mut BufWriter<ChildStdin>, &mut BufReader<ChildStdout>) -> Result<()>,
) -> Result<HashMap<u64, String>> {
    let marks = tempfile::NamedTempFile::new().map_err(|e| Error::io(std::env::temp_dir(), e))?;
    let marks_arg = format!("--export-marks={}", marks.path().display());
    let mut child = Command::new("git")
        .arg("-C")
        .arg(&repo.root)
        .args(["fast-import", "--quiet", "--done", &marks_arg])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Error::Git {
            command: "fast-import".into(),
            message: format!("cannot run git: {e}"),
        })?;
    let mut stderr = child.stderr.take();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        if let Some(err) = stderr.as_mut() {
            let _ = err.read_to_string(&mut text);
        }
        text
    });
    let written = match (child.stdin.take(), child.stdout.take()) {
        (Some(stdin), Some(stdout)) => {
            let mut out = BufWriter::with_capacity(1 << 20, stdin);
            let mut answers = BufReader::new(stdout);
            // Dropping both ends on the way out lets fast-import finish, or fail on
            // the input cut short.
            write(&mut out, &mut answers)
        }
        _ => Ok(()),
    };
    let status = child.wait().map_err(|e| Error::Git {
        command: "fast-import".into(),
        message: e.to_string(),
    })?;
    let errors = reader.join().unwrap_or_default();
    if !status.success() {
        return Err(Error::Git {
            command: "fast-import".into(),
            message: errors.trim().to_string(),
        });
    }
    written?;
    let text = std::fs::read_to_string(marks.path()).map_err(|e| Error::io(marks.path(), e))?;
    Ok(text
        .lines()
        .filter_map(|line| line.strip_prefix(':')?.split_once(' '))
        .filter_map(|(mark, sha)| Some((mark.parse().ok()?, sha.to_string())))
        .collect())
}

/// The fast-import stream being written: commits are marks `1..=order.len()`, blobs
/// the marks after.
struct Stream<'a, W: Write, R: BufRead> {
    out: W,
    /// fast-import's answers to `get-mark`.
    answers: R,
    trees: TreeReader<'a>,
    chunks: &'a ReadChunks,
    hasher: &'a crate::format::chunk::Hasher,
    last: LastPack<'a>,
    next_mark: u64,
    /// File content already written in this stream, by its chunks.
    blobs: HashMap<Vec<ChunkId>, u64>,
    /// Symlink targets already written, by target.
    links: HashMap<Vec<u8>, u64>,
    /// The object of each blob mark asked for with `get-mark`.
    names: HashMap<u64, String>,
    buf: Vec<u8>,
}

impl<W: Write, R: BufRead> Stream<'_, W, R> {
    fn write_all(
        &mut self,
        snapshot: &Snapshot,
        order: &[CheckpointId],
        known: &HashMap<CheckpointId, String>,
    ) -> Result<()> {
        let index: HashMap<CheckpointId, usize> =
            order.iter().enumerate().map(|(i, &id)| (id, i)).collect();
        let commit_ref = |id: &CheckpointId| -> String {
            match index.get(id) {
                Some(i) => format!(":{}", i + 1),
                None => known.get(id).cloned().unwrap_or_default(),
            }
        };
        for (i, &id) in order.iter().enumerate() {
            let record = snapshot.checkpoint(id)?;
            let base = match record.parents.first() {
                Some(parent) => Some(snapshot.checkpoint(*parent)?.tree),
                None => None,
            };
            // The files go first: fast-import takes blobs only outside a commit.
            let mut changes = Vec::new();
            self.diff(base, Some(record.tree), b"", &mut changes)?;
            if record.parents.is_empty() {
                // Without this the scratch ref's last commit would become the parent.
                writeln!(self.out, "reset {SCRATCH_REF}").map_err(io)?;
            }
            let mut blobs = Vec::with_capacity(record.attachments.len());
            for attachment in &record.attachments {
                let mark = self.content(&attachment.chunks)?;
                blobs.push(self.object_of(mark)?);
            }
            let message = message::encode(id, &record, Some(&blobs));
            let secs = record.time_ns.div_euclid(1_000_000_000);
            writeln!(self.out, "commit {SCRATCH_REF}\nmark :{}", i + 1).map_err(io)?;
            writeln!(self.out, "author {IDENTITY} {secs} +0000").map_err(io)?;
            writeln!(self.out, "committer {IDENTITY} {secs} +0000").map_err(io)?;
            writeln!(self.out, "data {}\n{message}", message.len()).map_err(io)?;
            for (n, parent) in record.parents.iter().enumerate() {
                let word = if n == 0 { "from" } else { "merge" };
                writeln!(self.out, "{word} {}", commit_ref(parent)).map_err(io)?;
            }
            self.out.write_all(&changes).map_err(io)?;
            writeln!(self.out).map_err(io)?;
        }
        writeln!(self.out, "reset {SCRATCH_REF}\n\ndone").map_err(io)?;
        self.out.flush().map_err(io)
    }

    /// Appends to `changes` the `M`/`D` lines that turn tree `old` into tree `new` at
    /// `prefix`, writing the blobs they need; equal subtrees are skipped by id.
    fn diff(
        &mut self,
        old: Option<TreeId>,
        new: Option<TreeId>,
        prefix: &[u8],
        changes: &mut Vec<u8>,
    ) -> Result<()> {
        if old == new {
            return Ok(());
        }
        let old_tree = match old {
            Some(id) => self.trees.get(id)?,
            None => Tree::default(),
        };
        let new_tree = match new {
            Some(id) => self.trees.get(id)?,
            None => Tree::default(),
        };
        let old_by_name: HashMap<&[u8], &Node> = old_tree
            .entries
            .iter()
            .map(|e| (e.name.as_slice(), &e.node))
            .collect();
        let new_names: HashSet<&[u8]> =
            new_tree.entries.iter().map(|e| e.name.as_slice()).collect();
        for entry in &old_tree.entries {
            if !new_names.contains(entry.name.as_slice()) {
                changes.extend_from_slice(b"D ");
                quote_path(changes, prefix, &entry.name);
                changes.push(b'\n');
            }
        }
        for entry in &new_tree.entries {
            let mut path = prefix.to_vec();
            path.extend_from_slice(&entry.name);
            let before = old_by_name.get(entry.name.as_slice()).copied();
            match (&entry.node, before) {
                (Node::Dir { tree }, Some(Node::Dir { tree: was })) => {
                    path.push(b'/');
                    self.diff(Some(*was), Some(*tree), &path, changes)?;
                }
                (Node::Dir { tree }, other) => {
                    if other.is_some() {
                        changes.extend_from_slice(b"D ");
                        quote_path(changes, prefix, &entry.name);
                        changes.push(b'\n');
                    }
                    path.push(b'/');
                    self.diff(None, Some(*tree), &path, changes)?;
                }
                (node, other) => {
                    if other == Some(node) {
                        continue;
                    }
                    let (mode, mark) = self.blob(node)?;
                    write!(changes, "M {mode} :{mark} ").map_err(io)?;
                    quote_path(changes, prefix, &entry.name);
                    changes.push(b'\n');
                }
            }
        }
        Ok(())
    }

    /// The git mode of a file or symlink and the mark of its blob, writing the blob the
    /// first time its content comes up.
    fn blob(&mut self, node: &Node) -> Result<(&'static str, u64)> {
        match node {
            Node::Symlink { target } => {
                if let Some(&mark) = self.links.get(target) {
                    return Ok(("120000", mark));
                }
                let mark = self.next_mark;
                self.next_mark += 1;
                self.links.insert(target.clone(), mark);
                self.buf.clear();
                self.buf.extend_from_slice(target);
                self.write_buf(mark)?;
                Ok(("120000", mark))
            }
            Node::File { chunks, .. } | Node::FileWithMode { chunks, .. } => {
                let mode = if node.is_executable() {
                    "100755"
                } else {
                    "100644"
                };
                Ok((mode, self.content(chunks)?))
            }
            Node::Dir { .. } => unreachable!("directories are walked, not written"),
        }
    }

    /// The mark of the blob holding the content of `chunks`, writing it the first time.
    fn content(&mut self, chunks: &[ChunkId]) -> Result<u64> {
        if let Some(&mark) = self.blobs.get(chunks) {
            return Ok(mark);
        }
        let mark = self.next_mark;
        self.next_mark += 1;
        self.buf.clear();
        for &id in chunks {
            self.chunks
                .read(self.hasher, id, &mut self.buf, &mut self.last)?;
        }
        self.blobs.insert(chunks.to_vec(), mark);
        self.write_buf(mark)?;
        Ok(mark)
    }

    /// Writes `buf` as blob `mark`.
    fn write_buf(&mut self, mark: u64) -> Result<()> {
        writeln!(self.out, "blob\nmark :{mark}\ndata {}", self.buf.len()).map_err(io)?;
        self.out.write_all(&self.buf).map_err(io)?;
        writeln!(self.out).map_err(io)
    }

    /// The object id of blob `mark`, asked of fast-import (`get-mark`) the first time.
    fn object_of(&mut self, mark: u64) -> Result<String> {
        if let Some(sha) = self.names.get(&mark) {
            return Ok(sha.clone());
        }
        writeln!(self.out, "get-mark :{mark}").map_err(io)?;
        self.out.flush().map_err(io)?;
        let mut line = String::new();
        self.answers.read_line(&mut line).map_err(io)?;
        let sha = line.trim().to_string();
        if sha.is_empty() || !sha.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(Error::Git {
                command: "fast-import".into(),
                message: format!("get-mark :{mark} answered '{sha}'"),
            });
        }
        self.names.insert(mark, sha.clone());
        Ok(sha)
    }
}

/// `prefix` + `name` as a fast-import path: C-quoted, with quotes, backslashes and
/// control bytes escaped in octal and every other byte as it is.
pub(crate) fn quote_path(out: &mut Vec<u8>, prefix: &[u8], name: &[u8]) {
    out.push(b'"');
    for &b in prefix.iter().chain(name) {
        match b {
            b'"' | b'\\' => out.extend_from_slice(&[b'\\', b]),
            0..=0x1f | 0x7f => out.extend_from_slice(format!("\\{b:03o}").as_bytes()),
            _ => out.push(b),
        }
    }
    out.push(b'"');
}

fn io(e: std::io::Error) -> Error {
    Error::Git {
        command: "fast-import".into(),
        message: format!("writing its input: {e}"),
    }
}

/// A checkpoint made into an ordinary commit of the repository's history.
#[derive(Clone, Debug)]
pub struct Promoted {
    /// The new commit.
    pub commit: String,
    /// Its parent, if it has one.
    pub parent: Option<String>,
    /// The branch made at it, if one was asked for.
    pub branch: Option<String>,
}

/// Makes checkpoint `id` a commit of the repository's own history: the checkpoint's
/// tree, the user's identity (`git commit-tree`), and as parent the repository's HEAD
/// when the checkpoint was saved, or its HEAD now with `onto`. With `branch`, creates
/// that branch at it (an existing branch is refused). The index, the worktree and HEAD
/// are not touched.
pub fn promote(
    repo: &Repo,
    store: &Store,
    id: CheckpointId,
    branch: Option<&str>,
    onto: bool,
) -> Result<Promoted> {
    let record = store.snapshot()?.checkpoint(id)?;
    let exported = export(repo, store, &[id])?;
    let commit = exported
        .commits
        .first()
        .ok_or_else(|| Error::Internal(format!("checkpoint {id} was not exported")))?;
    let tree = text(super::git_ok(
        &repo.root,
        &["rev-parse", &format!("{commit}^{{tree}}")],
        b"",
    )?);
    let parent = if onto {
        let head = super::run_git(&repo.root, &["rev-parse", "--verify", "-q", "HEAD"], b"")?;
        head.ok.then(|| text(head.stdout))
    } else {
        match &record.git_head {
            Some(head) if super::missing_commits(repo, std::slice::from_ref(head))?.is_empty() => {
                Some(head.clone())
            }
            Some(head) => {
                return Err(Error::InvalidArgument(format!(
                    "the commit the checkpoint was saved on ({head}) is not in this repository; use --onto to build on the current HEAD"
                )))
            }
            None => None,
        }
    };
    if let Some(name) = branch {
        super::git_ok(&repo.root, &["check-ref-format", "--branch", name], b"")?;
    }
    let mut message = if record.message.trim().is_empty() {
        format!(
            "Checkpoint {}",
            &id.hex()[..crate::model::revision::MIN_SHORT_ID]
        )
    } else {
        record.message.trim_end().to_string()
    };
    message.push_str(&format!("\n\nCheckpoint-Id: {}\n", id.hex()));
    let mut args = vec!["commit-tree", tree.as_str()];
    if let Some(parent) = &parent {
        args.extend(["-p", parent.as_str()]);
    }
    args.extend(["-F", "-"]);
    let new = text(super::git_ok(&repo.root, &args, message.as_bytes())?);
    if let Some(name) = branch {
        let target = format!("refs/heads/{name}");
        super::git_ok(
            &repo.root,
            &[
                "update-ref",
                "-m",
                "git checkpoint export",
                &target,
                &new,
                "",
            ],
            b"",
        )
        .map_err(|_| Error::InvalidArgument(format!("branch '{name}' already exists")))?;
    }
    Ok(Promoted {
        commit: new,
        parent,
        branch: branch.map(str::to_string),
    })
}

/// Git's one-line answer, without its newline.
fn text(bytes: Vec<u8>) -> String {
    String::from_utf8_lossy(&bytes).trim().to_string()
}
