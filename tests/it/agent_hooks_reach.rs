//! Where installed hooks reach, and what `hooks install` says about it (issue 40).
//!
//! Claude Code and Gemini CLI read a project's settings only from the directory they are
//! started in (seen with the real programs: started in `src/`, neither read the top's
//! `.claude/` or `.gemini/`), so `hooks install` writes them there and says that a
//! session started elsewhere runs none of them; Codex reads `.codex/` from the project
//! root down to where it starts, so the top's file covers every subdirectory, but runs a
//! hook only once the user trusted it (per path and hash, in `~/.codex/config.toml`),
//! which `hooks install codex` checks and says.

use crate::common;

use common::Repo;

/// A worktree with a subdirectory `pkg/` (a monorepo package) holding a file.
fn monorepo() -> Repo {
    let repo = Repo::new();
    repo.write("pkg/lib.rs", b"pub fn f() {}\n");
    repo
}

/// `hooks install <args>` run in `dir` (relative to the worktree), with the binary on
/// PATH as an installed one is (else install warns that the hooks cannot find it),
/// which must succeed; its stdout and stderr.
#[track_caller]
fn install_in(repo: &Repo, dir: &str, args: &[&str]) -> (String, String) {
    let mut all = vec!["hooks", "install"];
    all.extend_from_slice(args);
    let mut cmd = repo.sb.bin_cmd(&repo.p(dir), &all);
    cmd.env("PATH", common::path_with_bin());
    let out = common::run_cmd(cmd, common::DEFAULT_TIMEOUT);
    assert_eq!(out.code, 0, "hooks install {args:?} in {dir}\n{out}");
    (out.stdout, out.stderr)
}

/// Started in a subdirectory, Claude Code reads `<subdirectory>/.claude/`: installed
/// from there, that is where the hooks go (and the personal file is kept out of git
/// there), and install warns that a session started anywhere else runs none of them.
#[test]
fn claude_hooks_installed_in_a_subdirectory_go_where_claude_started_there_reads_them() {
    let repo = monorepo();
    let (stdout, stderr) = install_in(&repo, "pkg", &["claude"]);
    let file = repo.p("pkg/.claude/settings.local.json");
    assert!(
        file.is_file(),
        "the hooks are where Claude Code started in pkg/ reads them\n{stdout}{stderr}"
    );
    assert!(!repo.exists(".claude/settings.local.json"), "{stdout}");
    assert!(stdout.contains(&file.display().to_string()), "{stdout}");
    let exclude = std::fs::read_to_string(repo.git_dir().join("info/exclude")).unwrap();
    assert!(
        exclude
            .lines()
            .any(|l| l == "/pkg/.claude/settings.local.json"),
        "{exclude}"
    );
    let pkg = repo.p("pkg");
    assert!(
        stderr.contains("warning: Claude Code runs these hooks only in a session started in")
            && stderr.contains(&pkg.display().to_string()),
        "install says which sessions the hooks reach: {stderr}"
    );
    assert!(repo
        .git(&["status", "--porcelain"])
        .lines()
        .all(|l| !l.contains(".claude")));

    let out = repo.sb.ok_in(&pkg, &["hooks", "uninstall", "claude"]);
    assert!(!file.exists(), "uninstall from pkg/ removes it: {out}");
}

/// At the top, the shared file goes to the top (as before), and install says that
/// Claude Code started in a subdirectory does not read it; `--global` reaches every
/// directory and says nothing of the kind.
#[test]
fn claude_install_at_the_top_warns_that_subdirectories_are_not_covered() {
    let repo = monorepo();
    let (_, stderr) = install_in(&repo, ".", &["claude", "--shared"]);
    assert!(repo.exists(".claude/settings.json"));
    assert!(
        stderr.contains("not in one started in a subdirectory"),
        "{stderr}"
    );
    let (_, stderr) = install_in(&repo, "pkg", &["claude", "--global"]);
    assert!(repo.home().join(".claude/settings.json").is_file());
    assert!(!stderr.contains("warning"), "{stderr}");
}

/// Gemini CLI reads `.gemini/settings.json` of the directory it starts in only, as
/// Claude Code does.
#[test]
fn gemini_hooks_go_to_the_directory_install_runs_in_with_the_same_warning() {
    let repo = monorepo();
    let (_, stderr) = install_in(&repo, "pkg", &["gemini"]);
    assert!(repo.exists("pkg/.gemini/settings.json"));
    assert!(!repo.exists(".gemini/settings.json"));
    assert!(
        stderr.contains("warning: Gemini CLI runs these hooks only in a session started in"),
        "{stderr}"
    );
}

/// Codex reads `.codex/` from the project root down, so the top's hooks file covers a
/// session started anywhere in the worktree: installed from a subdirectory it still goes
/// to the top, with no warning about where Codex starts.
#[test]
fn codex_hooks_at_the_top_cover_every_subdirectory() {
    let repo = monorepo();
    let (_, stderr) = install_in(&repo, "pkg", &["codex"]);
    assert!(repo.exists(".codex/hooks.json"));
    assert!(!repo.exists("pkg/.codex"));
    assert!(!stderr.contains("only in a session started in"), "{stderr}");
}

/// What Codex writes in `~/.codex/config.toml` when the user trusts our three hooks as
/// this build installs them at `hooks` (the hashes are Codex's own: sha256 of its
/// normalized hook identity, as the real Codex CLI 0.171.0 computed them).
fn codex_trust(repo: &Repo, post_tool_use_hash: &str) -> String {
    let hooks = repo.p(".codex/hooks.json");
    format!(
        "[projects.\"{top}\"]\ntrust_level = \"trusted\"\n\n[hooks.state]\n\n\
         [hooks.state.\"{hooks}:user_prompt_submit:0:0\"]\n\
         trusted_hash = \"sha256:7e39bd972a4a7134f324017b668205d5c2179271e9bf79588458bb5a985f05f9\"\n\n\
         [hooks.state.\"{hooks}:pre_tool_use:0:0\"]\n\
         trusted_hash = \"sha256:f3c60ced853380ef864634b964900f10bc98eea59adf3472432b859c3fb1f39e\"\n\n\
         [hooks.state.\"{hooks}:post_tool_use:0:0\"]\ntrusted_hash = \"{post_tool_use_hash}\"\n",
        top = repo.dir.display(),
        hooks = hooks.display()
    )
}

/// `codex exec` skips untrusted hooks without a word, so `hooks install codex` says
/// what to do until `~/.codex/config.toml` trusts exactly these hooks (path and hash),
/// says that hooks changed since they were trusted must be trusted again, and says
/// nothing once they are.
#[test]
fn codex_install_says_until_codex_trusts_exactly_these_hooks() {
    let repo = monorepo();
    // No trust at all yet: Codex loads nothing of an untrusted project.
    let (_, stderr) = install_in(&repo, ".", &["codex"]);
    assert!(stderr.contains("does not trust this project"), "{stderr}");
    let config = repo.home().join(".codex/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    let project_only = format!(
        "[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
        repo.dir.display()
    );
    std::fs::write(&config, project_only).unwrap();
    let (_, stderr) = install_in(&repo, ".", &["codex"]);
    assert!(
        stderr.contains("warning: Codex CLI runs these hooks only once you trust them")
            && stderr.contains("Trust all and continue"),
        "{stderr}"
    );

    // Trusted as an older build wrote them (another matcher): changed since.
    let old = "sha256:dac8468fa474247e08d9583d7cafb9c35f1ce776616b761eed588b45907ed1f6";
    std::fs::write(&config, codex_trust(&repo, old)).unwrap();
    let (_, stderr) = install_in(&repo, ".", &["codex"]);
    assert!(
        stderr.contains("changed since you trusted them"),
        "{stderr}"
    );

    let current = "sha256:006e7a40c508bbf489e626c085947f71a2f4344e44d3a30fef785f4ebfd92e2e";
    std::fs::write(&config, codex_trust(&repo, current)).unwrap();
    let (stdout, stderr) = install_in(&repo, ".", &["codex"]);
    assert!(stdout.contains("already in"), "{stdout}");
    assert!(
        !stderr.contains("warning"),
        "trusted: nothing to say\n{stderr}"
    );

    // A project Codex does not trust loads no `.codex/` at all.
    let untrusted_project = codex_trust(&repo, current).replace("\"trusted\"", "\"untrusted\"");
    std::fs::write(&config, untrusted_project).unwrap();
    let (_, stderr) = install_in(&repo, ".", &["codex"]);
    assert!(stderr.contains("does not trust this project"), "{stderr}");
}

/// Hooks installed in a subdirectory are the agent's settings as those at the top are
/// (docs/design.md invariant 16): no checkpoint holds them, so restoring one from before
/// the install leaves them in place, and the agent's next session still saves.
#[test]
fn hooks_installed_in_a_subdirectory_survive_a_restore_from_before_the_install() {
    let repo = monorepo();
    let before = repo.save("before the install");
    install_in(&repo, "pkg", &["claude", "--shared"]);
    install_in(&repo, "pkg", &["gemini"]);
    let out = repo.ok(&["restore", &before]);
    for file in ["pkg/.claude/settings.json", "pkg/.gemini/settings.json"] {
        assert!(repo.exists(file), "the restore took {file} away\n{out}");
    }
    let status = repo.ok(&["status"]);
    assert!(!status.stdout.contains(".claude"), "{status}");
}
