//! `push`: export checkpoint branches and update `refs/checkpoints/<branch>` on a remote
//! with the user's own `git push` (transport, credentials and configuration are git's).

use std::collections::{BTreeMap, HashMap, HashSet};

use super::{attachments, export, remote_ref, run_git, secrets};
use crate::git::repo::Repo;
use crate::model::{Attachment, Head, Node};
use crate::storage::pack::{LastPack, ReadChunks};
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
    /// Files git does not track that the push publishes and the remote lacks.
    pub untracked: Vec<Vec<u8>>,
    /// The attachments the push publishes and the remote lacks (checkpoint, name), oldest
    /// checkpoint first.
    pub attachments: Vec<(CheckpointId, String)>,
    /// Checkpoints written as new commits (by a dry run: that would be).
    pub exported: usize,
}

/// The remote a push goes to: the one named, else `checkpoint.remote`. Never a default
/// such as `origin`: in a clone that is the upstream project, and a push publishes files
/// git does not track and agent transcripts, so it goes only where the user said.
pub fn push_remote(repo: &Repo, named: Option<&str>) -> Result<String> {
    if let Some(name) = named
        .or_else(|| repo.config("checkpoint.remote"))
        .filter(|name| !name.is_empty())
    {
        return Ok(name.to_string());
    }
    let listed = super::git_ok(&repo.root, &["remote"], b"").unwrap_or_default();
    let listed = String::from_utf8_lossy(&listed);
    let names: Vec<&str> = listed.lines().map(str::trim).collect();
    let suggestion = if names.contains(&"origin") {
        "origin"
    } else {
        names
            .first()
            .copied()
            .filter(|name| !name.is_empty())
            .unwrap_or("<remote>")
    };
    Err(Error::RemoteNotNamed {
        suggestion: suggestion.to_string(),
    })
}

/// Pushes checkpoint branches to `options.remote`: fast-forward only unless `force`,
/// all or nothing (`git push --atomic`). Everything it would publish that the remote
/// lacks is first checked for what looks like secrets (`guard`).
pub fn push(repo: &Repo, store: &Store, options: &PushOptions) -> Result<PushReport> {
    if options.dry_run {
        return dry_run(repo, store, options);
    }
    let prepared = prepare(repo, store, options)?;
    let (tips, on_remote) = (&prepared.tips, &prepared.on_remote);
    let ids: Vec<CheckpointId> = tips.iter().map(|(_, id)| *id).collect();
    let exported = export::export_for(repo, store, &ids, &prepared.published)?;
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
    /// Files git does not track that the push publishes and the remote lacks.
    untracked: Vec<Vec<u8>>,
    /// Attachments the push publishes and the remote lacks.
    attachments: Vec<(CheckpointId, String)>,
    /// The checkpoints the remote has, as far as this store knows.
    published: HashSet<CheckpointId>,
}

/// Finds the branches, asks the remote what it has, and runs the secret guard over
/// everything the push would publish that the remote does not have yet.
fn prepare(repo: &Repo, store: &impl StoreRead, options: &PushOptions) -> Result<Prepared> {
    let snapshot = store.snapshot()?;
    let tips = chosen_branches(&snapshot, options)?;
    let on_remote = remote_refs(repo, &options.remote)?;
    let published = remote_has(&snapshot, &on_remote)?;
    let (new, boundary) = unpublished(&snapshot, &tips, &published)?;
    let (untracked, attachments) = guard(repo, &snapshot, &new, &boundary, &options.allow)?;
    Ok(Prepared {
        tips,
        on_remote,
        untracked,
        attachments,
        published,
    })
}

/// The checkpoints the remote has: what its checkpoint branches reach, as far as this
/// store knows them (a remote tip this store has no checkpoint for counts as nothing,
/// so more is checked, never less).
fn remote_has(
    snapshot: &Snapshot,
    on_remote: &BTreeMap<String, String>,
) -> Result<HashSet<CheckpointId>> {
    let mut there: HashSet<CheckpointId> = HashSet::new();
    let mut pending = Vec::new();
    for (name, sha) in on_remote {
        if !name.starts_with("refs/checkpoints/") {
            continue;
        }
        if let Some(id) = snapshot.checkpoint_of(sha)? {
            if snapshot.has_checkpoint(id)? {
                pending.push(id);
            }
        }
    }
    while let Some(id) = pending.pop() {
        if there.insert(id) {
            pending.extend(snapshot.checkpoint(id)?.parents);
        }
    }
    Ok(there)
}

/// The checkpoints reachable from `tips` that the remote does not have (`there` are
/// those it has), and those it has that they build on.
fn unpublished(
    snapshot: &Snapshot,
    tips: &[(String, CheckpointId)],
    there: &HashSet<CheckpointId>,
) -> Result<(Vec<CheckpointId>, Vec<CheckpointId>)> {
    let mut new = Vec::new();
    let mut boundary = Vec::new();
    let mut seen: HashSet<CheckpointId> = HashSet::new();
    let mut pending: Vec<CheckpointId> = tips.iter().map(|(_, id)| *id).collect();
    while let Some(id) = pending.pop() {
        if !seen.insert(id) {
            continue;
        }
        if there.contains(&id) {
            boundary.push(id);
            continue;
        }
        pending.extend(snapshot.checkpoint(id)?.parents);
        new.push(id);
    }
    Ok((new, boundary))
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
    let exported = export::unexported(repo, &snapshot, &ids, &prepared.published)?;
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

/// What a push publishes that the remote lacks: files git does not track, and
/// attachments (checkpoint, name).
type Published = (Vec<Vec<u8>>, Vec<(CheckpointId, String)>);

/// The secret guard over checkpoints `new` (what a push publishes and the remote lacks),
/// given `boundary`, the checkpoints the remote has that they build on. Every file of
/// `new` whose path and content no boundary checkpoint has is checked, by name and
/// content ([`secrets::looks_secret`]), tracked files too unless the content is what the
/// index holds (git publishes that anyway); so is every attachment of `new`, by name and
/// all its content. Refuses (listing them all) what looks like a secret and `allow`
/// does not name. Returns the new files git does not track, sorted, and the attachments,
/// oldest checkpoint first.
fn guard(
    repo: &Repo,
    snapshot: &Snapshot,
    new: &[CheckpointId],
    boundary: &[CheckpointId],
    allow: &[Vec<u8>],
) -> Result<Published> {
    if new.is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    let tracked: HashSet<Vec<u8>> = repo.tracked_paths()?.into_iter().collect();
    let trees = snapshot.trees(None)?;
    let chunks = snapshot.chunks()?;
    let mut last = LastPack::default();
    let mut seen_roots: HashSet<TreeId> = HashSet::new();
    // (path, content) pairs the remote has or that were checked already.
    let mut checked: HashSet<(Vec<u8>, Vec<ChunkId>)> = HashSet::new();
    for &id in boundary {
        let record = snapshot.checkpoint(id)?;
        if !seen_roots.insert(record.tree) {
            continue;
        }
        let mut files = Vec::new();
        trees.flatten(record.tree, b"", &mut files)?;
        checked.extend(files.into_iter().map(|(path, node)| {
            let ids = content_of(&node);
            (path, ids)
        }));
    }
    let mut untracked: HashSet<Vec<u8>> = HashSet::new();
    let mut secret: BTreeMap<String, &'static str> = BTreeMap::new();
    let mut carrying = Vec::new();
    for &id in new {
        let record = snapshot.checkpoint(id)?;
        for attachment in &record.attachments {
            let found = secrets::scan(attachment.name.as_bytes(), None, |out| {
                read_chunks(snapshot, &chunks, &attachment.chunks, &mut last, out)
            })?;
            if let Some(why) = found {
                if !allow.contains(&attachment.name.as_bytes().to_vec()) {
                    let short = snapshot.short_id(id)?;
                    secret.insert(format!("attachment {} of {short}", attachment.name), why);
                }
            }
        }
        if !record.attachments.is_empty() {
            carrying.push((id, record.time_ns, record.attachments.clone()));
        }
        if !seen_roots.insert(record.tree) {
            continue;
        }
        let mut files = Vec::new();
        trees.flatten(record.tree, b"", &mut files)?;
        for (path, node) in files {
            let ids = content_of(&node);
            if !checked.insert((path.clone(), ids.clone())) {
                continue;
            }
            let is_tracked = tracked.contains(&path);
            if !is_tracked {
                untracked.insert(path.clone());
            }
            let found = match &node {
                Node::Symlink { target } => secrets::looks_secret(&path, target),
                _ => secrets::scan(&path, Some(secrets::SCAN_LIMIT), |out| {
                    read_chunks(snapshot, &chunks, &ids, &mut last, out)
                })?,
            };
            let Some(why) = found else { continue };
            if allow.contains(&path) {
                continue;
            }
            if is_tracked && matches!(node, Node::File { .. } | Node::FileWithMode { .. }) {
                let mut content = Vec::new();
                read_chunks(snapshot, &chunks, &ids, &mut last, &mut |piece| {
                    content.extend_from_slice(piece);
                    true
                })?;
                if index_holds(repo, &path, &content)? {
                    continue;
                }
            }
            secret.insert(String::from_utf8_lossy(&path).into_owned(), why);
        }
    }
    if !secret.is_empty() {
        let found = secret
            .iter()
            .map(|(what, why)| format!("{what} ({why})"))
            .collect();
        return Err(Error::LooksSecret { found });
    }
    Ok(published(untracked, carrying))
}

/// [`guard`]'s answer: the `untracked` files sorted, and the attachments of the
/// `carrying` checkpoints (id, time, attachments), oldest first.
fn published(
    untracked: HashSet<Vec<u8>>,
    mut carrying: Vec<(CheckpointId, i128, Vec<Attachment>)>,
) -> Published {
    let mut list: Vec<Vec<u8>> = untracked.into_iter().collect();
    list.sort();
    carrying.sort_by_key(|(_, time, _)| *time);
    let attachments = carrying
        .into_iter()
        .flat_map(|(id, _, list)| list.into_iter().map(move |a| (id, a.name)))
        .collect();
    (list, attachments)
}

/// The chunks of a file's content; none for other nodes.
fn content_of(node: &Node) -> Vec<ChunkId> {
    match node {
        Node::File { chunks, .. } | Node::FileWithMode { chunks, .. } => chunks.clone(),
        Node::Symlink { .. } | Node::Dir { .. } => Vec::new(),
    }
}

/// Reads chunk `ids` one at a time, handing each to `out` (which may stop early).
fn read_chunks<'a>(
    snapshot: &Snapshot,
    chunks: &'a ReadChunks,
    ids: &[ChunkId],
    last: &mut LastPack<'a>,
    out: &mut dyn FnMut(&[u8]) -> bool,
) -> Result<()> {
    let mut buf = Vec::new();
    for &chunk in ids {
        buf.clear();
        chunks.read(snapshot.hasher(), chunk, &mut buf, last)?;
        if !out(&buf) {
            break;
        }
    }
    Ok(())
}

/// Whether the index holds `path` with exactly `content` (`git cat-file --batch` of
/// `:<path>`); a path the index lacks, or one git cannot name on a line, does not.
fn index_holds(repo: &Repo, path: &[u8], content: &[u8]) -> Result<bool> {
    if path.contains(&b'\n') {
        return Ok(false);
    }
    let mut input = b":".to_vec();
    input.extend_from_slice(path);
    input.push(b'\n');
    let out = super::git_ok(&repo.root, &["cat-file", "--batch"], &input)?;
    let Some(end) = out.iter().position(|&b| b == b'\n') else {
        return Ok(false);
    };
    let header = String::from_utf8_lossy(&out[..end]);
    let mut fields = header.split(' ');
    let (Some(_), Some("blob"), Some(size)) = (fields.next(), fields.next(), fields.next()) else {
        return Ok(false);
    };
    let body = &out[end + 1..];
    Ok(size.parse::<usize>().ok() == Some(content.len())
        && body.get(..content.len()) == Some(content))
}
