//! Retention in the units users think in (issue 36, item 5): `gc --keep-prompts N` and
//! `--keep-sessions N` (and `checkpoint.gc.keepPrompts`/`keepSessions`) keep whole
//! prompts and sessions; every gc keeps a kept prompt's turn addressable; and a turn gc
//! removed says so, and when.

use crate::common;

use common::claude::ClaudeSession;
use common::*;
use serde_json::Value;

const A: &str = "aaaa1111-0000-4000-8000-000000000001";
const B: &str = "bbbb2222-0000-4000-8000-000000000002";

/// `prompts` prompts of session `id`, each writing `tools` files (`p<N>-<K>.txt`).
fn prompts<'r>(r: &'r Repo, id: &str, prompts: u32, tools: u32) -> ClaudeSession<'r> {
    let mut s = ClaudeSession::new(r, id);
    for n in 1..=prompts {
        s.prompt(&format!("Prompt {n}"));
        for k in 1..=tools {
            s.write(&format!("{}-p{n}-{k}.txt", &id[..4]), b"x\n");
        }
    }
    s
}

/// What `diff <rev>` prints (a turn's changes).
fn diff(r: &Repo, rev: &str) -> String {
    r.ok(&["diff", rev]).stdout
}

/// The one-line error `show <rev>` fails with.
#[track_caller]
fn show_error(r: &Repo, rev: &str) -> String {
    let out = r.run(&["show", rev]);
    assert_eq!(out.code, 1, "{out}");
    out.stderr.trim_end().to_string()
}

/// The message of each checkpoint `log --all` lists, newest first.
fn messages(r: &Repo) -> Vec<String> {
    let log: Vec<Value> = r.log_json(true);
    log.iter()
        .map(|c| c["message"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_turn_gc_removed_says_so_and_when() {
    // The repro: three prompts, `gc --keep 5` takes prompts 1 and 2's
    // checkpoints but for the last of turn 2.
    let r = Repo::new();
    prompts(&r, A, 3, 3);
    let out = r.ok(&["gc", "--keep", "5"]);
    assert!(out.stdout.contains("Removed 7 of 12 checkpoints"), "{out}");
    let error = show_error(&r, "aaaa1111:turn2");
    let (head, when) = error
        .split_once(" at ")
        .unwrap_or_else(|| panic!("{error}"));
    assert_eq!(
        head,
        format!("error: session {A} has no checkpoint for 'turn2': gc removed its prompts up to 2"),
        "{error}"
    );
    let stamp = when.split_whitespace().next().unwrap();
    assert!(stamp.parse::<jiff::Timestamp>().is_ok(), "a time: {error}");
    assert!(
        error.ends_with("(--keep-prompts keeps whole prompts)"),
        "{error}"
    );
    assert!(show_error(&r, "aaaa1111:turn1").contains("gc removed its prompts up to 2"));
    // Turn 3 is whole, and a turn gc never saw is no business of gc's.
    r.ok(&["show", "aaaa1111:turn3"]);
    let never = show_error(&r, "aaaa1111:turn9");
    assert!(!never.contains("gc removed"), "{never}");
}

#[test]
fn any_gc_keeps_a_kept_prompts_turn_addressable() {
    let r = Repo::new();
    prompts(&r, A, 3, 3);
    let before: Vec<String> = (1..=3)
        .map(|n| diff(&r, &format!("aaaa1111:turn{n}")))
        .collect();
    // Prompt 1's checkpoint stays (pinned): so does the last of its turn, and turn 1
    // still ends where it ended, though prompt 2's checkpoint goes.
    r.ok(&["pin", "aaaa1111:prompt1"]);
    r.ok(&["gc", "--keep", "2"]);
    assert_eq!(diff(&r, "aaaa1111:turn1"), before[0]);
    // Prompts 2 and 3 went (turn 3's last two checkpoints are the newest two).
    assert!(show_error(&r, "aaaa1111:turn2").contains("gc removed its prompts up to 3"));
}

#[test]
fn keep_prompts_keeps_the_newest_prompts_whole() {
    let r = Repo::new();
    let mut a = prompts(&r, A, 2, 2);
    // The user saves by hand between prompts; the revert is a checkpoint of its own.
    r.write("mine.txt", b"mine\n");
    r.save("the user's own save");
    a.prompt("Prompt 3");
    a.write("aaaa-p3-1.txt", b"x\n");
    r.ok(&["revert", "aaaa1111:toolu_aaaa_1"]);
    a.write("aaaa-p3-2.txt", b"x\n");
    let before: Vec<String> = (2..=3)
        .map(|n| diff(&r, &format!("aaaa1111:turn{n}")))
        .collect();

    let dry = r.json(&["gc", "--keep-prompts", "2", "--dry-run", "--json"]);
    assert_eq!(dry["policy"], "keep 2 prompts", "{dry:#}");
    let out = r.ok(&["gc", "--keep-prompts", "2"]);
    assert_eq!(diff(&r, "aaaa1111:turn2"), before[0], "{out}");
    assert_eq!(diff(&r, "aaaa1111:turn3"), before[1], "{out}");
    // Prompt 1's turn went, and the save between the turns, which no rule keeps.
    let kept = messages(&r);
    assert!(
        kept.iter()
            .any(|m| m.starts_with("revert of aaaa1111:toolu_aaaa_1")),
        "the revert inside turn 3 stays: {kept:?}"
    );
    assert!(!kept.iter().any(|m| m == "the user's own save"), "{kept:?}");
    assert!(!kept.iter().any(|m| m.contains("Prompt 1")), "{kept:?}");
    assert_eq!(kept.len(), 3 + 4, "turn 2's three, turn 3's four: {kept:?}");
    assert!(show_error(&r, "aaaa1111:turn1").contains("gc removed its prompts up to 1"));
}

#[test]
fn keep_sessions_keeps_the_most_recently_active_sessions_whole() {
    let r = Repo::new();
    prompts(&r, A, 2, 1);
    prompts(&r, B, 2, 1);
    let turns: Vec<String> = (1..=2)
        .map(|n| diff(&r, &format!("bbbb2222:turn{n}")))
        .collect();
    r.ok(&["gc", "--keep-sessions", "1"]);
    for n in 1..=2 {
        assert_eq!(diff(&r, &format!("bbbb2222:turn{n}")), turns[n - 1]);
    }
    let sessions = r.json(&["sessions", "--json"]);
    assert_eq!(sessions.as_array().unwrap().len(), 1, "{sessions:#}");
    let gone = show_error(&r, "aaaa1111:turn1");
    assert!(
        gone.starts_with(&format!(
            "error: gc removed every checkpoint of session {A} at "
        )),
        "{gone}"
    );
}

#[test]
fn configured_keep_prompts_runs_after_each_hook_save() {
    let r = Repo::new();
    r.git(&["config", "checkpoint.gc.keepPrompts", "1"]);
    let mut a = prompts(&r, A, 2, 2);
    a.prompt("Prompt 3");
    a.write("last.txt", b"x\n");
    let kept = messages(&r);
    assert_eq!(kept.len(), 2, "prompt 3's two checkpoints: {kept:?}");
    assert!(show_error(&r, "aaaa1111:turn2").contains("gc removed its prompts up to 2"));
    r.git(&["config", "checkpoint.gc.keepSessions", "many"]);
    r.write("more.txt", b"x\n");
    let out = r.ok(&["save", "-m", "more"]);
    assert!(
        out.stderr.contains("automatic gc skipped")
            && out.stderr.contains("checkpoint.gc.keepSessions"),
        "{out}"
    );
}
