//! Finding the worktree in-process, following git's `setup_git_directory`: a walk up
//! from the current directory for `.git` (a directory, or a file naming one), a linked
//! worktree's `commondir`, `GIT_DIR` / `GIT_WORK_TREE`, `core.worktree` and `core.bare`,
//! `GIT_CEILING_DIRECTORIES` and the filesystem boundary. Paths come out resolved, as
//! `git rev-parse` prints them.
//!
//! Every case this module is not certain of answers `None` and the caller asks git:
//! a repository owned by someone else (git refuses it unless `safe.directory` says
//! otherwise), a bare repository or no repository at all (git's own wording is the
//! error), an unknown repository format or extension, and the rarer environment forms.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::git::config_env::env_bool;
use crate::git::config_syntax::{self, parse_bool};

/// What discovery found: what [`crate::git::Repo`] holds, and what reading the
/// configuration needs to know.
#[derive(Debug, Clone)]
pub(crate) struct Found {
    /// The directory discovery started from, resolved.
    pub cwd: PathBuf,
    /// The top of the worktree.
    pub root: PathBuf,
    /// The worktree's git directory, resolved.
    pub git_dir: PathBuf,
    /// The git directory as git holds it before resolving symbolic links (the
    /// `gitdir:` include condition tries both).
    pub git_dir_as_set: PathBuf,
    /// The directory shared by all worktrees, resolved.
    pub common_dir: PathBuf,
    /// `cwd` relative to `root`, with a trailing `/`, or empty at the top.
    pub prefix: Vec<u8>,
    /// `extensions.worktreeConfig`: `config.worktree` is read after the local config.
    pub worktree_config: bool,
}

/// Variables whose effect on discovery is left to git.
const LEFT_TO_GIT: &[&str] = &[
    "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY",
    "GIT_IMPLICIT_WORK_TREE",
    "GIT_TEST_ASSUME_DIFFERENT_OWNER",
];

/// Finds the worktree containing `dir` as git would, or `None` when git must be asked.
pub(crate) fn find(dir: &Path) -> Option<Found> {
    if LEFT_TO_GIT.iter().any(|v| std::env::var_os(v).is_some()) {
        return None;
    }
    let cwd = dir.canonicalize().ok()?;
    let work_tree_env = std::env::var_os("GIT_WORK_TREE").map(|w| cwd.join(w));
    match std::env::var_os("GIT_DIR") {
        Some(git_dir_env) => {
            let given = cwd.join(git_dir_env);
            // A `GIT_DIR` naming a `.git` file is left to git.
            if !std::fs::metadata(&given).ok()?.is_dir() || !is_git_directory(&given) {
                return None;
            }
            // git's rule for `GIT_DIR` alone: the current directory is the worktree.
            let default_root = cwd.clone();
            settle(cwd, given, work_tree_env, default_root)
        }
        None => {
            let (top, git_dir) = walk_up(&cwd)?;
            settle(cwd, git_dir, work_tree_env, top)
        }
    }
}

/// The repository at `git_dir` with its worktree from `GIT_WORK_TREE`, else
/// `core.worktree`, else `default_root`, as git's `setup_explicit_git_dir` orders them.
fn settle(
    cwd: PathBuf,
    git_dir_as_set: PathBuf,
    work_tree_env: Option<PathBuf>,
    default_root: PathBuf,
) -> Option<Found> {
    let git_dir = git_dir_as_set.canonicalize().ok()?;
    let common_dir = common_dir(&git_dir)?.canonicalize().ok()?;
    let format = Format::read(&git_dir, &common_dir)?;
    let root = match (work_tree_env, &format.worktree) {
        (Some(env), _) => env.canonicalize().ok()?,
        // A bare repository: git's error says it.
        (None, _) if format.bare => return None,
        (None, Some(configured)) => git_dir.join(configured).canonicalize().ok()?,
        (None, None) => default_root,
    };
    let prefix = prefix(&cwd, &root)?;
    Some(Found {
        cwd,
        root,
        git_dir,
        git_dir_as_set,
        common_dir,
        prefix,
        worktree_config: format.worktree_config,
    })
}

/// `cwd` relative to `root` as `git rev-parse --show-prefix` prints it; `None` when
/// `cwd` is outside the worktree (git then keeps no prefix at all).
fn prefix(cwd: &Path, root: &Path) -> Option<Vec<u8>> {
    let relative = cwd.strip_prefix(root).ok()?.as_os_str().as_bytes();
    let mut prefix = relative.to_vec();
    if !prefix.is_empty() {
        prefix.push(b'/');
    }
    Some(prefix)
}

/// Walks up from `cwd` for a `.git`: returns the directory holding it and the git
/// directory it names. Stops, as git does, below the deepest ceiling directory, at a
/// filesystem boundary, and before `/`. `None` also for a bare repository met on the
/// way and for a repository owned by someone else.
fn walk_up(cwd: &Path) -> Option<(PathBuf, PathBuf)> {
    let ceiling = ceiling_len(cwd.as_os_str().as_bytes())?;
    let one_filesystem = !env_bool("GIT_DISCOVERY_ACROSS_FILESYSTEM", false)?;
    let device = std::fs::metadata(cwd).ok()?.dev();
    let mut dir = cwd.to_path_buf();
    loop {
        let dot_git = dir.join(".git");
        match std::fs::metadata(&dot_git) {
            Ok(meta) if meta.is_dir() => {
                if is_git_directory(&dot_git) {
                    owned(&[&dir, &dot_git])?;
                    return Some((dir, dot_git));
                }
            }
            Ok(_) => {
                let git_dir = read_git_file(&dot_git)?;
                owned(&[&dot_git, &dir, &git_dir])?;
                return Some((dir, git_dir));
            }
            Err(_) => {}
        }
        if is_git_directory(&dir) {
            return None;
        }
        let parent = dir.parent()?.to_path_buf();
        let parent_len = match parent.as_os_str().as_bytes() {
            b"/" => 0,
            bytes => bytes.len(),
        };
        if parent_len <= ceiling {
            return None;
        }
        if one_filesystem && std::fs::metadata(&parent).ok()?.dev() != device {
            return None;
        }
        dir = parent;
    }
}

/// The length of the deepest `GIT_CEILING_DIRECTORIES` entry above `cwd` (0 for none:
/// git never looks at `/` itself). Entries are resolved unless they follow an empty one;
/// relative and missing ones are dropped, as git drops them.
fn ceiling_len(cwd: &[u8]) -> Option<usize> {
    let Some(list) = std::env::var_os("GIT_CEILING_DIRECTORIES") else {
        return Some(0);
    };
    let mut deepest = 0;
    let mut resolve = true;
    for entry in list.as_bytes().split(|&b| b == b':') {
        if entry.is_empty() {
            resolve = false;
            continue;
        }
        if !entry.starts_with(b"/") {
            continue;
        }
        let entry = if resolve {
            match Path::new(OsStr::from_bytes(entry)).canonicalize() {
                Ok(path) => path.into_os_string().into_encoded_bytes(),
                Err(_) => continue,
            }
        } else {
            entry.to_vec()
        };
        let entry = entry.strip_suffix(b"/").unwrap_or(&entry);
        let len = entry.len();
        let below = cwd.len() > len + 1 && cwd.starts_with(entry) && cwd[len] == b'/';
        if below && len > deepest {
            deepest = len;
        }
    }
    Some(deepest)
}

/// `None` unless every path is owned by this user: git refuses a repository owned by
/// someone else unless `safe.directory` allows it, so git decides those.
fn owned(paths: &[&Path]) -> Option<()> {
    let uid = rustix::process::geteuid().as_raw();
    paths
        .iter()
        .all(|p| std::fs::symlink_metadata(p).is_ok_and(|m| m.uid() == uid))
        .then_some(())
}

/// The git directory a `.git` file names (`gitdir: <path>`, relative to the file).
fn read_git_file(file: &Path) -> Option<PathBuf> {
    let text = std::fs::read(file).ok()?;
    let mut text = text.strip_prefix(b"gitdir: ")?;
    while let Some(rest) = text
        .strip_suffix(b"\n")
        .or_else(|| text.strip_suffix(b"\r"))
    {
        text = rest;
    }
    if text.is_empty() {
        return None;
    }
    let path = file.parent()?.join(OsStr::from_bytes(text));
    // git holds this one resolved.
    is_git_directory(&path).then(|| path.canonicalize().ok())?
}

/// git's `is_git_directory`: a valid `HEAD`, and `objects` and `refs` in the common
/// directory.
fn is_git_directory(dir: &Path) -> bool {
    let Some(common) = common_dir(dir) else {
        return false;
    };
    valid_head(&dir.join("HEAD")) && common.join("objects").is_dir() && common.join("refs").is_dir()
}

/// A `HEAD` git accepts: `ref: refs/...`, an object id, or (old style) a symbolic link
/// into `refs/`.
fn valid_head(path: &Path) -> bool {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return false;
    };
    if meta.is_symlink() {
        return std::fs::read_link(path)
            .is_ok_and(|target| target.as_os_str().as_bytes().starts_with(b"refs/"));
    }
    let Ok(text) = std::fs::read(path) else {
        return false;
    };
    if let Some(target) = text.strip_prefix(b"ref:") {
        let target = target.trim_ascii_start();
        return target.starts_with(b"refs/");
    }
    let hex_len = text.iter().take_while(|b| b.is_ascii_hexdigit()).count();
    (hex_len == 40 || hex_len == 64) && text.get(hex_len).is_none_or(|b| b.is_ascii_whitespace())
}

/// A git directory's common directory: what its `commondir` file names (relative to
/// it), or itself.
fn common_dir(git_dir: &Path) -> Option<PathBuf> {
    match std::fs::read(git_dir.join("commondir")) {
        Ok(text) => {
            let text = text.trim_ascii_end();
            if text.is_empty() {
                return None;
            }
            Some(git_dir.join(OsStr::from_bytes(text)))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(git_dir.to_path_buf()),
        Err(_) => None,
    }
}

/// What discovery reads from the repository's own config (git's
/// `check_repository_format`): never from includes; `core.bare` and `core.worktree`
/// are ignored in a linked worktree (the common config is the main worktree's) unless
/// `extensions.worktreeConfig` is on, and then `config.worktree` may override them.
#[derive(Default)]
struct Format {
    bare: bool,
    worktree: Option<PathBuf>,
    worktree_config: bool,
}

/// Extensions git knows in a version 0 repository, and in version 1 (where an
/// unknown one is an error).
const V0_EXTENSIONS: &[&[u8]] = &[
    b"noop",
    b"preciousobjects",
    b"partialclone",
    b"worktreeconfig",
];
const V1_EXTENSIONS: &[&[u8]] = &[
    b"noop-v1",
    b"objectformat",
    b"refstorage",
    b"relativeworktrees",
];

impl Format {
    fn read(git_dir: &Path, common_dir: &Path) -> Option<Format> {
        let mut format = Format::default();
        // No version at all: git versions differ on what such a repository's
        // `core.bare` means, so git decides.
        let mut version = None;
        let mut extensions = Vec::new();
        let mut entries = Vec::new();
        read_file(&common_dir.join("config"), &mut entries)?;
        for (key, value) in &entries {
            let value = value.as_deref();
            match key.as_slice() {
                b"core.repositoryformatversion" => {
                    version = Some(
                        std::str::from_utf8(value?)
                            .ok()?
                            .trim()
                            .parse::<u32>()
                            .ok()?,
                    );
                }
                b"core.bare" => format.bare = parse_bool(value)?,
                b"core.worktree" => {
                    format.worktree = Some(PathBuf::from(OsStr::from_bytes(value?)))
                }
                b"extensions.worktreeconfig" => format.worktree_config = parse_bool(value)?,
                key => {
                    if let Some(name) = key.strip_prefix(b"extensions.") {
                        extensions.push(name.to_vec());
                    }
                }
            }
        }
        let version = version?;
        let known = |name: &[u8]| {
            V0_EXTENSIONS.contains(&name) || (version == 1 && V1_EXTENSIONS.contains(&name))
        };
        if version > 1 || !extensions.iter().all(|name| known(name)) {
            return None;
        }
        if git_dir != common_dir && !format.worktree_config {
            format.bare = false;
            format.worktree = None;
        }
        if format.worktree_config {
            let mut entries = Vec::new();
            read_file(&git_dir.join("config.worktree"), &mut entries)?;
            for (key, value) in &entries {
                match key.as_slice() {
                    b"core.bare" => format.bare = parse_bool(value.as_deref())?,
                    b"core.worktree" => {
                        format.worktree = Some(PathBuf::from(OsStr::from_bytes(value.as_deref()?)))
                    }
                    _ => {}
                }
            }
        }
        Some(format)
    }
}

/// One config file's entries, without includes; a missing file has none.
fn read_file(path: &Path, entries: &mut Vec<config_syntax::Entry>) -> Option<()> {
    match std::fs::read(path) {
        Ok(text) => config_syntax::parse(&text, &mut |k, v| entries.push((k, v))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(()),
        Err(_) => None,
    }
}
