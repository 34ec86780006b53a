//! `diff` against git's own: the same two trees, materialised by restore into plain
//! directories, compared with `git diff --no-index`, and committed to a scratch git
//! repository, compared with `git diff` between the commits. Same files, same headers
//! (git's `index` lines aside: they name git blobs), same hunks; and the same
//! `--stat` and `--name-status`.

use crate::common;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use common::Repo;

/// A source file long enough for several hunks, function-name context in hunk headers,
/// and an ambiguous insertion that git's indent heuristic places.
fn source(version: u32) -> String {
    let mut out = String::from("use std::io;\n\n");
    for f in 0..12 {
        out += &format!("fn function_{f}(x: u32) -> u32 {{\n");
        out += "    let mut total = 0;\n";
        for line in 0..6 {
            let changed = version == 2 && (f == 2 && line == 3 || f == 9 && line == 1);
            if changed {
                out += &format!("    total += x * {line} + 1000; // changed\n");
            } else {
                out += &format!("    total += x * {line};\n");
            }
        }
        out += "    total\n}\n\n";
        if version == 2 && f == 5 {
            out += "fn inserted(x: u32) -> u32 {\n    let mut total = 0;\n    total += x;\n    total\n}\n\n";
        }
    }
    if version == 2 {
        out = out.replace(
            "fn function_7(x: u32) -> u32 {\n    let mut total = 0;\n    total += x * 0;\n",
            "fn function_7(x: u32) -> u32 {\n    let mut total = 0;\n",
        );
    }
    out
}

/// The two trees, one change of every kind between them.
fn write_tree(repo: &Repo, version: u32) {
    let v1 = version == 1;
    repo.write("src/lib.rs", source(version).as_bytes());
    repo.write("same.txt", b"unchanged\n");
    repo.write("dir/unchanged/deep.txt", b"never read\n");
    repo.write(
        "notes.md",
        if v1 {
            b"# Notes\n\nfirst\nsecond\nthird\n"
        } else {
            b"# Notes\n\nfirst\nsecond (edited)\nthird\nfourth\n"
        },
    );
    repo.write("no-newline.txt", if v1 { b"a\nb" } else { b"a\nb\n" });
    repo.write("sp ace.txt", if v1 { b"space 1\n" } else { b"space 2\n" });
    repo.write(
        "t\u{e9}st.txt",
        if v1 { b"accent 1\n" } else { b"accent 2\n" },
    );
    repo.write("data.bin", if v1 { b"bin\0ary 1" } else { b"bin\0ary 2" });
    let exec = repo.p("run.sh");
    repo.write("run.sh", b"#!/bin/sh\necho hi\n");
    let mode = if v1 { 0o644 } else { 0o755 };
    std::fs::set_permissions(&exec, std::fs::Permissions::from_mode(mode)).unwrap();
    repo.write(
        "tool.sh",
        if v1 {
            b"#!/bin/sh\nold\n"
        } else {
            b"#!/bin/sh\nnew\n"
        },
    );
    let mode = if v1 { 0o755 } else { 0o644 };
    std::fs::set_permissions(repo.p("tool.sh"), std::fs::Permissions::from_mode(mode)).unwrap();
    let _ = std::fs::remove_file(repo.p("link"));
    std::os::unix::fs::symlink(if v1 { "same.txt" } else { "notes.md" }, repo.p("link")).unwrap();
    let _ = std::fs::remove_file(repo.p("kind"));
    if v1 {
        repo.write("kind", b"a file first\n");
        repo.write("old/gone.txt", b"deleted\nwith its directory\n");
        repo.write("emptied", b"");
    } else {
        std::os::unix::fs::symlink("same.txt", repo.p("kind")).unwrap();
        let _ = std::fs::remove_dir_all(repo.p("old"));
        let _ = std::fs::remove_file(repo.p("emptied"));
        repo.write("added/new.txt", b"brand\nnew\n");
        repo.write("added/empty", b"");
    }
}

fn copy_worktree(repo: &Repo, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    let status = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "cd '{}' && tar --exclude=./.git -cf - . | tar -xpf - -C '{}'",
            repo.dir.display(),
            to.display()
        ))
        .status()
        .unwrap();
    assert!(status.success());
}

fn git_in(dir: &Path, home: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("HOME", home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env_remove("GIT_PAGER")
        .env_remove("COLUMNS")
        .output()
        .unwrap();
    // `git diff --no-index` exits 1 when the trees differ.
    assert!(out.status.code().is_some_and(|c| c <= 1), "git {args:?}");
    String::from_utf8(out.stdout).unwrap()
}

fn without_index_lines(diff: &str) -> String {
    diff.lines()
        .filter(|l| !l.starts_with("index "))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// git diff --no-index output for directories `a` and `b` as a diff between two trees
/// would print it: `a/a/x` and `b/b/x` (and `a/b/x` for a new file, `b/a/x` for a
/// deleted one) become `a/x` and `b/x`, and the doubled quoting of unusual names that
/// --no-index adds is undone.
fn from_no_index(diff: &str) -> String {
    let header =
        |l: &str| l.starts_with("diff --git ") || l.starts_with("--- ") || l.starts_with("+++ ");
    without_index_lines(diff)
        .lines()
        .map(|l| {
            if header(l) || l.starts_with("Binary files ") {
                l.replace("a/a/", "a/")
                    .replace("b/b/", "b/")
                    .replace("a/b/", "a/")
                    .replace("b/a/", "b/")
                    .replace("\\\\", "\\")
            } else {
                l.to_string()
            }
        })
        .map(|l| format!("{l}\n"))
        .collect()
}

#[test]
fn diff_matches_git_diff_of_the_same_trees() {
    let repo = Repo::new();
    write_tree(&repo, 1);
    let a = repo.save_forced("a");
    write_tree(&repo, 2);
    let b = repo.save_forced("b");

    // The worktree side is B; materialise both trees by restoring them.
    let scratch = repo.scratch("trees");
    copy_worktree(&repo, &scratch.join("b"));
    repo.ok(&["restore", &a]);
    copy_worktree(&repo, &scratch.join("a"));
    repo.ok(&["restore", &b]);

    let ours = repo.ok(&["diff", &a, &b]).stdout;
    assert!(
        ours.contains("\n@@ -27,7 +27,7 @@ fn function_2(x: u32) -> u32 {\n"),
        "{ours}"
    );
    let theirs = git_in(
        &scratch,
        &repo.home(),
        &["diff", "--no-index", "--no-renames", "a", "b"],
    );
    assert_eq!(ours, from_no_index(&theirs));

    // The same trees as two commits: git's diff, index lines aside, byte for byte.
    let commits = repo.scratch("commits");
    git_in(&commits, &repo.home(), &["init", "-q"]);
    for (side, message) in [("a", "A"), ("b", "B")] {
        git_in(
            &commits,
            &repo.home(),
            &["rm", "-rq", "--ignore-unmatch", "."],
        );
        copy_worktree_from(&scratch.join(side), &commits);
        git_in(&commits, &repo.home(), &["add", "-A"]);
        git_in(
            &commits,
            &repo.home(),
            &[
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "commit",
                "-qm",
                message,
            ],
        );
    }
    let git_diff = |extra: &[&str]| {
        let mut args = vec!["diff", "--no-renames", "HEAD~", "HEAD"];
        args.extend_from_slice(extra);
        git_in(&commits, &repo.home(), &args)
    };
    assert_eq!(ours, without_index_lines(&git_diff(&[])));
    assert_eq!(
        repo.ok(&["diff", &a, &b, "--stat"]).stdout,
        git_diff(&["--stat"])
    );
    assert_eq!(
        repo.ok(&["diff", &a, &b, "--name-status"]).stdout,
        git_diff(&["--name-status"])
    );
    assert_eq!(
        repo.ok(&["diff", &a, &b, "--name-only"]).stdout,
        git_diff(&["--name-only"])
    );

    // One revision compares it with the worktree (which holds B): the same diff.
    assert_eq!(repo.ok(&["diff", &a]).stdout, ours);
    // No revision: the current checkpoint (B) against the worktree: nothing.
    assert_eq!(repo.ok(&["diff"]).stdout, "");
    // Paths limit it, as they limit git's.
    assert_eq!(
        repo.ok(&["diff", &a, &b, "--", "src", "kind"]).stdout,
        without_index_lines(&git_diff(&["--", "src", "kind"]))
    );
    // show is the diff against the first parent.
    let shown = repo.ok(&["show", &b]).stdout;
    assert!(shown.ends_with(&ours), "{shown}");
}

fn copy_worktree_from(from: &Path, to: &Path) {
    let status = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "cd '{}' && tar -cf - . | tar -xpf - -C '{}'",
            from.display(),
            to.display()
        ))
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn diff_with_the_worktree_reads_files_from_disk_and_stores_nothing() {
    let repo = Repo::new();
    repo.write("a.txt", b"one\ntwo\n");
    repo.save_forced("base");
    repo.write("a.txt", b"one\n2\n");
    repo.write("sub/b.txt", b"new\n");
    let out = repo.ok(&["diff"]).stdout;
    assert_eq!(
        out,
        "diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n\
         diff --git a/sub/b.txt b/sub/b.txt\nnew file mode 100644\n--- /dev/null\n+++ b/sub/b.txt\n@@ -0,0 +1 @@\n+new\n"
    );
    // Paths are taken relative to the current directory, as git takes them.
    let out = Command::new(common::BIN)
        .args(["diff", "--name-only", "--", "b.txt"])
        .current_dir(repo.p("sub"))
        .env("HOME", repo.home())
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "sub/b.txt\n");
    let json = repo.json_of(&["diff"]);
    assert!(json["to"].is_null());
    assert_eq!(json["changes"][0]["path"], "a.txt");
    assert_eq!(json["changes"][0]["status"], "M");
    assert_eq!(json["changes"][0]["insertions"], 1);
    assert_eq!(json["changes"][0]["deletions"], 1);
    assert_eq!(json["changes"][1]["status"], "A");
    // Nothing was saved by diff.
    assert_eq!(repo.json_of(&["log", "--all"]).as_array().unwrap().len(), 1);
}
