//! `log` as a query tool: revisions, ranges (fetched branches too), `-- <path>`,
//! `--session`, `--grep`, the agent label on hook checkpoints, and the `path` metadata
//! of a shell step taken from what it changed.

use crate::common;
use std::collections::BTreeSet;

use common::*;
use serde_json::{json, Value};

const SESSION: &str = "9a8b7c6d-1111-4222-8333-944455556666";

/// The ids `log --json` lists for `args`.
fn ids(r: &Repo, args: &[&str]) -> Vec<String> {
    let mut all = vec!["log", "--json"];
    all.extend_from_slice(args);
    r.json(&all)
        .as_array()
        .unwrap()
        .iter()
        .map(|c| id_of(c).unwrap())
        .collect()
}

fn set(ids: Vec<String>) -> BTreeSet<String> {
    ids.into_iter().collect()
}

/// Sends one Claude Code hook payload for [`SESSION`].
fn claude(r: &Repo, mut payload: Value) {
    payload["session_id"] = json!(SESSION);
    payload["cwd"] = json!(r.dir);
    hook_answers(&r.sb, &r.dir, "claude", payload.to_string().as_bytes(), "");
}

fn bash_step(r: &Repo, id: &str, command: &str) {
    claude(
        r,
        json!({"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": id,
               "tool_input": {"command": command}, "tool_response": {}}),
    );
}

#[test]
fn log_of_paths_equals_diffing_every_checkpoint_with_its_parent() {
    let r = Repo::new();
    r.write("a.txt", b"a1\n");
    r.write("dir/b.txt", b"b1\n");
    r.write("dir/sub/c.txt", b"c1\n");
    r.save("first");
    r.write("a.txt", b"a2\n");
    r.save("a changes");
    r.write("dir/sub/c.txt", b"c2\n");
    r.save("c changes");
    r.write("other.txt", b"o\n");
    r.save("other appears");
    r.remove("dir/b.txt");
    r.save("b goes");
    r.set_exec("a.txt", true);
    r.save("a becomes executable");
    // A second line of history, so that --all differs from the current line.
    r.ok(&["fork", "@~3", "-b", "side"]);
    r.write("dir/sub/c.txt", b"side\n");
    r.save("c on side");
    r.save_forced("empty");

    // The expectation, from `show --name-only` of every checkpoint.
    let every = r.log_ids(true);
    let touched = |id: &str| -> Vec<String> {
        let out = r.ok(&["show", "--name-only", id]).stdout;
        let record = r.json(&["show", "--json", id]);
        let files: Vec<String> = record["changes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["path"].as_str().unwrap().to_string())
            .collect();
        for f in &files {
            assert!(out.lines().any(|l| l == f), "{id}: {f} not in\n{out}");
        }
        files
    };
    let changed: Vec<(String, Vec<String>)> =
        every.iter().map(|id| (id.clone(), touched(id))).collect();
    for query in [
        "a.txt",
        "dir",
        "dir/sub/c.txt",
        "dir/b.txt",
        "other.txt",
        "nothing",
    ] {
        let expected: BTreeSet<String> = changed
            .iter()
            .filter(|(_, files)| {
                files
                    .iter()
                    .any(|f| f == query || f.starts_with(&format!("{query}/")))
            })
            .map(|(id, _)| id.clone())
            .collect();
        assert_eq!(
            set(ids(&r, &["--all", "--", query])),
            expected,
            "log --all -- {query}"
        );
    }
    // Without --all, only the current line; relative to the current directory.
    let on_line = set(ids(&r, &["--", "dir/sub/c.txt"]));
    assert_eq!(on_line.len(), 3, "{on_line:?}");
    let below = set(ids(&r, &[]))
        .into_iter()
        .filter(|id| {
            changed
                .iter()
                .any(|(c, f)| c == id && f.contains(&"dir/sub/c.txt".to_string()))
        })
        .collect::<BTreeSet<_>>();
    assert_eq!(on_line, below);
    let from_sub =
        r.sb.ok_in(&r.p("dir/sub"), &["log", "--json", "--", "c.txt"]);
    assert_eq!(
        set(parse_json(&from_sub, "log")
            .as_array()
            .unwrap()
            .iter()
            .map(|c| id_of(c).unwrap())
            .collect()),
        on_line
    );
}

#[test]
fn revisions_ranges_and_grep() {
    let r = Repo::new();
    r.write("f", b"1\n");
    let one = r.save("one: Start");
    r.write("f", b"2\n");
    let two = r.save("two: fix parser");
    r.ok(&["fork", "@", "-b", "side"]);
    r.write("g", b"side\n");
    let side = r.save("side: FIX lexer");
    r.ok(&["switch", "main"]);
    r.write("f", b"3\n");
    let three = r.save("three");

    assert_eq!(
        ids(&r, &["side"]),
        vec![side.clone(), two.clone(), one.clone()]
    );
    assert_eq!(ids(&r, &["main..side"]), vec![side.clone()]);
    assert_eq!(ids(&r, &["side..main"]), vec![three.clone()]);
    assert_eq!(
        ids(&r, &["side.."]),
        vec![three.clone()],
        "an empty end is @"
    );
    assert_eq!(
        set(ids(&r, &["main", "side"])),
        set(vec![one.clone(), two.clone(), three.clone(), side.clone()])
    );
    assert_eq!(ids(&r, &["main~1"]), vec![two.clone(), one.clone()]);
    assert_eq!(
        ids(&r, &[&format!("{one}..main")]),
        vec![three.clone(), two.clone()]
    );
    // --grep: a substring of the message, whatever its case; combined with a range.
    assert_eq!(
        ids(&r, &["--all", "--grep", "fix"]),
        vec![side.clone(), two.clone()]
    );
    assert_eq!(
        ids(&r, &[&format!("{one}..side"), "--grep", "FIX"]),
        vec![side.clone(), two.clone()]
    );
    assert_eq!(ids(&r, &["--grep", "lexer"]), Vec::<String>::new());
    // The text list and the graph take revisions too.
    let graph = r.ok(&["log", "--graph", "main", "side"]).stdout;
    for message in ["one: Start", "two: fix parser", "side: FIX lexer", "three"] {
        assert!(graph.contains(message), "{graph}");
    }

    for (args, error) in [
        (vec!["log", "nosuch"], "unknown revision 'nosuch'"),
        (
            vec!["log", "main...side"],
            "malformed revision 'main...side'",
        ),
        (vec!["log", "main..nosuch"], "unknown revision 'nosuch'"),
        (vec!["log", "HEAD"], "try '@'"),
    ] {
        let out = r.run(&args);
        assert_eq!(out.code, 1, "{args:?}: {out}");
        assert_eq!(out.stderr.lines().count(), 1, "{args:?}: {out}");
        assert!(out.stderr.contains(error), "{args:?}: {out}");
    }
    let outside = r.run(&["log", "--", "../elsewhere"]);
    assert_ne!(outside.code, 0, "{outside}");
    assert!(outside.stderr.contains("outside the worktree"), "{outside}");
}

#[test]
fn hook_steps_show_their_session_and_a_shell_step_records_the_paths_it_changed() {
    let r = Repo::new();
    r.write("src/main.c", b"int main;\n");
    r.ok(&["hooks", "install", "claude"]);
    r.write("README", b"user wrote this\n");
    r.save("by hand: readme");
    claude(
        &r,
        json!({"hook_event_name": "UserPromptSubmit", "prompt": "rename things"}),
    );
    // A shell command edits two files; its payload names none.
    r.write("src/main.c", b"int main2;\n");
    r.write("src/util.c", b"int util;\n");
    bash_step(
        &r,
        "toolu_1",
        "sed -i s/main/main2/ src/main.c && echo > src/util.c",
    );
    // A file tool that names its file.
    r.write("docs.txt", b"docs\n");
    claude(
        &r,
        json!({"hook_event_name": "PostToolUse", "tool_name": "Write", "tool_use_id": "toolu_2",
               "tool_input": {"file_path": r.p("docs.txt"), "content": "docs\n"},
               "tool_response": {}}),
    );
    // A command that changes nothing records no path.
    bash_step(&r, "toolu_3", "ls");

    let bash = r.json(&["show", "--json", &format!("{SESSION}:toolu_1")]);
    assert_eq!(bash["meta"]["path"], "src/main.c", "{bash}");
    assert_eq!(bash["meta"]["paths"], "2", "{bash}");
    let write = r.json(&["show", "--json", &format!("{SESSION}:toolu_2")]);
    assert_eq!(write["meta"]["path"], "docs.txt", "{write}");
    assert_eq!(write["meta"]["paths"], "1", "{write}");
    let ls = r.json(&["show", "--json", &format!("{SESSION}:toolu_3")]);
    assert!(ls["meta"].get("path").is_none(), "{ls}");
    assert!(ls["meta"].get("paths").is_none(), "{ls}");

    // show summarises the step as diff does.
    let step = format!("{SESSION}:toolu_1");
    let status = r.ok(&["show", "--name-status", &step]).stdout;
    assert!(
        status.ends_with("\nM\tsrc/main.c\nA\tsrc/util.c\n"),
        "{status}"
    );
    let stat = r.ok(&["show", "--stat", &step]).stdout;
    assert!(
        stat.contains(" 2 files changed, 2 insertions(+), 1 deletion(-)"),
        "{stat}"
    );

    // Which step touched src/util.c? The shell step, found from the trees.
    let util = ids(&r, &["--", "src/util.c"]);
    assert_eq!(util, vec![id_of(&bash).unwrap()]);
    // --session with a prefix, combined with a path.
    let prefix = &SESSION[..8];
    assert_eq!(
        ids(&r, &["--session", prefix, "--", "src"]),
        vec![id_of(&bash).unwrap()]
    );
    let in_session = ids(&r, &["--session", prefix]);
    assert_eq!(in_session.len(), 4, "{in_session:?}");
    assert!(
        !in_session.contains(&r.id("@~4")),
        "the user's save is not the session's"
    );

    // Each hook checkpoint's line names the agent, the session and the prompt.
    let text = r.ok(&["log", "-n", "5"]).stdout;
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5, "{text}");
    for line in &lines[..4] {
        assert!(
            line.contains(&format!("claude {prefix}:prompt1 ")),
            "{text}"
        );
    }
    assert!(
        lines[4].contains("by hand: readme") && !lines[4].contains("claude"),
        "{text}"
    );
}

#[test]
fn fetched_branches_take_ranges_and_the_diverged_pull_advice_works() {
    let a = Repo::new();
    let bare = a.sb.root.join("remote.git");
    a.sb.git(&a.sb.root, &["init", "-q", "--bare", "remote.git"]);
    a.git(&["remote", "add", "origin", bare.to_str().unwrap()]);
    a.write("f.txt", b"one\n");
    a.save("a1");
    a.ok(&["push", "origin"]);
    let b = Repo {
        sb: common::Sandbox::new(),
        dir: a.sb.root.join("b"),
    };
    a.sb.git(
        &a.sb.root,
        &["clone", "-q", "--no-local", bare.to_str().unwrap(), "b"],
    );
    a.sb.ok_in(&b.dir, &["pull"]);
    // Both sides go on.
    a.write("f.txt", b"a2\n");
    a.save("a2");
    a.write("f.txt", b"a3\n");
    a.save("a3");
    a.ok(&["push", "origin"]);
    b.write("f.txt", b"b2\n");
    b.save("b2");
    let refused = a.sb.run_in(&b.dir, &["pull"]);
    assert_eq!(refused.code, 1, "{refused}");

    let messages = |args: &[&str]| -> Vec<String> {
        let mut all = vec!["log", "--json"];
        all.extend_from_slice(args);
        parse_json(&a.sb.ok_in(&b.dir, &all), "log")
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["message"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(messages(&["main..origin/main"]), vec!["a3", "a2"]);
    assert_eq!(messages(&["origin/main..main"]), vec!["b2"]);
    assert_eq!(
        messages(&["origin/main", "--", "f.txt"]),
        vec!["a3", "a2", "a1"]
    );

    // The advice in the refusal runs as it is written.
    let advice = refused
        .stderr
        .split("git checkpoint log")
        .nth(1)
        .and_then(|rest| rest.split(',').next())
        .unwrap_or_else(|| panic!("no log advice in {refused}"));
    let args: Vec<&str> = std::iter::once("log")
        .chain(advice.split_whitespace())
        .collect();
    assert_eq!(args, ["log", "--graph", "main", "origin/main"], "{refused}");
    let graph = a.sb.ok_in(&b.dir, &args).stdout;
    for message in ["a1", "a2", "a3", "b2"] {
        assert!(graph.lines().any(|l| l.contains(message)), "{graph}");
    }
}
