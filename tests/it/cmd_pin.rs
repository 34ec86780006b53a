//! `pin` and `unpin`: a pinned checkpoint outlives every gc rule and size budget until it
//! is unpinned; both take any revision, say what they did, change nothing when repeated,
//! and refuse a revision that names nothing with one line.

use crate::common;
use common::Repo;
use serde_json::json;

/// Four checkpoints on main, each with its own `f.txt`, oldest first.
fn four_checkpoints() -> (Repo, Vec<String>) {
    let repo = Repo::new();
    let saved = (0..4)
        .map(|i| {
            repo.write("f.txt", format!("version {i}\n").as_bytes());
            repo.save(&format!("v{i}"))
        })
        .collect();
    (repo, saved)
}

/// The line of `text` that is exactly `line`, or a failure showing `text`.
#[track_caller]
fn has_line(text: &str, line: &str) {
    assert!(
        text.lines().any(|l| l == line),
        "wanted the line {line:?} in:\n{text}"
    );
}

/// The ids `log --all --json` marks `"pinned": true`.
fn pinned(repo: &Repo) -> Vec<String> {
    repo.log_json(true)
        .iter()
        .filter(|c| c["pinned"] == true)
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_pinned_checkpoint_survives_every_rule_and_budget_and_unpin_lets_it_go() {
    let (repo, c) = four_checkpoints();
    repo.ok(&["pin", "@~2"]);
    assert_eq!(pinned(&repo), [c[1].as_str()]);

    repo.ok_past_the_undo_window(&["gc", "--keep", "1"]);
    assert_eq!(repo.log_ids(true), [c[3].as_str(), c[1].as_str()]);
    // A budget nothing meets: everything unprotected goes, the pin stays.
    repo.write("f.txt", b"version 4\n");
    let c4 = repo.save("v4");
    let out = repo.ok_past_the_undo_window(&["gc", "--max-size", "1"]);
    assert!(out.stderr.contains("still exceeds --max-size"), "{out}");
    assert_eq!(repo.log_ids(true), [c4.as_str(), c[1].as_str()]);
    // What it holds is all there.
    repo.ok(&["verify", "--read-data"]);
    repo.ok(&["restore", &c[1]]);
    assert_eq!(repo.read("f.txt"), b"version 1\n");
    repo.ok(&["restore", &c4]);

    repo.ok(&["unpin", &c[1]]);
    assert_eq!(pinned(&repo), Vec::<String>::new());
    repo.ok_past_the_undo_window(&["gc", "--keep", "1"]);
    assert_eq!(repo.log_ids(true), [c4.as_str()]);
    let out = repo.run(&["show", &c[1]]);
    assert_eq!(out.code, 1, "{out}");
    assert!(out.stderr.contains("unknown revision"), "{out}");
}

/// The text docs/commands.md shows, `[pinned]` on `log`, the `--json` document of
/// docs/json.md, and a repeat that changes nothing and exits 0.
#[test]
fn pin_and_unpin_say_what_they_did_and_a_repeat_changes_nothing() {
    let (repo, c) = four_checkpoints();
    let short = &c[2][..7];

    let out = repo.ok(&["pin", "@~1"]);
    has_line(
        &out.stdout,
        &format!("Pinned checkpoint {short}: gc will keep it"),
    );
    assert_eq!(pinned(&repo), [c[2].as_str()]);
    let log = repo.ok(&["log"]).stdout;
    for line in log.lines() {
        assert_eq!(line.contains("[pinned]"), line.starts_with(short), "{log}");
    }

    let state = repo.json_of(&["log", "--all"]);
    repo.ok(&["pin", &c[2]]);
    let again = repo.json_of(&["pin", short]);
    assert_eq!(
        again,
        json!({"id": c[2], "pinned": true, "changed": false}),
        "{again:#}"
    );
    assert_eq!(repo.json_of(&["log", "--all"]), state);

    let out = repo.ok(&["unpin", &c[2]]);
    has_line(&out.stdout, &format!("Unpinned checkpoint {short}"));
    assert_eq!(pinned(&repo), Vec::<String>::new());
    assert!(!repo.ok(&["log"]).stdout.contains("[pinned]"));

    let state = repo.json_of(&["log", "--all"]);
    repo.ok(&["unpin", &c[2]]);
    let again = repo.json_of(&["unpin", "@~1"]);
    assert_eq!(
        again,
        json!({"id": c[2], "pinned": false, "changed": false}),
        "{again:#}"
    );
    assert_eq!(repo.json_of(&["log", "--all"]), state);

    // A branch name is a revision too; `--json` says when something changed.
    assert_eq!(
        repo.json_of(&["pin", "main"]),
        json!({"id": c[3], "pinned": true, "changed": true})
    );
    assert_eq!(pinned(&repo), [c[3].as_str()]);
    assert_eq!(
        repo.json_of(&["unpin", "@"]),
        json!({"id": c[3], "pinned": false, "changed": true})
    );
    assert_eq!(pinned(&repo), Vec::<String>::new());
}

/// A revision that names nothing: one line, exit status 1, no pin made or taken away;
/// no revision at all is a usage error (2).
#[test]
fn pin_and_unpin_refuse_a_revision_that_names_nothing() {
    let (repo, c) = four_checkpoints();
    repo.ok(&["pin", &c[0]]);
    let state = repo.json_of(&["log", "--all"]);
    for command in ["pin", "unpin"] {
        for rev in ["nosuch", "ffffffff", "@~9", "3"] {
            let out = repo.run(&[command, rev]);
            assert_eq!(out.code, 1, "{command} {rev}: {out}");
            assert_eq!(out.stdout, "", "{command} {rev}: {out}");
            assert_eq!(out.stderr.lines().count(), 1, "{command} {rev}: {out}");
            assert!(
                out.stderr.starts_with("error: ") && out.stderr.contains(&format!("'{rev}'")),
                "{command} {rev}: {out}"
            );
            assert_eq!(repo.json_of(&["log", "--all"]), state, "{command} {rev}");
        }
        let out = repo.run(&[command]);
        assert_eq!(out.code, 2, "{command}: {out}");
        assert_eq!(repo.json_of(&["log", "--all"]), state, "{command}");
    }
    let unknown = repo.run(&["pin", "nosuch"]);
    assert!(
        unknown.stderr.contains("unknown revision 'nosuch'"),
        "{unknown}"
    );
}
