//! Issue 34, finding 8: a file the user cannot read (root-owned, from docker or sudo)
//! must not stop every agent checkpoint silently. Hook runs leave it out and record it
//! as skipped, as the size cap does, and the agent's own UI hears of it once per session
//! where the agent's hook contract has a channel (Claude Code and Codex CLI:
//! `systemMessage`; Gemini CLI: `systemMessage` in the JSON it requires); `hooks install`
//! saves its first checkpoint all the same and names what it left out; a hook run that
//! cannot save at all says so. As root the binary runs as `nobody` through setpriv(1),
//! as in `safety_unreadable.rs`.

use crate::common;
use std::os::unix::fs::PermissionsExt;

use common::{open_up, run_unprivileged, run_unprivileged_with_input, Out, Repo};
use serde_json::{json, Value};

/// A worktree with `ok.txt` and a `secret.txt` nobody but root can read, made ready for
/// [`run_unprivileged`]; `None` where that cannot run (the test is then skipped
/// knowingly, or fails, as `common::prepare_unprivileged` decides).
fn worktree_with_unreadable_file() -> Option<Repo> {
    let repo = Repo::new();
    if !common::prepare_unprivileged(&repo) {
        return None;
    }
    repo.write("ok.txt", b"readable\n");
    repo.write("secret.txt", b"cannot be read\n");
    open_up(&repo.sb.root);
    std::fs::set_permissions(repo.p("secret.txt"), std::fs::Permissions::from_mode(0o000)).unwrap();
    Some(repo)
}

/// One hook run of `agent` as the unprivileged user, with `payload` on stdin; it must
/// exit 0 and print nothing on stderr, whatever happened.
#[track_caller]
fn hook(repo: &Repo, agent: &str, payload: &Value) -> Out {
    let input = serde_json::to_vec(payload).unwrap();
    let out = run_unprivileged_with_input(repo, &["hooks", "run", agent], Some(&input));
    assert_eq!((out.code, out.stderr.as_str()), (0, ""), "{out}");
    out
}

/// Claude Code's payload for a tool step of `session`.
fn claude_step(repo: &Repo, session: &str, tool_use_id: &str) -> Value {
    json!({
        "session_id": session,
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_use_id": tool_use_id,
        "tool_input": {"command": "docker compose up -d"},
        "cwd": repo.dir,
    })
}

/// The `systemMessage` of a hook's JSON reply, where it has one.
fn system_message(out: &Out) -> Option<String> {
    let reply: Value = serde_json::from_str(out.stdout.trim()).ok()?;
    reply["systemMessage"].as_str().map(str::to_string)
}

/// The newest checkpoint, read as the unprivileged user.
fn newest(repo: &Repo) -> Value {
    let out = run_unprivileged(repo, &["log", "-n", "1", "--json"]);
    assert_eq!(out.code, 0, "{out}");
    let log: Value = serde_json::from_str(&out.stdout).unwrap();
    log[0].clone()
}

fn checkpoint_count(repo: &Repo) -> usize {
    let out = run_unprivileged(repo, &["log", "--json"]);
    assert_eq!(out.code, 0, "{out}");
    let log: Value = serde_json::from_str(&out.stdout).unwrap();
    log.as_array().map_or(0, Vec::len)
}

#[test]
fn hook_runs_leave_out_an_unreadable_file_and_say_so_once_per_session() {
    let Some(repo) = worktree_with_unreadable_file() else {
        return;
    };
    let first = hook(&repo, "claude", &claude_step(&repo, "s1", "toolu_1"));
    let told = system_message(&first)
        .unwrap_or_else(|| panic!("Claude Code was not told (systemMessage)\n{first}"));
    assert!(told.contains("secret.txt"), "{told}");
    let saved = newest(&repo);
    assert_eq!(saved["meta"]["tool_use_id"], "toolu_1", "{saved:#}");
    assert_eq!(saved["skipped"][0]["path"], "secret.txt", "{saved:#}");
    assert_eq!(saved["skipped"][0]["reason"], "unreadable", "{saved:#}");

    // The next step of the same session saves as well, and says nothing again.
    repo.write("ok.txt", b"changed by the agent\n");
    let before = checkpoint_count(&repo);
    let second = hook(&repo, "claude", &claude_step(&repo, "s1", "toolu_2"));
    assert_eq!(second.stdout, "", "told twice in one session\n{second}");
    assert_eq!(checkpoint_count(&repo), before + 1);
    assert_eq!(newest(&repo)["skipped"][0]["path"], "secret.txt");

    // Another session hears of it once too.
    let other = hook(&repo, "claude", &claude_step(&repo, "s2", "toolu_3"));
    assert!(
        system_message(&other).is_some_and(|m| m.contains("secret.txt")),
        "{other}"
    );

    // Codex CLI reads the same reply; Gemini CLI needs JSON on stdout after every event.
    let codex = json!({"session_id": "c1", "turn_id": "t1", "hook_event_name": "PostToolUse",
        "tool_name": "Bash", "tool_input": {"command": "ls"}, "cwd": repo.dir});
    let out = hook(&repo, "codex", &codex);
    assert!(system_message(&out).is_some(), "{out}");
    assert_eq!(hook(&repo, "codex", &codex).stdout, "");
    let gemini = json!({"session_id": "g1", "hook_event_name": "AfterTool",
        "tool_name": "run_shell_command", "tool_input": {"command": "ls"}, "cwd": repo.dir});
    let out = hook(&repo, "gemini", &gemini);
    assert!(
        system_message(&out).is_some_and(|m| m.contains("secret.txt")),
        "{out}"
    );
    assert_eq!(hook(&repo, "gemini", &gemini).stdout.trim(), "{}");

    // Cursor has no channel for it after an edit: nothing on stdout, the checkpoint made.
    let before = checkpoint_count(&repo);
    let cursor = json!({"conversation_id": "k1", "generation_id": "g1",
        "hook_event_name": "afterFileEdit", "file_path": repo.p("ok.txt"),
        "workspace_roots": [repo.dir]});
    assert_eq!(hook(&repo, "cursor", &cursor).stdout, "");
    assert_eq!(checkpoint_count(&repo), before + 1);
}

#[test]
fn hooks_install_saves_its_first_checkpoint_and_names_what_it_left_out() {
    let Some(repo) = worktree_with_unreadable_file() else {
        return;
    };
    let out = run_unprivileged(&repo, &["hooks", "install", "claude"]);
    assert_eq!(out.code, 0, "{out}");
    assert!(
        out.stdout.contains("Saved checkpoint"),
        "no first checkpoint\n{out}"
    );
    assert!(
        out.stderr.contains("secret.txt") && out.stderr.contains("unreadable"),
        "install does not say what it left out\n{out}"
    );
    let saved = newest(&repo);
    assert_eq!(saved["meta"]["event"], "install", "{saved:#}");
    assert_eq!(saved["skipped"][0]["path"], "secret.txt", "{saved:#}");
}

/// A hook run whose save fails (here the store is damaged) says so in the agent's UI,
/// once per session; the hooks log keeps every failure.
#[test]
fn a_hook_run_that_cannot_save_says_so_once_per_session() {
    let repo = Repo::new();
    repo.write("a.txt", b"a\n");
    repo.save("first");
    std::fs::write(repo.store_path(), b"not a store at all").unwrap();
    let step = |id: &str| serde_json::to_vec(&claude_step(&repo, "s1", id)).unwrap();
    let first = common::run_hook(&repo.sb, &repo.dir, &step("toolu_1"));
    assert_eq!(first.code, 0, "{first}");
    let told = system_message(&first)
        .unwrap_or_else(|| panic!("the failed save was not reported\n{first}"));
    assert!(told.contains("could not save"), "{told}");
    let second = common::run_hook(&repo.sb, &repo.dir, &step("toolu_2"));
    assert_eq!((second.code, second.stdout.as_str()), (0, ""), "{second}");
    let log = std::fs::read_to_string(repo.git_dir().join("checkpoint/hooks.log")).unwrap();
    assert_eq!(log.lines().count(), 2, "{log}");

    // Outside any worktree (hooks installed for every project) there is nothing to save
    // and nothing to say.
    let elsewhere = repo.scratch("not-a-repo");
    let payload = json!({"session_id": "s9", "hook_event_name": "UserPromptSubmit",
        "prompt": "hi", "cwd": elsewhere});
    let out = common::run_hook(&repo.sb, &elsewhere, &serde_json::to_vec(&payload).unwrap());
    assert_eq!((out.code, out.stdout.as_str()), (0, ""), "{out}");
}

/// The saves `watch --save-after` makes leave the unreadable file out too, instead of
/// failing every time.
#[test]
fn saves_after_quiet_time_leave_out_an_unreadable_file() {
    let Some(repo) = worktree_with_unreadable_file() else {
        return;
    };
    let out = run_unprivileged(
        &repo,
        &["watch", "--daemon", "--save-after", "200ms", "-m", "quiet"],
    );
    assert_eq!(out.code, 0, "{out}");
    repo.write("ok.txt", b"changed while watched\n");
    open_up(&repo.p("ok.txt"));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let saved = loop {
        let newest = newest(&repo);
        if newest["message"] == "quiet" || std::time::Instant::now() > deadline {
            break newest;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let stopped = run_unprivileged(&repo, &["watch", "--stop"]);
    assert_eq!(stopped.code, 0, "{stopped}");
    let log =
        std::fs::read_to_string(repo.git_dir().join("checkpoint/watch/log")).unwrap_or_default();
    assert_eq!(saved["message"], "quiet", "no save after quiet time\n{log}");
    assert_eq!(saved["skipped"][0]["path"], "secret.txt", "{saved:#}");
    assert_eq!(saved["skipped"][0]["reason"], "unreadable", "{saved:#}");
}
