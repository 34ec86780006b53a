//! rmcp's own client, driving the real binary's MCP server over stdio as an agent
//! would: the handshake, tool calls, and a client that declares roots.

use std::path::Path;

use rmcp::model::{CallToolRequestParams, CallToolResult, JsonObject};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;

use super::Sandbox;

/// A connected client of the server.
pub type Client = RunningService<RoleClient, ()>;

/// A tokio runtime for one test: the binary's server is async, the tests are not.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Starts `git checkpoint <args>` in `cwd` (args end with `mcp …`) and completes the
/// MCP handshake with it.
pub async fn connect(sb: &Sandbox, cwd: &Path, args: &[&str]) -> Client {
    let command = tokio::process::Command::from(sb.bin_cmd(cwd, args));
    let transport = TokioChildProcess::new(command).expect("spawn the server");
    ().serve(transport).await.expect("the handshake")
}

/// [`connect`] for a client that declares `roots` (`file://` URIs), as agents that
/// start servers elsewhere do.
pub async fn connect_with_roots(
    sb: &Sandbox,
    cwd: &Path,
    args: &[&str],
    roots: &[String],
) -> RunningService<RoleClient, WithRoots> {
    let command = tokio::process::Command::from(sb.bin_cmd(cwd, args));
    let transport = TokioChildProcess::new(command).expect("spawn the server");
    WithRoots(roots.to_vec())
        .serve(transport)
        .await
        .expect("the handshake")
}

/// Calls tool `name` with `arguments` (a JSON object) on any client.
pub async fn call<S: rmcp::Service<RoleClient>>(
    client: &RunningService<RoleClient, S>,
    name: &str,
    arguments: Value,
) -> CallToolResult {
    let arguments: JsonObject = serde_json::from_value(arguments).unwrap();
    client
        .call_tool(CallToolRequestParams::new(name.to_string()).with_arguments(arguments))
        .await
        .unwrap_or_else(|e| panic!("tools/call {name}: {e}"))
}

/// The text of a result.
pub fn text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|c| c.as_text().map(|t| t.text.clone()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A successful result's structured content.
#[track_caller]
pub fn ok(result: &CallToolResult) -> Value {
    assert_eq!(result.is_error, Some(false), "{}", text(result));
    result
        .structured_content
        .clone()
        .expect("structured content")
}

/// A tool error's text.
#[track_caller]
pub fn tool_error(result: &CallToolResult) -> String {
    assert_eq!(
        result.is_error,
        Some(true),
        "not an error: {}",
        text(result)
    );
    text(result)
}

/// The `file://` URI of a local directory, its bytes percent-encoded where a URI needs it.
pub fn file_uri(dir: &Path) -> String {
    let mut uri = "file://".to_string();
    for &b in dir.as_os_str().as_encoded_bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'_' | b'.' | b'~' => {
                uri.push(b as char)
            }
            b => uri += &format!("%{b:02X}"),
        }
    }
    uri
}

/// A client that advertises roots, as agents that start servers elsewhere do.
pub struct WithRoots(pub Vec<String>);

// Roots are deprecated by the newest protocol, but agents still send them.
#[allow(deprecated)]
impl rmcp::ClientHandler for WithRoots {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        rmcp::model::ClientConfig::new(
            rmcp::model::ClientCapabilities::builder()
                .enable_roots()
                .build(),
            rmcp::model::Implementation::new("roots-test", "1"),
        )
    }

    async fn list_roots(
        &self,
        _context: rmcp::service::RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ListRootsResult, rmcp::ErrorData> {
        Ok(rmcp::model::ListRootsResult::new(
            self.0
                .iter()
                .map(|uri| rmcp::model::Root::new(uri.clone()))
                .collect(),
        ))
    }
}
