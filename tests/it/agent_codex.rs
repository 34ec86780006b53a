//! Codex CLI through the real binary: `hooks install|uninstall codex` on `.codex/hooks.json`
//! and a simulated session fed with the payloads Codex writes to a hook's stdin.
//!
//! The payloads in `tests/fixtures/agents/codex/` follow Codex's hooks documentation
//! (https://developers.openai.com/codex/hooks) and its generated wire schemas
//! (https://github.com/openai/codex/tree/main/codex-rs/hooks/schema/generated:
//! `user-prompt-submit.command.input.schema.json`, `post-tool-use.command.input.schema.json`).
//! File edits arrive as `apply_patch` with the patch in `tool_input.command`; shell
//! commands as `Bash`, also when they exit non-zero (the payload then carries only the
//! output, so Codex reports no failure).

use crate::common;
use std::collections::BTreeMap;

use common::*;
use serde_json::{json, Value};

const SESSION: &str = "019a6f3e-8c2d-7b40-9e51-3c7d2a1f0b64";

/// A fixture with its project directory (`$ROOT`) the test's worktree.
fn fixture(repo: &Repo, name: &str) -> Value {
    let mut payload = agent_fixture("codex", name, &[("ROOT", repo.dir.to_str().unwrap())]);
    payload["transcript_path"] = json!(repo.sb.root.join("rollout.jsonl"));
    payload
}

/// Runs the hook as Codex does: in the session's cwd, the payload on stdin. A Codex hook
/// must print nothing (UserPromptSubmit's stdout would reach the model) and exit 0.
fn hook(repo: &Repo, payload: &Value) {
    let input = payload.to_string();
    hook_answers(&repo.sb, &repo.dir, "codex", input.as_bytes(), "");
}

/// The worktree's files, without git's and Codex's own hooks file.
fn worktree(repo: &Repo) -> Snap {
    let mut snap = repo.snapshot();
    snap.retain(|path, _| !path.starts_with(b".codex/"));
    snap
}

#[test]
fn a_codex_session_names_every_prompt_and_restores_before_each() {
    let r = Repo::new();
    r.write("src/main.rs", b"fn main() {}\n");
    r.write("notes.txt", b"keep me\n");
    r.ok(&["hooks", "install", "codex"]);
    let mut before_prompt = BTreeMap::new();
    let mut prompt = |n: u64, text: &str| {
        before_prompt.insert(n, worktree(&r));
        let mut payload = fixture(&r, "user_prompt_submit");
        payload["prompt"] = json!(text);
        payload["turn_id"] = json!(format!("turn-{n}"));
        hook(&r, &payload);
    };

    // Prompt 1: apply_patch adds a file, a shell command edits one, and a command that
    // exits non-zero deletes one first.
    prompt(1, "Add a greeting\nwith a test");
    r.write("src/greet.rs", b"pub fn hi() {}\n");
    hook(&r, &fixture(&r, "post_tool_use_apply_patch"));
    r.write("notes.txt", b"kept me\n");
    hook(&r, &fixture(&r, "post_tool_use_bash"));
    r.remove("notes.txt");
    hook(&r, &fixture(&r, "post_tool_use_bash_nonzero"));
    // Prompt 2 changes nothing.
    prompt(2, "Why did make fail?");
    // Prompt 3 edits a file through a patch.
    prompt(3, "Call the greeting from main");
    r.write("src/main.rs", b"fn main() { hi() }\n");
    let mut patch = fixture(&r, "post_tool_use_apply_patch");
    patch["turn_id"] = json!("turn-3");
    patch["tool_use_id"] = json!("call_patch3");
    patch["tool_input"]["command"] = json!(
        "*** Begin Patch\n*** Update File: src/main.rs\n@@\n-fn main() {}\n+fn main() { hi() }\n*** End Patch\n"
    );
    hook(&r, &patch);

    // `sessions` lists it with every prompt.
    let short = only_session(&r, "codex", SESSION, 3, "Add a greeting");

    // What the checkpoints record.
    let log = r.log_json(true);
    let patched = checkpoint_with(&log, &[("tool_use_id", "call_patch1")]);
    let meta = &patched["meta"];
    assert_eq!(
        (
            &meta["agent"],
            &meta["session"],
            &meta["prompt"],
            &meta["kind"]
        ),
        (
            &json!("codex"),
            &json!(SESSION),
            &json!("1"),
            &json!("tool")
        )
    );
    assert_eq!(
        (
            &meta["event"],
            &meta["tool"],
            &meta["path"],
            &meta["prompt_id"]
        ),
        (
            &json!("PostToolUse"),
            &json!("apply_patch"),
            &json!("src/greet.rs"),
            &json!("turn-1")
        )
    );
    assert_eq!(
        patched["message"], "after apply_patch: src/greet.rs",
        "{patched:#}"
    );
    let sed = checkpoint_with(&log, &[("tool_use_id", "call_sed1")]);
    assert_eq!(sed["meta"]["tool"], "Bash");
    // A shell command names no file: its `path` is what its checkpoint changed.
    assert_eq!(sed["meta"]["path"], "notes.txt", "{sed:#}");
    assert_eq!(sed["meta"]["paths"], "1", "{sed:#}");
    assert_eq!(
        sed["message"], "after Bash: sed -i 's/keep/kept/' notes.txt",
        "{sed:#}"
    );
    let rm = checkpoint_with(&log, &[("tool_use_id", "call_rm1")]);
    assert!(
        rm["meta"].get("failed").is_none(),
        "Codex reports no failure: {rm:#}"
    );
    let edit = checkpoint_with(&log, &[("tool_use_id", "call_patch3")]);
    assert_eq!(
        (&edit["meta"]["path"], &edit["meta"]["prompt"]),
        (&json!("src/main.rs"), &json!("3"))
    );
    let prompts: Vec<&Value> = log
        .iter()
        .filter(|c| c["meta"]["kind"] == "prompt")
        .collect();
    assert_eq!(prompts.len(), 3, "{log:#?}");
    assert!(prompts
        .iter()
        .all(|c| c["meta"]["event"] == "UserPromptSubmit"));

    // "Before prompt N", for every N, is exactly the tree the user had.
    for (n, expected) in &before_prompt {
        r.ok(&["restore", &format!("{short}:prompt{n}")]);
        assert_snap_eq(expected, &worktree(&r), &format!("before prompt {n}"));
    }
    // "Before that tool call": the command's deletion is undone.
    r.ok(&["restore", &format!("{short}:call_rm1~")]);
    assert_eq!(r.read("notes.txt"), b"kept me\n");
    // The hooks survive every restore.
    assert!(std::fs::read_to_string(r.p(".codex/hooks.json"))
        .unwrap()
        .contains("git checkpoint hooks run codex"));
}

/// A project's hooks file as the user keeps it, with a hook of their own.
const EXISTING: &str = r#"{
  "hooks": {
    "PostToolUse": [
      {
        "matcher": "Bash",
        "hooks": [
          {
            "type": "command",
            "command": "/usr/bin/python3 \"$(git rev-parse --show-toplevel)/.codex/hooks/post_tool_use_review.py\"",
            "statusMessage": "Reviewing Bash output"
          }
        ]
      }
    ],
    "Stop": [
      {
        "hooks": [
          {
            "type": "command",
            "command": "notify-send done",
            "timeout": 30
          }
        ]
      }
    ]
  }
}
"#;

#[test]
fn install_merges_into_codex_hooks_and_uninstall_restores_the_bytes() {
    let r = Repo::new();
    r.write(".codex/hooks.json", EXISTING.as_bytes());
    r.write("a.txt", b"a\n");
    r.ok(&["save", "-m", "before the install"]);
    let first = r.log_json(true)[0]["id"].as_str().unwrap().to_string();
    let out = r.ok(&["hooks", "install", "codex"]);
    assert!(out.stdout.contains(".codex/hooks.json"), "{out}");
    let merged: Value = serde_json::from_slice(&r.read(".codex/hooks.json")).unwrap();
    let ours =
        json!({"type": "command", "command": "git checkpoint hooks run codex", "timeout": 30});
    let original: Value = serde_json::from_str(EXISTING).unwrap();
    assert_eq!(
        merged["hooks"]["PostToolUse"],
        json!([
            original["hooks"]["PostToolUse"][0],
            {"matcher": "^(Bash|apply_patch|mcp__checkpoint__.+)$", "hooks": [ours]}
        ])
    );
    assert_eq!(
        merged["hooks"]["UserPromptSubmit"],
        json!([{"hooks": [ours]}])
    );
    assert_eq!(merged["hooks"]["Stop"], original["hooks"]["Stop"]);
    let text = std::fs::read_to_string(r.p(".codex/hooks.json")).unwrap();
    let out = r.ok(&["hooks", "install", "codex", "--shared"]);
    assert!(out.stdout.contains("already"), "{out}");
    assert_eq!(
        std::fs::read_to_string(r.p(".codex/hooks.json")).unwrap(),
        text
    );

    // Restoring a checkpoint from before the install keeps the hooks (the settings file
    // is the agent's, not the worktree's).
    r.ok(&["restore", &first]);
    assert_eq!(
        std::fs::read_to_string(r.p(".codex/hooks.json")).unwrap(),
        text
    );

    let out = r.ok(&["hooks", "uninstall", "codex"]);
    assert!(out.stdout.contains("Removed"), "{out}");
    assert_eq!(
        std::fs::read_to_string(r.p(".codex/hooks.json")).unwrap(),
        EXISTING,
        "uninstall must restore the file byte for byte"
    );

    // --global: the user's ~/.codex/hooks.json, created and deleted again.
    let global = r.home().join(".codex/hooks.json");
    r.ok(&["hooks", "install", "codex", "--global"]);
    let installed: Value = serde_json::from_slice(&std::fs::read(&global).unwrap()).unwrap();
    assert_eq!(
        installed["hooks"]["UserPromptSubmit"][0]["hooks"][0]["command"],
        "git checkpoint hooks run codex"
    );
    r.ok(&["hooks", "uninstall", "codex", "--global"]);
    assert!(!global.exists());
    assert!(!r.home().join(".codex").exists());
}

#[test]
fn a_codex_hooks_file_linked_out_of_the_worktree_is_refused() {
    let r = Repo::new();
    let outside = r.sb.root.join("elsewhere.json");
    std::fs::write(&outside, "{}").unwrap();
    std::fs::create_dir_all(r.p(".codex")).unwrap();
    std::os::unix::fs::symlink(&outside, r.p(".codex/hooks.json")).unwrap();
    let out = r.run(&["hooks", "install", "codex"]);
    assert_eq!(out.code, 1, "{out}");
    assert!(out.stderr.contains("outside"), "{out}");
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "{}");
}

/// An `apply_patch` of several files names every one of them (`named_paths`), so
/// `restore --only-session` puts back all the patch's files, the moved one's old and new
/// name included, and leaves alone only what the patch does not name: a file the user
/// wrote while the call ran (no hook before `apply_patch` brackets it).
#[test]
fn every_file_of_an_apply_patch_is_the_sessions() {
    let r = Repo::new();
    r.write("src/main.rs", b"fn main() {}\n");
    r.write("old.txt", b"old\n");
    r.write("notes.txt", b"keep\n");
    r.git(&["add", "-A"]);
    r.git(&["commit", "-qm", "the project"]);
    r.ok(&["hooks", "install", "codex"]);
    let before = worktree(&r);
    hook(&r, &fixture(&r, "user_prompt_submit"));
    // The patch: add src/greet.rs, move src/main.rs to src/app.rs with an edit, delete
    // old.txt, update notes.txt; the user writes mine.txt meanwhile.
    r.write("src/greet.rs", b"pub fn hi() {}\n");
    r.remove("src/main.rs");
    r.write("src/app.rs", b"fn main() { hi() }\n");
    r.remove("old.txt");
    r.write("notes.txt", b"kept\n");
    r.write("mine.txt", b"the user's, during the call\n");
    hook(&r, &fixture(&r, "post_tool_use_apply_patch_several"));

    let log = r.log_json(true);
    let call = checkpoint_with(&log, &[("tool_use_id", "call_patch2")]);
    assert_eq!(call["meta"]["named_path"], "src/greet.rs", "{call:#}");
    let named: Vec<String> =
        serde_json::from_str(call["meta"]["named_paths"].as_str().unwrap_or("[]")).unwrap();
    assert_eq!(
        named,
        [
            "src/greet.rs",
            "src/main.rs",
            "src/app.rs",
            "old.txt",
            "notes.txt"
        ],
        "{call:#}"
    );

    let out = r.run(&["restore", &format!("{SESSION}:prompt1"), "--only-session"]);
    assert_eq!(out.code, 1, "mine.txt is left alone: {out}");
    let left: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| l.starts_with("Left"))
        .collect();
    assert_eq!(left.len(), 1, "{out}");
    assert!(left[0].starts_with("Left mine.txt:"), "{out}");
    let mut expected = before;
    expected.insert(
        b"mine.txt".to_vec(),
        worktree(&r)[b"mine.txt".as_slice()].clone(),
    );
    assert_eq!(worktree(&r), expected, "{out}");
}
