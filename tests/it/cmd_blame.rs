//! `blame`: a file built up step by step, each step's lines checked against the
//! checkpoint that wrote them; the porcelain format; an agent's lines named by agent,
//! session and prompt; bad input.

use crate::common;

use common::*;
use serde_json::json;

/// `blame --json` as (origin id, text) per line.
fn blamed(r: &Repo, args: &[&str]) -> Vec<(String, String)> {
    let mut all = vec!["blame", "--json"];
    all.extend_from_slice(args);
    r.json(&all)
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .map(|(n, l)| {
            assert_eq!(l["line"], n + 1, "{l}");
            (
                l["id"].as_str().unwrap().to_string(),
                l["text"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Writes `lines` as the file and saves; the model gets the new checkpoint as the
/// origin of every line not in `kept` (the lines carried over from the model).
fn step(r: &Repo, model: &mut Vec<(String, String)>, lines: &[&str], message: &str) -> String {
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    r.write("f.txt", text.as_bytes());
    let id = r.save(message);
    let old = std::mem::take(model);
    for line in lines {
        // Every line in these steps is unique, so a line kept is found by its text.
        match old.iter().find(|(_, t)| t == line) {
            Some(kept) => model.push(kept.clone()),
            None => model.push((id.clone(), line.to_string())),
        }
    }
    id
}

#[test]
fn each_line_names_the_checkpoint_that_last_changed_it() {
    let r = Repo::new();
    let mut model = Vec::new();
    let mut history = Vec::new();
    let first = step(&r, &mut model, &["a", "b", "c", "d"], "first");
    history.push((first.clone(), model.clone()));
    let second = step(&r, &mut model, &["a", "B", "c", "d", "e"], "second");
    history.push((second, model.clone()));
    // Other files change and an empty save: the file's lines keep their origins.
    r.write("other.txt", b"x\n");
    r.save("other");
    r.save_forced("empty");
    history.push((r.current(), model.clone()));
    let third = step(&r, &mut model, &["zero", "a", "c", "d", "e2"], "third");
    history.push((third, model.clone()));
    // Deleted and made again: every line starts over.
    r.remove("f.txt");
    r.save("gone");
    let again = step(&r, &mut model, &["a", "b"], "again");
    model = vec![(again.clone(), "a".into()), (again.clone(), "b".into())];
    history.push((again, model.clone()));
    let last = step(&r, &mut model, &["a", "b", "tail"], "last");
    history.push((last, model.clone()));

    assert_eq!(blamed(&r, &["f.txt"]), model);
    // From any earlier checkpoint, as it held the file.
    for (id, expected) in &history {
        assert_eq!(&blamed(&r, &[id, "f.txt"]), expected, "blame {id}");
        assert_eq!(&blamed(&r, &[id, "--", "f.txt"]), expected, "blame {id} --");
    }
    // The text form: short id, who (the message), line number, the line.
    let text = r.ok(&["blame", "f.txt"]).stdout;
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "{text}");
    assert!(
        lines[0].contains("(again ") && lines[0].ends_with(" 1) a"),
        "{text}"
    );
    assert!(
        lines[2].contains("(last ") && lines[2].ends_with(" 3) tail"),
        "{text}"
    );
    let short = r.json(&["show", "--json", "@"])["short_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(lines[2].starts_with(&format!("{short} (")), "{text}");

    // The porcelain form: headers once per checkpoint, each line after a tab, and the
    // lines read back give the file.
    let porcelain = r.ok(&["blame", "--porcelain", "f.txt"]).stdout;
    let content: String = porcelain
        .lines()
        .filter_map(|l| l.strip_prefix('\t'))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(content, "a\nb\ntail\n", "{porcelain}");
    let (again_id, last_id) = (&model[0].0, &model[2].0);
    assert!(
        porcelain.starts_with(&format!("{again_id} 1 1 2\nmessage again\n")),
        "{porcelain}"
    );
    assert!(
        porcelain.contains(&format!("{last_id} 3 3 1\nmessage last\n")),
        "{porcelain}"
    );
    assert_eq!(
        porcelain.matches("filename f.txt\n").count(),
        2,
        "{porcelain}"
    );
}

#[test]
fn an_agents_lines_name_the_agent_session_and_prompt() {
    let r = Repo::new();
    let session = "77aa88bb-0000-4000-8000-000000000001";
    r.write("notes.md", b"mine\n");
    r.save("by hand");
    r.ok(&["hooks", "install", "claude"]);
    let hook = |payload: serde_json::Value| {
        let mut payload = payload;
        payload["session_id"] = json!(session);
        payload["cwd"] = json!(r.dir);
        hook_answers(&r.sb, &r.dir, "claude", payload.to_string().as_bytes(), "");
    };
    hook(json!({"hook_event_name": "UserPromptSubmit", "prompt": "one"}));
    hook(json!({"hook_event_name": "UserPromptSubmit", "prompt": "two"}));
    r.write("notes.md", b"mine\nagent's\n");
    hook(
        json!({"hook_event_name": "PostToolUse", "tool_name": "Bash", "tool_use_id": "t1",
                "tool_input": {"command": "echo agent\\'s >> notes.md"}, "tool_response": {}}),
    );
    let lines = r.json(&["blame", "--json", "notes.md"]);
    assert_eq!(lines[0]["agent"], serde_json::Value::Null, "{lines}");
    assert_eq!(lines[0]["text"], "mine");
    assert_eq!(lines[1]["agent"], "claude", "{lines}");
    assert_eq!(lines[1]["session"], session, "{lines}");
    assert_eq!(lines[1]["prompt"], 2, "{lines}");
    let text = r.ok(&["blame", "notes.md"]).stdout;
    assert!(
        text.lines()
            .nth(1)
            .unwrap()
            .contains(&format!("claude {}:prompt2", &session[..8])),
        "{text}"
    );
    assert!(text.lines().next().unwrap().contains("by hand"), "{text}");
}

#[test]
fn bad_input_is_one_line_and_no_panic() {
    let r = Repo::new();
    r.write("f.txt", b"x\n");
    r.write("dir/g.txt", b"y\n");
    r.write("bin.dat", b"a\0b");
    r.symlink("link", "f.txt");
    r.save("one");
    for (args, error) in [
        (
            vec!["blame", "missing.txt"],
            "cannot blame 'missing.txt': no such file",
        ),
        (
            vec!["blame", "dir"],
            "cannot blame 'dir': it is a directory",
        ),
        (
            vec!["blame", "link"],
            "cannot blame 'link': it is a symlink",
        ),
        (
            vec!["blame", "bin.dat"],
            "cannot blame 'bin.dat': it is a binary file",
        ),
        (
            vec!["blame", "nosuch", "f.txt"],
            "unknown revision 'nosuch'",
        ),
        (vec!["blame", "../out.txt"], "outside the worktree"),
    ] {
        let out = r.run(&args);
        assert_eq!(out.code, 1, "{args:?}: {out}");
        assert_eq!(out.stderr.lines().count(), 1, "{args:?}: {out}");
        assert!(out.stderr.contains(error), "{args:?}: {out}");
    }
    let usage = r.run(&["blame"]);
    assert_eq!(usage.code, 2, "{usage}");
}

/// A line's tabs print as tabs, as `show` and `diff` print them (C and Makefiles indent
/// with them); every other control character in it stays escaped.
#[test]
fn tabs_print_as_tabs_and_other_controls_stay_escaped() {
    let r = Repo::new();
    r.write("t.c", b"int f(void)\n{\n\treturn 0;\t/* \x1b[2J\r */\n}\n");
    r.save("tabs");
    let text = r.ok(&["blame", "t.c"]).stdout;
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert!(
        lines[2].ends_with(") \treturn 0;\t/* \\033[2J\\r */"),
        "{text}"
    );
    let show = r.ok(&["show", "@"]).stdout;
    assert!(show.contains("+\treturn 0;\t"), "{show}");
}
