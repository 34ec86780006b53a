//! `push`: export checkpoint branches and update `refs/checkpoints/<branch>` on a remote
//! with the user's own `git push` (transport, credentials and configuration are git's).

use std::collections::{BTreeMap, HashMap, HashSet};

use super::{attachments, export, remote_ref, run_git, secrets};
use crate::git::repo::Repo;
use crate::model::{Head, Node};
use crate::storage::pack::LastPack;
use crate::storage::{Snapshot, Store, StoreRead};
use crate::{CheckpointId, ChunkId, Error, Result, TreeId};

/// What to push.
#[derive(Clone, Debug, Default)]
pub struct PushOptions {
    /// The remote's name or URL.
    pub remote: String,
    /// Branches to push; empty means the branch HEAD names.
    pub branches: Vec<String>,
    /// Every branch.
    pub all: bool,
    /// Ask the remote what it would do, change nothing there.
    pub dry_run: bool,
    /// Replace remote branches that are not ancestors of the local ones.
    pub force: bool,
    /// Paths the secret guard lets through.
    pub allow: Vec<Vec<u8>>,
}

/// What happened to one branch on the remote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PushedBranch {
    /// The checkpoint branch.
    pub branch: String,
    /// The commit its tip was exported as; `None` when a dry run finds it not yet
    /// exported.
    pub commit: Option<String>,
    /// git's word for it: `new`, `fast-forward`, `forced`, `up to date`.
    pub status: &'static str,
}

/// What a push did.
#[derive(Clone, Debug, Default)]
pub struct PushReport {
    /// Each branch asked for.
    pub branches: Vec<PushedBranch>,
    /// Files git does not track that branches new on the remote publish.
    pub untracked: Vec<Vec<u8>>,
    /// The attachments branches new on the remote publish (checkpoint, name), oldest
    /// checkpoint first.
    pub attachments: Vec<(CheckpointId, String)>,
    /// Checkpoints written as new commits (by a dry run: that would be).
    pub exported: usize,
}

/// Pushes checkpoint branches to `options.remote`: fast-forward only unless `force`,
/// all or nothing (`git push --atomic`). A branch the remote does not have yet is first
/// checked for files that look like secrets ([`secrets::looks_secret`]).
pub fn push(repo: &Repo, store: &Store, options: &PushOptions) -> Result<PushReport> {
    if options.dry_run {
        return dry_run(repo, store, options);
    }
    let prepared = prepare(repo, store, options)?;
    let (tips, on_remote) = (&prepared.tips, &prepared.on_remote);
    let ids: Vec<CheckpointId> = tips.iter().map(|(_, id)| *id).collect();
    let exported = export::export(repo, store, &ids)?;
    let mut specs: Vec<String> = tips
        .iter()
        .zip(&exported.commits)
        .map(|((branch, _), sha)| format!("{sha}:{}", remote_ref(branch)))
        .collect();
    {
        let snapshot = store.snapshot()?;
        for (branch, tip) in tips {
            let target = attachments::attachments_ref(branch);
            // The remote's current one, if this repository has it, to build on.
            let previous = match on_remote.get(&target) {
                Some(sha)
                    if super::missing_commits(repo, std::slice::from_ref(sha))?.is_empty() =>
                {
                    Some(sha.as_str())
                }
                _ => None,
            };
            match attachments::side_commit(repo, &snapshot, *tip, previous)? {
                // Derived from the branch alone, so replacing it loses nothing the
                // branch's own (fast-forward only) update does not already allow.
                Some(commit) => specs.push(format!("+{commit}:{target}")),
                None if on_remote.contains_key(&target) => specs.push(format!(":{target}")),
                None => {}
            }
        }
    }
    let mut args = vec!["push", "--porcelain", "--atomic", "--no-verify"];
    if options.force {
        args.push("--force");
    }
    args.push(&options.remote);
    args.extend(specs.iter().map(String::as_str));
    let out = run_git(&repo.root, &args, b"")?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut status_of: HashMap<String, (char, String)> = HashMap::new();
    for line in text.lines() {
        let mut fields = line.splitn(3, '\t');
        let (Some(flag), Some(refs), Some(summary)) = (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        if let (Some(flag), Some((_, to))) = (flag.chars().next(), refs.split_once(':')) {
            status_of.insert(to.to_string(), (flag, summary.to_string()));
        }
    }
    let mut branches = Vec::new();
    let mut refused = Vec::new();
    for ((branch, _), sha) in tips.iter().zip(&exported.commits) {
        let status = match status_of.get(&remote_ref(branch)) {
            Some(('*', _)) => "new",
            Some((' ', _)) => "fast-forward",
            Some(('+', _)) => "forced",
            Some(('=', _)) => "up to date",
            Some(('!', why)) => {
                refused.push(format!("{branch} ({why})"));
                "refused"
            }
            _ => "unknown",
        };
        branches.push(PushedBranch {
            branch: branch.clone(),
            commit: Some(sha.clone()),
            status,
        });
    }
    if !refused.is_empty() {
        return Err(refusal(&options.remote, &refused));
    }
    if !out.ok {
        return Err(Error::Git {
            command: "push".into(),
            message: out.stderr,
        });
    }
    Ok(PushReport {
        branches,
        untracked: prepared.untracked,
        attachments: prepared.attachments,
        exported: exported.written,
    })
}

/// What a push and a dry run work out before anything is written.
struct Prepared {
    /// The branches to push and their tips.
    tips: Vec<(String, CheckpointId)>,
    /// The remote's checkpoint refs and their commits.
    on_remote: BTreeMap<String, String>,
    /// Files git does not track that branches new on the remote publish.
    untracked: Vec<Vec<u8>>,
    /// Attachments that branches new on the remote publish.
    attachments: Vec<(CheckpointId, String)>,
}

/// Finds the branches, asks the remote what it has, and runs the secret guard over
/// branches new there.
fn prepare(repo: &Repo, store: &impl StoreRead, options: &PushOptions) -> Result<Prepared> {
    let snapshot = store.snapshot()?;
    let tips = chosen_branches(&snapshot, options)?;
    let on_remote = remote_refs(repo, &options.remote)?;
    let new: Vec<CheckpointId> = tips
        .iter()
        .filter(|(branch, _)| !on_remote.contains_key(&remote_ref(branch)))
        .map(|(_, tip)| *tip)
        .collect();
    if new.is_empty() {
        return Ok(Prepared {
            tips,
            on_remote,
            untracked: Vec::new(),
            attachments: Vec::new(),
        });
    }
    let untracked = guard(repo, &snapshot, &new, &options.allow)?;
    let mut carrying = attachments::with_attachments(&snapshot, &new)?;
    carrying.sort_by_key(|(_, record)| record.time_ns);
    let attachments = carrying
        .into_iter()
        .flat_map(|(id, record)| record.attachments.into_iter().map(move |a| (id, a.name)))
        .collect();
    Ok(Prepared {
        tips,
        on_remote,
        untracked,
        attachments,
    })
}

/// The error for branches the remote refuses (`refused`: each with git's reason).
fn refusal(remote: &str, refused: &[String]) -> Error {
    Error::Git {
        command: "push".into(),
        message: format!(
            "the remote refused {}: its branch holds checkpoints this store lacks, or lost some of its own; nothing was changed. Run 'git checkpoint fetch {remote}' and compare with '{remote}/<branch>' (log, diff), then save on top or push --force to replace it",
            refused.join(", ")
        ),
    }
}

/// `push --dry-run`: what [`push`] would do, worked out from the remote's refs and the
/// store alone, so that nothing is written, neither in the repository (no export) nor
/// in the store nor on the remote. A remote tip is a fast-forward when it is the
/// commit of an ancestor of the local tip (commits and checkpoints map one to one,
/// invariant 19); a tip not yet exported has no commit to report.
pub fn dry_run(repo: &Repo, store: &impl StoreRead, options: &PushOptions) -> Result<PushReport> {
    let prepared = prepare(repo, store, options)?;
    let snapshot = store.snapshot()?;
    let (tips, on_remote) = (&prepared.tips, &prepared.on_remote);
    let ids: Vec<CheckpointId> = tips.iter().map(|(_, id)| *id).collect();
    let exported = export::unexported(&snapshot, &ids)?;
    let mut branches = Vec::new();
    let mut refused = Vec::new();
    for (branch, tip) in tips {
        let commit = snapshot.commit_of(*tip)?;
        let status = match on_remote.get(&remote_ref(branch)) {
            None => "new",
            Some(there) if Some(there) == commit.as_ref() => "up to date",
            Some(_) if options.force => "forced",
            Some(there) => match snapshot.checkpoint_of(there)? {
                Some(theirs) if super::is_ancestor(&snapshot, theirs, *tip)? => "fast-forward",
                _ => {
                    refused.push(format!("{branch} (would not be a fast-forward)"));
                    "refused"
                }
            },
        };
        branches.push(PushedBranch {
            branch: branch.clone(),
            commit,
            status,
        });
    }
    if !refused.is_empty() {
        return Err(refusal(&options.remote, &refused));
    }
    Ok(PushReport {
        branches,
        untracked: prepared.untracked,
        attachments: prepared.attachments,
        exported,
    })
}

/// The branches `options` names, with their tips.
fn chosen_branches(
    snapshot: &Snapshot,
    options: &PushOptions,
) -> Result<Vec<(String, CheckpointId)>> {
    if options.all {
        let all = snapshot.branches()?;
        if all.is_empty() {
            return Err(Error::NoCheckpoints);
        }
        return Ok(all);
    }
    let names = if options.branches.is_empty() {
        match snapshot.head()? {
            Head::Branch(name) => vec![name],
            Head::Detached(_) => {
                return Err(Error::InvalidArgument(
                    "HEAD names no branch; name the branches to push, or --all".into(),
                ))
            }
        }
    } else {
        options.branches.clone()
    };
    names
        .into_iter()
        .map(|name| match snapshot.branch(&name)? {
            Some(tip) => Ok((name, tip)),
            None => Err(Error::UnknownBranch(name)),
        })
        .collect()
}

/// The remote's `refs/checkpoints/*` and `refs/checkpoints-attachments/*` and their
/// commits (`git ls-remote`).
fn remote_refs(repo: &Repo, remote: &str) -> Result<BTreeMap<String, String>> {
    let out = super::git_ok(
        &repo.root,
        &[
            "ls-remote",
            remote,
            "refs/checkpoints/*",
            "refs/checkpoints-attachments/*",
        ],
        b"",
    )?;
    Ok(String::from_utf8_lossy(&out)
        .lines()
        .filter_map(|line| line.split_once('\t'))
        .map(|(sha, name)| (name.to_string(), sha.to_string()))
        .collect())
}

/// The files git does not track in any checkpoint reachable from `tips`, sorted. Refuses
/// (listing them all) those that look like secrets and `allow` does not name.
fn guard(
    repo: &Repo,
    snapshot: &Snapshot,
    tips: &[CheckpointId],
    allow: &[Vec<u8>],
) -> Result<Vec<Vec<u8>>> {
    let tracked: HashSet<Vec<u8>> = repo.tracked_paths()?.into_iter().collect();
    let trees = snapshot.trees(None)?;
    let chunks = snapshot.chunks()?;
    let mut last = LastPack::default();
    let mut seen_roots: HashSet<TreeId> = HashSet::new();
    let mut checked: HashSet<(Vec<u8>, Vec<ChunkId>)> = HashSet::new();
    let mut untracked: HashSet<Vec<u8>> = HashSet::new();
    let mut secret: BTreeMap<Vec<u8>, &'static str> = BTreeMap::new();
    let mut visited: HashSet<CheckpointId> = HashSet::new();
    let mut pending: Vec<CheckpointId> = tips.to_vec();
    while let Some(id) = pending.pop() {
        if !visited.insert(id) {
            continue;
        }
        let record = snapshot.checkpoint(id)?;
        pending.extend(record.parents.iter().copied());
        if !seen_roots.insert(record.tree) {
            continue;
        }
        let mut files = Vec::new();
        trees.flatten(record.tree, b"", &mut files)?;
        for (path, node) in files {
            if tracked.contains(&path) {
                continue;
            }
            untracked.insert(path.clone());
            let ids = match &node {
                Node::File { chunks, .. } | Node::FileWithMode { chunks, .. } => chunks.clone(),
                Node::Symlink { .. } | Node::Dir { .. } => Vec::new(),
            };
            if !checked.insert((path.clone(), ids.clone())) {
                continue;
            }
            let mut content = Vec::new();
            {
                for &chunk in &ids {
                    if content.len() >= secrets::SCAN_LIMIT {
                        break;
                    }
                    chunks.read(snapshot.hasher(), chunk, &mut content, &mut last)?;
                }
            }
            if let Some(why) = secrets::looks_secret(&path, &content) {
                if !allow.contains(&path) {
                    secret.insert(path, why);
                }
            }
        }
    }
    if !secret.is_empty() {
        let list: Vec<String> = secret
            .iter()
            .map(|(path, why)| format!("{} ({why})", String::from_utf8_lossy(path)))
            .collect();
        return Err(Error::InvalidArgument(format!(
            "refusing to publish files that look like secrets: {}; delete them from the checkpoints (git checkpoint drop), or name each with --allow <path> to publish it",
            list.join(", ")
        )));
    }
    let mut list: Vec<Vec<u8>> = untracked.into_iter().collect();
    list.sort();
    Ok(list)
}
