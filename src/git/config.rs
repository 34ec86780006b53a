//! The `checkpoint.*` settings, read through git's own configuration (see
//! [`Repo::config`]) so that includes and the system/global/local/worktree precedence
//! are git's. Each setting has one function here that parses and checks its value.

use std::time::Duration;

use crate::git::repo::Repo;
use crate::storage::{Store, DEFAULT_LOCK_TIMEOUT};
use crate::{Error, Result};

/// zstd level for new content when `checkpoint.compression` is unset. Level 1 made a first
/// save of a 102 MB source tree 10% faster than level 3 for a store 2.4% larger
/// (34.0 against 33.2 MB), and every save with changes pays compression again.
pub const DEFAULT_COMPRESSION: i32 = 1;
/// Files larger than this are skipped when `checkpoint.maxFileSize` is unset.
pub const DEFAULT_MAX_FILE_SIZE: u64 = 100 << 20;

fn bad(key: &'static str, value: &str, expected: impl Into<String>) -> Error {
    Error::BadConfig {
        key,
        value: value.to_string(),
        expected: expected.into(),
    }
}

/// Opens (creating on first use) the worktree's store as its config says: waiting up to
/// `checkpoint.lockTimeout` for another process, calling `on_wait` once if it has to
/// wait, and giving a new store's HEAD the `checkpoint.defaultBranch`.
pub fn open_store(repo: &Repo, on_wait: &mut dyn FnMut()) -> Result<Store> {
    let timeout = lock_timeout(repo)?;
    let branch = default_branch(repo)?;
    let store = Store::open(&crate::storage::store_path(repo), timeout, on_wait)?;
    store.init_head(&branch)?;
    Ok(store)
}

/// `checkpoint.compression`: the zstd level (1 to 19) for new chunks.
pub fn compression_level(repo: &Repo) -> Result<i32> {
    match repo.config("checkpoint.compression") {
        Some(value) => value
            .trim()
            .parse::<i32>()
            .ok()
            .filter(|level| (1..=19).contains(level))
            .ok_or_else(|| bad("checkpoint.compression", value, "a zstd level from 1 to 19")),
        None => Ok(DEFAULT_COMPRESSION),
    }
}

/// `checkpoint.lockTimeout`: how long to wait for another process holding the store.
pub fn lock_timeout(repo: &Repo) -> Result<Duration> {
    match repo.config("checkpoint.locktimeout") {
        Some(value) => value
            .trim()
            .parse::<f64>()
            .ok()
            // `try_`: a value past what a Duration holds (1e20) is an error, not a panic.
            .and_then(|seconds| Duration::try_from_secs_f64(seconds).ok())
            .ok_or_else(|| bad("checkpoint.lockTimeout", value, "a number of seconds")),
        None => Ok(DEFAULT_LOCK_TIMEOUT),
    }
}

/// `checkpoint.maxFileSize`: files larger than this are not saved. `None` means no
/// limit (the value 0).
pub fn max_file_size(repo: &Repo) -> Result<Option<u64>> {
    match repo.config("checkpoint.maxfilesize") {
        Some(value) => match crate::format::size::parse_size(value) {
            Ok(0) => Ok(None),
            Ok(limit) => Ok(Some(limit)),
            Err(_) => Err(bad(
                "checkpoint.maxFileSize",
                value,
                "a size in bytes with an optional k, m or g suffix (e.g. 100m), or 0 for no limit",
            )),
        },
        None => Ok(Some(DEFAULT_MAX_FILE_SIZE)),
    }
}

/// `checkpoint.keepPermissions`: record each file's permission bits (default), or, when
/// false, only the executable bit, as git does.
pub fn keep_permissions(repo: &Repo) -> Result<bool> {
    match repo.config("checkpoint.keeppermissions") {
        // git's spellings of a boolean; a key given without a value means true.
        Some(value) => match value.trim().to_ascii_lowercase().as_str() {
            "" | "true" | "yes" | "on" | "1" => Ok(true),
            "false" | "no" | "off" | "0" => Ok(false),
            _ => Err(bad("checkpoint.keepPermissions", value, "true or false")),
        },
        None => Ok(true),
    }
}

/// `checkpoint.defaultBranch`: the branch HEAD names in a new store.
pub fn default_branch(repo: &Repo) -> Result<String> {
    match repo.config("checkpoint.defaultbranch") {
        // The same rules as `git checkpoint branch <name>`, so a name that command
        // refuses can never become a branch through the config.
        Some(value) => match crate::model::branch::check_branch_name(value) {
            Ok(()) => Ok(value.to_string()),
            Err(e) => Err(bad(
                "checkpoint.defaultBranch",
                value,
                format!("a branch name ({e})"),
            )),
        },
        None => Ok(crate::model::branch::DEFAULT_BRANCH.to_string()),
    }
}
