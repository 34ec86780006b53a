//! `log`'s change summaries ("[2 files +5 B -3 B]"), which a save keeps beside each
//! checkpoint so that a long log need not diff trees: what it shows must be what diffing
//! the trees gives (as `show` does), for every kind of change, and for a checkpoint whose
//! parent changed under it (`drop`, gc) the summary kept against the old parent must not
//! be shown.

use crate::common;
use common::*;

/// What `log` should show for `rev`: its changes against its first parent as `show`
/// computes them from the trees, in log's words (every size here is under 1 KiB).
fn computed_summary(r: &Repo, rev: &str) -> String {
    let shown = r.json_of(&["show", rev]);
    let changes = shown["changes"].as_array().expect("show lists changes");
    if changes.is_empty() {
        return "[no change]".to_string();
    }
    let (mut grown, mut shrunk) = (0, 0);
    for change in changes {
        let old = change["old_size"].as_u64().expect("old_size");
        let new = change["new_size"].as_u64().expect("new_size");
        assert!(old < 1024 && new < 1024, "sizes stay in bytes: {change}");
        if new >= old {
            grown += new - old;
        } else {
            shrunk += old - new;
        }
    }
    let n = changes.len();
    let mut text = format!("[{n} file{}", if n == 1 { "" } else { "s" });
    if grown > 0 {
        text += &format!(" +{grown} B");
    }
    if shrunk > 0 {
        text += &format!(" -{shrunk} B");
    }
    text + "]"
}

/// The summary `log --all` shows on the line of checkpoint `id`.
fn logged_summary(log: &str, id: &str) -> String {
    let line = log
        .lines()
        .find(|l| {
            l.split(' ')
                .next()
                .is_some_and(|short| id.starts_with(short))
        })
        .unwrap_or_else(|| panic!("no line for {id} in:\n{log}"));
    let start = line.rfind('[').expect("a summary in brackets");
    line[start..].to_string()
}

/// Every line of `log --all` against the trees.
#[track_caller]
fn assert_log_matches_trees(r: &Repo, ids: &[&String], what: &str) {
    let log = r.ok(&["log", "--all"]).stdout;
    for id in ids {
        assert_eq!(
            logged_summary(&log, id),
            computed_summary(r, id),
            "{what}: checkpoint {id} in:\n{log}"
        );
    }
}

#[test]
fn kept_summaries_equal_the_diff_of_the_trees_for_every_kind_of_change() {
    let r = Repo::new();
    r.write("a.txt", b"first line\n");
    r.write("src/lib.rs", b"fn lib() {}\n");
    r.write("src/deep/x.rs", b"x\n");
    let first = r.save("first: everything is new");
    r.write("a.txt", b"first line\nsecond line\n");
    r.write("b.txt", b"bee\n");
    let grew = r.save("one file grows, one is added");
    r.write("a.txt", b"short\n");
    r.remove("src/deep/x.rs");
    let shrank = r.save("one file shrinks, a directory goes");
    r.set_exec("src/lib.rs", true);
    let mode = r.save("only the executable bit");
    r.remove("b.txt");
    r.symlink("b.txt", "a.txt");
    let kind = r.save("a file becomes a symlink");
    let empty = r.save_forced("nothing changed");
    r.write("src/lib.rs", b"fn lib() { 1 }\n");
    r.write("new/dir/y.rs", b"why\n");
    r.remove("a.txt");
    let mixed = r.save("added, deleted and modified at once");

    let ids = [&first, &grew, &shrank, &mode, &kind, &empty, &mixed];
    assert_log_matches_trees(&r, &ids, "summaries kept at save");
    let log = r.ok(&["log", "--all"]).stdout;
    assert_eq!(logged_summary(&log, &empty), "[no change]");
    assert_eq!(logged_summary(&log, &mode), "[1 file]");
    assert_eq!(logged_summary(&log, &grew), "[2 files +16 B]");
}

#[test]
fn a_checkpoint_whose_parent_is_dropped_shows_its_changes_against_the_new_parent() {
    let r = Repo::new();
    r.write("a.txt", b"0123456789\n");
    let c1 = r.save("one");
    r.write("a.txt", b"0123456789 and some more\n");
    r.write("b.txt", b"bee\n");
    let c2 = r.save("two");
    r.remove("b.txt");
    r.write("c.txt", b"sea\n");
    let c3 = r.save("three");
    let log = r.ok(&["log", "--all"]).stdout;
    assert_eq!(logged_summary(&log, &c3), "[2 files +4 B -4 B]", "{log}");

    // Dropping the middle one makes `one` the parent of `three`: against it, `three`
    // grew a.txt and added c.txt; b.txt never shows.
    r.ok(&["drop", &c2]);
    assert_eq!(r.parents(&c3), std::slice::from_ref(&c1));
    assert_log_matches_trees(&r, &[&c1, &c3], "after a drop re-parented");
    let log = r.ok(&["log", "--all"]).stdout;
    assert_eq!(logged_summary(&log, &c3), "[2 files +18 B]", "{log}");
    assert_eq!(r.ok(&["verify"]).code, 0);

    // A save after that keeps its summary again.
    r.write("c.txt", b"sea and more\n");
    let c4 = r.save("four");
    assert_log_matches_trees(&r, &[&c1, &c3, &c4], "a save after the drop");
}
