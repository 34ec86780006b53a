//! How a walk uses the directory cache ([`crate::model::dir_cache`]): the filesystem's
//! clock and the excludes files' fingerprint read before anything is listed, and what
//! the walk took from the cache or listed afresh and may record.

use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::sync::atomic::AtomicUsize;
use std::sync::Mutex;

use crate::git::repo::Repo;
use crate::model::dir_cache::{rule_settled, rules_fingerprint, DirListings};
use crate::model::stat_cache::{FileStat, RACY_MARGIN_NS};

/// How a walk uses the directory cache ([`crate::model::dir_cache`]).
pub(super) struct CacheUse<'a> {
    /// The listings recorded by earlier walks.
    pub(super) listings: &'a dyn DirListings,
    /// The filesystem's clock, read before anything was listed: a listing made now is
    /// written only if settled by it. `None`: none is written.
    pub(super) clock_ns: Option<i64>,
    /// The fingerprint of the excludes files, the rules above the top's `.gitignore`.
    pub(super) top_rules: u128,
    /// Whether the excludes files are settled by the clock.
    pub(super) top_rules_settled: bool,
    /// Directories whose recorded listing this walk used, or listed afresh and settled
    /// (one path a directory: the walk holds nothing per file of the cache).
    pub(super) kept: Mutex<Vec<Vec<u8>>>,
    /// How many directories the walk took from their recorded listing.
    pub(super) used: AtomicUsize,
    /// How many it listed.
    pub(super) listed: AtomicUsize,
}

impl<'a> CacheUse<'a> {
    /// The cache state of a walk: the clock, then the excludes files' fingerprint.
    pub(super) fn new(
        repo: &Repo,
        listings: &'a dyn DirListings,
        excludes_files: &[Option<PathBuf>],
    ) -> Self {
        let eager = dir_cache_hook().as_deref() == Some("eager");
        let clock_ns = crate::worktree::filesystem_clock(&repo.checkpoint_dir())
            .ok()
            .map(|clock| match eager {
                true => clock.saturating_add(RACY_MARGIN_NS),
                false => clock,
            });
        let mut fingerprint = 0;
        let mut settled = clock_ns.is_some();
        for file in excludes_files {
            let path = file
                .as_deref()
                .map_or(&[][..], |p| p.as_os_str().as_bytes());
            // The link and what it leads to: editing a dotfiles manager's target changes
            // nothing about the link.
            let stats = file.as_deref().map(|file| {
                [std::fs::symlink_metadata(file), std::fs::metadata(file)]
                    .map(|meta| meta.ok().map(|m| FileStat::from_metadata(&m)))
            });
            for stat in stats.into_iter().flatten() {
                fingerprint = rules_fingerprint(fingerprint, path, stat.as_ref());
                settled &= clock_ns.is_some_and(|clock| rule_settled(stat.as_ref(), clock));
            }
        }
        CacheUse {
            listings,
            clock_ns,
            top_rules: fingerprint,
            top_rules_settled: settled,
            kept: Mutex::new(Vec::new()),
            used: AtomicUsize::new(0),
            listed: AtomicUsize::new(0),
        }
    }
}

/// Under the test hooks, `GIT_CHECKPOINT_DIR_CACHE`: `off` walks without the directory
/// cache; `eager` records listings with no racy margin beyond the clock's own tick (a
/// listing is still written only when older than the clock), so that a test need not
/// wait two seconds for its directories to settle.
pub(super) fn dir_cache_hook() -> Option<String> {
    if !cfg!(feature = "test-hooks") {
        return None;
    }
    std::env::var("GIT_CHECKPOINT_DIR_CACHE").ok()
}
