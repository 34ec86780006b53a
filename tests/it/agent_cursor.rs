//! A simulated Cursor session, driven through the real binary with the payloads Cursor's
//! hooks send, kept in `tests/fixtures/agents/cursor/` (fields as Cursor's hooks
//! documentation gives them: https://cursor.com/docs/agent/hooks — common fields
//! `conversation_id`, `generation_id`, `hook_event_name`, `workspace_roots`; `prompt` for
//! beforeSubmitPrompt, an absolute `file_path` for afterFileEdit, `command` for
//! afterShellExecution). Every prompt must then be listed, named and restorable, and
//! install/uninstall must give back the user's `.cursor/hooks.json` byte for byte.

use crate::common;
use std::collections::BTreeMap;

use common::*;
use serde_json::{json, Value};

const CONVERSATION: &str = "668320d2-2fd8-4888-b33c-2a466fec86e7";

/// A hooks file of the user's own, pretty-printed with four spaces (a layout the
/// settings rewrite keeps; objects written on one line inside an indented file are not).
const USER_HOOKS: &str = r#"{
    "version": 1,
    "hooks": {
        "afterFileEdit": [
            {
                "command": "./hooks/format.sh"
            }
        ],
        "stop": [
            {
                "command": "./hooks/audit.sh"
            }
        ]
    }
}
"#;

fn fixture(name: &str, vars: &[(&str, &str)]) -> Value {
    agent_fixture("cursor", name, vars)
}

/// The worktree's files, without git's and the agent's own settings.
fn worktree(repo: &Repo) -> Snap {
    let mut snap = repo.snapshot();
    snap.retain(|path, _| !path.starts_with(b".cursor/"));
    snap
}

struct Session<'r> {
    repo: &'r Repo,
    root: String,
    /// A second workspace root that is no repository at all.
    other_root: String,
    before_prompt: BTreeMap<u64, Snap>,
}

impl Session<'_> {
    /// Sends `payload` as Cursor does, from the user's home (as a hook in
    /// `~/.cursor/hooks.json` runs): only the payload says where the project is.
    /// Returns what the hook printed.
    fn hook(&self, payload: &Value) -> String {
        let out = run_agent_hook(
            &self.repo.sb,
            &self.repo.home(),
            "cursor",
            payload.to_string().as_bytes(),
        );
        assert_eq!((out.code, out.stderr.as_str()), (0, ""), "{out}");
        out.stdout
    }

    fn prompt(&mut self, n: u64, text: &str) {
        self.before_prompt.insert(n, worktree(self.repo));
        let generation = format!("gen-{n}");
        let payload = fixture(
            "before_submit_prompt",
            &[
                ("ROOT", &self.root),
                ("GENERATION", &generation),
                ("PROMPT", text),
            ],
        );
        // Cursor sends the prompt only when the hook says to continue.
        assert_eq!(self.hook(&payload), "{\"continue\":true}\n");
    }

    fn edited(&self, n: u64, file: &str) {
        let generation = format!("gen-{n}");
        let payload = fixture(
            "after_file_edit",
            &[
                ("ROOT", &self.root),
                ("OTHER_ROOT", &self.other_root),
                ("GENERATION", &generation),
                ("FILE", file),
            ],
        );
        assert_eq!(self.hook(&payload), "", "nothing printed after an edit");
    }

    fn shell(&self, n: u64, command: &str) {
        let generation = format!("gen-{n}");
        let payload = fixture(
            "after_shell_execution",
            &[
                ("ROOT", &self.root),
                ("GENERATION", &generation),
                ("COMMAND", command),
            ],
        );
        assert_eq!(self.hook(&payload), "");
    }
}

#[test]
fn a_cursor_session_is_listed_named_and_restorable_and_install_round_trips() {
    let r = Repo::new();
    r.write("src/main.rs", b"fn main() {}\n");
    r.write("notes.txt", b"keep me\n");
    r.write(".cursor/hooks.json", USER_HOOKS.as_bytes());
    r.ok(&["hooks", "install", "cursor"]);
    let installed: Value = serde_json::from_slice(&r.read(".cursor/hooks.json")).unwrap();
    let ours = json!({"command": "git checkpoint hooks run cursor"});
    assert_eq!(
        installed["hooks"]["afterFileEdit"],
        json!([{"command": "./hooks/format.sh"}, ours]),
        "{installed:#}"
    );
    for event in ["beforeSubmitPrompt", "afterShellExecution"] {
        assert_eq!(installed["hooks"][event], json!([ours]), "{installed:#}");
    }
    assert_eq!(
        installed["hooks"]["stop"],
        json!([{"command": "./hooks/audit.sh"}])
    );
    assert_eq!(installed["version"], 1);
    // Installing again changes nothing.
    r.ok(&["hooks", "install", "cursor"]);
    assert_eq!(
        serde_json::from_slice::<Value>(&r.read(".cursor/hooks.json")).unwrap(),
        installed
    );

    let other = r.scratch("docs-root");
    let mut s = Session {
        repo: &r,
        root: r.dir.to_str().unwrap().to_string(),
        other_root: other.to_str().unwrap().to_string(),
        before_prompt: BTreeMap::new(),
    };
    // Prompt 1: an edit (in a workspace of two roots), then a shell command deletes.
    s.prompt(1, "Add a greeting\nwith a test");
    r.write("src/greet.rs", b"pub fn hi() {}\n");
    s.edited(1, "src/greet.rs");
    r.remove("notes.txt");
    s.shell(1, "rm notes.txt");
    // Prompt 2 changes nothing.
    s.prompt(2, "Explain the change");
    // Prompt 3 edits again.
    s.prompt(3, "Say hello instead");
    r.write("src/greet.rs", b"pub fn hello() {}\n");
    s.edited(3, "src/greet.rs");
    let last = worktree(&r);

    let short = only_session(&r, "cursor", CONVERSATION, 3, "Add a greeting");

    // What the checkpoints record.
    let log = r.log_json(true);
    let edits: Vec<&Value> = log
        .iter()
        .filter(|c| c["meta"]["event"] == "afterFileEdit")
        .collect();
    assert_eq!(edits.len(), 2, "{log:#?}");
    let first_edit = edits.iter().find(|c| c["meta"]["prompt"] == "1").unwrap();
    for (key, value) in [
        ("agent", "cursor"),
        ("session", CONVERSATION),
        ("kind", "tool"),
        ("tool", "edit"),
        ("path", "src/greet.rs"),
        ("prompt_id", "gen-1"),
    ] {
        assert_eq!(first_edit["meta"][key], value, "{key}: {first_edit:#}");
    }
    let shell: Vec<&Value> = log
        .iter()
        .filter(|c| c["meta"]["event"] == "afterShellExecution")
        .collect();
    assert_eq!(shell.len(), 1, "{log:#?}");
    assert_eq!(shell[0]["meta"]["tool"], "shell");
    assert_eq!(
        shell[0]["message"], "after shell: rm notes.txt",
        "{:#}",
        shell[0]
    );
    assert!(shell[0]["meta"].get("failed").is_none());

    // "Before prompt N", for every N, is exactly the tree the user had.
    for (n, expected) in &s.before_prompt {
        r.ok(&["restore", &format!("{short}:prompt{n}")]);
        assert_snap_eq(expected, &worktree(&r), &format!("before prompt {n}"));
    }
    // And after the last edit, by its checkpoint.
    let last_edit = edits.iter().find(|c| c["meta"]["prompt"] == "3").unwrap();
    r.ok(&["restore", last_edit["id"].as_str().unwrap()]);
    assert_snap_eq(&last, &worktree(&r), "after the last edit");

    // Nothing went to the other workspace root or the hooks log.
    assert_eq!(std::fs::read_dir(&other).unwrap().count(), 0);
    assert!(!r.git_dir().join("checkpoint/hooks.log").exists());

    // Uninstalling gives back the user's file byte for byte.
    r.ok(&["hooks", "uninstall", "cursor"]);
    assert_eq!(r.read(".cursor/hooks.json"), USER_HOOKS.as_bytes());
}

/// A hooks file install created goes again on uninstall; the global file is the user's
/// `~/.cursor/hooks.json`; a hooks file linked out of the worktree is refused.
#[test]
fn cursor_install_creates_and_removes_its_file_and_refuses_links_out() {
    let r = Repo::new();
    r.write("a.txt", b"a\n");
    r.ok(&["hooks", "install", "cursor"]);
    assert!(r.exists(".cursor/hooks.json"));
    r.ok(&["hooks", "uninstall", "cursor"]);
    assert!(!r.exists(".cursor/hooks.json") && !r.exists(".cursor"));

    r.ok(&["hooks", "install", "cursor", "--global"]);
    let global = r.home().join(".cursor/hooks.json");
    let written: Value = serde_json::from_slice(&std::fs::read(&global).unwrap()).unwrap();
    assert_eq!(
        written,
        json!({"version": 1, "hooks": {
            "beforeSubmitPrompt": [{"command": "git checkpoint hooks run cursor"}],
            "afterFileEdit": [{"command": "git checkpoint hooks run cursor"}],
            "beforeShellExecution": [{"command": "git checkpoint hooks run cursor"}],
            "afterShellExecution": [{"command": "git checkpoint hooks run cursor"}],
            "beforeMCPExecution": [{"command": "git checkpoint hooks run cursor"}],
            "afterMCPExecution": [{"command": "git checkpoint hooks run cursor"}],
        }})
    );
    r.ok(&["hooks", "uninstall", "cursor", "--global"]);
    assert!(!global.exists());

    let outside = r.sb.root.join("elsewhere.json");
    std::fs::write(&outside, "{}").unwrap();
    std::fs::create_dir_all(r.p(".cursor")).unwrap();
    std::os::unix::fs::symlink(&outside, r.p(".cursor/hooks.json")).unwrap();
    let out = r.run(&["hooks", "install", "cursor"]);
    assert_eq!(out.code, 1, "{out}");
    assert!(out.stderr.contains("outside"), "{out}");
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "{}");
}
