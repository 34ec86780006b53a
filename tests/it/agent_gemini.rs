//! Gemini CLI through the real binary: `hooks install|uninstall gemini` on
//! `.gemini/settings.json` and a simulated session fed with the payloads Gemini CLI writes
//! to a hook's stdin.
//!
//! The payloads in `tests/fixtures/agents/gemini/` follow Gemini CLI's hooks reference
//! (https://geminicli.com/docs/hooks/reference, `docs/hooks/reference.md` in
//! google-gemini/gemini-cli): the base fields `session_id`, `transcript_path`, `cwd`,
//! `hook_event_name`, `timestamp`; `prompt` for `BeforeAgent`; `tool_name`, `tool_input`
//! and `tool_response` (`llmContent`, `returnDisplay`, optional `error`) for `AfterTool`.
//! Tool names and their `file_path`/`command` arguments are those of gemini-cli's
//! `packages/core/src/tools/definitions/base-declarations.ts`. A hook's stdout must be
//! JSON and nothing else.

use crate::common;
use std::collections::BTreeMap;

use common::*;
use serde_json::{json, Value};

const SESSION: &str = "8d0c3f52-4a1e-4b7f-9c2d-6e5a1b0f3c97";
/// A fixture with its project directory (`$ROOT`) the test's worktree.
fn fixture(repo: &Repo, name: &str) -> Value {
    let mut payload = agent_fixture("gemini", name, &[("ROOT", repo.dir.to_str().unwrap())]);
    payload["transcript_path"] = json!(repo.sb.root.join("session.json"));
    payload
}

/// Runs the hook as Gemini CLI does: the payload on stdin; the hook must print exactly
/// the JSON Gemini parses, and exit 0.
fn hook(repo: &Repo, payload: &[u8]) {
    hook_answers(&repo.sb, &repo.dir, "gemini", payload, "{}\n");
}

/// The worktree's files, without git's and Gemini's own settings.
fn worktree(repo: &Repo) -> Snap {
    let mut snap = repo.snapshot();
    snap.retain(|path, _| !path.starts_with(b".gemini/"));
    snap
}

#[test]
fn a_gemini_session_names_every_prompt_and_restores_before_each() {
    let r = Repo::new();
    r.write("src/main.rs", b"fn main() {}\n");
    r.write("notes.txt", b"keep me\n");
    r.ok(&["hooks", "install", "gemini"]);
    let mut before_prompt = BTreeMap::new();
    let mut prompt = |n: u64, text: &str| {
        before_prompt.insert(n, worktree(&r));
        let mut payload = fixture(&r, "before_agent");
        payload["prompt"] = json!(text);
        hook(&r, payload.to_string().as_bytes());
    };

    // Prompt 1: write_file creates a file, a shell command edits one, and a replace
    // fails (Gemini reports it with `error`).
    prompt(1, "Add a greeting\nwith a test");
    r.write("src/greet.rs", b"pub fn hi() {}\n");
    hook(
        &r,
        fixture(&r, "after_tool_write_file").to_string().as_bytes(),
    );
    r.write("notes.txt", b"kept me\n");
    hook(
        &r,
        fixture(&r, "after_tool_run_shell_command")
            .to_string()
            .as_bytes(),
    );
    hook(
        &r,
        fixture(&r, "after_tool_replace_failed")
            .to_string()
            .as_bytes(),
    );
    // Prompt 2 changes nothing.
    prompt(2, "Why did the edit fail?");
    // Prompt 3: replace edits a file.
    prompt(3, "Call the greeting from main");
    r.write("src/main.rs", b"fn main() { hi() }\n");
    hook(&r, fixture(&r, "after_tool_replace").to_string().as_bytes());
    // A payload that cannot be read still gets a JSON answer, which tells the user (once
    // per session) that no checkpoint was made, and the agent goes on.
    let out = run_agent_hook(&r.sb, &r.dir, "gemini", b"not json");
    assert_eq!((out.code, out.stderr.as_str()), (0, ""), "{out}");
    let reply: Value = serde_json::from_str(&out.stdout).expect("the reply is JSON");
    let told = reply["systemMessage"].as_str().unwrap_or_default();
    assert!(told.contains("not valid JSON"), "{out}");
    hook(&r, b"not json");

    let short = only_session(&r, "gemini", SESSION, 3, "Add a greeting");

    let log = r.log_json(true);
    let written = checkpoint_with(&log, &[("tool", "write_file")]);
    let meta = &written["meta"];
    assert_eq!(
        (
            &meta["agent"],
            &meta["session"],
            &meta["prompt"],
            &meta["kind"]
        ),
        (
            &json!("gemini"),
            &json!(SESSION),
            &json!("1"),
            &json!("tool")
        )
    );
    assert_eq!(
        (&meta["event"], &meta["path"]),
        (&json!("AfterTool"), &json!("src/greet.rs"))
    );
    assert!(meta.get("failed").is_none(), "{written:#}");
    assert_eq!(written["message"], "after write_file: src/greet.rs");
    let shell = checkpoint_with(&log, &[("tool", "run_shell_command")]);
    assert_eq!(
        shell["message"], "after run_shell_command: sed -i 's/keep/kept/' notes.txt",
        "{shell:#}"
    );
    let failed = checkpoint_with(&log, &[("tool", "replace"), ("failed", "true")]);
    assert_eq!(
        (&failed["meta"]["path"], &failed["meta"]["prompt"]),
        (&json!("src/main.rs"), &json!("1"))
    );
    assert_eq!(failed["message"], "after replace (failed): src/main.rs");
    let replaced = checkpoint_with(&log, &[("tool", "replace"), ("prompt", "3")]);
    assert!(replaced["meta"].get("failed").is_none(), "{replaced:#}");
    let prompts: Vec<&Value> = log
        .iter()
        .filter(|c| c["meta"]["kind"] == "prompt")
        .collect();
    assert_eq!(prompts.len(), 3, "{log:#?}");
    assert!(prompts.iter().all(|c| c["meta"]["event"] == "BeforeAgent"));
    let logged = std::fs::read_to_string(r.git_dir().join("checkpoint/hooks.log")).unwrap();
    assert!(logged.contains("not valid JSON"), "{logged}");

    for (n, expected) in &before_prompt {
        r.ok(&["restore", &format!("{short}:prompt{n}")]);
        assert_snap_eq(expected, &worktree(&r), &format!("before prompt {n}"));
    }
    assert!(std::fs::read_to_string(r.p(".gemini/settings.json"))
        .unwrap()
        .contains("git checkpoint hooks run gemini"));
}

/// Project settings as Gemini CLI users keep them, with a hook of their own.
const EXISTING: &str = r#"{
  "model": {
    "name": "gemini-2.5-pro"
  },
  "hooks": {
    "AfterTool": [
      {
        "matcher": "write_file",
        "hooks": [
          {
            "name": "format",
            "type": "command",
            "command": "./scripts/format.sh",
            "timeout": 10000
          }
        ]
      }
    ]
  }
}
"#;

#[test]
fn install_merges_into_gemini_settings_and_uninstall_restores_the_bytes() {
    let r = Repo::new();
    r.write(".gemini/settings.json", EXISTING.as_bytes());
    r.write("a.txt", b"a\n");
    r.ok(&["save", "-m", "before the install"]);
    let first = r.log_json(true)[0]["id"].as_str().unwrap().to_string();
    let out = r.ok(&["hooks", "install", "gemini"]);
    assert!(out.stdout.contains(".gemini/settings.json"), "{out}");
    let merged: Value = serde_json::from_slice(&r.read(".gemini/settings.json")).unwrap();
    let ours = json!({"name": "git-checkpoint", "type": "command",
                      "command": "git checkpoint hooks run gemini", "timeout": 30000});
    let original: Value = serde_json::from_str(EXISTING).unwrap();
    assert_eq!(
        merged["hooks"]["AfterTool"],
        json!([
            original["hooks"]["AfterTool"][0],
            {"matcher": "^(write_file|replace|run_shell_command|mcp_checkpoint_.+)$", "hooks": [ours]}
        ])
    );
    assert_eq!(merged["hooks"]["BeforeAgent"], json!([{"hooks": [ours]}]));
    assert_eq!(merged["model"], original["model"]);
    let text = std::fs::read_to_string(r.p(".gemini/settings.json")).unwrap();
    let out = r.ok(&["hooks", "install", "gemini"]);
    assert!(out.stdout.contains("already"), "{out}");
    assert_eq!(
        std::fs::read_to_string(r.p(".gemini/settings.json")).unwrap(),
        text
    );

    // Restoring a checkpoint from before the install keeps the hooks (the settings file
    // is the agent's, not the worktree's).
    r.ok(&["restore", &first]);
    assert_eq!(
        std::fs::read_to_string(r.p(".gemini/settings.json")).unwrap(),
        text
    );

    let out = r.ok(&["hooks", "uninstall", "gemini"]);
    assert!(out.stdout.contains("Removed"), "{out}");
    assert_eq!(
        std::fs::read_to_string(r.p(".gemini/settings.json")).unwrap(),
        EXISTING,
        "uninstall must restore the file byte for byte"
    );

    // --global: the user's ~/.gemini/settings.json, keeping what is in it.
    let global = r.home().join(".gemini/settings.json");
    std::fs::create_dir_all(global.parent().unwrap()).unwrap();
    std::fs::write(&global, EXISTING).unwrap();
    r.ok(&["hooks", "install", "gemini", "--global"]);
    let installed: Value = serde_json::from_slice(&std::fs::read(&global).unwrap()).unwrap();
    assert_eq!(installed["hooks"]["BeforeAgent"][0]["hooks"][0], ours);
    r.ok(&["hooks", "uninstall", "gemini", "--global"]);
    assert_eq!(std::fs::read_to_string(&global).unwrap(), EXISTING);
}

#[test]
fn a_gemini_settings_directory_linked_out_of_the_worktree_is_refused() {
    let r = Repo::new();
    let outside = r.sb.root.join("gemini-dir");
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, r.p(".gemini")).unwrap();
    let out = r.run(&["hooks", "install", "gemini"]);
    assert_eq!(out.code, 1, "{out}");
    assert!(out.stderr.contains("outside"), "{out}");
    assert!(!outside.join("settings.json").exists());
}
