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
use proptest::prelude::*;
use serde_json::Value;

/// A copy of the repository (worktree and store) without its watcher, in the same
/// sandbox: a save there walks, from the same parent checkpoint.
pub(crate) fn copy_without_watcher(repo: &Repo, name: &str) -> PathBuf {
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
pub(crate) fn recorded(repo: &Repo, dir: &Path) -> Value {
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
    // A save the watcher says has nothing to look at asks and stops there.
    let watched = traced_save(repo, step);
    assert!(
        watched.ran("watch: ask") && !watched.ran("walk"),
        "{step}: the save walked instead of asking the watcher\n{}",
        watched.out
    );
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

/// A change made to the worktree.
pub(crate) type Change = Box<dyn Fn(&Repo)>;

/// The worktree the changes of [`every_kind_of_change`] apply to (unsaved), with a
/// size limit of 1 KiB.
pub(crate) fn start_for_every_kind_of_change(repo: &Repo) {
    repo.git(&["config", "checkpoint.maxFileSize", "1k"]);
    repo.write("top.txt", b"top\n");
    repo.write("a/one.txt", b"one\n");
    repo.write("a/deep/two.txt", b"two\n");
    repo.write("b/three.txt", b"three\n");
    repo.write("b/c/four.txt", b"four\n");
    repo.write("sub/keep.txt", b"keep\n");
    repo.write(
        "sub/later-ignored.txt",
        b"ignored once sub/.gitignore says so\n",
    );
    repo.write("grows.txt", b"small\n");
    repo.write(".gitignore", b"*.log\n");
}

/// Every kind of change a save must record, in an order that applies to the worktree
/// [`start_for_every_kind_of_change`] makes: each step named.
pub(crate) fn every_kind_of_change() -> Vec<(&'static str, Change)> {
    vec![
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
    ]
}

#[test]
fn every_kind_of_change_saved_through_the_watcher_matches_a_walk() {
    let repo = Repo::new();
    start_for_every_kind_of_change(&repo);
    repo.save("start");
    let watcher = Watcher::start(&repo, &[]);
    repo.write("primer.txt", b"primer\n");
    assert!(traced_save(&repo, "primer").ran("walk"));

    let steps = every_kind_of_change();
    for (step, change) in &steps {
        change(&repo);
        assert_watched_save_matches_a_walk(&repo, step);
    }
    assert_walk_agrees(&repo, watcher);
}

/// The counts a traced save reports: paths looked at, stat cache entries read, trees
/// read.
pub(crate) fn counts(out: &common::Out) -> [u64; 3] {
    ["paths looked at", "stat cache entries read", "trees read"]
        .map(|name| common::trace_count(out, name))
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
            repo.write(
                format!("d{d:02}/e/f{f:02}.txt"),
                format!("{d} {f}\n").as_bytes(),
            );
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
    assert!(
        entries <= 2,
        "read {entries} stat cache entries\n{}",
        save.out
    );
    // Three levels: the root, `d17`, `d17/e`.
    assert!(trees <= 5 * 3, "read {trees} trees\n{}", save.out);
    assert_walk_agrees(&repo, watcher);
}

/// One random edit of a small worktree, for the model-based test.
#[derive(Clone, Debug)]
pub(crate) enum Edit {
    /// Writes a file (directories on the way made, a file in their place removed).
    Write(&'static str, u8),
    /// Removes a file, symlink or directory.
    Remove(&'static str),
    /// Makes a symlink.
    Link(&'static str, &'static str),
    /// Flips a file's executable bit.
    Exec(&'static str),
    /// Renames one path to another.
    Rename(&'static str, &'static str),
    /// Sets the ignore rules of `a/` (none, or one of two patterns).
    Ignore(u8),
}

pub(crate) const PATHS: [&str; 8] = ["top", "a", "a/f", "a/b", "a/b/g", "a.x", "c/h", "c"];

pub(crate) fn edit() -> impl Strategy<Value = Edit> {
    let path = || prop::sample::select(PATHS.to_vec());
    prop_oneof![
        3 => (path(), 0u8..3).prop_map(|(p, n)| Edit::Write(p, n)),
        2 => path().prop_map(Edit::Remove),
        1 => (path(), path()).prop_map(|(p, t)| Edit::Link(p, t)),
        1 => path().prop_map(Edit::Exec),
        1 => (path(), path()).prop_map(|(from, to)| Edit::Rename(from, to)),
        1 => (0u8..3).prop_map(Edit::Ignore),
    ]
}

/// Makes room for a new entry at `path`: whatever is there goes, and a file or
/// symlink where one of its directories should be.
fn make_room(repo: &Repo, path: &str) {
    let mut dir = PathBuf::new();
    let parts: Vec<&str> = path.split('/').collect();
    for part in &parts[..parts.len() - 1] {
        dir.push(part);
        let full = repo.p(&dir);
        if full.symlink_metadata().is_ok_and(|m| !m.is_dir()) {
            common::remove_any(&full);
        }
    }
    std::fs::create_dir_all(repo.p(&dir)).unwrap();
    common::remove_any(&repo.p(path));
}

pub(crate) fn apply(repo: &Repo, edit: &Edit) {
    match *edit {
        Edit::Write(path, n) => {
            make_room(repo, path);
            repo.write(
                path,
                format!("{path} {n}\n").repeat(n as usize + 1).as_bytes(),
            );
        }
        Edit::Remove(path) => common::remove_any(&repo.p(path)),
        Edit::Link(path, target) => {
            make_room(repo, path);
            repo.symlink(path, target);
        }
        Edit::Exec(path) => {
            let full = repo.p(path);
            if let Ok(meta) = full.symlink_metadata() {
                if meta.is_file() {
                    use std::os::unix::fs::PermissionsExt;
                    repo.set_exec(path, meta.permissions().mode() & 0o100 == 0);
                }
            }
        }
        Edit::Rename(from, to) => {
            let below = |a: &str, b: &str| a.strip_prefix(b).is_some_and(|r| r.starts_with('/'));
            let nested = from == to || below(to, from) || below(from, to);
            if !nested && repo.p(from).symlink_metadata().is_ok() {
                make_room(repo, to);
                std::fs::rename(repo.p(from), repo.p(to)).unwrap();
            }
        }
        Edit::Ignore(rules) => {
            if repo.p("a").symlink_metadata().is_ok_and(|m| m.is_dir()) {
                match rules {
                    0 => common::remove_any(&repo.p("a/.gitignore")),
                    1 => repo.write("a/.gitignore", b"f\n"),
                    _ => repo.write("a/.gitignore", b"b/\n"),
                }
            }
        }
    }
}

/// A repository of four files in nested directories, saved: where the random edit
/// sequences start.
pub(crate) fn small_tree_saved() -> Repo {
    let repo = Repo::new();
    repo.write("top", b"top\n");
    repo.write("a/f", b"f\n");
    repo.write("a/b/g", b"g\n");
    repo.write("c/h", b"h\n");
    repo.save("start");
    repo
}

/// Random sequences of edits, each followed by a watched save that must record what a
/// walking save of the same worktree records.
#[test]
fn random_edit_sequences_saved_through_the_watcher_match_a_walk() {
    let config = ProptestConfig {
        cases: 4,
        max_shrink_iters: 8,
        source_file: Some(file!()),
        ..ProptestConfig::default()
    };
    let mut runner = proptest::test_runner::TestRunner::new(config);
    let result = runner.run(&prop::collection::vec(edit(), 1..10), |edits| {
        let repo = small_tree_saved();
        let watcher = Watcher::start(&repo, &[]);
        repo.write("primer", b"primer\n");
        assert!(traced_save(&repo, "primer").ran("walk"));
        for (i, edit) in edits.iter().enumerate() {
            apply(&repo, edit);
            assert_watched_save_matches_a_walk(&repo, &format!("step {i}"));
        }
        assert_walk_agrees(&repo, watcher);
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}\n{runner}");
    }
}
