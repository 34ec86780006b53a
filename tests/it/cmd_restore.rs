//! restore: safety checkpoints, ignored files, the real repository untouched,
//! path-limited restores, dry runs, the DAG after a restore, -C and subdirectories.

use crate::common;
use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::MetadataExt;

use common::*;
use serde_json::Value;

/// Everything observable about the real repository.
#[derive(Debug, PartialEq)]
struct RepoState {
    head: String,
    symbolic_head: String,
    ls_files: String,
    refs: String,
    stash: String,
    config: Vec<u8>,
    index: Vec<u8>,
    head_file: Vec<u8>,
}

fn repo_state(r: &Repo) -> RepoState {
    RepoState {
        head: r.git(&["rev-parse", "HEAD"]),
        symbolic_head: r.git(&["symbolic-ref", "HEAD"]),
        ls_files: r.git(&["ls-files", "-s"]),
        refs: r.git(&["for-each-ref"]),
        stash: r.git(&["stash", "list"]),
        config: fs::read(r.git_dir().join("config")).unwrap(),
        index: fs::read(r.git_dir().join("index")).unwrap(),
        head_file: fs::read(r.git_dir().join("HEAD")).unwrap(),
    }
}

/// The whole `.git` directory except the checkpoint store.
fn git_dir_snapshot(r: &Repo) -> Snap {
    snapshot(&r.git_dir(), false)
        .into_iter()
        .filter(|(k, _)| !k.starts_with(b"checkpoint"))
        .collect()
}

/// Bytes, mtime and inode of each path: a rewrite (even with equal bytes) shows.
fn untouched_state(r: &Repo, paths: &[&str]) -> BTreeMap<String, (Vec<u8>, i64, i64, u64)> {
    paths
        .iter()
        .map(|p| {
            let m = fs::symlink_metadata(r.p(p)).unwrap();
            (
                p.to_string(),
                (r.read(p), m.mtime(), m.mtime_nsec(), m.ino()),
            )
        })
        .collect()
}

#[test]
fn restore_leaves_ignored_files_and_real_repository_untouched() {
    let r = Repo::new();
    r.write(".gitignore", b"target/\n.env\n*.tmp\n");
    r.write("README.md", b"# readme\n");
    r.write("src/lib.rs", b"pub fn a() {}\n");
    r.git(&["add", "-A"]);
    r.git(&["commit", "-q", "-m", "one"]);
    r.write("src/lib.rs", b"pub fn a() {}\npub fn b() {}\n");
    r.git(&["commit", "-q", "-am", "two"]);
    r.git(&["branch", "feature"]);
    r.git(&["tag", "v1"]);
    r.write("README.md", b"# readme, stashed edit\n");
    r.git(&["stash", "-q"]);
    r.write("README.md", b"# readme, staged edit\n");
    r.git(&["add", "README.md"]);
    assert!(
        !r.git(&["stash", "list"]).is_empty(),
        "setup: a stash exists"
    );

    let ignored = [
        "target/out.bin",
        "target/debug/deep.o",
        ".env",
        "src/cache.tmp",
    ];
    r.write("target/out.bin", &pseudo_random(100_000, 3));
    r.write("target/debug/deep.o", b"object\n");
    r.write(".env", b"SECRET=1\n");
    r.write("src/cache.tmp", b"cache\n");
    r.write("notes.txt", b"untracked notes\n");

    let state0 = repo_state(&r);
    let gitdir0 = git_dir_snapshot(&r);
    let snap_a = r.snapshot();
    let a = r.save("A");

    // Work after A: edits, a deletion, a new file, and an ignored file changes.
    r.write("README.md", b"# readme, edited after A\n");
    r.remove("src/lib.rs");
    r.write("new.txt", b"new\n");
    r.write("notes.txt", b"notes edited\n");
    r.write(".env", b"SECRET=2\n");
    let ign1 = untouched_state(&r, &ignored);

    let res = r.json(&["restore", &a, "--json"]);
    assert!(res["safety_checkpoint"].is_string(), "{res}");

    assert_eq!(
        untouched_state(&r, &ignored),
        ign1,
        "ignored files must not be rewritten or deleted"
    );
    let mut expected = snap_a;
    expected.insert(
        b".env".to_vec(),
        Node::File {
            data: b"SECRET=2\n".to_vec(),
            exec: false,
        },
    );
    assert_snap_eq(&expected, &r.snapshot(), "after restore");

    // Back and forth once more, then check the real repository.
    r.ok(&["restore", res["safety_checkpoint"].as_str().unwrap()]);
    r.ok(&["restore", &a]);
    assert_eq!(
        untouched_state(&r, &ignored),
        ign1,
        "ignored files after more restores"
    );
    assert_eq!(
        repo_state(&r),
        state0,
        "the real repository (HEAD, index, refs, stash, config) must be untouched"
    );
    assert_snap_eq(
        &gitdir0,
        &git_dir_snapshot(&r),
        ".git (outside .git/checkpoint) must be untouched",
    );
    assert!(
        r.store_path().is_file(),
        "store lives at .git/checkpoint/store.redb"
    );
}

#[test]
fn restore_over_unsaved_work_makes_a_safety_checkpoint() {
    let r = Repo::new();
    r.write("a.txt", b"a1\n");
    r.write("b.txt", b"b1\n");
    r.write_exec("run.sh", b"#!/bin/sh\n");
    let snap_a = r.snapshot();
    let a = r.save("A");

    // Restoring onto an unchanged worktree makes no safety checkpoint.
    let n_before = r.log_ids(true).len();
    let res = r.json(&["restore", &a, "--json"]);
    assert!(res["safety_checkpoint"].is_null(), "{res}");
    assert_eq!(r.log_ids(true).len(), n_before);

    // Unsaved work: edit, delete, add, chmod, a symlink.
    r.write("a.txt", b"a2, unsaved\n");
    r.remove("b.txt");
    r.write("dir/c.txt", &pseudo_random(70_000, 11));
    r.set_exec("run.sh", false);
    r.symlink("link", "a.txt");
    let work = r.snapshot();

    let res = r.json(&["restore", &a, "--json"]);
    assert_eq!(res["target"].as_str(), Some(a.as_str()), "{res}");
    assert_eq!(res["dry_run"], Value::Bool(false), "{res}");
    let safety = res["safety_checkpoint"]
        .as_str()
        .unwrap_or_else(|| panic!("expected a safety checkpoint: {res}"))
        .to_string();
    assert!(safety.len() == 32 && is_hex(&safety), "{safety}");
    assert_snap_eq(&snap_a, &r.snapshot(), "restored A");

    let all = r.log_json(true);
    let entry = all
        .iter()
        .find(|c| id_of(c).as_deref() == Some(safety.as_str()))
        .unwrap_or_else(|| panic!("safety checkpoint missing from log --all"));
    let msg = entry["message"].as_str().unwrap_or_default();
    assert!(
        msg.contains("before restore"),
        "safety checkpoint message: {msg:?}"
    );

    // The unsaved work comes back byte-exact.
    r.ok(&["restore", &safety]);
    assert_snap_eq(&work, &r.snapshot(), "work restored from safety checkpoint");

    // --no-save: no safety checkpoint, work is discarded.
    r.write("a.txt", b"a3, thrown away\n");
    let n_before = r.log_ids(true).len();
    let res = r.json(&["restore", &a, "--no-save", "--json"]);
    assert!(res["safety_checkpoint"].is_null(), "{res}");
    assert_eq!(
        r.log_ids(true).len(),
        n_before,
        "--no-save made a checkpoint"
    );
    assert_snap_eq(&snap_a, &r.snapshot(), "restored A with --no-save");
}

#[test]
fn restore_with_paths_and_dry_run() {
    let r = Repo::new();
    r.write("a.txt", b"a1\n");
    r.write("b.txt", b"b1\n");
    r.write("dir/c.txt", b"c1\n");
    r.write("dir/d.txt", b"d1\n");
    r.write_exec("e.sh", b"#!/bin/sh\n");
    r.write("same.txt", b"unchanged\n");
    let snap_a = r.snapshot();
    let a = r.save("A");

    r.write("a.txt", b"a2\n");
    r.write("b.txt", b"b2\n");
    r.write("dir/c.txt", b"c2\n");
    r.remove("dir/d.txt");
    r.set_exec("e.sh", false);
    r.write("new.txt", b"new\n");
    let b = r.save("B");
    let snap_b = r.snapshot();

    // Dry run: plan lines, nothing changes, no checkpoint is made.
    let ids_before = r.log_ids(true);
    let out = r.ok(&["restore", &a, "--dry-run"]);
    let plan: Vec<&str> = out
        .stdout
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("write ") || l.starts_with("delete "))
        .collect();
    let mut plan_sorted = plan.clone();
    plan_sorted.sort();
    let mut expected_plan = vec![
        "delete new.txt",
        "write a.txt",
        "write b.txt",
        "write dir/c.txt",
        "write dir/d.txt",
        "write e.sh",
    ];
    expected_plan.sort();
    assert_eq!(plan_sorted, expected_plan, "dry-run plan\n{out}");
    assert_snap_eq(&snap_b, &r.snapshot(), "dry run changed the worktree");
    assert_eq!(r.log_ids(true), ids_before, "dry run changed the store");

    let dj = r.json(&["restore", &a, "--dry-run", "--json"]);
    assert_eq!(dj["dry_run"], Value::Bool(true), "{dj}");
    assert_eq!(dj["target"].as_str(), Some(a.as_str()), "{dj}");
    assert!(dj["safety_checkpoint"].is_null(), "{dj}");
    let mut written: Vec<&str> = dj["written"]
        .as_array()
        .expect("written")
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    written.sort();
    assert_eq!(
        written,
        ["a.txt", "b.txt", "dir/c.txt", "dir/d.txt", "e.sh"],
        "{dj}"
    );
    let deleted: Vec<&str> = dj["deleted"]
        .as_array()
        .expect("deleted")
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(deleted, ["new.txt"], "{dj}");
    assert_snap_eq(
        &snap_b,
        &r.snapshot(),
        "dry run --json changed the worktree",
    );
    assert_eq!(
        r.log_ids(true),
        ids_before,
        "dry run --json changed the store"
    );

    // Path-limited dry run: plan only mentions those paths.
    let out = r.ok(&["restore", &a, "--dry-run", "--", "dir"]);
    let mut plan: Vec<&str> = out
        .stdout
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("write ") || l.starts_with("delete "))
        .collect();
    plan.sort();
    assert_eq!(plan, ["write dir/c.txt", "write dir/d.txt"], "\n{out}");

    // Restore only a.txt and dir: the rest stays as it is, the branch stays on B.
    let res = r.json(&["restore", &a, "--no-save", "--json", "--", "a.txt", "dir"]);
    assert!(res["safety_checkpoint"].is_null(), "{res}");
    let mut expected = snap_b.clone();
    for k in [&b"a.txt"[..], b"dir", b"dir/c.txt", b"dir/d.txt"] {
        expected.insert(k.to_vec(), snap_a[k].clone());
    }
    assert_snap_eq(&expected, &r.snapshot(), "restore -- a.txt dir");
    assert_eq!(r.read("b.txt"), b"b2\n");
    assert_eq!(r.read("new.txt"), b"new\n");
    assert_eq!(
        r.current(),
        b,
        "a path-limited restore must not move the branch"
    );
}

#[test]
fn restore_then_save_forks_and_log_all_keeps_abandoned_line() {
    let r = Repo::new();
    r.write("f.txt", b"1\n");
    let c1 = r.save("one");
    r.write("f.txt", b"2\n");
    let c2 = r.save("two");
    r.write("f.txt", b"3\n");
    let c3 = r.save("three");

    r.ok(&["restore", &c1]);
    assert_eq!(r.read("f.txt"), b"1\n");
    assert_eq!(r.current(), c1, "restore moves the current branch");
    r.write("f.txt", b"fork\n");
    let c4 = r.save("fork");

    let line = r.log_json(false);
    assert_eq!(id_of(&line[0]).as_deref(), Some(c4.as_str()));
    assert_eq!(
        line[0]["parents"],
        serde_json::json!([c1]),
        "new checkpoint's parent is the restored one"
    );
    let line_ids: Vec<String> = line.iter().filter_map(id_of).collect();
    assert_eq!(line_ids, vec![c4.clone(), c1.clone()], "current line");

    let all: Vec<String> = r.log_ids(true);
    for id in [&c1, &c2, &c3, &c4] {
        assert!(all.contains(id), "log --all lacks {id}: {all:?}");
    }
    // Human log of the current line: short ids and messages, no abandoned line.
    let out = r.ok(&["log"]);
    assert!(
        out.stdout.contains(&c4[..7]) && out.stdout.contains("fork"),
        "{out}"
    );
    assert!(
        out.stdout.contains(&c1[..7]) && out.stdout.contains("one"),
        "{out}"
    );
    assert!(!out.stdout.contains(&c3[..7]), "{out}");
    let out = r.ok(&["log", "--all"]);
    assert!(
        out.stdout.contains(&c3[..7]) && out.stdout.contains("three"),
        "{out}"
    );

    // The abandoned line is still restorable (and -q silences the chatter).
    let out = r.ok(&["restore", &c3, "-q"]);
    assert!(out.stdout.trim().is_empty(), "restore -q printed\n{out}");
    assert_eq!(r.read("f.txt"), b"3\n");
    assert_eq!(r.current(), c3);
}

#[test]
fn dash_c_and_subdirectories() {
    let r = Repo::new();
    r.write("file.txt", b"top 1\n");
    r.write("sub/file.txt", b"sub 1\n");
    r.write("sub/deeper/x.txt", b"x 1\n");

    // -C from outside the worktree.
    let out =
        r.sb.ok_in(&r.sb.root, &["-C", "repo", "save", "-m", "via -C"]);
    let log = r.log_json(false);
    assert_eq!(log.len(), 1);
    let c1 = id_of(&log[0]).unwrap();
    assert!(out.stdout.contains(&c1[..7]), "{out}");

    // From a subdirectory.
    r.write("file.txt", b"top 2\n");
    r.write("sub/file.txt", b"sub 2\n");
    r.write("sub/deeper/x.txt", b"x 2\n");
    let deeper = r.p("sub/deeper");
    let out =
        r.sb.ok_in(&deeper, &["save", "--json", "-m", "from subdir"]);
    let v = parse_json(&out, "save from subdir");
    let c2 = id_of(&v).expect("saved from subdir");
    assert_ne!(c1, c2);
    let out = r.sb.ok_in(&deeper, &["log", "--json"]);
    assert_eq!(
        parse_json(&out, "log from subdir")
            .as_array()
            .unwrap()
            .len(),
        2
    );

    // restore -- <relpath> from a subdirectory is relative to the cwd.
    let sub = r.p("sub");
    r.sb.ok_in(&sub, &["restore", &c1, "--no-save", "--", "file.txt"]);
    assert_eq!(r.read("sub/file.txt"), b"sub 1\n", "sub/file.txt restored");
    assert_eq!(
        r.read("file.txt"),
        b"top 2\n",
        "top-level file.txt untouched"
    );
    assert_eq!(r.read("sub/deeper/x.txt"), b"x 2\n");

    // Same through -C: paths are relative to the -C directory.
    r.sb.ok_in(
        &r.sb.root,
        &[
            "-C",
            "repo/sub",
            "restore",
            &c1,
            "--no-save",
            "--",
            "deeper",
        ],
    );
    assert_eq!(r.read("sub/deeper/x.txt"), b"x 1\n");
    assert_eq!(r.read("file.txt"), b"top 2\n");

    // A whole restore from a subdirectory restores the whole worktree.
    r.sb.ok_in(&deeper, &["restore", &c1, "--no-save"]);
    assert_eq!(r.read("file.txt"), b"top 1\n");
    assert_eq!(r.current(), c1);
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
fn a_path_that_matches_nothing_fails_like_git_and_changes_nothing() {
    let r = Repo::new();
    r.write("src/a.c", b"a1\n");
    let a = r.save("A");
    r.write("src/a.c", b"a2\n");
    r.write("new.c", b"new\n");
    r.save("B");
    // Unsaved work, which a restore would first save as a safety checkpoint.
    r.write("unsaved.c", b"unsaved\n");
    let before = r.snapshot();
    let checkpoints = r.log_ids(true);
    let short = &a[..7];
    let wanted = format!(
        "error: pathspec 'nosuchfile.c' did not match any file in checkpoint {short} or in the worktree (ignored files aside)"
    );
    for args in [
        &["restore", "@~1", "--", "nosuchfile.c"][..],
        &["restore", "@~1", "--dry-run", "--", "nosuchfile.c"],
        &["restore", "@~1", "--json", "--", "src/a.c", "nosuchfile.c"],
        &["restore", "@~1", "--no-save", "--", "nosuchfile.c"],
    ] {
        let out = r.run(args);
        assert_eq!(out.code, 1, "{args:?}: {out}");
        assert_eq!(out.stderr.trim_end(), wanted, "{args:?}: {out}");
        // With --json, the error document; else nothing.
        match args.contains(&"--json") {
            true => assert_eq!(
                parse_json(&out, "the error document"),
                serde_json::json!({"error": &wanted["error: ".len()..], "kind": "input"}),
                "{args:?}: {out}"
            ),
            false => assert_eq!(out.stdout, "", "{args:?}: {out}"),
        }
        assert_snap_eq(&before, &r.snapshot(), "a pathspec that matched nothing");
        assert_eq!(
            r.log_ids(true),
            checkpoints,
            "{args:?}: no safety checkpoint"
        );
    }
    // An ignored file is no file a restore would touch: it matches nothing either.
    r.write(".git/info/exclude", b"*.log\n");
    r.write("build.log", b"ignored\n");
    let out = r.run(&["restore", "@~1", "--", "build.log"]);
    assert_eq!(out.code, 1, "{out}");
    assert!(
        out.stderr
            .starts_with("error: pathspec 'build.log' did not match"),
        "{out}"
    );
    assert_eq!(r.log_ids(true), checkpoints, "no safety checkpoint");
    // A path only the worktree has matches (the restore deletes it, as git restore
    // does), and so does a directory the checkpoint has.
    let out = r.ok(&["restore", "@~1", "--", "new.c", "src"]);
    assert!(out.stdout.contains("1 written, 1 deleted"), "{out}");
    assert!(!r.exists("new.c"));
    assert_eq!(r.read("src/a.c"), b"a1\n");
    assert_eq!(r.read("unsaved.c"), b"unsaved\n");
}

/// The preflight looks at the way to each directory from the top and never through a
/// symlink: one that loops onto itself, where the checkpoint has a directory, is
/// replaced like any other symlink the current checkpoint holds.
#[test]
fn a_symlink_looping_onto_itself_where_a_directory_belongs_is_replaced() {
    let r = Repo::new();
    r.write("d1/sub/x", b"x\n");
    let with_dir = r.snapshot();
    let a = r.save("a directory");
    r.remove("d1");
    r.symlink("d1", "d1/f");
    r.save("a symlink in its place");
    let out = r.run(&["restore", &a]);
    assert_eq!(out.code, 0, "{out}");
    assert_snap_eq(&with_dir, &r.snapshot(), "the directory is back");
}
