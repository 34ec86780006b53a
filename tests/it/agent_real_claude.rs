//! The real Claude Code (`@anthropic-ai/claude-code`, the version in
//! `tests/agents_real/package.json`) through the scripted session of
//! `common::real_agent`, against a scripted Anthropic Messages API: hooks and MCP server
//! installed the documented way, `claude -p` per prompt, the session resumed between them.

use std::path::Path;

use crate::common;
use common::real_agent::{
    between_prompts, check_session, client, report_latencies, run_client, timed_pairs, Client,
    ModelServer, Tools, PROMPTS,
};
use common::Repo;

const SESSION: &str = "4f2a9c1d-7b3e-4c55-9a0e-2d6f1b8c3e90";

const TOOLS: Tools = Tools {
    agent: "claude",
    write: "Write",
    shell: "Bash",
    edit: "Edit",
    mcp_list: "mcp__checkpoint__list_checkpoints",
    mcp_revert: "mcp__checkpoint__revert",
};

/// A worktree with a committed file and a package folder, `src/`.
fn project() -> Repo {
    let repo = Repo::new();
    repo.write("README.md", b"# project\n");
    repo.write("src/main.rs", b"fn main() {}\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-qm", "the project"]);
    repo
}

/// Runs prompt `text` in `dir`, starting the session or resuming it; the debug log
/// (`--debug-file`, at the verbose level that names each hook run) goes to `debug`.
fn prompt(
    repo: &Repo,
    claude: &Client,
    server: &ModelServer,
    dir: &Path,
    text: &str,
    resume: bool,
    debug: &Path,
) {
    let session = if resume { "--resume" } else { "--session-id" };
    let debug = debug.to_str().unwrap();
    let args = [
        "-p",
        text,
        session,
        SESSION,
        // What the session may do without asking, as a user allows it.
        "--allowedTools",
        "Bash,Edit,Write,Read,mcp__checkpoint",
        "--output-format",
        "stream-json",
        "--verbose",
        "--include-hook-events",
        "--debug-file",
        debug,
    ];
    let env = [
        ("ANTHROPIC_BASE_URL", server.url.as_str()),
        ("ANTHROPIC_API_KEY", "sk-ant-scripted"),
        ("CLAUDE_CODE_MAX_RETRIES", "0"),
        ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
        ("CLAUDE_CODE_DEBUG_LOG_LEVEL", "verbose"),
    ];
    run_client(repo, server, dir, &claude.program, &args, &env);
}

/// The hook runs of Claude Code's debug logs in `dir`, timed from the line that says
/// which hooks matched to the line that reads the hook's output.
fn hook_latencies(dir: &Path) -> Vec<i64> {
    let mut all = Vec::new();
    // Claude Code adds a `latest` link to the newest log there: read each log once.
    let mut logs: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().starts_with("prompt"))
        .collect();
    logs.sort_by_key(|entry| entry.file_name());
    for entry in logs {
        let log = std::fs::read_to_string(entry.path()).unwrap();
        let matched: String = log
            .lines()
            .filter(|line| !line.contains("Matched 0 unique hooks"))
            .collect::<Vec<_>>()
            .join("\n");
        all.extend(timed_pairs(
            &matched,
            "unique hooks for query",
            "Hook output",
        ));
    }
    all
}

#[test]
fn claude_code_session_is_recorded_prompt_by_prompt_with_its_mcp_revert() {
    let Some(claude) = client("claude") else {
        return;
    };
    let repo = project();
    repo.ok(&["hooks", "install", "claude"]);
    repo.ok(&["mcp", "install", "claude"]);
    let server = ModelServer::start(&repo, "claude", &repo.dir, Some(SESSION));
    let debug = repo.scratch("claude-debug");
    for (n, text) in PROMPTS.iter().enumerate() {
        let log = debug.join(format!("prompt{}.log", n + 1));
        prompt(&repo, &claude, &server, &repo.dir, text, n > 0, &log);
        between_prompts(&repo, n + 1);
    }
    check_session(&repo, &TOOLS, SESSION);

    // Each prompt runs UserPromptSubmit, each tool call but Read PostToolUse, and the
    // shell and MCP calls PreToolUse as well.
    let latencies = hook_latencies(&debug);
    report_latencies("Claude Code", &claude.version, &latencies);
    assert!(latencies.len() >= 12, "{latencies:?}");
}

/// Claude Code started in a subdirectory reads that directory's `.claude/` only (issue
/// 40, finding 1): hooks installed from there record its session; the top's hooks
/// would not have.
#[test]
fn claude_code_started_in_a_subdirectory_runs_the_hooks_installed_there() {
    let Some(claude) = client("claude") else {
        return;
    };
    let repo = project();
    let src = repo.p("src");
    repo.sb.ok_in(&src, &["hooks", "install", "claude"]);
    repo.ok(&["mcp", "install", "claude"]);
    let server = ModelServer::start(&repo, "claude", &src, Some(SESSION));
    let debug = repo.scratch("claude-debug").join("prompt1.log");
    prompt(&repo, &claude, &server, &src, PROMPTS[0], false, &debug);
    assert_eq!(repo.read_string("src/hello.txt").lines().count(), 4);
    let log = repo.log_json(true);
    common::checkpoint_with(
        &log,
        &[("session", SESSION), ("prompt", "1"), ("kind", "prompt")],
    );
    let write = common::checkpoint_with(&log, &[("session", SESSION), ("tool", "Write")]);
    assert_eq!(write["meta"]["path"], "src/hello.txt", "{write:#}");
}
