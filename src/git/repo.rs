//! Finding the worktree and what git knows about it: its directories, configuration
//! and HEAD. Each is read in-process where the reader is certain to answer as git
//! would (`git::discover`, `git::config`, `git::refs`), so a
//! command starts no process; anything else is one `git` process, never one per file.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::git::{config, config_syntax, discover, refs};
use crate::{Error, Result};

/// The worktree a command runs in.
#[derive(Debug, Clone)]
pub struct Repo {
    /// The top of the worktree.
    pub root: PathBuf,
    /// The worktree's own git directory (a linked worktree has its own).
    pub git_dir: PathBuf,
    /// The git directory all worktrees share (`info/exclude` lives there).
    pub common_dir: PathBuf,
    /// The current directory relative to `root`, with a trailing `/`, or empty at the top.
    pub prefix: Vec<u8>,
    /// git configuration keys this tool reads (`checkpoint.*`, `core.excludesfile`,
    /// `core.ignorecase`, `core.pager`, `core.precomposeunicode`, `extensions.objectformat`),
    /// lower-cased as git prints them, with their effective values.
    pub config: HashMap<String, String>,
    /// Files inside the worktree that are the agents' set-up, not the worktree's own
    /// (what `hooks install` and `mcp install` write), as paths from its top: no
    /// checkpoint holds them and no restore changes them (docs/design.md invariant 16).
    /// Only the agents know them: empty here, filled by `ops::workspace::Workspace::new`
    /// from what its caller hands it (`agents::worktree_files`).
    pub agent_files: AgentFiles,
}

/// The files agents' installs write inside a worktree ([`Repo::agent_files`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentFiles {
    /// Paths from the worktree's top.
    pub at_top: Vec<Vec<u8>>,
    /// Paths from any directory of the worktree, the top included: the settings of an
    /// agent that reads a project's settings in the directory it is started in, where
    /// `hooks install` run there writes them.
    pub in_any_directory: Vec<Vec<u8>>,
}

impl AgentFiles {
    /// Whether the worktree path `path` is one of these files.
    pub fn contains(&self, path: &[u8]) -> bool {
        self.at_top.iter().any(|file| file == path)
            || self.in_any_directory.iter().any(|file| {
                path == file.as_slice()
                    || path
                        .strip_suffix(file.as_slice())
                        .is_some_and(|dir| dir.ends_with(b"/"))
            })
    }
}

/// Where the real repository's HEAD pointed when a checkpoint was saved.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GitHead {
    /// The commit HEAD resolves to, if any (an unborn branch has none).
    pub commit: Option<String>,
    /// The branch HEAD names, if not detached.
    pub branch: Option<String>,
}

/// Runs git in `dir` and returns its stdout, or its stderr as the error.
pub fn git(dir: &Path, args: &[&str]) -> Result<Vec<u8>> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .map_err(|e| Error::Git {
            command: args.first().unwrap_or(&"").to_string(),
            message: format!("cannot run git: {e}"),
        })?;
    if out.status.success() {
        Ok(out.stdout)
    } else {
        Err(Error::Git {
            command: args.first().unwrap_or(&"").to_string(),
            message: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }
}

/// What discovery asks `git rev-parse`, one line of output each, in this order.
const REV_PARSE_ASKS: [&[&str]; 5] = [
    &["--is-bare-repository"],
    &["--absolute-git-dir"],
    &["--show-toplevel"],
    &["--show-prefix"],
    &["--path-format=absolute", "--git-common-dir"],
];

/// One `git rev-parse` value, exactly: only the newline git ends it with is taken off.
fn one_rev_parse_value(dir: &Path, ask: &[&str]) -> Result<Vec<u8>> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .arg("rev-parse")
        .args(ask)
        .output()
        .map_err(|e| Error::NotAWorktree(format!("fatal: cannot run git: {e}")))?;
    if !out.status.success() {
        return Err(Error::NotAWorktree(
            String::from_utf8_lossy(&out.stderr).trim().to_string(),
        ));
    }
    let mut value = out.stdout;
    if value.last() == Some(&b'\n') {
        value.pop();
    }
    Ok(value)
}

fn trim_newline(mut bytes: Vec<u8>) -> Vec<u8> {
    while bytes.last() == Some(&b'\n') {
        bytes.pop();
    }
    bytes
}

impl Repo {
    /// Finds the worktree containing `dir`, as git does. Outside a worktree, or in a bare
    /// repository, fails with [`Error::NotAWorktree`] and git's own wording.
    pub fn discover(dir: &Path) -> Result<Repo> {
        if let Some(found) = discover::find(dir) {
            let (config, how) = match config::read(&found, &|key| is_read_key(key)) {
                Some(entries) => (config_map(entries), "in-process"),
                None => (read_config(dir)?, "git"),
            };
            let repo = Repo {
                root: found.root,
                git_dir: found.git_dir,
                common_dir: found.common_dir,
                prefix: found.prefix,
                config,
                agent_files: AgentFiles::default(),
            };
            trace_found("in-process", how, &repo);
            return Ok(repo);
        }
        let repo = Repo::discover_with_git(dir)?;
        trace_found("git", "git", &repo);
        Ok(repo)
    }

    /// [`Repo::discover`] by asking git, for what the in-process reader leaves to it.
    fn discover_with_git(dir: &Path) -> Result<Repo> {
        // The config read does not depend on the answer, so both git calls run at once.
        let (out, config) = std::thread::scope(|scope| {
            let config = scope.spawn(|| read_config(dir));
            let out = Command::new("git")
                .arg("-C")
                .arg(dir)
                .arg("rev-parse")
                .args(REV_PARSE_ASKS.iter().flat_map(|ask| ask.iter()))
                .output();
            (out, config.join())
        });
        let out = out.map_err(|e| Error::NotAWorktree(format!("fatal: cannot run git: {e}")))?;
        if !out.status.success() {
            let msg = String::from_utf8_lossy(&out.stderr).trim().to_string();
            let msg = if msg.is_empty() {
                "fatal: not a git repository".to_string()
            } else {
                msg
            };
            return Err(Error::NotAWorktree(msg));
        }
        let text = out.stdout;
        let mut values: Vec<Vec<u8>> = text.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
        if values.len() != REV_PARSE_ASKS.len() + 1 {
            // A path holds a newline, so the lines cannot be told apart: ask for each
            // value alone (rare, so the usual discovery stays one process).
            values = REV_PARSE_ASKS
                .iter()
                .map(|ask| one_rev_parse_value(dir, ask))
                .collect::<Result<_>>()?;
        }
        let mut lines = values.iter().map(Vec::as_slice);
        let bare = lines.next().unwrap_or_default();
        if bare == b"true" {
            return Err(Error::NotAWorktree(
                "fatal: this operation must be run in a work tree".into(),
            ));
        }
        let git_dir = PathBuf::from(OsStr::from_bytes(lines.next().unwrap_or_default()));
        let root = lines.next().unwrap_or_default();
        if root.is_empty() {
            return Err(Error::NotAWorktree(
                "fatal: this operation must be run in a work tree".into(),
            ));
        }
        let root = PathBuf::from(OsStr::from_bytes(root));
        let prefix = lines.next().unwrap_or_default().to_vec();
        let common_dir = match lines.next().filter(|l| !l.is_empty()) {
            Some(dir) => PathBuf::from(OsStr::from_bytes(dir)),
            None => git_dir.clone(),
        };
        let config = config.unwrap_or_else(|_| {
            Err(Error::Git {
                command: "config".into(),
                message: "reading the configuration failed".into(),
            })
        })?;
        Ok(Repo {
            root,
            git_dir,
            common_dir,
            prefix,
            config,
            agent_files: AgentFiles::default(),
        })
    }

    /// The directory holding the store and its side files.
    pub fn checkpoint_dir(&self) -> PathBuf {
        self.git_dir.join("checkpoint")
    }

    /// The store file: `<git-dir>/checkpoint/store.redb`.
    pub fn store_path(&self) -> PathBuf {
        self.checkpoint_dir().join("store.redb")
    }

    /// A `checkpoint.*` (or other read) config value; `key` as git prints it, lower case.
    pub fn config(&self, key: &str) -> Option<&str> {
        self.config.get(key).map(String::as_str)
    }

    /// A boolean config value as git reads one (`true`, `no`, `1`...; a key given
    /// without a value is true), `None` when it is not set or not a boolean.
    pub fn config_bool(&self, key: &str) -> Option<bool> {
        match self.config(key)? {
            "" => Some(true),
            value => config_syntax::parse_bool(Some(value.as_bytes())),
        }
    }

    /// Where the real repository's HEAD points now. The branch comes from the HEAD file
    /// itself; the commit from the refs, or from git when they are not plain files.
    pub fn git_head(&self) -> GitHead {
        let commit = match refs::head_commit(&self.git_dir, &self.common_dir, self.hex_len()) {
            Some(commit) => commit,
            None => git(
                &self.root,
                &["rev-parse", "-q", "--verify", "HEAD^{commit}"],
            )
            .ok()
            .map(|b| String::from_utf8_lossy(&trim_newline(b)).into_owned())
            .filter(|s| !s.is_empty()),
        };
        let head_file = std::fs::read(self.git_dir.join("HEAD")).unwrap_or_default();
        let branch = match trim_newline(head_file).strip_prefix(b"ref: refs/heads/") {
            // The reftable backend keeps a placeholder here; ask git instead.
            Some(b".invalid") => git(&self.root, &["symbolic-ref", "-q", "--short", "HEAD"])
                .ok()
                .map(|b| String::from_utf8_lossy(&trim_newline(b)).into_owned()),
            Some(name) => Some(String::from_utf8_lossy(name).into_owned()),
            None => None,
        }
        .filter(|s| !s.is_empty());
        GitHead { commit, branch }
    }

    /// Every path in git's index. Reading the index is cheap; asking git which of them
    /// an ignore rule matches (`ls-files -ci`) costs more than a whole `git status` on a
    /// big tree, so the walk compares this list with what it found instead. The index
    /// file is read directly when [`crate::git::index`] knows its form, else git lists it.
    pub fn tracked_paths(&self) -> Result<Vec<Vec<u8>>> {
        self.tracked_paths_where(|_| true)
    }

    /// The paths in git's index that `keep` keeps, as [`Repo::tracked_paths`] finds
    /// them, without holding the others: a watched save wants the few below its changed
    /// paths.
    pub fn tracked_paths_where(&self, mut keep: impl FnMut(&[u8]) -> bool) -> Result<Vec<Vec<u8>>> {
        if std::env::var_os("GIT_INDEX_FILE").is_none() {
            if let Ok(paths) = crate::git::index::tracked_paths_where(
                &self.git_dir.join("index"),
                self.hash_len(),
                &mut keep,
            ) {
                return Ok(paths);
            }
        }
        let out = git(&self.root, &["ls-files", "-z", "--cached"])?;
        Ok(out
            .split(|&b| b == 0)
            .filter(|p| !p.is_empty() && keep(p))
            .map(<[u8]>::to_vec)
            .collect())
    }

    /// The index file git uses: `GIT_INDEX_FILE` (relative to the worktree's top, where
    /// this tool runs git), else the git dir's `index`.
    pub fn index_file(&self) -> PathBuf {
        match std::env::var_os("GIT_INDEX_FILE") {
            Some(file) => self.root.join(file),
            None => self.git_dir.join("index"),
        }
    }

    /// How many bytes an object id has in this repository.
    pub fn hash_len(&self) -> usize {
        self.hex_len() / 2
    }

    /// How many hex digits an object id has in this repository.
    fn hex_len(&self) -> usize {
        match self.config("extensions.objectformat") {
            Some(format) if format.eq_ignore_ascii_case("sha256") => 64,
            _ => 40,
        }
    }

    /// The excludes file git uses: `core.excludesFile`, or the XDG default.
    pub fn excludes_file(&self) -> Option<PathBuf> {
        let home = std::env::var_os("HOME").map(PathBuf::from);
        match self.config("core.excludesfile") {
            Some(value) => match value.strip_prefix("~/") {
                Some(rest) => home.map(|h| h.join(rest)),
                None => Some(self.root.join(value)),
            },
            None => match std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
                Some(xdg) => Some(PathBuf::from(xdg).join("git/ignore")),
                None => home.map(|h| h.join(".config/git/ignore")),
            },
        }
    }
}

/// The config keys this tool reads: the same set as [`read_config`]'s pattern.
fn is_read_key(key: &[u8]) -> bool {
    key.starts_with(b"checkpoint.")
        || matches!(
            key,
            b"core.excludesfile"
                | b"core.ignorecase"
                | b"core.pager"
                | b"core.precomposeunicode"
                | b"extensions.objectformat"
        )
}

/// Entries in the order git reads them, as the map [`read_config`] makes of git's
/// output: keys lower case, no value as empty, the last value of a key winning.
fn config_map(entries: Vec<config_syntax::Entry>) -> HashMap<String, String> {
    entries
        .into_iter()
        .map(|(key, value)| {
            let key = String::from_utf8_lossy(&key).to_ascii_lowercase();
            (
                key,
                String::from_utf8_lossy(&value.unwrap_or_default()).into_owned(),
            )
        })
        .collect()
}

/// The config map in key order, formatted only when a trace line prints it.
struct SortedConfig<'a>(&'a HashMap<String, String>);

impl std::fmt::Debug for SortedConfig<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map()
            .entries(self.0.iter().collect::<std::collections::BTreeMap<_, _>>())
            .finish()
    }
}

/// With `GIT_CHECKPOINT_TRACE`, which way discovery and the config read went and what
/// they found.
fn trace_found(discovery: &str, how: &str, repo: &Repo) {
    crate::trace::note(format_args!(
        "discover: {discovery}, config: {how}; root={} git-dir={} common-dir={} prefix={}",
        repo.root.display(),
        repo.git_dir.display(),
        repo.common_dir.display(),
        String::from_utf8_lossy(&repo.prefix)
    ));
    crate::trace::note(format_args!("config: {:?}", SortedConfig(&repo.config)));
}

/// Reads the config keys this tool uses in one git call, so includes and the
/// system/global/local/worktree precedence are git's own.
fn read_config(root: &Path) -> Result<HashMap<String, String>> {
    // Exit status 1 means "no such keys", which is not an error.
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args([
            "config",
            "-z",
            "--get-regexp",
            r"^(checkpoint\..*|core\.excludesfile|core\.ignorecase|core\.pager|core\.precomposeunicode|extensions\.objectformat)$",
        ])
        .output()
        .map_err(|e| Error::Git {
            command: "config".into(),
            message: e.to_string(),
        })?;
    let mut map = HashMap::new();
    for record in out.stdout.split(|&b| b == 0).filter(|r| !r.is_empty()) {
        let text = String::from_utf8_lossy(record);
        let (key, value) = text.split_once('\n').unwrap_or((&text, ""));
        map.insert(key.to_ascii_lowercase(), value.to_string());
    }
    Ok(map)
}

impl Repo {
    /// Path arguments, relative to the current directory as git takes them, as
    /// root-relative paths without `.`/`..` components or trailing `/`. The worktree root
    /// itself is the empty path.
    pub fn worktree_paths(&self, args: &[PathBuf]) -> Result<Vec<Vec<u8>>> {
        args.iter().map(|arg| self.worktree_path(arg)).collect()
    }

    /// One path argument as [`Repo::worktree_paths`] takes them.
    pub fn worktree_path(&self, arg: &Path) -> Result<Vec<u8>> {
        use std::path::Component;
        let shown = || arg.display().to_string();
        let relative: PathBuf = if arg.is_absolute() {
            arg.strip_prefix(&self.root)
                .map_err(|_| Error::PathOutsideWorktree(shown()))?
                .to_path_buf()
        } else {
            Path::new(OsStr::from_bytes(&self.prefix)).join(arg)
        };
        let mut parts: Vec<&[u8]> = Vec::new();
        for component in relative.components() {
            match component {
                Component::Normal(name) => parts.push(name.as_bytes()),
                Component::CurDir => {}
                Component::ParentDir => {
                    parts
                        .pop()
                        .ok_or_else(|| Error::PathOutsideWorktree(shown()))?;
                }
                Component::RootDir | Component::Prefix(_) => {
                    return Err(Error::PathOutsideWorktree(shown()))
                }
            }
        }
        Ok(parts.join(&b'/'))
    }
}
