//! Revisions, errors and exit codes, and the one-writer lock.

use crate::common;
use std::thread;
use std::time::Duration;

use common::*;

/// Resolves a revision through `restore --dry-run --json` (changes nothing).
fn resolve(r: &Repo, rev: &str) -> String {
    let v = r.json(&["restore", rev, "--dry-run", "--json"]);
    v["target"]
        .as_str()
        .unwrap_or_else(|| panic!("no target for {rev}: {v}"))
        .to_string()
}

#[test]
fn revisions_resolve() {
    let r = Repo::new();
    r.write("v.txt", b"1");
    let c1 = r.save("one");
    r.write("v.txt", b"2");
    let c2 = r.save("two");
    r.write("v.txt", b"3");
    let c3 = r.save("three");
    let all = r.log_ids(true);

    assert_eq!(resolve(&r, &c1), c1);
    // Shortest unique prefix of at least 4 (4 unless two ids happen to share it).
    let mut n = 4;
    while all.iter().filter(|i| i.starts_with(&c2[..n])).count() > 1 {
        n += 1;
    }
    assert_eq!(resolve(&r, &c2[..n]), c2, "prefix {}", &c2[..n]);
    assert_eq!(resolve(&r, "@"), c3);
    assert_eq!(resolve(&r, "@~1"), c2);
    assert_eq!(resolve(&r, "@~2"), c1);
    assert_eq!(resolve(&r, &format!("{c3}~2")), c1);
    assert_eq!(resolve(&r, &format!("{}~1", &c2[..8])), c1);
    assert_eq!(resolve(&r, "main"), c3);
    assert_eq!(resolve(&r, "main~1"), c2);

    // Real restores by each kind of revision.
    r.ok(&["restore", &c1[..n.max(5)]]);
    assert_eq!(r.read("v.txt"), b"1");
    assert_eq!(r.current(), c1);
    r.ok(&["restore", &c3]);
    assert_eq!(r.read("v.txt"), b"3");
    r.ok(&["restore", "@~1"]);
    assert_eq!(r.read("v.txt"), b"2");
    assert_eq!(r.current(), c2);
    r.write("v.txt", b"dirty");
    r.ok(&["restore", "@", "--no-save"]);
    assert_eq!(r.read("v.txt"), b"2", "restore @ discards unsaved changes");
    r.ok(&["restore", &c3]);
    assert_eq!(r.read("v.txt"), b"3");
    r.ok(&["restore", "main"]);
    assert_eq!(r.read("v.txt"), b"3");
    assert_eq!(r.current(), c3);
}

#[test]
fn bad_revisions_fail_cleanly_and_change_nothing() {
    let r = Repo::new();
    r.write("v.txt", b"1");
    let c1 = r.save("one");
    r.write("v.txt", b"2");
    let c2 = r.save("two");
    let all = r.log_ids(true);
    // A hex prefix that matches nothing.
    let missing = (0u32..)
        .map(|i| format!("{i:08x}"))
        .find(|p| !all.iter().any(|id| id.starts_with(p.as_str())))
        .unwrap();

    r.write("v.txt", b"dirty, unsaved");
    let snap = r.snapshot();
    let bad = [
        "zzzz".to_string(),
        "@~99".to_string(),
        c1[..3].to_string(),
        missing.clone(),
        "@~x".to_string(),
        "nosuchbranch".to_string(),
        format!("{c2}~5"),
        format!("{c1}0"),
    ];
    for rev in &bad {
        let out = r.run(&["restore", rev.as_str()]);
        assert_eq!(out.code, 1, "restore {rev:?} must exit 1\n{out}");
        assert!(
            !out.stderr.trim().is_empty(),
            "restore {rev:?}: no message\n{out}"
        );
        assert_snap_eq(&snap, &r.snapshot(), &format!("failed restore {rev:?}"));
        assert_eq!(
            r.log_ids(true),
            all,
            "failed restore {rev:?} changed the store"
        );
    }
    // Dry runs and --json errors too.
    let out = r.run(&["restore", "zzzz", "--dry-run", "--json"]);
    assert_eq!(out.code, 1, "{out}");
    let out = r.run(&["restore", &missing, "--", "v.txt"]);
    assert_eq!(out.code, 1, "{out}");
    assert_snap_eq(&snap, &r.snapshot(), "failed restores");
}

#[test]
fn outside_worktree_and_bare_repo_exit_128() {
    let sb = Sandbox::new();
    let plain = sb.root.join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    std::fs::write(plain.join("f.txt"), b"x").unwrap();
    let bare = sb.root.join("bare.git");
    std::fs::create_dir_all(&bare).unwrap();
    sb.git(&bare, &["init", "-q", "--bare", "-b", "main"]);

    let cases: Vec<(&std::path::Path, Vec<&str>)> = vec![
        (&plain, vec!["save"]),
        (&plain, vec!["log"]),
        (&plain, vec!["restore", "@"]),
        (&bare, vec!["save", "-m", "x"]),
        (&bare, vec!["log", "--json"]),
        (&sb.root, vec!["-C", "plain", "save"]),
        (&sb.root, vec!["-C", "bare.git", "save"]),
    ];
    for (cwd, args) in cases {
        let out = sb.run_in(cwd, &args);
        assert_eq!(out.code, 128, "{args:?} in {}\n{out}", cwd.display());
        assert!(
            out.stderr.trim_start().starts_with("fatal:"),
            "{args:?}: stderr must start with fatal:\n{out}"
        );
    }
    assert!(
        !plain.join(".git").exists(),
        "nothing created in a plain directory"
    );
    assert!(
        !bare.join("checkpoint").exists(),
        "no store created in a bare repo"
    );
}

#[test]
fn usage_errors_exit_2() {
    let r = Repo::new();
    for args in [
        vec!["frobnicate"],
        vec!["restore"],
        vec!["save", "--no-such-flag"],
        vec!["log", "-n", "notanumber"],
    ] {
        let out = r.run(&args);
        assert_eq!(out.code, 2, "{args:?}\n{out}");
        assert!(!out.stderr.is_empty(), "{args:?}: usage message\n{out}");
    }
    assert!(
        !r.store_path().exists(),
        "usage errors must not create a store"
    );
}

#[test]
fn second_writer_waits_for_the_lock() {
    let r = Repo::new();
    r.write("a.txt", b"a\n");
    let base = r.save("base");

    let mut a = r.sb.bin_cmd(
        &r.dir,
        &["save", "--allow-empty", "--json", "-m", "writer A"],
    );
    a.env("GIT_CHECKPOINT_PAUSE", "locked:3000");
    let ha = spawn_bg(a, DEFAULT_TIMEOUT);
    thread::sleep(Duration::from_millis(500));
    let b = r.sb.bin_cmd(
        &r.dir,
        &["save", "--allow-empty", "--json", "-m", "writer B"],
    );
    let hb = spawn_bg(b, DEFAULT_TIMEOUT);
    let oa = ha.join().expect("A thread");
    let ob = hb.join().expect("B thread");
    assert_no_panic(&oa, "writer A");
    assert_no_panic(&ob, "writer B");
    assert_eq!(oa.code, 0, "A\n{oa}");
    assert_eq!(ob.code, 0, "B must wait and succeed\n{ob}");
    assert!(
        ob.finished >= oa.finished - Duration::from_millis(50),
        "B finished before A released the store"
    );
    assert!(
        ob.elapsed() >= Duration::from_millis(1500),
        "B did not wait ({:?})",
        ob.elapsed()
    );
    assert!(
        ob.stderr
            .contains("waiting for another git-checkpoint to finish"),
        "B's stderr must say it waits\n{ob}"
    );
    let ja = parse_json(&oa, "A");
    let jb = parse_json(&ob, "B");
    let ida = id_of(&ja).unwrap();
    let idb = id_of(&jb).unwrap();
    assert_eq!(ja["parents"], serde_json::json!([base]), "{ja}");
    assert_eq!(
        jb["parents"],
        serde_json::json!([ida]),
        "B must build on A (it read the store after taking the lock)"
    );
    let line = r.log_ids(false);
    assert_eq!(line, vec![idb, ida, base], "both checkpoints in log --json");
}

#[test]
fn lock_wait_times_out_per_config() {
    let r = Repo::new();
    r.write("a.txt", b"a\n");
    let base = r.save("base");
    r.git(&["config", "checkpoint.lockTimeout", "1"]);

    let mut a =
        r.sb.bin_cmd(&r.dir, &["save", "--allow-empty", "--json", "-m", "slow A"]);
    a.env("GIT_CHECKPOINT_PAUSE", "locked:6000");
    let ha = spawn_bg(a, DEFAULT_TIMEOUT);
    thread::sleep(Duration::from_millis(500));
    let ob = run_cmd(
        r.sb.bin_cmd(&r.dir, &["save", "--allow-empty", "-m", "impatient B"]),
        Duration::from_secs(20),
    );
    assert_no_panic(&ob, "writer B");
    assert_eq!(
        ob.code, EXIT_BUSY,
        "B must give up with the busy store's exit status\n{ob}"
    );
    assert!(
        ob.elapsed() >= Duration::from_millis(800) && ob.elapsed() < Duration::from_secs(4),
        "B should give up after about 1 s, took {:?}",
        ob.elapsed()
    );
    let err = ob.stderr.to_lowercase();
    assert!(
        err.contains("lock") || err.contains("another git-checkpoint") || err.contains("busy"),
        "B needs a clear message\n{ob}"
    );
    let oa = ha.join().expect("A thread");
    assert_eq!(oa.code, 0, "A\n{oa}");
    let ida = id_of(&parse_json(&oa, "A")).unwrap();
    assert_eq!(r.log_ids(true), vec![ida, base], "B made no checkpoint");
}

/// A worktree whose path holds a newline: git's answers are told apart exactly, so the
/// store lands in its own `.git` and the files are saved (not a sibling directory and
/// nothing saved).
#[test]
fn a_worktree_path_with_a_newline_works() {
    let sb = common::Sandbox::new();
    let dir = sb.init_repo("odd\nname");
    std::fs::write(dir.join("a.txt"), b"a\n").unwrap();
    let out = sb.ok_in(&dir, &["save", "--json"]);
    let saved: serde_json::Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(saved["files"], 1, "{out}");
    assert!(dir.join(".git/checkpoint/store.redb").exists());
    let mut names: Vec<_> = std::fs::read_dir(&sb.root)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["home", "odd\nname"],
        "something was made beside the worktree"
    );
    std::fs::write(dir.join("a.txt"), b"changed\n").unwrap();
    sb.ok_in(&dir, &["restore", "@"]);
    assert_eq!(std::fs::read(dir.join("a.txt")).unwrap(), b"a\n");
}

/// The error document a failing `--json` command prints on stdout.
#[track_caller]
fn error_document(out: &Out) -> serde_json::Value {
    let doc = parse_json(out, "the error document");
    assert!(doc["error"].is_string(), "{doc:#}");
    doc
}

#[test]
fn a_busy_store_exits_with_its_own_status_and_says_busy() {
    let r = Repo::new();
    r.write("a.txt", b"a\n");
    r.save("base");
    r.git(&["config", "checkpoint.lockTimeout", "0"]);
    // A holds the store (the test hook pauses it with the lock taken).
    let mut holder = spawn_paused(
        &r,
        &["save", "--allow-empty", "-m", "holder"],
        "locked",
        4000,
    );
    let out = r.run(&["save", "--allow-empty", "--json", "-m", "impatient"]);
    let text = r.run(&["save", "--allow-empty", "-m", "impatient"]);
    holder.wait().unwrap();
    assert_eq!(out.code, EXIT_BUSY, "{out}");
    assert_eq!(text.code, EXIT_BUSY, "{text}");
    let doc = error_document(&out);
    assert_eq!(doc["kind"], "busy", "{doc:#}");
    assert!(
        doc["error"]
            .as_str()
            .unwrap()
            .contains("another git-checkpoint has held the store"),
        "{doc:#}"
    );
    // The person at the terminal still reads the one line.
    assert!(
        out.stderr.starts_with("error: another git-checkpoint"),
        "{out}"
    );
    assert_eq!(text.stdout, "", "{text}");
}

#[test]
fn a_refused_restore_exits_with_its_own_status_and_says_refused() {
    let r = Repo::new();
    r.write("foo.log", b"captured\n");
    let first = r.save("foo.log captured");
    r.write(".gitignore", b"*.log\n");
    r.write("foo.log", b"precious ignored work\n");
    r.save("foo.log ignored");
    for args in [
        vec!["restore", first.as_str(), "--json"],
        vec!["restore", first.as_str(), "--dry-run", "--json"],
    ] {
        let out = r.run(&args);
        assert_eq!(out.code, EXIT_REFUSED, "{args:?}: {out}");
        let doc = error_document(&out);
        assert_eq!(doc["kind"], "refused", "{args:?}: {doc:#}");
        assert!(
            doc["error"].as_str().unwrap().contains("foo.log"),
            "{doc:#}"
        );
        assert!(out.stderr.starts_with("error: "), "{out}");
    }
    assert_eq!(r.read("foo.log"), b"precious ignored work\n");
}

#[test]
fn a_json_error_names_its_kind_and_a_text_one_prints_no_document() {
    let r = Repo::new();
    r.write("a.txt", b"a\n");
    r.save("one");
    let out = r.run(&["restore", "nosuchrev", "--json"]);
    assert_eq!(out.code, 1, "{out}");
    let doc = error_document(&out);
    assert_eq!(doc["kind"], "input", "{doc:#}");
    assert_eq!(
        doc["error"],
        "unknown revision 'nosuchrev'; 'git checkpoint log --all' lists every checkpoint, 'git checkpoint sessions' every agent session",
        "{doc:#}"
    );
    assert_eq!(
        out.stderr.trim_end(),
        "error: unknown revision 'nosuchrev'; 'git checkpoint log --all' lists every checkpoint, 'git checkpoint sessions' every agent session",
        "{out}"
    );
    let text = r.run(&["restore", "nosuchrev"]);
    assert_eq!((text.code, text.stdout.as_str()), (1, ""), "{text}");
}
