//! `pull`: [`fetch`](super::fetch) one branch of a remote, then fast-forward the local
//! checkpoint branch of the same name to it. The branch HEAD names is moved by a
//! restore ([`crate::ops::restore`]), so the worktree follows as with `git pull` (its
//! unsaved changes are saved first, as every restore does); another branch only has its
//! tip moved. A local branch with checkpoints the remote lacks and the other way round
//! (diverged) is refused, with what to do.

use super::fetch::{fetch, FetchReport};
use super::is_ancestor;
use crate::git::repo::Repo;
use crate::model::branch::BranchName;
use crate::model::operation::{NewOperation, OpKind, OpStep, ViewChange};
use crate::model::Head;
use crate::ops::restore::{restore, RestoreOptions, RestoreReport};
use crate::settings::Settings;
use crate::storage::{ReadStore, Store, StoreRead};
use crate::text::counted;
use crate::{CheckpointId, Error};

/// What a pull did to the local branch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PullStatus {
    /// The local branch already holds the remote's tip.
    UpToDate,
    /// The local branch holds the remote's tip and checkpoints after it (push them).
    Ahead,
    /// The local branch moved forward to the remote's tip.
    FastForward,
    /// The local branch did not exist and was made at the remote's tip.
    Created,
}

impl PullStatus {
    /// The word `pull` prints and `--json` gives.
    pub fn word(self) -> &'static str {
        match self {
            PullStatus::UpToDate => "up to date",
            PullStatus::Ahead => "ahead",
            PullStatus::FastForward => "fast-forward",
            PullStatus::Created => "new",
        }
    }
}

/// What a pull did.
#[derive(Debug)]
pub struct PullReport {
    /// The fetch.
    pub fetch: FetchReport,
    /// The local branch.
    pub branch: String,
    /// Its tip before.
    pub from: Option<CheckpointId>,
    /// The remote's tip.
    pub to: CheckpointId,
    /// What happened to the branch.
    pub status: PullStatus,
    /// The restore that moved the branch HEAD names, if it was that one and it moved.
    pub restore: Option<RestoreReport>,
}

/// Pulls `branch` (default: the one HEAD names) from `remote`. The opening functions
/// may fail with the caller's own error type, as [`fetch`]'s.
pub fn pull<E: From<crate::Error>>(
    repo: &Repo,
    open_read: impl Fn() -> std::result::Result<ReadStore, E>,
    open_write: impl Fn() -> std::result::Result<Store, E>,
    remote: &str,
    branch: Option<&str>,
    settings: &Settings,
) -> std::result::Result<PullReport, E> {
    let head = open_read()?.snapshot()?.head()?;
    let branch = match (branch, &head) {
        (Some(name), _) => name.to_string(),
        (None, Head::Branch(name)) => name.clone(),
        (None, Head::Detached(_)) => {
            return Err(Error::InvalidArgument(
                "HEAD names no branch; name the branch to pull".into(),
            )
            .into())
        }
    };
    let current = head == Head::Branch(branch.clone());
    let fetched = fetch(
        repo,
        &open_read,
        &open_write,
        remote,
        std::slice::from_ref(&branch),
        settings,
    )?;
    let tracked = format!("{remote}/{branch}");
    if let Some((_, why)) = fetched.refused.iter().find(|(name, _)| *name == tracked) {
        return Err(Error::RemoteRefused {
            tracked,
            branch,
            why: why.clone(),
        }
        .into());
    }
    let store = open_write()?;
    let (from, to, status) = {
        let snapshot = store.snapshot()?;
        let to = snapshot.remote_branch(&tracked)?.ok_or_else(|| {
            Error::InvalidArgument(format!(
                "{remote} has no checkpoint branch '{branch}' (git ls-remote {remote} 'refs/checkpoints/*' lists them)"
            ))
        })?;
        let from = snapshot.branch(&branch)?;
        let status = match from {
            None => PullStatus::Created,
            Some(local) if local == to => PullStatus::UpToDate,
            Some(local) if is_ancestor(&snapshot, to, local)? => PullStatus::Ahead,
            Some(local) if is_ancestor(&snapshot, local, to)? => PullStatus::FastForward,
            Some(_) => {
                // The fetch has happened: say so, since the refusal is the only output.
                let fetched = match fetched.imported {
                    0 => String::new(),
                    n => format!(
                        "fetched {} from {remote}, but ",
                        counted(n, "new checkpoint")
                    ),
                };
                return Err(Error::InvalidArgument(format!(
                    "{fetched}{branch} and {tracked} have diverged: each has checkpoints the other lacks, and nothing was changed. Compare them (git checkpoint log --graph {branch} {tracked}, git checkpoint diff {branch} {tracked}); then work on theirs with 'git checkpoint fork {tracked}', or keep yours and replace the remote's with 'git checkpoint push --force {remote} {branch}'"
                ))
                .into());
            }
        };
        (from, to, status)
    };
    let mut restored = None;
    if matches!(status, PullStatus::FastForward | PullStatus::Created) {
        if current {
            let options = RestoreOptions {
                settings: settings.clone(),
                operation: Some(OpStep {
                    kind: OpKind::Pull,
                    summary: format!("pull {tracked} into {branch}"),
                    change: ViewChange::default(),
                }),
                ..RestoreOptions::default()
            };
            restored = Some(restore(repo, &store, &to.hex(), &options)?);
        } else {
            let txn = store.transaction()?;
            let before = txn.view()?;
            match from {
                Some(_) => txn.set_branch(&branch, to)?,
                None => txn.create_branch(&BranchName::new(&branch)?, to)?,
            }
            let summary = format!("pull {tracked} into {branch}");
            txn.record_operation(NewOperation::new(OpKind::Pull, summary, before))?;
            txn.commit()?;
        }
    }
    Ok(PullReport {
        fetch: fetched,
        branch,
        from,
        to,
        status,
        restore: restored,
    })
}
