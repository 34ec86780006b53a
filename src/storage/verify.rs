//! Checking a store: the file itself (redb's page checksums), then every record: each
//! checkpoint decodes, its parents exist, every tree it reaches exists, decodes (rebuilt
//! from its delta chain, whose bases are checked too), hashes to its id, is encoded as
//! saves encode it, has safe names in strictly increasing order
//! and files whose chunk lists fit their sizes (by count, and by the lengths the chunk
//! index records), every chunk those trees name exists, and the tree expands to no more
//! files and bytes than the checkpoint records (added up once per tree, so trees shared
//! at every level cost nothing more); branches, HEAD and pins point at checkpoints;
//! stat-cache entries name existing chunks (a save would reuse them). With `read_data`,
//! every chunk is also read, decompressed, re-hashed and measured against its recorded
//! length.
//!
//! Damage is reported, never fatal: the report lists each damaged object and the
//! checkpoints that no longer restore exactly because of it.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::Path;
use std::time::Duration;

use rayon::prelude::*;
use redb::{ReadableDatabase, ReadableTable};

use super::tables::{BRANCHES, CHECKPOINTS, CHUNKS, PINS, STATE, STAT_CACHE, TREES};
use super::tree_codec;
use super::Store;
use crate::format::chunk::Hasher;
use crate::format::codec;
use crate::model::stat_cache::CacheEntry;
use crate::model::tree::{chunk_sum_mismatch, tree_problem, Node, Tree, TreeProblem, MAX_DEPTH};
use crate::model::{Checkpoint, Head};
use crate::storage::pack::{self, LastPack, ReadChunks};
use crate::{CheckpointId, ChunkId, Error, Result, TreeId};

/// One damaged object.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Problem {
    /// What is damaged: `"chunk <id>"`, `"tree <id>"`, `"checkpoint <id>"`,
    /// `"branch <name>"`, `"HEAD"`, `"pin <id>"`, `"stat cache <path>"`, `"file"` or
    /// `"records"` (the tables as a whole).
    pub object: String,
    /// What is wrong with it.
    pub message: String,
}

/// What a verify found.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Every problem, sorted.
    pub problems: Vec<Problem>,
    /// Checkpoints that are damaged, reach damage, or lost a parent, sorted.
    pub affected: Vec<CheckpointId>,
    /// Checkpoints checked.
    pub checkpoints: usize,
    /// Trees checked (those some checkpoint reaches).
    pub trees: usize,
    /// Chunks in the store.
    pub chunks: usize,
    /// Chunks read, decompressed and re-hashed (with `read_data`).
    pub chunks_read: usize,
    /// Stored bytes read for that.
    pub bytes_read: u64,
    /// Trees no checkpoint reaches (not damage: gc deletes them).
    pub unreachable_trees: usize,
    /// Chunks nothing references (not damage: gc deletes them).
    pub unreachable_chunks: usize,
    /// Stored bytes of the unreachable trees and chunks: what a gc would free.
    pub unreachable_bytes: u64,
    /// Whether the records could be read and checked at all.
    pub opened: bool,
}

impl Report {
    /// Whether nothing is damaged.
    pub fn ok(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Problems keyed by object, so that one object is reported once.
#[derive(Default)]
struct Findings {
    problems: BTreeMap<String, String>,
    affected: BTreeSet<CheckpointId>,
}

impl Findings {
    fn add(&mut self, object: String, message: impl Into<String>) {
        self.problems
            .entry(object)
            .or_insert_with(|| message.into());
    }

    fn into_report(self, report: &mut Report) {
        report.problems = self
            .problems
            .into_iter()
            .map(|(object, message)| Problem { object, message })
            .collect();
        report.affected = self.affected.into_iter().collect();
    }
}

/// Verifies the store at `path`, waiting for another process as [`Store::open`] does.
/// Fails only when the store cannot be looked at for reasons other than damage (busy,
/// written by a newer version); damage, including a file that does not open, is in the
/// report.
pub fn verify(
    path: &Path,
    timeout: Duration,
    on_wait: &mut dyn FnMut(),
    read_data: bool,
) -> Result<Report> {
    if !path.exists() {
        // No store yet: the check makes the empty one every command would make.
        return verify_file(path, timeout, on_wait, read_data);
    }
    // A check leaves the store as it found it, and works where it may not write: redb's
    // page pass opens a file for writing and repairs what it can, so it runs on a private
    // copy, taken while a read-only open keeps writers out.
    let copy = {
        let held = catch_quietly(|| crate::storage::hold_read_only(path, timeout, on_wait))
            .unwrap_or(Ok(None))?;
        let copy = tempfile::Builder::new()
            .prefix("git-checkpoint-verify-")
            .tempfile()
            .map_err(|e| Error::io(std::env::temp_dir(), e))?;
        std::fs::copy(path, copy.path()).map_err(|e| {
            Error::io(
                copy.path(),
                std::io::Error::new(
                    e.kind(),
                    format!("copying the store to check it: {e} (TMPDIR names where)"),
                ),
            )
        })?;
        // The copy took the store's permissions; the check opens it for writing.
        std::fs::set_permissions(
            copy.path(),
            std::os::unix::fs::PermissionsExt::from_mode(0o600),
        )
        .map_err(|e| Error::io(copy.path(), e))?;
        drop(held);
        copy
    };
    let mut report = verify_file(copy.path(), timeout, on_wait, read_data)?;
    // Name the store, not the copy, in what the check says.
    let (copied, real) = (
        copy.path().display().to_string(),
        path.display().to_string(),
    );
    for problem in &mut report.problems {
        problem.message = problem.message.replace(&copied, &real);
    }
    Ok(report)
}

/// [`verify`] of the store file at `path` itself, which it may repair.
fn verify_file(
    path: &Path,
    timeout: Duration,
    on_wait: &mut dyn FnMut(),
    read_data: bool,
) -> Result<Report> {
    let mut report = Report::default();
    let mut findings = Findings::default();
    // redb takes an empty file for a new store; an existing empty store file is one that
    // lost everything.
    if std::fs::metadata(path).is_ok_and(|m| m.len() == 0) {
        findings.add("file".into(), "the store file is empty (truncated?)");
        findings.into_report(&mut report);
        return Ok(report);
    }
    // redb's own documentation allows a plain open of a file damaged outside redb to
    // panic, so the open and the checksum pass run under `catch_quietly`.
    let opened = catch_quietly(|| Store::open(path, timeout, on_wait))
        .unwrap_or_else(|panic| Err(Error::Corrupt(panic)));
    let mut store = match opened {
        Ok(store) => store,
        Err(e @ (Error::StoreBusy { .. } | Error::NewerFormat { .. })) => return Err(e),
        Err(e) => {
            findings.add("file".into(), format!("the store does not open: {e}"));
            findings.into_report(&mut report);
            return Ok(report);
        }
    };
    // redb verifies every page checksum of the committed trees; it repairs what it can
    // (an interrupted commit) and refuses what it cannot.
    let checked = catch_quietly(|| store.db.check_integrity())
        .unwrap_or_else(|panic| Err(redb::StorageError::Corrupted(panic).into()));
    let mut read_data = read_data;
    match checked {
        Ok(true) => {}
        Ok(false) => findings.add(
            "file".into(),
            "page checksums did not match; redb can repair the file, possibly by going back to an earlier commit (the next command that writes the store does)",
        ),
        Err(e) => {
            findings.add("file".into(), format!("the file is damaged: {e}"));
            // redb refuses the file as a whole. Read the records anyway, re-hashing every
            // chunk, to name what is damaged and the checkpoints it breaks.
            drop(store);
            store = match catch_quietly(|| Store::open(path, timeout, on_wait)) {
                Ok(Ok(store)) => store,
                _ => {
                    findings.into_report(&mut report);
                    return Ok(report);
                }
            };
            read_data = true;
        }
    }
    // Reading a damaged file may still fail or, inside redb, panic: that is reported too.
    match catch_quietly(|| check_records(&store, read_data, &mut report, &mut findings)) {
        Ok(Ok(())) => report.opened = true,
        Ok(Err(e)) => findings.add("records".into(), format!("cannot be read: {e}")),
        Err(panic) => findings.add("records".into(), format!("cannot be read: {panic}")),
    }
    findings.into_report(&mut report);
    Ok(report)
}

fn check_records(
    store: &Store,
    read_data: bool,
    report: &mut Report,
    findings: &mut Findings,
) -> Result<()> {
    let txn = store.db.begin_read()?;
    let checkpoints = txn.open_table(CHECKPOINTS)?;
    let mut records: Vec<(CheckpointId, Checkpoint)> = Vec::new();
    let mut ids = HashSet::new();
    for item in checkpoints.iter()? {
        let (key, value) = item?;
        let id = CheckpointId(key.value());
        ids.insert(id);
        match codec::decode::<Checkpoint>(value.value(), &format!("checkpoint {id}")) {
            Ok(record) => records.push((id, record)),
            Err(e) => {
                findings.add(format!("checkpoint {id}"), describe(e));
                findings.affected.insert(id);
            }
        }
    }
    report.checkpoints = ids.len();
    for (id, record) in &records {
        for parent in record.parents.iter().filter(|p| !ids.contains(p)) {
            findings.add(
                format!("checkpoint {id}"),
                format!("its parent {parent} is missing"),
            );
            findings.affected.insert(*id);
        }
    }
    for id in parent_cycles(&records) {
        findings.add(
            format!("checkpoint {id}"),
            "its ancestry holds a parent cycle",
        );
        findings.affected.insert(id);
    }
    check_refs(&txn, &ids, findings)?;

    let chunks_table = txn.open_table(CHUNKS)?;
    // Each chunk's stored length, for the bytes a gc would free, and its content length
    // as the index records it (where it does), against which files' sizes are checked
    // without reading a chunk.
    let mut chunk_ids: HashMap<ChunkId, (u64, Option<u64>)> = HashMap::new();
    // In pack order, so that each reading thread goes through the packs in sequence.
    let mut in_pack_order = Vec::new();
    let mut deltas = Vec::new();
    for item in chunks_table.iter()? {
        let (key, value) = item?;
        let id = ChunkId(key.value());
        let entry = pack::Entry::parse(id, value.value());
        if let Some(delta) = entry.as_ref().ok().and_then(pack::Entry::delta) {
            deltas.push((id, delta.base));
        }
        let lengths = match &entry {
            Ok(entry) => (entry.stored_len(), entry.raw_len()),
            Err(_) => (0, None),
        };
        chunk_ids.insert(id, lengths);
        let place = match entry {
            Ok(pack::Entry::Packed(at)) => (at.pack, at.offset),
            _ => (u64::MAX, 0),
        };
        in_pack_order.push((place, id));
    }
    in_pack_order.sort_unstable();
    report.chunks = chunk_ids.len();
    let mut bad_chunks: HashSet<ChunkId> = HashSet::new();
    // Without reading data, a delta whose base is gone is still found: it cannot decode.
    // (Reading finds it too, with the rest of the chain's damage.)
    for &(id, base) in deltas.iter().filter(|_| !read_data) {
        if !chunk_ids.contains_key(&base) {
            findings.add(
                format!("chunk {id}"),
                format!("its delta base {base} is missing"),
            );
            bad_chunks.insert(id);
        }
    }
    if read_data {
        let chunks = ReadChunks::open(&txn)?;
        let ids: Vec<ChunkId> = in_pack_order.iter().map(|(_, id)| *id).collect();
        let bad = read_chunks(&chunks, &store.hasher, &ids, &chunk_ids, report)?;
        for (id, message) in bad {
            findings.add(format!("chunk {id}"), message);
            bad_chunks.insert(id);
        }
    }
    let mut chunk_ok = |id: ChunkId, findings: &mut Findings| -> bool {
        if !chunk_ids.contains_key(&id) {
            findings.add(format!("chunk {id}"), "missing");
            false
        } else {
            !bad_chunks.contains(&id)
        }
    };

    let mut trees = check_trees(
        &txn.open_table(TREES)?,
        &store.hasher,
        records.iter().map(|(_, r)| r.tree),
        &mut chunk_ok,
        &|c| chunk_ids.get(&c).and_then(|(_, raw)| *raw),
        findings,
    )?;
    report.trees = trees.reached;
    report.unreachable_trees = trees.unreachable;
    report.unreachable_bytes = trees.unreachable_bytes;
    let mut referenced: HashSet<ChunkId> = std::mem::take(&mut trees.chunks);
    for (id, record) in &records {
        let mut attachments_ok = true;
        for &c in record.attachments.iter().flat_map(|a| &a.chunks) {
            referenced.insert(c);
            attachments_ok &= chunk_ok(c, findings);
        }
        if trees.damaged.contains(&record.tree) || !attachments_ok {
            findings.affected.insert(*id);
        }
        // What the tree expands to, added up once per tree: more than the record says
        // makes every command that expands it stop.
        let size = trees.expansion(record.tree);
        let problem = if size.files > record.files || size.bytes > record.bytes {
            Some(format!(
                "its tree holds {} files and symlinks of {} bytes, more than its record says ({} files, {} bytes)",
                size.files, size.bytes, record.files, record.bytes
            ))
        } else if size.height > MAX_DEPTH {
            Some(format!(
                "its tree nests directories deeper than {MAX_DEPTH}"
            ))
        } else {
            None
        };
        if let Some(problem) = problem {
            findings.add(format!("checkpoint {id}"), problem);
            findings.affected.insert(*id);
        }
    }
    // A referenced chunk stored as a delta needs its bases, down the chain: they are
    // live data, which gc keeps (invariant 18), not garbage.
    super::reach::add_bases(&mut referenced, &deltas.into_iter().collect());
    for (_, (stored, _)) in chunk_ids.iter().filter(|(id, _)| !referenced.contains(id)) {
        report.unreachable_chunks += 1;
        report.unreachable_bytes += stored;
    }

    for item in txn.open_table(STAT_CACHE)?.iter()? {
        let (path, value) = item?;
        // An entry that does not decode is only a missed shortcut; one that names a
        // missing chunk would make the next save record that chunk.
        if let Ok(entry) = codec::decode::<CacheEntry>(value.value(), "stat cache entry") {
            if let Some(missing) = entry.chunks.iter().find(|c| !chunk_ids.contains_key(c)) {
                findings.add(
                    format!("stat cache {}", String::from_utf8_lossy(path.value())),
                    format!("names missing chunk {missing} (the next save would record it)"),
                );
            }
        }
    }
    Ok(())
}

/// An error as a problem description: without the "the store is damaged" that every
/// line of the report would otherwise repeat.
fn describe(e: Error) -> String {
    match e {
        Error::Corrupt(message) => message,
        e => e.to_string(),
    }
}

/// Runs `f`, turning a panic inside it into its message. The default hook's printout is
/// suppressed meanwhile: the caller reports the damage in its own words.
fn catch_quietly<T>(f: impl FnOnce() -> T) -> std::result::Result<T, String> {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    std::panic::set_hook(hook);
    result.map_err(|payload| {
        payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "the storage engine gave up on the file".into())
    })
}

/// Branches, HEAD and pins must name existing checkpoints.
fn check_refs(
    txn: &redb::ReadTransaction,
    ids: &HashSet<CheckpointId>,
    findings: &mut Findings,
) -> Result<()> {
    for item in txn.open_table(BRANCHES)?.iter()? {
        let (name, tip) = item?;
        let tip = CheckpointId(tip.value());
        if !ids.contains(&tip) {
            findings.add(
                format!("branch {}", name.value()),
                format!("points at missing checkpoint {tip}"),
            );
        }
    }
    match super::records::head(&txn.open_table(STATE)?) {
        Ok(Head::Detached(id)) if !ids.contains(&id) => {
            findings.add("HEAD".into(), format!("points at missing checkpoint {id}"))
        }
        Ok(_) => {}
        Err(e) => findings.add("HEAD".into(), describe(e)),
    }
    for item in txn.open_table(PINS)?.iter()? {
        let id = CheckpointId(item?.0.value());
        if !ids.contains(&id) {
            findings.add(format!("pin {id}"), "pins a missing checkpoint");
        }
    }
    Ok(())
}

/// Reads, decompresses and re-hashes the chunks `ids`, in parallel; returns the bad ones.
fn read_chunks(
    chunks: &ReadChunks,
    hasher: &Hasher,
    ids: &[ChunkId],
    lengths: &HashMap<ChunkId, (u64, Option<u64>)>,
    report: &mut Report,
) -> Result<Vec<(ChunkId, String)>> {
    let results: Vec<(u64, Option<(ChunkId, String)>)> = ids
        .par_iter()
        .map_init(
            || (Vec::new(), LastPack::default()),
            |(buf, last), &id| -> Result<_> {
                buf.clear();
                let (stored_len, recorded) = lengths.get(&id).copied().unwrap_or((0, None));
                // Through the reader restore uses, so that a delta is checked with the
                // bases it needs (and a missing or damaged base is this chunk's damage).
                let (len, bad) = match chunks.read(hasher, id, buf, last) {
                    // Files' sizes are checked against the recorded lengths: they must
                    // be the content's.
                    Ok(()) => match recorded.filter(|&n| n != buf.len() as u64) {
                        Some(n) => (
                            stored_len,
                            Some(Error::Corrupt(format!(
                                "holds {} bytes, but its index entry records {n}",
                                buf.len()
                            ))),
                        ),
                        None => (stored_len, None),
                    },
                    // A missing pack or a range outside it: this chunk is damaged.
                    Err(e @ Error::Corrupt(_)) => (0, Some(e)),
                    Err(e) => return Err(e),
                };
                let bad = bad.map(|e| {
                    let message = describe(e);
                    let shorter = message.strip_prefix(&format!("chunk {id} "));
                    (id, shorter.map(str::to_string).unwrap_or(message))
                });
                Ok((len, bad))
            },
        )
        .collect::<Result<_>>()?;
    report.chunks_read = results.len();
    report.bytes_read = results.iter().map(|(n, _)| n).sum();
    Ok(results.into_iter().filter_map(|(_, bad)| bad).collect())
}

/// What the tree walk found.
struct TreeWalk {
    /// Trees reached.
    reached: usize,
    /// Trees in the table that nothing reaches.
    unreachable: usize,
    /// Their stored bytes.
    unreachable_bytes: u64,
    /// Trees that are damaged or have damage below them.
    damaged: HashSet<TreeId>,
    /// Chunks the reached trees name.
    chunks: HashSet<ChunkId>,
    /// What each reached tree expands to, once for all.
    expansions: HashMap<TreeId, Expansion>,
}

impl TreeWalk {
    /// What tree `id` expands to (nothing, if it could not be read).
    fn expansion(&self, id: TreeId) -> Expansion {
        self.expansions.get(&id).copied().unwrap_or_default()
    }
}

/// What a tree expands to: files and symlinks, bytes of files, and the most directories
/// nested below it. Saturating: a crafted store can make these astronomical.
#[derive(Clone, Copy, Debug, Default)]
struct Expansion {
    files: u64,
    bytes: u64,
    height: usize,
}

impl Expansion {
    /// A tree on a cycle (which only a tree stored under a key not its hash can make):
    /// it expands without end.
    const ENDLESS: Expansion = Expansion {
        files: u64::MAX,
        bytes: u64::MAX,
        height: usize::MAX,
    };
}

/// One reached tree's own part of its expansion, and its subdirectories.
#[derive(Default)]
struct TreeSummary {
    files: u64,
    bytes: u64,
    /// Subdirectory trees, once per entry naming them.
    dirs: Vec<TreeId>,
    empty: bool,
}

/// Checkpoints whose ancestry never ends: on a parent cycle or descending from one, which
/// only a crafted or damaged store can hold (an id is a hash over its parents' ids).
/// Kahn's algorithm: what is left once every checkpoint whose parents are all settled
/// has been settled.
fn parent_cycles(records: &[(CheckpointId, Checkpoint)]) -> Vec<CheckpointId> {
    let known: HashSet<CheckpointId> = records.iter().map(|(id, _)| *id).collect();
    let mut children: HashMap<CheckpointId, Vec<CheckpointId>> = HashMap::new();
    let mut pending: HashMap<CheckpointId, usize> = HashMap::new();
    for (id, record) in records {
        let parents: Vec<CheckpointId> = record
            .parents
            .iter()
            .copied()
            .filter(|p| known.contains(p))
            .collect();
        pending.insert(*id, parents.len());
        for parent in parents {
            children.entry(parent).or_default().push(*id);
        }
    }
    let mut ready: Vec<CheckpointId> = pending
        .iter()
        .filter(|(_, n)| **n == 0)
        .map(|(id, _)| *id)
        .collect();
    while let Some(id) = ready.pop() {
        pending.remove(&id);
        for child in children.get(&id).into_iter().flatten() {
            if let Some(n) = pending.get_mut(child) {
                *n -= 1;
                if *n == 0 {
                    ready.push(*child);
                }
            }
        }
    }
    let mut stuck: Vec<CheckpointId> = pending.into_keys().collect();
    stuck.sort();
    stuck
}

/// Loads every tree reachable from `roots` once, notes what is wrong with each, then
/// spreads damage up to every tree above it (which also copes with cycles a crafted
/// store could hold), and adds up what each tree expands to, bottom-up, each tree once.
///
/// A tree is damaged when it is missing or does not decode (a delta whose chain is
/// broken included), does not hash to its id, is
/// not encoded the way saves encode trees, has an unsafe, duplicated or out-of-order
/// name, has a file whose chunk list its size does not allow or whose chunks (by the
/// index's lengths, `raw_len`) do not add up to its size, names a missing chunk, or
/// names an empty tree as a subdirectory.
fn check_trees(
    table: &impl ReadableTable<u128, &'static [u8]>,
    hasher: &Hasher,
    roots: impl Iterator<Item = TreeId>,
    chunk_ok: &mut impl FnMut(ChunkId, &mut Findings) -> bool,
    raw_len: &impl Fn(ChunkId) -> Option<u64>,
    findings: &mut Findings,
) -> Result<TreeWalk> {
    let mut parents_of: HashMap<TreeId, Vec<TreeId>> = HashMap::new();
    let mut seen: HashSet<TreeId> = HashSet::new();
    let mut damaged_here: Vec<TreeId> = Vec::new();
    let mut chunks = HashSet::new();
    let mut summaries: HashMap<TreeId, TreeSummary> = HashMap::new();
    // Subdirectory entries (parent, name, tree), to find empty trees named as one.
    let mut dir_entries: Vec<(TreeId, Vec<u8>, TreeId)> = Vec::new();
    let roots: Vec<TreeId> = roots.collect();
    let mut stack = roots.clone();
    // Trees that reached trees are stored as deltas of: needed, and checked, but not
    // walked (what is below them is needed only where a checkpoint reaches it).
    let mut bases: Vec<TreeId> = Vec::new();
    while let Some(id) = stack.pop() {
        if !seen.insert(id) {
            continue;
        }
        let object = format!("tree {id}");
        let tree: Tree = match tree_codec::load(table, id, Some(hasher)) {
            Ok(None) => {
                findings.add(object, "missing");
                damaged_here.push(id);
                continue;
            }
            Ok(Some(loaded)) => {
                if let Some(problem) = loaded.problem {
                    findings.add(object.clone(), problem);
                    damaged_here.push(id);
                }
                bases.extend(loaded.chain);
                loaded.tree
            }
            Err(e @ Error::Corrupt(_)) => {
                findings.add(object, describe(e));
                damaged_here.push(id);
                continue;
            }
            Err(e) => return Err(e),
        };
        let mut ok = true;
        match tree_problem(&tree, &hasher.params()) {
            Some(TreeProblem::Unsafe(name)) => {
                findings.add(
                    object.clone(),
                    format!("holds the unsafe name {:?}", String::from_utf8_lossy(&name)),
                );
                ok = false;
            }
            Some(TreeProblem::Other(problem)) => {
                findings.add(object.clone(), problem);
                ok = false;
            }
            None => {}
        }
        let mut summary = TreeSummary {
            empty: tree.entries.is_empty(),
            ..TreeSummary::default()
        };
        for entry in tree.entries {
            match entry.node {
                Node::File {
                    size, chunks: ids, ..
                }
                | Node::FileWithMode {
                    size, chunks: ids, ..
                } => {
                    summary.files += 1;
                    summary.bytes = summary.bytes.saturating_add(size);
                    if let Some(sum) = chunk_sum_mismatch(size, &ids, raw_len) {
                        findings.add(
                            object.clone(),
                            format!(
                                "has file {:?} of size {size} whose chunks hold {sum} bytes",
                                String::from_utf8_lossy(&entry.name)
                            ),
                        );
                        ok = false;
                    }
                    for c in ids {
                        ok &= chunk_ok(c, findings);
                        chunks.insert(c);
                    }
                }
                Node::Dir { tree } => {
                    parents_of.entry(tree).or_default().push(id);
                    stack.push(tree);
                    summary.dirs.push(tree);
                    dir_entries.push((id, entry.name, tree));
                }
                Node::Symlink { .. } => summary.files += 1,
            }
        }
        summaries.insert(id, summary);
        if !ok {
            damaged_here.push(id);
        }
    }
    for (parent, name, tree) in dir_entries {
        if summaries.get(&tree).is_some_and(|s| s.empty) {
            findings.add(
                format!("tree {parent}"),
                format!(
                    "names the empty tree {tree} as directory {:?} (saves never record one)",
                    String::from_utf8_lossy(&name)
                ),
            );
            damaged_here.push(parent);
        }
    }
    // A base that is missing or damaged is already its dependants' damage (their chain
    // reads it); its own check names it too.
    while let Some(id) = bases.pop() {
        if !seen.insert(id) {
            continue;
        }
        match tree_codec::load(table, id, Some(hasher)) {
            Ok(None) => findings.add(format!("tree {id}"), "missing"),
            Ok(Some(loaded)) => {
                if let Some(problem) = loaded.problem {
                    findings.add(format!("tree {id}"), problem);
                }
            }
            Err(e @ Error::Corrupt(_)) => findings.add(format!("tree {id}"), describe(e)),
            Err(e) => return Err(e),
        }
    }
    let mut damaged: HashSet<TreeId> = HashSet::new();
    while let Some(id) = damaged_here.pop() {
        if damaged.insert(id) {
            damaged_here.extend(parents_of.get(&id).into_iter().flatten());
        }
    }
    let mut unreachable = 0;
    let mut unreachable_bytes = 0;
    for item in table.iter()? {
        let (id, value) = item?;
        if !seen.contains(&TreeId(id.value())) {
            unreachable += 1;
            unreachable_bytes += value.value().len() as u64;
        }
    }
    Ok(TreeWalk {
        reached: seen.len(),
        unreachable,
        unreachable_bytes,
        damaged,
        chunks,
        expansions: expansions(&summaries, &roots),
    })
}

/// What each tree under `roots` expands to, from the trees' own parts: a depth-first
/// walk that finishes each tree after its subdirectories, each tree once, so that trees
/// shared at every level cost no more than the trees themselves. A tree that could not
/// be read counts as empty; a cycle as endless.
fn expansions(
    summaries: &HashMap<TreeId, TreeSummary>,
    roots: &[TreeId],
) -> HashMap<TreeId, Expansion> {
    let mut done: HashMap<TreeId, Expansion> = HashMap::new();
    // Trees whose subdirectories are being walked: one met again is on a cycle.
    let mut open: HashSet<TreeId> = HashSet::new();
    let mut stack: Vec<(TreeId, bool)> = roots.iter().map(|&id| (id, false)).collect();
    while let Some((id, children_done)) = stack.pop() {
        if done.contains_key(&id) {
            continue;
        }
        let Some(summary) = summaries.get(&id) else {
            done.insert(id, Expansion::default());
            continue;
        };
        if !children_done {
            if open.insert(id) {
                stack.push((id, true));
                stack.extend(summary.dirs.iter().map(|&d| (d, false)));
            }
            continue;
        }
        let mut total = Expansion {
            files: summary.files,
            bytes: summary.bytes,
            height: 0,
        };
        for dir in &summary.dirs {
            // Every subdirectory was finished before this tree, unless it is on a cycle.
            let below = done.get(dir).copied().unwrap_or(Expansion::ENDLESS);
            total.files = total.files.saturating_add(below.files);
            total.bytes = total.bytes.saturating_add(below.bytes);
            total.height = total.height.max(below.height.saturating_add(1));
        }
        open.remove(&id);
        done.insert(id, total);
    }
    done
}
