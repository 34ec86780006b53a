//! The ignore rules, as ripgrep's `ignore` keeps its matcher stack apart from its
//! traversal: each directory's `.gitignore` on top of those above it ([`Rules`]), read
//! only when a directory under them is listed ([`LazyRules`]) and passed down with the
//! fingerprint the directory cache compares ([`DirRules`]); the repository-wide excludes
//! below them all ([`read_excludes`]); and the decision, which the nearest level with a
//! matching pattern makes, as git makes it ([`is_ignored`]). Each ignore file is read as
//! git reads it (`ignore_file`).

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use ignore::Match;

use crate::model::dir_cache::{rule_settled, rules_fingerprint};
use crate::model::stat_cache::FileStat;
use crate::worktree::ignore_file::{Patterns, PatternsBuilder};
use crate::{Error, Result};

/// The ignore rules that apply in one directory: its own `.gitignore`, then those of the
/// directories above it, then the repository-wide excludes. A path is decided by the
/// nearest level with a matching pattern, as git decides it.
pub(super) struct Rules {
    /// Matches paths relative to the directory whose `.gitignore` this is.
    matcher: Patterns,
    /// Length of that directory's worktree-relative path plus its slash (0 at the root).
    prefix: usize,
    parent: Option<Arc<Rules>>,
}

/// Whether git ignores `rel` (a directory if `is_dir`), given `rules`, the `.gitignore`
/// rules of its directory and those above it (`None` where no directory on the way has
/// one), and below them the repository-wide `excludes` ([`read_excludes`]).
pub(super) fn is_ignored(
    rules: Option<&Rules>,
    excludes: &Patterns,
    rel: &[u8],
    is_dir: bool,
) -> bool {
    let mut level = rules;
    while let Some(rules) = level {
        match rules.matcher.matched(&rel[rules.prefix..], is_dir) {
            Match::Ignore(_) => return true,
            Match::Whitelist(_) => return false,
            Match::None => level = rules.parent.as_deref(),
        }
    }
    excludes.matched(rel, is_dir).is_ignore()
}

/// The repository-wide excludes of the worktree at `root`: `files` (`core.excludesFile`,
/// then `info/exclude`; later files win, as in git), those that exist. One that exists
/// but cannot be read fails the walk.
pub(super) fn read_excludes(
    root: &Path,
    files: impl IntoIterator<Item = Option<PathBuf>>,
) -> Result<Patterns> {
    let mut excludes = PatternsBuilder::new(root);
    for file in files.into_iter().flatten() {
        // These two may be symlinks (a dotfiles manager's `~/.config/git/ignore`):
        // git follows them.
        if file.is_file() {
            if let Err(err) = excludes.add_file(&file, true) {
                return Err(Error::InvalidArgument(format!(
                    "cannot read excludes file {}: {err}",
                    file.display()
                )));
            }
        }
    }
    Ok(excludes.build())
}

/// The ignore rules in force in one directory, as the walk passes them down: the
/// matchers, and their fingerprint for the directory cache.
#[derive(Clone)]
pub(super) struct DirRules {
    /// The `.gitignore` matchers of this directory and those above it, built when a
    /// directory under them is listed.
    pub(super) rules: LazyRules,
    /// The fingerprint of every ignore file that decides them.
    pub(super) fingerprint: u128,
    /// Whether every one of those files is settled (see
    /// [`CacheUse::clock_ns`](super::cache_use::CacheUse::clock_ns)).
    pub(super) settled: bool,
}

/// `.gitignore` matchers that are built only when first asked for. A directory whose
/// listing comes from the directory cache matches nothing against the rules, so the
/// `.gitignore` files above it are read and compiled only if some directory below is
/// listed afresh (which a save with nothing changed never does). The file is read then,
/// after its metadata went into the listing's fingerprint: an edit in between leaves a
/// fingerprint that no longer matches, so that listing is made again at the next walk.
#[derive(Clone, Default)]
pub(super) enum LazyRules {
    /// No `.gitignore` on the way down.
    #[default]
    None,
    /// Matchers already built.
    Built(Arc<Rules>),
    /// A directory's `.gitignore`, on top of the rules above it, not read yet.
    Pending(Arc<PendingRules>),
}

/// A `.gitignore` whose matcher [`LazyRules`] builds on first use.
pub(super) struct PendingRules {
    /// The directory holding it.
    dir: PathBuf,
    /// Its worktree path's length plus the slash (0 at the top).
    prefix: usize,
    /// The rules of the directories above it.
    parent: LazyRules,
    /// The matchers, once built (`None`: none apply here).
    built: OnceLock<Option<Arc<Rules>>>,
}

impl LazyRules {
    /// Rules already built (or none).
    pub(super) fn built(rules: Option<Arc<Rules>>) -> Self {
        rules.map_or(LazyRules::None, LazyRules::Built)
    }

    /// These rules with the `.gitignore` of the directory `dir` (whose worktree path
    /// with its slash is `prefix` bytes long) on top, read when first asked for.
    pub(super) fn with_gitignore(&self, dir: PathBuf, prefix: usize) -> Self {
        LazyRules::Pending(Arc::new(PendingRules {
            dir,
            prefix,
            parent: self.clone(),
            built: OnceLock::new(),
        }))
    }

    /// The matchers, built now if they were not yet (each `.gitignore` at most once per
    /// walk, whichever directory below asks first).
    pub(super) fn get(&self) -> Option<Arc<Rules>> {
        match self {
            LazyRules::None => None,
            LazyRules::Built(rules) => Some(rules.clone()),
            LazyRules::Pending(pending) => pending
                .built
                .get_or_init(|| dir_rules(&pending.dir, pending.prefix, pending.parent.get()))
                .clone(),
        }
    }
}

/// The rules of the directory `full` (worktree path length plus slash: `prefix`), which
/// holds a `.gitignore`, on top of those of the directories above it.
pub(super) fn dir_rules(
    full: &Path,
    prefix: usize,
    parent: Option<Arc<Rules>>,
) -> Option<Arc<Rules>> {
    crate::trace::IGNORE_FILES_READ.add(1);
    let mut builder = PatternsBuilder::new(full);
    // git warns about a `.gitignore` it cannot read (a symlink, no permission) and goes
    // on as if it were empty; so does the walk, which has no one to warn.
    if builder.add_file(&full.join(".gitignore"), false).is_err() {
        return parent;
    }
    Some(Arc::new(Rules {
        matcher: builder.build(),
        prefix,
        parent,
    }))
}

impl DirRules {
    /// Rules for a walk without the directory cache.
    pub(super) fn uncached(rules: LazyRules) -> Self {
        DirRules {
            rules,
            fingerprint: 0,
            settled: false,
        }
    }

    /// The fingerprint and settledness of the rules in the directory `dir`, whose own
    /// `.gitignore` has the metadata `gitignore` (`None`: it has none); the matchers are
    /// not built here.
    pub(super) fn below(
        &self,
        dir: &[u8],
        gitignore: Option<&FileStat>,
        clock_ns: Option<i64>,
    ) -> Self {
        let Some(stat) = gitignore else {
            return self.clone();
        };
        let mut path = dir.to_vec();
        if !path.is_empty() {
            path.push(b'/');
        }
        path.extend_from_slice(b".gitignore");
        DirRules {
            rules: self.rules.clone(),
            fingerprint: rules_fingerprint(self.fingerprint, &path, Some(stat)),
            settled: self.settled && clock_ns.is_some_and(|c| rule_settled(Some(stat), c)),
        }
    }
}
