//! A simulated GitHub Copilot CLI session, driven through the real binary with the
//! payloads its hooks send, kept in `tests/fixtures/agents/copilot/` (fields as the
//! hooks references give them:
//! https://docs.github.com/en/copilot/reference/copilot-cli-reference/cli-hooks-reference
//! and https://docs.github.com/en/copilot/reference/hooks-configuration — camelCase
//! `sessionId`, `cwd`, `prompt`, `toolName`, `toolArgs` as a JSON string, `toolResult`,
//! `error`; and the snake_case payload of an event configured in PascalCase). Every
//! prompt must then be listed, named and restorable, and install/uninstall must leave the
//! user's own hooks files as they were.

use crate::common;
use std::collections::BTreeMap;

use common::*;
use serde_json::{json, Value};

const SESSION: &str = "b7d3f9a2-41c6-4e0b-9a5d-3c2e1f0a8b64";

/// A hooks file of the user's own in `.github/hooks/`.
const USER_HOOKS: &str = r#"{
  "version": 1,
  "hooks": {
    "preToolUse": [
      {
        "type": "command",
        "bash": "./scripts/security-check.sh",
        "timeoutSec": 15
      }
    ]
  }
}
"#;

fn fixture(name: &str, vars: &[(&str, &str)]) -> Value {
    agent_fixture("copilot", name, vars)
}

/// The worktree's files, without git's and the hooks files.
fn worktree(repo: &Repo) -> Snap {
    let mut snap = repo.snapshot();
    snap.retain(|path, _| !path.starts_with(b".github/hooks/"));
    snap
}

struct Session<'r> {
    repo: &'r Repo,
    root: String,
    before_prompt: BTreeMap<u64, Snap>,
}

impl Session<'_> {
    /// Sends `payload` as Copilot CLI does; run from the user's home so that only the
    /// payload's `cwd` says where the project is.
    fn hook(&self, payload: &Value) {
        let input = payload.to_string();
        hook_answers(
            &self.repo.sb,
            &self.repo.home(),
            "copilot",
            input.as_bytes(),
            "",
        );
    }

    fn prompt(&mut self, n: u64, text: &str) {
        self.before_prompt.insert(n, worktree(self.repo));
        self.hook(&fixture(
            "user_prompt_submitted",
            &[("ROOT", &self.root), ("PROMPT", text)],
        ));
    }

    fn tool(&self, fixture_name: &str, tool: &str, args: Value) {
        self.hook(&fixture(
            fixture_name,
            &[
                ("ROOT", &self.root),
                ("TOOL", tool),
                ("ARGS", &args.to_string()),
            ],
        ));
    }
}

#[test]
fn a_copilot_session_is_listed_named_and_restorable_and_install_round_trips() {
    let r = Repo::new();
    r.write("src/main.rs", b"fn main() {}\n");
    r.write("notes.txt", b"keep me\n");
    r.write(".github/hooks/security.json", USER_HOOKS.as_bytes());
    r.ok(&["hooks", "install", "copilot"]);
    let ours =
        json!({"type": "command", "bash": "git checkpoint hooks run copilot", "timeoutSec": 30});
    let installed: Value =
        serde_json::from_slice(&r.read(".github/hooks/git-checkpoint.json")).unwrap();
    assert_eq!(
        installed,
        json!({"version": 1, "hooks": {
            "userPromptSubmitted": [ours],
            "PreToolUse": [ours],
            "postToolUse": [ours],
            "postToolUseFailure": [ours],
        }})
    );
    r.ok(&["hooks", "install", "copilot"]);
    assert_eq!(
        serde_json::from_slice::<Value>(&r.read(".github/hooks/git-checkpoint.json")).unwrap(),
        installed,
        "installing twice changes nothing"
    );

    let mut s = Session {
        repo: &r,
        root: r.dir.to_str().unwrap().to_string(),
        before_prompt: BTreeMap::new(),
    };
    let root = s.root.clone();
    // Prompt 1: `create` writes a file, then a failing `bash` deletes one.
    s.prompt(1, "Add a greeting\nwith a test");
    r.write("src/greet.rs", b"pub fn hi() {}\n");
    s.tool(
        "post_tool_use",
        "create",
        json!({"path": format!("{root}/src/greet.rs"), "file_text": "pub fn hi() {}\n"}),
    );
    r.remove("notes.txt");
    s.tool(
        "post_tool_use_failure",
        "bash",
        json!({"command": "rm notes.txt && make", "description": "Clean and build"}),
    );
    // Prompt 2 changes nothing.
    s.prompt(2, "Why did make fail?");
    // Prompt 3: an edit, reported in the snake_case format.
    s.prompt(3, "Say hello instead");
    r.write("src/greet.rs", b"pub fn hello() {}\n");
    s.hook(&fixture(
        "post_tool_use_snake_case",
        &[("ROOT", &root), ("FILE", "src/greet.rs")],
    ));
    let last = worktree(&r);

    let short = only_session(&r, "copilot", SESSION, 3, "Add a greeting");

    // What the checkpoints record.
    let log = r.log_json(true);
    let with = |key: &str, value: &str| -> Vec<Value> {
        log.iter()
            .filter(|c| c["meta"][key] == value)
            .cloned()
            .collect()
    };
    let created = with("tool", "create");
    assert_eq!(created.len(), 1, "{log:#?}");
    for (key, value) in [
        ("agent", "copilot"),
        ("session", SESSION),
        ("prompt", "1"),
        ("kind", "tool"),
        ("event", "postToolUse"),
        ("path", "src/greet.rs"),
    ] {
        assert_eq!(created[0]["meta"][key], value, "{key}: {:#}", created[0]);
    }
    let failed = with("tool", "bash");
    assert_eq!(failed.len(), 1, "{log:#?}");
    assert_eq!(failed[0]["meta"]["failed"], "true", "{:#}", failed[0]);
    assert_eq!(failed[0]["meta"]["event"], "postToolUseFailure");
    assert_eq!(
        failed[0]["message"], "after bash (failed): rm notes.txt && make",
        "{:#}",
        failed[0]
    );
    let edited = with("event", "PostToolUse");
    assert_eq!(edited.len(), 1, "{log:#?}");
    assert_eq!(
        (
            &edited[0]["meta"]["tool"],
            &edited[0]["meta"]["path"],
            &edited[0]["meta"]["prompt"]
        ),
        (&json!("edit"), &json!("src/greet.rs"), &json!("3"))
    );
    assert_eq!(with("kind", "prompt").len(), 3, "{log:#?}");

    // "Before prompt N", for every N, is exactly the tree the user had.
    for (n, expected) in &s.before_prompt {
        r.ok(&["restore", &format!("{short}:prompt{n}")]);
        assert_snap_eq(expected, &worktree(&r), &format!("before prompt {n}"));
    }
    // Just before the failed command: its deletion undone.
    r.ok(&[
        "restore",
        &format!("{}~", failed[0]["id"].as_str().unwrap()),
    ]);
    assert_eq!(r.read("notes.txt"), b"keep me\n");
    r.ok(&["restore", edited[0]["id"].as_str().unwrap()]);
    assert_snap_eq(&last, &worktree(&r), "after the last edit");
    assert!(!r.git_dir().join("checkpoint/hooks.log").exists());

    // Uninstalling removes our file and leaves the user's as it was.
    r.ok(&["hooks", "uninstall", "copilot"]);
    assert!(!r.exists(".github/hooks/git-checkpoint.json"));
    assert_eq!(r.read(".github/hooks/security.json"), USER_HOOKS.as_bytes());
}

/// An older Copilot CLI reports a failed tool through `postToolUse` with
/// `resultType: "failure"`, and sends no session id: still a failed tool step.
#[test]
fn a_failure_reported_by_post_tool_use_is_recorded_as_failed() {
    let r = Repo::new();
    r.write("a.txt", b"a\n");
    let mut payload = fixture(
        "post_tool_use",
        &[
            ("ROOT", r.dir.to_str().unwrap()),
            ("TOOL", "bash"),
            ("ARGS", &json!({"command": "make"}).to_string()),
        ],
    );
    payload["toolResult"]["resultType"] = json!("failure");
    payload.as_object_mut().unwrap().remove("sessionId");
    let out = run_agent_hook(&r.sb, &r.home(), "copilot", payload.to_string().as_bytes());
    assert_eq!((out.code, out.stdout.as_str()), (0, ""), "{out}");
    let log = r.log_json(true);
    assert_eq!(log.len(), 1, "{log:#?}");
    assert_eq!(log[0]["meta"]["failed"], "true", "{:#}", log[0]);
    assert_eq!(log[0]["meta"]["agent"], "copilot");
    assert!(log[0]["meta"].get("session").is_none());
}

/// `--global` writes the user-level hooks directory (`$COPILOT_HOME/hooks` when that is
/// set), and a hooks directory linked out of the worktree is refused.
#[test]
fn copilot_global_install_and_links_out() {
    let r = Repo::new();
    r.write("a.txt", b"a\n");
    r.ok(&["hooks", "install", "copilot", "--global"]);
    let global = r.home().join(".copilot/hooks/git-checkpoint.json");
    assert!(global.exists());
    r.ok(&["hooks", "uninstall", "copilot", "--global"]);
    assert!(!global.exists());

    let copilot_home = r.scratch("copilot-home");
    let env = [("COPILOT_HOME", copilot_home.to_str().unwrap())];
    let out = r.run_env(&["hooks", "install", "copilot", "--global"], &env);
    assert_eq!(out.code, 0, "{out}");
    assert!(copilot_home.join("hooks/git-checkpoint.json").exists());

    let elsewhere = r.scratch("elsewhere");
    std::fs::create_dir_all(r.p(".github")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, r.p(".github/hooks")).unwrap();
    let out = r.run(&["hooks", "install", "copilot"]);
    assert_eq!(out.code, 1, "{out}");
    assert!(out.stderr.contains("outside"), "{out}");
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
}
