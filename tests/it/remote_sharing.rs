//! Sharing checkpoints through git remotes: export as commits, push, fetch, promote to
//! history. Every test goes through real repositories on disk (a bare one as the
//! remote) and the real binary.

use crate::common;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use common::{assert_snap_eq, parse_json, snapshot, Repo, Snap, EXIT_REFUSED};
use serde_json::Value;

/// A repository with a bare remote `origin` beside it (no branches on it yet).
fn with_remote() -> (Repo, PathBuf) {
    let repo = Repo::new();
    let bare = repo.sb.root.join("remote.git");
    repo.sb
        .git(&repo.sb.root, &["init", "-q", "--bare", "remote.git"]);
    repo.git(&["remote", "add", "origin", bare.to_str().unwrap()]);
    (repo, bare)
}

/// A worktree with every kind of entry a checkpoint keeps.
fn fill(repo: &Repo) {
    repo.write("README", b"hello\n");
    repo.write("empty", b"");
    repo.write_exec("bin/run.sh", b"#!/bin/sh\necho run\n");
    repo.symlink("link", "README");
    repo.write("deep/a/b/c.txt", b"deep\n");
    repo.write(".gitignore", b"*.log\n");
    repo.write("noise.log", b"ignored\n");
    let odd = repo.p(OsStr::from_bytes(b"caf\xe9 \"q\"\n.txt"));
    std::fs::write(odd, b"latin-1 name\n").unwrap();
}

/// Every object in a repository.
fn object_count(sb: &common::Sandbox, dir: &Path) -> usize {
    sb.git(dir, &["cat-file", "--batch-all-objects", "--batch-check"])
        .lines()
        .count()
}

/// The tree `git add -A` into a fresh index would commit for the worktree.
fn git_add_all_tree(repo: &Repo) -> String {
    let index = repo.sb.root.join("tmp-index");
    let _ = std::fs::remove_file(&index);
    for args in [&["add", "-A"][..], &["write-tree"][..]] {
        let mut cmd = repo.sb.git_cmd(&repo.dir, args);
        cmd.env("GIT_INDEX_FILE", &index);
        let out = common::run_cmd(cmd, common::DEFAULT_TIMEOUT);
        assert_eq!(out.code, 0, "{out}");
        if args[0] == "write-tree" {
            return out.stdout.trim().to_string();
        }
    }
    unreachable!()
}

fn push_json(repo: &Repo, args: &[&str]) -> Value {
    let mut all = vec!["push", "origin", "--json"];
    all.extend_from_slice(args);
    repo.json(&all)
}

#[test]
fn exported_commits_hold_what_git_add_would_commit_and_pass_fsck() {
    let (repo, bare) = with_remote();
    fill(&repo);
    repo.ok(&["save", "-m", "first", "--meta", "agent=test"]);
    let first_tree = git_add_all_tree(&repo);
    repo.write("README", b"changed\n");
    repo.remove("deep/a/b/c.txt");
    repo.write("deep/a/new", b"new\n");
    repo.set_exec("README", true);
    repo.ok(&["save", "-m", "second"]);
    let second_tree = git_add_all_tree(&repo);

    let pushed = push_json(&repo, &[]);
    let tip = pushed["branches"][0]["commit"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(pushed["exported"], 2, "{pushed}");
    let tree_of = |rev: &str| repo.sb.git(&bare, &["rev-parse", rev]).trim().to_string();
    assert_eq!(tree_of(&format!("{tip}^{{tree}}")), second_tree);
    assert_eq!(tree_of(&format!("{tip}~1^{{tree}}")), first_tree);
    repo.sb.git(&bare, &["fsck", "--strict", "--no-dangling"]);
    repo.git(&["fsck", "--strict", "--no-dangling"]);

    // The commit carries the record: fixed identity, the checkpoint's time, trailers.
    let raw = repo
        .sb
        .git(&bare, &["cat-file", "commit", &format!("{tip}~1")]);
    let first = repo.id("@~1");
    assert!(
        raw.contains("author git-checkpoint <git-checkpoint@localhost> "),
        "{raw}"
    );
    assert!(raw.contains(&format!("Checkpoint-Id: {first}\n")), "{raw}");
    assert!(raw.contains("Checkpoint-Meta: agent test\n"), "{raw}");
    assert!(raw.contains("\n\nfirst\n\nCheckpoint-Id"), "{raw}");
    // Only refs/checkpoints on the remote; no ref of its own left in the repository.
    let refs = repo.sb.git(&bare, &["for-each-ref", "--format=%(refname)"]);
    assert_eq!(refs.trim(), "refs/checkpoints/main");
    assert_eq!(
        repo.git(&["for-each-ref", "--format=%(refname)"]).trim(),
        ""
    );
}

#[test]
fn round_trip_restores_every_checkpoint_byte_for_byte() {
    let (repo, bare) = with_remote();
    repo.write("README", b"code\n");
    repo.git(&["add", "README"]);
    repo.git(&["commit", "-q", "-m", "code"]);
    fill(&repo);
    let mut saved: Vec<(String, String, Snap)> = Vec::new();
    let save = |saved: &mut Vec<_>, msg: &str, extra: &[&str]| {
        let mut args = vec!["-m", msg];
        args.extend_from_slice(extra);
        let id = common::id_of(&repo.save_json(&args)).unwrap();
        // The ignored file is not the checkpoint's, so the clone never gets it.
        let mut snap = repo.snapshot();
        snap.remove(b"noise.log".as_slice());
        saved.push((id, msg.to_string(), snap));
    };
    save(
        &mut saved,
        "one",
        &["--meta", "agent=claude", "--meta", "note=two words"],
    );
    repo.write("README", b"code\nmore\n");
    repo.set_exec("bin/run.sh", false);
    save(&mut saved, "two\n\nwith a body", &[]);
    repo.ok(&["fork", &saved[0].0, "-b", "side"]);
    repo.remove("link");
    repo.symlink("link", "deep/a/b/c.txt");
    repo.write("empty2", b"");
    save(&mut saved, "three", &[]);
    repo.write("deep/x", b"x\n");
    save(&mut saved, "four", &[]);
    repo.ok(&["push", "origin", "--all"]);

    let clone = repo.sb.root.join("clone");
    repo.sb.git(
        &repo.sb.root,
        &["clone", "-q", bare.to_str().unwrap(), "clone"],
    );
    let other = Repo {
        sb: common::Sandbox::new(),
        dir: clone.clone(),
    };
    let by_url = repo.sb.run_in(&clone, &["fetch", bare.to_str().unwrap()]);
    assert_eq!(by_url.code, 1, "{by_url}");
    assert!(
        by_url.stderr.contains("not a configured remote"),
        "{by_url}"
    );
    let fetched = parse_json(&repo.sb.ok_in(&clone, &["fetch", "--json"]), "fetch");
    assert_eq!(fetched["imported"], 4, "{fetched}");
    let original_of = |name: &str| {
        fetched["branches"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["name"] == name)
            .map(|b| b["original_id"].as_str().unwrap().to_string())
    };
    assert_eq!(
        original_of("origin/main").as_deref(),
        Some(saved[1].0.as_str())
    );
    assert_eq!(
        original_of("origin/side").as_deref(),
        Some(saved[3].0.as_str())
    );
    drop(other);

    let show = |rev: &str| parse_json(&repo.sb.ok_in(&clone, &["show", "--json", rev]), rev);
    // Graph shape: both branches grow from the first checkpoint.
    assert_eq!(show("origin/main~1")["id"], show("origin/side~2")["id"]);
    assert!(show("origin/main~1")["parents"]
        .as_array()
        .unwrap()
        .is_empty());
    for (rev, index) in [
        ("origin/main~1", 0),
        ("origin/main", 1),
        ("origin/side~1", 2),
        ("origin/side", 3),
    ] {
        let (id, message, snap) = &saved[index];
        let here = show(rev);
        let there = repo.json_of(&["show", id]);
        assert_eq!(here["message"].as_str(), Some(message.as_str()), "{rev}");
        for field in [
            "meta",
            "time",
            "branch",
            "git_head",
            "git_branch",
            "files",
            "bytes",
        ] {
            assert_eq!(here[field], there[field], "{rev}: {field}");
        }
        repo.sb.ok_in(&clone, &["restore", "--no-save", rev]);
        assert_snap_eq(snap, &snapshot(&clone, true), rev);
    }

    // Listed with their remote labels.
    let log = repo.sb.ok_in(&clone, &["log", "--graph", "--all"]).stdout;
    assert!(log.contains("origin/main"), "{log}");
    assert!(log.contains("origin/side"), "{log}");
    let shown = repo.sb.ok_in(&clone, &["show", "origin/side"]).stdout;
    assert!(shown.contains("origin/side"), "{shown}");

    // An unchanged remote: nothing happens, the store file stays byte-identical.
    let store = clone.join(".git/checkpoint/store.redb");
    let before = std::fs::read(&store).unwrap();
    let again = repo.sb.ok_in(&clone, &["fetch"]);
    assert!(again.stdout.contains("up to date"), "{again}");
    assert!(
        std::fs::read(&store).unwrap() == before,
        "an empty fetch wrote the store"
    );

    // drop refuses a fetched tip: the fetched branch mirrors the remote.
    let refused = repo.sb.run_in(&clone, &["drop", "origin/side"]);
    assert_eq!(refused.code, 1, "{refused}");
    assert!(
        refused.stderr.contains("fetched branch origin/side"),
        "{refused}"
    );

    // gc keeps what fetched branches name, as it keeps local branch tips.
    repo.sb.ok_in(&clone, &["gc", "--keep", "1"]);
    for (rev, index) in [("origin/main", 1), ("origin/side", 3)] {
        let kept = show(rev);
        assert_eq!(
            kept["message"].as_str(),
            Some(saved[index].1.as_str()),
            "{rev}"
        );
    }
}

#[test]
fn a_second_push_sends_only_the_new_objects() {
    let (repo, bare) = with_remote();
    fill(&repo);
    repo.save("one");
    repo.ok(&["push", "origin"]);
    let before = object_count(&repo.sb, &bare);
    repo.write("README", b"a change nobody made before\n");
    repo.save("two");
    let pushed = push_json(&repo, &[]);
    assert_eq!(pushed["exported"], 1, "{pushed}");
    assert_eq!(pushed["branches"][0]["status"], "fast-forward", "{pushed}");
    // One blob, the root tree, one commit.
    assert_eq!(object_count(&repo.sb, &bare) - before, 3);
    let again = push_json(&repo, &[]);
    assert_eq!(again["exported"], 0, "{again}");
    assert_eq!(again["branches"][0]["status"], "up to date", "{again}");
}

#[test]
fn an_ordinary_clone_gets_no_checkpoint_object() {
    let (repo, bare) = with_remote();
    repo.write("code.rs", b"fn main() {}\n");
    repo.git(&["add", "code.rs"]);
    repo.git(&["commit", "-q", "-m", "code"]);
    repo.git(&["push", "-q", "origin", "main"]);
    repo.write("scratch.txt", b"only in a checkpoint 7f3a\n");
    repo.save("work");
    let pushed = push_json(&repo, &[]);
    let commit = pushed["branches"][0]["commit"]
        .as_str()
        .unwrap()
        .to_string();
    let blob = repo.git(&["hash-object", "scratch.txt"]).trim().to_string();
    repo.sb.git(&bare, &["cat-file", "-e", &commit]);
    repo.sb.git(&bare, &["cat-file", "-e", &blob]);

    let clone = repo.sb.root.join("plain");
    repo.sb.git(
        &repo.sb.root,
        &["clone", "-q", "--no-local", bare.to_str().unwrap(), "plain"],
    );
    for object in [&commit, &blob] {
        let out = common::run_cmd(
            repo.sb.git_cmd(&clone, &["cat-file", "-e", object]),
            common::DEFAULT_TIMEOUT,
        );
        assert_ne!(out.code, 0, "the clone has checkpoint object {object}");
    }
    let reachable = repo.sb.git(&clone, &["rev-list", "--objects", "--all"]);
    assert_eq!(object_count(&repo.sb, &clone), reachable.lines().count());
}

#[test]
fn a_diverged_remote_branch_is_refused_unchanged_and_force_replaces_it() {
    let (a, bare) = with_remote();
    a.write("f", b"from a\n");
    a.save("a");
    let pushed = push_json(&a, &[]);
    let a_commit = pushed["branches"][0]["commit"]
        .as_str()
        .unwrap()
        .to_string();

    let b = Repo::new();
    b.git(&["remote", "add", "origin", bare.to_str().unwrap()]);
    b.write("f", b"from b\n");
    b.save("b");
    let refused = b.run(&["push", "origin"]);
    assert_eq!(refused.code, 1, "{refused}");
    assert!(
        refused.stderr.contains("git checkpoint fetch origin"),
        "{refused}"
    );
    assert!(refused.stderr.contains("--force"), "{refused}");
    let remote_tip = |repo: &Repo| {
        repo.sb
            .git(&bare, &["rev-parse", "refs/checkpoints/main"])
            .trim()
            .to_string()
    };
    assert_eq!(remote_tip(&b), a_commit);

    let forced = push_json(&b, &["--force"]);
    assert_eq!(forced["branches"][0]["status"], "forced", "{forced}");
    let b_commit = forced["branches"][0]["commit"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(remote_tip(&b), b_commit);
    // Now a's branch is the one behind: refused in turn.
    a.write("f", b"a again\n");
    a.save("a2");
    assert_eq!(a.run(&["push", "origin"]).code, 1);
    assert_eq!(remote_tip(&a), b_commit);
}

#[test]
fn the_first_push_refuses_secrets_unless_allowed() {
    let (repo, bare) = with_remote();
    repo.write("code.rs", b"fn main() {}\n");
    repo.write(".env", b"DATABASE_PASSWORD=hunter2\n");
    repo.write(
        "keys/id_ed25519",
        b"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n",
    );
    repo.write(
        "notes.txt",
        b"token ghp_0123456789abcdefghijklmnopqrstuvwxyzAB\n",
    );
    repo.save("with secrets");
    let refused = repo.run(&["push", "origin"]);
    assert_eq!(refused.code, EXIT_REFUSED, "{refused}");
    for path in [".env", "keys/id_ed25519", "notes.txt"] {
        assert!(refused.stderr.contains(path), "{path} not named: {refused}");
    }
    assert!(!refused.stderr.contains("code.rs"), "{refused}");
    assert!(refused.stderr.contains("--allow"), "{refused}");
    let refs = repo.sb.git(&bare, &["for-each-ref"]);
    assert_eq!(refs.trim(), "", "a refused push changed the remote");
    assert_eq!(object_count(&repo.sb, &bare), 0);

    let partly = repo.run(&["push", "origin", "--allow", ".env", "--allow", "notes.txt"]);
    assert_eq!(partly.code, EXIT_REFUSED, "{partly}");
    assert!(partly.stderr.contains("keys/id_ed25519"), "{partly}");
    let out = repo.ok(&[
        "push",
        "origin",
        "--allow",
        ".env",
        "--allow",
        "keys/id_ed25519",
        "--allow",
        "notes.txt",
    ]);
    assert!(out.stdout.contains("git does not track"), "{out}");
    assert!(out.stdout.contains("code.rs"), "{out}");
    repo.sb.git(&bare, &["rev-parse", "refs/checkpoints/main"]);
}

#[test]
fn export_makes_a_branch_with_the_checkpoint_tree_and_recorded_parent() {
    let repo = Repo::new();
    repo.write("code.rs", b"fn main() {}\n");
    repo.git(&["add", "code.rs"]);
    repo.git(&["commit", "-q", "-m", "code"]);
    let saved_on = repo.git(&["rev-parse", "HEAD"]).trim().to_string();
    repo.write("code.rs", b"fn main() { agent(); }\n");
    repo.write("new.rs", b"fn agent() {}\n");
    repo.git(&["add", "new.rs"]);
    repo.write("untracked.txt", b"notes\n");
    repo.save("agent attempt");
    let tree = git_add_all_tree(&repo);
    // The repository moves on after the save.
    repo.git(&["commit", "-q", "-m", "later"]);
    let head = repo.git(&["rev-parse", "HEAD"]).trim().to_string();

    let status = || {
        repo.git(&[
            "status",
            "--porcelain=v2",
            "--branch",
            "--untracked-files=all",
        ])
    };
    let index = || std::fs::read(repo.git_dir().join("index")).unwrap();
    let (status_before, index_before, files_before) = (status(), index(), repo.snapshot());
    let made = repo.json(&["export", "--json", "@", "-b", "attempt"]);
    assert_eq!(made["parent"].as_str(), Some(saved_on.as_str()), "{made}");
    assert_eq!(status(), status_before);
    assert!(index() == index_before, "export changed the index");
    assert_snap_eq(&files_before, &repo.snapshot(), "export");
    let rev = |r: &str| repo.git(&["rev-parse", r]).trim().to_string();
    assert_eq!(rev("attempt^{tree}"), tree);
    assert_eq!(rev("attempt^"), saved_on);
    assert_eq!(rev("attempt"), made["commit"].as_str().unwrap());
    let message = repo.git(&["log", "-1", "--format=%B%an", "attempt"]);
    assert!(
        message.starts_with("agent attempt\n\nCheckpoint-Id: "),
        "{message}"
    );
    assert!(message.ends_with("Test Author\n"), "{message}");

    let onto = repo.json(&["export", "--json", "@", "--onto", "-b", "attempt-2"]);
    assert_eq!(onto["parent"].as_str(), Some(head.as_str()), "{onto}");
    assert_eq!(rev("attempt-2^{tree}"), tree);
    let again = repo.run(&["export", "@", "-b", "attempt"]);
    assert_eq!(again.code, 1, "{again}");
    assert!(again.stderr.contains("already exists"), "{again}");
    assert_eq!(rev("attempt"), made["commit"].as_str().unwrap());
    assert_eq!(status(), status_before);
}

/// A `git daemon` serving the sandbox on 127.0.0.1, stopped when dropped.
struct Daemon(std::process::Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn round_trip_through_git_daemon_on_localhost() {
    let (repo, _bare) = with_remote();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let base = repo.sb.root.to_str().unwrap().to_string();
    let mut cmd = repo.sb.git_cmd(
        &repo.sb.root,
        &[
            "daemon",
            "--reuseaddr",
            "--export-all",
            "--enable=receive-pack",
            "--listen=127.0.0.1",
            &format!("--port={port}"),
            &format!("--base-path={base}"),
            &base,
        ],
    );
    cmd.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let _daemon = Daemon(cmd.spawn().expect("git daemon"));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "git daemon did not start"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let url = format!("git://127.0.0.1:{port}/remote.git");
    repo.git(&["remote", "set-url", "origin", &url]);

    fill(&repo);
    repo.save("over the wire");
    let expected = {
        let mut snap = repo.snapshot();
        snap.remove(b"noise.log".as_slice());
        snap
    };
    repo.write("README", b"second\n");
    repo.save("second");
    repo.ok(&["push", "origin"]);

    let clone = repo.sb.root.join("wire-clone");
    repo.sb
        .git(&repo.sb.root, &["clone", "-q", &url, "wire-clone"]);
    let fetched = parse_json(&repo.sb.ok_in(&clone, &["fetch", "--json"]), "fetch");
    assert_eq!(fetched["imported"], 2, "{fetched}");
    repo.sb
        .ok_in(&clone, &["restore", "--no-save", "origin/main~1"]);
    assert_snap_eq(&expected, &snapshot(&clone, true), "over git://");
    assert!(repo
        .sb
        .ok_in(&clone, &["fetch"])
        .stdout
        .contains("up to date"));
}

#[test]
fn a_fetched_commit_with_an_unsafe_name_is_refused_and_adds_nothing() {
    let (repo, bare) = with_remote();
    // A hostile remote: a checkpoint commit whose tree writes into a `.Git` directory.
    let message = "x\n\nCheckpoint-Id: 0000000000000000000000000000abcd\nCheckpoint-Time: 0\n";
    let mut stream = format!(
        "commit refs/checkpoints/main\nauthor a <a@b> 0 +0000\ncommitter a <a@b> 0 +0000\ndata {}\n{message}",
        message.len()
    );
    stream.push_str("M 100644 inline \".Git/hooks/post-checkout\"\ndata 3\nhi\n\n");
    let out = common::run_cmd_with_input(
        repo.sb.git_cmd(&bare, &["fast-import", "--quiet"]),
        Some(stream.as_bytes()),
        common::DEFAULT_TIMEOUT,
    );
    assert_eq!(out.code, 0, "{out}");

    let refused = repo.run(&["fetch"]);
    assert_eq!(refused.code, 1, "{refused}");
    assert!(
        refused.stderr.contains(".Git/hooks/post-checkout"),
        "{refused}"
    );
    assert_eq!(repo.log_ids(true), Vec::<String>::new());
    assert_eq!(repo.run(&["show", "origin/main"]).code, 1);
}

#[test]
fn fetched_content_is_stored_once_beside_local_content() {
    let (repo, bare) = with_remote();
    let data = common::pseudo_random(1 << 20, 7);
    repo.write("data.bin", &data);
    repo.write("small.txt", b"from the pushing side\n");
    repo.save("with data");
    repo.ok(&["push", "origin"]);

    let clone = repo.sb.root.join("dedup-clone");
    repo.sb.git(
        &repo.sb.root,
        &["clone", "-q", bare.to_str().unwrap(), "dedup-clone"],
    );
    std::fs::write(clone.join("data.bin"), &data).unwrap();
    repo.sb.ok_in(&clone, &["save", "-m", "local copy"]);
    let stored = |what: &str| {
        parse_json(&repo.sb.ok_in(&clone, &["stats", "--json"]), what)["stored_chunk_bytes"]
            .as_u64()
            .unwrap()
    };
    let before = stored("before");
    assert!(before >= 1 << 20, "the local copy is stored: {before}");
    repo.sb.ok_in(&clone, &["fetch"]);
    let grew = stored("after") - before;
    assert!(
        grew < 4096,
        "the fetched copy of data.bin was stored again: +{grew} bytes"
    );
    let shown = parse_json(
        &repo.sb.ok_in(&clone, &["show", "--json", "origin/main"]),
        "show",
    );
    assert_eq!(shown["bytes"], (data.len() + 22) as u64, "{shown}");
}

#[test]
fn attachments_travel_beside_the_commits_and_round_trip() {
    let (repo, bare) = with_remote();
    repo.write("code.txt", b"code\n");
    // Attached from outside the worktree, so no file of the worktree holds it.
    let transcript = repo.sb.root.join("transcript.jsonl");
    let bytes = b"{\"role\":\"user\"}\n\xff not text 5e1d\n".to_vec();
    std::fs::write(&transcript, &bytes).unwrap();
    let path = transcript.to_str().unwrap();
    repo.ok(&["save", "-m", "with a transcript", "--attach", path]);
    let worktree_tree = git_add_all_tree(&repo);
    repo.write("code.txt", b"more code\n");
    repo.save("after");

    let pushed = push_json(&repo, &[]);
    assert_eq!(
        pushed["attachments"][0]["name"], "transcript.jsonl",
        "{pushed}"
    );
    let tip = pushed["branches"][0]["commit"]
        .as_str()
        .unwrap()
        .to_string();
    // The commit's tree is still what git add -A commits; its message names the blob.
    let first = format!("{tip}~1");
    let tree = repo
        .sb
        .git(&bare, &["rev-parse", &format!("{first}^{{tree}}")]);
    assert_eq!(tree.trim(), worktree_tree);
    let blob = repo.git(&["hash-object", path]).trim().to_string();
    let message = repo.sb.git(&bare, &["log", "-1", "--format=%B", &first]);
    assert!(
        message.contains(&format!(
            "Checkpoint-Attachment: {} {blob} transcript.jsonl",
            bytes.len()
        )),
        "{message}"
    );
    let first_sha = repo
        .sb
        .git(&bare, &["rev-parse", &first])
        .trim()
        .to_string();
    let kept = repo.sb.git(
        &bare,
        &[
            "rev-parse",
            &format!("refs/checkpoints-attachments/main:{first_sha}/transcript.jsonl"),
        ],
    );
    assert_eq!(kept.trim(), blob);
    repo.sb.git(&bare, &["fsck", "--strict", "--no-dangling"]);
    // Pushing again changes nothing: the attachments commit is made the same again.
    let before = object_count(&repo.sb, &bare);
    let again = push_json(&repo, &[]);
    assert_eq!(again["branches"][0]["status"], "up to date", "{again}");
    assert_eq!(again["attachments"], serde_json::json!([]), "{again}");
    assert_eq!(object_count(&repo.sb, &bare), before);

    // A fresh clone fetches them with the checkpoints, byte for byte (--no-local: a
    // local clone would copy every object of the remote).
    repo.sb.git(
        &repo.sb.root,
        &["clone", "-q", "--no-local", bare.to_str().unwrap(), "clone"],
    );
    let clone = repo.sb.root.join("clone");
    repo.sb.ok_in(&clone, &["fetch"]);
    let got = repo
        .sb
        .ok_in(&clone, &["attachment", "origin/main~1", "transcript.jsonl"]);
    assert!(got.stdout_raw == bytes, "{got}");
    let shown = parse_json(
        &repo.sb.ok_in(&clone, &["show", "--json", "origin/main~1"]),
        "show",
    );
    assert_eq!(
        shown["attachments"][0]["name"], "transcript.jsonl",
        "{shown}"
    );
    // Fetching a named branch brings them too.
    repo.sb.git(
        &repo.sb.root,
        &["clone", "-q", "--no-local", bare.to_str().unwrap(), "named"],
    );
    let named = repo.sb.root.join("named");
    repo.sb.ok_in(&named, &["fetch", "origin", "main"]);
    let got = repo
        .sb
        .ok_in(&named, &["attachment", "origin/main~1", "transcript.jsonl"]);
    assert!(got.stdout_raw == bytes, "{got}");

    // An ordinary clone gets none of it.
    repo.sb.git(
        &repo.sb.root,
        &["clone", "-q", "--no-local", bare.to_str().unwrap(), "plain"],
    );
    let plain = repo.sb.root.join("plain");
    let out = common::run_cmd(
        repo.sb.git_cmd(&plain, &["cat-file", "-e", &blob]),
        common::DEFAULT_TIMEOUT,
    );
    assert_ne!(out.code, 0, "an ordinary clone has the attachment's blob");

    // A new attachment later: only new objects travel, not every attachment again.
    let before = object_count(&repo.sb, &bare);
    std::fs::write(&transcript, b"a later transcript\n").unwrap();
    repo.write("code.txt", b"third\n");
    repo.ok(&["save", "-m", "third", "--attach", path]);
    push_json(&repo, &[]);
    // The checkpoint's commit, root tree and file blob, the attachment's blob, and the
    // attachments commit, its root tree and the checkpoint's directory in it.
    assert_eq!(object_count(&repo.sb, &bare) - before, 7);
    let side = "refs/checkpoints-attachments/main";
    let parent = repo.sb.git(&bare, &["rev-list", "--count", side]);
    assert_eq!(
        parent.trim(),
        "2",
        "the attachments commit does not build on the last"
    );
    repo.sb.ok_in(&clone, &["fetch"]);
    let got = repo
        .sb
        .ok_in(&clone, &["attachment", "origin/main~2", "transcript.jsonl"]);
    assert!(got.stdout_raw == bytes, "{got}");
    let got = repo
        .sb
        .ok_in(&clone, &["attachment", "origin/main", "transcript.jsonl"]);
    assert_eq!(got.stdout, "a later transcript\n");
}

#[test]
fn a_dry_run_writes_nothing_and_says_what_a_push_would_do() {
    let (repo, bare) = with_remote();
    fill(&repo);
    repo.save("one");
    let objects = object_count(&repo.sb, &repo.dir);
    let store = repo.git_dir().join("checkpoint/store.redb");
    let stored = std::fs::read(&store).unwrap();
    let dry = push_json(&repo, &["--dry-run"]);
    assert_eq!(object_count(&repo.sb, &repo.dir), objects, "{dry}");
    assert!(
        std::fs::read(&store).unwrap() == stored,
        "a dry run wrote the store"
    );
    assert_eq!(dry["branches"][0]["status"], "new", "{dry}");
    assert_eq!(dry["branches"][0]["commit"], Value::Null, "{dry}");
    assert_eq!(dry["exported"], 1, "{dry}");
    assert!(dry["untracked"].as_array().unwrap().len() > 1, "{dry}");
    assert_eq!(object_count(&repo.sb, &bare), 0);

    let pushed = push_json(&repo, &[]);
    repo.write("README", b"next\n");
    repo.save("two");
    let objects = object_count(&repo.sb, &repo.dir);
    let dry = push_json(&repo, &["--dry-run"]);
    assert_eq!(dry["branches"][0]["status"], "fast-forward", "{dry}");
    assert_eq!(dry["exported"], 1, "{dry}");
    assert_eq!(object_count(&repo.sb, &repo.dir), objects);
    let remote_tip = repo.sb.git(&bare, &["rev-parse", "refs/checkpoints/main"]);
    assert_eq!(
        remote_tip.trim(),
        pushed["branches"][0]["commit"].as_str().unwrap()
    );

    // A remote branch this store lacks: refused, as the real push would be.
    let other = Repo::new();
    other.git(&["remote", "add", "origin", bare.to_str().unwrap()]);
    other.write("f", b"elsewhere\n");
    other.save("elsewhere");
    let refused = other.run(&["push", "origin", "--dry-run"]);
    assert_eq!(refused.code, 1, "{refused}");
    assert!(refused.stderr.contains("--force"), "{refused}");
    let forced = push_json(&other, &["--dry-run", "--force"]);
    assert_eq!(forced["branches"][0]["status"], "forced", "{forced}");
    assert_eq!(
        remote_tip.trim(),
        repo.sb
            .git(&bare, &["rev-parse", "refs/checkpoints/main"])
            .trim()
    );
}

#[test]
fn pull_fast_forwards_the_branch_and_refuses_a_diverged_one() {
    let (a, bare) = with_remote();
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
    let pull = |args: &[&str]| {
        let mut all = vec!["pull", "--json"];
        all.extend_from_slice(args);
        parse_json(&a.sb.ok_in(&b.dir, &all), "pull")
    };
    // A fresh store: the current branch is made, and the worktree follows.
    let first = pull(&[]);
    assert_eq!(first["status"], "new", "{first}");
    assert_eq!(b.read("f.txt"), b"one\n");

    // A fast-forward of the current branch is a restore: unsaved changes saved first.
    a.write("f.txt", b"two\n");
    a.save("a2");
    a.ok(&["push", "origin"]);
    b.write("scratch.txt", b"unsaved\n");
    let second = pull(&[]);
    assert_eq!(second["status"], "fast-forward", "{second}");
    assert_eq!(second["from"], first["to"], "{second}");
    assert!(second["safety_checkpoint"].is_string(), "{second}");
    assert_eq!(b.read("f.txt"), b"two\n");
    assert_eq!(
        b.json(&["show", "--json", "main"])["message"],
        "a2",
        "the branch did not move"
    );
    let again = pull(&[]);
    assert_eq!(again["status"], "up to date", "{again}");

    // Saved on top here: ahead, nothing moves.
    b.write("f.txt", b"b3\n");
    b.save("b3");
    let ahead = pull(&[]);
    assert_eq!(ahead["status"], "ahead", "{ahead}");
    assert_eq!(b.json(&["show", "--json", "main"])["message"], "b3");

    // Both sides went on: refused, branch and worktree unchanged, with what to do.
    a.write("f.txt", b"a3\n");
    a.save("a3");
    a.ok(&["push", "origin"]);
    let refused = a.sb.run_in(&b.dir, &["pull"]);
    assert_eq!(refused.code, 1, "{refused}");
    for hint in [
        "fetched 1 new checkpoint from origin, but main and origin/main have diverged",
        "git checkpoint fork origin/main",
        "push --force",
    ] {
        assert!(refused.stderr.contains(hint), "{refused}");
    }
    assert_eq!(b.json(&["show", "--json", "main"])["message"], "b3");
    assert_eq!(b.read("f.txt"), b"b3\n");

    // Another branch only has its tip moved; the worktree stays.
    a.ok(&["fork", "@~1", "-b", "side"]);
    a.write("g.txt", b"side\n");
    a.save("s1");
    a.ok(&["push", "origin", "side"]);
    let side = pull(&["origin", "side"]);
    assert_eq!(side["status"], "new", "{side}");
    assert_eq!(b.json(&["show", "--json", "side"])["message"], "s1");
    assert!(!b.exists("g.txt"));
    assert_eq!(b.json(&["show", "--json", "main"])["message"], "b3");
}
