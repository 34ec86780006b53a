//! Registering `git checkpoint mcp` as an MCP server in an agent's configuration, in
//! the file and shape the agent documents (docs/mcp.md, "Registration", names each
//! source), so that the agent starts the server itself and offers its tools to the
//! model.
//!
//! Each agent says where it keeps its servers and how an entry is shaped through
//! [`Agent::mcp`] (an [`McpConfig`]); git's post-commit "agent" has none. The entry is
//! named [`SERVER_NAME`]. A project's file names the program as it is found on PATH
//! ([`ON_PATH`], as the hooks' `git checkpoint` is found), so the file can be
//! committed and works for everyone; a user's file names the absolute path of the
//! binary that ran the install. JSON files are edited in place (`mcp_json`: only our
//! entry's span changes), Codex's TOML through `toml_edit` (`mcp_toml`). An install adds
//! the entry only where no entry of that name is; a second install finds it as written
//! and changes nothing; a user's own entry of that name is never replaced. An uninstall
//! removes the entry only if it is exactly what install writes, then what install
//! created for it (the servers table, the file once nothing else is in it), so that
//! install then uninstall gives back the file as it was. A symlink or a read-only file
//! is refused and left as it is.

use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use super::agent::Agent;
use super::mcp_entry::{Directory, Format, McpConfig};
use super::paths::{agent_home, home_dir, settings_path_under, worktree_top};
use super::{mcp_json, mcp_toml};
use crate::{Error, Result};

// What other modules name as `mcp_registration::…`: the entry and what an install or a
// look finds, defined in `mcp_entry` so that the file formats below need not import
// this module.
pub use super::mcp_entry::{Entry, Registered, Registration, SERVER_NAME};

/// The program a project's file runs: `git-checkpoint` as the agent finds it on its
/// PATH, where `cargo install` and the hooks' `git checkpoint` need it too.
pub const ON_PATH: &str = "git-checkpoint";

/// Which of an agent's files the server is registered in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum McpScope {
    /// The worktree's own file: the server is offered in this project only.
    Project,
    /// The user's file in the home directory: every project of the user.
    User,
}

/// An agent's MCP configuration with the agent's name: what `mcp install` and
/// `mcp uninstall` work from.
#[derive(Clone, Copy, Debug)]
pub struct Target {
    /// The agent's name ([`Agent::name`]).
    pub agent: &'static str,
    /// Its configuration ([`Agent::mcp`]).
    pub config: McpConfig,
}

/// The MCP configuration of `agent`, or why it has none (git's post-commit hook).
pub fn target(agent: &dyn Agent) -> Result<Target> {
    let config = agent.mcp().ok_or_else(|| {
        Error::InvalidArgument(format!(
            "{} takes no MCP server: it is git's post-commit hook, not an agent",
            agent.name()
        ))
    })?;
    Ok(Target {
        agent: agent.name(),
        config,
    })
}

impl Target {
    /// The scope used when none is given: the project's file where the agent has one.
    pub fn default_scope(&self) -> McpScope {
        match self.config.project {
            Some(_) => McpScope::Project,
            None => McpScope::User,
        }
    }

    /// The file `scope` names, for a command run in `start`; refused when the agent has
    /// no such file, or when it is, or lies below, a symlink leading out of the
    /// worktree (or the home directory).
    pub fn path(&self, scope: McpScope, start: &Path) -> Result<PathBuf> {
        let user = self.config.user;
        match scope {
            McpScope::Project => {
                let Some(relative) = self.config.project else {
                    return Err(Error::InvalidArgument(format!(
                        "{} keeps MCP servers only in its user file ~/{}/{}: use --scope user",
                        self.agent, user.home, user.file
                    )));
                };
                settings_path_under(&worktree_top(start)?, Path::new(relative))
            }
            McpScope::User => {
                let base = self.user_dir()?;
                // The agent's directory may not exist yet: checked from the home
                // directory, or from itself when it is the agent's own variable.
                match base.strip_prefix(home_dir()?) {
                    Ok(inside) => settings_path_under(&home_dir()?, &inside.join(user.file)),
                    Err(_) => {
                        std::fs::create_dir_all(&base).map_err(|e| Error::io(&base, e))?;
                        settings_path_under(&base, Path::new(user.file))
                    }
                }
            }
        }
    }

    /// The directory of the user's file: `$<env>`, else its directory in the home
    /// directory.
    fn user_dir(&self) -> Result<PathBuf> {
        let user = self.config.user;
        match user.env {
            Some(var) => agent_home(var, user.home)
                .ok_or_else(|| Error::InvalidArgument("HOME is not set".into())),
            None => Ok(home_dir()?.join(user.home)),
        }
    }

    /// The file `scope` names, as [`Target::path`] gives it, but `None` where its
    /// directory does not exist (nothing is registered there), which is not made.
    pub fn existing_path(&self, scope: McpScope, start: &Path) -> Result<Option<PathBuf>> {
        if scope == McpScope::User && !self.user_dir()?.is_dir() {
            return Ok(None);
        }
        self.path(scope, start).map(Some)
    }

    /// The entry for this agent in `scope`'s file: the program ([`ON_PATH`] for the
    /// project's file, `program`, the running binary, for the user's) with `mcp`, and
    /// the worktree around `start` as `-C` where the agent starts servers elsewhere.
    /// Beside it, the entries earlier builds wrote there, which an install replaces
    /// and an uninstall removes as its own (they named the binary's absolute path in a
    /// project's file too).
    pub fn entries(
        &self,
        scope: McpScope,
        program: &Path,
        start: &Path,
    ) -> Result<(Entry, Vec<Entry>)> {
        let mut args = Vec::new();
        match self.config.directory {
            Directory::Project => {}
            Directory::Elsewhere => {
                let top = worktree_top(start)?;
                args.extend(["-C".to_string(), top.to_string_lossy().into_owned()]);
            }
            Directory::WorkspaceFolder => {
                args.extend(["-C".to_string(), "${workspaceFolder}".to_string()]);
            }
        }
        args.push("mcp".to_string());
        let absolute = Entry {
            command: program.to_string_lossy().into_owned(),
            args: args.clone(),
        };
        Ok(match scope {
            McpScope::Project => (
                Entry {
                    command: ON_PATH.to_string(),
                    args,
                },
                vec![absolute],
            ),
            McpScope::User => (absolute, Vec::new()),
        })
    }

    /// Adds `entry` as [`SERVER_NAME`] to the file at `path`, creating the file (and
    /// the servers table) if needed and changing nothing else in it. An entry of that
    /// name exactly as one of `older` is replaced; any other that is not exactly
    /// `entry` is the user's own, and refused.
    pub fn install(&self, path: &Path, entry: &Entry, older: &[Entry]) -> Result<Registered> {
        refuse_unless_editable(path)?;
        match self.config.format {
            Format::Json { .. } => {
                let older: Vec<Value> = older.iter().map(|e| self.json_entry(e)).collect();
                mcp_json::install(path, self.agent, &self.json_entry(entry), &older)
            }
            Format::CodexToml => mcp_toml::install(path, entry, older),
        }
    }

    /// The entry named [`SERVER_NAME`] in the file at `path`, `None` when there is none;
    /// `entry` and `older` are what an install writes there ([`Target::entries`]).
    /// Changes nothing.
    pub fn registration(
        &self,
        path: &Path,
        entry: &Entry,
        older: &[Entry],
    ) -> Result<Option<Registration>> {
        let ours: Vec<Entry> = std::iter::once(entry).chain(older).cloned().collect();
        match self.config.format {
            Format::Json { .. } => {
                let ours: Vec<Value> = ours.iter().map(|e| self.json_entry(e)).collect();
                mcp_json::registration(path, &ours)
            }
            Format::CodexToml => mcp_toml::registration(path, &ours),
        }
    }

    /// Removes exactly what [`install`](Target::install) added at `path`: the entry if
    /// it is exactly `entry` or one of `older`, the servers table once it is empty, and
    /// the file once nothing else is in it. Returns false if there was nothing of ours
    /// to remove.
    pub fn uninstall(&self, path: &Path, entry: &Entry, older: &[Entry]) -> Result<bool> {
        if std::fs::symlink_metadata(path).is_err() {
            return Ok(false);
        }
        refuse_unless_editable(path)?;
        let ours: Vec<Entry> = std::iter::once(entry).chain(older).cloned().collect();
        match self.config.format {
            Format::Json { .. } => {
                let ours: Vec<Value> = ours.iter().map(|e| self.json_entry(e)).collect();
                mcp_json::uninstall(path, &ours)
            }
            Format::CodexToml => mcp_toml::uninstall(path, &ours),
        }
    }

    /// The JSON object install writes for `entry`.
    fn json_entry(&self, entry: &Entry) -> Value {
        let (fixed, after) = match self.config.format {
            Format::Json { fixed, after } => (fixed, after),
            Format::CodexToml => (&[][..], &[][..]),
        };
        let mut object = Map::new();
        let put = |pairs: &[(&str, &str)], object: &mut Map<String, Value>| {
            for (key, text) in pairs {
                let value = serde_json::from_str(text).expect("the agents' JSON is valid");
                object.insert(key.to_string(), value);
            }
        };
        put(fixed, &mut object);
        object.insert("command".into(), json!(entry.command));
        object.insert("args".into(), json!(entry.args));
        put(after, &mut object);
        Value::Object(object)
    }
}

/// Refuses a file that is a symlink, dangling or not (rewriting it would replace the
/// link, or edit a file kept elsewhere), that is not a regular file, or that is
/// read-only (its owner said it must not change). A missing file is fine: install
/// creates it.
fn refuse_unless_editable(path: &Path) -> Result<()> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(Error::io(path, e)),
    };
    let why = if meta.file_type().is_symlink() {
        "is a symlink; mcp install edits only a regular file: register the server in the file it points to by hand, or put the file itself in its place"
    } else if !meta.is_file() {
        "is not a regular file"
    } else if meta.permissions().readonly() {
        "is read-only; make it writable (chmod u+w) for mcp install to edit it"
    } else {
        return Ok(());
    };
    Err(Error::InvalidArgument(format!("{} {why}", path.display())))
}
