//! Registering `git checkpoint mcp` as an MCP server in an agent's configuration, in
//! the file and shape the agent documents (docs/mcp.md, "Registration", names each
//! source), so that the agent starts the server itself and offers its tools to the
//! model.
//!
//! One table, [`target`], keyed by the agent's name in [`super::AGENTS`], says where each
//! agent keeps its servers and how an entry is shaped; git's post-commit "agent" has no
//! MCP. JSON files are edited through `settings_file` (every other entry written back as
//! the exact text it was read as); Codex's TOML through `toml_edit`, which keeps the
//! comments and layout of everything it does not touch. The entry is named
//! [`SERVER_NAME`]. An install adds it only where no entry of that name is; a second
//! install finds it as written and changes nothing; a user's own entry of that name is
//! never replaced. An uninstall removes the entry only if it is exactly what install
//! writes, then what install created for it (the servers table once empty, the file once
//! nothing else is in it), so that install then uninstall gives back the file as it was.

use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use super::agent::Agent;
use super::paths::{agent_home, home_dir, settings_path_under, worktree_top};
use super::settings_file::SettingsFile;
use crate::{Error, Result};

/// The name of our entry in every agent's list of servers: short, and free of `_`,
/// which Gemini CLI uses to join a server's name to its tools' (`mcp_checkpoint_save`).
pub const SERVER_NAME: &str = "checkpoint";

/// Which of an agent's files the server is registered in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum McpScope {
    /// The worktree's own file: the server is offered in this project only.
    Project,
    /// The user's file in the home directory: every project of the user.
    User,
}

/// Where an agent starts a server it registers, which decides how the server finds the
/// worktree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Directory {
    /// In the project (its working directory, or its roots): the entry runs `mcp`
    /// alone.
    Project,
    /// Anywhere (Cline starts servers in `/`): the entry runs `-C <worktree> mcp`, the
    /// worktree the install was run in.
    Elsewhere,
    /// Anywhere, but the agent expands `${workspaceFolder}` in arguments (Cursor): the
    /// entry runs `-C ${workspaceFolder} mcp`.
    WorkspaceFolder,
}

/// How an agent's file holds its servers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// A JSON object under the top-level key `mcpServers`, one entry per server; every
    /// entry of ours has `command` and `args`, and these fixed keys before them.
    Json {
        /// Keys written first, as `(key, JSON text)`, such as `type`.
        fixed: &'static [(&'static str, &'static str)],
        /// Keys written after `command` and `args`.
        after: &'static [(&'static str, &'static str)],
    },
    /// Codex's TOML: a table `[mcp_servers.<name>]` with `command` and `args`.
    CodexToml,
}

/// One agent's MCP configuration: its files, the entry's shape, where it starts servers.
#[derive(Clone, Copy, Debug)]
pub struct Target {
    /// The agent's name ([`Agent::name`]).
    pub agent: &'static str,
    /// The project file, relative to the top of the worktree; `None` when the agent
    /// has only a user file.
    pub project: Option<&'static str>,
    /// The user file: relative to `$<env>` when that variable is set and not empty,
    /// else to `home` in the home directory.
    pub user: UserFile,
    /// How the file holds servers.
    pub format: Format,
    /// Where the agent starts the server.
    pub directory: Directory,
}

/// Where an agent's user file is.
#[derive(Clone, Copy, Debug)]
pub struct UserFile {
    /// The agent's own variable for its directory (`CODEX_HOME`), if it has one.
    pub env: Option<&'static str>,
    /// Its directory in the home directory when that variable is not set (`.codex`);
    /// empty for the home directory itself.
    pub home: &'static str,
    /// The file in that directory.
    pub file: &'static str,
}

/// Every agent's MCP configuration (sources in docs/mcp.md, "Registration").
pub static TARGETS: &[Target] = &[
    Target {
        agent: "claude",
        project: Some(".mcp.json"),
        user: UserFile {
            env: None,
            home: "",
            file: ".claude.json",
        },
        format: Format::Json {
            fixed: &[("type", "\"stdio\"")],
            after: &[],
        },
        directory: Directory::Project,
    },
    Target {
        agent: "cline",
        project: None,
        user: UserFile {
            env: None,
            home: ".cline/data/settings",
            file: "cline_mcp_settings.json",
        },
        format: Format::Json {
            fixed: &[("type", "\"stdio\"")],
            after: &[],
        },
        directory: Directory::Elsewhere,
    },
    Target {
        agent: "codex",
        project: Some(".codex/config.toml"),
        user: UserFile {
            env: Some("CODEX_HOME"),
            home: ".codex",
            file: "config.toml",
        },
        format: Format::CodexToml,
        directory: Directory::Project,
    },
    Target {
        agent: "copilot",
        project: Some(".github/mcp.json"),
        user: UserFile {
            env: Some("COPILOT_HOME"),
            home: ".copilot",
            file: "mcp-config.json",
        },
        format: Format::Json {
            fixed: &[("type", "\"local\"")],
            after: &[("tools", "[\"*\"]")],
        },
        directory: Directory::Project,
    },
    Target {
        agent: "cursor",
        project: Some(".cursor/mcp.json"),
        user: UserFile {
            env: None,
            home: ".cursor",
            file: "mcp.json",
        },
        format: Format::Json {
            fixed: &[("type", "\"stdio\"")],
            after: &[],
        },
        directory: Directory::WorkspaceFolder,
    },
    Target {
        agent: "gemini",
        project: Some(".gemini/settings.json"),
        user: UserFile {
            env: None,
            home: ".gemini",
            file: "settings.json",
        },
        format: Format::Json {
            fixed: &[],
            after: &[],
        },
        directory: Directory::Project,
    },
];

/// The MCP configuration of `agent`, or why it has none (git's post-commit hook).
pub fn target(agent: &dyn Agent) -> Result<&'static Target> {
    TARGETS
        .iter()
        .find(|target| target.agent == agent.name())
        .ok_or_else(|| {
            Error::InvalidArgument(format!(
                "{} takes no MCP server: it is git's post-commit hook, not an agent",
                agent.name()
            ))
        })
}

/// What an install did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Registered {
    /// The entry was added.
    Added,
    /// The entry was there already, exactly as install writes it: nothing changed.
    AlreadyThere,
}

/// The server entry an install writes: the program to run and its arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The program: the absolute path of the running `git-checkpoint`.
    pub command: String,
    /// Its arguments: `mcp`, after `-C <directory>` where the agent starts servers
    /// outside the project.
    pub args: Vec<String>,
}

impl Target {
    /// The file `scope` names, for a command run in `start`; refused when the agent has
    /// no such file, or when it is, or lies below, a symlink leading out of the
    /// worktree (or the home directory).
    pub fn path(&self, scope: McpScope, start: &Path) -> Result<PathBuf> {
        match scope {
            McpScope::Project => {
                let Some(relative) = self.project else {
                    return Err(Error::InvalidArgument(format!(
                        "{} keeps MCP servers only in its user file ~/{}/{}: use --scope user",
                        self.agent, self.user.home, self.user.file
                    )));
                };
                settings_path_under(&worktree_top(start)?, Path::new(relative))
            }
            McpScope::User => {
                let base = match self.user.env {
                    Some(var) => agent_home(var, self.user.home)
                        .ok_or_else(|| Error::InvalidArgument("HOME is not set".into()))?,
                    None => home_dir()?.join(self.user.home),
                };
                // The agent's directory may not exist yet: checked from the home
                // directory, or from itself when it is the agent's own variable.
                match base.strip_prefix(home_dir()?) {
                    Ok(inside) => settings_path_under(&home_dir()?, &inside.join(self.user.file)),
                    Err(_) => {
                        std::fs::create_dir_all(&base).map_err(|e| Error::io(&base, e))?;
                        settings_path_under(&base, Path::new(self.user.file))
                    }
                }
            }
        }
    }

    /// The entry for this agent: `program` (the running binary) with `mcp`, and the
    /// worktree around `start` as `-C` where the agent starts servers elsewhere.
    pub fn entry(&self, program: &Path, start: &Path) -> Result<Entry> {
        let mut args = Vec::new();
        match self.directory {
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
        Ok(Entry {
            command: program.to_string_lossy().into_owned(),
            args,
        })
    }

    /// Adds `entry` as [`SERVER_NAME`] to the file at `path`, creating the file (and
    /// the servers table) if needed and changing nothing else in it. Refuses an entry
    /// of that name that is not exactly `entry`: it is the user's own.
    pub fn install(&self, path: &Path, entry: &Entry) -> Result<Registered> {
        match self.format {
            Format::Json { .. } => self.install_json(path, entry),
            Format::CodexToml => codex_toml::install(path, entry),
        }
    }

    /// Removes exactly what [`install`](Target::install) added at `path`: the entry if
    /// it is exactly `entry`, the servers table once it is empty, and the file once
    /// nothing else is in it. Returns false if there was nothing of ours to remove.
    pub fn uninstall(&self, path: &Path, entry: &Entry) -> Result<bool> {
        match self.format {
            Format::Json { .. } => self.uninstall_json(path, entry),
            Format::CodexToml => codex_toml::uninstall(path, entry),
        }
    }

    /// The JSON object install writes for `entry`.
    fn json_entry(&self, entry: &Entry) -> Value {
        let Format::Json { fixed, after } = self.format else {
            unreachable!("only JSON targets have JSON entries")
        };
        let mut object = Map::new();
        let put = |pairs: &[(&str, &str)], object: &mut Map<String, Value>| {
            for (key, text) in pairs {
                let value = serde_json::from_str(text).expect("the table's JSON is valid");
                object.insert(key.to_string(), value);
            }
        };
        put(fixed, &mut object);
        object.insert("command".into(), json!(entry.command));
        object.insert("args".into(), json!(entry.args));
        put(after, &mut object);
        Value::Object(object)
    }

    fn install_json(&self, path: &Path, entry: &Entry) -> Result<Registered> {
        let file = SettingsFile::read(path)?;
        let mut settings = file.value.clone();
        let ours = self.json_entry(entry);
        let not_laid_out = |why: &str| {
            Error::InvalidArgument(format!(
                "{} is not laid out as {}'s MCP settings: {why}",
                file.target.display(),
                self.agent
            ))
        };
        let servers = settings
            .as_object_mut()
            .ok_or_else(|| not_laid_out("the top level is not a JSON object"))?
            .entry("mcpServers")
            .or_insert_with(|| Value::Object(Map::new()))
            .as_object_mut()
            .ok_or_else(|| not_laid_out("\"mcpServers\" is not an object"))?;
        match servers.get(SERVER_NAME) {
            Some(found) if *found == ours => return Ok(Registered::AlreadyThere),
            Some(_) => return Err(taken(&file.target)),
            None => {
                servers.insert(SERVER_NAME.to_string(), ours);
            }
        }
        file.write(&settings)?;
        Ok(Registered::Added)
    }

    fn uninstall_json(&self, path: &Path, entry: &Entry) -> Result<bool> {
        if std::fs::symlink_metadata(path).is_err() {
            return Ok(false);
        }
        let file = SettingsFile::read(path)?;
        let mut settings = file.value.clone();
        let ours = self.json_entry(entry);
        let Some(root) = settings.as_object_mut() else {
            return Ok(false);
        };
        let Some(servers) = root.get_mut("mcpServers").and_then(Value::as_object_mut) else {
            return Ok(false);
        };
        if servers.get(SERVER_NAME) != Some(&ours) {
            return Ok(false);
        }
        servers.shift_remove(SERVER_NAME);
        if servers.is_empty() {
            root.shift_remove("mcpServers");
        }
        if root.is_empty() {
            file.remove()?;
        } else {
            file.write(&settings)?;
        }
        Ok(true)
    }
}

/// The refusal to replace a user's own entry named [`SERVER_NAME`].
fn taken(path: &Path) -> Error {
    Error::InvalidArgument(format!(
        "{} already has an MCP server named '{SERVER_NAME}' that is not this install's; remove or rename it first",
        path.display()
    ))
}

/// Codex's `config.toml`: `[mcp_servers.checkpoint]`, edited with `toml_edit` so that
/// the user's comments, order and spacing stay as they were.
pub(super) mod codex_toml {
    use std::path::Path;

    use toml_edit::{value, Array, DocumentMut, Item, Table};

    use super::{taken, Entry, Registered, SERVER_NAME};
    use crate::{Error, Result};

    /// The file as text and its parsed document; `None` when there is no file.
    pub(in crate::agents) fn read(path: &Path) -> Result<Option<(String, DocumentMut)>> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(path, e)),
        };
        let document = text.parse::<DocumentMut>().map_err(|e| {
            Error::InvalidArgument(format!(
                "{} is not valid TOML: {}",
                path.display(),
                e.to_string().lines().next().unwrap_or_default()
            ))
        })?;
        Ok(Some((text, document)))
    }

    /// Whether `item` is exactly the table install writes for `entry`.
    fn is_ours(item: &Item, entry: &Entry) -> bool {
        let Some(table) = item.as_table_like() else {
            return false;
        };
        let args = table.get("args").and_then(Item::as_array).map(|args| {
            args.iter()
                .map(|a| a.as_str().map(str::to_string))
                .collect::<Option<Vec<_>>>()
        });
        table.len() == 2
            && table.get("command").and_then(Item::as_str) == Some(&entry.command)
            && args == Some(Some(entry.args.clone()))
    }

    /// Writes `text` to `path` atomically, keeping the file's permissions.
    fn write(path: &Path, text: &str) -> Result<()> {
        let target = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
        let dir = target.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let mode = std::fs::metadata(&target)
            .ok()
            .map(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()));
        let tmp = tempfile::NamedTempFile::new_in(dir).map_err(|e| Error::io(dir, e))?;
        std::fs::write(tmp.path(), text).map_err(|e| Error::io(&target, e))?;
        tmp.as_file()
            .sync_all()
            .map_err(|e| Error::io(&target, e))?;
        std::fs::set_permissions(
            tmp.path(),
            std::os::unix::fs::PermissionsExt::from_mode(mode.unwrap_or(0o644) & 0o7777),
        )
        .map_err(|e| Error::io(&target, e))?;
        tmp.persist(&target)
            .map_err(|e| Error::io(&target, e.error))?;
        Ok(())
    }

    pub(super) fn install(path: &Path, entry: &Entry) -> Result<Registered> {
        let (_, mut document) = read(path)?.unwrap_or_default();
        let servers = document
            .entry("mcp_servers")
            .or_insert_with(|| {
                // `[mcp_servers.checkpoint]` alone, without an empty `[mcp_servers]`.
                let mut table = Table::new();
                table.set_implicit(true);
                Item::Table(table)
            })
            .as_table_like_mut()
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "{} is not laid out as Codex's config: mcp_servers is not a table",
                    path.display()
                ))
            })?;
        if let Some(found) = servers.get(SERVER_NAME) {
            return match is_ours(found, entry) {
                true => Ok(Registered::AlreadyThere),
                false => Err(taken(path)),
            };
        }
        let mut table = Table::new();
        table.insert("command", value(entry.command.as_str()));
        table.insert("args", value(entry.args.iter().collect::<Array>()));
        servers.insert(SERVER_NAME, Item::Table(table));
        write(path, &document.to_string())?;
        Ok(Registered::Added)
    }

    pub(super) fn uninstall(path: &Path, entry: &Entry) -> Result<bool> {
        let Some((_, mut document)) = read(path)? else {
            return Ok(false);
        };
        let Some(servers) = document
            .get_mut("mcp_servers")
            .and_then(Item::as_table_like_mut)
        else {
            return Ok(false);
        };
        if !servers.get(SERVER_NAME).is_some_and(|s| is_ours(s, entry)) {
            return Ok(false);
        }
        servers.remove(SERVER_NAME);
        if servers.is_empty() {
            document.remove("mcp_servers");
        }
        if document.is_empty() && document.trailing().as_str().is_none_or(str::is_empty) {
            std::fs::remove_file(path).map_err(|e| Error::io(path, e))?;
            if let Some(dir) = path.parent() {
                // Only succeeds if the directory is empty, i.e. the install created it.
                let _ = std::fs::remove_dir(dir);
            }
        } else {
            write(path, &document.to_string())?;
        }
        Ok(true)
    }
}
