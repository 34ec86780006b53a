//! The real Gemini CLI (`@google/gemini-cli`, the version in
//! `tests/agents_real/package.json`) through the scripted session of
//! `common::real_agent`, against a scripted Gemini API (`:streamGenerateContent`):
//! hooks and MCP server installed the documented way, the folder trusted in
//! `~/.gemini/trustedFolders.json` (without it a headless run refuses to start),
//! `gemini -p` per prompt, the session resumed between them.

use crate::common;
use common::real_agent::{
    between_prompts, check_session, client, report_latencies, run_client, Client, ModelServer,
    Tools, PROMPTS,
};
use common::Repo;

const SESSION: &str = "b81e03aa-5c2d-4e6f-8a7b-9c0d1e2f3a4b";

const TOOLS: Tools = Tools {
    agent: "gemini",
    write: "write_file",
    shell: "run_shell_command",
    edit: "replace",
    mcp_list: "mcp_checkpoint_list_checkpoints",
    mcp_revert: "mcp_checkpoint_revert",
};

/// Trusts the worktree and picks the API-key login, as a user does once.
fn configure(repo: &Repo) {
    let gemini = repo.home().join(".gemini");
    std::fs::create_dir_all(&gemini).unwrap();
    let trusted = serde_json::json!({ repo.dir.to_str().unwrap(): "TRUST_FOLDER" });
    std::fs::write(gemini.join("trustedFolders.json"), trusted.to_string()).unwrap();
    let settings = serde_json::json!({"security": {"auth": {"selectedType": "gemini-api-key"}}});
    std::fs::write(gemini.join("settings.json"), settings.to_string()).unwrap();
}

/// Runs prompt `text`, starting or resuming the session; returns what Gemini CLI wrote
/// on stderr (with `--debug`, each hook event's run and its duration).
fn prompt(repo: &Repo, gemini: &Client, server: &ModelServer, text: &str, resume: bool) -> String {
    let session = if resume { "--resume" } else { "--session-id" };
    let args = [
        "-p",
        text,
        session,
        SESSION,
        "--approval-mode",
        "yolo",
        "--output-format",
        "stream-json",
        "--debug",
    ];
    let env = [
        ("GOOGLE_GEMINI_BASE_URL", server.url.as_str()),
        ("GEMINI_API_KEY", "scripted"),
    ];
    run_client(repo, server, &repo.dir, &gemini.program, &args, &env).stderr
}

/// The durations Gemini CLI's debug output gives each hook event's run.
fn hook_latencies(log: &str) -> Vec<i64> {
    log.lines()
        .filter(|line| line.starts_with("Hook execution for "))
        .filter_map(|line| {
            let ms = line.rsplit("total duration: ").next()?;
            ms.trim().trim_end_matches("ms").parse().ok()
        })
        .collect()
}

#[test]
fn gemini_cli_session_is_recorded_prompt_by_prompt_with_its_mcp_revert() {
    let Some(gemini) = client("gemini") else {
        return;
    };
    let repo = Repo::new();
    repo.write("README.md", b"# project\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-qm", "the project"]);
    configure(&repo);
    repo.ok(&["hooks", "install", "gemini"]);
    repo.ok(&["mcp", "install", "gemini"]);
    let server = ModelServer::start(&repo, "gemini", &repo.dir, Some(SESSION));
    let mut log = String::new();
    for (n, text) in PROMPTS.iter().enumerate() {
        log.push_str(&prompt(&repo, &gemini, &server, text, n > 0));
        between_prompts(&repo, n + 1);
    }
    check_session(&repo, &TOOLS, SESSION);

    let latencies = hook_latencies(&log);
    report_latencies("Gemini CLI", &gemini.version, &latencies);
    assert!(latencies.len() >= 12, "{latencies:?}\n{log}");
}
