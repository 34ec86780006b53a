//! `log` as a stream: its lines reach the reader as they are made, and each line's
//! change summary is the checkpoint's own, against its own first parent, however the
//! listing order puts parents apart from their children.

use crate::common;
use std::io::{BufRead, BufReader};
use std::sync::mpsc;
use std::time::Duration;

use common::{spawn_paused, Repo};

/// A reader of `log` sees its first line while the command is still making the next:
/// the first screen does not wait for the whole history to be read. The command pauses
/// a long time after each line it hands to the output; the first line must arrive well
/// inside the first pause.
#[test]
fn log_lines_reach_the_reader_while_later_ones_are_still_made() {
    let repo = Repo::new();
    for i in 1..=3 {
        repo.write("a.txt", format!("step {i}\n").as_bytes());
        repo.save(&format!("step {i}"));
    }
    let mut child = spawn_paused(&repo, &["log"], "log-line-sent", 20_000);
    let stdout = child.stdout.take().unwrap();
    let (sent, first_line) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = BufReader::new(stdout).read_line(&mut line);
        let _ = sent.send(line);
    });
    let line = first_line.recv_timeout(Duration::from_secs(10));
    let still_making = child.try_wait().unwrap().is_none();
    let _ = child.kill();
    let _ = child.wait();
    let line = line.expect("the first line of log arrives while the rest is being made");
    assert!(line.contains("step 3"), "first line: {line:?}");
    assert!(still_making, "log had ended before its first line was read");
}

/// Summaries in a history where the listing puts a checkpoint next to one that is not
/// its parent (a fork off an old checkpoint), with changes in subdirectories, files that
/// grow, shrink, appear and go: each line says what that checkpoint changed against its
/// own first parent.
#[test]
fn each_summary_is_against_the_checkpoints_own_parent() {
    let repo = Repo::new();
    repo.write("a/x.txt", &[b'x'; 10]);
    repo.write("b/y.txt", &[b'y'; 20]);
    repo.write("top.txt", &[b't'; 5]);
    let base = repo.save("c1 base");
    repo.write("a/x.txt", &[b'x'; 15]);
    repo.save("c2 grow a/x");
    repo.remove("b/y.txt");
    repo.write("top.txt", &[b't'; 2]);
    repo.save("c3 drop b/y, shrink top");
    repo.ok(&["fork", &base, "-b", "side"]);
    repo.write("b/y.txt", &[b'y'; 26]);
    repo.write("b/c/deep.txt", &[b'd'; 3]);
    repo.save("c4 side: grow b/y, add b/c/deep");
    repo.ok(&["switch", "main"]);
    repo.write("a/z.txt", &[b'z'; 7]);
    repo.save("c5 add a/z");

    let out = repo.ok(&["log", "--all"]).stdout;
    let summary = |message: &str| -> String {
        let line = out
            .lines()
            .find(|l| l.contains(message))
            .unwrap_or_else(|| panic!("no line for {message:?}:\n{out}"));
        line[line.rfind('[').unwrap()..].to_string()
    };
    for (message, expected) in [
        ("c5 add a/z", "[1 file +7 B]"),
        ("c4 side", "[2 files +9 B]"),
        ("c3 drop", "[2 files -23 B]"),
        ("c2 grow", "[1 file +5 B]"),
        ("c1 base", "[3 files +35 B]"),
    ] {
        assert_eq!(summary(message), expected, "{message}:\n{out}");
    }
    // The order that puts a checkpoint after one that is not its parent.
    let order: Vec<&str> = out
        .lines()
        .filter_map(|l| {
            l.split_whitespace()
                .find(|w| w.len() == 2 && w.starts_with('c'))
        })
        .collect();
    assert_eq!(order, ["c5", "c3", "c2", "c4", "c1"], "{out}");
}
