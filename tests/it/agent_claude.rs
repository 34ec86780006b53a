//! `hooks install/uninstall/run claude`: merging into Claude Code's settings without
//! disturbing them, and saving with the agent's session as metadata.

use crate::common;
use std::path::Path;
use std::process::Command;

use common::*;
use serde_json::{json, Value};

/// Settings as Claude Code writes them (two-space JSON), with a hook of the user's own.
const EXISTING: &str = r#"{
  "permissions": {
    "allow": [
      "Bash(npm run test:*)"
    ]
  },
  "hooks": {
    "PostToolUse": [
      {
        "matcher": "Write",
        "hooks": [
          {
            "type": "command",
            "command": "prettier --write \"$CLAUDE_FILE_PATHS\""
          }
        ]
      }
    ]
  },
  "model": "sonnet"
}
"#;

/// The shared settings file (`--shared`), which the tests of merging use because a
/// project's settings usually live there already.
fn settings(r: &Repo) -> std::path::PathBuf {
    r.p(".claude/settings.json")
}

/// Our hook as install writes it.
fn our_hook() -> Value {
    json!({"type": "command", "command": "git checkpoint hooks run claude", "timeout": 30})
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

#[test]
fn install_merges_keeps_existing_hooks_and_uninstall_restores_the_bytes() {
    let r = Repo::new();
    r.write(".claude/settings.json", EXISTING.as_bytes());
    // Claude Code started at the top reads the top's settings (from a subdirectory, the
    // subdirectory's: tests/it/agent_hooks_reach.rs).
    let out = r.ok(&["hooks", "install", "claude", "--shared"]);
    assert!(
        out.stdout.contains("Installed the checkpoint hooks"),
        "{out}"
    );

    let merged = read_json(&settings(&r));
    let original: Value = serde_json::from_str(EXISTING).unwrap();
    assert_eq!(merged["permissions"], original["permissions"]);
    assert_eq!(merged["model"], "sonnet");
    let post = merged["hooks"]["PostToolUse"].as_array().unwrap();
    assert_eq!(post.len(), 2, "{merged:#}");
    assert_eq!(
        post[0], original["hooks"]["PostToolUse"][0],
        "user hook kept"
    );
    let file_tools = "^(Edit|Write|MultiEdit|NotebookEdit|Bash|PowerShell|mcp__checkpoint__.+)$";
    assert_eq!(
        post[1],
        json!({"matcher": file_tools, "hooks": [our_hook()]})
    );
    assert_eq!(
        merged["hooks"]["PostToolUseFailure"],
        json!([{"matcher": file_tools, "hooks": [our_hook()]}])
    );
    assert_eq!(
        merged["hooks"]["UserPromptSubmit"],
        json!([{"hooks": [our_hook()]}])
    );
    // Key order and indentation are the file's own.
    let text = std::fs::read_to_string(settings(&r)).unwrap();
    assert!(text.starts_with("{\n  \"permissions\""), "{text}");
    assert!(text.ends_with("\"model\": \"sonnet\"\n}\n"), "{text}");

    // A second install changes nothing.
    let out = r.ok(&["hooks", "install", "claude", "--shared"]);
    assert!(out.stdout.contains("already"), "{out}");
    assert_eq!(std::fs::read_to_string(settings(&r)).unwrap(), text);

    let out = r.ok(&["hooks", "uninstall", "claude", "--shared"]);
    assert!(out.stdout.contains("Removed"), "{out}");
    assert_eq!(
        std::fs::read_to_string(settings(&r)).unwrap(),
        EXISTING,
        "uninstall must restore the file byte for byte"
    );
    let out = r.ok(&["hooks", "uninstall", "claude", "--shared"]);
    assert!(out.stdout.contains("No checkpoint hooks"), "{out}");
}

#[test]
fn uninstall_keeps_what_the_user_changed_meanwhile() {
    let r = Repo::new();
    // Four-space indentation and no trailing newline are kept too.
    let four = "{\n    \"model\": \"opus\"\n}";
    r.write(".claude/settings.json", four.as_bytes());
    r.ok(&["hooks", "install", "claude", "--shared"]);
    let mut merged = read_json(&settings(&r));
    assert!(std::fs::read_to_string(settings(&r))
        .unwrap()
        .contains("\n    \"hooks\": {\n        \"UserPromptSubmit\""));
    // The user adds a hook of their own to our group and a setting.
    merged["hooks"]["UserPromptSubmit"][0]["hooks"]
        .as_array_mut()
        .unwrap()
        .push(json!({"type": "command", "command": "notify-send prompt"}));
    merged["theme"] = json!("dark");
    std::fs::write(settings(&r), serde_json::to_string_pretty(&merged).unwrap()).unwrap();
    r.ok(&["hooks", "uninstall", "claude", "--shared"]);
    let left = read_json(&settings(&r));
    assert_eq!(
        left,
        json!({"model": "opus",
               "hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "notify-send prompt"}]}]},
               "theme": "dark"})
    );
}

#[test]
fn install_creates_and_uninstall_removes_a_missing_file_and_global_uses_home() {
    let r = Repo::new();
    r.ok(&["hooks", "install", "claude"]);
    assert!(
        r.p(".claude/settings.local.json").is_file(),
        "the personal file by default"
    );
    assert!(!settings(&r).exists(), "the shared file is left alone");
    r.ok(&["hooks", "uninstall", "claude"]);
    assert!(
        !r.exists(".claude"),
        "install made .claude; uninstall removes it"
    );

    // --global works outside any repository, in $HOME.
    let outside = r.sb.root.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let global = r.sb.home.join(".claude/settings.json");
    std::fs::create_dir_all(global.parent().unwrap()).unwrap();
    std::fs::write(&global, "{\"env\": {\"A\": \"1\"}}").unwrap();
    r.sb.ok_in(&outside, &["hooks", "install", "claude", "--global"]);
    let merged = read_json(&global);
    assert_eq!(merged["env"]["A"], "1");
    assert!(merged["hooks"]["PostToolUse"].is_array());
    assert!(!r.exists(".claude"), "--global leaves the project alone");
    r.sb.ok_in(&outside, &["hooks", "uninstall", "claude", "--global"]);
    assert_eq!(
        std::fs::read_to_string(&global).unwrap(),
        "{\"env\": {\"A\": \"1\"}}",
        "one-line JSON comes back as it was"
    );

    // Without --global, outside a worktree, it is git's usual error.
    let out = r.sb.run_in(&outside, &["hooks", "install", "claude"]);
    assert_eq!(out.code, 128, "{out}");
}

#[test]
fn install_refuses_settings_it_cannot_read() {
    let r = Repo::new();
    for bad in ["{ not json", "[1, 2]", "{\"hooks\": {\"PostToolUse\": {}}}"] {
        r.write(".claude/settings.json", bad.as_bytes());
        let out = r.run(&["hooks", "install", "claude", "--shared"]);
        assert_eq!(out.code, 1, "{bad}: {out}");
        assert!(out.stderr.starts_with("error: "), "{out}");
        assert_eq!(r.read(".claude/settings.json"), bad.as_bytes(), "untouched");
    }
}

#[test]
fn hook_run_saves_with_the_session_and_never_fails_the_agent() {
    let r = Repo::new();
    r.write("src/lib.rs", b"pub fn a() {}\n");
    // A PostToolUse payload as Claude Code sends it; the hook runs elsewhere, and
    // `cwd` in the payload says which worktree is meant.
    let payload = json!({
        "session_id": "abc123-session",
        "transcript_path": "/home/u/.claude/projects/x/abc123-session.jsonl",
        "cwd": r.dir,
        "permission_mode": "default",
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "sed -i s/a/b/ src/lib.rs", "description": "edit"},
        "tool_response": {"stdout": "", "stderr": "", "interrupted": false}
    });
    let elsewhere = r.sb.root.clone();
    let out = run_hook(&r.sb, &elsewhere, payload.to_string().as_bytes());
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(out.stdout, "", "a hook's stdout would reach the agent");
    assert_eq!(out.stderr, "");
    let log = r.log_json(false);
    assert_eq!(log.len(), 1);
    assert_eq!(
        log[0]["meta"],
        json!({"agent": "claude", "session": "abc123-session", "kind": "tool", "event": "PostToolUse", "tool": "Bash",
               "transcript": "/home/u/.claude/projects/x/abc123-session.jsonl"})
    );
    assert_eq!(log[0]["message"], "after Bash: sed -i s/a/b/ src/lib.rs");

    // A prompt: saved with its number in the session and its first line.
    r.write("src/lib.rs", b"pub fn b() {}\n");
    let prompt = json!({
        "session_id": "abc123-session",
        "cwd": r.dir,
        "hook_event_name": "UserPromptSubmit",
        "prompt": "Rename b to c\nand update the callers"
    });
    let out = run_hook(&r.sb, &r.dir, prompt.to_string().as_bytes());
    assert_eq!((out.code, out.stdout.as_str()), (0, ""), "{out}");
    let log = r.log_json(false);
    assert_eq!(log.len(), 2);
    assert_eq!(log[0]["message"], "before prompt 1: Rename b to c");
    assert_eq!(log[0]["meta"]["event"], "UserPromptSubmit");
    assert_eq!(log[0]["meta"]["prompt"], "1");
    assert!(log[0]["meta"].get("tool").is_none());

    // Garbage on stdin: exit 0, the reason in hooks.log, and the user told that no
    // checkpoint was made (once: a second such run prints nothing).
    let out = run_hook(&r.sb, &r.dir, b"this is not json");
    assert_eq!((out.code, out.stderr.as_str()), (0, ""), "{out}");
    assert!(out.stdout.starts_with("{\"systemMessage\":"), "{out}");
    assert!(out.stdout.contains("not valid JSON"), "{out}");
    let again = run_hook(&r.sb, &r.dir, b"this is not json");
    assert_eq!((again.code, again.stdout.as_str()), (0, ""), "{again}");
    let hooks_log = std::fs::read_to_string(r.git_dir().join("checkpoint/hooks.log")).unwrap();
    assert!(hooks_log.contains("not valid JSON"), "{hooks_log}");

    // Outside any repository: still exit 0 and silent.
    let outside = json!({"session_id": "s", "cwd": r.sb.root, "hook_event_name": "Stop"});
    let out = run_hook(&r.sb, &r.sb.root, outside.to_string().as_bytes());
    assert_eq!(
        (out.code, out.stdout.as_str(), out.stderr.as_str()),
        (0, "", "")
    );
}

#[test]
fn installed_hook_command_is_what_the_agent_would_run() {
    // The command in the settings must work as written, through git.
    let r = Repo::new();
    r.ok(&["hooks", "install", "claude", "--shared"]);
    let settings = read_json(&settings(&r));
    let command = settings["hooks"]["PostToolUse"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .to_string();
    let mut sh = Command::new("sh");
    r.sb.isolate(&mut sh);
    sh.args(["-c", &command])
        .env("PATH", path_with_bin())
        .current_dir(&r.dir);
    let payload = json!({"session_id": "via-git", "cwd": r.dir,
                         "hook_event_name": "PostToolUse", "tool_name": "Write"});
    let out = run_cmd_with_input(sh, Some(payload.to_string().as_bytes()), DEFAULT_TIMEOUT);
    assert_eq!(out.code, 0, "{out}");
    let log = r.log_json(false);
    assert_eq!(log[0]["meta"]["session"], "via-git", "{log:?}");
}

/// Saves made by the agent hook keep `checkpoint.gc.*` as `save` does: agents save
/// hundreds of times a session, and their saves are the ones retention is for. A bad
/// value never fails the hook; it is logged.
#[test]
fn hook_saves_apply_the_configured_retention() {
    let r = Repo::new();
    r.git(&["config", "checkpoint.gc.keep", "3"]);
    for i in 0..6 {
        r.write("src/lib.rs", format!("pub fn f{i}() {{}}\n").as_bytes());
        let payload = json!({
            "session_id": "gc-session",
            "cwd": r.dir,
            "hook_event_name": "PostToolUse",
            "tool_name": "Edit",
            "tool_input": {"file_path": "src/lib.rs"},
        });
        let out = run_hook(&r.sb, &r.dir, payload.to_string().as_bytes());
        assert_eq!((out.code, out.stdout.as_str()), (0, ""), "{out}");
    }
    let log = r.log_json(true);
    assert_eq!(
        log.len(),
        3,
        "checkpoint.gc.keep 3 was not applied: {log:?}"
    );
    assert_eq!(r.read("src/lib.rs"), b"pub fn f5() {}\n");

    r.git(&["config", "checkpoint.gc.keep", "lots"]);
    r.write("src/lib.rs", b"pub fn g() {}\n");
    let payload = json!({"session_id": "gc-session", "cwd": r.dir, "hook_event_name": "Stop"});
    let out = run_hook(&r.sb, &r.dir, payload.to_string().as_bytes());
    assert_eq!((out.code, out.stdout.as_str()), (0, ""), "{out}");
    assert_eq!(r.log_json(true).len(), 4, "the save itself must not fail");
    let logged = std::fs::read_to_string(r.git_dir().join("checkpoint/hooks.log")).unwrap();
    assert!(logged.contains("checkpoint.gc.keep"), "{logged}");
}

/// A config value the hook cannot use (its lock timeout past what a duration holds) is
/// logged and told to the user once per session, never a panic or a failed agent step.
#[test]
fn a_bad_config_value_never_fails_the_hook() {
    let r = Repo::new();
    r.write("a.txt", b"a\n");
    r.git(&["config", "checkpoint.hookLockTimeout", "1e20"]);
    let payload = json!({"session_id": "s", "cwd": r.dir, "hook_event_name": "Stop"});
    let out = run_hook(&r.sb, &r.dir, payload.to_string().as_bytes());
    assert_eq!(out.code, 0, "{out}");
    let reply: Value = serde_json::from_str(&out.stdout).expect("a JSON reply");
    let told = reply["systemMessage"].as_str().unwrap_or_default();
    assert!(told.contains("checkpoint.hookLockTimeout"), "{out}");
    let again = run_hook(&r.sb, &r.dir, payload.to_string().as_bytes());
    assert_eq!((again.code, again.stdout.as_str()), (0, ""), "{again}");
    let logged = std::fs::read_to_string(r.git_dir().join("checkpoint/hooks.log")).unwrap();
    assert!(logged.contains("checkpoint.hookLockTimeout"), "{logged}");
}

/// Settings of every JSON shape a user may have — tabs, one line, exponents, integers
/// past 64 bits, decimals that are not exact in binary, unknown keys — come back from
/// install and uninstall byte for byte, and install changes nothing but adds our hooks.
#[test]
fn every_json_shape_round_trips_through_install_and_uninstall() {
    let shapes = [
        "{\n\t\"model\": \"opus\",\n\t\"limits\": {\"tokens\": 1e3, \"big\": 123456789012345678901234567890, \"ratio\": 0.1000000000000000055511151231257827}\n}\n",
        "{\"env\":{\"A\":\"1\"},\"n\":-0.0,\"x\":1E-7,\"unknown\":[true,null,{}]}",
        "{\n  \"permissions\": {\n    \"deny\": []\n  },\n  \"weird\": 2.50\n}",
    ];
    for shape in shapes {
        let r = Repo::new();
        r.write(".claude/settings.json", shape.as_bytes());
        r.ok(&["hooks", "install", "claude", "--shared"]);
        let installed = std::fs::read_to_string(settings(&r)).unwrap();
        for number in [
            "1e3",
            "123456789012345678901234567890",
            "0.1000000000000000055511151231257827",
            "1E-7",
            "2.50",
            "-0.0",
        ] {
            if shape.contains(number) {
                assert!(
                    installed.contains(number),
                    "{number} rewritten: {installed}"
                );
            }
        }
        r.ok(&["hooks", "uninstall", "claude", "--shared"]);
        assert_eq!(
            std::fs::read_to_string(settings(&r)).unwrap(),
            shape,
            "uninstall must restore the file byte for byte"
        );
    }
}

/// Runs a real `git commit -m <message>` in `repo` with the binary on PATH, as a
/// user's shell would find it, and returns the new commit.
fn git_commit(repo: &Repo, message: &str) -> String {
    let bin_dir = Path::new(BIN).parent().unwrap();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap());
    let mut cmd = repo.sb.git_cmd(&repo.dir, &["commit", "-q", "-m", message]);
    cmd.env("PATH", &path);
    let out = run_cmd(cmd, DEFAULT_TIMEOUT);
    assert_eq!(out.code, 0, "{out}");
    repo.git(&["rev-parse", "HEAD"]).trim().to_string()
}

/// The checkpoints recording commit `sha` (`log --all --meta commit=<sha>`).
fn recording(repo: &Repo, sha: &str) -> Vec<Value> {
    let found = repo.json(&["log", "--json", "--all", "--meta", &format!("commit={sha}")]);
    found.as_array().unwrap().clone()
}

#[test]
fn hooks_install_git_records_each_commit_on_a_checkpoint() {
    let repo = Repo::new();
    let out = repo.ok(&["hooks", "install", "git"]);
    let hook = repo.git_dir().join("hooks/post-commit");
    assert!(out.stdout.contains(&hook.display().to_string()), "{out}");
    repo.write("a.txt", b"one\n");
    repo.git(&["add", "a.txt"]);
    let first = git_commit(&repo, "first");
    repo.write("notes.txt", b"untracked notes\n");
    repo.write("a.txt", b"two\n");
    repo.git(&["add", "a.txt"]);
    let second = git_commit(&repo, "second");
    for sha in [&first, &second] {
        let list = recording(&repo, sha);
        assert_eq!(list.len(), 1, "{sha}: {list:?}");
        assert_eq!(list[0]["git_head"].as_str(), Some(sha.as_str()), "{list:?}");
    }
    // The checkpoint holds the worktree, untracked files too; the message is git's own.
    let second_id = recording(&repo, &second)[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let files = repo.json(&["show", "--json", &second_id]);
    assert!(files.to_string().contains("notes.txt"), "{files}");
    assert_eq!(repo.git(&["log", "-1", "--format=%B"]).trim(), "second");
    // Installing twice changes nothing; uninstall removes the file it created.
    let again = repo.ok(&["hooks", "install", "git"]);
    assert!(again.stdout.contains("already"), "{again}");
    repo.ok(&["hooks", "uninstall", "git"]);
    assert!(!hook.exists());
    repo.write("a.txt", b"three\n");
    repo.git(&["add", "a.txt"]);
    let third = git_commit(&repo, "third");
    assert!(recording(&repo, &third).is_empty());
}

#[test]
fn hooks_install_git_runs_an_existing_hook_first_and_uninstall_restores_its_bytes() {
    let repo = Repo::new();
    let hook = repo.git_dir().join("hooks/post-commit");
    let mine = b"#!/bin/sh\n# my own hook\necho ran >> \"$(git rev-parse --git-dir)/mine.log\"\n";
    write_file(&hook, mine, true);
    repo.ok(&["hooks", "install", "git"]);
    repo.write("a.txt", b"one\n");
    repo.git(&["add", "a.txt"]);
    let sha = git_commit(&repo, "first");
    assert_eq!(recording(&repo, &sha).len(), 1);
    let log = std::fs::read_to_string(repo.git_dir().join("mine.log")).unwrap();
    assert_eq!(log, "ran\n", "the user's hook did not run");

    // A hook of ours edited since is left alone.
    let ours = std::fs::read(&hook).unwrap();
    let mut edited = ours.clone();
    edited.extend_from_slice(b"# edited\n");
    std::fs::write(&hook, &edited).unwrap();
    let refused = repo.run(&["hooks", "uninstall", "git"]);
    assert_eq!(refused.code, 1, "{refused}");
    assert_eq!(std::fs::read(&hook).unwrap(), edited);
    std::fs::write(&hook, &ours).unwrap();

    repo.ok(&["hooks", "uninstall", "git"]);
    assert_eq!(std::fs::read(&hook).unwrap(), mine.to_vec());
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&hook).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o755);
    let mut aside = hook.clone().into_os_string();
    aside.push(".before-checkpoint");
    assert!(!Path::new(&aside).exists());
}

#[test]
fn hooks_install_git_follows_core_hooks_path() {
    let repo = Repo::new();
    repo.git(&["config", "core.hooksPath", "my-hooks"]);
    repo.ok(&["hooks", "install", "git"]);
    assert!(repo.p("my-hooks/post-commit").is_file());
    assert!(!repo.git_dir().join("hooks/post-commit").exists());
    repo.write("a.txt", b"one\n");
    repo.git(&["add", "a.txt"]);
    let sha = git_commit(&repo, "first");
    assert_eq!(recording(&repo, &sha).len(), 1);
    let refused = repo.run(&["hooks", "install", "git", "--global"]);
    assert_eq!(refused.code, 1, "{refused}");
    assert!(refused.stderr.contains("core.hooksPath"), "{refused}");
}
