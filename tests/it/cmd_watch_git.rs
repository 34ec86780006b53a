//! A watched save after the git commands an agent runs all the time (issue 37): `git
//! add`, `git commit`, `git add -f` of an ignored file, `git rm --cached`, `git checkout
//! -- <paths>`, `git stash` and `git stash pop` rewrite the index, which decides what a
//! walk captures (a tracked file an ignore rule matches is captured). The save looks
//! again at the paths whose index entries changed instead of walking the whole tree, and
//! records exactly what a save that walks records. A checkout of another branch may
//! walk; an index rewritten in place (the same file) must.

use crate::cmd_watch::{assert_walk_agrees, traced_save, Traced, Watcher};
use crate::common;
use common::Repo;

/// A repository with tracked files, an ignore rule for `*.log` and an ignored directory,
/// one tracked file the rule matches (`kept.log`), all committed and saved, with a
/// watcher running whose token the last save recorded.
fn watched_git_repo(repo: &Repo) -> Watcher<'_> {
    repo.write("top.txt", b"top\n");
    repo.write("a/one.txt", b"one\n");
    repo.write("a/deep/two.txt", b"two\n");
    repo.write("b/three.txt", b"three\n");
    repo.write(".gitignore", b"*.log\nbuild/\n");
    repo.write("kept.log", b"tracked although ignored\n");
    repo.write("build/out.bin", b"ignored directory\n");
    repo.git(&["add", "-A"]);
    repo.git(&["add", "-f", "kept.log", "build/out.bin"]);
    repo.git(&["commit", "-q", "-m", "start"]);
    repo.save("start");
    let watcher = Watcher::start(repo, &[]);
    // The first save after the watcher starts walks, and records its token.
    repo.write("primer.txt", b"primer\n");
    let first = traced_save(repo, "primer");
    assert!(first.saved() && first.ran("walk"), "{}", first.out);
    watcher
}

/// A save after a git command that asked the watcher and did not walk the whole tree
/// (it may have looked at nothing at all, when nothing it captures changed).
#[track_caller]
fn save_without_walking(repo: &Repo, msg: &str) -> Traced {
    let save = traced_save(repo, msg);
    assert!(
        save.ran("watch: ask") && !save.ran("walk"),
        "the save after a git command walked the whole tree\n{}",
        save.out
    );
    save
}

#[test]
fn git_add_and_commit_of_an_edit_do_not_make_the_save_walk() {
    let repo = Repo::new();
    let watcher = watched_git_repo(&repo);
    repo.write("a/one.txt", b"ONE\n");
    assert!(save_without_walking(&repo, "edit").saved());
    repo.git(&["add", "a/one.txt"]);
    let save = save_without_walking(&repo, "after git add");
    assert!(!save.saved(), "{}", save.out);
    repo.git(&["commit", "-q", "-m", "one"]);
    let save = save_without_walking(&repo, "after git commit");
    assert!(!save.saved(), "{}", save.out);
    // An edit after the commit goes through the watcher as before.
    repo.write("b/three.txt", b"THREE\n");
    assert!(save_without_walking(&repo, "after the commit").saved());
    assert_walk_agrees(&repo, watcher);
}

#[test]
fn git_add_force_of_ignored_files_captures_them_without_a_walk() {
    let repo = Repo::new();
    let watcher = watched_git_repo(&repo);
    repo.write("a/debug.log", b"ignored\n");
    repo.write("build/new.bin", b"in the ignored directory\n");
    let save = save_without_walking(&repo, "ignored files");
    assert!(
        !save.saved(),
        "an ignored file made a checkpoint\n{}",
        save.out
    );
    repo.git(&["add", "-f", "a/debug.log", "build/new.bin"]);
    let save = save_without_walking(&repo, "after git add -f");
    assert!(
        save.saved(),
        "files git now tracks were not captured\n{}",
        save.out
    );
    assert_walk_agrees(&repo, watcher);
}

#[test]
fn git_rm_cached_of_an_ignored_tracked_file_drops_it_without_a_walk() {
    let repo = Repo::new();
    let watcher = watched_git_repo(&repo);
    repo.git(&["rm", "-q", "--cached", "kept.log", "build/out.bin"]);
    let save = save_without_walking(&repo, "after git rm --cached");
    assert!(
        save.saved(),
        "files git no longer tracks stayed in the checkpoint\n{}",
        save.out
    );
    assert_walk_agrees(&repo, watcher);
}

#[test]
fn git_checkout_of_paths_is_seen_without_a_walk() {
    let repo = Repo::new();
    let watcher = watched_git_repo(&repo);
    repo.write("a/one.txt", b"ONE\n");
    repo.write("a/deep/two.txt", b"TWO\n");
    assert!(save_without_walking(&repo, "edits").saved());
    repo.git(&["checkout", "--", "a/one.txt", "a/deep"]);
    let save = save_without_walking(&repo, "after git checkout --");
    assert!(save.saved(), "{}", save.out);
    assert_walk_agrees(&repo, watcher);
}

#[test]
fn git_stash_and_pop_with_a_new_file_in_the_index_are_seen_without_a_walk() {
    let repo = Repo::new();
    let watcher = watched_git_repo(&repo);
    repo.write("a/one.txt", b"ONE\n");
    repo.write("c/new.txt", b"new\n");
    repo.write("c/new.log", b"new and ignored\n");
    repo.git(&["add", "c/new.txt"]);
    repo.git(&["add", "-f", "c/new.log"]);
    assert!(save_without_walking(&repo, "edits and a new file").saved());
    repo.git(&["stash", "-q"]);
    assert!(!repo.exists("c/new.txt"));
    let save = save_without_walking(&repo, "after git stash");
    assert!(save.saved(), "{}", save.out);
    repo.git(&["stash", "pop", "-q"]);
    assert!(repo.exists("c/new.txt") && repo.exists("c/new.log"));
    let save = save_without_walking(&repo, "after git stash pop");
    assert!(save.saved(), "{}", save.out);
    assert_walk_agrees(&repo, watcher);
}

#[test]
fn a_checkout_of_another_branch_matches_a_walk() {
    let repo = Repo::new();
    let watcher = watched_git_repo(&repo);
    repo.git(&["checkout", "-q", "-b", "other"]);
    repo.write("a/one.txt", b"on the other branch\n");
    repo.write("other.log", b"tracked on the other branch only\n");
    repo.git(&["add", "-A"]);
    repo.git(&["add", "-f", "other.log"]);
    repo.git(&["rm", "-q", "--cached", "kept.log"]);
    repo.git(&["commit", "-q", "-m", "other"]);
    assert!(traced_save(&repo, "on the other branch").saved());
    repo.git(&["checkout", "-q", "main"]);
    let save = traced_save(&repo, "back on main");
    assert!(save.saved(), "{}", save.out);
    assert_walk_agrees(&repo, watcher);
}

#[test]
fn an_index_rewritten_in_place_makes_the_save_walk() {
    let repo = Repo::new();
    let watcher = watched_git_repo(&repo);
    repo.write("a/debug.log", b"ignored\n");
    assert!(!save_without_walking(&repo, "ignored file").saved());
    // An index that tracks the ignored file, written over the index in place: the same
    // file (inode), so no copy of the index the base kept tells what it held.
    let staged = repo.scratch("index").join("staged");
    let index = repo.git_dir().join("index");
    std::fs::copy(&index, &staged).unwrap();
    let mut add = repo.sb.git_cmd(&repo.dir, &["add", "-f", "a/debug.log"]);
    add.env("GIT_INDEX_FILE", &staged);
    assert!(add.status().unwrap().success());
    let before = std::fs::metadata(&index).unwrap();
    std::fs::write(&index, std::fs::read(&staged).unwrap()).unwrap();
    let after = std::fs::metadata(&index).unwrap();
    use std::os::unix::fs::MetadataExt;
    assert_eq!(
        before.ino(),
        after.ino(),
        "the index was not written in place"
    );
    let save = traced_save(&repo, "index written in place");
    assert!(
        save.saved() && save.ran("walk"),
        "an index written in place must make the save walk\n{}",
        save.out
    );
    assert_walk_agrees(&repo, watcher);
}

#[test]
fn an_index_rewritten_in_place_with_its_size_and_time_put_back_makes_the_save_walk() {
    let repo = Repo::new();
    let watcher = watched_git_repo(&repo);
    repo.write(
        "kepx.log",
        b"ignored, and tracked once the index is rewritten\n",
    );
    assert!(!save_without_walking(&repo, "ignored file").saved());
    // The index tracks `kepx.log` instead of `kept.log`: entries of the same size, in
    // the same order, written in place and the modification time put back, so that only
    // the file's identity (and its ctime) tells that it is no longer what the base saw.
    let index = repo.git_dir().join("index");
    let before = std::fs::metadata(&index).unwrap();
    let bytes = std::fs::read(&index).unwrap();
    let at = bytes
        .windows(b"kept.log".len())
        .position(|w| w == b"kept.log")
        .unwrap();
    let mut rewritten = bytes.clone();
    rewritten[at..at + 8].copy_from_slice(b"kepx.log");
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&index)
        .unwrap();
    use std::io::Write;
    (&file).write_all(&rewritten).unwrap();
    file.set_modified(before.modified().unwrap()).unwrap();
    drop(file);
    let after = std::fs::metadata(&index).unwrap();
    use std::os::unix::fs::MetadataExt;
    assert_eq!(
        (before.ino(), before.len(), before.modified().unwrap()),
        (after.ino(), after.len(), after.modified().unwrap())
    );
    let save = traced_save(&repo, "index written in place");
    assert!(
        save.saved() && save.ran("walk"),
        "an index written in place must make the save walk\n{}",
        save.out
    );
    assert_walk_agrees(&repo, watcher);
}

#[test]
fn where_no_copy_of_the_index_can_be_kept_only_a_changed_index_makes_the_save_walk() {
    use std::os::unix::fs::MetadataExt;
    let repo = Repo::new();
    let watcher = watched_git_repo(&repo);
    // A directory where the link is made first: no copy of the index can be kept (the
    // one the first save kept stays, a copy of an older index).
    let watch_dir = repo.git_dir().join("checkpoint/watch");
    std::fs::create_dir(watch_dir.join("index.tmp")).unwrap();
    let kept = || std::fs::metadata(watch_dir.join("index")).unwrap().ino();
    let first_copy = kept();
    repo.write("a/one.txt", b"ONE\n");
    repo.git(&["add", "a/one.txt"]);
    assert!(save_without_walking(&repo, "edit, added").saved());
    assert_eq!(kept(), first_copy);
    // The index did not change: the base vouches for it without a copy.
    repo.write("b/three.txt", b"THREE\n");
    assert!(save_without_walking(&repo, "another edit").saved());
    // It changed, and no copy tells how: the save walks, and captures the file.
    repo.write("a/debug.log", b"ignored\n");
    repo.git(&["add", "-f", "a/debug.log"]);
    let save = traced_save(&repo, "after git add -f");
    assert!(save.saved() && save.ran("walk"), "{}", save.out);
    assert_walk_agrees(&repo, watcher);
}
