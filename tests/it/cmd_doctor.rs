//! `git checkpoint doctor` (issue 39, item 6; issue 40, items 1 and 3): what would keep
//! checkpoints from being made, each problem with the one command that fixes it.
//! Every case here is one a user met with nothing telling them: every hook failing with
//! "git: 'checkpoint' is not a git command" (`~/.cargo/bin` missing from the agent's
//! PATH), Codex skipping hooks it does not trust yet, Claude Code started in a
//! subdirectory whose settings have no hooks, a file the last save could not read, hook
//! runs failing since the last checkpoint. The binary runs by absolute path with the PATH
//! each case needs, as an agent would run it.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{
    open_up, path_with_bin, run_cmd, run_cmd_with_input, Out, Repo, BIN, DEFAULT_TIMEOUT,
};
use serde_json::Value;

/// A PATH with git on it and no `git-checkpoint`.
const PATH_WITHOUT_US: &str = "/usr/bin:/bin";

/// `program` run with `args` in `dir` with `PATH` set to `path` (and a bash login shell,
/// so that the fix doctor gives is the same line everywhere), plus `env`.
fn run_with(
    repo: &Repo,
    program: &Path,
    dir: &Path,
    args: &[&str],
    path: &str,
    env: &[(&str, &Path)],
) -> Out {
    let mut cmd = Command::new(program);
    repo.sb.isolate(&mut cmd);
    cmd.current_dir(dir)
        .args(args)
        .env("PATH", path)
        .env("SHELL", "/bin/bash");
    for (key, value) in env {
        cmd.env(key, value);
    }
    let out = run_cmd(cmd, DEFAULT_TIMEOUT);
    common::assert_no_panic(&out, &format!("{args:?}"));
    out
}

/// `doctor <args>` in the worktree, by the binary under test, with `path`.
fn doctor(repo: &Repo, args: &[&str], path: &str, env: &[(&str, &Path)]) -> Out {
    let mut all = vec!["doctor"];
    all.extend_from_slice(args);
    run_with(repo, Path::new(BIN), &repo.dir, &all, path, env)
}

/// `doctor --json`, parsed; its exit status must be 0 exactly when it found no problem.
#[track_caller]
fn doctor_json(repo: &Repo, path: &str, env: &[(&str, &Path)]) -> Value {
    let out = doctor(repo, &["--json"], path, env);
    let report: Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("doctor --json is not JSON ({e})\n{out}"));
    let expected = if report["ok"] == true { 0 } else { 1 };
    assert_eq!(out.code, expected, "{out}");
    report
}

/// The checks of `agent` in a `doctor --json` report.
fn agent_checks<'r>(report: &'r Value, agent: &str) -> &'r Vec<Value> {
    report["agents"]
        .as_array()
        .and_then(|agents| agents.iter().find(|a| a["agent"] == agent))
        .and_then(|a| a["checks"].as_array())
        .unwrap_or_else(|| panic!("no agent {agent} in {report:#}"))
}

/// The first of `checks` named `check`.
#[track_caller]
fn find<'c>(checks: &'c [Value], check: &str) -> &'c Value {
    checks
        .iter()
        .find(|c| c["check"] == check)
        .unwrap_or_else(|| panic!("no check {check} in {checks:#?}"))
}

/// The binary as `cargo install` leaves it, in the sandbox's `~/.cargo/bin` (a hard
/// link to the one under test, or a copy where a link cannot be made).
fn installed_in_cargo_bin(repo: &Repo) -> PathBuf {
    let bin_dir = repo.home().join(".cargo/bin");
    std::fs::create_dir_all(&bin_dir).unwrap();
    let installed = bin_dir.join("git-checkpoint");
    if std::fs::hard_link(BIN, &installed).is_err() {
        std::fs::copy(BIN, &installed).unwrap();
        std::fs::set_permissions(&installed, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    installed
}

/// Installed with `cargo install` but `~/.cargo/bin` missing from PATH (the first day
/// of a new user): `hooks install` says that every hook will fail, and how to fix it,
/// and so does `doctor`, which exits 1; with `~/.cargo/bin` on PATH it finds nothing
/// wrong.
#[test]
fn doctor_finds_git_checkpoint_missing_from_the_path_the_hooks_run_with() {
    for dir in PATH_WITHOUT_US.split(':') {
        assert!(
            !Path::new(dir).join("git-checkpoint").exists(),
            "{dir}/git-checkpoint exists on this machine: the test needs a PATH without one"
        );
    }
    let repo = Repo::new();
    repo.write("main.rs", b"fn main() {}\n");
    let installed = installed_in_cargo_bin(&repo);
    let fix = "echo 'export PATH=\"$HOME/.cargo/bin:$PATH\"' >> ~/.profile";

    let install = run_with(
        &repo,
        &installed,
        &repo.dir,
        &["hooks", "install", "claude"],
        PATH_WITHOUT_US,
        &[],
    );
    assert_eq!(install.code, 0, "{install}");
    assert!(
        install
            .stderr
            .contains("warning: git finds no git-checkpoint on PATH")
            && install.stderr.contains("not a git command")
            && install.stderr.contains(fix),
        "hooks install does not say that every hook will fail\n{install}"
    );

    let out = run_with(
        &repo,
        &installed,
        &repo.dir,
        &["doctor"],
        PATH_WITHOUT_US,
        &[],
    );
    assert_eq!(out.code, 1, "{out}");
    assert!(
        out.stderr.contains("error: doctor found 1 problem"),
        "{out}"
    );
    let lines: Vec<&str> = out.stdout.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.trim_start().starts_with("problem  path"))
        .unwrap_or_else(|| panic!("no path problem\n{out}"));
    assert!(
        lines[at].contains("$HOME/.cargo/bin, where cargo install put it, is not on PATH"),
        "{out}"
    );
    assert_eq!(lines[at + 1].trim(), format!("fix: {fix}"), "{out}");

    let cargo_bin = installed.parent().unwrap().display().to_string();
    let fixed = format!("{cargo_bin}:{PATH_WITHOUT_US}");
    let out = run_with(&repo, &installed, &repo.dir, &["doctor"], &fixed, &[]);
    assert_eq!(out.code, 0, "{out}");
    assert!(
        out.stdout.contains(&format!(
            "ok       path       git finds git-checkpoint on PATH: {cargo_bin}/git-checkpoint"
        )),
        "{out}"
    );
}

/// What Codex writes in `$CODEX_HOME/config.toml` when the user trusts the project,
/// and, with `post_tool_use_hash`, our two hooks as installed in `repo` (the hashes are
/// Codex's own, as the real Codex CLI 0.171.0 computed them: see agent_hooks_reach.rs).
fn codex_config(repo: &Repo, post_tool_use_hash: Option<&str>) -> String {
    let hooks = repo.p(".codex/hooks.json");
    let mut config = format!(
        "[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
        repo.dir.display()
    );
    if let Some(hash) = post_tool_use_hash {
        config += &format!(
            "\n[hooks.state]\n\n[hooks.state.\"{hooks}:user_prompt_submit:0:0\"]\n\
             trusted_hash = \"sha256:7e39bd972a4a7134f324017b668205d5c2179271e9bf79588458bb5a985f05f9\"\n\n\
             [hooks.state.\"{hooks}:pre_tool_use:0:0\"]\n\
             trusted_hash = \"sha256:f3c60ced853380ef864634b964900f10bc98eea59adf3472432b859c3fb1f39e\"\n\n\
             [hooks.state.\"{hooks}:post_tool_use:0:0\"]\ntrusted_hash = \"{hash}\"\n",
            hooks = hooks.display()
        );
    }
    config
}

/// Codex runs no hook it does not trust, and `codex exec` says nothing of it: doctor
/// says which trust is missing (the project's, the hooks'), with the command that opens
/// Codex where its review asks for it, and finds nothing wrong once `CODEX_HOME`'s
/// config trusts exactly these hooks.
#[test]
fn doctor_finds_codex_hooks_that_codex_does_not_trust() {
    let repo = Repo::new();
    repo.write("main.rs", b"fn main() {}\n");
    let codex_home = repo.scratch("codex-home");
    let env: &[(&str, &Path)] = &[("CODEX_HOME", &codex_home)];
    let path = path_with_bin();
    let install = run_with(
        &repo,
        Path::new(BIN),
        &repo.dir,
        &["hooks", "install", "codex"],
        &path,
        env,
    );
    assert_eq!(install.code, 0, "{install}");
    let review = format!("cd {} && codex", repo.dir.display());

    // Nothing in Codex's config: the project itself is not trusted.
    let report = doctor_json(&repo, &path, env);
    let trust = find(agent_checks(&report, "codex"), "trust");
    assert_eq!(trust["status"], "problem", "{report:#}");
    assert!(
        trust["message"]
            .as_str()
            .unwrap()
            .contains("does not trust this project"),
        "{trust:#}"
    );
    assert_eq!(trust["fix"], review.as_str(), "{trust:#}");
    assert_eq!(report["problems"], 1, "{report:#}");

    // The project trusted, the hooks not yet.
    let config = codex_home.join("config.toml");
    std::fs::write(&config, codex_config(&repo, None)).unwrap();
    let out = doctor(&repo, &[], &path, env);
    assert_eq!(out.code, 1, "{out}");
    assert!(
        out.stdout
            .contains("problem  trust      Codex CLI runs these hooks only once you trust them"),
        "{out}"
    );
    assert!(out.stdout.contains(&format!("fix: {review}")), "{out}");

    // Trusted as an older build wrote them: changed since.
    let old = "sha256:dac8468fa474247e08d9583d7cafb9c35f1ce776616b761eed588b45907ed1f6";
    std::fs::write(&config, codex_config(&repo, Some(old))).unwrap();
    let report = doctor_json(&repo, &path, env);
    let trust = find(agent_checks(&report, "codex"), "trust");
    assert!(
        trust["message"]
            .as_str()
            .unwrap()
            .contains("changed since you trusted them"),
        "{trust:#}"
    );

    // Exactly these hooks trusted: nothing wrong.
    let current = "sha256:006e7a40c508bbf489e626c085947f71a2f4344e44d3a30fef785f4ebfd92e2e";
    std::fs::write(&config, codex_config(&repo, Some(current))).unwrap();
    let report = doctor_json(&repo, &path, env);
    assert_eq!(report["ok"], true, "{report:#}");
    let trust = find(agent_checks(&report, "codex"), "trust");
    assert_eq!(trust["status"], "ok", "{trust:#}");
}

/// A healthy set-up: Claude Code's hooks and MCP server, git-checkpoint on PATH, a
/// store that opens, a last save that left nothing out. doctor exits 0 and says so;
/// `--json` gives every agent (set up or not) with its checks, and the worktree's.
#[test]
fn a_healthy_set_up_has_no_problems_and_json_lists_every_check() {
    let repo = Repo::new();
    repo.write("main.rs", b"fn main() {}\n");
    let path = path_with_bin();
    for args in [["hooks", "install", "claude"], ["mcp", "install", "claude"]] {
        let out = run_with(&repo, Path::new(BIN), &repo.dir, &args, &path, &[]);
        assert_eq!(out.code, 0, "{out}");
    }

    let out = doctor(&repo, &[], &path, &[]);
    assert_eq!(out.code, 0, "{out}");
    assert!(!out.stdout.contains("  problem "), "{out}");
    assert!(out.stdout.contains("Claude Code (claude)"), "{out}");
    assert!(
        out.stdout
            .contains("Not set up: cline, codex, copilot, cursor, gemini, git"),
        "{out}"
    );
    assert!(out.stdout.ends_with("No problems found\n"), "{out}");

    let report = doctor_json(&repo, &path, &[]);
    assert_eq!(
        (report["ok"].clone(), report["problems"].clone()),
        (true.into(), 0.into())
    );
    let agents = report["agents"].as_array().unwrap();
    let names: Vec<&str> = agents
        .iter()
        .map(|a| a["agent"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["claude", "cline", "codex", "copilot", "cursor", "gemini", "git"]
    );
    for agent in &agents[1..] {
        assert_eq!(agent["set_up"], false, "{agent:#}");
        assert_eq!(agent["checks"], serde_json::json!([]), "{agent:#}");
    }
    let claude = agent_checks(&report, "claude");
    assert_eq!(report["agents"][0]["about"], "Claude Code");
    let hooks = find(claude, "hooks");
    assert_eq!(hooks["status"], "ok");
    assert!(
        hooks["message"]
            .as_str()
            .unwrap()
            .contains(".claude/settings.local.json"),
        "{hooks:#}"
    );
    assert_eq!(find(claude, "reach")["status"], "note");
    assert_eq!(find(claude, "path")["status"], "ok");
    let mcp = find(claude, "mcp");
    assert_eq!(mcp["status"], "ok", "{mcp:#}");
    assert_eq!(mcp["fix"], Value::Null);
    for check in claude {
        let keys: Vec<&String> = check.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["check", "status", "message", "fix"], "{check:#}");
    }
    let worktree = &report["worktree"];
    assert_eq!(worktree["root"], repo.dir.display().to_string());
    let checks = worktree["checks"].as_array().unwrap();
    let names: Vec<&str> = checks
        .iter()
        .map(|c| c["check"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["store", "last-save", "hooks-log", "watcher"],
        "{worktree:#}"
    );
    assert!(checks.iter().all(|c| c["status"] == "ok"), "{worktree:#}");
}

/// Claude Code started in a subdirectory reads no hooks installed at the top (issue 40,
/// item 1): doctor run there says so, with the install to run there.
#[test]
fn doctor_in_a_subdirectory_finds_claude_hooks_that_do_not_reach_it() {
    let repo = Repo::new();
    repo.write("pkg/lib.rs", b"pub fn f() {}\n");
    let path = path_with_bin();
    let out = run_with(
        &repo,
        Path::new(BIN),
        &repo.dir,
        &["hooks", "install", "claude"],
        &path,
        &[],
    );
    assert_eq!(out.code, 0, "{out}");

    let pkg = repo.p("pkg");
    let out = run_with(&repo, Path::new(BIN), &pkg, &["doctor"], &path, &[]);
    assert_eq!(out.code, 1, "{out}");
    let problem = out
        .stdout
        .lines()
        .find(|l| l.trim_start().starts_with("problem  reach"))
        .unwrap_or_else(|| panic!("no reach problem\n{out}"));
    assert!(
        problem.contains(&format!(
            "Claude Code started in {} does not run the hooks",
            pkg.display()
        )),
        "{out}"
    );
    assert!(
        out.stdout
            .contains("fix: git checkpoint hooks install claude\n"),
        "{out}"
    );

    // Installed there too: covered.
    let out = run_with(
        &repo,
        Path::new(BIN),
        &pkg,
        &["hooks", "install", "claude"],
        &path,
        &[],
    );
    assert_eq!(out.code, 0, "{out}");
    let out = run_with(&repo, Path::new(BIN), &pkg, &["doctor"], &path, &[]);
    assert!(
        out.stdout
            .lines()
            .any(|l| l.contains("ok       hooks") && l.contains("pkg/.claude/settings.local.json")),
        "{out}"
    );
}

/// A hook save that could not read a file (root's, from docker or sudo) leaves it out:
/// doctor says the last save left it out and how to make it readable. As root the
/// binary runs as `nobody` through setpriv(1), as in safety_unreadable_hooks.rs.
#[test]
fn doctor_finds_the_unreadable_file_the_last_hook_save_left_out() {
    let repo = Repo::new();
    if !common::prepare_unprivileged(&repo) {
        return;
    }
    repo.write("ok.txt", b"readable\n");
    repo.write("secret.txt", b"cannot be read\n");
    open_up(&repo.sb.root);
    std::fs::set_permissions(repo.p("secret.txt"), std::fs::Permissions::from_mode(0o000)).unwrap();
    let unprivileged = |args: &[&str], input: Option<&[u8]>| -> Out {
        let mut cmd = if common::is_root() {
            let mut c = Command::new("setpriv");
            c.args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN]);
            c
        } else {
            Command::new(BIN)
        };
        repo.sb.isolate(&mut cmd);
        cmd.current_dir(&repo.dir)
            .args(args)
            .env("PATH", path_with_bin());
        let out = run_cmd_with_input(cmd, input, DEFAULT_TIMEOUT);
        common::assert_no_panic(&out, &format!("{args:?}"));
        out
    };
    let step = serde_json::json!({
        "session_id": "s1", "hook_event_name": "PostToolUse", "tool_name": "Bash",
        "tool_use_id": "toolu_1", "tool_input": {"command": "docker compose up -d"},
        "cwd": repo.dir,
    });
    let hook = unprivileged(
        &["hooks", "run", "claude"],
        Some(step.to_string().as_bytes()),
    );
    assert_eq!(hook.code, 0, "{hook}");

    let out = unprivileged(&["doctor"], None);
    assert_eq!(out.code, 1, "{out}");
    let lines: Vec<&str> = out.stdout.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.trim_start().starts_with("problem  last-save"))
        .unwrap_or_else(|| panic!("no last-save problem\n{out}"));
    assert!(
        lines[at].contains("could not read secret.txt and left it out"),
        "{out}"
    );
    let fix = lines[at + 1].trim();
    let expected = match common::is_root() {
        // nobody cannot read root's file: it must become nobody's.
        true => "fix: sudo chown \"$(id -un)\" secret.txt",
        false => "fix: chmod u+rX secret.txt",
    };
    assert_eq!(fix, expected, "{out}");
    // The notice the hook run logged is not a failure of the hook.
    assert!(out.stdout.contains("ok       hooks-log"), "{out}");

    let report: Value =
        serde_json::from_str(&unprivileged(&["doctor", "--json"], None).stdout).unwrap();
    assert_eq!(report["problems"], 1, "{report:#}");
    let last_save = find(
        report["worktree"]["checks"].as_array().unwrap(),
        "last-save",
    );
    assert_eq!(last_save["status"], "problem", "{last_save:#}");
}

/// A hook run that could not save logs it and lets the agent go on: doctor reports the
/// failures since the last checkpoint as a problem, and once a save worked since, as a
/// note.
#[test]
fn doctor_reports_hook_runs_that_failed_since_the_last_checkpoint() {
    let repo = Repo::new();
    repo.write("main.rs", b"fn main() {}\n");
    repo.save("first");
    let mut cmd = repo.sb.bin_cmd(&repo.dir, &["hooks", "run", "claude"]);
    cmd.env("PATH", path_with_bin());
    let hook = run_cmd_with_input(cmd, Some(b"not json"), DEFAULT_TIMEOUT);
    assert_eq!(hook.code, 0, "{hook}");

    let path = path_with_bin();
    let report = doctor_json(&repo, &path, &[]);
    let log = find(
        report["worktree"]["checks"].as_array().unwrap(),
        "hooks-log",
    );
    assert_eq!(log["status"], "problem", "{report:#}");
    let message = log["message"].as_str().unwrap();
    assert!(
        message.starts_with("1 hook run failed since the last checkpoint")
            && message.contains("not valid JSON")
            && message.contains("hooks.log"),
        "{log:#}"
    );

    repo.write("main.rs", b"fn main() { println!(); }\n");
    repo.save("a save that worked");
    let report = doctor_json(&repo, &path, &[]);
    let log = find(
        report["worktree"]["checks"].as_array().unwrap(),
        "hooks-log",
    );
    assert_eq!(log["status"], "note", "{report:#}");
    assert_eq!(report["ok"], true, "{report:#}");
}

/// Hooks an older version wrote (another matcher, no timeout) are found and named a
/// problem, fixed by installing again, which replaces them.
#[test]
fn doctor_finds_hooks_an_older_version_wrote() {
    let repo = Repo::new();
    repo.write("main.rs", b"fn main() {}\n");
    let path = path_with_bin();
    let install = |repo: &Repo| {
        let out = run_with(
            repo,
            Path::new(BIN),
            &repo.dir,
            &["hooks", "install", "claude"],
            &path,
            &[],
        );
        assert_eq!(out.code, 0, "{out}");
    };
    install(&repo);
    let settings = repo.p(".claude/settings.local.json");
    let older = r#"{"hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "git checkpoint hooks run claude"}]}]}}"#;
    std::fs::write(&settings, older).unwrap();

    let report = doctor_json(&repo, &path, &[]);
    let hooks = find(agent_checks(&report, "claude"), "hooks");
    assert_eq!(hooks["status"], "problem", "{report:#}");
    assert!(
        hooks["message"]
            .as_str()
            .unwrap()
            .contains("not as this version writes them"),
        "{hooks:#}"
    );
    assert_eq!(
        hooks["fix"], "git checkpoint hooks install claude",
        "{hooks:#}"
    );

    install(&repo);
    let report = doctor_json(&repo, &path, &[]);
    assert_eq!(
        find(agent_checks(&report, "claude"), "hooks")["status"],
        "ok",
        "{report:#}"
    );
}

/// A user's MCP entry names the absolute path of the binary that registered it: once
/// that binary is gone (moved, uninstalled), the agent cannot start the server, and
/// doctor says so with the install that writes this binary's path.
#[test]
fn doctor_finds_an_mcp_entry_whose_program_is_gone() {
    let repo = Repo::new();
    repo.write("main.rs", b"fn main() {}\n");
    let path = path_with_bin();
    let installed = installed_in_cargo_bin(&repo);
    let out = run_with(
        &repo,
        &installed,
        &repo.dir,
        &["mcp", "install", "claude", "--scope", "user"],
        &path,
        &[],
    );
    assert_eq!(out.code, 0, "{out}");
    let report = doctor_json(&repo, &path, &[]);
    let mcp = find(agent_checks(&report, "claude"), "mcp");
    assert_eq!(mcp["status"], "ok", "{report:#}");

    std::fs::remove_file(&installed).unwrap();
    let report = doctor_json(&repo, &path, &[]);
    let mcp = find(agent_checks(&report, "claude"), "mcp");
    assert_eq!(mcp["status"], "problem", "{report:#}");
    let message = mcp["message"].as_str().unwrap();
    assert!(
        message.contains(&format!(
            "runs `{}`, which is not there",
            installed.display()
        )) && message.contains("remove this one from"),
        "{mcp:#}"
    );
    assert_eq!(
        mcp["fix"], "git checkpoint mcp install claude --scope user",
        "{mcp:#}"
    );
}

/// A restore that died half-way leaves the worktree partly restored: doctor says so,
/// with the command that finishes it, run where doctor ran (a restore limited to paths
/// is finished by the same paths, as seen from there).
#[test]
fn doctor_finds_an_interrupted_restore_and_the_command_that_finishes_it() {
    let repo = Repo::new();
    for i in 0..20 {
        repo.write(format!("sub/f{i}.txt"), format!("one {i}\n").as_bytes());
    }
    let first = repo.save("first");
    for i in 0..20 {
        repo.write(format!("sub/f{i}.txt"), format!("two {i}\n").as_bytes());
    }
    repo.save("second");
    let mut cmd = repo
        .sb
        .bin_cmd(&repo.dir, &["restore", &first, "--", "sub"]);
    cmd.env("GIT_CHECKPOINT_FAULT", "restore-mid-rename");
    let out = run_cmd(cmd, DEFAULT_TIMEOUT);
    common::assert_aborted(&out, "restore-mid-rename");

    let sub = repo.p("sub");
    let out = run_with(
        &repo,
        Path::new(BIN),
        &sub,
        &["doctor"],
        &path_with_bin(),
        &[],
    );
    assert_eq!(out.code, 1, "{out}");
    let short = &first[..7];
    assert!(
        out.stdout.contains(&format!(
            "problem  store      a restore to {short} was interrupted: the worktree is partly restored"
        )),
        "{out}"
    );
    let fix = format!("fix: git checkpoint restore {short} -- .");
    assert!(out.stdout.lines().any(|l| l.trim() == fix), "{out}");

    // The fix, run there, finishes it.
    let finish = run_with(
        &repo,
        Path::new(BIN),
        &sub,
        &["restore", short, "--", "."],
        &path_with_bin(),
        &[],
    );
    assert_eq!(finish.code, 0, "{finish}");
    let out = run_with(
        &repo,
        Path::new(BIN),
        &sub,
        &["doctor"],
        &path_with_bin(),
        &[],
    );
    assert_eq!(out.code, 0, "{out}");
}
