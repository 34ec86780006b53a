//! Checkpoints, branches and HEAD, and the revision language that names checkpoints.
//!
//! Revisions: a full id or a unique hex prefix of 4+ digits, a branch name, `@` for the
//! current checkpoint, each optionally followed by `~N` (N-th first-parent ancestor;
//! `~` alone means `~1`, and suffixes chain: `@~2~1`).

use std::collections::{HashMap, HashSet};

use redb::ReadableTable;
use serde::{Deserialize, Serialize};

use crate::codec;
use crate::store::{BRANCHES, CHECKPOINTS, STATE};
use crate::{Error, Id, Result};

/// The default branch of a new store.
pub const DEFAULT_BRANCH: &str = "main";
/// Shortest abbreviation printed or accepted.
pub const MIN_SHORT_ID: usize = 7;
/// Shortest hex prefix accepted as a revision.
pub const MIN_PREFIX: usize = 4;

/// A file stored with a checkpoint but outside its tree.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attachment {
    /// The name it was attached under.
    pub name: String,
    /// Its length in bytes.
    pub size: u64,
    /// Its content chunks.
    pub chunks: Vec<u128>,
}

/// A file a save left out; restore never overwrites or deletes it, since no checkpoint
/// holds its content.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedFile {
    /// Its worktree path.
    #[serde(with = "serde_bytes")]
    pub path: Vec<u8>,
    /// Its size when it was skipped.
    pub size: u64,
    /// Why it was left out.
    pub reason: SkipReason,
}

/// Why a save left a file out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum SkipReason {
    /// Larger than `checkpoint.maxFileSize`.
    TooLarge,
    /// It could not be read, and the save was told to go on (`--skip-unreadable`).
    Unreadable,
}

/// One save point. `Default` is the empty record that tests and crafted stores fill in.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// The root tree of the worktree.
    pub tree: u128,
    /// Parent checkpoints; the first is the one it was saved on top of.
    pub parents: Vec<u128>,
    /// When it was made, in nanoseconds since the Unix epoch.
    pub time_ns: i128,
    /// The message given with `-m`, or one the tool wrote (e.g. before a restore).
    pub message: String,
    /// The checkpoint branch it was made on, if HEAD named one.
    pub branch: Option<String>,
    /// The real repository's HEAD commit at that moment.
    pub git_head: Option<String>,
    /// The real repository's branch at that moment.
    pub git_branch: Option<String>,
    /// Free-form `key=value` metadata, in the order given.
    pub meta: Vec<(String, String)>,
    /// Attached files.
    pub attachments: Vec<Attachment>,
    /// Files and symlinks in the tree.
    pub files: u64,
    /// Total size of the files in the tree.
    pub bytes: u64,
    /// Files left out for their size; restore leaves them alone. (Appended last: the
    /// encoding is positional.)
    pub skipped: Vec<SkippedFile>,
}

/// What HEAD names.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Head {
    /// A branch; it may not exist yet in a new store.
    Branch(String),
    /// A checkpoint with no branch.
    Detached(u128),
}

/// Reads a checkpoint record.
pub fn load(table: &impl ReadableTable<u128, &'static [u8]>, id: Id) -> Result<Checkpoint> {
    match table.get(id.0)? {
        Some(v) => codec::decode(v.value(), &format!("checkpoint {id}")),
        None => Err(Error::Corrupt(format!("checkpoint {id} is missing"))),
    }
}

/// Reads HEAD; a new store's HEAD is the default branch.
pub fn head(state: &impl ReadableTable<&'static str, &'static [u8]>) -> Result<Head> {
    match state.get("head")? {
        Some(v) => codec::decode(v.value(), "HEAD"),
        None => Ok(Head::Branch(DEFAULT_BRANCH.to_string())),
    }
}

/// Points HEAD of a store that has no HEAD and no branch yet at `branch`, so that its
/// first checkpoint lands there (`checkpoint.defaultBranch`). A store in use is left as
/// it is, and opening one costs only a read.
pub fn init_head(db: &redb::Database, branch: &str) -> Result<()> {
    use redb::ReadableDatabase;
    if branch == DEFAULT_BRANCH {
        return Ok(());
    }
    let read = db.begin_read()?;
    let is_new = {
        let state = read.open_table(STATE)?;
        let branches = read.open_table(BRANCHES)?;
        state.get("head")?.is_none() && branches.first()?.is_none()
    };
    drop(read);
    if is_new {
        let txn = db.begin_write()?;
        txn.open_table(STATE)?.insert(
            "head",
            codec::encode(&Head::Branch(branch.to_string())).as_slice(),
        )?;
        txn.commit()?;
    }
    Ok(())
}

/// The checkpoint HEAD points at, if any.
pub fn current(
    state: &impl ReadableTable<&'static str, &'static [u8]>,
    branches: &impl ReadableTable<&'static str, u128>,
) -> Result<Option<Id>> {
    Ok(match head(state)? {
        Head::Branch(name) => branches.get(name.as_str())?.map(|v| Id(v.value())),
        Head::Detached(id) => Some(Id(id)),
    })
}

/// Points HEAD's branch (or a detached HEAD) at `id`.
pub fn move_head(txn: &redb::WriteTransaction, id: Id) -> Result<()> {
    let mut state = txn.open_table(STATE)?;
    match head(&state)? {
        Head::Branch(name) => {
            txn.open_table(BRANCHES)?.insert(name.as_str(), id.0)?;
        }
        Head::Detached(_) => {
            state.insert("head", codec::encode(&Head::Detached(id.0)).as_slice())?;
        }
    }
    Ok(())
}

/// The attachment of `record` named `name`; `short` names the checkpoint in the error.
pub fn attachment<'a>(record: &'a Checkpoint, short: &str, name: &str) -> Result<&'a Attachment> {
    record
        .attachments
        .iter()
        .find(|a| a.name == name)
        .ok_or_else(|| Error::UnknownAttachment {
            checkpoint: short.to_string(),
            name: name.to_string(),
            available: if record.attachments.is_empty() {
                "none".to_string()
            } else {
                record
                    .attachments
                    .iter()
                    .map(|a| a.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            },
        })
}

/// Points HEAD at `head`.
pub fn set_head(txn: &redb::WriteTransaction, head: &Head) -> Result<()> {
    txn.open_table(STATE)?
        .insert("head", codec::encode(head).as_slice())?;
    Ok(())
}

/// Every branch and its tip, sorted by name.
pub fn branches(table: &impl ReadableTable<&'static str, u128>) -> Result<Vec<(String, Id)>> {
    table
        .iter()?
        .map(|item| {
            let (name, tip) = item?;
            Ok((name.value().to_string(), Id(tip.value())))
        })
        .collect()
}

/// Refuses names that could not be typed back as a revision, or that would read as
/// something else in one: git's ref-name rules, plus no pure hex of [`MIN_PREFIX`]+
/// digits (it would hide the checkpoint ids it looks like).
pub fn check_branch_name(name: &str) -> Result<()> {
    let why = if name.is_empty() {
        Some("it is empty")
    } else if name.len() > 200 {
        Some("it is longer than 200 bytes")
    } else if name == "@" || name == "HEAD" {
        Some("it names the current checkpoint")
    } else if name
        .chars()
        .any(|c| c.is_control() || c.is_whitespace() || "~^:?*[\\".contains(c))
    {
        Some("it holds a space, a control character or one of ~ ^ : ? * [ \\")
    } else if name.contains("..") || name.contains("//") || name.contains("@{") {
        Some("it holds '..', '//' or '@{'")
    } else if name.starts_with(['-', '.', '/']) || name.ends_with(['/', '.']) {
        Some("it starts with '-', '.' or '/', or ends with '/' or '.'")
    } else if name.ends_with(".lock") {
        Some("it ends with '.lock'")
    } else if name.len() >= MIN_PREFIX && name.bytes().all(|b| b.is_ascii_hexdigit()) {
        Some("it looks like a checkpoint id")
    } else {
        None
    };
    match why {
        Some(why) => Err(Error::InvalidBranchName {
            name: name.to_string(),
            why: why.to_string(),
        }),
        None => Ok(()),
    }
}

/// Creates branch `name` at `tip`; refuses an invalid or existing name.
pub fn create_branch(txn: &redb::WriteTransaction, name: &str, tip: Id) -> Result<()> {
    check_branch_name(name)?;
    let mut branches = txn.open_table(BRANCHES)?;
    if branches.get(name)?.is_some() {
        return Err(Error::BranchExists(name.to_string()));
    }
    branches.insert(name, tip.0)?;
    Ok(())
}

/// Deletes branch `name` and returns its tip, which stays in the store as an unnamed head.
/// Refuses the branch HEAD names.
pub fn delete_branch(txn: &redb::WriteTransaction, name: &str) -> Result<Id> {
    if head(&txn.open_table(STATE)?)? == Head::Branch(name.to_string()) {
        return Err(Error::CurrentBranch(name.to_string()));
    }
    let mut branches = txn.open_table(BRANCHES)?;
    let tip = branches.remove(name)?.map(|v| Id(v.value()));
    tip.ok_or_else(|| Error::UnknownBranch(name.to_string()))
}

/// Renames branch `old` to `new` (HEAD follows if it named `old`) and returns its tip.
pub fn rename_branch(txn: &redb::WriteTransaction, old: &str, new: &str) -> Result<Id> {
    check_branch_name(new)?;
    let tip = {
        let mut branches = txn.open_table(BRANCHES)?;
        if branches.get(new)?.is_some() {
            return Err(Error::BranchExists(new.to_string()));
        }
        let tip = branches.remove(old)?.map(|v| Id(v.value()));
        let tip = tip.ok_or_else(|| Error::UnknownBranch(old.to_string()))?;
        branches.insert(new, tip.0)?;
        tip
    };
    if head(&txn.open_table(STATE)?)? == Head::Branch(old.to_string()) {
        set_head(txn, &Head::Branch(new.to_string()))?;
    }
    Ok(tip)
}

/// The first of `fork-1`, `fork-2`, … that names no branch.
pub fn next_fork_name(table: &impl ReadableTable<&'static str, u128>) -> Result<String> {
    for n in 1u64.. {
        let name = format!("fork-{n}");
        if table.get(name.as_str())?.is_none() {
            return Ok(name);
        }
    }
    unreachable!("some fork-N is free")
}

/// Resolves a revision to a checkpoint id.
pub fn resolve(txn: &redb::ReadTransaction, rev: &str) -> Result<Id> {
    let checkpoints = txn.open_table(CHECKPOINTS)?;
    let branches = txn.open_table(BRANCHES)?;
    let state = txn.open_table(STATE)?;
    let (base, steps) = split_ancestry(rev)?;
    let mut id = if base == "@" {
        current(&state, &branches)?.ok_or(Error::NoCheckpoints)?
    } else if let Some(tip) = branches.get(base)? {
        Id(tip.value())
    } else {
        resolve_prefix(&checkpoints, rev, base)?
    };
    // A crafted store can hold a parent cycle; walking it with a large N would never end.
    let mut visited = std::collections::HashSet::new();
    for _ in 0..steps {
        if !visited.insert(id) {
            return Err(Error::Corrupt(format!(
                "checkpoint {id} is its own ancestor (a parent cycle)"
            )));
        }
        let record = load(&checkpoints, id)?;
        id = match record.parents.first() {
            Some(&parent) => Id(parent),
            None => {
                return Err(Error::PastRoot {
                    rev: rev.to_string(),
                    root: id.hex()[..MIN_SHORT_ID].to_string(),
                })
            }
        };
    }
    Ok(id)
}

/// Splits `base~N~M` into the base and the total number of first-parent steps.
fn split_ancestry(rev: &str) -> Result<(&str, u64)> {
    let malformed = |why: &str| Error::MalformedRevision {
        rev: rev.to_string(),
        why: why.to_string(),
    };
    let mut parts = rev.split('~');
    let base = parts.next().unwrap_or_default();
    if base.is_empty() {
        return Err(malformed("it names no checkpoint before '~'"));
    }
    let mut steps: u64 = 0;
    for part in parts {
        let n = if part.is_empty() {
            1
        } else {
            part.parse::<u64>()
                .map_err(|_| malformed("'~' must be followed by a number"))?
        };
        steps = steps.saturating_add(n);
    }
    Ok((base, steps))
}

fn resolve_prefix(
    checkpoints: &impl ReadableTable<u128, &'static [u8]>,
    rev: &str,
    prefix: &str,
) -> Result<Id> {
    if !prefix.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(Error::UnknownRevision(rev.to_string()));
    }
    if prefix.len() < MIN_PREFIX || prefix.len() > 32 {
        return Err(Error::MalformedRevision {
            rev: rev.to_string(),
            why: format!("an id prefix needs {MIN_PREFIX} to 32 hex digits"),
        });
    }
    let digits = prefix.len() as u32;
    let value = u128::from_str_radix(prefix, 16).map_err(|_| Error::UnknownRevision(rev.into()))?;
    let shift = 4 * (32 - digits);
    let low = value.checked_shl(shift).unwrap_or(0);
    let high = low | (u128::MAX.checked_shr(4 * digits).unwrap_or(0));
    let found: Vec<Id> = checkpoints
        .range(low..=high)?
        .take(10)
        .map(|item| item.map(|(k, _)| Id(k.value())))
        .collect::<Result<_, _>>()?;
    match found.as_slice() {
        [] => Err(Error::UnknownRevision(rev.to_string())),
        [one] => Ok(*one),
        many => Err(Error::AmbiguousRevision {
            rev: rev.to_string(),
            candidates: many.iter().map(|id| id.hex()).collect(),
        }),
    }
}

/// The shortest prefix of `id`, at least [`MIN_SHORT_ID`] digits, that no other
/// checkpoint shares.
pub fn short_id(checkpoints: &impl ReadableTable<u128, &'static [u8]>, id: Id) -> Result<String> {
    let mut len = MIN_SHORT_ID;
    let before = checkpoints.range(..id.0)?.next_back().transpose()?;
    let after = checkpoints
        .range(id.0.saturating_add(1)..)?
        .next()
        .transpose()?;
    for neighbour in [before, after].into_iter().flatten() {
        let common = (neighbour.0.value() ^ id.0).leading_zeros() as usize / 4;
        len = len.max(common + 1);
    }
    Ok(id.hex()[..len.min(32)].to_string())
}

/// Which checkpoints [`log`] lists.
#[derive(Clone, Debug, Default)]
pub struct LogQuery {
    /// Every checkpoint in the store, not only the ancestry of the current one.
    pub all: bool,
    /// At most this many.
    pub limit: Option<usize>,
    /// Only checkpoints whose metadata holds every one of these pairs.
    pub meta: Vec<(String, String)>,
}

/// One checkpoint as [`log`] lists it.
#[derive(Clone, Debug)]
pub struct LogEntry {
    /// Its id.
    pub id: Id,
    /// Its record.
    pub record: Checkpoint,
    /// Its parents among the listed checkpoints: the real parents, or, where a parent is
    /// filtered out, its nearest listed ancestors, so a graph of the list stays connected.
    pub graph_parents: Vec<Id>,
}

/// Whether `record`'s metadata holds every `(key, value)` pair of `wanted`.
pub fn meta_matches(record: &Checkpoint, wanted: &[(String, String)]) -> bool {
    wanted.iter().all(|pair| record.meta.contains(pair))
}

/// Checkpoints in graph order: every child before its parents, newest first otherwise,
/// and each line of history kept together (as `git log --graph` orders commits).
/// Without `all`, the current checkpoint and its ancestors; with it, every checkpoint.
pub fn log(txn: &redb::ReadTransaction, query: &LogQuery) -> Result<Vec<LogEntry>> {
    let checkpoints = txn.open_table(CHECKPOINTS)?;
    let mut records: HashMap<Id, Checkpoint> = HashMap::new();
    if query.all {
        for item in checkpoints.iter()? {
            let (key, value) = item?;
            let id = Id(key.value());
            records.insert(
                id,
                codec::decode(value.value(), &format!("checkpoint {id}"))?,
            );
        }
    } else {
        let state = txn.open_table(STATE)?;
        let branches = txn.open_table(BRANCHES)?;
        let mut pending: Vec<Id> = current(&state, &branches)?.into_iter().collect();
        while let Some(id) = pending.pop() {
            if records.contains_key(&id) {
                continue;
            }
            let record = load(&checkpoints, id)?;
            pending.extend(record.parents.iter().map(|&p| Id(p)));
            records.insert(id, record);
        }
    }
    let listed: HashSet<Id> = records
        .iter()
        .filter(|(_, r)| meta_matches(r, &query.meta))
        .map(|(&id, _)| id)
        .collect();
    let mut nearest = NearestListed::default();
    let mut graph_parents: HashMap<Id, Vec<Id>> = HashMap::new();
    for &id in &listed {
        let mut parents = Vec::new();
        for &p in &records[&id].parents {
            for found in nearest.of(Id(p), &records, &listed) {
                if !parents.contains(&found) {
                    parents.push(found);
                }
            }
        }
        graph_parents.insert(id, parents);
    }
    let order = graph_order(&listed, &records, &graph_parents);
    let limit = query.limit.unwrap_or(usize::MAX);
    Ok(order
        .into_iter()
        .take(limit)
        .map(|id| LogEntry {
            id,
            record: records
                .remove(&id)
                .expect("listed ids come from the records"),
            graph_parents: graph_parents.remove(&id).unwrap_or_default(),
        })
        .collect())
}

/// The nearest listed checkpoints at or above an unlisted one, remembered per checkpoint
/// so that long filtered-out runs are walked once.
#[derive(Default)]
struct NearestListed {
    memo: HashMap<Id, Vec<Id>>,
}

impl NearestListed {
    /// `id` itself if listed, else the nearest listed ancestors through every parent.
    /// Parents missing from `records` (outside the ancestry walked) end the search.
    fn of(&mut self, id: Id, records: &HashMap<Id, Checkpoint>, listed: &HashSet<Id>) -> Vec<Id> {
        // Iterative post-order, so that a run of thousands of unlisted checkpoints cannot
        // overflow the stack; `entered` stops a cycle (only in a damaged store).
        let mut stack = vec![(id, false)];
        let mut entered = HashSet::new();
        while let Some((node, expanded)) = stack.pop() {
            if listed.contains(&node) || self.memo.contains_key(&node) {
                continue;
            }
            let parents = records.get(&node).map_or(&[][..], |r| r.parents.as_slice());
            if expanded {
                let mut found = Vec::new();
                for &p in parents {
                    let p = Id(p);
                    let from_parent = if listed.contains(&p) {
                        std::slice::from_ref(&p)
                    } else {
                        self.memo.get(&p).map_or(&[][..], Vec::as_slice)
                    };
                    for f in from_parent {
                        if !found.contains(f) {
                            found.push(*f);
                        }
                    }
                }
                self.memo.insert(node, found);
            } else if entered.insert(node) {
                stack.push((node, true));
                stack.extend(parents.iter().map(|&p| (Id(p), false)));
            }
        }
        if listed.contains(&id) {
            vec![id]
        } else {
            self.memo.get(&id).cloned().unwrap_or_default()
        }
    }
}

/// Orders `listed` children-first: tips newest first on a stack, and a parent goes on top
/// of the stack as soon as its last child is out, so each line is listed in one run.
fn graph_order(
    listed: &HashSet<Id>,
    records: &HashMap<Id, Checkpoint>,
    graph_parents: &HashMap<Id, Vec<Id>>,
) -> Vec<Id> {
    let mut children: HashMap<Id, usize> = listed.iter().map(|&id| (id, 0)).collect();
    for parents in graph_parents.values() {
        for p in parents {
            if let Some(n) = children.get_mut(p) {
                *n += 1;
            }
        }
    }
    let newest_last = |ids: &mut Vec<Id>| {
        ids.sort_by(|a, b| records[a].time_ns.cmp(&records[b].time_ns).then(a.cmp(b)))
    };
    let mut stack: Vec<Id> = children
        .iter()
        .filter(|(_, &n)| n == 0)
        .map(|(&id, _)| id)
        .collect();
    newest_last(&mut stack);
    let mut out = Vec::with_capacity(listed.len());
    while let Some(id) = stack.pop() {
        out.push(id);
        // Pushed in reverse so that the first parent comes out first.
        for p in graph_parents[&id].iter().rev() {
            if let Some(n) = children.get_mut(p) {
                *n -= 1;
                if *n == 0 {
                    stack.push(*p);
                }
            }
        }
    }
    // A cycle (only in a damaged store) leaves checkpoints that never become ready; list
    // them last rather than hide them.
    if out.len() < listed.len() {
        let placed: HashSet<Id> = out.iter().copied().collect();
        let mut rest: Vec<Id> = listed.difference(&placed).copied().collect();
        newest_last(&mut rest);
        out.extend(rest.into_iter().rev());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ancestry_suffixes_add_up() {
        assert_eq!(split_ancestry("@").unwrap(), ("@", 0));
        assert_eq!(split_ancestry("@~").unwrap(), ("@", 1));
        assert_eq!(split_ancestry("abcd~2~3").unwrap(), ("abcd", 5));
        assert!(split_ancestry("~1").is_err());
        assert!(split_ancestry("@~x").is_err());
    }
}
