//! `git checkpoint mcp install <agent>` and `mcp uninstall <agent>`: the server is
//! registered in each agent's own file, in its documented shape, beside the user's own
//! settings; uninstall gives back the file byte for byte. HOME is the sandbox's.

use crate::common;
use std::path::{Path, PathBuf};

use common::*;
use serde_json::{json, Value};

/// The binary as the entry names it: the absolute path of the one that ran.
fn program() -> String {
    std::fs::canonicalize(BIN)
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

/// Runs `mcp <action> <agent> [--scope <scope>]`; returns stdout.
#[track_caller]
fn mcp(r: &Repo, action: &str, agent: &str, scope: Option<&str>) -> String {
    let mut args = vec!["mcp", action, agent];
    if let Some(scope) = scope {
        args.extend(["--scope", scope]);
    }
    r.ok(&args).stdout
}

/// Installs for `agent` into `path`, which holds `original` (or nothing): checks the
/// written file with `check`, that a second install changes nothing, and that uninstall
/// gives back `original` exactly (or no file, and no directory the install made).
#[track_caller]
fn round_trip(
    r: &Repo,
    agent: &str,
    scope: Option<&str>,
    path: &Path,
    original: Option<&[u8]>,
    check: impl FnOnce(&[u8]),
) {
    if let Some(original) = original {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, original).unwrap();
    }
    let said = mcp(r, "install", agent, scope);
    assert!(said.starts_with("Registered"), "{said}");
    let installed = std::fs::read(path).unwrap();
    check(&installed);
    let again = mcp(r, "install", agent, scope);
    assert!(again.contains("already registered"), "{again}");
    assert_eq!(std::fs::read(path).unwrap(), installed);
    let removed = mcp(r, "uninstall", agent, scope);
    assert!(removed.starts_with("Removed"), "{removed}");
    match original {
        Some(original) => assert_eq!(
            String::from_utf8_lossy(&std::fs::read(path).unwrap()),
            String::from_utf8_lossy(original)
        ),
        None => {
            assert!(!path.exists(), "{} left behind", path.display());
            assert!(!path.parent().unwrap().exists() || path.parent() == Some(&r.dir));
        }
    }
    let nothing = mcp(r, "uninstall", agent, scope);
    assert!(nothing.starts_with("No MCP server"), "{nothing}");
}

/// The `mcpServers.checkpoint` entry of a JSON file, with the user's entries beside it.
#[track_caller]
fn json_entry(text: &[u8], others: &[&str]) -> Value {
    let settings: Value = serde_json::from_slice(text).unwrap();
    for other in others {
        assert!(
            settings.pointer(other).is_some(),
            "{other} lost: {settings}"
        );
    }
    settings["mcpServers"]["checkpoint"].clone()
}

/// A JSON settings file of the user's: another server, and settings of theirs laid out
/// as they like, which come back as they were (the servers' object itself is written in
/// the file's layout, as `hooks install` writes `hooks`).
const USER_JSON: &str = r#"{
  "theme": "dark",
  "mcpServers": {
    "github": {
      "command": "github-mcp",
      "args": [
        "stdio"
      ]
    }
  },
  "editor": { "tabs": [2, 4],   "wrap": true },
  "number": 1e3
}
"#;

#[test]
fn claude_code_project_and_user_files() {
    let r = Repo::new();
    round_trip(
        &r,
        "claude",
        None,
        &r.p(".mcp.json"),
        Some(USER_JSON.as_bytes()),
        |text| {
            let entry = json_entry(text, &["/theme", "/editor/wrap", "/mcpServers/github/args"]);
            assert_eq!(
                entry,
                json!({"type": "stdio", "command": program(), "args": ["mcp"]})
            );
        },
    );
    r.remove(".mcp.json");
    round_trip(&r, "claude", None, &r.p(".mcp.json"), None, |_| {});
    round_trip(
        &r,
        "claude",
        Some("user"),
        &r.home().join(".claude.json"),
        Some(b"{\"numStartups\":12,\"projects\":{\"/x\":{\"allowedTools\":[]}}}\n"),
        |text| {
            let entry = json_entry(text, &["/numStartups", "/projects/~1x"]);
            assert_eq!(entry["args"], json!(["mcp"]));
        },
    );
}

#[test]
fn codex_toml_keeps_comments_and_layout() {
    let r = Repo::new();
    let original = "# my Codex settings\nmodel = \"o4\"   # the model\n\n[mcp_servers.docs]\ncommand = \"docs-mcp\"\nargs = [ \"--stdio\" ]   # odd spacing kept\n\n[profiles.fast]\nmodel_reasoning_effort = \"low\"\n";
    let path = r.home().join(".codex/config.toml");
    round_trip(
        &r,
        "codex",
        Some("user"),
        &path,
        Some(original.as_bytes()),
        |text| {
            let text = String::from_utf8(text.to_vec()).unwrap();
            assert!(
                text.contains("# my Codex settings\nmodel = \"o4\"   # the model\n"),
                "{text}"
            );
            assert!(
                text.contains("args = [ \"--stdio\" ]   # odd spacing kept"),
                "{text}"
            );
            let config: toml_edit::DocumentMut = text.parse().unwrap();
            let entry = &config["mcp_servers"]["checkpoint"];
            assert_eq!(entry["command"].as_str(), Some(program().as_str()));
            let args: Vec<&str> = entry["args"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a.as_str().unwrap())
                .collect();
            assert_eq!(args, ["mcp"]);
            assert_eq!(
                config["mcp_servers"]["docs"]["command"].as_str(),
                Some("docs-mcp")
            );
        },
    );
    // A new file, in the project: `[mcp_servers.checkpoint]` alone, then nothing left.
    round_trip(
        &r,
        "codex",
        None,
        &r.p(".codex/config.toml"),
        None,
        |text| {
            let text = String::from_utf8_lossy(text);
            assert!(text.starts_with("[mcp_servers.checkpoint]\n"), "{text}");
        },
    );
}

#[test]
fn gemini_cursor_copilot_and_cline_write_their_own_shapes() {
    let r = Repo::new();
    let top = std::fs::canonicalize(&r.dir).unwrap();
    let cases: [(&str, Option<&str>, PathBuf, Value); 5] = [
        (
            "gemini",
            None,
            r.p(".gemini/settings.json"),
            json!({"command": program(), "args": ["mcp"]}),
        ),
        (
            "cursor",
            None,
            r.p(".cursor/mcp.json"),
            json!({"type": "stdio", "command": program(),
                   "args": ["-C", "${workspaceFolder}", "mcp"]}),
        ),
        (
            "cursor",
            Some("user"),
            r.home().join(".cursor/mcp.json"),
            json!({"type": "stdio", "command": program(),
                   "args": ["-C", "${workspaceFolder}", "mcp"]}),
        ),
        (
            "copilot",
            None,
            r.p(".github/mcp.json"),
            json!({"type": "local", "command": program(), "args": ["mcp"], "tools": ["*"]}),
        ),
        (
            // Cline has only its global file, and starts servers in `/`.
            "cline",
            None,
            r.home()
                .join(".cline/data/settings/cline_mcp_settings.json"),
            json!({"type": "stdio", "command": program(),
                   "args": ["-C", top.to_str().unwrap(), "mcp"]}),
        ),
    ];
    for (agent, scope, path, expected) in cases {
        round_trip(
            &r,
            agent,
            scope,
            &path,
            Some(USER_JSON.as_bytes()),
            |text| {
                let entry = json_entry(text, &["/theme", "/mcpServers/github"]);
                assert_eq!(entry, expected, "{agent}");
            },
        );
        std::fs::remove_file(&path).unwrap();
        round_trip(&r, agent, scope, &path, None, |text| {
            assert_eq!(json_entry(text, &[]), expected, "{agent}");
        });
    }
}

#[test]
fn a_users_own_entry_is_never_replaced_and_bad_requests_are_refused() {
    let r = Repo::new();
    let own = "{\n  \"mcpServers\": {\n    \"checkpoint\": {\n      \"command\": \"my-own\"\n    }\n  }\n}\n";
    r.write(".mcp.json", own.as_bytes());
    let refused = r.run(&["mcp", "install", "claude"]);
    assert_eq!(refused.code, 1, "{refused}");
    assert!(
        refused
            .stderr
            .contains("already has an MCP server named 'checkpoint'")
            && refused.stderr.lines().count() == 1,
        "{refused}"
    );
    // Uninstall leaves it too: it is not ours.
    let kept = r.ok(&["mcp", "uninstall", "claude"]);
    assert!(kept.stdout.starts_with("No MCP server"), "{kept}");
    assert_eq!(r.read_string(".mcp.json"), own);
    let codex = r.home().join(".codex/config.toml");
    std::fs::create_dir_all(codex.parent().unwrap()).unwrap();
    std::fs::write(&codex, "[mcp_servers.checkpoint]\ncommand = \"mine\"\n").unwrap();
    let refused = r.run(&["mcp", "install", "codex", "--scope", "user"]);
    assert_eq!(refused.code, 1, "{refused}");
    assert!(refused.stderr.contains("already has"), "{refused}");
    // git's post-commit hook is no agent; Cline has no project file.
    let git = r.run(&["mcp", "install", "git"]);
    assert_eq!(git.code, 1, "{git}");
    assert!(git.stderr.contains("no MCP server"), "{git}");
    let cline = r.run(&["mcp", "install", "cline", "--scope", "project"]);
    assert_eq!(cline.code, 1, "{cline}");
    assert!(cline.stderr.contains("--scope user"), "{cline}");
    r.write(".cursor/mcp.json", b"[1, 2]\n");
    let not_object = r.run(&["mcp", "install", "cursor"]);
    assert_eq!(not_object.code, 1, "{not_object}");
    assert!(
        not_object.stderr.contains("not a JSON object"),
        "{not_object}"
    );
    assert_eq!(r.read_string(".cursor/mcp.json"), "[1, 2]\n");
}
