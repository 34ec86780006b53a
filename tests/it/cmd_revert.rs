//! `revert`: undo one step of an agent session and keep the steps after it. A five-prompt
//! Claude Code session (its hook payloads through `hooks run claude`, real edits between
//! the events) touches text, binary, symlink, mode, created and deleted files, with
//! later prompts editing over prompt 3's work; prompt 3 is reverted, and the result is
//! compared with what `git revert` makes of the same history in a scratch repository.

use crate::common;
use std::path::Path;

use common::*;
use serde_json::{json, Value};

const SESSION: &str = "9b2e4d10-3c1a-4f7e-8d2b-5a6c7e8f9a0b";

/// Ten lines, the `n`-th replaced where `with` says.
fn text(with: &[(usize, &str)]) -> Vec<u8> {
    let mut out = String::new();
    for n in 1..=10 {
        match with.iter().find(|(at, _)| *at == n) {
            Some((_, line)) => out.push_str(line),
            None => out.push_str(&format!("line {n}")),
        }
        out.push('\n');
    }
    out.into_bytes()
}

/// Binary content: NUL bytes in the first 8000, as git tells binary from text.
fn binary(seed: u64) -> Vec<u8> {
    let mut data = pseudo_random(3000, seed);
    data[10] = 0;
    data
}

/// A Claude Code session driven through `hooks run claude`.
struct Session<'r> {
    repo: &'r Repo,
    transcript: std::path::PathBuf,
}

impl Session<'_> {
    fn new(repo: &Repo) -> Session<'_> {
        // Claude Code keeps transcripts under ~/.claude/projects; only there is one read.
        let dir = repo.home().join(".claude/projects/-repo");
        std::fs::create_dir_all(&dir).unwrap();
        Session {
            repo,
            transcript: dir.join("revert.jsonl"),
        }
    }

    fn hook(&self, mut payload: Value) {
        payload["session_id"] = json!(SESSION);
        payload["transcript_path"] = json!(self.transcript);
        payload["cwd"] = json!(self.repo.dir);
        payload["permission_mode"] = json!("default");
        let mut log = std::fs::read(&self.transcript).unwrap_or_default();
        log.extend_from_slice(format!("{payload}\n").as_bytes());
        std::fs::write(&self.transcript, log).unwrap();
        hook_answers(
            &self.repo.sb,
            &self.repo.dir,
            "claude",
            payload.to_string().as_bytes(),
            "",
        );
    }

    fn prompt(&self, text: &str) {
        self.hook(json!({"hook_event_name": "UserPromptSubmit", "prompt": text}));
    }

    fn tool(&self, tool: &str, id: &str, input: Value) {
        self.hook(json!({
            "hook_event_name": "PostToolUse",
            "tool_name": tool,
            "tool_use_id": id,
            "tool_input": input,
            "tool_response": {},
        }));
    }
}

/// The worktree's files, without the agent's settings (a revert never touches them).
fn files(repo: &Repo) -> Snap {
    let mut snap = repo.snapshot();
    snap.retain(|path, _| !path.starts_with(b".claude"));
    snap
}

/// The session: the worktree before prompt 3's tool calls, after them, and at the end.
struct History {
    before: Snap,
    after: Snap,
    now: Snap,
}

/// Five prompts. Prompt 3's two tool calls change a line of `text.txt` and of
/// `clash.txt`, the binaries `image.bin` and `clash.bin`, the symlinks `link` and
/// `clash-link`, the executable bit of `run.sh`, create `made.txt` and
/// `made-then-edited.txt` and `made-dir/deeper/inner.txt`, delete `gone.txt` and
/// rename `old-name.txt`; prompt 4 then edits other lines of
/// `text.txt`, the same line of `clash.txt`, `clash.bin`, `clash-link`,
/// `made-then-edited.txt` and the content of `run.sh`; prompt 5 writes `later.txt`.
fn five_prompts(r: &Repo) -> History {
    r.write("text.txt", &text(&[]));
    r.write("clash.txt", b"alpha\nbeta\ngamma\n");
    r.write("image.bin", &binary(1));
    r.write("clash.bin", &binary(2));
    r.symlink("link", "target-a");
    r.symlink("clash-link", "target-a");
    r.write("run.sh", b"#!/bin/sh\necho hi\n");
    r.write("gone.txt", b"deleted by prompt 3\n");
    r.write("old-name.txt", b"renamed by prompt 3\n");
    r.ok(&["hooks", "install", "claude"]);
    let s = Session::new(r);

    s.prompt("Reword the first line");
    r.write("text.txt", &text(&[(1, "line one")]));
    s.tool("Edit", "toolu_1", json!({"file_path": r.p("text.txt")}));

    s.prompt("Reword the last line");
    r.write("text.txt", &text(&[(1, "line one"), (10, "line ten")]));
    s.tool("Edit", "toolu_2", json!({"file_path": "text.txt"}));

    s.prompt("Do the big change");
    let before = files(r);
    r.write(
        "text.txt",
        &text(&[
            (1, "line one"),
            (5, "line five, by prompt 3"),
            (10, "line ten"),
        ]),
    );
    r.write("clash.txt", b"alpha\nbeta by prompt 3\ngamma\n");
    s.tool("Edit", "toolu_3a", json!({"file_path": "text.txt"}));
    // A shell command does the rest.
    r.write("image.bin", &binary(3));
    r.write("clash.bin", &binary(4));
    r.remove("link");
    r.symlink("link", "target-b");
    r.remove("clash-link");
    r.symlink("clash-link", "target-b");
    r.set_exec("run.sh", true);
    r.write("made.txt", b"made by prompt 3\n");
    r.write("made-then-edited.txt", b"made by prompt 3\n");
    r.remove("gone.txt");
    // A rename is a deletion and a creation; a new directory goes with its last file.
    std::fs::rename(r.p("old-name.txt"), r.p("new-name.txt")).unwrap();
    r.write("made-dir/deeper/inner.txt", b"made by prompt 3\n");
    s.tool("Bash", "toolu_3b", json!({"command": "./regenerate.sh"}));
    let after = files(r);

    s.prompt("Polish");
    r.write(
        "text.txt",
        &text(&[
            (1, "line one"),
            (5, "line five, by prompt 3"),
            (8, "line eight, by prompt 4"),
            (10, "line ten"),
        ]),
    );
    r.write("clash.txt", b"alpha\nbeta by prompt 4\ngamma\n");
    r.write("clash.bin", &binary(5));
    r.write(
        "made-then-edited.txt",
        b"made by prompt 3, edited by prompt 4\n",
    );
    r.remove("clash-link");
    r.symlink("clash-link", "target-c");
    // The content changes, the executable bit prompt 3 set stays.
    r.write_exec("run.sh", b"#!/bin/sh\necho hello\n");
    s.tool("Edit", "toolu_4", json!({"file_path": "clash.txt"}));

    s.prompt("Add a note");
    r.write("later.txt", b"written by prompt 5\n");
    s.tool("Write", "toolu_5", json!({"file_path": "later.txt"}));
    History {
        before,
        after,
        now: files(r),
    }
}

/// Makes the worktree of the git repository at `dir` hold exactly `snap`.
fn materialize(dir: &Path, snap: &Snap) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        if entry.file_name() != ".git" {
            remove_any(&entry.path());
        }
    }
    for (path, node) in snap {
        let full = dir.join(std::ffi::OsStr::new(std::str::from_utf8(path).unwrap()));
        match node {
            Node::File { data, exec } => write_file(&full, data, *exec),
            Node::Link(target) => {
                std::fs::create_dir_all(full.parent().unwrap()).unwrap();
                std::os::unix::fs::symlink(std::str::from_utf8(target).unwrap(), &full).unwrap();
            }
            Node::Dir => std::fs::create_dir_all(&full).unwrap(),
            Node::Other => unreachable!("no special files here"),
        }
    }
}

/// What `git revert --no-edit` makes of the same history: the states before and after
/// prompt 3 and the worktree now, as three commits, the middle one reverted.
fn git_revert(r: &Repo, history: &History, style: &str) -> (i32, Snap) {
    let dir = r.sb.init_repo("scratch");
    r.sb.git(&dir, &["config", "merge.conflictStyle", style]);
    let mut commits = Vec::new();
    for (state, message) in [
        (&history.before, "before"),
        (&history.after, "prompt 3"),
        (&history.now, "now"),
    ] {
        materialize(&dir, state);
        r.sb.git(&dir, &["add", "-A"]);
        r.sb.git(&dir, &["commit", "-q", "--allow-empty", "-m", message]);
        commits.push(r.sb.git(&dir, &["rev-parse", "HEAD"]).trim().to_string());
    }
    let out = run_cmd(
        r.sb.git_cmd(&dir, &["revert", "--no-edit", &commits[1]]),
        DEFAULT_TIMEOUT,
    );
    (out.code, snapshot(&dir, true))
}

/// `snap` with the labels after conflict markers taken off: git names the sides by
/// commit, revert by checkpoint.
fn unlabelled(snap: &Snap) -> Snap {
    snap.iter()
        .map(|(path, node)| {
            let node = match node {
                Node::File { data, exec } => {
                    let mut out = Vec::new();
                    for line in data.split_inclusive(|&b| b == b'\n') {
                        let marker = ["<<<<<<< ", "||||||| ", ">>>>>>> "]
                            .iter()
                            .any(|m| line.starts_with(m.as_bytes()));
                        if marker {
                            out.extend_from_slice(&line[..7]);
                            out.push(b'\n');
                        } else {
                            out.extend_from_slice(line);
                        }
                    }
                    Node::File {
                        data: out,
                        exec: *exec,
                    }
                }
                other => other.clone(),
            };
            (path.clone(), node)
        })
        .collect()
}

fn prompt3() -> String {
    format!("{SESSION}:prompt3..{SESSION}:toolu_3b")
}

#[test]
fn reverting_prompt_3_keeps_prompts_4_and_5_as_git_revert_does() {
    let r = Repo::new();
    let history = five_prompts(&r);
    let out = r.run(&["revert", &prompt3()]);
    assert_no_panic(&out, "revert");
    // Conflicts: exit 1, each listed, the error on one line.
    assert_eq!(out.code, 1, "{out}");
    let error: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(error.len(), 1, "{out}");
    assert!(
        error[0].starts_with("error: the revert left conflicts in 4 paths: clash-link, clash.bin, clash.txt, made-then-edited.txt"),
        "{out}"
    );
    assert!(
        out.stdout
            .contains("The worktree was saved already as checkpoint"),
        "nothing was unsaved: {out}"
    );

    let now = files(&r);
    // Text: prompt 3's line undone, prompt 1's, 2's and 4's lines kept (a clean merge).
    assert_eq!(
        r.read("text.txt"),
        text(&[
            (1, "line one"),
            (8, "line eight, by prompt 4"),
            (10, "line ten")
        ])
    );
    // Text both changed: git's conflict markers.
    let clash = r.read_string("clash.txt");
    assert!(
        clash.starts_with("alpha\n<<<<<<< worktree\nbeta by prompt 4\n=======\nbeta\n>>>>>>> ")
            && clash.ends_with("\ngamma\n"),
        "{clash}"
    );
    // Binary: back where nothing changed it since; left where prompt 4 changed it.
    assert_eq!(r.read("image.bin"), binary(1));
    assert_eq!(r.read("clash.bin"), binary(5));
    // Symlink, mode, creation, deletion.
    assert_eq!(
        std::fs::read_link(r.p("link")).unwrap(),
        Path::new("target-a")
    );
    // The executable bit is merged apart from the content: prompt 3's bit undone,
    // prompt 4's content kept.
    assert_eq!(
        now[&b"run.sh".to_vec()],
        Node::File {
            data: b"#!/bin/sh\necho hello\n".to_vec(),
            exec: false
        }
    );
    // A symlink both retargeted: left as the worktree has it.
    assert_eq!(
        std::fs::read_link(r.p("clash-link")).unwrap(),
        Path::new("target-c")
    );
    assert!(!r.exists("made.txt"));
    assert_eq!(r.read("gone.txt"), b"deleted by prompt 3\n");
    assert_eq!(r.read("old-name.txt"), b"renamed by prompt 3\n");
    assert!(!r.exists("new-name.txt"));
    assert!(!r.exists("made-dir"), "emptied directories go too");
    assert_eq!(
        r.read("made-then-edited.txt"),
        b"made by prompt 3, edited by prompt 4\n"
    );
    // Prompt 5's file stays.
    assert_eq!(r.read("later.txt"), b"written by prompt 5\n");

    // The same as git revert makes of the same history, conflict markers included.
    let (git_code, by_git) = git_revert(&r, &history, "merge");
    assert_eq!(git_code, 1, "git revert conflicts too");
    assert_snap_eq(
        &unlabelled(&by_git),
        &unlabelled(&now),
        "git revert's result",
    );

    // The safety checkpoint holds the worktree as it was: restoring it undoes the revert.
    let safety = out
        .stdout
        .split(" as checkpoint ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .to_string();
    r.ok(&["restore", &safety]);
    assert_snap_eq(
        &history.now,
        &files(&r),
        "restored from the safety checkpoint",
    );
}

#[test]
fn diff3_style_shows_the_base_and_matches_git() {
    let r = Repo::new();
    let history = five_prompts(&r);
    r.git(&["config", "merge.conflictStyle", "diff3"]);
    let out = r.run(&["revert", &prompt3()]);
    assert_eq!(out.code, 1, "{out}");
    let clash = r.read_string("clash.txt");
    assert!(
        clash.contains("<<<<<<< worktree\nbeta by prompt 4\n||||||| ")
            && clash.contains("\nbeta by prompt 3\n=======\nbeta\n>>>>>>> "),
        "{clash}"
    );
    let (_, by_git) = git_revert(&r, &history, "diff3");
    assert_snap_eq(
        &unlabelled(&by_git),
        &unlabelled(&files(&r)),
        "git revert's result",
    );
}

#[test]
fn zdiff3_is_written_as_diff3_and_says_so() {
    let r = Repo::new();
    five_prompts(&r);
    r.git(&["config", "merge.conflictStyle", "zdiff3"]);
    let out = r.run(&["revert", &prompt3()]);
    assert_eq!(out.code, 1, "{out}");
    assert!(
        out.stderr
            .contains("zdiff3; conflicts are written as diff3"),
        "{out}"
    );
    assert!(r.read_string("clash.txt").contains("\n||||||| "));
}

#[test]
fn one_tool_call_is_reverted_alone() {
    let r = Repo::new();
    five_prompts(&r);
    // Only the Edit call: text.txt's line 5 and clash.txt; the Bash call's work stays.
    let out = r.run(&["revert", &format!("{SESSION}:toolu_3a")]);
    assert_eq!(out.code, 1, "clash.txt conflicts: {out}");
    assert_eq!(
        r.read("text.txt"),
        text(&[
            (1, "line one"),
            (8, "line eight, by prompt 4"),
            (10, "line ten")
        ])
    );
    assert!(r.read_string("clash.txt").contains("<<<<<<< worktree"));
    assert_eq!(r.read("image.bin"), binary(3));
    assert!(r.exists("made.txt") && !r.exists("gone.txt"));
}

#[test]
fn no_conflicts_changes_nothing_when_anything_would_conflict() {
    let r = Repo::new();
    five_prompts(&r);
    // Unsaved work too: it must be neither lost nor saved.
    r.write("later.txt", b"unsaved\n");
    let before = r.snapshot();
    let log = r.log_ids(true);
    let out = r.run(&["revert", "--no-conflicts", &prompt3()]);
    assert_eq!(out.code, EXIT_REFUSED, "{out}");
    assert_eq!(
        out.stderr.trim_end(),
        "error: the revert would conflict in 4 paths: clash-link, clash.bin, clash.txt, made-then-edited.txt; nothing was changed",
    );
    assert_snap_eq(&before, &r.snapshot(), "the worktree, byte for byte");
    assert_eq!(r.log_ids(true), log, "no checkpoint added");

    // Where nothing conflicts, it reverts.
    let out = r.run(&["revert", "--no-conflicts", &format!("{SESSION}:toolu_5")]);
    assert_eq!(out.code, EXIT_REFUSED, "later.txt was changed since: {out}");
    r.write("later.txt", b"written by prompt 5\n");
    r.ok(&["revert", "--no-conflicts", &format!("{SESSION}:toolu_5")]);
    assert!(!r.exists("later.txt"));
}

#[test]
fn dry_run_prints_the_diff_and_changes_nothing() {
    let r = Repo::new();
    five_prompts(&r);
    r.write("later.txt", b"unsaved\n");
    let before = r.snapshot();
    let store = std::fs::read(r.store_path()).unwrap();
    let out = r.run(&["revert", "--dry-run", &prompt3()]);
    assert_eq!(
        out.code, 1,
        "a dry run reports conflicts, and exits as the real run will: {out}"
    );
    assert!(
        out.stderr
            .starts_with("error: the revert would conflict in 4 paths: clash-link, clash.bin, clash.txt, made-then-edited.txt; nothing was changed"),
        "{out}"
    );
    assert_snap_eq(&before, &r.snapshot(), "the worktree");
    assert!(
        std::fs::read(r.store_path()).unwrap() == store,
        "the store file is byte-identical"
    );
    for line in [
        "Would first save unsaved changes as a checkpoint",
        "diff --git a/text.txt b/text.txt",
        "-line five, by prompt 3",
        "+line 5",
        "diff --git a/made.txt b/made.txt",
        "deleted file mode 100644",
        "diff --git a/run.sh b/run.sh",
        "old mode 100755",
        "new mode 100644",
        "+<<<<<<< worktree",
        "Binary files a/image.bin and b/image.bin differ",
        "  conflict  clash.bin (binary, and changed on both sides; left as it is)",
        "  applied   gone.txt",
        "Would revert",
    ] {
        assert!(out.stdout.contains(line), "{line:?} in {out}");
    }
}

#[test]
fn json_reports_every_path() {
    let r = Repo::new();
    five_prompts(&r);
    let out = r.run(&["revert", "--json", &prompt3()]);
    assert_eq!(out.code, 1, "{out}");
    let report = parse_json(&out, "revert --json");
    assert!(
        report["safety_checkpoint"].is_null(),
        "nothing was unsaved: {report:#}"
    );
    assert!(
        is_hex(report["worktree_checkpoint"].as_str().unwrap()),
        "{report:#}"
    );
    assert_eq!(
        (
            &report["applied"],
            &report["conflicts"],
            &report["conflict_style"]
        ),
        (&json!(9), &json!(4), &json!("merge")),
        "{report:#}"
    );
    let status = |path: &str| {
        let entry = report["paths"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["path"] == path)
            .unwrap_or_else(|| panic!("{path} in {report:#}"));
        (
            entry["status"].as_str().unwrap().to_string(),
            entry["action"].as_str().unwrap().to_string(),
        )
    };
    let pair = |s: &str, a: &str| (s.to_string(), a.to_string());
    assert_eq!(status("text.txt"), pair("applied", "write"));
    assert_eq!(status("made.txt"), pair("applied", "delete"));
    assert_eq!(status("clash.txt"), pair("conflict", "markers"));
    assert_eq!(status("clash.bin"), pair("conflict", "left"));
    // Reverting again: what is already undone is unchanged.
    r.write("clash.txt", b"alpha\nbeta\ngamma\n");
    let again = r.run(&["revert", "--json", &prompt3()]);
    let report = parse_json(&again, "revert --json");
    assert_eq!(report["applied"], 0, "{report:#}");
    assert!(report["safety_checkpoint"].is_null(), "{report:#}");
}

#[test]
fn a_range_of_saves_is_reverted() {
    let r = Repo::new();
    r.write("a.txt", b"one\n");
    r.write("b.txt", b"one\n");
    let a = r.save("A");
    r.write("a.txt", b"two\n");
    r.save("B");
    r.write("b.txt", b"two\n");
    r.write("c.txt", b"new\n");
    let c = r.save("C");
    r.write("d.txt", b"after the range\n");
    let out = r.ok(&["revert", &format!("{a}..{c}")]);
    assert!(
        out.stdout.contains("Saved unsaved changes as checkpoint"),
        "d.txt was unsaved: {out}"
    );
    assert_eq!(r.read("a.txt"), b"one\n");
    assert_eq!(r.read("b.txt"), b"one\n");
    assert!(!r.exists("c.txt"));
    assert_eq!(r.read("d.txt"), b"after the range\n");
    // `A..` is A to `@`, the current checkpoint.
    r.ok(&["save", "-m", "reverted"]);
    r.write("a.txt", b"three\n");
    r.ok(&["save", "-m", "D"]);
    r.ok(&["revert", "@~1.."]);
    assert_eq!(r.read("a.txt"), b"one\n");
}

#[test]
fn bad_revisions_are_one_line_errors() {
    let r = Repo::new();
    r.write("a.txt", b"one\n");
    let first = r.save("first");
    for (rev, want) in [
        (
            "nope",
            "error: unknown revision 'nope'; 'git checkpoint log --all' lists every checkpoint, 'git checkpoint sessions' every agent session".to_string(),
        ),
        (
            first.as_str(),
            format!(
                "error: checkpoint {} ('{first}') is a first checkpoint: it has no parent to revert to (name a range A..B instead)",
                &first[..7]
            ),
        ),
        (
            "@...@",
            "error: malformed revision '@...@': '...' is not supported; name a range as A..B"
                .to_string(),
        ),
    ] {
        let out = r.run(&["revert", rev]);
        assert_no_panic(&out, "revert");
        assert_eq!(out.code, 1, "{out}");
        assert_eq!(out.stderr.lines().next(), Some(want.as_str()), "{out}");
        assert_eq!(r.read("a.txt"), b"one\n");
    }
}

#[test]
fn a_file_changed_while_the_revert_runs_stops_it_before_any_write() {
    let r = Repo::new();
    five_prompts(&r);
    let child = spawn_paused(&r, &["revert", &prompt3()], "revert-planned", 3000);
    // An agent still at work rewrites a file the revert is about to merge into.
    r.write("text.txt", b"rewritten meanwhile\n");
    let before = r.snapshot();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(EXIT_REFUSED));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("text.txt changed while the revert ran; nothing was reverted"),
        "{stderr}"
    );
    assert_snap_eq(&before, &r.snapshot(), "nothing was written");
}
