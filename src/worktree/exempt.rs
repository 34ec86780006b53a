//! Paths inside the worktree that are not the worktree's own, so that no checkpoint holds
//! them and no restore changes them (docs/design.md invariant 16):
//!
//! - the linked worktrees of the same repository (`git worktree add`; an agent's
//!   `claude --worktree` makes them under `.claude/worktrees/`). Their files belong to
//!   that worktree, which has its own git dir and its own checkpoints; restoring this
//!   worktree must never rewind another one's work.
//! - the agents' files that `hooks install` and `mcp install` write (`Repo::agent_files`,
//!   which the agents layer supplies), at the top and, for the agents that read a
//!   project's settings in the directory they start in (Claude Code, Gemini CLI), in any
//!   directory: restoring a checkpoint from before the install must not take the hooks
//!   or the MCP server away.
//! - the repository's own git dir, its common dir and the store, where they lie inside
//!   the worktree under a name other than `.git` (a dotfiles repository's `~/.dotfiles`,
//!   `--separate-git-dir`, `core.worktree`): capturing them would publish git's config and
//!   objects, and restoring them would rewind git's refs and replace the store itself.
//!
//! - the cookies a watcher writes in the worktree's top for a moment
//!   ([`WATCH_COOKIE_PREFIX`]): they are the watcher's, and gone again at once.
//!
//! A nested independent repository (a `.git` directory, or a `.git` file naming a git dir
//! that is not one of this repository's worktrees, as a submodule's does) is the
//! worktree's own and is captured.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::git::repo::Repo;

/// Whether the worktree path `path` is one of the agents' files of `repo`
/// ([`Repo::agent_files`]).
pub fn is_agent_file(repo: &Repo, path: &[u8]) -> bool {
    repo.agent_files.contains(path)
}

/// How the names of the files a watcher writes in the worktree's top begin: a cookie,
/// whose event tells the watcher that the events of every earlier change have reached it
/// (`watch::cookie`, on macOS). No walk, save, status or restore sees one. The probe of
/// what the filesystem's names ignore (`worktree::names::probe`) names its file so too.
pub const WATCH_COOKIE_PREFIX: &str = ".git-checkpoint-cookie-";

/// Whether the worktree path `path` is a watcher's cookie ([`WATCH_COOKIE_PREFIX`], in
/// the top directory).
pub fn is_watch_cookie(path: &[u8]) -> bool {
    path.starts_with(WATCH_COOKIE_PREFIX.as_bytes()) && !path.contains(&b'/')
}

/// A `.git` file is one line naming a directory; anything longer is not one git wrote.
const MAX_GIT_FILE: u64 = 64 * 1024;

/// Recognises the linked worktrees of one repository.
#[derive(Debug, Clone)]
pub struct LinkedWorktrees {
    /// `<common git dir>/worktrees`, canonical; `None` while the repository has never had
    /// a linked worktree, so that nothing can be one.
    admin: Option<PathBuf>,
}

impl LinkedWorktrees {
    /// The linked worktrees of `repo`'s repository.
    pub fn of(repo: &Repo) -> LinkedWorktrees {
        LinkedWorktrees {
            admin: repo.common_dir.join("worktrees").canonicalize().ok(),
        }
    }

    /// Whether the directory `dir` is the top of a linked worktree of this repository:
    /// it holds a `.git` file (not a directory, not a symlink) whose `gitdir:` line names
    /// a directory inside `<common git dir>/worktrees/`. A relative `gitdir:` is taken
    /// from `dir`, as git takes it; both sides are compared canonical, so a worktree
    /// reached through a symlinked path is still recognised.
    pub fn is_linked(&self, dir: &Path) -> bool {
        let Some(admin) = &self.admin else {
            return false;
        };
        let dot_git = dir.join(".git");
        match std::fs::symlink_metadata(&dot_git) {
            Ok(meta) if meta.is_file() && meta.len() <= MAX_GIT_FILE => {}
            _ => return false,
        }
        let mut text = Vec::new();
        let read = std::fs::File::open(&dot_git)
            .and_then(|file| file.take(MAX_GIT_FILE).read_to_end(&mut text));
        if read.is_err() {
            return false;
        }
        let Some(rest) = text.strip_prefix(b"gitdir:") else {
            return false;
        };
        let line = rest.split(|&b| b == b'\n').next().unwrap_or(rest);
        let target = line.trim_ascii();
        if target.is_empty() {
            return false;
        }
        dir.join(OsStr::from_bytes(target))
            .canonicalize()
            .is_ok_and(|target| target != *admin && target.starts_with(admin))
    }
}

/// The repository's own directories that lie inside the worktree under another name than
/// `.git`, as worktree paths: the git dir, the common dir and the store's directory. A
/// `.git` anywhere is left out by its name already; these are found by where they are.
#[derive(Debug, Clone, Default)]
pub struct GitDirs {
    /// Each a worktree path, never empty.
    inside: Vec<Vec<u8>>,
}

impl GitDirs {
    /// The git directories of `repo` that lie inside its worktree. Both sides are
    /// compared canonical, so a git dir named through a symlink is still found where the
    /// walk meets it as a real directory.
    pub fn of(repo: &Repo) -> GitDirs {
        let canonical = |path: &Path| path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
        let root = canonical(&repo.root);
        let mut inside = Vec::new();
        for dir in [&repo.git_dir, &repo.common_dir, &repo.checkpoint_dir()] {
            let dir = canonical(dir);
            // A git dir that is the worktree's top itself cannot be left out whole; its
            // store directory below it still is.
            if let Ok(rel) = dir.strip_prefix(&root) {
                let rel = rel.as_os_str().as_bytes();
                if !rel.is_empty() && !inside.iter().any(|known: &Vec<u8>| known == rel) {
                    inside.push(rel.to_vec());
                }
            }
        }
        GitDirs { inside }
    }

    /// Whether the worktree path `path` is one of these directories.
    pub fn is(&self, path: &[u8]) -> bool {
        self.inside.iter().any(|dir| dir == path)
    }

    /// Whether the worktree path `path` is one of these directories or lies below one.
    pub fn contains(&self, path: &[u8]) -> bool {
        self.inside.iter().any(|dir| {
            path.strip_prefix(dir.as_slice())
                .is_some_and(|rest| rest.is_empty() || rest.first() == Some(&b'/'))
        })
    }
}

/// What a worktree path was found to be, remembered per directory by [`ExemptPaths`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum DirKind {
    /// A real directory of this worktree.
    Own,
    /// The top of a linked worktree of the same repository.
    Linked,
    /// Missing, a file or a symlink.
    NotADirectory,
}

/// Decides, for many worktree paths in turn, which are exempt: an agent's file, a
/// linked worktree or inside one, the repository's own git dirs or inside one. Each
/// directory is looked at once.
#[derive(Debug)]
pub struct ExemptPaths<'r> {
    repo: &'r Repo,
    root: &'r Path,
    git_dirs: GitDirs,
    linked: LinkedWorktrees,
    seen: HashMap<Vec<u8>, DirKind>,
}

impl<'r> ExemptPaths<'r> {
    /// The exempt paths of `repo`'s worktree, as the filesystem shows them now.
    pub fn of(repo: &'r Repo) -> ExemptPaths<'r> {
        ExemptPaths {
            repo,
            root: &repo.root,
            git_dirs: GitDirs::of(repo),
            linked: LinkedWorktrees::of(repo),
            seen: HashMap::new(),
        }
    }

    /// Whether the worktree path `path` is exempt. The git dirs go by path alone: a
    /// checkpoint may hold `.dotfiles/HEAD` from before `.dotfiles` became the git dir,
    /// and it is spared whatever is there now. For linked worktrees only real directories
    /// are looked into: below a symlink or a file nothing is the worktree's, so nothing
    /// there is a linked worktree of it either.
    pub fn contains(&mut self, path: &[u8]) -> bool {
        if is_agent_file(self.repo, path) || is_watch_cookie(path) || self.git_dirs.contains(path) {
            return true;
        }
        if self.linked.admin.is_none() {
            return false;
        }
        let ends = path
            .iter()
            .enumerate()
            .filter(|&(_, &b)| b == b'/')
            .map(|(i, _)| i)
            .chain([path.len()]);
        for end in ends {
            let dir = &path[..end];
            let kind = match self.seen.get(dir) {
                Some(kind) => *kind,
                None => {
                    let full = self.root.join(OsStr::from_bytes(dir));
                    let kind = if !std::fs::symlink_metadata(&full).is_ok_and(|m| m.is_dir()) {
                        DirKind::NotADirectory
                    } else if self.linked.is_linked(&full) {
                        DirKind::Linked
                    } else {
                        DirKind::Own
                    };
                    self.seen.insert(dir.to_vec(), kind);
                    kind
                }
            };
            match kind {
                DirKind::Linked => return true,
                DirKind::NotADirectory => return false,
                DirKind::Own => {}
            }
        }
        false
    }
}
