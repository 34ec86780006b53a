//! One file per subcommand: its `Args` (the help text) and one function that resolves
//! the arguments, does the work through the library, and reports.

pub mod gc;
pub mod log;
pub mod pin;
pub mod restore;
pub mod save;
pub mod stats;
pub mod unpin;
pub mod verify;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context as _;
use git_checkpoint::repo::Repo;
use git_checkpoint::store::{ReadStore, Store, DEFAULT_LOCK_TIMEOUT};

use crate::cli::{Cli, Command};

/// What every command needs: the worktree and the output switches.
pub struct Context {
    /// The worktree.
    pub repo: Repo,
    /// `-q`.
    pub quiet: bool,
    /// `--json`.
    pub json: bool,
}

impl Context {
    /// Opens the store, waiting for another process as `checkpoint.lockTimeout` allows.
    pub fn open_store(&self) -> anyhow::Result<Store> {
        let quiet = self.quiet;
        Ok(Store::open(
            &self.store_path(),
            self.lock_timeout()?,
            &mut || {
                if !quiet {
                    eprintln!("waiting for another git-checkpoint to finish...");
                }
            },
        )?)
    }

    /// Opens the store read-only (the file stays byte-identical), waiting likewise.
    pub fn open_read_store(&self) -> anyhow::Result<ReadStore> {
        let quiet = self.quiet;
        Ok(ReadStore::open(
            &self.store_path(),
            self.lock_timeout()?,
            &mut || {
                if !quiet {
                    eprintln!("waiting for another git-checkpoint to finish...");
                }
            },
        )?)
    }

    /// The store file.
    pub fn store_path(&self) -> PathBuf {
        self.repo.checkpoint_dir().join("store.redb")
    }

    /// How long to wait for another process: `checkpoint.lockTimeout` seconds.
    pub fn lock_timeout(&self) -> anyhow::Result<Duration> {
        Ok(match self.repo.config("checkpoint.locktimeout") {
            Some(value) => Duration::from_secs_f64(
                value
                    .parse::<f64>()
                    .ok()
                    .filter(|s| s.is_finite() && *s >= 0.0)
                    .with_context(|| {
                        format!("checkpoint.lockTimeout must be a number of seconds, not '{value}'")
                    })?,
            ),
            None => DEFAULT_LOCK_TIMEOUT,
        })
    }

    /// The zstd level for new chunks (`checkpoint.compression`, default 3).
    pub fn compression_level(&self) -> anyhow::Result<i32> {
        match self.repo.config("checkpoint.compression") {
            Some(value) => value
                .parse::<i32>()
                .ok()
                .filter(|l| (1..=19).contains(l))
                .with_context(|| format!("checkpoint.compression must be 1 to 19, not '{value}'")),
            None => Ok(3),
        }
    }

    /// Prints a warning to stderr unless quiet.
    pub fn warn(&self, message: &str) {
        if !self.quiet {
            eprintln!("warning: {message}");
        }
    }

    /// Prints a line of chatter to stdout unless quiet or producing JSON.
    pub fn say(&self, line: &str) {
        if !self.quiet && !self.json {
            println!("{line}");
        }
    }
}

/// Runs the parsed command line.
pub fn run(cli: Cli) -> anyhow::Result<()> {
    let start = cli.directory.as_deref().unwrap_or(Path::new("."));
    let repo = Repo::discover(start)?;
    let context = Context {
        repo,
        quiet: cli.quiet,
        json: cli.json,
    };
    match cli.command {
        Command::Save(args) => save::run(&context, args),
        Command::Restore(args) => restore::run(&context, args),
        Command::Log(args) => log::run(&context, args),
        Command::Gc(args) => gc::run(&context, args),
        Command::Pin(args) => pin::run(&context, args),
        Command::Unpin(args) => unpin::run(&context, args),
        Command::Verify(args) => verify::run(&context, args),
        Command::Stats(args) => stats::run(&context, args),
    }
}

/// Prints a value as the one JSON document on stdout.
pub fn print_json(value: &impl serde::Serialize) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}
