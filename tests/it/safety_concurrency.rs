//! Several processes at once: writers take turns through the store's bounded wait and
//! all succeed; a reader waits for a writer instead of failing.

use crate::common;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::Repo;

#[test]
fn eight_writers_at_once_all_succeed_and_form_one_line() {
    let repo = Repo::new();
    repo.write("shared.txt", b"start\n");
    repo.save("base");
    let children: Vec<_> = (0..8)
        .map(|i| {
            repo.sb
                .bin_cmd(
                    &repo.dir,
                    &[
                        "save",
                        "--allow-empty",
                        "--json",
                        "-m",
                        &format!("writer {i}"),
                    ],
                )
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "a writer failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // Each save moved the branch, so the current line holds all of them, each on top of
    // the one before: no writer's checkpoint was lost to a race.
    let line = repo.log_json(false);
    assert_eq!(line.len(), 9);
    for pair in line.windows(2) {
        assert_eq!(pair[0]["parents"][0], pair[1]["id"]);
    }
    let mut messages: Vec<_> = line[..8]
        .iter()
        .map(|c| c["message"].as_str().unwrap().to_string())
        .collect();
    messages.sort();
    let expected: Vec<_> = (0..8).map(|i| format!("writer {i}")).collect();
    assert_eq!(messages, expected);
}

#[test]
fn a_reader_waits_for_a_writer_and_then_succeeds() {
    let repo = Repo::new();
    repo.write("a.txt", b"a\n");
    repo.save("base");
    let mut writer = repo.sb.bin_cmd(&repo.dir, &["save", "--allow-empty", "-q"]);
    writer.env("GIT_CHECKPOINT_PAUSE", "locked:1500");
    let writer = writer.stdin(Stdio::null()).spawn().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let started = Instant::now();
    let out = repo.ok(&["log", "--json"]);
    let waited = started.elapsed();
    let list = common::parse_json(&out, "log");
    assert!(
        waited >= Duration::from_millis(800),
        "log did not wait: {waited:?}"
    );
    // It read the store after the writer finished: the writer's checkpoint is listed.
    assert_eq!(list.as_array().unwrap().len(), 2);
    assert!(writer.wait_with_output().unwrap().status.success());
}
