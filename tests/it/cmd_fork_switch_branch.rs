//! The DAG as users move around it: restore then save branches it, fork and switch
//! move between branches with the worktree following, branches are listed, renamed and
//! deleted, metadata filters the log, and attachments come back byte for byte.

use crate::common;
use common::Repo;

fn log_ids(repo: &Repo, args: &[&str]) -> Vec<String> {
    let mut all = vec!["log"];
    all.extend_from_slice(args);
    repo.json_of(&all)
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect()
}

/// How many chunks, trees and checkpoints the store holds.
fn table_sizes(repo: &Repo) -> [u64; 3] {
    use common::raw_store::{self, CHECKPOINTS, CHUNKS, TREES};
    use redb::{ReadableDatabase, ReadableTableMetadata};
    let path = repo.p(".git/checkpoint/store.redb");
    let db = raw_store::open(&path);
    let read = db.begin_read().unwrap();
    [
        read.open_table(CHUNKS).unwrap().len().unwrap(),
        read.open_table(TREES).unwrap().len().unwrap(),
        read.open_table(CHECKPOINTS).unwrap().len().unwrap(),
    ]
}

#[test]
fn restore_then_save_branches_the_dag_and_keeps_the_abandoned_line() {
    let repo = Repo::new();
    repo.write("f.txt", b"1\n");
    let c1 = repo.save_forced("c1");
    repo.write("f.txt", b"2\n");
    let c2 = repo.save_forced("c2");
    repo.write("f.txt", b"3\n");
    let c3 = repo.save_forced("c3");

    repo.ok(&["restore", &c1]);
    assert_eq!(repo.read("f.txt"), b"1\n");
    repo.write("g.txt", b"new line of work\n");
    let c4 = repo.save_forced("c4");

    // The new checkpoint's parent is the restored one, not the old tip.
    assert_eq!(repo.parents(&c4), [c1.as_str()]);
    // The current line is c4 and c1 only; --all still has the abandoned c2 and c3.
    assert_eq!(log_ids(&repo, &[]), [c4.clone(), c1.clone()]);
    let all = log_ids(&repo, &["--all"]);
    assert_eq!(all, [c4.clone(), c3.clone(), c2.clone(), c1.clone()]);
    // The abandoned tip is still restorable.
    repo.ok(&["restore", &c3]);
    assert_eq!(repo.files(), ["f.txt=3\n"]);
    // The worktree was clean, so that restore needed no safety checkpoint.
    assert_eq!(log_ids(&repo, &["--all"]).len(), 4);
}

#[test]
fn a_restore_with_unsaved_changes_keeps_them_in_a_safety_checkpoint() {
    let repo = Repo::new();
    repo.write("f.txt", b"1\n");
    let c1 = repo.save_forced("c1");
    repo.write("f.txt", b"unsaved\n");
    let out = repo.json_of(&["restore", &c1]);
    let safety = out["safety_checkpoint"].as_str().unwrap().to_string();
    assert_eq!(repo.parents(&safety), [c1.as_str()]);
    assert_eq!(
        repo.json_of(&["show", &safety])["message"],
        format!("before restore to {}", &c1[..7])
    );
    assert_eq!(log_ids(&repo, &["--all"]), [safety, c1]);
}

#[test]
fn fork_switch_and_branch_move_the_worktree_and_keep_every_tip() {
    let repo = Repo::new();
    repo.write("a.txt", b"a1\n");
    let c1 = repo.save_forced("c1");
    repo.write("a.txt", b"a2\n");
    repo.write("b.txt", b"b2\n");
    let c2 = repo.save_forced("c2");
    assert_eq!(repo.branches(), ["*main"]);

    // fork from an older checkpoint, default name fork-1, with unsaved changes.
    repo.write("a.txt", b"unsaved on main\n");
    let forked = repo.json_of(&["fork", &c1]);
    assert_eq!(forked["branch"], "fork-1");
    assert_eq!(forked["target"], c1.as_str());
    let safety = forked["safety_checkpoint"].as_str().unwrap().to_string();
    assert_eq!(repo.files(), ["a.txt=a1\n"]);
    assert_eq!(repo.branches(), ["*fork-1", "main"]);
    // The old branch kept its tip, which is now the safety save of the unsaved work.
    assert_eq!(repo.id("main"), safety);
    assert_eq!(repo.parents(&safety), [c2.as_str()]);

    // Saving continues on the fork.
    repo.write("c.txt", b"on the fork\n");
    let f1 = repo.save_forced("f1");
    assert_eq!(repo.json_of(&["show", &f1])["branch"], "fork-1");
    assert_eq!(repo.parents(&f1), [c1.as_str()]);
    assert_eq!(repo.id("fork-1"), f1);

    // switch back: the worktree is main's tip, unsaved work included.
    repo.ok(&["switch", "main"]);
    assert_eq!(repo.files(), ["a.txt=unsaved on main\n", "b.txt=b2\n"]);
    assert_eq!(repo.branches(), ["fork-1", "*main"]);
    assert_eq!(repo.id("fork-1"), f1);

    // A named fork; then back to fork-1.
    let named = repo.json_of(&["fork", &c2, "-b", "exp"]);
    assert_eq!(named["branch"], "exp");
    assert!(named["safety_checkpoint"].is_null(), "{named}");
    assert_eq!(repo.files(), ["a.txt=a2\n", "b.txt=b2\n"]);
    repo.ok(&["switch", "fork-1"]);
    assert_eq!(repo.files(), ["a.txt=a1\n", "c.txt=on the fork\n"]);
    assert_eq!(repo.branches(), ["exp", "*fork-1", "main"]);

    // Switching to the current branch keeps unsaved work (it is saved, not undone).
    repo.write("c.txt", b"more\n");
    let out = repo.json_of(&["switch", "fork-1"]);
    assert!(out["safety_checkpoint"].is_string());
    assert_eq!(repo.read("c.txt"), b"more\n");

    // branch -d refuses the current branch and changes nothing.
    let out = repo.run(&["branch", "-d", "fork-1"]);
    assert_eq!(out.code, 1, "{out}");
    assert!(
        out.stderr.contains("cannot delete branch 'fork-1'"),
        "{out}"
    );
    assert_eq!(repo.branches(), ["exp", "*fork-1", "main"]);
    // Another branch goes; its checkpoints stay in log --all.
    let exp_tip = repo.id("exp");
    repo.ok(&["branch", "-d", "exp"]);
    assert_eq!(repo.branches(), ["*fork-1", "main"]);
    assert!(log_ids(&repo, &["--all"]).contains(&exp_tip));
    let out = repo.run(&["switch", "exp"]);
    assert_eq!(out.code, 1, "{out}");
    assert!(out.stderr.contains("no branch named 'exp'"), "{out}");

    // -m renames, and HEAD follows the current branch.
    repo.ok(&["branch", "-m", "fork-1", "parser"]);
    assert_eq!(repo.branches(), ["main", "*parser"]);
    let before = repo.files();
    repo.save_forced("p1");
    assert_eq!(repo.json_of(&["show", "@"])["branch"], "parser");
    assert_eq!(repo.files(), before);

    // Bad names and taken names are refused before anything happens.
    for (args, error) in [
        (&["fork", "@", "-b", "main"][..], "already exists"),
        (
            &["fork", "@", "-b", "has space"][..],
            "not a valid branch name",
        ),
        (
            &["fork", "@", "-b", "cafe"][..],
            "looks like a checkpoint id",
        ),
        (&["fork", "@", "-b", "a~1"][..], "not a valid branch name"),
        (&["branch", "-m", "main", "parser"][..], "already exists"),
        (
            &["branch", "-m", "nosuch", "x"][..],
            "no branch named 'nosuch'",
        ),
    ] {
        let listing = log_ids(&repo, &["--all"]);
        let out = repo.run(args);
        assert_eq!(out.code, 1, "{args:?}: {out}");
        assert!(out.stderr.contains(error), "{args:?}: {out}");
        assert_eq!(log_ids(&repo, &["--all"]), listing, "{args:?}");
        assert_eq!(repo.branches(), ["main", "*parser"]);
    }
}

#[test]
fn branch_listing_marks_the_current_branch() {
    let repo = Repo::new();
    repo.write("a.txt", b"a\n");
    let c1 = repo.save_forced("first");
    repo.ok(&["fork", &c1, "-b", "side"]);
    let out = repo.ok(&["branch"]);
    let short = &c1[..7];
    assert_eq!(
        out.stdout,
        format!("  main {short} first\n* side {short} first\n")
    );
}

#[test]
fn meta_filters_the_log_and_all_pairs_must_match() {
    let repo = Repo::new();
    let save = |content: &[u8], meta: &[&str]| {
        repo.write("f.txt", content);
        let mut args = vec!["save", "-m", "step"];
        for m in meta {
            args.extend(["--meta", m]);
        }
        repo.json_of(&args)["id"].as_str().unwrap().to_string()
    };
    let a = save(b"1", &["session=s1", "msg=1"]);
    let b = save(b"2", &["session=s1", "msg=2"]);
    let _c = save(b"3", &["session=s2", "msg=3"]);
    let d = save(b"4", &["session=s1", "msg=4", "tool=edit"]);
    assert_eq!(
        log_ids(&repo, &["--meta", "session=s1"]),
        [d.clone(), b.clone(), a.clone()]
    );
    assert_eq!(
        log_ids(&repo, &["--meta", "session=s1", "--meta", "msg=2"]),
        [b.as_str()]
    );
    assert_eq!(log_ids(&repo, &["--meta", "tool=edit"]), [d.as_str()]);
    assert!(log_ids(&repo, &["--meta", "session=s3"]).is_empty());
    assert!(log_ids(&repo, &["--meta", "session=s1", "--meta", "msg=3"]).is_empty());
    // The graph joins each match to its nearest matching ancestor, skipping c.
    let graph = repo.ok(&["log", "--graph", "--meta", "session=s1"]).stdout;
    let lines: Vec<&str> = graph.lines().collect();
    assert_eq!(lines.len(), 3, "{graph}");
    assert!(lines.iter().all(|l| l.starts_with("* ")), "{graph}");
    // A malformed filter is a usage error.
    let out = repo.run(&["log", "--meta", "novalue"]);
    assert_eq!(out.code, 2, "{out}");
}

#[test]
fn attachments_round_trip_byte_for_byte() {
    let repo = Repo::new();
    repo.write("f.txt", b"x\n");
    let outside = repo.scratch("attachments");
    // Every byte value, a NUL-heavy binary, something larger than one chunk, and an
    // empty file.
    let all_bytes: Vec<u8> = (0..=255u8).cycle().take(4096).collect();
    let mut state = 7u64;
    let big: Vec<u8> = (0..700_000)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) as u8
        })
        .collect();
    let files = [
        (
            "transcript.jsonl",
            b"{\"role\":\"user\"}\r\n{\"x\":\"\\u00e9\"}\n".to_vec(),
        ),
        ("bytes.bin", all_bytes),
        ("big.bin", big),
        ("empty", Vec::new()),
    ];
    let mut args = vec!["save".to_string(), "-m".into(), "with attachments".into()];
    for (name, bytes) in &files {
        let path = outside.join(name);
        std::fs::write(&path, bytes).unwrap();
        args.push("--attach".into());
        args.push(path.display().to_string());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let saved = repo.json_of(&args);
    let id = saved["id"].as_str().unwrap().to_string();
    let listed = saved["attachments"].as_array().unwrap();
    assert_eq!(listed.len(), 4);
    for ((name, bytes), json) in files.iter().zip(listed) {
        assert_eq!(json["name"], *name);
        assert_eq!(json["size"], bytes.len() as u64);
        let out = repo.ok(&["attachment", &id[..8], name]);
        assert!(out.stdout_raw == *bytes, "{name} differs");
    }
    // Attachments are outside the tree: the worktree is unchanged and has no copy.
    assert_eq!(repo.files(), ["f.txt=x\n"]);
    // show lists them.
    let shown = repo.ok(&["show", &id, "--stat"]).stdout;
    let listed = format!("transcript.jsonl ({} B)", files[0].1.len());
    assert!(shown.contains(&listed), "{shown}");
    assert!(shown.contains("big.bin (683.6 KiB)"), "{shown}");

    // A save with only an attachment still makes a checkpoint, so it is never lost.
    let note = outside.join("note.txt");
    std::fs::write(&note, b"second note\n").unwrap();
    let again = repo.json_of(&["save", "--attach", note.to_str().unwrap()]);
    assert!(again["id"].is_string(), "{again}");
    assert_eq!(
        repo.ok(&["attachment", "@", "note.txt"]).stdout_raw,
        b"second note\n"
    );

    // Unknown names list what there is; unreadable files fail before anything is saved.
    let out = repo.run(&["attachment", "@", "nope"]);
    assert_eq!(out.code, 1, "{out}");
    assert!(
        out.stderr
            .contains("has no attachment 'nope' (it has: note.txt)"),
        "{out}"
    );
    let before = log_ids(&repo, &["--all"]);
    let out = repo.run(&["save", "--attach", "/nonexistent/file"]);
    assert_eq!(out.code, 1, "{out}");
    assert!(out.stderr.contains("/nonexistent/file"), "{out}");
    assert_eq!(log_ids(&repo, &["--all"]), before);
}

#[test]
fn status_lists_worktree_changes_and_writes_nothing() {
    let repo = Repo::new();
    let out = repo.json_of(&["status"]);
    assert!(out["checkpoint"].is_null());
    repo.write("keep.txt", b"k\n");
    repo.write("mod.txt", b"m\n");
    repo.write("gone.txt", b"g\n");
    repo.write("kind", b"file\n");
    repo.write("run.sh", b"#!/bin/sh\n");
    repo.save_forced("base");
    assert_eq!(repo.ok(&["status"]).stdout, "");
    assert_eq!(repo.json_of(&["status"])["clean"], true);

    repo.write("mod.txt", b"m2\n");
    repo.remove("gone.txt");
    repo.write("new dir/new.txt", b"n\n");
    repo.remove("kind");
    std::os::unix::fs::symlink("keep.txt", repo.p("kind")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(repo.p("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let before = table_sizes(&repo);
    let out = repo.ok(&["status"]);
    assert_eq!(
        out.stdout,
        "D gone.txt\nT kind\nM mod.txt\nA new dir/new.txt\nM run.sh\n"
    );
    let json = repo.json_of(&["status"]);
    assert_eq!(json["clean"], false);
    assert_eq!(json["branch"], "main");
    assert_eq!(json["changes"][0]["status"], "D");
    assert_eq!(json["changes"][0]["path"], "gone.txt");
    // Nothing was stored: no chunk, tree or checkpoint more than before.
    assert_eq!(table_sizes(&repo), before);
    assert_eq!(log_ids(&repo, &["--all"]).len(), 1);
}

/// `log` and `show` tell ages by the one clock the rest of the tool uses, so a test clock
/// (`GIT_CHECKPOINT_NOW`) set three days after a save makes them say so.
#[test]
fn ages_follow_the_tools_clock() {
    let repo = Repo::new();
    repo.write("a.txt", b"a\n");
    let out = repo.run_env(
        &["save", "-m", "old"],
        &[("GIT_CHECKPOINT_NOW", "2026-01-01T12:00:00Z")],
    );
    assert_eq!(out.code, 0, "{out}");
    for args in [&["log"][..], &["show", "@"]] {
        let out = repo.run_env(args, &[("GIT_CHECKPOINT_NOW", "2026-01-04T12:00:00Z")]);
        assert_eq!(out.code, 0, "{out}");
        assert!(out.stdout.contains("3 days ago"), "{args:?}: {out}");
    }
}
