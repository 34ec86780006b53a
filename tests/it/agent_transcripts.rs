//! Which transcript a hook attaches (issue 21, finding 4). With
//! `checkpoint.keepTranscripts` on, the `transcript_path` of a prompt's payload is
//! attached only if it is a regular file in that agent's own transcript directory (under
//! the HOME the hook runs with) and no larger than `checkpoint.maxFileSize`; it is read in
//! pieces, never whole. Anything else (a secret elsewhere, `/proc/self/environ`, a
//! symlink out of the directory, a FIFO, a huge sparse file) is left out, and the
//! checkpoint is still made, with the reason in the hooks log.

use crate::common;

use std::path::{Path, PathBuf};

use common::{agent_fixture, run_agent_hook, Repo};
use serde_json::{json, Value};

/// Each agent, its transcript directory under HOME, and a prompt payload naming
/// `transcript` (the checkpoint it makes is the newest).
const AGENTS: [(&str, &str); 5] = [
    ("claude", ".claude/projects/-repo"),
    ("codex", ".codex/sessions/2026/11/26"),
    ("gemini", ".gemini/tmp/3f1a9c/chats"),
    ("copilot", ".copilot/session-state/b7d3f9a2"),
    ("cursor", ".cursor/projects/repo/agent-transcripts"),
];

fn prompt_payload(repo: &Repo, agent: &str, transcript: &Path) -> Value {
    let root = repo.dir.to_str().unwrap();
    let vars = [("ROOT", root), ("PROMPT", "go on"), ("GENERATION", "g-1")];
    let mut payload = match agent {
        "claude" => json!({"session_id": "5f1c0a77", "cwd": root,
                           "hook_event_name": "UserPromptSubmit", "prompt": "go on"}),
        "codex" => agent_fixture("codex", "user_prompt_submit", &vars),
        "gemini" => agent_fixture("gemini", "before_agent", &vars),
        "copilot" => agent_fixture("copilot", "user_prompt_submitted", &vars),
        "cursor" => agent_fixture("cursor", "before_submit_prompt", &vars),
        _ => unreachable!("{agent}"),
    };
    payload["transcript_path"] = json!(transcript);
    payload
}

/// Runs `agent`'s prompt hook naming `transcript`; returns the checkpoint it made.
#[track_caller]
fn prompt(repo: &Repo, agent: &str, transcript: &Path) -> Value {
    let before = repo.log_json(false).len();
    let payload = prompt_payload(repo, agent, transcript);
    let out = run_agent_hook(&repo.sb, &repo.dir, agent, payload.to_string().as_bytes());
    assert_eq!(out.code, 0, "{agent}: {out}");
    let log = repo.log_json(false);
    assert_eq!(
        log.len(),
        before + 1,
        "{agent}: the hook made no checkpoint for {}\n{out}\nhooks.log: {}",
        transcript.display(),
        hooks_log(repo)
    );
    log[0].clone()
}

fn attachment_names(checkpoint: &Value) -> Vec<String> {
    checkpoint["attachments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap().to_string())
        .collect()
}

fn hooks_log(repo: &Repo) -> String {
    std::fs::read_to_string(repo.git_dir().join("checkpoint/hooks.log")).unwrap_or_default()
}

fn kept_transcripts() -> Repo {
    let repo = Repo::new();
    repo.write("a.txt", b"a\n");
    repo.git(&["config", "checkpoint.keepTranscripts", "true"]);
    repo
}

fn write_in_home(repo: &Repo, rel: &str, data: &[u8]) -> PathBuf {
    let path = repo.home().join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, data).unwrap();
    path
}

/// Each agent's own transcript is attached; a file anywhere else named as its transcript
/// (a private key, a file of another agent's directory) is not, and the hooks log says
/// why.
#[test]
fn only_a_transcript_in_the_agents_own_directory_is_attached() {
    let repo = kept_transcripts();
    let secret = write_in_home(&repo, ".ssh/id_rsa", b"-----BEGIN PRIVATE KEY-----\n");
    for (agent, dir) in AGENTS {
        let own = write_in_home(&repo, &format!("{dir}/{agent}-session.jsonl"), b"{}\n");
        let checkpoint = prompt(&repo, agent, &own);
        assert_eq!(
            attachment_names(&checkpoint),
            [format!("{agent}-session.jsonl")],
            "{agent}: its own transcript is attached"
        );
        let checkpoint = prompt(&repo, agent, &secret);
        assert!(
            attachment_names(&checkpoint).is_empty(),
            "{agent}: {} was attached as a transcript",
            secret.display()
        );
        assert!(
            checkpoint["meta"]["transcript_bytes"].is_null(),
            "{agent}: the size of a file outside its transcripts was recorded: {checkpoint:#}"
        );
    }
    // Claude's transcript directory is not Codex's.
    let claude_own = repo
        .home()
        .join(".claude/projects/-repo/claude-session.jsonl");
    let checkpoint = prompt(&repo, "codex", &claude_own);
    assert!(attachment_names(&checkpoint).is_empty(), "{checkpoint:#}");
    let log = hooks_log(&repo);
    assert!(
        log.contains("id_rsa") && log.contains("transcript"),
        "the hooks log says why the transcript was left out: {log}"
    );
}

/// The first prompt of a session arrives before the agent has written its transcript
/// (Claude Code creates it after `UserPromptSubmit`; issue 40, finding 4): the
/// conversation is then 0 bytes long, and `transcript_bytes` says so, for every agent,
/// as it does for a transcript that exists. A path that is not the agent's own is still
/// not measured, whether it exists or not, and a missing one is never attached.
#[test]
fn a_transcript_not_written_yet_is_recorded_as_0_bytes() {
    let repo = kept_transcripts();
    for (agent, dir) in AGENTS {
        let not_yet = repo
            .home()
            .join(format!("{dir}/not-yet/{agent}-session.jsonl"));
        let checkpoint = prompt(&repo, agent, &not_yet);
        assert_eq!(
            checkpoint["meta"]["transcript_bytes"], "0",
            "{agent}: a transcript not written yet is 0 bytes: {checkpoint:#}"
        );
        assert!(attachment_names(&checkpoint).is_empty(), "{checkpoint:#}");
        let elsewhere = repo.home().join(format!("elsewhere/{agent}-session.jsonl"));
        let escaping = repo.home().join(format!(
            "{dir}/not-yet/../../../../../elsewhere/{agent}.jsonl"
        ));
        for outside in [elsewhere, escaping] {
            let checkpoint = prompt(&repo, agent, &outside);
            assert!(
                checkpoint["meta"]["transcript_bytes"].is_null(),
                "{agent}: {} is no transcript of its own: {checkpoint:#}",
                outside.display()
            );
        }
    }
}

/// Files of the system, a symlink from the transcript directory to a secret, and a FIFO
/// in it: none is attached, and the hook neither hangs nor fails.
#[test]
fn system_files_symlinks_and_fifos_are_never_attached() {
    let repo = kept_transcripts();
    let dir = repo.home().join(".claude/projects/-repo");
    std::fs::create_dir_all(&dir).unwrap();
    let secret = write_in_home(
        &repo,
        ".ssh/id_ed25519",
        b"-----BEGIN OPENSSH PRIVATE KEY-----\n",
    );
    let link = dir.join("linked.jsonl");
    std::os::unix::fs::symlink(&secret, &link).unwrap();
    let fifo = dir.join("fifo.jsonl");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    // The transcript directory itself a symlink to a directory holding secrets.
    std::fs::create_dir_all(repo.home().join(".claude/projects")).unwrap();
    std::os::unix::fs::symlink(repo.home().join(".ssh"), dir.join("sub")).unwrap();
    let through_dir = dir.join("sub/id_ed25519");
    for transcript in [
        PathBuf::from("/proc/self/environ"),
        PathBuf::from("/etc/passwd"),
        link,
        fifo,
        through_dir,
    ] {
        let checkpoint = prompt(&repo, "claude", &transcript);
        assert!(
            attachment_names(&checkpoint).is_empty(),
            "{} was attached as a transcript: {checkpoint:#}",
            transcript.display()
        );
    }
}

/// A 4 GiB sparse transcript in the right place is left out for its size without being
/// read: the hook process never holds more than a small fraction of it in memory, and the
/// checkpoint is made.
#[test]
fn a_huge_sparse_transcript_is_left_out_without_being_read() {
    let repo = kept_transcripts();
    let path = repo.home().join(".claude/projects/-repo/huge.jsonl");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let file = std::fs::File::create(&path).unwrap();
    file.set_len(4 << 30).unwrap();
    drop(file);
    let before = repo.log_json(false).len();
    let payload = prompt_payload(&repo, "claude", &path);
    let peak = hook_peak_rss(&repo, "claude", payload.to_string().as_bytes());
    assert!(
        peak < 256 << 20,
        "the hook reached {} MiB of memory on a 4 GiB transcript",
        peak >> 20
    );
    let log = repo.log_json(false);
    assert_eq!(log.len(), before + 1, "the checkpoint is made");
    assert!(attachment_names(&log[0]).is_empty(), "{:#}", log[0]);
    assert!(
        hooks_log(&repo).contains("huge.jsonl"),
        "the hooks log names the transcript left out: {}",
        hooks_log(&repo)
    );
}

/// A transcript within the limit is attached whole, byte for byte.
#[test]
fn a_transcript_under_the_limit_is_attached_exactly() {
    let repo = kept_transcripts();
    repo.git(&["config", "checkpoint.maxFileSize", "4m"]);
    let content = common::pseudo_random(3 << 20, 4);
    let path = write_in_home(&repo, ".claude/projects/-repo/big.jsonl", &content);
    let checkpoint = prompt(&repo, "claude", &path);
    assert_eq!(attachment_names(&checkpoint), ["big.jsonl"]);
    let copy = repo.ok(&["attachment", "@", "big.jsonl"]).stdout_raw;
    assert!(copy == content, "the attachment is the transcript exactly");
    // One byte over the limit: left out.
    let over = write_in_home(
        &repo,
        ".claude/projects/-repo/over.jsonl",
        &vec![b'x'; (4 << 20) + 1],
    );
    let checkpoint = prompt(&repo, "claude", &over);
    assert!(attachment_names(&checkpoint).is_empty(), "{checkpoint:#}");
}

/// The hook's peak resident memory in bytes (see [`common::run_measuring_peak`]).
fn hook_peak_rss(repo: &Repo, agent: &str, input: &[u8]) -> u64 {
    let cmd = repo.sb.bin_cmd(&repo.dir, &["hooks", "run", agent]);
    let (out, peak) = common::run_measuring_peak(cmd, Some(input));
    assert_eq!(out.code, 0, "the hook failed: {out}");
    peak
}
