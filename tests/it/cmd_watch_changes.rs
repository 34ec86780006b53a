//! A watched save after edits (issue 25): it splices the changed paths into the base
//! tree instead of rebuilding every tree, and records exactly what a walking save of the
//! same worktree records (tree, totals, skipped files, the change summary `log` shows),
//! for every kind of change; and it looks at the changed paths only (the trace's
//! counts: paths looked at, stat cache entries read, trees read).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::cmd_watch::{assert_walk_agrees, traced_save, watched_save, Watcher};
use crate::common;
use common::Repo;
use serde_json::Value;

/// A copy of the repository (worktree and store) without its watcher, in the same
/// sandbox: a save there walks, from the same parent checkpoint.
fn copy_without_watcher(repo: &Repo, name: &str) -> PathBuf {
    let copy = repo.sb.root.join(name);
    let status = Command::new("cp")
        .arg("-a")
        .arg(&repo.dir)
        .arg(&copy)
        .status()
        .unwrap();
    assert!(status.success());
    common::remove_any(&copy.join(".git/checkpoint/watch"));
    copy
}

/// What a save recorded, as `show --json` and `log` tell it, without what differs
/// between two saves of the same worktree (ids, times).
fn recorded(repo: &Repo, dir: &Path) -> Value {
    let out = repo.sb.ok_in(dir, &["show", "--json", "@"]);
    let mut show = common::parse_json(&out, "show --json");
    for key in ["id", "short_id", "time"] {
        show.as_object_mut().unwrap().remove(key);
    }
    let log = repo.sb.ok_in(dir, &["log"]).stdout;
    let first = log.lines().next().unwrap_or_default();
    show["log summary"] = Value::String(summary_of(first).to_string());
    show
}

/// The change summary of a `log` line: `[2 files +10 B]`, `[no change]`.
fn summary_of(line: &str) -> &str {
    let start = line
        .match_indices('[')
        .map(|(i, _)| i)
        .find(|&i| {
            let rest = &line[i + 1..];
            rest.starts_with(|c: char| c.is_ascii_digit()) || rest.starts_with("no change")
        })
        .unwrap_or_else(|| panic!("no change summary in {line:?}"));
    let end = start + line[start..].find(']').unwrap();
    &line[start..=end]
}

/// Saves the worktree as it now is twice: through the watcher, and by a walk in a copy
/// made first; both must record the same.
#[track_caller]
fn assert_watched_save_matches_a_walk(repo: &Repo, step: &str) {
    let copy = copy_without_watcher(repo, &format!("copy-{}", step.replace(' ', "-")));
    let watched = watched_save(repo, step);
    let walked = repo.sb.run_in(&copy, &["save", "-m", step]);
    assert_eq!(walked.code, 0, "{walked}");
    assert_eq!(
        watched.saved(),
        walked.stdout.contains("Saved checkpoint"),
        "{step}: one save made a checkpoint, the other did not\n{}\n{walked}",
        watched.out
    );
    assert_eq!(
        recorded(repo, &repo.dir),
        recorded(repo, &copy),
        "{step}: the watched save and the walk recorded different checkpoints"
    );
    common::remove_any(&copy);
}

#[test]
fn every_kind_of_change_saved_through_the_watcher_matches_a_walk() {
    let repo = Repo::new();
    repo.git(&["config", "checkpoint.maxFileSize", "1k"]);
    repo.write("top.txt", b"top\n");
    repo.write("a/one.txt", b"one\n");
    repo.write("a/deep/two.txt", b"two\n");
    repo.write("b/three.txt", b"three\n");
    repo.write("b/c/four.txt", b"four\n");
    repo.write("sub/keep.txt", b"keep\n");
    repo.write("sub/later-ignored.txt", b"ignored once sub/.gitignore says so\n");
    repo.write("grows.txt", b"small\n");
    repo.write(".gitignore", b"*.log\n");
    repo.save("start");
    let watcher = Watcher::start(&repo, &[]);
    repo.write("primer.txt", b"primer\n");
    assert!(traced_save(&repo, "primer").ran("walk"));

    let steps: Vec<(&str, Box<dyn Fn(&Repo)>)> = vec![
        ("edit", Box::new(|r| r.write("a/one.txt", b"ONE, longer\n"))),
        ("add", Box::new(|r| r.write("new.txt", b"new\n"))),
        ("delete", Box::new(|r| r.remove("top.txt"))),
        (
            "new deep directory",
            Box::new(|r| r.write("n/o/p/q.txt", b"deep\n")),
        ),
        ("delete a directory", Box::new(|r| r.remove("b"))),
        (
            "file to directory",
            Box::new(|r| {
                r.remove("a/deep/two.txt");
                r.write("a/deep/two.txt/inner.txt", b"inner\n");
            }),
        ),
        (
            "directory to file",
            Box::new(|r| {
                r.remove("n");
                r.write("n", b"a file now\n");
            }),
        ),
        ("symlink", Box::new(|r| r.symlink("link", "a/one.txt"))),
        (
            "symlink retargeted",
            Box::new(|r| {
                r.remove("link");
                r.symlink("link", "new.txt");
            }),
        ),
        ("mode", Box::new(|r| r.set_exec("a/one.txt", true))),
        (
            "rename",
            Box::new(|r| {
                std::fs::create_dir_all(r.p("c")).unwrap();
                std::fs::rename(r.p("a/one.txt"), r.p("c/one.txt")).unwrap();
            }),
        ),
        ("ignored file", Box::new(|r| r.write("x.log", b"ignored\n"))),
        (
            "gitignore below the top",
            Box::new(|r| r.write("sub/.gitignore", b"later-ignored.txt\n")),
        ),
        (
            "empty directory",
            Box::new(|r| std::fs::create_dir_all(r.p("empty/dir")).unwrap()),
        ),
        (
            "last file of a directory",
            Box::new(|r| r.remove("a/deep/two.txt/inner.txt")),
        ),
        (
            "grown past the size limit",
            Box::new(|r| r.write("grows.txt", &[b'x'; 2048])),
        ),
        (
            "shrunk below it",
            Box::new(|r| r.write("grows.txt", b"small again\n")),
        ),
    ];
    for (step, change) in &steps {
        change(&repo);
        assert_watched_save_matches_a_walk(&repo, step);
    }
    assert_walk_agrees(&repo, watcher);
}

/// The counts a traced save reports: paths looked at, stat cache entries read, trees
/// read.
fn counts(out: &common::Out) -> [u64; 3] {
    let line = out
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix("trace: counts: "))
        .unwrap_or_else(|| panic!("the trace reports no counts\n{out}"));
    let numbers: Vec<u64> = line
        .split(", ")
        .map(|part| part.split(' ').next().unwrap().parse().unwrap())
        .collect();
    numbers.try_into().unwrap()
}

/// A watched save after one edit in a tree of 2,000 files looks at that file alone,
/// reads its one stat cache entry, and reads only the trees down to it (a few per
/// level, for the splice, the parent's diff and the look before the save), not every
/// file's entry and every tree as a rebuild from the whole base would.
#[test]
fn a_watched_save_after_one_edit_looks_at_the_changed_path_only() {
    let repo = Repo::new();
    for d in 0..40 {
        for f in 0..50 {
            repo.write(format!("d{d:02}/e/f{f:02}.txt"), format!("{d} {f}\n").as_bytes());
        }
    }
    repo.save("start");
    let watcher = Watcher::start(&repo, &[]);
    repo.write("primer.txt", b"primer\n");
    let primer = traced_save(&repo, "primer");
    assert!(primer.ran("walk"), "{}", primer.out);
    let [walked_paths, _, _] = counts(&primer.out);
    assert!(walked_paths > 2000, "{}", primer.out);

    repo.write("d17/e/f33.txt", b"edited\n");
    let save = watched_save(&repo, "one edit");
    assert!(save.saved(), "{}", save.out);
    let [paths, entries, trees] = counts(&save.out);
    assert!(paths <= 2, "looked at {paths} paths\n{}", save.out);
    assert!(entries <= 2, "read {entries} stat cache entries\n{}", save.out);
    // Three levels: the root, `d17`, `d17/e`.
    assert!(trees <= 5 * 3, "read {trees} trees\n{}", save.out);
    assert_walk_agrees(&repo, watcher);
}
