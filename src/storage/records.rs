//! Reading and writing the small records: checkpoints, HEAD, branches, pins and the
//! restore marker. Generic over redb's readable tables, so that a [`super::Snapshot`] and
//! a [`super::Transaction`] read them the same way.

use std::collections::HashSet;

use redb::ReadableTable;
use serde::{Deserialize, Serialize};

use crate::error::Candidate;
use crate::format::codec;
use crate::model::revision::{MIN_PREFIX, MIN_SHORT_ID};
use crate::model::session::{PromptNumber, Session};
use crate::model::{branch::DEFAULT_BRANCH, Checkpoint, Head};
use crate::{CheckpointId, Error, Result};

/// The `state` key of HEAD.
pub(super) const HEAD: &str = "head";
/// The `state` key of the target of a restore in progress (docs/design.md invariant 13).
pub(super) const RESTORING: &str = "restoring";
/// The paths a path-limited restore recorded in [`RESTORING`] was limited to: a key of
/// its own, so that builds that know only the target read the marker as before.
pub(super) const RESTORING_PATHS: &str = "restoring_paths";

/// Reads a checkpoint record.
pub(super) fn load(
    table: &impl ReadableTable<u128, &'static [u8]>,
    id: CheckpointId,
) -> Result<Checkpoint> {
    match table.get(id.0)? {
        Some(v) => decode_checkpoint(id, v.value()),
        None => Err(Error::Corrupt(format!("checkpoint {id} is missing"))),
    }
}

/// Decodes checkpoint `id`'s record. The id goes into the error's text only when there
/// is an error: formatting it for every record showed in the profile of a long `log`.
fn decode_checkpoint(id: CheckpointId, bytes: &[u8]) -> Result<Checkpoint> {
    crate::trace::RECORDS_READ.add(1);
    codec::decode(bytes, "checkpoint")
        .or_else(|_| codec::decode(bytes, &format!("checkpoint {id}")))
}

/// Every checkpoint record, decoded, in id order.
pub(super) fn load_all(
    table: &impl ReadableTable<u128, &'static [u8]>,
) -> Result<Vec<(CheckpointId, Checkpoint)>> {
    table
        .iter()?
        .map(|item| {
            let (key, value) = item?;
            let id = CheckpointId(key.value());
            Ok((id, decode_checkpoint(id, value.value())?))
        })
        .collect()
}

/// What a checkpoint changed against its first parent (everything, for a first
/// checkpoint), by the sizes its trees record: kept in the `summaries` table so that
/// `log` can show it without reading trees.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangeSummary {
    /// Paths only the checkpoint has.
    pub added: u64,
    /// Paths only its parent has.
    pub deleted: u64,
    /// Paths both have, with different content, mode or kind.
    pub modified: u64,
    /// Sum of the growth of files that grew (an added file grows by its size).
    pub grown: u64,
    /// Sum of the shrinkage of files that shrank (a deleted file by its size).
    pub shrunk: u64,
}

/// The summary kept for checkpoint `id`, if any; a row that does not decode is
/// [`Error::Corrupt`].
pub(super) fn summary(
    table: &impl ReadableTable<u128, &'static [u8]>,
    id: CheckpointId,
) -> Result<Option<ChangeSummary>> {
    match table.get(id.0)? {
        Some(v) => Ok(Some(codec::decode(
            v.value(),
            &format!("change summary of checkpoint {id}"),
        )?)),
        None => Ok(None),
    }
}

/// Reads HEAD; a new store's HEAD is the default branch.
pub(super) fn head(state: &impl ReadableTable<&'static str, &'static [u8]>) -> Result<Head> {
    match state.get(HEAD)? {
        Some(v) => codec::decode(v.value(), "HEAD"),
        None => Ok(Head::Branch(DEFAULT_BRANCH.to_string())),
    }
}

/// The checkpoint HEAD points at, if any.
pub(super) fn current(
    state: &impl ReadableTable<&'static str, &'static [u8]>,
    branches: &impl ReadableTable<&'static str, u128>,
) -> Result<Option<CheckpointId>> {
    Ok(match head(state)? {
        Head::Branch(name) => branches
            .get(name.as_str())?
            .map(|v| CheckpointId(v.value())),
        Head::Detached(id) => Some(id),
    })
}

/// Every branch and its tip, sorted by name.
pub(super) fn branches(
    table: &impl ReadableTable<&'static str, u128>,
) -> Result<Vec<(String, CheckpointId)>> {
    table
        .iter()?
        .map(|item| {
            let (name, tip) = item?;
            Ok((name.value().to_string(), CheckpointId(tip.value())))
        })
        .collect()
}

/// The pinned checkpoints.
pub(super) fn pins(table: &impl ReadableTable<u128, ()>) -> Result<HashSet<CheckpointId>> {
    let mut out = HashSet::new();
    for item in table.iter()? {
        out.insert(CheckpointId(item?.0.value()));
    }
    Ok(out)
}

/// The target of a restore that started and did not finish, if any.
pub(super) fn restoring(
    state: &impl ReadableTable<&'static str, &'static [u8]>,
) -> Result<Option<CheckpointId>> {
    match state.get(RESTORING)? {
        Some(v) => Ok(Some(CheckpointId(codec::decode(
            v.value(),
            "restore marker",
        )?))),
        None => Ok(None),
    }
}

/// The paths the interrupted restore was limited to; empty for a whole-worktree one.
pub(super) fn restoring_paths(
    state: &impl ReadableTable<&'static str, &'static [u8]>,
) -> Result<Vec<Vec<u8>>> {
    if state.get(RESTORING)?.is_none() {
        return Ok(Vec::new());
    }
    match state.get(RESTORING_PATHS)? {
        Some(v) => codec::decode(v.value(), "restore marker paths"),
        None => Ok(Vec::new()),
    }
}

/// The checkpoints fetched from remotes, and every fetched branch (`<remote>/<branch>`)
/// with its tip: what session revisions need to tell local checkpoints from fetched ones.
pub(super) type Fetched = (HashSet<CheckpointId>, Vec<(String, CheckpointId)>);

/// Resolves a revision (see [`crate::model::revision`]) to a checkpoint id. `fetched` is
/// asked only for session revisions.
pub(super) fn resolve(
    checkpoints: &impl ReadableTable<u128, &'static [u8]>,
    state: &impl ReadableTable<&'static str, &'static [u8]>,
    branches: &impl ReadableTable<&'static str, u128>,
    remote_branch: &dyn Fn(&str) -> Result<Option<CheckpointId>>,
    fetched: &dyn Fn() -> Result<Fetched>,
    rev: &str,
) -> Result<CheckpointId> {
    let parsed = crate::model::revision::parse(rev)?;
    let mut id = if let Some((first, rest)) = parsed.base.split_once(':') {
        let (imported, remote_branches) = fetched()?;
        let all = load_all(checkpoints)?;
        match rest.split_once(':') {
            Some((session, selector)) => {
                let reached = fetched_from(&all, &remote_branches, first)?;
                let records: Vec<_> = all
                    .into_iter()
                    .filter(|(id, _)| reached.contains(id))
                    .collect();
                resolve_in_session(&records, session, selector)?
            }
            None => {
                // A fetched checkpoint can carry any session id (one read off this
                // store's own pushes, say) and any time: it never answers a local name.
                let (local, from_remotes): (Vec<_>, Vec<_>) =
                    all.into_iter().partition(|(id, _)| !imported.contains(id));
                match resolve_in_session(&local, first, rest) {
                    Err(Error::UnknownSession(_))
                        if Session::find(&from_remotes, first).is_ok() =>
                    {
                        return Err(Error::InvalidArgument(format!(
                            "session '{first}' has only fetched checkpoints; name the remote they came from: '<remote>:{first}:{rest}'"
                        )))
                    }
                    found => found?,
                }
            }
        }
    } else if parsed.base == "@" {
        current(state, branches)?.ok_or(Error::NoCheckpoints)?
    } else if let Some(tip) = branches.get(parsed.base)? {
        CheckpointId(tip.value())
    } else if let Some(tip) = remote_branch(parsed.base)? {
        tip
    } else {
        resolve_prefix(checkpoints, rev, parsed.base)?
    };
    // A crafted store can hold a parent cycle; walking it with a large N would never end.
    let mut visited = HashSet::new();
    for step in &parsed.steps {
        for _ in 0..step.times {
            if !visited.insert(id) {
                return Err(Error::Corrupt(format!(
                    "checkpoint {id} is its own ancestor (a parent cycle)"
                )));
            }
            let record = load(checkpoints, id)?;
            let nth = usize::try_from(step.parent - 1).unwrap_or(usize::MAX);
            id = match record.parents.get(nth) {
                Some(&parent) => parent,
                None if record.parents.is_empty() => {
                    return Err(Error::PastRoot {
                        rev: rev.to_string(),
                        root: id.hex()[..MIN_SHORT_ID].to_string(),
                    })
                }
                None => {
                    return Err(Error::NoSuchParent {
                        rev: rev.to_string(),
                        checkpoint: id.hex()[..MIN_SHORT_ID].to_string(),
                        parent: step.parent,
                        parents: record.parents.len(),
                    })
                }
            };
        }
    }
    Ok(id)
}

/// The checkpoints reachable from the fetched branches of `remote` (`<remote>/…`).
fn fetched_from(
    records: &[(CheckpointId, crate::model::Checkpoint)],
    remote_branches: &[(String, CheckpointId)],
    remote: &str,
) -> Result<HashSet<CheckpointId>> {
    let prefix = format!("{remote}/");
    let mut pending: Vec<CheckpointId> = remote_branches
        .iter()
        .filter(|(name, _)| name.starts_with(&prefix))
        .map(|(_, tip)| *tip)
        .collect();
    if pending.is_empty() {
        return Err(Error::InvalidArgument(format!(
            "no fetched branch of remote '{remote}'; run 'git checkpoint fetch {remote}' first"
        )));
    }
    let parents: std::collections::HashMap<CheckpointId, &[CheckpointId]> = records
        .iter()
        .map(|(id, record)| (*id, record.parents.as_slice()))
        .collect();
    let mut reached = HashSet::new();
    while let Some(id) = pending.pop() {
        if reached.insert(id) {
            pending.extend(parents.get(&id).copied().unwrap_or_default());
        }
    }
    Ok(reached)
}

/// `<session>:prompt<N>` (the checkpoint saved as prompt N was submitted),
/// `<session>:turn<N>` (the last checkpoint of prompt N's turn: where it left the
/// worktree; the pair is [`Snapshot::resolve_turn`](super::Snapshot::resolve_turn)'s), either with `-<K>` for the K-th
/// prompt from the end, or `<session>:<tool call id prefix>` (the one saved after that
/// tool call).
fn resolve_in_session(
    records: &[(CheckpointId, crate::model::Checkpoint)],
    prefix: &str,
    selector: &str,
) -> Result<CheckpointId> {
    let session = Session::find(records, prefix)?;
    let numbered = |word: &str| selector.strip_prefix(word).and_then(PromptNumber::parse);
    let number = |n| Session::prompt_number(records, &session, n);
    let found = if let Some(n) = numbered("prompt") {
        number(n).and_then(|n| Session::prompt(records, &session, n))
    } else if let Some(n) = numbered("turn") {
        number(n).and_then(|n| Session::turn_end(records, &session, n))
    } else if selector.is_empty() {
        None
    } else {
        Session::tool_call(records, &session, selector)?
    };
    found.ok_or_else(|| Error::NotInSession {
        what: selector.to_string(),
        prompts: Session::prompts_in(records, &session),
        session,
    })
}

fn resolve_prefix(
    checkpoints: &impl ReadableTable<u128, &'static [u8]>,
    rev: &str,
    prefix: &str,
) -> Result<CheckpointId> {
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
    let found: Vec<CheckpointId> = checkpoints
        .range(low..=high)?
        .take(Candidate::MAX + 1)
        .map(|item| item.map(|(k, _)| CheckpointId(k.value())))
        .collect::<Result<_, _>>()?;
    match found.as_slice() {
        [] => Err(Error::UnknownRevision(rev.to_string())),
        [one] => Ok(*one),
        many => {
            let candidates = many
                .iter()
                .take(Candidate::MAX)
                .map(|&id| {
                    let record = load(checkpoints, id)?;
                    Ok(Candidate {
                        name: short_id(checkpoints, id)?,
                        time_ns: record.time_ns,
                        about: record.message.lines().next().unwrap_or("").to_string(),
                    })
                })
                .collect::<Result<_>>()?;
            Err(Error::AmbiguousRevision {
                rev: rev.to_string(),
                noun: "checkpoint",
                candidates,
                more: many.len() > Candidate::MAX,
            })
        }
    }
}

/// The shortest prefix of `id`, at least [`MIN_SHORT_ID`] digits, that no other
/// checkpoint shares.
pub(super) fn short_id(
    checkpoints: &impl ReadableTable<u128, &'static [u8]>,
    id: CheckpointId,
) -> Result<String> {
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
