//! Output a person reads goes through a pager and is coloured only on a terminal, as
//! git does it. The terminal is a real pseudo-terminal made by `script(1)`.

mod common;

use std::process::{Command, Stdio};

use common::Repo;

/// Runs the binary with `args` under a pseudo-terminal and returns what the terminal
/// showed, with the terminal's CR LF line ends turned back into LF.
fn on_terminal(repo: &Repo, args: &str, env: &[(&str, &str)]) -> String {
    let mut command = Command::new("script");
    command
        .args(["-qec", &format!("{} {args}", common::BIN), "/dev/null"])
        .current_dir(&repo.dir)
        .env("HOME", repo.home())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("TERM", "xterm")
        .env_remove("GIT_PAGER")
        .env_remove("PAGER")
        .env_remove("NO_COLOR")
        .stdin(Stdio::null());
    for (k, v) in env {
        command.env(k, v);
    }
    let out = command.output().expect("script(1) runs");
    assert!(out.status.success(), "{args}: {out:?}");
    String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n")
}

fn history() -> Repo {
    let repo = Repo::new();
    repo.write("a.txt", b"one\n");
    let first = repo.save_forced("first");
    repo.write("a.txt", b"two\n");
    repo.save_forced("second");
    repo.ok(&["fork", &first, "-b", "side"]);
    repo.write("b.txt", b"side\n");
    repo.save_forced("third");
    repo
}

const PAGER: &str = "sed s/^/PAGED:/";

#[test]
fn on_a_terminal_log_show_and_diff_are_paged_and_coloured() {
    let repo = history();
    for args in ["log --graph --all", "show @", "diff @~1 @"] {
        let shown = on_terminal(&repo, args, &[("GIT_PAGER", PAGER)]);
        assert!(!shown.is_empty(), "{args}");
        assert!(
            shown.lines().all(|l| l.starts_with("PAGED:")),
            "{args} not paged:\n{shown}"
        );
        assert!(shown.contains("\x1b["), "{args} not coloured:\n{shown}");
    }
    // The graph's lanes are coloured, and the lines are the plain ones plus colour.
    let shown = on_terminal(&repo, "log --graph --all", &[("GIT_PAGER", PAGER)]);
    assert!(shown.contains("\x1b[31m|\x1b[m"), "{shown}");
    let plain = repo.ok(&["log", "--graph", "--all"]).stdout;
    let stripped: String = strip_ansi(&shown).replace("PAGED:", "");
    assert_eq!(without_ages(&stripped), without_ages(&plain));
}

#[test]
fn off_a_terminal_nothing_is_paged_or_coloured() {
    let repo = history();
    for args in [
        &["log", "--graph", "--all"][..],
        &["show", "@"],
        &["diff", "@~1", "@"],
    ] {
        let out = repo.run_env(args, &[("GIT_PAGER", PAGER), ("PAGER", PAGER)]);
        assert_eq!(out.code, 0, "{out}");
        assert!(!out.stdout.contains("PAGED:"), "{args:?}: {out}");
        assert!(!out.stdout.contains('\x1b'), "{args:?}: {out}");
    }
}

#[test]
fn the_pager_is_chosen_as_git_chooses_it() {
    let repo = history();
    repo.git(&["config", "core.pager", "sed s/^/CORE:/"]);
    let shown = on_terminal(&repo, "log", &[("PAGER", "sed s/^/ENV:/")]);
    assert!(shown.lines().all(|l| l.starts_with("CORE:")), "{shown}");
    let shown = on_terminal(
        &repo,
        "log",
        &[("PAGER", "sed s/^/ENV:/"), ("GIT_PAGER", "sed s/^/GIT:/")],
    );
    assert!(shown.lines().all(|l| l.starts_with("GIT:")), "{shown}");
    repo.git(&["config", "--unset", "core.pager"]);
    let shown = on_terminal(&repo, "log", &[("PAGER", "sed s/^/ENV:/")]);
    assert!(shown.lines().all(|l| l.starts_with("ENV:")), "{shown}");
    // `cat` or an empty pager means none.
    for none in ["cat", ""] {
        let shown = on_terminal(&repo, "log", &[("GIT_PAGER", none)]);
        assert!(shown.contains("third"), "{shown}");
        assert!(!shown.contains("PAGED:"), "{shown}");
    }
}

#[test]
fn no_color_and_json_turn_colour_and_paging_off() {
    let repo = history();
    let shown = on_terminal(&repo, "log", &[("GIT_PAGER", PAGER), ("NO_COLOR", "1")]);
    assert!(shown.lines().all(|l| l.starts_with("PAGED:")), "{shown}");
    assert!(!shown.contains('\x1b'), "{shown}");
    let shown = on_terminal(&repo, "log --json", &[("GIT_PAGER", PAGER)]);
    assert!(
        !shown.contains("PAGED:") && !shown.contains('\x1b'),
        "{shown}"
    );
    assert!(shown.trim_start().starts_with('['), "{shown}");
}

/// Lines with the ages ("0 seconds ago") taken out, which may tick between two runs.
fn without_ages(text: &str) -> Vec<String> {
    text.lines()
        .map(|line| {
            line.split(' ')
                .filter(|w| {
                    !w.is_empty()
                        && w.parse::<u64>().is_err()
                        && !w.starts_with("second")
                        && *w != "ago"
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

fn strip_ansi(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            for c in chars.by_ref() {
                if c == 'm' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}
