//! `restore <session>:prompt<N> --only-session`: two Claude Code sessions and a user
//! share one worktree; putting back what one session wrote since its prompt 2 must leave
//! the other session's and the user's files byte for byte, and list (and leave) a path
//! someone else changed too, unless `--force`.

use crate::common;

use common::claude::ClaudeSession;
use common::*;

const A: &str = "aaaa1111-0000-4000-8000-000000000001";
const B: &str = "bbbb2222-0000-4000-8000-000000000002";

/// The shared history: sessions A and B take turns, the user edits between them.
/// Returns the worktree as it was when A's prompt 2 was submitted.
fn two_sessions_and_a_user(r: &Repo) -> Snap {
    r.write("shared.txt", b"shared v0\n");
    r.write("old.txt", b"old\n");
    r.write("user.txt", b"user v0\n");
    let mut a = ClaudeSession::new(r, A);
    let mut b = ClaudeSession::new(r, B);

    a.prompt("Start module a");
    a.write("a/one.txt", b"a one v1\n");
    b.prompt("Start module b");
    b.write("b/one.txt", b"b one v1\n");
    // The user, between turns (before the target: not looked at).
    r.write("user.txt", b"user v1\n");

    a.prompt("Rework module a");
    let at_prompt2 = r.snapshot();
    a.write("a/one.txt", b"a one v2\n");
    a.write("a/two.txt", b"a two v2\n");
    a.bash("rm old.txt", |r| r.remove("old.txt"));
    a.write("shared.txt", b"shared by a\n");

    // The user edits A's file and their own between turns.
    r.write("a/one.txt", b"a one v2, fixed by the user\n");
    r.write("user.txt", b"user v2\n");
    r.write("notes.md", b"notes\n");

    b.prompt("Touch the shared file");
    b.write("b/one.txt", b"b one v2\n");
    b.write("shared.txt", b"shared by a, then b\n");

    a.prompt("More on a");
    a.write("a/two.txt", b"a two v3\n");
    a.bash("touch a/three.txt", |r| r.write("a/three.txt", b""));
    // Unsaved, and the user's.
    r.write("scratch.txt", b"scratch\n");
    at_prompt2
}

#[test]
fn only_what_the_session_wrote_goes_back_and_conflicts_stay_unless_forced() {
    let r = Repo::new();
    let at_prompt2 = two_sessions_and_a_user(&r);
    let before = r.snapshot();
    let rev = format!("{}:prompt2", &A[..8]);

    // The dry run changes nothing and says the same as the real run will.
    let out = r.run(&["restore", &rev, "--only-session", "--dry-run", "--json"]);
    assert_eq!(out.code, 1, "conflicts a real run would leave: {out}");
    let dry = parse_json(&out, "restore --only-session --dry-run --json");
    assert_eq!(r.snapshot(), before, "a dry run changes nothing");
    assert_eq!(dry["session"], A);
    assert_eq!(
        dry["changed_by_session"],
        serde_json::json!([
            "a/one.txt",
            "a/three.txt",
            "a/two.txt",
            "old.txt",
            "shared.txt"
        ])
    );
    let conflicts: Vec<&str> = dry["conflicts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["path"].as_str().unwrap())
        .collect();
    assert_eq!(conflicts, ["a/one.txt", "shared.txt"]);
    // shared.txt: session B's tool call; a/one.txt: the user, seen at B's prompt.
    let shared_by = &dry["conflicts"][1]["changed_by"];
    assert_eq!(shared_by.as_array().unwrap().len(), 1, "{shared_by}");
    assert_eq!(shared_by[0]["session"], B);
    assert_eq!(shared_by[0]["tool_call"], true);
    let one_by = &dry["conflicts"][0]["changed_by"];
    assert_eq!(one_by[0]["tool_call"], false, "the user's edit: {one_by}");
    assert_eq!(dry["written"], serde_json::json!(["old.txt"]));
    assert_eq!(
        dry["deleted"],
        serde_json::json!(["a/three.txt", "a/two.txt"])
    );

    let out = r.run(&["restore", &rev, "--only-session"]);
    assert_eq!(out.code, 1, "conflicts left alone exit 1: {out}");
    assert!(
        out.stderr.contains("left 2 paths alone"),
        "one clear line: {out}"
    );
    for path in ["a/one.txt", "shared.txt"] {
        assert!(
            out.stdout
                .contains(&format!("Left {path}: changed by this session and by")),
            "{out}"
        );
    }
    assert!(
        out.stdout
            .contains(&format!("by a tool call of session {}", &B[..8])),
        "{out}"
    );
    assert!(
        out.stdout
            .contains("Left a/one.txt: changed by this session and by the user"),
        "{out}"
    );

    // Exactly A's unconflicted paths are back as they were at prompt 2; everything
    // else, B's files, the user's and the unsaved scratch file, is byte for byte as it was.
    let mut expected = before.clone();
    expected.remove(b"a/two.txt".as_slice());
    expected.remove(b"a/three.txt".as_slice());
    expected.insert(
        b"old.txt".to_vec(),
        at_prompt2[b"old.txt".as_slice()].clone(),
    );
    assert_snap_eq(&expected, &r.snapshot(), "after restore --only-session");
    // The unsaved scratch file was saved first, as any restore does.
    let safety = r.json(&["log", "--all", "--json"]);
    assert!(
        safety.to_string().contains("before restore to"),
        "a safety checkpoint: {safety}"
    );

    // Forced, the two conflicts go back too; still nothing else moves.
    let out = r.ok(&["restore", &rev, "--only-session", "--force"]);
    assert!(out.stdout.contains("Overwrote shared.txt"), "{out}");
    for path in ["a/one.txt", "shared.txt"] {
        expected.insert(
            path.as_bytes().to_vec(),
            at_prompt2[path.as_bytes()].clone(),
        );
    }
    assert_snap_eq(&expected, &r.snapshot(), "after --force");
    assert_eq!(r.read_string("user.txt"), "user v2\n");
    assert_eq!(r.read_string("b/one.txt"), "b one v2\n");

    // Run again, nothing is left to do: what is already as it was is no conflict.
    let again = r.json(&["restore", &rev, "--only-session", "--json"]);
    assert_eq!(again["conflicts"], serde_json::json!([]), "{again}");
    assert_eq!(again["written"], serde_json::json!([]), "{again}");
    assert_snap_eq(&expected, &r.snapshot(), "a second run");
}

#[test]
fn another_revision_takes_the_session_by_name() {
    let r = Repo::new();
    two_sessions_and_a_user(&r);
    let before = r.snapshot();
    // B since its own prompt 2, named by id: b/one.txt goes back; shared.txt too, since
    // nobody else changed it after B did.
    let prompt = r.id(&format!("{}:prompt2", &B[..8]));
    let out = r.ok(&["restore", &prompt, "--only-session", &B[..6]]);
    assert!(out.stdout.contains("Restored checkpoint"), "{out}");
    let mut expected = before;
    expected.insert(b"b/one.txt".to_vec(), node_of(b"b one v1\n"));
    expected.insert(b"shared.txt".to_vec(), node_of(b"shared by a\n"));
    assert_snap_eq(&expected, &r.snapshot(), "B's own paths only");
}

fn node_of(data: &[u8]) -> Node {
    let scratch = Repo::new();
    scratch.write("f", data);
    scratch.snapshot()[b"f".as_slice()].clone()
}

#[test]
fn bad_sessions_and_revisions_are_one_clear_error() {
    let r = Repo::new();
    two_sessions_and_a_user(&r);
    let before = r.snapshot();
    let cases: &[(&[&str], &str)] = &[
        (
            &["restore", "ffff:prompt1", "--only-session"],
            "no agent session id starts with 'ffff'",
        ),
        (
            &["restore", "aaaa:prompt9", "--only-session"],
            "has no checkpoint for 'prompt9'",
        ),
        (&["restore", "@~1", "--only-session"], "names no session"),
        (
            &["restore", "@~1", "--only-session", "zzzz"],
            "no agent session id starts with 'zzzz'",
        ),
        (&["restore", "@", "--force"], "--only-session"),
    ];
    for (args, wanted) in cases {
        let out = r.run(args);
        assert_ne!(out.code, 0, "{args:?}: {out}");
        assert!(out.stderr.contains(wanted), "{args:?}: {out}");
        assert_eq!(r.snapshot(), before, "{args:?} changed nothing");
    }
    // A checkpoint off the current line (prompt 3 of A, after a rewind to its prompt 2).
    r.ok(&["restore", "aaaa:prompt2"]);
    let out = r.run(&["restore", "aaaa:prompt3", "--only-session"]);
    assert_eq!(out.code, 1, "{out}");
    assert!(
        out.stderr
            .contains("is not an ancestor of the current checkpoint"),
        "{out}"
    );
}
