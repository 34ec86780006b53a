//! `push`: export checkpoint branches and update `refs/checkpoints/<branch>` on a remote
//! with the user's own `git push` (transport, credentials and configuration are git's).

use std::collections::{BTreeMap, HashMap, HashSet};

use super::{export, remote_ref, run_git, secrets};
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
    /// The commit its tip was exported as.
    pub commit: String,
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
    /// Checkpoints written as new commits.
    pub exported: usize,
}

/// Pushes checkpoint branches to `options.remote`: fast-forward only unless `force`,
/// all or nothing (`git push --atomic`). A branch the remote does not have yet is first
/// checked for files that look like secrets ([`secrets::looks_secret`]).
pub fn push(repo: &Repo, store: &Store, options: &PushOptions) -> Result<PushReport> {
    let tips = {
        let snapshot = store.snapshot()?;
        chosen_branches(&snapshot, options)?
    };
    let on_remote = remote_refs(repo, &options.remote)?;
    let new: Vec<CheckpointId> = tips
        .iter()
        .filter(|(branch, _)| !on_remote.contains_key(&remote_ref(branch)))
        .map(|(_, tip)| *tip)
        .collect();
    let untracked = if new.is_empty() {
        Vec::new()
    } else {
        guard(repo, &store.snapshot()?, &new, &options.allow)?
    };
    let ids: Vec<CheckpointId> = tips.iter().map(|(_, id)| *id).collect();
    let exported = export::export(repo, store, &ids)?;
    let specs: Vec<String> = tips
        .iter()
        .zip(&exported.commits)
        .map(|((branch, _), sha)| format!("{sha}:{}", remote_ref(branch)))
        .collect();
    let mut args = vec!["push", "--porcelain", "--atomic", "--no-verify"];
    if options.dry_run {
        args.push("--dry-run");
    }
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
            commit: sha.clone(),
            status,
        });
    }
    if !refused.is_empty() {
        let remote = &options.remote;
        return Err(Error::Git {
            command: "push".into(),
            message: format!(
                "the remote refused {}: its branch holds checkpoints this store lacks, or lost some of its own; nothing was changed. Run 'git checkpoint fetch {remote}' and compare with '{remote}/<branch>' (log, diff), then save on top or push --force to replace it",
                refused.join(", ")
            ),
        });
    }
    if !out.ok {
        return Err(Error::Git {
            command: "push".into(),
            message: out.stderr,
        });
    }
    Ok(PushReport {
        branches,
        untracked,
        exported: exported.written,
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

/// The remote's `refs/checkpoints/*` and their commits (`git ls-remote`).
fn remote_refs(repo: &Repo, remote: &str) -> Result<BTreeMap<String, String>> {
    let out = super::git_ok(
        &repo.root,
        &["ls-remote", remote, "refs/checkpoints/*"],
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
