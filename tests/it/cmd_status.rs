//! `status`: what changed in the worktree since the current checkpoint, as `git status
//! --short` prints it, without writing the store.

use crate::common;
use common::{log_ids, parse_json, table_sizes, Repo, Sandbox};

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

#[test]
fn a_clean_worktree_prints_nothing_and_says_clean_in_json() {
    let repo = Repo::new();
    repo.write("a.txt", b"a\n");
    repo.write("dir/b.txt", b"b\n");
    let id = repo.save_forced("base");
    let out = repo.ok(&["status"]);
    assert_eq!(out.stdout, "", "{out}");
    assert_eq!(out.stderr, "", "{out}");
    let json = repo.json_of(&["status"]);
    assert_eq!(json["clean"], true, "{json}");
    assert_eq!(json["checkpoint"], id.as_str(), "{json}");
    assert_eq!(json["branch"], "main", "{json}");
    assert!(json["interrupted_restore"].is_null(), "{json}");
    assert_eq!(json["changes"].as_array().map(Vec::len), Some(0), "{json}");
}

#[test]
fn before_the_first_save_it_counts_the_paths_a_save_would_take() {
    let repo = Repo::new();
    repo.write("one.txt", b"1\n");
    assert_eq!(repo.ok(&["status"]).stdout, "1 path to save\n");
    repo.write("two.txt", b"2\n");
    repo.write("sub/three.txt", b"3\n");
    // Ignored files are not counted: a save would not take them.
    repo.write(".gitignore", b"*.log\n");
    repo.write("noise.log", b"x\n");
    assert_eq!(repo.ok(&["status"]).stdout, "4 paths to save\n");
    let json = repo.json_of(&["status"]);
    assert!(json["checkpoint"].is_null(), "{json}");
    assert_eq!(json["clean"], false, "{json}");
    let mut paths: Vec<&str> = json["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            assert_eq!(c["status"], "A", "{c}");
            c["path"].as_str().unwrap()
        })
        .collect();
    paths.sort_unstable();
    assert_eq!(paths, [".gitignore", "one.txt", "sub/three.txt", "two.txt"]);
    // Counting wrote nothing: there is still no checkpoint.
    assert!(log_ids(&repo, &["--all"]).is_empty());
}

#[test]
fn a_quoted_path_and_quiet_mode() {
    let repo = Repo::new();
    repo.write("plain.txt", b"p\n");
    repo.save_forced("base");
    repo.write("tab\there.txt", b"t\n");
    // Quoted as git quotes a path it prints (`core.quotePath`).
    assert_eq!(repo.ok(&["status"]).stdout, "A \"tab\\there.txt\"\n");
    // JSON keeps the name as it is.
    assert_eq!(
        repo.json_of(&["status"])["changes"][0]["path"],
        "tab\there.txt"
    );
    assert_eq!(repo.ok(&["-q", "status"]).stdout, "");
}

#[test]
fn outside_a_worktree_it_fails_like_git() {
    let sb = Sandbox::new();
    let plain = sb.root.join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    for args in [&["status"][..], &["status", "--json"]] {
        let out = sb.run_in(&plain, args);
        assert_eq!(out.code, 128, "{args:?}: {out}");
        assert!(
            out.stderr.trim_start().starts_with("fatal:"),
            "{args:?}: {out}"
        );
        // With --json, the error document, in one sentence without git's "fatal:".
        if args.contains(&"--json") {
            let document = parse_json(&out, "the error document");
            assert_eq!(document["kind"], "input", "{document:#}");
            let error = document["error"].as_str().unwrap();
            assert!(error.starts_with("not a git repository"), "{error}");
        } else {
            assert_eq!(out.stdout, "", "{args:?}: {out}");
        }
    }
    assert!(
        !plain.join(".git").exists(),
        "nothing created in a plain directory"
    );
}
