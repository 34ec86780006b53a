//! Which worktrees a tool call may work on (docs/mcp.md, "Which worktree"): the one the
//! server was started for and the client's declared roots, nothing else. A tool's
//! `repo` chooses among them; a path that leads anywhere else, through `..`, a symlink
//! or an absolute path, is refused with a tool error that names the allowed places, so
//! an agent its client confines to one project cannot reach another repository through
//! this server.

use std::path::{Path, PathBuf};

use git_checkpoint::git::repo::Repo;

use crate::ui::failure::Failure;

/// Where the calls of one request may work.
#[derive(Clone, Debug)]
pub struct Scope {
    /// The directory a call starts from: `-C`, else the client's first root, else the
    /// server's working directory.
    pub base: PathBuf,
    /// The client's roots (`roots/list`), as local directories; empty when it declares
    /// none.
    pub roots: Vec<PathBuf>,
}

impl Scope {
    /// The worktree a call works on: the one around `base` when the call names no
    /// `repo`; else the one around `repo` (taken from `base` when relative), which must
    /// lie, with the worktree around it, inside an allowed place ([`Scope::allowed`]).
    pub fn repo(&self, repo: Option<&str>) -> anyhow::Result<Repo> {
        let Some(asked) = repo else {
            return discover(&self.base);
        };
        let allowed = self.allowed();
        let inside = |dir: &Path| {
            dir.canonicalize()
                .is_ok_and(|dir| allowed.iter().any(|place| dir.starts_with(place)))
        };
        let directory = self.base.join(asked);
        let refused = || {
            let places: Vec<String> = allowed.iter().map(|p| p.display().to_string()).collect();
            Failure::refused(format!(
                "repo '{asked}' is outside what this server may work on: {} (the worktree it was started for and the client's roots)",
                places.join(", ")
            ))
        };
        // Looked at before the worktree is sought, so that a refusal says nothing of
        // what lies outside.
        if !inside(&directory) {
            return Err(refused());
        }
        let found = discover(&directory)?;
        // A directory inside a root that is no worktree itself may belong to one that
        // holds the root (a home directory kept in git): that one is outside.
        if !inside(&found.root) {
            return Err(refused());
        }
        Ok(found)
    }

    /// The places a `repo` may lead into, canonical: for the server's own directory and
    /// each root, the top of the worktree around it, or the directory itself where no
    /// worktree holds it (a root that is a folder of projects).
    pub fn allowed(&self) -> Vec<PathBuf> {
        let mut places = Vec::new();
        for dir in std::iter::once(&self.base).chain(&self.roots) {
            let Ok(dir) = dir.canonicalize() else {
                continue;
            };
            let place = match Repo::discover(&dir) {
                Ok(repo) => repo.root.canonicalize().unwrap_or(repo.root),
                Err(_) => dir,
            };
            if !places.contains(&place) {
                places.push(place);
            }
        }
        places
    }
}

/// The worktree around `directory`, with paths taken from its top (a model names paths
/// from the top, wherever the server runs); outside one, git's error with where it
/// looked and how to start the server.
fn discover(directory: &Path) -> anyhow::Result<Repo> {
    let mut repo = Repo::discover(directory).map_err(|error| match error {
        git_checkpoint::Error::NotAWorktree(message) => {
            git_checkpoint::Error::NotAWorktree(format!(
                "{} (looked in {}; start the server inside the worktree or with -C <worktree>, or declare the worktree as one of the client's roots)",
                message.trim_end(),
                directory.display()
            ))
        }
        error => error,
    })?;
    repo.prefix.clear();
    Ok(repo)
}
