//! A plain git hook: `post-commit` saves a checkpoint of each commit's worktree with
//! `commit=<the new commit>` as metadata, so "which checkpoints led to commit X" is
//! `log --all --meta commit=X`, and no commit message changes.
//!
//! The hook file is found as git finds it (`git rev-parse --git-path
//! hooks/post-commit`, which follows `core.hooksPath` and linked worktrees). git runs
//! one file per hook, and an existing hook may be in any language, so it is not edited:
//! install moves it aside, byte for byte, to `post-commit.before-checkpoint` beside it,
//! and writes [`GIT_HOOK_SCRIPT`], which runs that file first (when executable, as git
//! would) and keeps its exit status. Uninstall removes our script only if it is still
//! exactly ours, and moves the user's file back, so its bytes and mode are what they
//! were before install.
//!
//! It is one of the registry's [`Agent`]s so that `hooks install git` and `hooks uninstall
//! git` go the same way as every agent's, but it has no `hooks run` and only the
//! repository's own hook file ([`HookKind::GitCommit`]).

use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::agent::{Agent, HookRun};
use super::kinds::{HookKind, HooksState, Installed, Scope};
use super::mcp_entry::McpConfig;
use crate::git::repo::Repo;
use crate::{Error, Result};

/// The hook git-checkpoint installs.
pub const GIT_HOOK: &str = "post-commit";
/// What an existing hook is renamed to, beside it.
pub const GIT_HOOK_BEFORE_SUFFIX: &str = ".before-checkpoint";
/// Our hook script, byte for byte: uninstall removes the hook file only if it is this.
pub const GIT_HOOK_SCRIPT: &str = "#!/bin/sh\n\
# Written by 'git checkpoint hooks install git'; 'git checkpoint hooks uninstall git'\n\
# removes it and puts back the hook it moved aside ($0.before-checkpoint), if any.\n\
status=0\n\
if [ -x \"$0.before-checkpoint\" ]; then \"$0.before-checkpoint\" \"$@\"; status=$?; fi\n\
git checkpoint save -q --allow-empty -m \"commit $(git rev-parse --short HEAD)\" \\\n\
  --meta commit=\"$(git rev-parse HEAD)\" --meta event=post-commit\n\
exit $status\n";

/// git itself: a `post-commit` hook recording each commit.
pub struct Git;

impl Agent for Git {
    fn name(&self) -> &'static str {
        "git"
    }

    fn about(&self) -> &'static str {
        "git itself: a post-commit hook recording each commit (install and uninstall only)"
    }

    fn kind(&self) -> HookKind {
        HookKind::GitCommit
    }

    /// The hook lives in the git dir, outside the worktree.
    fn worktree_hook_files(&self) -> Vec<String> {
        Vec::new()
    }

    /// git runs no MCP server.
    fn mcp(&self) -> Option<McpConfig> {
        None
    }

    /// The hook goes where git looks for it; only [`Scope::Personal`] (no flag) names it.
    fn hooks_path(&self, scope: Scope, start: &Path) -> Result<PathBuf> {
        if scope != Scope::Personal {
            return Err(Error::InvalidArgument(
                "the git hook goes where git looks for this repository's hooks \
                 (core.hooksPath, else .git/hooks); --shared and --global do not apply"
                    .into(),
            ));
        }
        git_hook_path(&Repo::discover(start)?)
    }

    /// Ours runs the hook it moved aside first: [`Installed::Added`] names it.
    fn install(&self, hook: &Path) -> Result<Installed> {
        if !install(hook)? {
            return Ok(Installed::AlreadyThere);
        }
        let before = before_path(hook);
        Ok(Installed::Added {
            runs_first: before.exists().then_some(before),
        })
    }

    fn uninstall(&self, hook: &Path) -> Result<bool> {
        uninstall(hook)
    }

    /// Ours is the script exactly as this build writes it; one edited since is the
    /// user's.
    fn hooks_state(&self, hook: &Path) -> Result<HooksState> {
        Ok(match is_ours(hook)? {
            Some(true) => HooksState::Current,
            _ => HooksState::Missing,
        })
    }

    fn run(&self, _input: &[u8], _fallback_dir: &Path) -> Result<HookRun> {
        Err(Error::InvalidArgument(
            "the git hook runs 'git checkpoint save' itself; 'hooks run' is for agents".into(),
        ))
    }
}

/// The `post-commit` hook file of the repository at `repo`, as git finds it.
fn git_hook_path(repo: &Repo) -> Result<PathBuf> {
    let out = crate::git::repo::git(
        &repo.root,
        &["rev-parse", "--git-path", &format!("hooks/{GIT_HOOK}")],
    )?;
    let path = out.strip_suffix(b"\n").unwrap_or(&out);
    Ok(repo.root.join(std::ffi::OsStr::from_bytes(path)))
}

/// Where install moves an existing hook at `hook`.
fn before_path(hook: &Path) -> PathBuf {
    let mut name = hook.as_os_str().to_os_string();
    name.push(GIT_HOOK_BEFORE_SUFFIX);
    PathBuf::from(name)
}

/// Whether the file at `path` is our script; `None` when there is nothing at `path`.
fn is_ours(path: &Path) -> Result<Option<bool>> {
    super::paths::holds_exactly(path, GIT_HOOK_SCRIPT.as_bytes())
}

/// Installs our hook at `hook`, moving an existing one aside. Returns false if ours was
/// there already. Refuses, changing nothing, when something is already where the
/// existing hook would go.
fn install(hook: &Path) -> Result<bool> {
    let existing = match is_ours(hook)? {
        Some(true) => return Ok(false),
        Some(false) => true,
        None => false,
    };
    let before = before_path(hook);
    if existing && std::fs::symlink_metadata(&before).is_ok() {
        return Err(Error::InvalidArgument(format!(
            "{} is in the way: install would move {} there; move it away first",
            before.display(),
            hook.display()
        )));
    }
    let dir = hook
        .parent()
        .ok_or_else(|| Error::InvalidArgument(format!("{} has no directory", hook.display())))?;
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    // Ours is written in full first, so a failure leaves the user's hook where it was.
    let mut staged = tempfile::Builder::new()
        .prefix(".post-commit.")
        .tempfile_in(dir)
        .map_err(|e| Error::io(dir, e))?;
    staged
        .write_all(GIT_HOOK_SCRIPT.as_bytes())
        .map_err(|e| Error::io(staged.path(), e))?;
    std::fs::set_permissions(
        staged.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .map_err(|e| Error::io(staged.path(), e))?;
    if existing {
        std::fs::rename(hook, &before).map_err(|e| Error::io(hook, e))?;
    }
    if let Err(e) = staged.persist_noclobber(hook) {
        if existing {
            let _ = std::fs::rename(&before, hook);
        }
        return Err(Error::io(hook, e.error));
    }
    Ok(true)
}

/// Removes our hook at `hook` and moves back the hook install moved aside. Returns false
/// when our hook is not there; refuses a hook file that is not exactly ours (it was
/// edited since, or is someone else's).
fn uninstall(hook: &Path) -> Result<bool> {
    match is_ours(hook)? {
        None => return Ok(false),
        Some(false) => {
            return Err(Error::InvalidArgument(format!(
                "{} is not the hook git-checkpoint wrote (edited since?); leaving it alone",
                hook.display()
            )))
        }
        Some(true) => {}
    }
    let before = before_path(hook);
    if std::fs::symlink_metadata(&before).is_ok() {
        std::fs::rename(&before, hook).map_err(|e| Error::io(&before, e))?;
    } else {
        std::fs::remove_file(hook).map_err(|e| Error::io(hook, e))?;
    }
    Ok(true)
}
