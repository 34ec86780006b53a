//! The worktree: which files a checkpoint holds ([`walk`], reading ignore files with
//! `ignore_file`), the paths in it that are not its own ([`exempt`]), writing files
//! through held directory handles ([`dir`]), how its filesystem compares names
//! ([`names`]), the calls that differ between systems ([`platform`]), and the names
//! restore gives its temporary files.

pub mod dir;
pub mod exempt;
mod ignore_file;
pub mod names;
pub mod platform;
pub mod walk;

use std::path::Path;

use crate::model::stat_cache::FileStat;
use crate::{Error, Result};

pub use dir::{Barrier, Dir, Worktree};

/// Names of restore's temporary files start with this.
pub const TEMP_PREFIX: &str = ".checkpoint-tmp-";
/// Random characters after [`TEMP_PREFIX`] in a temporary file's name; symlinks add
/// [`TEMP_LINK_SUFFIX`]. Builds before this one used 6.
pub const TEMP_RANDOM_CHARS: usize = 16;
/// What a temporary symlink's name ends with.
pub const TEMP_LINK_SUFFIX: &str = ".link";

/// Whether `name` (one path component) is exactly a name restore gives its temporary
/// files. A user's `.checkpoint-tmp-notes.md` is not; and even a name that matches is
/// only treated as a leftover while a restore is recorded as interrupted.
pub fn is_temp_name(name: &[u8]) -> bool {
    let Some(rest) = name.strip_prefix(TEMP_PREFIX.as_bytes()) else {
        return false;
    };
    let random = rest
        .strip_suffix(TEMP_LINK_SUFFIX.as_bytes())
        .unwrap_or(rest);
    matches!(random.len(), 6 | TEMP_RANDOM_CHARS) && random.iter().all(u8::is_ascii_alphanumeric)
}

/// A temporary name as [`is_temp_name`] recognises it.
pub fn temp_name(random_chars: usize, suffix: &str) -> Vec<u8> {
    use rand::Rng;
    let random: String = rand::rng()
        .sample_iter(rand::distr::Alphanumeric)
        .take(random_chars)
        .map(char::from)
        .collect();
    format!("{TEMP_PREFIX}{random}{suffix}").into_bytes()
}

/// The filesystem's own clock, read by writing a marker file in the store's directory:
/// the worktree's file times come from the same clock, unlike `SystemTime::now`.
pub fn filesystem_clock(dir: &Path) -> Result<i64> {
    let marker = dir.join("clock");
    std::fs::write(&marker, b"x").map_err(|e| Error::io(&marker, e))?;
    let meta = std::fs::symlink_metadata(&marker).map_err(|e| Error::io(&marker, e))?;
    Ok(FileStat::from_metadata(&meta).mtime_ns)
}
