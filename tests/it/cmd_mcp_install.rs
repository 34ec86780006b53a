//! `git checkpoint mcp install <agent>` and `mcp uninstall <agent>`: the server is
//! registered in each agent's own file, in its documented shape, beside the user's own
//! settings; uninstall gives back the file byte for byte. HOME is the sandbox's.

use crate::common;
use std::path::{Path, PathBuf};

use common::*;
use serde_json::{json, Value};

/// The program a project's file names: the command on PATH, so that the file can be
/// committed and work for everyone, as the hooks' `git checkpoint` does.
const ON_PATH: &str = "git-checkpoint";

/// The program a user's file names: the absolute path of the binary that ran.
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
                json!({"type": "stdio", "command": ON_PATH, "args": ["mcp"]})
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
            assert_eq!(entry["command"], program());
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
            assert!(text.contains("command = \"git-checkpoint\"\n"), "{text}");
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
            json!({"command": ON_PATH, "args": ["mcp"]}),
        ),
        (
            "cursor",
            None,
            r.p(".cursor/mcp.json"),
            json!({"type": "stdio", "command": ON_PATH,
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
            json!({"type": "local", "command": ON_PATH, "args": ["mcp"], "tools": ["*"]}),
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

/// A refusal: exit 1 with one line on stderr saying `why`, nothing on stdout.
#[track_caller]
fn refused(r: &Repo, args: &[&str], why: &str) {
    let out = r.run(args);
    assert_eq!(out.code, 1, "{args:?}: {out}");
    assert!(
        out.stderr.starts_with("error: ")
            && out.stderr.contains(why)
            && out.stderr.lines().count() == 1,
        "{args:?}: {out}"
    );
}

/// What `installed` adds to `original`, which must be all of it, byte for byte and in
/// order (a subsequence): an install only inserts.
#[track_caller]
fn inserted(original: &str, installed: &str) -> String {
    let mut rest = original.chars().peekable();
    let mut added = String::new();
    for c in installed.chars() {
        match rest.peek() {
            Some(&next) if next == c => {
                rest.next();
            }
            _ => added.push(c),
        }
    }
    assert!(
        rest.peek().is_none(),
        "the original is not kept byte for byte:\n{installed}"
    );
    added
}

#[test]
fn install_only_inserts_into_a_json_file() {
    let r = Repo::new();
    let shapes = [
        // Another server with numbers serde would rewrite, laid out on one line.
        "{\n  \"mcpServers\": {\n    \"big\": {\"command\": \"x\", \"timeout\": 18446744073709551616, \"retry\": 1e3}\n  },\n  \"editor\": { \"tabs\": [2, 4],   \"wrap\": true }\n}\n",
        // One line, no spaces.
        "{\"mcpServers\":{\"a\":{\"command\":\"x\",\"n\":1E-7}},\"k\":-0.0}",
        // Comments (JSONC, which Gemini CLI and Cursor read) and tabs.
        "{\n\t// my servers\n\t\"mcpServers\": {\n\t\t\"docs\": {\"command\": \"d\"} // the docs one\n\t}\n}\n",
        // No servers yet.
        "{\n    \"theme\": \"dark\"\n}",
    ];
    for (n, original) in shapes.iter().enumerate() {
        for (agent, file) in [("claude", ".mcp.json"), ("gemini", ".gemini/settings.json")] {
            // Claude Code reads strict JSON; the comments only go to Gemini CLI.
            if agent == "claude" && original.contains("//") {
                continue;
            }
            let path = r.p(file);
            round_trip(&r, agent, None, &path, Some(original.as_bytes()), |text| {
                let installed = String::from_utf8(text.to_vec()).unwrap();
                let added = inserted(original, &installed);
                assert!(added.contains("\"checkpoint\""), "shape {n}: {added}");
                for theirs in ["big", "docs", "1e3", "1E-7", "-0.0", "//", "theme"] {
                    assert!(
                        !added.contains(theirs),
                        "shape {n} rewrote {theirs}: {added}"
                    );
                }
            });
            std::fs::remove_file(&path).unwrap();
        }
    }
}

#[test]
fn a_file_with_duplicate_keys_is_refused_and_left_alone() {
    let r = Repo::new();
    for text in [
        "{\"mcpServers\": {\"a\": {\"command\": \"x\"}, \"a\": {\"command\": \"y\"}}}\n",
        "{\"theme\": \"dark\", \"theme\": \"light\"}\n",
    ] {
        r.write(".mcp.json", text.as_bytes());
        refused(&r, &["mcp", "install", "claude"], "twice");
        assert_eq!(r.read_string(".mcp.json"), text);
    }
}

#[test]
fn a_read_only_file_or_a_symlink_is_refused_and_left_alone() {
    use std::os::unix::fs::PermissionsExt;
    let r = Repo::new();
    let codex = r.p(".codex/config.toml");
    for (agent, path, text) in [
        ("claude", r.p(".mcp.json"), "{\"theme\": \"dark\"}\n"),
        ("codex", codex.clone(), "model = \"o4\"\n"),
    ] {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o444)).unwrap();
        refused(&r, &["mcp", "install", agent], "read-only");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o444);
        std::fs::remove_file(&path).unwrap();

        // A symlink, dangling or not, stays a symlink and its target is not touched.
        let target = path.with_extension("real");
        std::os::unix::fs::symlink(&target, &path).unwrap();
        refused(&r, &["mcp", "install", agent], "symlink");
        assert!(
            !target.exists(),
            "{agent}: the dangling symlink's target was made"
        );
        std::fs::write(&target, text).unwrap();
        refused(&r, &["mcp", "install", agent], "symlink");
        refused(&r, &["mcp", "uninstall", agent], "symlink");
        assert_eq!(std::fs::read_to_string(&target).unwrap(), text);
        assert!(std::fs::symlink_metadata(&path).unwrap().is_symlink());
        std::fs::remove_file(&path).unwrap();
        std::fs::remove_file(&target).unwrap();
    }
}

#[test]
fn codex_uninstall_keeps_a_comment_written_above_the_entry() {
    let r = Repo::new();
    let path = r.home().join(".codex/config.toml");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, "model = \"o4\"\n\n[profiles.fast]\nx = 1\n").unwrap();
    mcp(&r, "install", "codex", Some("user"));
    let installed = std::fs::read_to_string(&path).unwrap();
    let commented = installed.replace(
        "[mcp_servers.checkpoint]",
        "# the checkpoint server, see docs/mcp.md\n[mcp_servers.checkpoint]",
    );
    assert_ne!(commented, installed);
    std::fs::write(&path, &commented).unwrap();
    let said = mcp(&r, "uninstall", "codex", Some("user"));
    assert!(said.starts_with("Removed"), "{said}");
    let left = std::fs::read_to_string(&path).unwrap();
    assert!(
        left.contains("# the checkpoint server, see docs/mcp.md\n"),
        "the user's comment was lost:\n{left}"
    );
    assert!(!left.contains("mcp_servers"), "{left}");
    assert!(
        left.starts_with("model = \"o4\"\n\n[profiles.fast]\nx = 1\n"),
        "{left}"
    );
}

#[test]
fn the_project_file_names_the_command_on_path_and_the_users_file_the_binary() {
    let r = Repo::new();
    r.ok(&["mcp", "install", "claude"]);
    let project = json_entry(&r.read(".mcp.json"), &[]);
    assert_eq!(project["command"], ON_PATH);
    r.ok(&["mcp", "install", "claude", "--scope", "user"]);
    let user = json_entry(&std::fs::read(r.home().join(".claude.json")).unwrap(), &[]);
    assert_eq!(user["command"], program());
    assert!(Path::new(user["command"].as_str().unwrap()).is_absolute());
    // What an earlier version wrote into the project's file (the absolute path) is
    // replaced by an install, and removed by an uninstall, as its own.
    let older = format!(
        "{{\n  \"mcpServers\": {{\n    \"checkpoint\": {{\"type\": \"stdio\", \"command\": {:?}, \"args\": [\"mcp\"]}}\n  }}\n}}\n",
        program()
    );
    r.write(".mcp.json", older.as_bytes());
    let said = mcp(&r, "install", "claude", None);
    assert!(said.starts_with("Registered"), "{said}");
    assert_eq!(json_entry(&r.read(".mcp.json"), &[])["command"], ON_PATH);
    r.write(".mcp.json", older.as_bytes());
    let said = mcp(&r, "uninstall", "claude", None);
    assert!(said.starts_with("Removed"), "{said}");
    assert_eq!(json_entry(&r.read(".mcp.json"), &[]), Value::Null);
}
