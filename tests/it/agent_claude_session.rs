//! A simulated Claude Code session, driven through the real binary with the hook payloads
//! Claude Code sends (fields as its hooks reference documents them:
//! https://code.claude.com/docs/en/hooks): prompts with and without edits, edits by file
//! tools and by a shell command, a failing command, parallel tool calls and a subagent.
//! Every prompt and tool call must then be a checkpoint that can be named and restored.

use crate::common;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value};

const SESSION: &str = "5f1c0a77-9d2e-4b1e-8a4c-1c2d3e4f5a6b";

/// The session as the test drives it: the worktree, the transcript that grows, and the
/// tree the user had when each prompt was submitted.
struct Session<'r> {
    claude: common::claude::ClaudeSession<'r>,
    before_prompt: BTreeMap<u64, Snap>,
}

impl Session<'_> {
    fn hook(&self, payload: Value) {
        self.claude.hook(payload);
    }

    fn prompt(&mut self, n: u64, text: &str) {
        self.before_prompt.insert(n, worktree(self.claude.repo));
        self.hook(json!({"hook_event_name": "UserPromptSubmit", "prompt": text}));
    }

    fn tool(&self, event: &str, tool: &str, id: &str, input: Value) {
        self.hook(json!({
            "hook_event_name": event,
            "tool_name": tool,
            "tool_use_id": id,
            "tool_input": input,
            "tool_response": {},
        }));
    }
}

/// The worktree's files, without git's and the agent's own settings.
fn worktree(repo: &Repo) -> Snap {
    let mut snap = repo.snapshot();
    snap.retain(|path, _| !path.starts_with(b".claude/"));
    snap
}

#[test]
fn every_prompt_and_tool_call_of_a_session_can_be_named_and_restored() {
    let r = Repo::new();
    r.write("src/main.rs", b"fn main() {}\n");
    r.write("notes.txt", b"keep me\n");
    r.ok(&["hooks", "install", "claude"]);
    let mut s = Session {
        claude: common::claude::ClaudeSession::new(&r, SESSION),
        before_prompt: BTreeMap::new(),
    };

    // Prompt 1: a file tool writes a file (absolute path, as Claude Code passes it).
    s.prompt(1, "Add a greeting\nwith a test");
    r.write("src/greet.rs", b"pub fn hi() {}\n");
    s.tool(
        "PostToolUse",
        "Write",
        "toolu_01A",
        json!({"file_path": r.p("src/greet.rs")}),
    );
    // A shell command deletes a file, then fails: PostToolUseFailure.
    r.remove("notes.txt");
    s.tool(
        "PostToolUseFailure",
        "Bash",
        "toolu_01B",
        json!({"command": "rm notes.txt && make"}),
    );
    // Prompts 2 and 3 change nothing before the next prompt: each still has a checkpoint.
    s.prompt(2, "Run the tests");
    s.prompt(3, "Explain the failure");
    // Prompt 4: three tool calls at once (Claude Code runs their hooks in parallel).
    s.prompt(4, "Write the three modules");
    for name in ["a", "b", "c"] {
        r.write(format!("src/{name}.rs"), name.as_bytes());
    }
    std::thread::scope(|scope| {
        for name in ["a", "b", "c"] {
            let s = &s;
            scope.spawn(move || {
                s.tool(
                    "PostToolUse",
                    "Write",
                    &format!("toolu_P{name}"),
                    json!({"file_path": format!("src/{name}.rs")}),
                )
            });
        }
    });
    // A subagent's edit.
    r.write("src/greet.rs", b"pub fn hello() {}\n");
    s.hook(
        json!({"hook_event_name": "PostToolUse", "tool_name": "Edit",
                  "tool_use_id": "toolu_S1", "agent_id": "sub-7",
                  "tool_input": {"file_path": "src/greet.rs"}}),
    );
    let last = worktree(&r);

    // `sessions` lists it with every prompt.
    let short = only_session(&r, "claude", SESSION, 4, "Add a greeting");
    assert!(SESSION.starts_with(&short) && short.len() >= 8, "{short}");
    let text = r.ok(&["sessions"]).stdout;
    assert!(
        text.contains(&short) && text.contains("4 prompts"),
        "{text}"
    );

    // What each checkpoint records.
    let log = r.log_json(true);
    let prompts: Vec<&Value> = log
        .iter()
        .filter(|c| c["meta"]["event"] == "UserPromptSubmit")
        .collect();
    assert_eq!(prompts.len(), 4, "every prompt is a checkpoint: {log:#?}");
    // The session by its short id, as `sessions` shows it.
    let listed_log = r.json_of(&["log", "--all", "--session", &short, "--json"]);
    assert_eq!(
        listed_log.as_array().unwrap().len(),
        log.iter()
            .filter(|c| c["meta"]["session"] == SESSION)
            .count(),
        "{listed_log:#}"
    );
    let write = checkpoint_with(&log, &[("tool_use_id", "toolu_01A")]);
    assert_eq!(write["meta"]["path"], "src/greet.rs");
    assert_eq!(write["meta"]["prompt"], "1");
    assert_eq!(write["meta"]["session"], SESSION);
    let transcript_bytes: u64 = write["meta"]["transcript_bytes"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(transcript_bytes > 0);
    let failed = checkpoint_with(&log, &[("tool_use_id", "toolu_01B")]);
    assert_eq!(failed["meta"]["failed"], "true");
    assert_eq!(failed["meta"]["event"], "PostToolUseFailure");
    for name in ["a", "b", "c"] {
        let call = checkpoint_with(&log, &[("tool_use_id", &format!("toolu_P{name}"))]);
        assert_eq!(call["meta"]["prompt"], "4");
    }
    let sub = checkpoint_with(&log, &[("tool_use_id", "toolu_S1")]);
    assert_eq!(sub["meta"]["subagent"], "sub-7");
    let later: u64 = sub["meta"]["transcript_bytes"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        later > transcript_bytes,
        "the transcript grew: {later} > {transcript_bytes}"
    );

    // "Before prompt N", for every N, is exactly the tree the user had.
    for (n, expected) in &s.before_prompt {
        r.ok(&["restore", &format!("{short}:prompt{n}")]);
        assert_snap_eq(expected, &worktree(&r), &format!("before prompt {n}"));
    }
    // "Before that tool call": the failing command's deletion is undone.
    r.ok(&["restore", &format!("{short}:toolu_01B~")]);
    assert_eq!(r.read("notes.txt"), b"keep me\n");
    assert!(r.exists("src/greet.rs"));
    // After the last call, and `diff` between two prompts.
    r.ok(&["restore", &format!("{short}:toolu_S1")]);
    assert_snap_eq(&last, &worktree(&r), "after the subagent's edit");
    let diff = r.ok(&[
        "diff",
        "--name-status",
        &format!("{short}:prompt3"),
        &format!("{short}:prompt4"),
    ]);
    assert_eq!(diff.stdout, "", "prompt 3 changed nothing: {diff}");

    // A prompt the session never had is a clear error.
    let out = r.run(&["show", &format!("{short}:prompt9")]);
    assert_eq!(out.code, 1, "{out}");
    assert!(
        out.stderr
            .contains("no checkpoint for 'prompt9' (4 prompts recorded)"),
        "{out}"
    );
    let out = r.run(&["show", "zzzzzzzz:prompt1"]);
    assert_eq!(out.code, 1, "{out}");
    assert!(
        out.stderr
            .contains("no agent session id starts with 'zzzzzzzz'"),
        "{out}"
    );
}

/// A hook never makes the agent wait long: with the store held by another process, it
/// gives up after `checkpoint.hookLockTimeout`, exits 0, logs why and tells the user (in
/// a `systemMessage`, once per session) that this step has no checkpoint.
#[test]
fn a_busy_store_costs_the_agent_at_most_the_hook_lock_timeout() {
    let r = Repo::new();
    r.write("a.txt", b"a\n");
    r.git(&["config", "checkpoint.hookLockTimeout", "1"]);
    let mut holder = spawn_paused(&r, &["save", "-m", "held"], "locked", 30_000);
    let started = Instant::now();
    let payload = json!({"session_id": SESSION, "cwd": r.dir,
                         "hook_event_name": "UserPromptSubmit", "prompt": "go"});
    let out = run_hook(&r.sb, &r.dir, payload.to_string().as_bytes());
    let waited = started.elapsed();
    holder.kill().unwrap();
    let _ = holder.wait();
    assert_eq!((out.code, out.stderr.as_str()), (0, ""), "{out}");
    assert!(
        out.stdout.starts_with("{\"systemMessage\":") && out.stdout.contains("could not save"),
        "{out}"
    );
    assert!(
        waited < Duration::from_secs(10),
        "the hook waited {waited:?}"
    );
    assert!(
        waited >= Duration::from_millis(900),
        "it did wait for the store: {waited:?}"
    );
    let logged = std::fs::read_to_string(r.git_dir().join("checkpoint/hooks.log")).unwrap();
    assert!(
        logged.contains("busy") || logged.contains("another"),
        "{logged}"
    );
}

/// Installing takes the first checkpoint, so the state before the first prompt is always
/// there; installing over hooks an older version wrote replaces them instead of adding a
/// second set (which would save twice per tool call); and a settings file that is a
/// symlink out of the worktree is refused.
#[test]
fn install_saves_first_replaces_old_hooks_and_refuses_links_out() {
    let r = Repo::new();
    r.write("a.txt", b"a\n");
    let old = json!({"hooks": {
        "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "git checkpoint hooks run claude"}]}],
        "PostToolUse": [{"matcher": "Edit|Write|MultiEdit|NotebookEdit|Bash",
                         "hooks": [{"type": "command", "command": "git checkpoint hooks run claude"}]}]
    }});
    r.write(".claude/settings.local.json", old.to_string().as_bytes());
    let out = r.ok(&["hooks", "install", "claude"]);
    assert!(
        out.stdout.contains("state before the agent's first prompt"),
        "{out}"
    );
    assert_eq!(
        r.log_json(true).len(),
        1,
        "install saved the first checkpoint"
    );
    let settings: Value = serde_json::from_slice(&r.read(".claude/settings.local.json")).unwrap();
    for event in ["UserPromptSubmit", "PostToolUse", "PostToolUseFailure"] {
        let groups = settings["hooks"][event].as_array().unwrap();
        assert_eq!(groups.len(), 1, "{event}: {settings:#}");
        assert_eq!(groups[0]["hooks"][0]["timeout"], 30, "{settings:#}");
    }

    let outside = r.sb.root.join("elsewhere.json");
    std::fs::write(&outside, "{}").unwrap();
    r.remove(".claude/settings.local.json");
    std::os::unix::fs::symlink(&outside, r.p(".claude/settings.local.json")).unwrap();
    let out = r.run(&["hooks", "install", "claude"]);
    assert_eq!(out.code, 1, "{out}");
    assert!(out.stderr.contains("outside"), "{out}");
    assert_eq!(
        std::fs::read_to_string(&outside).unwrap(),
        "{}",
        "untouched"
    );
    // A linked `.claude` directory is no way around it.
    r.remove(".claude/settings.local.json");
    std::fs::remove_dir(r.p(".claude")).unwrap();
    let dir = r.sb.root.join("claude-dir");
    std::fs::create_dir_all(&dir).unwrap();
    std::os::unix::fs::symlink(&dir, r.p(".claude")).unwrap();
    let out = r.run(&["hooks", "install", "claude", "--shared"]);
    assert_eq!(out.code, 1, "{out}");
    assert!(!dir.join("settings.json").exists());
}

/// With `checkpoint.keepTranscripts`, each prompt's checkpoint carries the transcript as it
/// stood, exactly, and because transcripts grow by appending, each copy costs about the
/// bytes added since the last one, not the whole file again.
#[test]
fn kept_transcripts_cost_about_what_the_conversation_grew() {
    let r = Repo::new();
    r.write("a.txt", b"a\n");
    r.git(&["config", "checkpoint.keepTranscripts", "true"]);
    let transcript = claude_transcript(&r, "session.jsonl");
    // A long conversation already: 1 MiB of varied JSON lines.
    let line = |i: usize| {
        let noise = pseudo_random(48, i as u64);
        format!("{{\"n\":{i},\"text\":\"{}\"}}\n", hex_of(&noise))
    };
    let mut text = String::new();
    let mut i = 0;
    while text.len() < 1 << 20 {
        text += &line(i);
        i += 1;
    }
    std::fs::write(&transcript, &text).unwrap();
    let unique = |r: &Repo| {
        r.json_of(&["stats", "--json"])["unique_bytes"]
            .as_u64()
            .unwrap()
    };
    let before = unique(&r);
    const PROMPTS: usize = 12;
    let mut appended = 0;
    let mut at_last_prompt = String::new();
    for n in 1..=PROMPTS {
        at_last_prompt = text.clone();
        let payload = json!({"session_id": SESSION, "cwd": r.dir, "transcript_path": transcript,
                             "hook_event_name": "UserPromptSubmit", "prompt": format!("step {n}")});
        let out = run_hook(&r.sb, &r.dir, payload.to_string().as_bytes());
        assert_eq!((out.code, out.stdout.as_str()), (0, ""), "{out}");
        // The conversation goes on: about 30 KB more per prompt.
        let mut more = String::new();
        while more.len() < 30_000 {
            more += &line(i);
            i += 1;
        }
        appended += more.len();
        text += &more;
        std::fs::write(&transcript, &text).unwrap();
    }
    let grown = unique(&r) - before;
    let first_copy = (1 << 20) as u64;
    // Each copy after the first may re-store the chunk the append landed in (at most
    // one maximum-size chunk), plus what was appended.
    let bound = first_copy + appended as u64 + PROMPTS as u64 * 258_048;
    assert!(grown <= bound, "{grown} > {bound}");
    let naive = PROMPTS as u64 * first_copy;
    assert!(grown * 3 < naive, "{grown} is not far below {naive}");
    // The last prompt's copy is the transcript as it was then.
    let last = r.log_json(false)[0].clone();
    let name = last["attachments"][0]["name"].as_str().unwrap().to_string();
    let copy = r.ok(&["attachment", "@", &name]).stdout_raw;
    assert!(
        copy == at_last_prompt.as_bytes(),
        "the transcript as it stood at the prompt"
    );
}

/// A transcript file `name` where Claude Code keeps them (in the test's HOME): only
/// there is a transcript read.
fn claude_transcript(r: &Repo, name: &str) -> std::path::PathBuf {
    let dir = r.home().join(".claude/projects/-repo");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn hex_of(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
