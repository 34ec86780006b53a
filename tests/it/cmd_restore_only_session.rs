//! `restore <session>:prompt<N> --only-session`: two Claude Code sessions and a user
//! share one worktree; putting back what one session wrote since its prompt 2 must leave
//! the other session's and the user's files byte for byte, and list (and leave) a path
//! someone else changed too, unless `--force`.

use crate::common;

use common::claude::ClaudeSession;
use common::*;
use serde_json::Value;

const A: &str = "aaaa1111-0000-4000-8000-000000000001";
const B: &str = "bbbb2222-0000-4000-8000-000000000002";
/// The conversation of Cursor's payloads in `tests/fixtures/agents/cursor/`.
const CURSOR_CONVERSATION: &str = "668320d2-2fd8-4888-b33c-2a466fec86e7";

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
    // A shell command names no file: its changes are the session's because a hook
    // brackets it (PreToolUse, hooked by hand).
    a.bash_hooked_before("rm old.txt", |r| r.remove("old.txt"));
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
    // a/three.txt is not among them: the Bash call that made it names no file, and no
    // hook brackets it, so the user may have made it meanwhile.
    assert_eq!(
        dry["changed_by_session"],
        serde_json::json!(["a/one.txt", "a/two.txt", "old.txt", "shared.txt"])
    );
    let conflicts: Vec<&str> = dry["conflicts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["path"].as_str().unwrap())
        .collect();
    assert_eq!(conflicts, ["a/one.txt", "a/three.txt", "shared.txt"]);
    // shared.txt: session B's tool call; a/one.txt: the user, seen at B's prompt.
    let shared_by = &dry["conflicts"][2]["changed_by"];
    assert_eq!(shared_by.as_array().unwrap().len(), 1, "{shared_by}");
    assert_eq!(shared_by[0]["session"], B);
    assert_eq!(shared_by[0]["tool_call"], true);
    assert_eq!(shared_by[0]["unsure"], false);
    let one_by = &dry["conflicts"][0]["changed_by"];
    assert_eq!(one_by[0]["tool_call"], false, "the user's edit: {one_by}");
    let three_by = &dry["conflicts"][1]["changed_by"];
    assert_eq!(
        (&three_by[0]["session"], &three_by[0]["unsure"]),
        (&serde_json::json!(A), &serde_json::json!(true)),
        "{three_by}"
    );
    assert_eq!(dry["written"], serde_json::json!(["old.txt"]));
    assert_eq!(dry["deleted"], serde_json::json!(["a/two.txt"]));

    let out = r.run(&["restore", &rev, "--only-session"]);
    assert_eq!(out.code, 1, "conflicts left alone exit 1: {out}");
    assert!(
        out.stderr.contains("left 3 paths alone"),
        "one clear line: {out}"
    );
    assert!(
        out.stdout.contains(
            "Left a/three.txt: changed by someone during a tool call of this session that does not name it"
        ),
        "{out}"
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
    expected.insert(
        b"old.txt".to_vec(),
        at_prompt2[b"old.txt".as_slice()].clone(),
    );
    assert_snap_eq(&expected, &r.snapshot(), "after restore --only-session");
    // The unsaved scratch file was saved first, as any restore does.
    let safety = r.json(&["log", "--all", "--json"]);
    assert!(
        safety
            .to_string()
            .contains(&format!("before restore of {}'s files to {rev}", &A[..8])),
        "a safety checkpoint: {safety}"
    );

    // Forced, the three conflicts go back too; still nothing else moves.
    let out = r.ok(&["restore", &rev, "--only-session", "--force"]);
    assert!(out.stdout.contains("Overwrote shared.txt"), "{out}");
    expected.remove(b"a/three.txt".as_slice());
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

/// Cursor's hook payloads (`tests/fixtures/agents/cursor/`), sent as Cursor sends them:
/// from the user's home, the workspace roots saying where the project is.
struct Cursor<'r> {
    repo: &'r Repo,
    root: String,
    other_root: String,
}

impl Cursor<'_> {
    fn new(repo: &Repo) -> Cursor<'_> {
        Cursor {
            repo,
            root: repo.dir.to_string_lossy().into_owned(),
            other_root: repo.scratch("other-root").to_string_lossy().into_owned(),
        }
    }

    fn send(&self, payload: Value) {
        let out = run_agent_hook(
            &self.repo.sb,
            &self.repo.home(),
            "cursor",
            payload.to_string().as_bytes(),
        );
        assert_eq!((out.code, out.stderr.as_str()), (0, ""), "{out}");
    }

    fn fixture(&self, name: &str, vars: &[(&str, &str)]) -> Value {
        let mut all = vec![
            ("ROOT", self.root.as_str()),
            ("OTHER_ROOT", self.other_root.as_str()),
            ("GENERATION", "gen-1"),
        ];
        all.extend_from_slice(vars);
        agent_fixture("cursor", name, &all)
    }

    fn prompt(&self, text: &str) {
        self.send(self.fixture("before_submit_prompt", &[("PROMPT", text)]));
    }

    fn edited(&self, file: &str) {
        self.send(self.fixture("after_file_edit", &[("FILE", file)]));
    }

    /// A shell command, with Cursor's `beforeShellExecution` first when `hooked_before`.
    fn shell(&self, command: &str, hooked_before: bool, run: impl FnOnce(&Repo)) {
        let after = self.fixture("after_shell_execution", &[("COMMAND", command)]);
        if hooked_before {
            let mut before = after.clone();
            before["hook_event_name"] = "beforeShellExecution".into();
            self.send(before);
        }
        run(self.repo);
        self.send(after);
    }
}

/// Cursor has no hook before a file edit: what changed between the prompt and the
/// `afterFileEdit` that names `agent.txt` is the agent's only for `agent.txt`. The user's
/// own file, written in the IDE meanwhile, is listed and left alone, and the restore
/// names the checkpoint that undoes it. A shell command run between its own before and
/// after hooks is the session's whole; one with no hook before it is not.
#[test]
fn a_users_edit_while_a_cursor_agent_works_is_never_put_back() {
    let r = Repo::new();
    r.write("base.txt", b"base\n");
    let cursor = Cursor::new(&r);
    cursor.prompt("Add agent.txt");
    // While the agent works, the user writes a file of their own.
    r.write("user.txt", b"the user's\n");
    r.write("agent.txt", b"the agent's\n");
    cursor.edited("agent.txt");
    cursor.shell("echo hooked > hooked.txt", true, |r| {
        r.write("hooked.txt", b"hooked\n")
    });
    cursor.shell("echo unhooked > unhooked.txt", false, |r| {
        r.write("unhooked.txt", b"unhooked\n")
    });
    let before = r.snapshot();
    let rev = format!("{}:prompt1", &CURSOR_CONVERSATION[..8]);

    let out = r.run(&["restore", &rev, "--only-session", "--json"]);
    assert_eq!(out.code, 1, "paths left alone exit 1: {out}");
    let report = parse_json(&out, "restore --only-session --json");
    assert_eq!(
        report["changed_by_session"],
        serde_json::json!(["agent.txt", "hooked.txt"]),
        "{report:#}"
    );
    let left: Vec<&str> = report["conflicts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["path"].as_str().unwrap())
        .collect();
    assert_eq!(left, ["unhooked.txt", "user.txt"], "{report:#}");
    let user_by = &report["conflicts"][1]["changed_by"][0];
    assert_eq!(user_by["unsure"], true, "{report:#}");
    assert_eq!(user_by["session"], CURSOR_CONVERSATION, "{report:#}");
    assert_eq!(
        report["deleted"],
        serde_json::json!(["agent.txt", "hooked.txt"])
    );
    assert_eq!(r.read("user.txt"), b"the user's\n");
    assert_eq!(r.read("unhooked.txt"), b"unhooked\n");
    assert!(!r.exists("agent.txt") && !r.exists("hooked.txt"));

    // Nothing was unsaved, so no new checkpoint: the report names the one that holds
    // the worktree as the restore found it, and restoring it undoes the restore.
    let undo = report["worktree_checkpoint"]
        .as_str()
        .unwrap_or_else(|| panic!("no way back named: {report:#}"));
    r.ok(&["restore", undo]);
    assert_snap_eq(&before, &r.snapshot(), "undone");

    // The text says who may have changed the file and how to undo.
    let out = r.run(&["restore", &rev, "--only-session"]);
    assert_eq!(out.code, 1, "{out}");
    assert!(
        out.stdout.contains(
            "Left user.txt: changed by someone during a tool call of this session that does not name it (checkpoint"
        ),
        "{out}"
    );
    assert!(
        out.stdout
            .contains("The worktree was saved already as checkpoint"),
        "{out}"
    );
    assert_eq!(r.read("user.txt"), b"the user's\n");
}
