//! `fetch`: bring a remote's `refs/checkpoints/*` into `refs/checkpoints-remote/<remote>/`
//! with the user's own `git fetch`, import the new commits, and record each branch's tip
//! as `<remote>/<branch>` in the store.

use super::attachments::{attachments_ref, tracking_attachments_ref};
use super::{git_ok, import, missing_commits, remote_ref, tracking_ref};
use crate::git::repo::Repo;
use crate::model::operation::{NewOperation, OpKind};
use std::collections::HashMap;

use crate::settings::Settings;
use crate::storage::{ReadStore, Snapshot, Store, StoreRead};
use crate::{CheckpointId, Result};

/// One fetched branch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FetchedBranch {
    /// `<remote>/<branch>`, as revisions name it.
    pub name: String,
    /// Its tip in this store.
    pub tip: CheckpointId,
    /// Whether its tip moved (or it is new).
    pub changed: bool,
}

/// What a fetch did.
#[derive(Clone, Debug, Default)]
pub struct FetchReport {
    /// Each branch fetched.
    pub branches: Vec<FetchedBranch>,
    /// Checkpoints imported.
    pub imported: usize,
    /// Branches gone from the remote, forgotten here.
    pub removed: Vec<String>,
    /// Branches refused (`<remote>/<branch>`), each with why: their name holds a
    /// character a shell could act on, or their tip, or a commit below it, is not one a
    /// checkpoint export writes. One refused for its tip keeps the tip it had here, if
    /// any; one refused for its name is never recorded. The other branches are fetched
    /// all the same.
    pub refused: Vec<(String, String)>,
    /// What the imported checkpoints left out, one line each (files larger than
    /// `checkpoint.maxFileSize`, attachments whose names no file can have).
    pub warnings: Vec<String>,
}

/// Fetches `branches` (all when empty) of `remote`. The store is first only read
/// (`open_read`); it is opened for writing (`open_write`) only when there is something
/// to import or a branch moved, so fetching an unchanged remote leaves it untouched.
/// The opening functions may fail with the caller's own error type.
pub fn fetch<E: From<crate::Error>>(
    repo: &Repo,
    open_read: impl FnOnce() -> std::result::Result<ReadStore, E>,
    open_write: impl FnOnce() -> std::result::Result<Store, E>,
    remote: &str,
    branches: &[String],
    settings: &Settings,
) -> std::result::Result<FetchReport, E> {
    fetch_refs(repo, remote, branches)?;
    let (tips, misnamed) = refuse_unsafe_names(remote, tracked_tips(repo, remote, branches)?);
    let read = open_read()?;
    let wanted = to_import(repo, &read, remote, &tips)?;
    let mut found = HashMap::new();
    {
        let snapshot = read.snapshot()?;
        for sha in &wanted {
            if let Some(id) = snapshot.checkpoint_of(sha)? {
                found.insert(sha.clone(), id);
            }
        }
        if wanted.iter().all(|sha| found.contains_key(sha)) {
            let mut report = changes(&snapshot, remote, branches, &tips, &found, 0)?;
            if report.branches.iter().all(|b| !b.changed) && report.removed.is_empty() {
                report.refused = misnamed;
                return Ok(report);
            }
        }
    }
    drop(read);
    let store = open_write()?;
    let imported = import::import(repo, &store, &wanted, settings)?;
    let mut report = changes(
        &store.snapshot()?,
        remote,
        branches,
        &tips,
        &imported.found,
        imported.count,
    )?;
    report.warnings = imported.warnings;
    report.refused = misnamed;
    for (branch, sha) in &tips {
        if let Some(why) = imported.refused.get(sha) {
            report
                .refused
                .push((format!("{remote}/{branch}"), why.clone()));
        }
    }
    if report.branches.iter().any(|b| b.changed) || !report.removed.is_empty() {
        let txn = store.transaction()?;
        let before = txn.view()?;
        let moved = report.branches.iter().filter(|b| b.changed).count();
        for branch in report.branches.iter().filter(|b| b.changed) {
            txn.set_remote_branch(&branch.name, branch.tip)?;
        }
        for name in &report.removed {
            txn.remove_remote_branch(name)?;
        }
        let summary = format!(
            "fetch {remote}: {moved} branch(es) moved, {} gone",
            report.removed.len()
        );
        txn.record_operation(NewOperation::new(OpKind::Fetch, summary, before))?;
        txn.commit()?;
    }
    Ok(report)
}

/// Runs the user's `git fetch` of `branches` (all when empty, pruning those gone) of
/// `remote` into the tracking refs, with each branch's attachments ref when the remote
/// has one.
fn fetch_refs(repo: &Repo, remote: &str, branches: &[String]) -> Result<()> {
    // Fetched branches are kept under the remote's name, so a URL will not do.
    let configured = super::run_git(&repo.root, &["remote", "get-url", remote], b"")?;
    if !configured.ok {
        return Err(crate::Error::InvalidArgument(format!(
            "'{remote}' is not a configured remote; fetch keeps branches under a remote's name (git remote add <name> <url>)"
        )));
    }
    super::check_namespace(repo, remote)?;
    let mut args = vec![
        "fetch".to_string(),
        "--quiet".into(),
        "--no-tags".into(),
        "--no-write-fetch-head".into(),
    ];
    if branches.is_empty() {
        args.push("--prune".into());
        args.push(remote.to_string());
        args.push(format!("+refs/checkpoints/*:{}", tracking_ref(remote, "*")));
        args.push(format!(
            "+{}:{}",
            attachments_ref("*"),
            tracking_attachments_ref(remote, "*")
        ));
    } else {
        // A named ref the remote lacks fails the whole fetch, and a branch pushed
        // without attachments has no attachments ref: ask which it has first.
        let mut ask = vec!["ls-remote".to_string(), remote.to_string()];
        ask.extend(branches.iter().map(|b| attachments_ref(b)));
        let ask: Vec<&str> = ask.iter().map(String::as_str).collect();
        let listed = String::from_utf8_lossy(&git_ok(&repo.root, &ask, b"")?).into_owned();
        let present: std::collections::HashSet<&str> = listed
            .lines()
            .filter_map(|line| line.split_once('\t'))
            .map(|(_, name)| name)
            .collect();
        args.push(remote.to_string());
        for branch in branches {
            args.push(format!(
                "+{}:{}",
                remote_ref(branch),
                tracking_ref(remote, branch)
            ));
            let side = attachments_ref(branch);
            if present.contains(side.as_str()) {
                args.push(format!(
                    "+{side}:{}",
                    tracking_attachments_ref(remote, branch)
                ));
            }
        }
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    git_ok(&repo.root, &args, b"")?;
    Ok(())
}

/// The tracking refs of `remote` after the fetch, as (branch, commit), sorted: those of
/// `branches`, or all when it is empty.
fn tracked_tips(repo: &Repo, remote: &str, branches: &[String]) -> Result<Vec<(String, String)>> {
    let prefix = tracking_ref(remote, "");
    let listing = git_ok(
        &repo.root,
        &["for-each-ref", "--format=%(objectname) %(refname)", &prefix],
        b"",
    )?;
    let mut tips: Vec<(String, String)> = String::from_utf8_lossy(&listing)
        .lines()
        .filter_map(|line| line.split_once(' '))
        .filter_map(|(sha, name)| {
            let branch = name.strip_prefix(&prefix)?;
            Some((branch.to_string(), sha.to_string()))
        })
        .filter(|(branch, _)| branches.is_empty() || branches.contains(branch))
        .collect();
    tips.sort();
    Ok(tips)
}

/// Why a fetched branch whose name holds anything but ASCII letters, digits and `-_./`
/// is refused. git takes such names (`fix-$(touch${IFS}x)` is a valid ref), but a shell
/// runs them once completion or a copied command puts them on a command line.
const UNSAFE_NAME: &str =
    "its name holds characters other than letters, digits and - _ . / (a shell could run it)";

/// Whether a fetched branch name holds only characters that mean nothing to a shell:
/// ASCII letters, digits, `-`, `_`, `.` and `/`.
fn is_shell_safe(branch: &str) -> bool {
    branch
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-_./".contains(&b))
}

/// Pairs of two strings: (branch, commit) for tips, (`<remote>/<branch>`, why) for
/// refusals.
type Pairs = Vec<(String, String)>;

/// `tips` split into the branches a fetch takes and those it refuses for their names
/// (`<remote>/<branch>` with why): a refused branch is neither imported nor recorded, and
/// one recorded by an earlier version is forgotten like a branch gone from the remote.
fn refuse_unsafe_names(remote: &str, tips: Pairs) -> (Pairs, Pairs) {
    let (safe, unsafe_named): (Vec<_>, Vec<_>) = tips
        .into_iter()
        .partition(|(branch, _)| is_shell_safe(branch));
    let refused = unsafe_named
        .into_iter()
        .map(|(branch, _)| (format!("{remote}/{branch}"), UNSAFE_NAME.to_string()))
        .collect();
    (safe, refused)
}

/// The commits an import of `tips` looks at, parents first, then the tips themselves:
/// those below the tips and not below what the store already imported from `remote`
/// (which bounds the walk).
fn to_import(
    repo: &Repo,
    read: &ReadStore,
    remote: &str,
    tips: &[(String, String)],
) -> Result<Vec<String>> {
    let known: Vec<String> = {
        let snapshot = read.snapshot()?;
        let mut known = Vec::new();
        for (name, tip) in snapshot.remote_branches()? {
            if name.starts_with(&format!("{remote}/")) {
                known.extend(snapshot.commit_of(tip)?);
            }
        }
        let missing = missing_commits(repo, &known)?;
        known.retain(|sha| !missing.contains(sha));
        known
    };
    let mut wanted = if tips.is_empty() {
        Vec::new()
    } else {
        let mut args = vec!["rev-list", "--topo-order", "--reverse"];
        args.extend(tips.iter().map(|(_, sha)| sha.as_str()));
        let not: Vec<String> = known.iter().map(|sha| format!("^{sha}")).collect();
        args.extend(not.iter().map(String::as_str));
        String::from_utf8_lossy(&git_ok(&repo.root, &args, b"")?)
            .lines()
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    wanted.extend(tips.iter().map(|(_, sha)| sha.clone()));
    Ok(wanted)
}

/// How the fetched `tips` (branch, commit) differ from the store's `<remote>/*`
/// branches, with `found` giving each commit's checkpoint. With every branch fetched,
/// branches the remote no longer has are to be removed.
fn changes(
    snapshot: &Snapshot,
    remote: &str,
    branches: &[String],
    tips: &[(String, String)],
    found: &HashMap<String, CheckpointId>,
    imported: usize,
) -> Result<FetchReport> {
    let mut report = FetchReport {
        imported,
        ..FetchReport::default()
    };
    for (branch, sha) in tips {
        let name = format!("{remote}/{branch}");
        let Some(&tip) = found.get(sha) else {
            continue;
        };
        let changed = snapshot.remote_branch(&name)? != Some(tip);
        report.branches.push(FetchedBranch { name, tip, changed });
    }
    if branches.is_empty() {
        for (name, _) in snapshot.remote_branches()? {
            let gone = name
                .strip_prefix(&format!("{remote}/"))
                .is_some_and(|branch| !tips.iter().any(|(b, _)| b == branch));
            if gone {
                report.removed.push(name);
            }
        }
    }
    Ok(report)
}
