//! The `checkpoint.*` settings, read through git's own configuration (see
//! [`Repo::config`]) so that includes and the system/global/local/worktree precedence
//! are git's. [`Settings::from_config`] parses every key once; a bad value is an error only
//! for the commands that use it (a bad `maxFileSize` fails `save`, not `log`).
//!
//! This module sits above [`crate::git`], which knows nothing of these keys, and below
//! everything that applies them. It opens no store: the operations' `Workspace`
//! (`ops/workspace.rs`) holds a worktree with its settings and is the one door to it.

use std::collections::HashMap;
use std::time::Duration;

use crate::git::repo::Repo;
use crate::model::branch::BranchName;
use crate::model::retention::{GcOptions, Policy, Span};
use crate::{Error, Result};

/// The config keys as [`Repo::config`] looks them up.
struct Keys<'a>(&'a HashMap<String, String>);

impl Keys<'_> {
    fn config(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }
}

/// Every `checkpoint.*` setting, parsed.
#[derive(Clone, Debug)]
pub struct Settings {
    /// `checkpoint.compression`: the zstd level (1 to 19) for new chunks.
    pub compression: Setting<i32>,
    /// `checkpoint.lockTimeout`: how long to wait for another process holding the store.
    pub lock_timeout: Setting<Duration>,
    /// `checkpoint.hookLockTimeout`: how long an agent's hook waits for the store; a hook
    /// that cannot save by then logs it and lets the agent go on.
    pub hook_lock_timeout: Setting<Duration>,
    /// `checkpoint.maxFileSize`: files larger than this are not saved; `None`, no limit.
    pub max_file_size: Setting<Option<u64>>,
    /// `checkpoint.keepPermissions`: record every permission bit, or only git's one.
    pub keep_permissions: Setting<bool>,
    /// `checkpoint.keepTranscripts`: attach the agent's transcript to each checkpoint
    /// a prompt makes (off by default; each copy costs about what the conversation grew).
    pub keep_transcripts: Setting<bool>,
    /// `checkpoint.defaultBranch`: the branch HEAD names in a new store.
    pub default_branch: Setting<BranchName>,
    /// `checkpoint.gc.*`: the retention a save applies after it; `None` when unset.
    pub gc: Setting<Option<GcOptions>>,
    /// `checkpoint.autoWatch`: whether an agent's hook run starts the worktree's watcher
    /// when none runs.
    pub auto_watch: Setting<bool>,
    /// `checkpoint.watchIdleExit` as configured: `None` when unset, zero for "never".
    /// [`Settings::watch_idle_exit`] applies the defaults.
    pub watch_idle_exit: Setting<Option<Duration>>,
}

/// One setting's value, or why the value found cannot be used.
#[derive(Clone, Debug)]
pub struct Setting<T>(std::result::Result<T, SettingError>);

impl<T: Clone> Setting<T> {
    /// The value, or the error a command that needs it reports.
    pub fn get(&self) -> Result<T> {
        self.0.clone().map_err(SettingError::into_error)
    }
}

impl<T> From<Result<T>> for Setting<T> {
    fn from(result: Result<T>) -> Self {
        Setting(result.map_err(SettingError::from))
    }
}

/// A setting's error, kept so that every use reports it alike.
#[derive(Clone, Debug)]
pub enum SettingError {
    /// [`Error::BadConfig`].
    BadConfig {
        /// The key, in its documented spelling.
        key: &'static str,
        /// The value found.
        value: String,
        /// What the key takes.
        expected: String,
    },
    /// Anything else, as its message.
    Other(String),
}

impl From<Error> for SettingError {
    fn from(e: Error) -> Self {
        match e {
            Error::BadConfig {
                key,
                value,
                expected,
            } => SettingError::BadConfig {
                key,
                value,
                expected,
            },
            Error::InvalidArgument(message) => SettingError::Other(message),
            other => SettingError::Other(other.to_string()),
        }
    }
}

impl SettingError {
    fn into_error(self) -> Error {
        match self {
            SettingError::BadConfig {
                key,
                value,
                expected,
            } => Error::BadConfig {
                key,
                value,
                expected,
            },
            SettingError::Other(message) => Error::InvalidArgument(message),
        }
    }
}

impl Settings {
    /// The settings of `repo`'s configuration, as git resolves it.
    pub fn of(repo: &Repo) -> Settings {
        Settings::from_config(&repo.config)
    }

    /// Parses every `checkpoint.*` key of a repository's config (git's keys, lower
    /// case, with their effective values: [`Repo::config`]).
    pub fn from_config(config: &HashMap<String, String>) -> Settings {
        let repo = &Keys(config);
        Settings {
            compression: compression_level(repo).into(),
            lock_timeout: lock_timeout(repo).into(),
            hook_lock_timeout: seconds(
                repo,
                "checkpoint.hooklocktimeout",
                "checkpoint.hookLockTimeout",
                DEFAULT_HOOK_LOCK_TIMEOUT,
            )
            .into(),
            max_file_size: max_file_size(repo).into(),
            keep_permissions: keep_permissions(repo).into(),
            keep_transcripts: boolean(
                repo,
                "checkpoint.keeptranscripts",
                "checkpoint.keepTranscripts",
                false,
            )
            .into(),
            default_branch: default_branch(repo).into(),
            gc: gc_options(repo).into(),
            auto_watch: boolean(repo, "checkpoint.autowatch", "checkpoint.autoWatch", true).into(),
            watch_idle_exit: duration(repo, "checkpoint.watchidleexit", "checkpoint.watchIdleExit")
                .into(),
        }
    }

    /// How long a watcher runs with nothing to do (no event, no question) before it
    /// exits; `None`: until stopped. `checkpoint.watchIdleExit` when set (`0`: never);
    /// unset, [`DEFAULT_WATCH_IDLE_EXIT`] for a watcher a hook run started and never for
    /// one the user started (`watch`, `watch --daemon`), which runs until stopped.
    pub fn watch_idle_exit(&self, auto_started: bool) -> Result<Option<Duration>> {
        Ok(match self.watch_idle_exit.get()? {
            Some(idle) if idle.is_zero() => None,
            Some(idle) => Some(idle),
            None => auto_started.then_some(DEFAULT_WATCH_IDLE_EXIT),
        })
    }
}

/// Every setting at its default: what a repository without any `checkpoint.*` key has.
impl Default for Settings {
    fn default() -> Settings {
        Settings::from_config(&HashMap::new())
    }
}

/// How long a second process waits for the store when `checkpoint.lockTimeout` is unset.
pub const DEFAULT_LOCK_TIMEOUT: Duration = Duration::from_secs(60);
/// zstd level for new content when `checkpoint.compression` is unset. Level 1 made a first
/// save of a 102 MB source tree 10% faster than level 3 for a store 2.4% larger
/// (34.0 against 33.2 MB), and every save with changes pays compression again. With the
/// solid blocks compressed by the readers at this level too (when above 3), git's source
/// took 13.9 MiB at level 5 and 13.4 MiB at 9 against 15.2 MiB, for 2.3x and 4.3x the
/// CPU: not worth it as a default.
pub const DEFAULT_COMPRESSION: i32 = 1;
/// How long a hook waits for the store when `checkpoint.hookLockTimeout` is unset: long
/// enough for another save to finish, short enough that the agent does not notice.
pub const DEFAULT_HOOK_LOCK_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a watcher a hook run started waits with nothing to do before it exits, when
/// `checkpoint.watchIdleExit` is unset: an agent's session pauses for minutes (the user
/// reads, thinks), rarely for half an hour, and a watcher costs a few watches meanwhile.
pub const DEFAULT_WATCH_IDLE_EXIT: Duration = Duration::from_secs(30 * 60);
/// Files larger than this are skipped when `checkpoint.maxFileSize` is unset.
pub const DEFAULT_MAX_FILE_SIZE: u64 = 100 << 20;

fn bad(key: &'static str, value: &str, expected: impl Into<String>) -> Error {
    Error::BadConfig {
        key,
        value: value.to_string(),
        expected: expected.into(),
    }
}

/// `checkpoint.compression`: the zstd level (1 to 19) for new chunks.
fn compression_level(repo: &Keys) -> Result<i32> {
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
fn lock_timeout(repo: &Keys) -> Result<Duration> {
    seconds(
        repo,
        "checkpoint.locktimeout",
        "checkpoint.lockTimeout",
        DEFAULT_LOCK_TIMEOUT,
    )
}

/// A duration in seconds (a decimal number) at `key` (`name` in its documented
/// spelling), or `default`.
fn seconds(repo: &Keys, key: &str, name: &'static str, default: Duration) -> Result<Duration> {
    match repo.config(key) {
        Some(value) => value
            .trim()
            .parse::<f64>()
            .ok()
            // `try_`: a value past what a Duration holds (1e20) is an error, not a panic.
            .and_then(|seconds| Duration::try_from_secs_f64(seconds).ok())
            .ok_or_else(|| bad(name, value, "a number of seconds")),
        None => Ok(default),
    }
}

/// A duration at `key` (`name` in its documented spelling): a number of seconds (`90`,
/// `0.5`), or with units as jiff's friendly format reads them (`2s`, `500ms`, `30m`,
/// `1h 30m`); `None` when unset. Never negative.
fn duration(repo: &Keys, key: &str, name: &'static str) -> Result<Option<Duration>> {
    let Some(value) = repo.config(key) else {
        return Ok(None);
    };
    let text = value.trim();
    let parsed = match text.parse::<f64>() {
        Ok(seconds) => Duration::try_from_secs_f64(seconds).ok(),
        Err(_) => text
            .parse::<jiff::SignedDuration>()
            .ok()
            .and_then(|d| Duration::try_from(d).ok()),
    };
    parsed
        .map(Some)
        .ok_or_else(|| bad(name, value, "a duration such as 30m, 90s or 0 for never"))
}

/// `checkpoint.maxFileSize`: files larger than this are not saved. `None` means no
/// limit (the value 0).
fn max_file_size(repo: &Keys) -> Result<Option<u64>> {
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
fn keep_permissions(repo: &Keys) -> Result<bool> {
    boolean(
        repo,
        "checkpoint.keeppermissions",
        "checkpoint.keepPermissions",
        true,
    )
}

/// A boolean at `key` (`name` in its documented spelling), or `default`.
fn boolean(repo: &Keys, key: &str, name: &'static str, default: bool) -> Result<bool> {
    match repo.config(key) {
        // git's spellings of a boolean; a key given without a value means true.
        Some(value) => match value.trim().to_ascii_lowercase().as_str() {
            "" | "true" | "yes" | "on" | "1" => Ok(true),
            "false" | "no" | "off" | "0" => Ok(false),
            _ => Err(bad(name, value, "true or false")),
        },
        None => Ok(default),
    }
}

/// `checkpoint.defaultBranch`: the branch HEAD names in a new store.
fn default_branch(repo: &Keys) -> Result<BranchName> {
    match repo.config("checkpoint.defaultbranch") {
        // The same rules as `git checkpoint branch <name>`, so a name that command
        // refuses can never become a branch through the config.
        Some(value) => match BranchName::new(value) {
            Ok(name) => Ok(name),
            Err(e) => Err(bad(
                "checkpoint.defaultBranch",
                value,
                format!("a branch name ({e})"),
            )),
        },
        None => BranchName::new(crate::model::branch::DEFAULT_BRANCH),
    }
}

/// The retention configured with `checkpoint.gc.*` (`keep`, `keepWithin`, `keepHourly`,
/// `keepDaily`, `keepWeekly`, `keepMonthly`, `keepYearly`, `keepPrompts`, `keepSessions`,
/// `maxSize`), or `None` when no key is set.
fn gc_options(repo: &Keys) -> Result<Option<GcOptions>> {
    // Looked up as git stores keys (lower case), named in errors as documented.
    let count = |key: &str| -> Result<Option<usize>> {
        repo.config(&key.to_lowercase())
            .map(|value| {
                value.trim().parse::<usize>().map_err(|_| {
                    Error::InvalidArgument(format!("{key} must be a whole number, not '{value}'"))
                })
            })
            .transpose()
    };
    let policy = Policy {
        last: count("checkpoint.gc.keep")?,
        hourly: count("checkpoint.gc.keepHourly")?,
        daily: count("checkpoint.gc.keepDaily")?,
        weekly: count("checkpoint.gc.keepWeekly")?,
        monthly: count("checkpoint.gc.keepMonthly")?,
        yearly: count("checkpoint.gc.keepYearly")?,
        prompts: count("checkpoint.gc.keepPrompts")?,
        sessions: count("checkpoint.gc.keepSessions")?,
        within: repo
            .config("checkpoint.gc.keepwithin")
            .map(|v| {
                v.parse::<Span>()
                    .map_err(|e| Error::InvalidArgument(format!("checkpoint.gc.keepWithin: {e}")))
            })
            .transpose()?,
    };
    let max_size = repo
        .config("checkpoint.gc.maxsize")
        .map(|v| {
            crate::format::size::parse_size(v)
                .map_err(|e| Error::InvalidArgument(format!("checkpoint.gc.maxSize: {e}")))
        })
        .transpose()?;
    let options = GcOptions { policy, max_size };
    Ok((options != GcOptions::default()).then_some(options))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn idle(value: &str) -> Result<Option<Duration>> {
        let config = HashMap::from([("checkpoint.watchidleexit".to_string(), value.to_string())]);
        Settings::from_config(&config).watch_idle_exit.get()
    }

    #[test]
    fn watch_idle_exit_reads_seconds_and_units() {
        assert_eq!(idle("90").unwrap(), Some(Duration::from_secs(90)));
        assert_eq!(idle("2s").unwrap(), Some(Duration::from_secs(2)));
        assert_eq!(idle("500ms").unwrap(), Some(Duration::from_millis(500)));
        assert_eq!(idle("30m").unwrap(), Some(Duration::from_secs(1800)));
        assert_eq!(idle("1h 30m").unwrap(), Some(Duration::from_secs(5400)));
        assert_eq!(idle("0").unwrap(), Some(Duration::ZERO));
        for bad in ["", "soon", "-5s", "-1", "1e30"] {
            assert!(
                matches!(idle(bad), Err(Error::BadConfig { .. })),
                "{bad:?}: {:?}",
                idle(bad)
            );
        }
    }

    #[test]
    fn only_an_auto_started_watcher_exits_when_idle_by_default() {
        let unset = Settings::default();
        assert_eq!(
            unset.watch_idle_exit(true).unwrap(),
            Some(DEFAULT_WATCH_IDLE_EXIT)
        );
        assert_eq!(unset.watch_idle_exit(false).unwrap(), None);
        let config = HashMap::from([("checkpoint.watchidleexit".to_string(), "0".to_string())]);
        let never = Settings::from_config(&config);
        assert_eq!(never.watch_idle_exit(true).unwrap(), None);
        let config = HashMap::from([("checkpoint.watchidleexit".to_string(), "5m".to_string())]);
        let five = Settings::from_config(&config);
        assert_eq!(
            five.watch_idle_exit(false).unwrap(),
            Some(Duration::from_secs(300))
        );
        assert!(unset.auto_watch.get().unwrap());
    }
}
