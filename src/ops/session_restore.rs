//! Restoring only what one agent session wrote (`restore <rev> --only-session`): the
//! paths the session's own tool calls changed since a checkpoint go back to that
//! checkpoint; every other path is left alone.
//!
//! "Changed by the session" is read off the checkpoints and the hooks' own records,
//! never guessed from content. A hook saves a checkpoint after each tool call
//! (`kind=tool`); what differs between it and its first parent happened while the call
//! ran, or since the checkpoint before it, which may be the prompt's: the user may have
//! edited files meanwhile (Cursor has no hook before a file edit at all). So a path
//! counts as the session's only where the call names it (`named_path`, from the hook's
//! payload), or where the call's first parent is the session's own checkpoint from just
//! before that same call (`kind=before-tool`: the two hooks bracket it). Any other path
//! changed at the session's tool call is unsure: listed as a conflict and left alone.
//! What appears at any other checkpoint (a before-prompt or before-tool checkpoint, a
//! manual save, a watcher's, another session's) was done by someone else: the user
//! between turns, or another agent. So are unsaved changes in the worktree. Except a
//! command's result that one of the session's own tool calls files under it (the
//! agent's revert or restore through our MCP server, [`made_by_call`]): what it changed,
//! the call did.
//!
//! The checkpoints looked at are those "since" the target: reachable from the current
//! checkpoint and not from the target, which must be an ancestor of it. A path the
//! session changed there and someone else changed there too is a conflict: listed, and
//! left alone unless forced. The rest is an ordinary path-limited restore
//! ([`crate::ops::restore`]), safety checkpoint first; its report names the checkpoint
//! that undoes it. What it wrote is then saved as a checkpoint of its own (`restore of
//! <session>'s files to <rev> (N files)`), HEAD's branch moved to it after the safety
//! checkpoint.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use crate::diff::{changes_from_parent, checkpoint_root, diff_trees, PathFilter};
use crate::git::repo::Repo;
use crate::model::command_checkpoint::{
    made_by_call, KIND_KEY, RESTORED_KEY, RESTORED_SESSION_KEY, RESTORE_KIND, REVISION_KEY,
};
use crate::model::session::{abbreviate, named_paths, Session, BEFORE_TOOL_KIND, TOOL_KIND};
use crate::model::Checkpoint;
use crate::ops::restore::{self, RestoreOptions, RestoreReport};
use crate::ops::save;
use crate::storage::{Store, StoreRead};
use crate::text::counted;
use crate::{CheckpointId, Error, Result};

/// How a session-limited restore runs.
#[derive(Clone, Debug, Default)]
pub struct SessionRestoreOptions {
    /// The session (a unique prefix of its id); `None` takes the one the revision names
    /// (`<session>:prompt2`).
    pub session: Option<String>,
    /// Put back conflicting paths too, overwriting the other changes to them.
    pub force: bool,
    /// The restore itself: dry run, progress, compression (its `paths` are replaced).
    pub restore: RestoreOptions,
}

/// Who else changed a path the session changed, or may have.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ChangedBy {
    /// A tool call of the session itself that changed the path without naming it, and
    /// that no hook of the session brackets from just before it: the change may be the
    /// user's, made while the call ran or before it.
    UnsureToolCall {
        /// The tool call's checkpoint.
        id: CheckpointId,
    },
    /// A checkpoint that is not one of the session's tool calls: a prompt or before-tool
    /// checkpoint of any session (the user's changes between steps), another session's
    /// tool call, or a save not made by a hook.
    Checkpoint {
        /// The checkpoint.
        id: CheckpointId,
        /// The session whose hook saved it, if one did.
        session: Option<String>,
        /// Whether it is that session's tool call (else the change is the user's, seen
        /// when the checkpoint was saved).
        tool_call: bool,
    },
    /// The worktree, since the current checkpoint (unsaved changes).
    Worktree,
}

/// A path someone else changed since the target, besides the session or perhaps
/// instead of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conflict {
    /// Root-relative path.
    pub path: Vec<u8>,
    /// Whether the session surely changed it too (a tool call named it, or its hooks
    /// bracket the change); when not, every change to it is [`ChangedBy::UnsureToolCall`]
    /// or someone else's.
    pub by_session: bool,
    /// The other changes to it, oldest first; the worktree last.
    pub by: Vec<ChangedBy>,
}

/// What a session-limited restore did, or would do.
#[derive(Debug, Default)]
pub struct SessionRestoreReport {
    /// The checkpoint restored from.
    pub target: Option<CheckpointId>,
    /// The session's full id.
    pub session: String,
    /// Every path the session's tool calls surely changed since the target (named by
    /// the call, or bracketed by its hooks), sorted.
    pub changed_by_session: Vec<Vec<u8>>,
    /// The paths left alone unless forced, sorted by path: the session's that someone
    /// else changed too, and those changed at its tool calls where it is unsure who did.
    pub conflicts: Vec<Conflict>,
    /// Whether the conflicting paths were restored too (`--force`).
    pub forced: bool,
    /// The path-limited restore made (or planned); `None` when there was nothing to
    /// restore.
    pub restore: Option<RestoreReport>,
    /// The checkpoint the restore saved its result as, HEAD's branch moved to it
    /// (`restore of <session>'s files to <rev> (N files)`); `None` in a dry run, when
    /// nothing was written, or when that save failed (the restore's warnings say so).
    pub checkpoint: Option<CheckpointId>,
}

impl SessionRestoreReport {
    /// The conflicting paths left as they were.
    pub fn left_alone(&self) -> usize {
        if self.forced {
            0
        } else {
            self.conflicts.len()
        }
    }
}

/// Restores what the session wrote since `rev` to `rev`'s content, and saves the
/// result ([`SessionRestoreReport::checkpoint`]). With
/// `options.restore.dry_run`, only plans ([`dry_run`]).
pub fn restore_session(
    repo: &Repo,
    store: &Store,
    rev: &str,
    options: &SessionRestoreOptions,
) -> Result<SessionRestoreReport> {
    if options.restore.dry_run {
        return dry_run(repo, store, rev, options);
    }
    let (mut report, paths) = plan(repo, store, rev, options)?;
    if !paths.is_empty() {
        let target = report.target.expect("a plan has a target");
        let restore_options = RestoreOptions {
            paths,
            named: Some(named(&report.session, rev)),
            record_with_result: true,
            ..options.restore.clone()
        };
        let mut restored = restore::restore(repo, store, &target.hex(), &restore_options)?;
        report.checkpoint = save_the_result(repo, store, rev, &report, &mut restored, options)?;
        report.restore = Some(restored);
    }
    Ok(report)
}

/// Saves what the restore made of the worktree as a checkpoint of its own, `restore of
/// <session>'s files to <rev> (N files)`, its metadata naming the target and the
/// session in full, a child of the safety checkpoint (which the restore moved HEAD's
/// branch to, as a save would have moved it). The save's transaction records the
/// restore (docs/design.md invariant 27). The restore is done whatever happens to the
/// save: a failed one is one of `restored`'s warnings, and the restore is then recorded
/// on its own.
fn save_the_result(
    repo: &Repo,
    store: &Store,
    rev: &str,
    report: &SessionRestoreReport,
    restored: &mut RestoreReport,
    options: &SessionRestoreOptions,
) -> Result<Option<CheckpointId>> {
    let (Some(target), Some(operation)) = (restored.target, restored.unrecorded.take()) else {
        return Ok(None);
    };
    let changed = restored.written.len() + restored.deleted.len();
    let meta = vec![
        (KIND_KEY.to_string(), RESTORE_KIND.to_string()),
        (REVISION_KEY.to_string(), rev.to_string()),
        (RESTORED_KEY.to_string(), target.hex()),
        (RESTORED_SESSION_KEY.to_string(), report.session.clone()),
    ];
    let message = format!(
        "{} ({})",
        named(&report.session, rev),
        counted(changed, "file")
    );
    let settings = &options.restore.settings;
    match save::save_result(repo, store, message, meta, operation.clone(), settings) {
        Ok(saved) => Ok(saved),
        Err(error) => {
            restored.warnings.push(save::Warning::ResultNotSaved {
                what: "restore",
                error,
            });
            save::record_unsaved_result(store, operation)?;
            Ok(None)
        }
    }
}

/// What [`restore_session`] would do, changing nothing (the store may be open only for
/// reading).
pub fn dry_run(
    repo: &Repo,
    store: &impl StoreRead,
    rev: &str,
    options: &SessionRestoreOptions,
) -> Result<SessionRestoreReport> {
    let (mut report, paths) = plan(repo, store, rev, options)?;
    if !paths.is_empty() {
        let target = report.target.expect("a plan has a target").hex();
        let restore_options = RestoreOptions {
            paths,
            dry_run: true,
            ..options.restore.clone()
        };
        report.restore = Some(restore::dry_run(repo, store, &target, &restore_options)?);
    }
    Ok(report)
}

/// What a restore of `session`'s files to `rev` is called in its checkpoints' messages.
fn named(session: &str, rev: &str) -> String {
    format!("restore of {}'s files to {rev}", abbreviate(session))
}

/// The session named by `options` or by `rev` (`[<remote>:]<session>:<selector>`).
fn session_of(
    records: &[(CheckpointId, Checkpoint)],
    rev: &str,
    options: &SessionRestoreOptions,
) -> Result<String> {
    if let Some(prefix) = &options.session {
        return Session::find(records, prefix);
    }
    let base = crate::model::revision::parse(rev)?.base;
    let mut parts = base.rsplitn(3, ':');
    let _selector = parts.next();
    match parts.next() {
        Some(session) => Session::find(records, session),
        None => Err(Error::InvalidArgument(format!(
            "'{rev}' names no session; name one: --only-session <session> ('git checkpoint sessions' lists them)"
        ))),
    }
}

/// The report without its restore, and the paths to restore.
fn plan(
    repo: &Repo,
    store: &impl StoreRead,
    rev: &str,
    options: &SessionRestoreOptions,
) -> Result<(SessionRestoreReport, Vec<Vec<u8>>)> {
    // The worktree as it is, scanned without storing anything: its unsaved changes are
    // someone else's too. The real restore then saves it first, as any restore does. It
    // walks, as every restore's look does: a watcher cannot see every change.
    let scan = save::look_by_walking(repo, &options.restore.settings, store, None)?;
    let snapshot = store.snapshot()?;
    let records = snapshot.checkpoints()?;
    let session = session_of(&records, rev, options)?;
    let target = snapshot.resolve(rev)?;
    let current = snapshot.current()?.ok_or(Error::NoCheckpoints)?;
    let since = since(&records, target, current).ok_or_else(|| {
        Error::InvalidArgument(format!(
            "'{rev}' is not an ancestor of the current checkpoint; --only-session puts back what the session changed since a checkpoint on the current line"
        ))
    })?;

    let by_id: HashMap<CheckpointId, &Checkpoint> =
        records.iter().map(|(id, record)| (*id, record)).collect();
    let reader = snapshot.checked_trees(Some(&scan.trees))?;
    let own_call = |record: &Checkpoint| {
        meta(record, "kind") == Some(TOOL_KIND) && meta(record, "session") == Some(&session)
    };
    // The results our MCP server's commands saved for the session's own tool calls: what
    // they changed, the call did.
    let filed: HashSet<CheckpointId> = (since.iter())
        .filter(|id| own_call(by_id[*id]))
        .filter_map(|id| made_by_call(by_id[id]))
        .collect();
    let mut by_session = BTreeSet::new();
    let mut by_others: BTreeMap<Vec<u8>, Vec<(i128, ChangedBy)>> = BTreeMap::new();
    for id in since {
        let record = by_id[&id];
        if filed.contains(&id) {
            for change in changes_from_parent(&snapshot, &reader, record)? {
                by_session.insert(change.path);
            }
            continue;
        }
        let tool_call = meta(record, "kind") == Some(TOOL_KIND);
        let own = own_call(record);
        // A call that filed a command's result under itself ([`made_by_call`]) started
        // where the result did: its hooks bracket it when the result's parent is the
        // session's checkpoint from just before the call.
        let step_parent = match made_by_call(record).and_then(|made| by_id.get(&made)) {
            Some(made) => made.parents.first(),
            None => record.parents.first(),
        };
        let bracketed = own
            && step_parent
                .and_then(|parent| by_id.get(parent))
                .is_some_and(|before| brackets(before, record));
        let named = named_paths(record);
        for change in changes_from_parent(&snapshot, &reader, record)? {
            let by = if !own {
                ChangedBy::Checkpoint {
                    id,
                    session: meta(record, "session").map(str::to_string),
                    tool_call,
                }
            } else if bracketed || named.contains(&change.path) {
                by_session.insert(change.path);
                continue;
            } else {
                ChangedBy::UnsureToolCall { id }
            };
            by_others
                .entry(change.path)
                .or_default()
                .push((record.time_ns, by));
        }
    }
    let current_root = checkpoint_root(&snapshot, &reader, current)?;
    for change in diff_trees(
        &reader,
        Some(current_root),
        Some(scan.root),
        &PathFilter::default(),
    )? {
        by_others
            .entry(change.path)
            .or_default()
            .push((i128::MAX, ChangedBy::Worktree));
    }

    // Every path a tool call of the session changed, surely or not.
    let unsure = |others: &[(i128, ChangedBy)]| {
        others
            .iter()
            .any(|(_, by)| matches!(by, ChangedBy::UnsureToolCall { .. }))
    };
    let candidates: BTreeSet<Vec<u8>> = by_session
        .iter()
        .cloned()
        .chain(
            by_others
                .iter()
                .filter(|(_, others)| unsure(others))
                .map(|(path, _)| path.clone()),
        )
        .collect();
    // A path the worktree already holds as the target does needs nothing, and is no
    // conflict whoever changed it on the way: a second run finds nothing to do.
    let target_root = checkpoint_root(&snapshot, &reader, target)?;
    let differs: HashSet<Vec<u8>> = if candidates.is_empty() {
        HashSet::new()
    } else {
        let filter = PathFilter::new(candidates.iter().cloned().collect());
        diff_trees(&reader, Some(target_root), Some(scan.root), &filter)?
            .into_iter()
            .map(|change| change.path)
            .collect()
    };

    let mut conflicts = Vec::new();
    let mut paths = Vec::new();
    for path in candidates.iter().filter(|path| differs.contains(*path)) {
        match by_others.remove(path) {
            Some(mut others) => {
                others.sort();
                conflicts.push(Conflict {
                    path: path.clone(),
                    by_session: by_session.contains(path),
                    by: others.into_iter().map(|(_, by)| by).collect(),
                });
                if options.force {
                    paths.push(path.clone());
                }
            }
            None => paths.push(path.clone()),
        }
    }
    let report = SessionRestoreReport {
        target: Some(target),
        session,
        changed_by_session: by_session.into_iter().collect(),
        conflicts,
        forced: options.force,
        restore: None,
        checkpoint: None,
    };
    Ok((report, paths))
}

/// Whether `before` is the session's own checkpoint from just before the tool call whose
/// checkpoint is `after` (its first parent): then everything between the two is the
/// call's. The two must be of the same session, and of the same tool call where the
/// agent names calls (else of the same tool).
fn brackets(before: &Checkpoint, after: &Checkpoint) -> bool {
    let same = |key: &str| meta(before, key) == meta(after, key);
    meta(before, "kind") == Some(BEFORE_TOOL_KIND)
        && meta(before, "session").is_some()
        && same("session")
        && match (meta(before, "tool_use_id"), meta(after, "tool_use_id")) {
            (Some(a), Some(b)) => a == b,
            (None, None) => same("tool"),
            _ => false,
        }
}

/// The checkpoints reachable from `current` and not from `target` (git's
/// `target..current`), or `None` when `target` is not `current` or an ancestor of it.
fn since(
    records: &[(CheckpointId, Checkpoint)],
    target: CheckpointId,
    current: CheckpointId,
) -> Option<Vec<CheckpointId>> {
    let parents: HashMap<CheckpointId, &[CheckpointId]> = records
        .iter()
        .map(|(id, record)| (*id, record.parents.as_slice()))
        .collect();
    let reach = |from: CheckpointId, stop: &HashSet<CheckpointId>| {
        let mut seen = HashSet::new();
        let mut pending = vec![from];
        while let Some(id) = pending.pop() {
            if !stop.contains(&id) && seen.insert(id) {
                pending.extend(parents.get(&id).copied().unwrap_or_default());
            }
        }
        seen
    };
    let before_target = reach(target, &HashSet::new());
    let since = reach(current, &before_target);
    let on_the_line = current == target || reach(current, &HashSet::new()).contains(&target);
    on_the_line.then(|| since.into_iter().collect())
}

fn meta<'a>(record: &'a Checkpoint, key: &str) -> Option<&'a str> {
    record
        .meta
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}
