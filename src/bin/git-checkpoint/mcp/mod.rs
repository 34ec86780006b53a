//! `git checkpoint mcp`: a Model Context Protocol server on stdio, so that a coding
//! agent can list, inspect, save and restore its own checkpoints (docs/mcp.md).
//!
//! This is the only async part of the binary: a tokio runtime is built for this
//! command alone. Each tool call runs on a blocking thread through the same functions
//! the CLI commands use (each tool in `tools/` asks its command for the answer the
//! command prints), on a worktree its `scope` allows, and opens the store for that call
//! only, so an idle server never keeps a hook or another command waiting. stdout carries
//! the protocol and nothing else; logs go to stderr.

mod scope;
mod tools;

use std::path::{Path, PathBuf};
use std::time::Duration;

use std::borrow::Cow;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientNotification, ClientRequest,
    ContentBlock, ErrorCode, Implementation, ListToolsResult, PaginatedRequestParams,
    ProtocolVersion, ServerCapabilities, ServerConfig, ServerResult,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, Service, ServiceExt};

use git_checkpoint::error::ErrorKind;
use scope::Scope;

use crate::ui::failure::Failure;

/// How long a tool call waits for the client's answer to `roots/list` before it falls
/// back to the server's working directory: a client that announces roots but never
/// answers must not hang every call.
const ROOTS_TIMEOUT: Duration = Duration::from_secs(5);

/// What the model reads once, at the start: how the tools fit together.
const INSTRUCTIONS: &str = "git-checkpoint keeps save points (checkpoints) of this git worktree, outside git's history; agent hooks save one around every prompt and tool call. To undo your last N steps: list_checkpoints with limit N+1 to see them, then restore with rev \"@~N\" (or the id of the checkpoint to go back to); restore first saves any unsaved changes as a safety checkpoint, so it can itself be undone, and dry_run shows what it would change. To undo one step or one prompt's turn but keep later work, use revert. Revisions: a full id or unique prefix, a branch name, @ (the current checkpoint), <session>:prompt<N>, each optionally followed by ~N; <session>:turn<N> is everything prompt N's turn changed. Every tool takes an optional `repo`: a path inside the worktree this server serves or inside one of the client's roots, nothing else.";

/// The server: which tools it offers and where it looks for the worktree.
#[derive(Clone)]
pub struct Server {
    /// `-C`: the directory every call starts from, overriding the client's roots.
    directory: Option<PathBuf>,
    /// `--read-only`: only the tools that change nothing.
    read_only: bool,
}

impl Server {
    /// The tools this server offers.
    fn tools(&self) -> Vec<rmcp::model::Tool> {
        tools::all()
            .iter()
            .filter(|tool| tool.offered(self.read_only))
            .map(|tool| (tool.definition)(self.read_only))
            .collect()
    }

    /// The names of the tools this server offers, as a sentence lists them.
    fn tool_names(&self) -> String {
        let names: Vec<&str> = (tools::all().iter())
            .filter(|tool| tool.offered(self.read_only))
            .map(|tool| tool.name)
            .collect();
        names.join(", ")
    }

    /// Where a call may work: from `-C`, else the client's first root (a `file://`
    /// URI), else the working directory; and in the client's roots. Agents start
    /// servers in all sorts of places (some in `/`), so the roots come before the
    /// working directory.
    // Roots are deprecated by the 2026-07-28 protocol (SEP-2577), but the agents still
    // handshake with 2025-11-25 and send them; they are the only way to learn where the
    // agent works when it starts the server elsewhere.
    #[allow(deprecated)]
    async fn scope(&self, context: &RequestContext<RoleServer>) -> Scope {
        let mut roots = Vec::new();
        let has_roots = context
            .peer
            .peer_info()
            .is_some_and(|info| info.capabilities.roots.is_some());
        if has_roots {
            match tokio::time::timeout(ROOTS_TIMEOUT, context.peer.list_roots()).await {
                Ok(Ok(list)) => {
                    roots = list
                        .roots
                        .iter()
                        .filter_map(|r| file_uri_path(&r.uri))
                        .collect();
                }
                Ok(Err(error)) => log(&format!("roots/list failed: {error}")),
                Err(_) => log("the client did not answer roots/list; using the working directory"),
            }
        }
        let base = match (&self.directory, roots.first()) {
            (Some(directory), _) => directory.clone(),
            (None, Some(root)) => root.clone(),
            (None, None) => PathBuf::from("."),
        };
        Scope { base, roots }
    }
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                "git-checkpoint",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        self.tools().into_iter().find(|tool| tool.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.to_string();
        if self.get_tool(&name).is_none() {
            let why = match self.read_only && tools::all().iter().any(|t| t.name == name) {
                true => format!(
                    "tool '{name}' is not offered: the server runs with --read-only; it offers {}",
                    self.tool_names()
                ),
                false => format!(
                    "no tool named '{name}'; the tools are {}",
                    self.tool_names()
                ),
            };
            return Err(McpError::invalid_params(why, None));
        }
        let arguments = request.arguments.unwrap_or_default();
        let scope = self.scope(&context).await;
        let read_only = self.read_only;
        let call =
            tokio::task::spawn_blocking(move || tools::call(&name, arguments, &scope, read_only));
        let result = match call.await {
            Ok(result) => result,
            // The panic was logged on stderr by the hook `serve` installs; the server
            // goes on.
            Err(error) => CallToolResult::error(vec![ContentBlock::text(format!(
                "error: internal error: {error}; this is a bug in git-checkpoint, please report it"
            ))]),
        };
        Ok(result.into())
    }
}

/// The local path a `file://` URI names, percent-decoded; `None` for any other URI.
fn file_uri_path(uri: &str) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStringExt;
    let rest = uri.strip_prefix("file://")?;
    // `file://host/path`: only the local host is ours.
    let path = match rest.strip_prefix("localhost") {
        Some(path) => path,
        None => rest,
    };
    if !path.starts_with('/') {
        return None;
    }
    let bytes = percent_encoding::percent_decode_str(path).collect::<Vec<u8>>();
    Some(PathBuf::from(std::ffi::OsString::from_vec(bytes)))
}

/// The server as the protocol sees it: [`Server`], whose JSON-RPC "method not found"
/// says which method and what the server does offer (rmcp's names only the method).
#[derive(Clone)]
struct Answering(Server);

/// The methods a client may call: what a "method not found" points to.
const METHODS: &str = "initialize, ping, tools/list and tools/call";

impl Service<RoleServer> for Answering {
    async fn handle_request(
        &self,
        request: ClientRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<ServerResult, McpError> {
        let answer = self.0.handle_request(request, context).await;
        answer.map_err(|mut error| {
            if error.code == ErrorCode::METHOD_NOT_FOUND {
                error.message = Cow::Owned(format!(
                    "method '{}' not found: this server offers tools only ({METHODS}); its tools are {}",
                    error.message,
                    self.0.tool_names()
                ));
            }
            error
        })
    }

    async fn handle_notification(
        &self,
        notification: ClientNotification,
        context: NotificationContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.0.handle_notification(notification, context).await
    }

    fn get_info(&self) -> ServerConfig {
        Service::<RoleServer>::get_info(&self.0)
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        Service::<RoleServer>::supported_protocol_versions(&self.0)
    }
}

/// A line on stderr, the server's only log.
fn log(line: &str) {
    eprintln!("git-checkpoint mcp: {line}");
}

/// Serves MCP on stdin/stdout until the client closes stdin. `directory` is `-C`.
pub fn serve(directory: Option<&Path>, read_only: bool) -> anyhow::Result<()> {
    // A panic in a tool call is a bug, but it must not take the agent's server down: it
    // is logged and the call answers with an error (the binary's own hook exits).
    std::panic::set_hook(Box::new(|info| log(&format!("internal error: {info}"))));
    let protocol = protocol_stdout()?;
    let server = Answering(Server {
        directory: directory.map(Path::to_path_buf),
        read_only,
    });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let output = tokio::fs::File::from_std(protocol);
        let running = server
            .serve((tokio::io::stdin(), output))
            .await
            .map_err(|e| {
                Failure::error(ErrorKind::Io, format!("the MCP session did not start: {e}"))
            })?;
        running.waiting().await.map_err(|e| {
            Failure::error(
                ErrorKind::Io,
                format!("the MCP session ended with an error: {e}"),
            )
        })?;
        anyhow::Ok(())
    })
}

/// The protocol's own handle on stdout; fd 1 itself then points at stderr, so that
/// nothing printed by mistake on the way (a `println!` deep in shared code) can corrupt
/// the JSON-RPC stream.
fn protocol_stdout() -> anyhow::Result<std::fs::File> {
    let protocol = rustix::io::dup(std::io::stdout()).map_err(std::io::Error::from)?;
    rustix::stdio::dup2_stdout(std::io::stderr()).map_err(std::io::Error::from)?;
    Ok(std::fs::File::from(protocol))
}
