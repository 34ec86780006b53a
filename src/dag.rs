//! Checkpoints, branches and HEAD, and the revision language that names checkpoints.
//!
//! Revisions: a full id or a unique hex prefix of 4+ digits, a branch name, `@` for the
//! current checkpoint, each optionally followed by `~N` (N-th first-parent ancestor;
//! `~` alone means `~1`, and suffixes chain: `@~2~1`).

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

/// One save point.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
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
    for _ in 0..steps {
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

/// Checkpoints newest first: the first-parent line of the current checkpoint, or with
/// `all` every checkpoint in the store; at most `limit` of them.
pub fn log(
    txn: &redb::ReadTransaction,
    all: bool,
    limit: Option<usize>,
) -> Result<Vec<(Id, Checkpoint)>> {
    let checkpoints = txn.open_table(CHECKPOINTS)?;
    let limit = limit.unwrap_or(usize::MAX);
    let mut out = Vec::new();
    if all {
        for item in checkpoints.iter()? {
            let (key, value) = item?;
            let id = Id(key.value());
            out.push((
                id,
                codec::decode(value.value(), &format!("checkpoint {id}"))?,
            ));
        }
        out.sort_by(|a: &(Id, Checkpoint), b| b.1.time_ns.cmp(&a.1.time_ns).then(b.0.cmp(&a.0)));
        out.truncate(limit);
    } else {
        let state = txn.open_table(STATE)?;
        let branches = txn.open_table(BRANCHES)?;
        let mut next = current(&state, &branches)?;
        while let Some(id) = next.filter(|_| out.len() < limit) {
            let record = load(&checkpoints, id)?;
            next = record.parents.first().map(|&p| Id(p));
            out.push((id, record));
        }
    }
    Ok(out)
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
