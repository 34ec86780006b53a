//! The worktree a command works on, with its settings: the one door to its store.
//!
//! Every store this crate opens for a worktree is opened here (and `verify`'s look at a
//! possibly damaged one starts here), so that each open waits
//! for another process as the settings say and a new store's HEAD names
//! `checkpoint.defaultBranch`, whoever opens it (a command, a hook, the watcher's quiet
//! save). It lives with the operations because it joins three layers below them:
//! [`crate::git`] (the repository), [`crate::settings`] (what its `checkpoint.*` keys
//! say) and [`crate::storage`] (the store file).
//!
//! Nothing outside this crate can open a store any other way: the store's own `open`
//! functions are not public, and a save's options are made from a workspace's settings.
//!
//! ```no_run
//! # fn main() -> git_checkpoint::Result<()> {
//! use git_checkpoint::ops::workspace::Workspace;
//! let workspace = Workspace::discover(std::path::Path::new("."), Default::default())?;
//! let _store = workspace.open_store(&mut || {})?;
//! let _read = workspace.open_read_store(&mut || {}, &mut || {})?;
//! let _now = workspace.open_read_store_now()?;
//! let _options = workspace.save_options("a message");
//! # Ok(()) }
//! ```
//!
//! ```compile_fail,E0624
//! # fn open(path: &std::path::Path) {
//! let _ = git_checkpoint::storage::Store::open(path, std::time::Duration::ZERO, &mut || {});
//! # }
//! ```
//!
//! ```compile_fail,E0624
//! # fn open(path: &std::path::Path) {
//! let _ = git_checkpoint::storage::ReadStore::open(
//!     path,
//!     std::time::Duration::ZERO,
//!     &mut || {},
//!     &mut || {},
//! );
//! # }
//! ```
//!
//! ```compile_fail,E0624
//! # fn open(path: &std::path::Path) {
//! let _ = git_checkpoint::storage::ReadStore::open_now(path);
//! # }
//! ```
//!
//! ```compile_fail,E0599
//! let _ = git_checkpoint::ops::save::SaveOptions::default();
//! ```

use std::path::Path;
use std::time::Duration;

use crate::git::repo::{AgentFiles, Repo};
use crate::model::operation::Invocation;
use crate::ops::save::SaveOptions;
use crate::settings::Settings;
use crate::storage::{verify, ReadStore, Store};
use crate::Result;

/// A worktree and its `checkpoint.*` settings, read once.
#[derive(Clone, Debug)]
pub struct Workspace {
    /// The worktree, as git finds it.
    pub repo: Repo,
    /// Its `checkpoint.*` settings, parsed from `repo`'s configuration.
    pub settings: Settings,
    /// What the operation log records as having made the operations committed through
    /// a store opened here: this process's command line unless the caller says
    /// otherwise (a hook names its agent and event; the MCP server may name the tool
    /// call).
    pub invocation: Invocation,
}

impl Workspace {
    /// Finds the worktree containing `dir` ([`Repo::discover`]) and reads its settings;
    /// `agent_files` as for [`Workspace::new`].
    pub fn discover(dir: &Path, agent_files: AgentFiles) -> Result<Workspace> {
        Ok(Workspace::new(Repo::discover(dir)?, agent_files))
    }

    /// The workspace of a worktree already found. `agent_files` are the files the
    /// agents' installs write in a worktree, which no checkpoint holds and no restore
    /// changes ([`Repo::agent_files`]): `agents::worktree_files()`, handed down by the
    /// caller because only the agents layer, above this one, knows them.
    pub fn new(mut repo: Repo, agent_files: AgentFiles) -> Workspace {
        repo.agent_files = agent_files;
        let settings = Settings::of(&repo);
        Workspace {
            repo,
            settings,
            invocation: Invocation::command_line(std::env::args_os().skip(1)),
        }
    }

    /// Opens (creating on first use) the store for writing: waiting up to
    /// `checkpoint.lockTimeout` for another process, calling `on_wait` once if it has to
    /// wait, and giving a new store's HEAD the `checkpoint.defaultBranch`.
    pub fn open_store(&self, on_wait: &mut dyn FnMut()) -> Result<Store> {
        self.open_store_within(self.settings.lock_timeout.get()?, on_wait)
    }

    /// [`Workspace::open_store`] for an agent's hook, which waits only
    /// `checkpoint.hookLockTimeout`: a hook must not hold up the agent.
    pub fn open_store_for_hook(&self, on_wait: &mut dyn FnMut()) -> Result<Store> {
        self.open_store_within(self.settings.hook_lock_timeout.get()?, on_wait)
    }

    /// Opens the store read-only (the file stays byte-identical), waiting as
    /// [`Workspace::open_store`] does. A store that does not exist yet, that an
    /// interrupted run left needing recovery, or of an older format, is first opened for
    /// writing once, which creates, repairs or upgrades it; `on_repair` is told when the
    /// repair cannot be recorded (a full disk), and the store is then read through a
    /// write open.
    pub fn open_read_store(
        &self,
        on_wait: &mut dyn FnMut(),
        on_repair: &mut dyn FnMut(),
    ) -> Result<ReadStore> {
        ReadStore::open(
            &self.repo.store_path(),
            self.settings.lock_timeout.get()?,
            on_wait,
            on_repair,
        )
    }

    /// Opens the store read-only if that can be done at once and leaves the file as it
    /// is: `None` when there is no store, another process has it open for writing, or
    /// it needs a recovery or upgrade (which [`Workspace::open_read_store`] would make
    /// by writing). For tab completion, which must never wait and never write.
    pub fn open_read_store_now(&self) -> Result<Option<ReadStore>> {
        ReadStore::open_now(&self.repo.store_path())
    }

    /// The options of a save with `message` that applies this workspace's settings; the
    /// rest (metadata, attachments, …) as a plain save has them, for the caller to set.
    pub fn save_options(&self, message: impl Into<String>) -> SaveOptions {
        SaveOptions::new(message.into(), self.settings.clone())
    }

    /// Checks the store (a private copy, so the file is never changed; damage, including
    /// a file that does not open, is in the report), waiting for another process as
    /// [`Workspace::open_store`] does.
    pub fn verify(&self, on_wait: &mut dyn FnMut(), read_data: bool) -> Result<verify::Report> {
        verify::verify(
            &self.repo.store_path(),
            self.settings.lock_timeout.get()?,
            on_wait,
            read_data,
        )
    }

    /// Opens the store for writing, waiting up to `timeout`; a new store's HEAD names
    /// `checkpoint.defaultBranch`.
    fn open_store_within(&self, timeout: Duration, on_wait: &mut dyn FnMut()) -> Result<Store> {
        let branch = self.settings.default_branch.get()?;
        let mut store = Store::open(&self.repo.store_path(), timeout, on_wait)?;
        store.invocation = self.invocation.clone();
        store.init_head(&branch)?;
        Ok(store)
    }
}
