//! The hook `hooks install <agent>` puts just before the tools whose payload names no file
//! they change (shell commands, MCP tools; issue 34 finding 4's follow-up): with the
//! checkpoint after the call it brackets what the call changed, so that `restore
//! --only-session` counts a shell command's edits as the session's instead of "unsure".
//! Each agent's before hook is checked as installed (over an older install, which is
//! upgraded in place, every other byte kept) and as run with the payload that agent
//! sends (`tests/fixtures/agents/`).

use crate::common;
use std::path::Path;

use common::*;
use serde_json::{json, Map, Value};

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// `settings` with `ours` (event → the entries an older install put there) appended to
/// its `hooks`, as that install left the file.
fn with_hooks(settings: &Value, ours: &Value) -> Value {
    let mut merged = settings.clone();
    let hooks = merged
        .as_object_mut()
        .unwrap()
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()));
    for (event, entries) in ours.as_object().unwrap() {
        let list = hooks
            .as_object_mut()
            .unwrap()
            .entry(event.clone())
            .or_insert_with(|| json!([]));
        list.as_array_mut()
            .unwrap()
            .extend(entries.as_array().unwrap().iter().cloned());
    }
    merged
}

fn pretty(value: &Value) -> String {
    format!("{}\n", serde_json::to_string_pretty(value).unwrap())
}

/// One agent whose hooks live in a JSON file: where, what the user had there, what an
/// install before the before-tool hooks added, and what this one must add.
struct JsonCase {
    agent: &'static str,
    /// The hooks file, from the worktree's top.
    file: &'static str,
    user: Value,
    older: Value,
    /// The before-tool event and the entry of ours it must hold.
    before: Vec<(&'static str, Value)>,
}

fn claude_hook() -> Value {
    json!({"type": "command", "command": "git checkpoint hooks run claude", "timeout": 30})
}

fn codex_hook() -> Value {
    json!({"type": "command", "command": "git checkpoint hooks run codex", "timeout": 30})
}

fn gemini_hook() -> Value {
    json!({"name": "git-checkpoint", "type": "command",
           "command": "git checkpoint hooks run gemini", "timeout": 30000})
}

fn cursor_hook() -> Value {
    json!({"command": "git checkpoint hooks run cursor"})
}

fn copilot_hook() -> Value {
    json!({"type": "command", "bash": "git checkpoint hooks run copilot", "timeoutSec": 30})
}

fn json_cases() -> Vec<JsonCase> {
    let claude_tools = "^(Edit|Write|MultiEdit|NotebookEdit|Bash|PowerShell|mcp__checkpoint__.+)$";
    let gemini_tools = "^(write_file|replace|run_shell_command|mcp_checkpoint_.+)$";
    vec![
        JsonCase {
            agent: "claude",
            file: ".claude/settings.json",
            user: json!({"model": "sonnet", "hooks": {"PreToolUse": [
                {"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh"}]}]}}),
            older: json!({
                "UserPromptSubmit": [{"hooks": [claude_hook()]}],
                "PostToolUse": [{"matcher": claude_tools, "hooks": [claude_hook()]}],
                "PostToolUseFailure": [{"matcher": claude_tools, "hooks": [claude_hook()]}],
            }),
            before: vec![(
                "PreToolUse",
                json!({"matcher": "^(Bash|PowerShell|mcp__checkpoint__.+)$", "hooks": [claude_hook()]}),
            )],
        },
        JsonCase {
            agent: "codex",
            file: ".codex/hooks.json",
            user: json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify"}]}]}}),
            older: json!({
                "UserPromptSubmit": [{"hooks": [codex_hook()]}],
                "PostToolUse": [{"matcher": "^(Bash|apply_patch|mcp__checkpoint__.+)$", "hooks": [codex_hook()]}],
            }),
            before: vec![(
                "PreToolUse",
                json!({"matcher": "^(Bash|mcp__checkpoint__.+)$", "hooks": [codex_hook()]}),
            )],
        },
        JsonCase {
            agent: "gemini",
            file: ".gemini/settings.json",
            user: json!({"general": {"vimMode": true}}),
            older: json!({
                "BeforeAgent": [{"hooks": [gemini_hook()]}],
                "AfterTool": [{"matcher": gemini_tools, "hooks": [gemini_hook()]}],
            }),
            before: vec![(
                "BeforeTool",
                json!({"matcher": "^(run_shell_command|mcp_checkpoint_.+)$", "hooks": [gemini_hook()]}),
            )],
        },
        JsonCase {
            agent: "cursor",
            file: ".cursor/hooks.json",
            user: json!({"version": 1, "hooks": {"beforeShellExecution": [{"command": "./guard.sh"}]}}),
            older: json!({
                "beforeSubmitPrompt": [cursor_hook()],
                "afterFileEdit": [cursor_hook()],
                "afterShellExecution": [cursor_hook()],
            }),
            before: vec![
                ("beforeShellExecution", cursor_hook()),
                ("beforeMCPExecution", cursor_hook()),
                ("afterMCPExecution", cursor_hook()),
            ],
        },
        JsonCase {
            agent: "copilot",
            file: ".github/hooks/git-checkpoint.json",
            user: json!({"version": 1, "hooks": {"sessionEnd": [
                {"type": "command", "bash": "./report.sh"}]}}),
            older: json!({
                "userPromptSubmitted": [copilot_hook()],
                "postToolUse": [copilot_hook()],
                "postToolUseFailure": [copilot_hook()],
            }),
            before: vec![("PreToolUse", copilot_hook())],
        },
    ]
}

/// An install over what an older version installed adds the before-tool hook in place:
/// the user's own hooks and settings stay, a second install changes nothing, and
/// uninstall gives back the user's file byte for byte.
#[test]
fn install_adds_the_before_tool_hook_over_an_older_install_and_uninstall_restores_the_bytes() {
    for case in json_cases() {
        let r = Repo::new();
        let path = r.p(case.file);
        let user = pretty(&case.user);
        r.write(
            case.file,
            pretty(&with_hooks(&case.user, &case.older)).as_bytes(),
        );
        let out = r.ok(&["hooks", "install", case.agent, "--shared"]);
        assert!(out.stdout.contains("Installed"), "{}: {out}", case.agent);
        let installed = read_json(&path);
        for (event, entry) in &case.before {
            let list = installed["hooks"][*event].as_array().unwrap_or_else(|| {
                panic!("{}: no {event} after install:\n{installed:#}", case.agent)
            });
            assert_eq!(
                list.iter().filter(|e| *e == entry).count(),
                1,
                "{}: {event} should hold ours once:\n{installed:#}",
                case.agent
            );
        }
        // The user's hooks and settings are still there, and so is each older hook of
        // ours, once.
        for (key, value) in case.user.as_object().unwrap() {
            if key != "hooks" {
                assert_eq!(&installed[key], value, "{}", case.agent);
            }
        }
        let all = with_hooks(&case.user, &case.older);
        for (event, entries) in all["hooks"].as_object().unwrap() {
            for entry in entries.as_array().unwrap() {
                let count = installed["hooks"][event]
                    .as_array()
                    .map(|list| list.iter().filter(|e| *e == entry).count());
                assert_eq!(count, Some(1), "{}: {event}:\n{installed:#}", case.agent);
            }
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let again = r.ok(&["hooks", "install", case.agent, "--shared"]);
        assert!(again.stdout.contains("already"), "{}: {again}", case.agent);
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            text,
            "{}",
            case.agent
        );

        r.ok(&["hooks", "uninstall", case.agent, "--shared"]);
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            user,
            "{}: uninstall must give back the user's file byte for byte",
            case.agent
        );
    }
}

/// Cline's hooks are one script per event: an install over an older one (two scripts)
/// adds `PreToolUse`, leaves a hook of the user's own alone, and uninstall takes all of
/// ours out again.
#[test]
fn cline_install_adds_a_pre_tool_use_script_over_an_older_install() {
    let r = Repo::new();
    let script = "#!/bin/sh\n\
        # Written by 'git checkpoint hooks install cline'; 'git checkpoint hooks uninstall cline' removes it.\n\
        exec git checkpoint hooks run cline\n";
    for event in ["UserPromptSubmit", "PostToolUse"] {
        r.write_exec(format!(".clinerules/hooks/{event}"), script.as_bytes());
    }
    r.write_exec(".clinerules/hooks/TaskStart", b"#!/bin/sh\necho mine\n");
    r.ok(&["hooks", "install", "cline"]);
    assert_eq!(r.read(".clinerules/hooks/PreToolUse"), script.as_bytes());
    assert!(is_executable(&r.p(".clinerules/hooks/PreToolUse")));
    let again = r.ok(&["hooks", "install", "cline"]);
    assert!(again.stdout.contains("already"), "{again}");
    r.ok(&["hooks", "uninstall", "cline"]);
    for event in ["UserPromptSubmit", "PreToolUse", "PostToolUse"] {
        assert!(!r.exists(format!(".clinerules/hooks/{event}")), "{event}");
    }
    assert_eq!(
        r.read(".clinerules/hooks/TaskStart"),
        b"#!/bin/sh\necho mine\n"
    );
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o111 != 0
}

/// One agent's shell call as its hooks see it: the prompt, the before-tool event and
/// the after-tool one, each as that agent sends it.
struct ShellCase {
    agent: &'static str,
    /// The session, as `restore <session>:prompt1` names it.
    session: &'static str,
    /// Whether the installed hooks run `hooks run <agent>` for the before-tool event of
    /// this tool (from the installed file).
    installed: fn(&Repo) -> bool,
    prompt: fn(&Repo, u64) -> Value,
    before: fn(&Repo) -> Value,
    after: fn(&Repo) -> Value,
}

fn root(r: &Repo) -> String {
    r.dir.display().to_string()
}

/// Whether the JSON hooks file `file` has, under `event`, a group whose matcher matches
/// `tool` (or has none) and which runs `command`.
fn group_runs(r: &Repo, file: &str, event: &str, tool: &str, command: &str) -> bool {
    let settings = read_json(&r.p(file));
    let groups = settings["hooks"][event]
        .as_array()
        .cloned()
        .unwrap_or_default();
    groups.iter().any(|group| {
        let matches = group["matcher"]
            .as_str()
            .is_none_or(|m| regex::Regex::new(m).unwrap().is_match(tool));
        let runs = group["hooks"]
            .as_array()
            .is_some_and(|hooks| hooks.iter().any(|h| h["command"] == command));
        matches && runs
    })
}

/// Whether the flat hooks file `file` runs `command` (under `key`) at `event`.
fn list_runs(r: &Repo, file: &str, event: &str, key: &str, command: &str) -> bool {
    let settings = read_json(&r.p(file));
    let list = settings["hooks"][event]
        .as_array()
        .cloned()
        .unwrap_or_default();
    list.iter().any(|hook| hook[key] == command)
}

fn shell_cases() -> Vec<ShellCase> {
    vec![
        ShellCase {
            agent: "codex",
            session: "019a6f3e",
            installed: |r| {
                group_runs(
                    r,
                    ".codex/hooks.json",
                    "PreToolUse",
                    "Bash",
                    "git checkpoint hooks run codex",
                )
            },
            prompt: |r, _| agent_fixture("codex", "user_prompt_submit", &[("ROOT", &root(r))]),
            before: |r| agent_fixture("codex", "pre_tool_use_bash", &[("ROOT", &root(r))]),
            after: |r| agent_fixture("codex", "post_tool_use_bash", &[("ROOT", &root(r))]),
        },
        ShellCase {
            agent: "gemini",
            session: "8d0c3f52",
            installed: |r| {
                group_runs(
                    r,
                    ".gemini/settings.json",
                    "BeforeTool",
                    "run_shell_command",
                    "git checkpoint hooks run gemini",
                )
            },
            prompt: |r, _| agent_fixture("gemini", "before_agent", &[("ROOT", &root(r))]),
            before: |r| {
                agent_fixture(
                    "gemini",
                    "before_tool_run_shell_command",
                    &[("ROOT", &root(r))],
                )
            },
            after: |r| {
                agent_fixture(
                    "gemini",
                    "after_tool_run_shell_command",
                    &[("ROOT", &root(r))],
                )
            },
        },
        ShellCase {
            agent: "cursor",
            session: "668320d2",
            installed: |r| {
                list_runs(
                    r,
                    ".cursor/hooks.json",
                    "beforeShellExecution",
                    "command",
                    "git checkpoint hooks run cursor",
                )
            },
            prompt: |r, n| {
                let generation = format!("gen-{n}");
                agent_fixture(
                    "cursor",
                    "before_submit_prompt",
                    &[
                        ("ROOT", &root(r)),
                        ("GENERATION", &generation),
                        ("PROMPT", "go"),
                    ],
                )
            },
            before: |r| {
                let vars = [
                    ("ROOT", root(r)),
                    ("GENERATION", "gen-1".into()),
                    ("COMMAND", "make".into()),
                ];
                let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
                agent_fixture("cursor", "before_shell_execution", &vars)
            },
            after: |r| {
                let vars = [
                    ("ROOT", root(r)),
                    ("GENERATION", "gen-1".into()),
                    ("COMMAND", "make".into()),
                ];
                let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
                agent_fixture("cursor", "after_shell_execution", &vars)
            },
        },
        ShellCase {
            agent: "copilot",
            session: "b7d3f9a2",
            installed: |r| {
                list_runs(
                    r,
                    ".github/hooks/git-checkpoint.json",
                    "PreToolUse",
                    "bash",
                    "git checkpoint hooks run copilot",
                )
            },
            prompt: |r, _| {
                agent_fixture(
                    "copilot",
                    "user_prompt_submitted",
                    &[("ROOT", &root(r)), ("PROMPT", "go")],
                )
            },
            before: |r| {
                agent_fixture(
                    "copilot",
                    "pre_tool_use_snake_case",
                    &[("ROOT", &root(r)), ("TOOL", "bash"), ("COMMAND", "make")],
                )
            },
            after: |r| {
                let args = json!({"command": "make"}).to_string();
                agent_fixture(
                    "copilot",
                    "post_tool_use",
                    &[("ROOT", &root(r)), ("TOOL", "bash"), ("ARGS", &args)],
                )
            },
        },
        ShellCase {
            agent: "cline",
            session: "1763866799123",
            installed: |r| {
                r.read(".clinerules/hooks/PreToolUse")
                    .ends_with(b"exec git checkpoint hooks run cline\n")
            },
            prompt: |r, _| {
                agent_fixture(
                    "cline",
                    "user_prompt_submit",
                    &[("ROOT", &root(r)), ("PROMPT", "go")],
                )
            },
            before: |r| {
                agent_fixture(
                    "cline",
                    "pre_tool_use_execute_command",
                    &[("ROOT", &root(r)), ("COMMAND", "make")],
                )
            },
            after: |r| {
                agent_fixture(
                    "cline",
                    "post_tool_use_execute_command_failed",
                    &[("ROOT", &root(r)), ("COMMAND", "make")],
                )
            },
        },
    ]
}

/// A shell call between its own before and after hooks is the session's: the user's file
/// written between prompts stays, and `restore <s>:prompt1 --only-session` puts back
/// exactly what the command changed, with nothing "unsure" left alone.
#[test]
fn a_shell_call_bracketed_by_its_hooks_is_restored_with_nothing_unsure() {
    for case in shell_cases() {
        let r = Repo::new();
        r.write("notes.txt", b"keep\n");
        r.git(&["add", "-A"]);
        r.git(&["commit", "-qm", "notes"]);
        r.ok(&["hooks", "install", case.agent]);
        assert!(
            (case.installed)(&r),
            "{}: no before-tool hook installed",
            case.agent
        );
        let hook = |payload: Value| {
            let out = run_agent_hook(&r.sb, &r.dir, case.agent, payload.to_string().as_bytes());
            assert_eq!(
                (out.code, out.stderr.as_str()),
                (0, ""),
                "{}: {out}",
                case.agent
            );
        };
        hook((case.prompt)(&r, 1));
        hook((case.before)(&r));
        r.write("notes.txt", b"kept\n");
        r.write("build.log", b"made\n");
        hook((case.after)(&r));
        r.write("mine.txt", b"the user's own, between prompts\n");
        hook((case.prompt)(&r, 2));

        let rev = format!("{}:prompt1", case.session);
        let out = r.run(&["restore", &rev, "--only-session"]);
        assert_eq!(out.code, 0, "{}: {out}", case.agent);
        assert!(!out.stdout.contains("Left"), "{}: {out}", case.agent);
        assert_eq!(
            r.read_string("notes.txt"),
            "keep\n",
            "{}: {out}",
            case.agent
        );
        assert!(!r.exists("build.log"), "{}: {out}", case.agent);
        assert_eq!(
            r.read_string("mine.txt"),
            "the user's own, between prompts\n"
        );
    }
}

/// Cursor's MCP calls are bracketed too (`beforeMCPExecution`, `afterMCPExecution`): what
/// an MCP tool changed is the session's.
#[test]
fn a_cursor_mcp_call_bracketed_by_its_hooks_is_the_sessions() {
    let r = Repo::new();
    r.write("notes.txt", b"keep\n");
    r.git(&["add", "-A"]);
    r.git(&["commit", "-qm", "notes"]);
    r.ok(&["hooks", "install", "cursor"]);
    for event in ["beforeMCPExecution", "afterMCPExecution"] {
        assert!(
            list_runs(
                &r,
                ".cursor/hooks.json",
                event,
                "command",
                "git checkpoint hooks run cursor"
            ),
            "{event}"
        );
    }
    let vars = |r: &Repo| {
        vec![
            ("ROOT", root(r)),
            ("GENERATION", "gen-1".to_string()),
            ("TOOL", "revert".to_string()),
            ("PROMPT", "undo it".to_string()),
        ]
    };
    let send = |name: &str| {
        let vars = vars(&r);
        let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let payload = agent_fixture("cursor", name, &vars);
        let out = run_agent_hook(&r.sb, &r.dir, "cursor", payload.to_string().as_bytes());
        assert_eq!((out.code, out.stderr.as_str()), (0, ""), "{out}");
        out.stdout
    };
    send("before_submit_prompt");
    assert_eq!(send("before_mcp_execution"), "", "no permission decided");
    r.write("notes.txt", b"reverted\n");
    send("after_mcp_execution");
    let log = r.log_json(true);
    let call = checkpoint_with(&log, &[("event", "afterMCPExecution")]);
    assert_eq!(call["meta"]["tool"], "revert", "{call:#}");
    assert_eq!(call["meta"]["kind"], "tool", "{call:#}");

    let out = r.run(&["restore", "668320d2:prompt1", "--only-session"]);
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(r.read_string("notes.txt"), "keep\n", "{out}");
}

/// Agents whose before-tool hook runs for every tool (Cline, Copilot CLI) save nothing
/// before a tool that names its file or only reads: the checkpoint after it names the
/// file, so one before would only cost a save.
#[test]
fn no_checkpoint_before_a_tool_that_names_its_file_or_only_reads() {
    let r = Repo::new();
    r.write("a.txt", b"a\n");
    r.git(&["add", "-A"]);
    r.git(&["commit", "-qm", "a"]);
    r.ok(&["hooks", "install", "copilot"]);
    r.ok(&["hooks", "install", "cline"]);
    let before = r.log_json(true).len();
    let root = root(&r);
    for tool in ["edit", "view"] {
        let mut payload = agent_fixture(
            "copilot",
            "pre_tool_use_snake_case",
            &[("ROOT", &root), ("TOOL", tool), ("COMMAND", "")],
        );
        payload["tool_input"] = json!({"path": format!("{root}/a.txt")});
        hook_answers(&r.sb, &r.dir, "copilot", payload.to_string().as_bytes(), "");
    }
    for tool in ["write_to_file", "read_file"] {
        let payload = json!({"hookName": "PreToolUse", "taskId": "t1", "workspaceRoots": [root],
            "preToolUse": {"toolName": tool, "parameters": {"path": "a.txt"}}});
        hook_answers(
            &r.sb,
            &r.dir,
            "cline",
            payload.to_string().as_bytes(),
            "{\"cancel\":false}\n",
        );
    }
    assert_eq!(r.log_json(true).len(), before, "no checkpoint was saved");
}
