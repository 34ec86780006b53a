//! The real Codex CLI (`@openai/codex`, the version in `tests/agents_real/package.json`)
//! through the scripted session of `common::real_agent`, against a scripted OpenAI
//! Responses API (a custom model provider in `$CODEX_HOME/config.toml`): hooks and MCP
//! server installed the documented way, the hooks trusted as docs/agents.md says (the
//! review Codex's own terminal UI shows), `codex exec` per prompt and
//! `codex exec resume` after the first.

use std::time::{Duration, Instant};

use crate::common;
use common::real_agent::{
    between_prompts, check_session, client, client_command, report_latencies, run_client,
    timed_pairs, Client, ModelServer, Tools, PROMPTS,
};
use common::tmux::Tmux;
use common::Repo;

const TOOLS: Tools = Tools {
    agent: "codex",
    write: "apply_patch",
    shell: "Bash",
    edit: "apply_patch",
    mcp_list: "mcp__checkpoint__list_checkpoints",
    mcp_revert: "mcp__checkpoint__revert",
};

/// Codex's log lines for each hook it starts and finishes, with their times.
const HOOK_LOG: &str = "codex_app_server::outgoing_message=trace";

/// A trusted project whose model is the scripted one. `gpt-5.5` is a model Codex knows
/// (it gets Codex's file-edit tool, `apply_patch`, and reaches MCP tools through its
/// `tool_search`); the provider sends it to `server`.
fn configure(repo: &Repo, server: &ModelServer) {
    let config = format!(
        "model = \"gpt-5.5\"\nmodel_provider = \"scripted\"\n\n\
         [model_providers.scripted]\nname = \"Scripted\"\nbase_url = \"{}/v1\"\n\
         wire_api = \"responses\"\n\n[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
        server.url,
        repo.dir.display()
    );
    let home = repo.home().join(".codex");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::write(home.join("config.toml"), config).unwrap();
}

fn codex_env(repo: &Repo) -> Vec<(&'static str, String)> {
    vec![
        (
            "CODEX_HOME",
            repo.home().join(".codex").display().to_string(),
        ),
        ("OPENAI_API_KEY", "sk-scripted".to_string()),
        ("RUST_LOG", HOOK_LOG.to_string()),
    ]
}

/// Runs prompt `text` (resuming `thread` when given); returns the thread id and what
/// Codex logged on stderr.
fn prompt(
    repo: &Repo,
    codex: &Client,
    server: &ModelServer,
    text: &str,
    thread: Option<&str>,
) -> (String, String) {
    let mut args = vec![
        "exec",
        "--json",
        "--dangerously-bypass-approvals-and-sandbox",
    ];
    if let Some(thread) = thread {
        args.extend(["resume", thread]);
    }
    args.push(text);
    let env = codex_env(repo);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let out = run_client(repo, server, &repo.dir, &codex.program, &args, &env);
    let thread = out
        .stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .find_map(|event| event["thread_id"].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("no thread id in {out}"));
    (thread, out.stderr)
}

/// Trusts the hooks as docs/agents.md says: start `codex` in the worktree and choose
/// "Trust all and continue" where it says "Hooks need review". Returns once Codex wrote
/// the trust of each of our hooks to its config.
fn trust_in_codex_ui(repo: &Repo, codex: &Client) {
    let env = codex_env(repo);
    let path = common::path_with_bin();
    let mut vars: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    vars.push(("PATH", &path));
    let tmux = Tmux::start(repo, &vars);
    tmux.type_text(&format!("{} ; exit", codex.program.display()));
    tmux.press("Enter");
    tmux.wait_for("Hooks need review");
    tmux.wait_for("Trust all and continue");
    tmux.type_text("2");
    tmux.press("Enter");
    let config = repo.home().join(".codex/config.toml");
    let hooks = repo.p(".codex/hooks.json").display().to_string();
    let start = Instant::now();
    let mut chosen = Instant::now();
    loop {
        // Keys typed while the menu is drawn but before Codex reads them are lost (seen
        // once on CI): while the menu stays, choose again every few seconds.
        if chosen.elapsed() > Duration::from_secs(3)
            && tmux.screen().contains("Trust all and continue")
        {
            tmux.type_text("2");
            tmux.press("Enter");
            chosen = Instant::now();
        }
        let text = std::fs::read_to_string(&config).unwrap_or_default();
        let trusted = ["user_prompt_submit", "pre_tool_use", "post_tool_use"]
            .iter()
            .all(|event| text.contains(&format!("{hooks}:{event}:0:0")));
        if trusted {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "Codex wrote no trust of our hooks\n{text}\nthe screen:\n{}",
            tmux.screen()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn codex_session_is_recorded_prompt_by_prompt_with_its_mcp_revert() {
    let Some(codex) = client("codex") else {
        return;
    };
    let repo = Repo::new();
    repo.write("README.md", b"# project\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-qm", "the project"]);
    // Codex's thread id is the session; the model learns it from the request headers.
    let server = ModelServer::start(&repo, "codex", &repo.dir, None);
    configure(&repo, &server);
    let install = repo.ok(&["hooks", "install", "codex"]);
    assert!(
        install
            .stderr
            .contains("Codex CLI runs these hooks only once you trust them"),
        "{install}"
    );
    repo.ok(&["mcp", "install", "codex"]);

    // Untrusted, `codex exec` runs no hook and says nothing of it (finding 3).
    let before = repo.log_json(true).len();
    let _ = run_cmd_quiet(&repo, &codex, "Prompt 0: nothing yet");
    assert_eq!(repo.log_json(true).len(), before, "untrusted hooks ran");

    trust_in_codex_ui(&repo, &codex);
    // Our check reads the trust Codex wrote (path and hash) as Codex does.
    let mut install = repo.sb.bin_cmd(&repo.dir, &["hooks", "install", "codex"]);
    install.env("PATH", common::path_with_bin());
    let again = common::run_cmd(install, common::DEFAULT_TIMEOUT);
    assert_eq!(again.code, 0, "{again}");
    assert!(!again.stderr.contains("warning"), "{again}");

    let mut thread = None;
    let mut log = String::new();
    for (n, text) in PROMPTS.iter().enumerate() {
        let (id, stderr) = prompt(&repo, &codex, &server, text, thread.as_deref());
        log.push_str(&stderr);
        thread = Some(id);
        between_prompts(&repo, n + 1);
    }
    let thread = thread.unwrap();
    // Prompt 3's patch updates hello.txt and adds bye.txt: its checkpoint names both, so
    // the restore in check_session takes bye.txt away too, with nothing unsure.
    let checkpoints = repo.log_json(true);
    let patch = common::checkpoint_with(
        &checkpoints,
        &[("prompt", "3"), ("tool", "apply_patch"), ("kind", "tool")],
    );
    assert_eq!(
        patch["meta"]["named_paths"], r#"["hello.txt","bye.txt"]"#,
        "{patch:#}"
    );
    check_session(&repo, &TOOLS, &thread);
    assert!(!repo.exists("bye.txt"));

    let latencies = timed_pairs(
        &log,
        "app-server event: hook/started",
        "app-server event: hook/completed",
    );
    report_latencies("Codex CLI", &codex.version, &latencies);
    assert!(latencies.len() >= 12, "{latencies:?}");
}

/// One `codex exec` whose session is not looked at.
fn run_cmd_quiet(repo: &Repo, codex: &Client, text: &str) -> common::Out {
    let env = codex_env(repo);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let args = [
        "exec",
        "--json",
        "--dangerously-bypass-approvals-and-sandbox",
        text,
    ];
    let out = common::run_cmd(
        client_command(repo, &repo.dir, &codex.program, &args, &env),
        Duration::from_secs(180),
    );
    assert_eq!(out.code, 0, "{out}");
    out
}
