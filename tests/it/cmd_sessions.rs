//! `sessions`: one line (or JSON record) per agent session the hooks saved checkpoints
//! for, the most recently active first, with its agent, a short id that names it alone,
//! its prompts, checkpoints, times and first prompt.

use crate::common;
use common::{agent_fixture, run_cmd_with_input, Repo, DEFAULT_TIMEOUT};
use serde_json::{json, Value};

/// A Claude Code session that ran only tool calls here (its hooks installed mid-session).
const EARLIER: &str = "4f2a9c1d-77aa-4b0c-8d9e-0f1a2b3c4d5e";
/// A Claude Code session whose id shares its first nine characters with [`EARLIER`].
const CLAUDE: &str = "4f2a9c1d-5e6f-4a0b-9c8d-7e6f5a4b3c2d";
/// The Codex session of `tests/fixtures/agents/codex/`.
const CODEX: &str = "019a6f3e-8c2d-7b40-9e51-3c7d2a1f0b64";

/// Runs `hooks run <agent>` with `payload` on stdin at `time` (`GIT_CHECKPOINT_NOW`, so
/// the checkpoint it saves has that time); like the agent, it must get no answer and
/// exit 0.
#[track_caller]
fn hook_at(repo: &Repo, agent: &str, time: &str, payload: &Value) {
    let mut cmd = repo.sb.bin_cmd(&repo.dir, &["hooks", "run", agent]);
    cmd.env("GIT_CHECKPOINT_NOW", time);
    let input = payload.to_string();
    let out = run_cmd_with_input(cmd, Some(input.as_bytes()), DEFAULT_TIMEOUT);
    assert_eq!(
        (out.code, out.stdout.as_str(), out.stderr.as_str()),
        (0, "", ""),
        "{agent} at {time}: {out}"
    );
}

/// A Claude Code hook payload of `session` for `event`, with `fields` added.
fn claude(repo: &Repo, session: &str, event: &str, fields: Value) -> Value {
    let mut payload = json!({
        "session_id": session,
        "transcript_path": repo.sb.root.join(format!("{session}.jsonl")),
        "cwd": repo.dir,
        "hook_event_name": event,
        "permission_mode": "default",
    });
    for (key, value) in fields.as_object().unwrap() {
        payload[key] = value.clone();
    }
    payload
}

/// Claude Code's `PostToolUse` after a Write of `rel`, which the test makes first.
fn claude_write(repo: &Repo, session: &str, call: &str, rel: &str) -> Value {
    repo.write(rel, format!("written in {call}\n").as_bytes());
    claude(
        repo,
        session,
        "PostToolUse",
        json!({"tool_name": "Write", "tool_use_id": call,
               "tool_input": {"file_path": repo.p(rel)}, "tool_response": {}}),
    )
}

/// A Codex payload from its fixture, in this worktree.
fn codex(repo: &Repo, fixture: &str) -> Value {
    let mut payload = agent_fixture("codex", fixture, &[("ROOT", repo.dir.to_str().unwrap())]);
    payload["transcript_path"] = json!(repo.sb.root.join("rollout.jsonl"));
    payload
}

/// Three sessions of two agents, interleaved on 2026-11-22 (UTC), and a save of the
/// user's own between them:
///
/// - [`EARLIER`] (claude): two tool calls, 09:00 and 09:30, no prompt;
/// - [`CLAUDE`]: prompt 1 at 10:00, a tool call at 10:05, prompt 2 at 10:20;
/// - [`CODEX`]: a prompt at 10:10, a shell command at 10:12.
///
/// Most recently active first is CLAUDE, CODEX, EARLIER: neither the order they started
/// in nor its reverse.
fn three_sessions() -> Repo {
    let repo = Repo::new();
    repo.write("notes.txt", b"keep me\n");
    repo.save("before any agent");
    let at = |hhmm: &str| format!("2026-11-22T{hhmm}:00Z");

    let write = claude_write(&repo, EARLIER, "toolu_E1", "early.txt");
    hook_at(&repo, "claude", &at("09:00"), &write);
    let write = claude_write(&repo, EARLIER, "toolu_E2", "early.txt");
    hook_at(&repo, "claude", &at("09:30"), &write);

    let prompt = json!({"prompt": "Fix the parser\nand its tests"});
    let prompt = claude(&repo, CLAUDE, "UserPromptSubmit", prompt);
    hook_at(&repo, "claude", &at("10:00"), &prompt);
    let write = claude_write(&repo, CLAUDE, "toolu_C1", "src/parser.rs");
    hook_at(&repo, "claude", &at("10:05"), &write);

    let mut prompt = codex(&repo, "user_prompt_submit");
    prompt["prompt"] = json!("Add a greeting");
    hook_at(&repo, "codex", &at("10:10"), &prompt);
    repo.write("notes.txt", b"kept me\n");
    hook_at(
        &repo,
        "codex",
        &at("10:12"),
        &codex(&repo, "post_tool_use_bash"),
    );

    repo.write("mine.txt", b"the user's own\n");
    repo.save("the user's own save");

    let prompt = claude(
        &repo,
        CLAUDE,
        "UserPromptSubmit",
        json!({"prompt": "Now run the tests"}),
    );
    hook_at(&repo, "claude", &at("10:20"), &prompt);
    repo
}

/// `sessions` at 10:25 that day.
fn sessions_at_10_25(repo: &Repo, json: bool) -> String {
    let mut args = vec!["sessions"];
    if json {
        args.insert(0, "--json");
    }
    let out = repo.run_env(&args, &[("GIT_CHECKPOINT_NOW", "2026-11-22T10:25:00Z")]);
    assert_eq!((out.code, out.stderr.as_str()), (0, ""), "{out}");
    out.stdout
}

#[test]
fn sessions_lists_each_session_with_its_agent_and_prompts_most_recently_active_first() {
    let repo = three_sessions();
    assert_eq!(
        sessions_at_10_25(&repo, false),
        "claude  4f2a9c1d-5  2 prompts, 3 checkpoints, over 20 minutes, last 5 minutes ago  Fix the parser\n\
         codex   019a6f3e  1 prompt, 2 checkpoints, over 2 minutes, last 13 minutes ago  Add a greeting\n\
         claude  4f2a9c1d-7  0 prompts, 2 checkpoints, over 30 minutes, last 55 minutes ago\n"
    );
}

/// docs/json.md, "sessions": full ids, short ids, counts, the first prompt's first line
/// (null for a session with no prompt checkpoint) and RFC 3339 times, in the same order.
#[test]
fn sessions_json_gives_full_ids_and_times() {
    let repo = three_sessions();
    let listed: Value = serde_json::from_str(&sessions_at_10_25(&repo, true)).unwrap();
    let session = |agent: &str,
                   id: &str,
                   short: &str,
                   (prompts, checkpoints): (u64, u64),
                   first_prompt: Value,
                   (started, ended): (&str, &str)| {
        json!({
            "agent": agent, "id": id, "short_id": short, "prompts": prompts,
            "checkpoints": checkpoints, "first_prompt": first_prompt,
            "started": format!("2026-11-22T{started}:00Z"),
            "ended": format!("2026-11-22T{ended}:00Z"),
        })
    };
    assert_eq!(
        listed,
        json!([
            session(
                "claude",
                CLAUDE,
                "4f2a9c1d-5",
                (2, 3),
                json!("Fix the parser"),
                ("10:00", "10:20")
            ),
            session(
                "codex",
                CODEX,
                "019a6f3e",
                (1, 2),
                json!("Add a greeting"),
                ("10:10", "10:12")
            ),
            session(
                "claude",
                EARLIER,
                "4f2a9c1d-7",
                (0, 2),
                Value::Null,
                ("09:00", "09:30")
            ),
        ]),
        "{listed:#}"
    );
}

/// Each short id names its session alone, and the counts are the checkpoints the store
/// holds for it.
#[test]
fn a_listed_short_id_names_its_session_and_its_checkpoints() {
    let repo = three_sessions();
    let listed: Value = serde_json::from_str(&sessions_at_10_25(&repo, true)).unwrap();
    for session in listed.as_array().unwrap() {
        let short = session["short_id"].as_str().unwrap();
        let checkpoints = repo.json_of(&["log", "--all", "--session", short]);
        let checkpoints = checkpoints.as_array().unwrap();
        assert_eq!(
            checkpoints.len() as u64,
            session["checkpoints"].as_u64().unwrap(),
            "{session:#}"
        );
        assert!(
            checkpoints
                .iter()
                .all(|c| c["meta"]["session"] == session["id"]),
            "{session:#}"
        );
        let prompts = checkpoints
            .iter()
            .filter(|c| c["meta"]["kind"] == "prompt")
            .count() as u64;
        assert_eq!(prompts, session["prompts"].as_u64().unwrap(), "{session:#}");
    }
    let first = repo.json_of(&["show", "4f2a9c1d-5:prompt1"]);
    assert_eq!(first["meta"]["session"], CLAUDE, "{first:#}");
    // Eight characters name no session alone here.
    let out = repo.run(&["show", "4f2a9c1d:prompt1"]);
    assert_eq!(out.code, 1, "{out}");
}

/// Checkpoints of the user's own and no agent's: `--json` is an empty list with nothing
/// on stderr; the text is empty on stdout. An argument is a usage error.
#[test]
fn sessions_without_an_agent_session_is_an_empty_list() {
    let repo = Repo::new();
    repo.write("a.txt", b"mine\n");
    repo.save("mine");
    let out = repo.ok(&["--json", "sessions"]);
    assert_eq!(
        (out.stdout.as_str(), out.stderr.as_str()),
        ("[]\n", ""),
        "{out}"
    );
    assert_eq!(repo.ok(&["sessions"]).stdout, "");
    let out = repo.run(&["sessions", "extra"]);
    assert_eq!(out.code, 2, "{out}");
}
