//! The manual behind `git checkpoint --help`, `-h` and examples on every subcommand, and
//! the shell completion scripts.

use crate::common;
use std::fs;
use std::path::Path;
use std::process::Command;

use common::*;

/// A PATH holding `bin` first, then the system's own directories (for man and git).
fn path_with(bin: &Path) -> String {
    format!("{}:/usr/local/bin:/usr/bin:/bin", bin.display())
}

#[test]
fn install_man_puts_the_pages_where_man_and_git_find_them() {
    let sb = Sandbox::new();
    let prefix = sb.root.join("prefix");
    let bin = prefix.join("bin");
    fs::create_dir_all(&bin).unwrap();
    // Installed as `cargo install` would: the binary in <prefix>/bin.
    let installed = bin.join("git-checkpoint");
    // Copied by another process: a copy written here would leave its file open in any
    // child another test spawns meanwhile (until that child's exec), and running the
    // copy would then fail with "Text file busy".
    let copied = Command::new("cp")
        .arg(BIN)
        .arg(&installed)
        .status()
        .unwrap();
    assert!(copied.success(), "cp {BIN}");

    // Without --prefix the pages go beside the running binary.
    let mut cmd = Command::new(&installed);
    sb.isolate(&mut cmd);
    cmd.arg("install-man").current_dir(&sb.root);
    let out = run_cmd(cmd, DEFAULT_TIMEOUT);
    assert_no_panic(&out, "install-man");
    assert_eq!(out.code, 0, "{out}");
    let man1 = prefix.join("share/man/man1");
    assert!(out.stdout.contains(&man1.display().to_string()), "{out}");
    let committed = Path::new(env!("CARGO_MANIFEST_DIR")).join("man");
    for page in fs::read_dir(&committed).unwrap() {
        let page = page.unwrap();
        assert_eq!(
            fs::read(man1.join(page.file_name())).unwrap(),
            fs::read(page.path()).unwrap(),
            "installed {:?} differs from man/",
            page.file_name()
        );
    }

    // man maps <prefix>/bin on PATH to <prefix>/share/man.
    let mut man = Command::new("man");
    sb.isolate(&mut man);
    man.args(["-w", "git-checkpoint", "git-checkpoint-save"])
        .env("PATH", path_with(&bin))
        .env_remove("MANPATH")
        .current_dir(&sb.root);
    let out = run_cmd(man, DEFAULT_TIMEOUT);
    assert_eq!(out.code, 0, "man -w: {out}");
    let found: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(
        found,
        [
            man1.join("git-checkpoint.1").display().to_string(),
            man1.join("git-checkpoint-save.1").display().to_string()
        ],
        "{out}"
    );

    // And git's `--help` shows that page.
    let repo = sb.init_repo("repo");
    let mut git = Command::new("git");
    sb.isolate(&mut git);
    git.args(["checkpoint", "--help"])
        .env("PATH", path_with(&bin))
        .env_remove("MANPATH")
        .env("MANPAGER", "cat")
        .env("PAGER", "cat")
        .env("MANWIDTH", "80")
        .current_dir(&repo);
    let out = run_cmd(git, DEFAULT_TIMEOUT);
    assert_eq!(out.code, 0, "git checkpoint --help: {out}");
    assert!(out.stdout.contains("SYNOPSIS"), "{out}");
    assert!(out.stdout.contains("checkpoint.maxFileSize"), "{out}");
}

#[test]
fn install_man_with_a_prefix() {
    let sb = Sandbox::new();
    let prefix = sb.root.join("elsewhere");
    let out = sb.ok_in(
        &sb.root,
        &["install-man", "--prefix", prefix.to_str().unwrap()],
    );
    assert!(out.stdout.contains("share/man/man1"), "{out}");
    assert!(prefix
        .join("share/man/man1/git-checkpoint-hooks.1")
        .is_file());
    // -q prints nothing.
    let out = sb.ok_in(
        &sb.root,
        &["-q", "install-man", "--prefix", prefix.to_str().unwrap()],
    );
    assert_eq!(out.stdout, "");
}

/// The subcommands a help text lists under "Commands:", without `help`.
fn listed_commands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|line| *line != "Commands:")
        .skip(1)
        .take_while(|line| line.starts_with("  "))
        // A description too long for one line goes on under itself, indented further.
        .filter(|line| !line.starts_with("   "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

#[test]
fn every_subcommand_has_short_help_and_ends_its_long_help_with_examples() {
    let sb = Sandbox::new();
    let top = sb.ok_in(&sb.root, &["-h"]);
    let mut queue: Vec<Vec<String>> = listed_commands(&top.stdout)
        .into_iter()
        .map(|name| vec![name])
        .collect();
    for expected in [
        "save",
        "restore",
        "log",
        "install-man",
        "completions",
        "hooks",
    ] {
        assert!(
            queue.iter().any(|c| c[0] == expected),
            "{expected} missing from -h: {top}"
        );
    }
    let mut checked = Vec::new();
    while let Some(path) = queue.pop() {
        let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
        args.push("-h");
        let short = sb.ok_in(&sb.root, &args);
        let usage = format!("Usage: git checkpoint {}", path.join(" "));
        assert!(short.stdout.contains(&usage), "{args:?}: {short}");
        args.pop();
        args.push("--help");
        let long = sb.ok_in(&sb.root, &args);
        // clap prints Options after the description: the description itself must end
        // with an Examples section whose entries are git checkpoint command lines.
        let description = long.stdout.split("\nUsage:").next().unwrap_or_default();
        let examples = description
            .split("Examples:")
            .nth(1)
            .unwrap_or_else(|| panic!("{args:?} --help has no Examples: section\n{long}"));
        let lines: Vec<&str> = examples.lines().filter(|l| !l.trim().is_empty()).collect();
        assert!(
            !lines.is_empty() && lines.iter().all(|l| l.contains("git checkpoint")),
            "{args:?}: the Examples section holds something else\n{examples}"
        );
        for sub in listed_commands(&short.stdout) {
            let mut deeper = path.clone();
            deeper.push(sub);
            queue.push(deeper);
        }
        checked.push(path.join(" "));
    }
    for nested in ["hooks install", "hooks uninstall", "hooks run"] {
        assert!(
            checked.iter().any(|c| c == nested),
            "{nested} not reached: {checked:?}"
        );
    }
}

#[test]
fn completion_scripts_for_each_shell() {
    let sb = Sandbox::new();
    // What they do is tested in cmd_completions.rs.
    let bash = sb.ok_in(&sb.root, &["completions", "bash"]).stdout;
    assert!(bash.contains("_git_checkpoint()"), "no git shim");
    let zsh = sb.ok_in(&sb.root, &["completions", "zsh"]).stdout;
    assert!(zsh.starts_with("#compdef git-checkpoint"), "{zsh}");
    let fish = sb.ok_in(&sb.root, &["completions", "fish"]).stdout;
    assert!(fish.contains("--command git-checkpoint"), "{fish}");
    let out = sb.run_in(&sb.root, &["completions", "tcsh"]);
    assert_eq!(out.code, 2, "{out}");

    // A reader that goes away early is no reason to panic.
    let mut cmd = Command::new("sh");
    sb.isolate(&mut cmd);
    cmd.args(["-c", &format!("'{BIN}' completions bash | head -n 1")]);
    let out = run_cmd(cmd, DEFAULT_TIMEOUT);
    assert_no_panic(&out, "completions | head");
    assert_eq!(out.stdout.lines().count(), 1, "{out}");
}
