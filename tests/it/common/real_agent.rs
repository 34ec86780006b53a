//! The real agent programs in the test suite (issue 40): Claude Code, Codex CLI and
//! Gemini CLI, as `.ci/run` installs them with npm (the versions pinned in
//! `tests/agents_real/package.json` and its lock file), each driven through one fixed
//! session by a scripted model API on 127.0.0.1 (`tests/agents_real/model_server.py`
//! and its `scripts/<agent>.json`). The client runs its own tools, fires its own hooks
//! and calls our MCP server as it does for a user; the tests install both the documented
//! way and check with our own commands what was recorded.
//!
//! The session, the same for every client, each prompt run non-interactively and the
//! session resumed between them:
//! 1. the agent's write tool creates `hello.txt`;
//! 2. one shell call runs `sed -i` on it and `echo … > notes.txt`;
//! 3. the agent's edit tool changes its first line;
//! 4. our MCP tools: `list_checkpoints`, then `revert` of the session's turn 2.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::str::FromStr;
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

use super::{
    checkpoint_with, only_session, path_with_bin, run_cmd, skip_only_if_allowed, Out, Repo,
};

/// The four prompts; the scripted model knows each by its "Prompt N:" start.
pub const PROMPTS: [&str; 4] = [
    "Prompt 1: create hello.txt",
    "Prompt 2: fix the greeting and take a note",
    "Prompt 3: say goodbye instead of hello",
    "Prompt 4: undo your second turn with the checkpoint tools",
];

/// `hello.txt` as prompt 1 writes it, and as `restore <session>:prompt2 --only-session`
/// puts it back.
pub const HELLO_PROMPT1: &str = "hello\nfrom the scripted model\nand the real client\nworld\n";

/// The file the user writes between prompts 2 and 3, which no restore of the session's
/// may touch.
pub const USER_FILE: (&str, &str) = ("TODO.md", "the user's own note, written between prompts\n");

/// What the user does after prompt `n` (1-based) finished, before the next one: after
/// prompt 2 (its shell call), a file of their own.
pub fn between_prompts(repo: &Repo, n: usize) {
    if n == 2 {
        repo.write(USER_FILE.0, USER_FILE.1.as_bytes());
    }
}

/// `hello.txt` as the session leaves it: prompt 3's first line, prompt 1's middle, and
/// the last line prompt 2 changed, back as it was after the agent's MCP revert of turn 2.
pub const HELLO_AFTER: &str = "goodbye\nfrom the scripted model\nand the real client\nworld\n";

/// How long one prompt may take: the clients start in a second or a few, and the
/// scripted model answers at once, but the whole test suite runs beside them.
const PROMPT_TIMEOUT: Duration = Duration::from_secs(180);

/// `tests/agents_real/` of the source tree.
pub fn agents_real_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/agents_real")
}

/// One installed client program.
pub struct Client {
    /// The program (`node_modules/.bin/<name>`).
    pub program: PathBuf,
    /// What its `--version` prints.
    pub version: String,
}

/// The client `name` (`claude`, `codex`, `gemini`) from the npm packages `.ci/run`
/// installs into `target/agents-npm` (`GIT_CHECKPOINT_AGENTS_NPM` names another folder).
/// `None` when it is not installed or does not run: the test then fails, saying so,
/// unless `GIT_CHECKPOINT_TEST_SKIP_AGENT_<NAME>` gives the reason it is skipped
/// (`.ci/run` sets it for a client that could not be installed).
pub fn client(name: &str) -> Option<Client> {
    let npm = std::env::var_os("GIT_CHECKPOINT_AGENTS_NPM")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/agents-npm"));
    let program = npm.join("node_modules/.bin").join(name);
    let skip = format!("AGENT_{}", name.to_uppercase());
    let mut command = Command::new(&program);
    command.arg("--version").stdin(Stdio::null());
    match command.output() {
        Ok(out) if out.status.success() => Some(Client {
            program,
            version: String::from_utf8_lossy(&out.stdout).trim().to_string(),
        }),
        Ok(out) => {
            let why = format!(
                "{} --version failed ({}): {}",
                program.display(),
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
            skip_only_if_allowed(&skip, &why);
            None
        }
        Err(e) => {
            skip_only_if_allowed(
                &skip,
                &format!(
                    "{} is not installed ({e}); tests/agents_real/install.sh installs it",
                    program.display()
                ),
            );
            None
        }
    }
}

/// The scripted model API, serving one test on 127.0.0.1; stopped when dropped (and by
/// itself when no request came for two minutes).
pub struct ModelServer {
    child: Child,
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    /// Every request and answer, one JSON line each.
    pub log: PathBuf,
}

impl ModelServer {
    /// Starts the model of `scripts/<script>.json`, which names files from `root`;
    /// `session` fills in `{session}` where the client's requests do not carry it.
    pub fn start(repo: &Repo, script: &str, root: &Path, session: Option<&str>) -> ModelServer {
        let dir = agents_real_dir();
        let log = repo.scratch("model").join(format!("{script}.jsonl"));
        let mut command = Command::new("python3");
        command
            .arg(dir.join("model_server.py"))
            .arg("--script")
            .arg(dir.join("scripts").join(format!("{script}.json")))
            .arg("--root")
            .arg(root)
            .arg("--log")
            .arg(&log)
            .args(["--idle-exit", "120"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        if let Some(session) = session {
            command.args(["--session", session]);
        }
        let mut child = command.spawn().expect("start the scripted model");
        let stdout = child.stdout.take().expect("its stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx.recv_timeout(Duration::from_secs(30)).unwrap_or_default();
        let Some(port) = line.trim().strip_prefix("PORT ") else {
            let _ = child.kill();
            panic!("the scripted model did not start: {line:?}");
        };
        ModelServer {
            url: format!("http://127.0.0.1:{port}"),
            child,
            log,
        }
    }

    /// What the client asked and the model answered, for a failure message.
    pub fn requests(&self) -> String {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        log.lines()
            .filter(|line| !line.starts_with("{\"path\""))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs the client `program` with `args` in `dir` as a user would: the sandbox's HOME
/// and git setup, a PATH where `git checkpoint` (the binary under test) and node are
/// found, no proxy between it and 127.0.0.1, and `env`. Fails, with everything it printed
/// and what the model was asked, unless it exits 0.
#[track_caller]
pub fn run_client(
    repo: &Repo,
    server: &ModelServer,
    dir: &Path,
    program: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> Out {
    let out = run_cmd(
        client_command(repo, dir, program, args, env),
        PROMPT_TIMEOUT,
    );
    assert_eq!(
        out.code,
        0,
        "{} {args:?} failed\n{out}\nthe model's answers:\n{}",
        program.display(),
        server.requests()
    );
    out
}

/// The command [`run_client`] runs.
pub fn client_command(
    repo: &Repo,
    dir: &Path,
    program: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> Command {
    let mut command = Command::new(program);
    repo.sb.isolate(&mut command);
    for proxy in [
        "http_proxy",
        "https_proxy",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
    ] {
        command.env_remove(proxy);
    }
    command
        .current_dir(dir)
        .args(args)
        .env("PATH", path_with_bin())
        .env("NO_PROXY", "127.0.0.1,localhost")
        .env("no_proxy", "127.0.0.1,localhost");
    for (key, value) in env {
        command.env(key, value);
    }
    command
}

/// The tools one client calls in the session, as its hooks name them.
pub struct Tools {
    /// The agent, as `hooks run <agent>` records it.
    pub agent: &'static str,
    /// Prompt 1's tool, which creates `hello.txt`.
    pub write: &'static str,
    /// Prompt 2's shell tool.
    pub shell: &'static str,
    /// Prompt 3's edit tool.
    pub edit: &'static str,
    /// Our MCP tool `list_checkpoints`, as the client names it.
    pub mcp_list: &'static str,
    /// Our MCP tool `revert`, as the client names it.
    pub mcp_revert: &'static str,
}

/// Checks with our own commands what the hooks recorded of the session `session`: one
/// session of four numbered prompts, a checkpoint for each tool call under its prompt
/// (the MCP calls too), each turn's changes, blame of `hello.txt` by prompt, the
/// worktree the agent's MCP revert left, which is a checkpoint of its own filed under
/// the call and a step of turn 4, the revert of turn 4 that undoes the agent's own
/// undo (itself undone), and `restore --only-session` to prompt 2, which takes back
/// exactly the session's files (its shell call's and MCP calls' included, each
/// bracketed by the hooks before and after it, the MCP revert's own checkpoint inside
/// the pair) and leaves the user's own files alone, with nothing "unsure".
#[track_caller]
pub fn check_session(repo: &Repo, tools: &Tools, session: &str) {
    let short = only_session(repo, tools.agent, session, 4, PROMPTS[0]);
    let log = repo.log_json(true);
    for n in 1..=4 {
        let prompt = n.to_string();
        checkpoint_with(
            &log,
            &[
                ("session", session),
                ("prompt", &prompt),
                ("kind", "prompt"),
            ],
        );
    }
    for (prompt, tool, path) in [
        ("1", tools.write, Some("hello.txt")),
        ("2", tools.shell, Some("hello.txt")),
        ("3", tools.edit, Some("hello.txt")),
        ("4", tools.mcp_list, None),
        ("4", tools.mcp_revert, Some("hello.txt")),
    ] {
        let step = checkpoint_with(
            &log,
            &[
                ("session", session),
                ("prompt", prompt),
                ("tool", tool),
                ("kind", "tool"),
            ],
        );
        if let Some(path) = path {
            assert_eq!(step["meta"]["path"], path, "{step:#}");
        }
    }
    // The shell call and the MCP calls, which name no file they change, have a
    // checkpoint just before them too.
    for (prompt, tool) in [
        ("2", tools.shell),
        ("4", tools.mcp_list),
        ("4", tools.mcp_revert),
    ] {
        checkpoint_with(
            &log,
            &[
                ("session", session),
                ("prompt", prompt),
                ("tool", tool),
                ("kind", "before-tool"),
            ],
        );
    }

    let turn = |n: u32| repo.ok(&["diff", &format!("{short}:turn{n}")]).stdout;
    let expected: [(u32, &[&str]); 4] = [
        (1, &["+hello", "+world"]),
        (2, &["-world", "+there", "+remember the milk"]),
        (3, &["-hello", "+goodbye"]),
        // The agent's own MCP revert of turn 2 is a step of turn 4 (issue 40, finding 2).
        (4, &["-there", "+world", "-remember the milk"]),
    ];
    for (n, lines) in expected {
        let diff = turn(n);
        for line in lines {
            assert!(
                diff.lines().any(|l| l == *line),
                "turn {n} should show {line:?}:\n{diff}"
            );
        }
    }

    assert_eq!(repo.read_string("hello.txt"), HELLO_AFTER);
    assert!(!repo.exists("notes.txt"), "the revert of turn 2 deleted it");
    let blame = repo.json(&["blame", "--json", "hello.txt"]);
    let prompts: Vec<&Value> = blame
        .as_array()
        .unwrap()
        .iter()
        .map(|line| &line["prompt"])
        .collect();
    assert_eq!(prompts, [3, 1, 1, 4], "blame by prompt: {blame:#}");

    // The agent's MCP revert is a checkpoint of its own, which the hook after the call
    // files under the call: its step spans it.
    let revert = checkpoint_with(&log, &[("kind", "revert")]);
    assert!(
        revert["meta"]["revision"]
            .as_str()
            .is_some_and(|rev| rev.ends_with(":turn2")),
        "{revert:#}"
    );
    assert!(revert["meta"]["session"].is_null(), "{revert:#}");
    let call = checkpoint_with(
        &log,
        &[
            ("session", session),
            ("tool", tools.mcp_revert),
            ("kind", "tool"),
        ],
    );
    assert_eq!(call["meta"]["made_checkpoint"], revert["id"], "{call:#}");
    assert_eq!(repo.json(&["status", "--json"])["clean"], true);

    // The agent's own undo is undone by turn: turn 4 was the revert of turn 2. The
    // user's own edit after the session stays through it, and through its undo.
    repo.write("README.md", b"# the user's own line\n");
    repo.ok(&["revert", &format!("{short}:turn4")]);
    assert_eq!(
        repo.read_string("hello.txt"),
        "goodbye\nfrom the scripted model\nand the real client\nthere\n"
    );
    assert_eq!(repo.read_string("notes.txt"), "remember the milk\n");
    assert_eq!(repo.read_string("README.md"), "# the user's own line\n");
    repo.ok(&["undo"]);
    assert_eq!(repo.read_string("hello.txt"), HELLO_AFTER);
    assert!(
        !repo.exists("notes.txt"),
        "the undo of the revert deleted it again"
    );
    assert_eq!(repo.read_string("README.md"), "# the user's own line\n");

    // The user's own edits, between prompts and after the session, are not the
    // session's to take back; everything the session changed since prompt 2 is, surely.
    let rev = format!("{short}:prompt2");
    let plan = repo.json(&["restore", &rev, "--only-session", "--dry-run", "--json"]);
    assert_eq!(plan["conflicts"], serde_json::json!([]), "{plan:#}");
    let restore = repo.ok(&["restore", &rev, "--only-session"]);
    assert!(!restore.stdout.contains("Left"), "{restore}");
    assert_eq!(repo.read_string("hello.txt"), HELLO_PROMPT1, "{restore}");
    assert!(!repo.exists("notes.txt"), "{restore}");
    assert_eq!(repo.read_string(USER_FILE.0), USER_FILE.1);
    assert_eq!(repo.read_string("README.md"), "# the user's own line\n");
}

/// The durations, in milliseconds, of the hook runs between each line holding `start`
/// and the next line holding `end` of a client's log, each line starting with an RFC 3339
/// time: how long each hook took as the client saw it.
pub fn timed_pairs(log: &str, start: &str, end: &str) -> Vec<i64> {
    let time = |line: &str| {
        let stamp = line.split_whitespace().next()?;
        let stamp = stamp.trim_start_matches('[').trim_end_matches(']');
        jiff::Timestamp::from_str(stamp).ok()
    };
    let mut started = None;
    let mut durations = Vec::new();
    for line in log.lines() {
        if line.contains(start) {
            started = time(line);
        } else if line.contains(end) {
            if let (Some(from), Some(to)) = (started.take(), time(line)) {
                durations.push((to - from).total(jiff::Unit::Millisecond).unwrap_or(0.0) as i64);
            }
        }
    }
    durations
}

/// Prints the hook latencies a client reported, for the test's output and the notes.
pub fn report_latencies(client: &str, version: &str, durations: &[i64]) {
    let mut sorted = durations.to_vec();
    sorted.sort_unstable();
    eprintln!(
        "{client} {version}: {} hook runs as the client timed them, {}–{} ms (median {} ms): {durations:?}",
        durations.len(),
        sorted.first().unwrap_or(&0),
        sorted.last().unwrap_or(&0),
        sorted.get(sorted.len() / 2).unwrap_or(&0),
    );
}
