//! Output a person reads goes through a pager and is coloured only on a terminal, as
//! git does it. The terminal is a real pseudo-terminal made by `script(1)`.

use crate::common;
use common::{run_cmd, Repo, DEFAULT_TIMEOUT};

/// Runs the binary with `args` under a pseudo-terminal and returns what the terminal
/// showed, with the terminal's CR LF line ends turned back into LF.
fn on_terminal(repo: &Repo, args: &str, env: &[(&str, &str)]) -> String {
    in_terminal_session(repo, &format!("{} {args}", common::BIN), env)
}

/// Runs `command_line` (a shell command) under a pseudo-terminal made by script(1), in
/// the test sandbox with colour allowed (`NO_COLOR` unset, `TERM=xterm`) and no pager
/// but those `env` names; returns what the terminal showed, CR LF turned into LF.
fn in_terminal_session(repo: &Repo, command_line: &str, env: &[(&str, &str)]) -> String {
    let mut command = common::terminal_cmd(repo, command_line);
    for (k, v) in env {
        command.env(k, v);
    }
    let out = command.output().expect("script(1) runs");
    assert!(out.status.success(), "{command_line}: {out:?}");
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

/// With stdout off a terminal nothing is paged or coloured, although everything else
/// asks for both (`NO_COLOR` unset, `TERM=xterm`, a pager set; the binary reads no colour
/// setting). Each command is first run on a terminal in that same environment, where it
/// is paged and coloured, so only the terminal detection can be what turns both off.
#[test]
fn off_a_terminal_nothing_is_paged_or_coloured() {
    let repo = history();
    repo.write("c.txt", b"pending\n");
    let pagers = [("GIT_PAGER", PAGER), ("PAGER", PAGER)];
    for (args, paged) in [
        ("log --graph --all", true),
        ("show @", true),
        ("diff @~1 @", true),
        ("status", false),
    ] {
        // The control: on a terminal this environment colours (and pages).
        let shown = on_terminal(&repo, args, &pagers);
        assert!(
            shown.contains("\x1b["),
            "control: {args} not coloured:\n{shown}"
        );
        if paged {
            assert!(
                shown.contains("PAGED:"),
                "control: {args} not paged:\n{shown}"
            );
        }

        // Same terminal session, stdout redirected to a file: no colour, no pager.
        let file = repo.sb.root.join("stdout.txt");
        let screen = in_terminal_session(
            &repo,
            &format!("{} {args} > '{}'", common::BIN, file.display()),
            &pagers,
        );
        let written = std::fs::read_to_string(&file).unwrap();
        assert!(!written.is_empty(), "{args}: nothing written");
        assert!(
            !written.contains("PAGED:"),
            "{args} paged into a file:\n{written}"
        );
        assert!(
            !written.contains('\x1b'),
            "{args} coloured a file:\n{written:?}"
        );
        assert!(!screen.contains("PAGED:"), "{args}: a pager ran:\n{screen}");

        // No terminal at all (stdout and stderr pipes), with the same environment.
        let mut command = repo
            .sb
            .bin_cmd(&repo.dir, &args.split(' ').collect::<Vec<_>>());
        command.env_remove("NO_COLOR").env("TERM", "xterm");
        for (k, v) in pagers {
            command.env(k, v);
        }
        let out = run_cmd(command, DEFAULT_TIMEOUT);
        assert_eq!(out.code, 0, "{out}");
        assert!(!out.stdout.is_empty(), "{args}: {out}");
        assert!(!out.stdout.contains("PAGED:"), "{args}: {out}");
        assert!(!out.stdout.contains('\x1b'), "{args}: {out:?}");
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
