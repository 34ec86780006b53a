//! What an MCP registration is made of: where an agent keeps its servers and how our
//! entry is shaped there ([`McpConfig`], which each agent's [`Agent::mcp`] gives), the
//! entry itself ([`Entry`], named [`SERVER_NAME`]), and what an install did or a look
//! found ([`Registered`], [`Registration`]). The words `mcp_registration` (the install
//! and uninstall front) and the file formats below it (`mcp_json`, `mcp_toml`) share,
//! defined below all three so that each names them without importing the others.
//!
//! [`Agent::mcp`]: super::Agent::mcp

use std::path::Path;

use crate::Error;

/// The name of our entry in every agent's list of servers: short, and free of `_`,
/// which Gemini CLI uses to join a server's name to its tools' (`mcp_checkpoint_save`).
pub const SERVER_NAME: &str = "checkpoint";

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

/// One agent's MCP configuration, as its [`Agent::mcp`](super::Agent::mcp) gives it: its files, the
/// entry's shape, where it starts servers (sources in docs/mcp.md, "Registration").
#[derive(Clone, Copy, Debug)]
pub struct McpConfig {
    /// The project file, relative to the top of the worktree; `None` when the agent
    /// has only a user file. It is one of the agent's files a checkpoint leaves out.
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

/// What an install did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Registered {
    /// The entry was added (or an earlier build's replaced).
    Added,
    /// The entry was there already, exactly as install writes it: nothing changed.
    AlreadyThere,
}

/// An entry named [`SERVER_NAME`] found in an agent's file ([`Target::registration`]).
///
/// [`Target::registration`]: super::mcp_registration::Target::registration
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Registration {
    /// The program it runs, where it names one.
    pub command: Option<String>,
    /// Whether it is exactly what an install of this build, or an earlier one, writes
    /// there; else it is the user's own.
    pub ours: bool,
}

/// The server entry an install writes: the program to run and its arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The program: [`ON_PATH`] in a project's file, the absolute path of the running
    /// `git-checkpoint` in a user's.
    ///
    /// [`ON_PATH`]: super::mcp_registration::ON_PATH
    pub command: String,
    /// Its arguments: `mcp`, after `-C <directory>` where the agent starts servers
    /// outside the project.
    pub args: Vec<String>,
}

/// The refusal to replace a user's own entry named [`SERVER_NAME`].
pub(super) fn taken(path: &Path) -> Error {
    Error::InvalidArgument(format!(
        "{} already has an MCP server named '{SERVER_NAME}' that is not this install's; remove or rename it first",
        path.display()
    ))
}
