//! Sharing checkpoints through git remotes (docs/design.md, "Sharing through git").
//!
//! A checkpoint becomes a git commit ([`export`]), written into the repository's own
//! object store with one `git fast-import` run and remembered in the store, so each is
//! written once. [`push`] sends them with the user's own `git push` to
//! `refs/checkpoints/<branch>` on a remote, never under `refs/heads`, so ordinary clones
//! never see them; [`fetch`] brings them back into `refs/checkpoints-remote/<remote>/`
//! and [`import`]s new commits into the store through the same chunker as a save. The
//! only refs this module writes in the repository are those under
//! `refs/checkpoints-remote/` and `refs/checkpoints-remote-attachments/`, and the branch
//! `export -b` names. Attachments travel beside the commits ([`attachments`]).

pub mod attachments;
mod cat_file;
mod commit_check;
pub mod export;
pub mod fetch;
pub mod import;
pub mod message;
pub mod pull;
pub mod push;
pub mod secrets;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use std::collections::HashSet;

use crate::git::repo::Repo;
use crate::storage::Snapshot;
use crate::{CheckpointId, Error, Result};

/// The remote ref a checkpoint branch is pushed to.
pub fn remote_ref(branch: &str) -> String {
    format!("refs/checkpoints/{branch}")
}

/// The local ref a fetched branch of `remote` is kept at.
pub fn tracking_ref(remote: &str, branch: &str) -> String {
    format!("refs/checkpoints-remote/{remote}/{branch}")
}

/// The remote to use: the one named, else `checkpoint.remote`, else `origin`.
pub fn remote_name(repo: &Repo, named: Option<&str>) -> String {
    named
        .map(str::to_string)
        .or_else(|| repo.config("checkpoint.remote").map(str::to_string))
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "origin".to_string())
}

/// The names of the repository's configured remotes.
pub fn configured_remotes(repo: &Repo) -> Result<Vec<String>> {
    let listed = git_ok(&repo.root, &["remote"], b"")?;
    Ok(String::from_utf8_lossy(&listed)
        .lines()
        .map(str::to_string)
        .collect())
}

/// Whether fetched branch `name` (`<remote>/<branch>`) belongs to one of `remotes`.
pub fn has_remote(name: &str, remotes: &[String]) -> bool {
    remotes.iter().any(|remote| {
        name.strip_prefix(remote.as_str())
            .is_some_and(|rest| rest.starts_with('/'))
    })
}

/// Refuses `remote` when another configured remote's name starts with its name and a
/// `/` (or the other way round): their fetched branches would share one namespace, so
/// fetching one would take the other's branches for its own and forget them.
pub(crate) fn check_namespace(repo: &Repo, remote: &str) -> Result<()> {
    let listed = configured_remotes(repo)?;
    let under = |outer: &str, inner: &str| {
        inner
            .strip_prefix(outer)
            .is_some_and(|rest| rest.starts_with('/'))
    };
    match listed
        .iter()
        .find(|other| under(remote, other) || under(other, remote))
    {
        Some(other) => {
            let (outer, inner) = if under(remote, other) {
                (remote, other.as_str())
            } else {
                (other.as_str(), remote)
            };
            Err(Error::InvalidArgument(format!(
                "remotes '{outer}' and '{inner}' would share the fetched branches under '{outer}/'; rename one (git remote rename {inner} {})",
                inner.replace('/', "-")
            )))
        }
        None => Ok(()),
    }
}

/// What a git process printed, and whether it succeeded.
pub(crate) struct GitOutput {
    pub(crate) ok: bool,
    pub(crate) stdout: Vec<u8>,
    pub(crate) stderr: String,
}

/// Runs git in `dir` with `input` on its stdin; a failure to start is an error, a
/// failing exit is left to the caller.
pub(crate) fn run_git(dir: &Path, args: &[&str], input: &[u8]) -> Result<GitOutput> {
    let cannot = |e: std::io::Error| Error::Git {
        command: args.first().unwrap_or(&"").to_string(),
        message: format!("cannot run git: {e}"),
    };
    let mut child = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(cannot)?;
    let mut stdin = child.stdin.take();
    // Writing while git writes back could fill both pipes; a thread writes the input.
    let out = std::thread::scope(|scope| {
        let writer = scope.spawn(move || {
            if let Some(stdin) = stdin.as_mut() {
                // git may stop reading early on an error it then reports; that error is
                // the one worth showing, so a broken pipe here is not.
                let _ = stdin.write_all(input);
            }
            drop(stdin);
        });
        let out = child.wait_with_output();
        let _ = writer.join();
        out
    })
    .map_err(cannot)?;
    Ok(GitOutput {
        ok: out.status.success(),
        stdout: out.stdout,
        stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
    })
}

/// [`run_git`], with a failing exit as [`Error::Git`].
pub(crate) fn git_ok(dir: &Path, args: &[&str], input: &[u8]) -> Result<Vec<u8>> {
    let out = run_git(dir, args, input)?;
    if out.ok {
        Ok(out.stdout)
    } else {
        Err(Error::Git {
            command: args.first().unwrap_or(&"").to_string(),
            message: out.stderr,
        })
    }
}

/// The commits of `commits` that the repository does not have.
pub(crate) fn missing_commits(repo: &Repo, commits: &[String]) -> Result<Vec<String>> {
    if commits.is_empty() {
        return Ok(Vec::new());
    }
    let input = commits.join("\n") + "\n";
    let out = git_ok(
        &repo.root,
        &["cat-file", "--batch-check=%(objectname) %(objecttype)"],
        input.as_bytes(),
    )?;
    let text = String::from_utf8_lossy(&out);
    Ok(commits
        .iter()
        .zip(text.lines())
        .filter(|(_, line)| !line.ends_with(" commit"))
        .map(|(sha, _)| sha.clone())
        .collect())
}

/// Whether checkpoint `ancestor` is `tip` or one of its ancestors.
pub(crate) fn is_ancestor(
    snapshot: &Snapshot,
    ancestor: CheckpointId,
    tip: CheckpointId,
) -> Result<bool> {
    let mut seen = HashSet::new();
    let mut pending = vec![tip];
    while let Some(id) = pending.pop() {
        if id == ancestor {
            return Ok(true);
        }
        if seen.insert(id) {
            pending.extend(snapshot.checkpoint(id)?.parents);
        }
    }
    Ok(false)
}
