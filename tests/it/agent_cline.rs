//! A simulated Cline task, driven through the real binary with the payloads its hooks
//! send, kept in `tests/fixtures/agents/cline/` (fields as Cline's hook reference gives
//! them: https://docs.cline.bot/features/hooks/hook-reference and
//! https://docs.cline.bot/customization/hooks — `hookName`, `taskId`, `workspaceRoots`,
//! `userPromptSubmit.prompt`, `postToolUse.{toolName, parameters, result, success}`; the
//! `editor` tool with an absolute `path` and a second workspace root as Cline's newer
//! runtime sends it, github.com/cline/cline `apps/vscode/src/sdk/hooks-adapter.ts`; a
//! failed tool without `success`, as proto3's JSON leaves a false boolean out). Every
//! prompt must then be listed, named and restorable, the installed scripts must run as
//! Cline runs them, and install/uninstall must leave the user's own hooks as they were.

use crate::common;
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;

use common::*;
use serde_json::Value;

const TASK: &str = "1763866799123";
/// What `hooks run cline` prints, a line of its own.
const REPLY: &str = "{\"cancel\":false}\n";
const SCRIPT: &str = "#!/bin/sh\n\
# Written by 'git checkpoint hooks install cline'; 'git checkpoint hooks uninstall cline' removes it.\n\
exec git checkpoint hooks run cline\n";
/// A hook of the user's own, for an event we do not use.
const USER_HOOK: &[u8] = b"#!/usr/bin/env bash\necho '{\"cancel\": false}'\n";

fn fixture(name: &str, vars: &[(&str, &str)]) -> Value {
    agent_fixture("cline", name, vars)
}

/// The worktree's files, without git's and Cline's hooks directory.
fn worktree(repo: &Repo) -> Snap {
    let mut snap = repo.snapshot();
    snap.retain(|path, _| !path.starts_with(b".clinerules/"));
    snap
}

struct Task<'r> {
    repo: &'r Repo,
    root: String,
    before_prompt: BTreeMap<u64, Snap>,
}

impl Task<'_> {
    /// Sends `payload` as Cline does, from the user's home so that only the payload's
    /// `workspaceRoots` says where the project is; the reply must be Cline's.
    fn hook(&self, payload: &Value) {
        let input = payload.to_string();
        hook_answers(
            &self.repo.sb,
            &self.repo.home(),
            "cline",
            input.as_bytes(),
            REPLY,
        );
    }

    fn prompt(&mut self, n: u64, text: &str) {
        self.before_prompt.insert(n, worktree(self.repo));
        self.hook(&fixture(
            "user_prompt_submit",
            &[("ROOT", &self.root), ("PROMPT", text)],
        ));
    }
}

/// Runs the installed hook file `event` as Cline does: the executable itself, in the
/// workspace root, with the payload on stdin and `git-checkpoint` on `PATH`.
fn run_hook_file(r: &Repo, event: &str, payload: &Value) -> Out {
    let mut cmd = std::process::Command::new(r.p(format!(".clinerules/hooks/{event}")));
    r.sb.isolate(&mut cmd);
    cmd.env("PATH", path_with_bin()).current_dir(&r.dir);
    run_cmd_with_input(cmd, Some(payload.to_string().as_bytes()), DEFAULT_TIMEOUT)
}

#[test]
fn a_cline_task_is_listed_named_and_restorable_and_install_round_trips() {
    let r = Repo::new();
    r.write("src/main.rs", b"fn main() {}\n");
    r.write("notes.txt", b"keep me\n");
    r.write(".clinerules/style.md", b"# House style\n");
    write_file(&r.p(".clinerules/hooks/TaskStart"), USER_HOOK, true);
    let before_install = id_of(&r.json_of(&["save"])).unwrap();
    r.ok(&["hooks", "install", "cline"]);
    for event in ["UserPromptSubmit", "PostToolUse"] {
        let path = r.p(format!(".clinerules/hooks/{event}"));
        assert_eq!(std::fs::read(&path).unwrap(), SCRIPT.as_bytes(), "{event}");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o111, 0o111, "{event} must be executable: {mode:o}");
    }
    let out = r.ok(&["hooks", "install", "cline"]);
    assert!(out.stdout.contains("already"), "installing twice: {out}");

    let mut t = Task {
        repo: &r,
        root: r.dir.to_str().unwrap().to_string(),
        before_prompt: BTreeMap::new(),
    };
    let root = t.root.clone();
    // Prompt 1: a file written (relative path), a read (no checkpoint), then a command
    // that deletes a file and fails.
    t.prompt(1, "Add a greeting\nwith a test");
    r.write("src/greet.rs", b"pub fn hi() {}\n");
    t.hook(&fixture(
        "post_tool_use_write_to_file",
        &[("ROOT", &root), ("FILE", "src/greet.rs")],
    ));
    t.hook(&fixture("post_tool_use_read_file", &[("ROOT", &root)]));
    r.remove("notes.txt");
    t.hook(&fixture(
        "post_tool_use_execute_command_failed",
        &[("ROOT", &root), ("COMMAND", "rm notes.txt && make")],
    ));
    // Prompt 2 changes nothing.
    t.prompt(2, "Why did make fail?");
    // Prompt 3: the newer `editor` tool, an absolute path, two workspace roots. Its
    // hook goes through the installed script itself.
    t.prompt(3, "Say hello instead");
    r.write("src/greet.rs", b"pub fn hello() {}\n");
    let other = r.scratch("other-root");
    let edit = fixture(
        "post_tool_use_editor",
        &[
            ("ROOT", &root),
            ("OTHER_ROOT", other.to_str().unwrap()),
            ("FILE", "src/greet.rs"),
        ],
    );
    let out = run_hook_file(&r, "PostToolUse", &edit);
    assert_eq!(
        (out.code, out.stdout.as_str(), out.stderr.as_str()),
        (0, REPLY, ""),
        "{out}"
    );
    let last = worktree(&r);

    let short = only_session(&r, "cline", TASK, 3, "Add a greeting");

    // What the checkpoints record; the read got none.
    let log = r.log_json(true);
    assert!(
        !log.iter().any(|c| c["meta"]["tool"] == "read_file"),
        "{log:#?}"
    );
    let written = checkpoint_with(&log, &[("tool", "write_to_file")]);
    for (key, value) in [
        ("agent", "cline"),
        ("session", TASK),
        ("prompt", "1"),
        ("kind", "tool"),
        ("event", "PostToolUse"),
        ("path", "src/greet.rs"),
    ] {
        assert_eq!(written["meta"][key], value, "{key}: {written:#}");
    }
    assert!(written["meta"].get("failed").is_none(), "{written:#}");
    let failed = checkpoint_with(&log, &[("tool", "execute_command")]);
    assert_eq!(failed["meta"]["failed"], "true", "{failed:#}");
    assert_eq!(
        failed["message"], "after execute_command (failed): rm notes.txt && make",
        "{failed:#}"
    );
    let edited = checkpoint_with(&log, &[("tool", "editor")]);
    assert_eq!(
        (&edited["meta"]["path"], &edited["meta"]["prompt"]),
        (&Value::from("src/greet.rs"), &Value::from("3")),
        "{edited:#}"
    );
    let prompt = checkpoint_with(&log, &[("kind", "prompt"), ("prompt", "1")]);
    assert_eq!(prompt["meta"]["event"], "UserPromptSubmit");
    assert_eq!(prompt["message"], "before prompt 1: Add a greeting");

    // "Before prompt N", for every N, is exactly the tree the user had.
    for (n, expected) in &t.before_prompt {
        r.ok(&["restore", &format!("{short}:prompt{n}")]);
        assert_snap_eq(expected, &worktree(&r), &format!("before prompt {n}"));
    }
    r.ok(&["restore", &format!("{}~", failed["id"].as_str().unwrap())]);
    assert_eq!(r.read("notes.txt"), b"keep me\n");
    r.ok(&["restore", edited["id"].as_str().unwrap()]);
    assert_snap_eq(&last, &worktree(&r), "after the last edit");
    assert!(!r.git_dir().join("checkpoint/hooks.log").exists());
    // Our scripts are not the worktree's: a restore to before the install keeps them,
    // and no checkpoint holds them.
    r.ok(&["restore", &before_install]);
    assert_eq!(
        r.read(".clinerules/hooks/UserPromptSubmit"),
        SCRIPT.as_bytes()
    );
    assert_eq!(r.read(".clinerules/hooks/PostToolUse"), SCRIPT.as_bytes());
    r.ok(&["restore", edited["id"].as_str().unwrap()]);

    // Uninstalling removes our scripts and nothing of the user's.
    r.ok(&["hooks", "uninstall", "cline"]);
    assert!(!r.exists(".clinerules/hooks/UserPromptSubmit"));
    assert!(!r.exists(".clinerules/hooks/PostToolUse"));
    assert_eq!(r.read(".clinerules/hooks/TaskStart"), USER_HOOK);
    assert_eq!(r.read(".clinerules/style.md"), b"# House style\n");
    let out = r.ok(&["hooks", "uninstall", "cline"]);
    assert!(out.stdout.contains("No checkpoint hooks"), "{out}");
}

/// A hook file of the user's own with the name we need is never replaced: install
/// refuses and writes nothing, and uninstall leaves it. Without any hooks of the user's,
/// install then uninstall leaves no trace, `.clinerules` included.
#[test]
fn a_users_own_cline_hook_is_never_replaced_and_a_clean_install_leaves_no_trace() {
    let r = Repo::new();
    r.write("a.txt", b"a\n");
    write_file(&r.p(".clinerules/hooks/PostToolUse"), USER_HOOK, true);
    let out = r.run(&["hooks", "install", "cline"]);
    assert_eq!(out.code, 1, "{out}");
    assert!(
        out.stderr.contains("PostToolUse") && out.stderr.contains("did not write"),
        "{out}"
    );
    assert_eq!(r.read(".clinerules/hooks/PostToolUse"), USER_HOOK);
    assert!(!r.exists(".clinerules/hooks/UserPromptSubmit"));
    r.ok(&["hooks", "uninstall", "cline"]);
    assert_eq!(r.read(".clinerules/hooks/PostToolUse"), USER_HOOK);

    let clean = Repo::new();
    clean.write("a.txt", b"a\n");
    let before = clean.snapshot();
    clean.ok(&["hooks", "install", "cline"]);
    assert!(clean.exists(".clinerules/hooks/UserPromptSubmit"));
    clean.ok(&["hooks", "uninstall", "cline"]);
    assert_snap_eq(&before, &clean.snapshot(), "after install and uninstall");
    assert!(!clean.exists(".clinerules"));
}

/// `--global` writes `~/Documents/Cline/Hooks/`, a hooks directory linked out of the
/// worktree is refused, and unreadable input still gets Cline's reply.
#[test]
fn cline_global_install_links_out_and_bad_input() {
    let r = Repo::new();
    r.write("a.txt", b"a\n");
    r.ok(&["hooks", "install", "cline", "--global"]);
    let global = r.home().join("Documents/Cline/Hooks/PostToolUse");
    assert_eq!(std::fs::read(&global).unwrap(), SCRIPT.as_bytes());
    r.ok(&["hooks", "uninstall", "cline", "--global"]);
    assert!(!global.exists());

    let elsewhere = r.scratch("elsewhere");
    std::fs::create_dir_all(r.p(".clinerules")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, r.p(".clinerules/hooks")).unwrap();
    let out = r.run(&["hooks", "install", "cline"]);
    assert_eq!(out.code, 1, "{out}");
    assert!(out.stderr.contains("outside"), "{out}");
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);

    hook_answers(&r.sb, &r.dir, "cline", b"not json", REPLY);
    let log = std::fs::read_to_string(r.git_dir().join("checkpoint/hooks.log")).unwrap();
    assert!(log.contains("not valid JSON"), "{log}");
}
