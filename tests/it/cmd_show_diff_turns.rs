//! A prompt's turn as a unit (`<session>:turn<N>`, `turn-1` for the last prompt): `show`
//! and `diff` of a turn are everything the agent did for that prompt, from the checkpoint
//! saved as it was submitted to the last one the session saved before its next prompt,
//! also after a rewind, where prompt numbers no longer follow the worktree's line.

use crate::common;

use common::claude::ClaudeSession;
use common::*;

const S: &str = "5e55a0a0-1111-4222-8333-444455556666";

/// Four prompts, with a rewind to prompt 2 before prompt 4, and a fifth that does
/// nothing.
fn session_with_a_rewind(r: &Repo) {
    r.write("f1", b"one\n");
    let mut s = ClaudeSession::new(r, S);
    s.prompt("Prompt one");
    s.write("f1", b"one, by prompt 1\n");
    s.prompt("Prompt two");
    s.write("f1", b"one, by prompt 2\n");
    s.write("f2", b"two\n");
    s.prompt("Prompt three");
    s.bash("echo three > f3", |r| r.write("f3", b"three\n"));
    r.ok(&["restore", "5e55:prompt3"]);
    s.prompt("Prompt four, after the rewind");
    s.write("f4", b"four\n");
    s.bash("rm f2", |r| r.remove("f2"));
    s.prompt("Prompt five: just a question");
}

fn lines(out: &Out) -> Vec<&str> {
    out.stdout.lines().collect()
}

#[test]
fn show_and_diff_of_a_turn_are_what_the_prompt_did() {
    let r = Repo::new();
    session_with_a_rewind(&r);

    // Prompt 3 is not on the line any more (the rewind came after it); its turn still
    // ends at its own last checkpoint, not at prompt 4's.
    let out = r.ok(&["diff", "5e55:turn3", "--name-status"]);
    assert_eq!(lines(&out), ["A\tf3"]);
    let out = r.ok(&["diff", "5e55:turn2", "--name-status"]);
    assert_eq!(lines(&out), ["M\tf1", "A\tf2"]);
    // The last prompt that did something, counted from the end.
    let out = r.ok(&["diff", "5e55:turn-2", "--name-status"]);
    assert_eq!(lines(&out), ["D\tf2", "A\tf4"]);
    // The last prompt did nothing.
    let out = r.ok(&["diff", "5e55:turn-1"]);
    assert_eq!(out.stdout, "");

    // The turn's patch is the diff between its two ends.
    let start = r.id("5e55:prompt4");
    let end = r.json(&["show", "5e55:turn4", "--json"])["turn_end"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        r.ok(&["diff", "5e55:turn4"]).stdout,
        r.ok(&["diff", &start, &end]).stdout
    );
    assert!(r.ok(&["diff", "5e55:turn4"]).stdout.contains("+four"));
    // A range reads as its two ends.
    assert_eq!(
        r.ok(&["diff", &format!("{start}..{end}")]).stdout,
        r.ok(&["diff", &start, &end]).stdout
    );
    // As in git, an empty side is `@`.
    assert_eq!(
        r.ok(&["diff", &format!("{start}..")]).stdout,
        r.ok(&["diff", &start, "@"]).stdout
    );
    // Where one checkpoint is expected, a turn names its end.
    assert_eq!(
        end,
        r.id("5e55:toolu_5e55_6"),
        "turn 4 ends at its last tool call"
    );
    let out = r.ok(&["diff", "5e55:turn2", "5e55:turn4", "--name-status"]);
    assert_eq!(lines(&out), ["D\tf2", "A\tf4"]);

    // show: the prompt's checkpoint (its message is the prompt), the turn's end, and
    // the turn's changes.
    let out = r.ok(&["show", "5e55:turn2", "--name-status"]);
    assert!(out.stdout.contains("before prompt 2: Prompt two"), "{out}");
    assert!(out.stdout.contains("Turn:   changes up to "), "{out}");
    assert!(out.stdout.ends_with("M\tf1\nA\tf2\n"), "{out}");
    let json = r.json(&["show", "5e55:turn-2", "--json"]);
    assert_eq!(json["meta"]["prompt"], "4");
    assert_eq!(json["turn_end"], end);
    let changed: Vec<&str> = json["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["path"].as_str().unwrap())
        .collect();
    assert_eq!(changed, ["f2", "f4"]);
    // The last prompt: `prompt-1` and `turn-1`.
    let json = r.json(&["show", "5e55:turn-1", "--json"]);
    assert_eq!(json["meta"]["prompt"], "5");
    assert_eq!(
        json["turn_end"], json["id"],
        "a turn that saved nothing ends where it starts"
    );
    assert_eq!(r.id("5e55:prompt-1"), r.id("5e55:prompt5"));
    // A plain checkpoint shows no turn.
    assert!(r.json(&["show", "@", "--json"]).get("turn_end").is_none());
}

#[test]
fn turns_that_do_not_exist_are_one_clear_error() {
    let r = Repo::new();
    session_with_a_rewind(&r);
    let cases: &[(&[&str], &str)] = &[
        (
            &["show", "5e55:turn6"],
            "has no checkpoint for 'turn6' (5 prompts recorded)",
        ),
        (&["diff", "5e55:turn-6"], "has no checkpoint for 'turn-6'"),
        (&["show", "5e55:turn0"], "has no checkpoint for 'turn0'"),
        (
            &["show", "ffff:turn1"],
            "no agent session id starts with 'ffff'",
        ),
        (&["diff", "5e55:turn2~1"], "a turn names two checkpoints"),
        (
            &["show", "5e55:prompt-9"],
            "has no checkpoint for 'prompt-9'",
        ),
    ];
    for (args, wanted) in cases {
        let out = r.run(args);
        assert_eq!(out.code, 1, "{args:?}: {out}");
        assert!(out.stderr.contains(wanted), "{args:?}: {out}");
        assert_eq!(out.stderr.lines().count(), 1, "{args:?}: {out}");
    }
}
