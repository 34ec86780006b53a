//! Messages, metadata and names come from agents' text: printed for a person, their
//! control characters are shown escaped (git's octal style, `\033` for ESC), never sent
//! to the terminal, while `--json` keeps them exactly.

use crate::common;
use common::{Out, Repo};

/// A message that would clear the screen and ring the bell, on two lines.
const MESSAGE: &str = "evil \x1b[2J\x07 message\nsecond \u{9b}31m line";
/// A metadata value that would retitle the terminal window.
const TITLE: &str = "\x1b]0;title\x07";
/// An attachment (and file) name with a CSI in it.
const ATTACHMENT: &str = "notes\x1b[8m.txt";
/// A file too large to save, whose path the save's warning quotes.
const LARGE: &str = "big\x1b[2J.bin";

/// A repository with a checkpoint carrying all of the above, and what its save printed.
fn hostile() -> (Repo, Out) {
    let repo = Repo::new();
    repo.git(&["config", "checkpoint.maxFileSize", "1k"]);
    repo.write("a.txt", b"one\n");
    repo.save("first");
    repo.write("a.txt", b"two\n");
    repo.write(LARGE, &[b'x'; 4096]);
    let note = repo.sb.root.join(ATTACHMENT);
    std::fs::write(&note, b"note\n").unwrap();
    let meta = format!("k={TITLE}");
    let save = repo.ok(&[
        "save",
        "-m",
        MESSAGE,
        "--meta",
        &meta,
        "--attach",
        note.to_str().unwrap(),
    ]);
    (repo, save)
}

/// Neither stream holds an ESC, BEL or C1 character (nothing here is coloured).
#[track_caller]
fn assert_plain(out: &Out, what: &str) {
    for (name, text) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        assert!(
            !text.chars().any(|c| c.is_control() && c != '\n'),
            "{what}: a raw control character on {name}:\n{text:?}"
        );
    }
}

#[test]
fn human_output_escapes_control_characters() {
    let (repo, save) = hostile();
    for args in [
        vec!["log"],
        vec!["log", "--all", "--graph"],
        vec!["show", "@"],
        vec!["show", "@", "--stat"],
        vec!["branch"],
        vec!["stats"],
    ] {
        let out = repo.ok(&args);
        assert_plain(&out, &format!("{args:?}"));
        assert!(
            out.stdout.contains("evil \\033[2J\\a message"),
            "{args:?}: the message is shown escaped:\n{}",
            out.stdout
        );
    }
    let show = repo.ok(&["show", "@"]).stdout;
    assert!(show.contains("k=\\033]0;title\\a"), "{show}");
    assert!(show.contains("notes\\033[8m.txt"), "{show}");
    assert!(show.contains("second \\302\\23331m line"), "{show}");
    // An error that quotes what was typed.
    let out = repo.run(&["show", "nope\x1b[2J"]);
    assert_eq!(out.code, 1, "{out}");
    assert_plain(&out, "an unknown revision");
    assert!(out.stderr.contains("nope\\033[2J"), "{out}");
    // The save's warning quotes the path of the file it left out.
    assert_plain(&save, "save");
    assert!(
        save.stderr.contains("big\\033[2J.bin"),
        "the warning names the skipped file:\n{save}"
    );
}

#[test]
fn json_keeps_the_exact_text() {
    let (repo, _) = hostile();
    let log = repo.log_json(false);
    assert_eq!(log[0]["message"], MESSAGE);
    assert_eq!(log[0]["meta"]["k"], TITLE);
    assert_eq!(log[0]["attachments"][0]["name"], ATTACHMENT);
    assert_eq!(log[0]["skipped"][0]["path"], LARGE);
    let show = repo.json(&["show", "@", "--json"]);
    assert_eq!(show["message"], MESSAGE);
    assert_eq!(show["meta"]["k"], TITLE);
    // The attachment is found by its exact name, and written byte for byte.
    let out = repo.ok(&["attachment", "@", ATTACHMENT]);
    assert_eq!(out.stdout_raw, b"note\n");
}

/// On a terminal the tool's own colours still work, and they are the only escape
/// sequences: every ESC starts an SGR sequence (`ESC [ digits;… m`), and no BEL or C1
/// character reaches the terminal.
#[test]
fn on_a_terminal_only_the_tools_own_colours_are_sent() {
    let (repo, _) = hostile();
    for args in ["log", "log --all --graph", "show @"] {
        let out = common::terminal_cmd(&repo, &format!("{} {args}", common::BIN))
            .env("GIT_PAGER", "cat")
            .output()
            .expect("script(1) runs");
        assert!(out.status.success(), "{args}: {out:?}");
        let shown = String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n");
        assert!(
            shown.contains("\x1b[33m"),
            "{args}: not coloured:\n{shown:?}"
        );
        assert!(shown.contains("evil \\033[2J\\a message"), "{shown:?}");
        let mut rest = shown.as_str();
        while let Some(at) = rest.find('\x1b') {
            rest = &rest[at + 1..];
            let end = rest.find('m').unwrap_or(rest.len());
            assert!(
                rest.starts_with('[')
                    && rest[1..end].chars().all(|c| c.is_ascii_digit() || c == ';'),
                "{args}: an escape that is not the tool's colour: {:?}",
                &rest[..rest.len().min(20)]
            );
        }
        assert!(
            !shown
                .chars()
                .any(|c| c.is_control() && !matches!(c, '\n' | '\x1b')),
            "{args}: a raw control character:\n{shown:?}"
        );
    }
}

/// The bidirectional controls that reorder what a terminal shows (U+202A–U+202E,
/// U+2066–U+2069: "Trojan Source"), one of each.
const BIDI: [char; 9] = [
    '\u{202a}', '\u{202b}', '\u{202c}', '\u{202d}', '\u{202e}', '\u{2066}', '\u{2067}', '\u{2068}',
    '\u{2069}',
];

#[test]
fn bidi_controls_are_escaped_in_log_show_and_blame() {
    let repo = Repo::new();
    let hidden: String = BIDI.iter().collect();
    let message = format!("fix {hidden} done");
    repo.write(
        "access.rs",
        format!("let admin = false; /*{hidden} }} if is_admin {{ */\n").as_bytes(),
    );
    let meta = format!("tool=edit{}", '\u{202e}');
    repo.ok(&["save", "-m", &message, "--meta", &meta]);
    // (`show` without `--stat` and `diff` print the file's own lines as git does; the
    // message and metadata above them are escaped as `--stat` shows.)
    for args in [
        vec!["log"],
        vec!["log", "--all", "--graph"],
        vec!["show", "@", "--stat"],
        vec!["blame", "access.rs"],
    ] {
        let out = repo.ok(&args);
        for (name, text) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
            assert!(
                !text.chars().any(|c| BIDI.contains(&c)),
                "{args:?}: a raw bidi control on {name}:\n{text:?}"
            );
        }
        // U+202E, RIGHT-TO-LEFT OVERRIDE, is the UTF-8 bytes E2 80 AE.
        assert!(
            out.stdout.contains("\\342\\200\\256"),
            "{args:?}: the control is shown escaped:\n{}",
            out.stdout
        );
    }
    // The porcelain format keeps the file's lines as they are, as git's does, but its
    // header lines are text for people too.
    let porcelain = repo.ok(&["blame", "--porcelain", "access.rs"]).stdout;
    let header = porcelain
        .lines()
        .find(|l| l.starts_with("message "))
        .unwrap();
    assert!(!header.chars().any(|c| BIDI.contains(&c)), "{header:?}");
    // --json keeps the exact text.
    assert_eq!(repo.log_json(false)[0]["message"], message.as_str());
}
