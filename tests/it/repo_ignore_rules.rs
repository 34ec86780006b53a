//! A save holds exactly the files `git add -A` would add: git's ignore rules at every
//! level, with their precedence, negations, anchoring and ignored directories, plus
//! `info/exclude`, `core.excludesFile`, and tracked files that a rule matches.

use crate::common;
use std::collections::BTreeSet;

use common::Repo;

/// The paths of the current checkpoint, from `show --name-status` of a first checkpoint.
pub(crate) fn saved_paths(r: &Repo) -> BTreeSet<String> {
    r.ok(&["show", "@", "--name-status"])
        .stdout
        .lines()
        .filter_map(|line| line.strip_prefix("A\t"))
        .map(str::to_string)
        .collect()
}

/// What git itself would add: tracked files plus untracked ones no rule ignores.
pub(crate) fn git_paths(r: &Repo) -> BTreeSet<String> {
    r.git(&["ls-files", "--cached", "--others", "--exclude-standard"])
        .lines()
        .map(str::to_string)
        .collect()
}

fn write_all(r: &Repo, paths: &[&str]) {
    for path in paths {
        r.write(path, format!("{path}\n").as_bytes());
    }
}

#[test]
fn a_save_holds_what_git_add_all_would() {
    let r = Repo::new();
    // `[unclosed` does not parse as a glob; git skips such a line, and so must the save.
    r.write(".gitignore", b"*.log\nbuild/\n/local.txt\n[unclosed\n");
    r.write("sub/.gitignore", b"!keep.log\n*.tmp\n");
    r.write("sub/deeper/.gitignore", b"!again.tmp\n");
    // Inside an ignored directory, a negation cannot bring a file back.
    r.write("build/.gitignore", b"!*\n");
    write_all(
        &r,
        &[
            "a.txt",
            "a.log",
            "local.txt",
            "sub/local.txt",
            "sub/keep.log",
            "sub/other.log",
            "sub/x.tmp",
            "sub/deeper/again.tmp",
            "sub/deeper/other.tmp",
            "build/out.bin",
            "secret.txt",
            "sub/secret.txt",
            "notes.bak",
            "sub/notes.bak",
        ],
    );
    std::fs::write(r.git_dir().join("info").join("exclude"), b"secret.txt\n").unwrap();
    let excludes = r.home().join("global-ignore");
    std::fs::write(&excludes, b"*.bak\n").unwrap();
    r.git(&["config", "core.excludesFile", excludes.to_str().unwrap()]);
    // Tracked although ignored: `git add -A` keeps it, so the save holds it.
    r.write("build/tracked.txt", b"tracked\n");
    r.git(&["add", "-f", "build/tracked.txt"]);
    r.git(&["commit", "-q", "-m", "tracked"]);

    r.save("first");
    let saved = saved_paths(&r);
    assert_eq!(saved, git_paths(&r));
    for must in [
        "a.txt",
        "sub/local.txt",
        "sub/keep.log",
        "sub/deeper/again.tmp",
        "build/tracked.txt",
    ] {
        assert!(saved.contains(must), "{must} missing from {saved:?}");
    }
    for never in [
        "a.log",
        "local.txt",
        "sub/other.log",
        "sub/x.tmp",
        "sub/deeper/other.tmp",
        "build/out.bin",
        "secret.txt",
        "sub/secret.txt",
        "notes.bak",
    ] {
        assert!(!saved.contains(never), "{never} was saved: {saved:?}");
    }
}

/// A linked worktree reads `info/exclude` from the git directory all worktrees share.
#[test]
fn a_linked_worktree_uses_the_shared_info_exclude() {
    let r = Repo::new();
    r.write("a.txt", b"a\n");
    r.git(&["add", "a.txt"]);
    r.git(&["commit", "-q", "-m", "a"]);
    std::fs::write(r.git_dir().join("info").join("exclude"), b"*.secret\n").unwrap();
    let linked = r.sb.root.join("linked");
    r.git(&["worktree", "add", "-q", linked.to_str().unwrap()]);
    std::fs::write(linked.join("b.txt"), b"b\n").unwrap();
    std::fs::write(linked.join("key.secret"), b"do not keep\n").unwrap();

    r.sb.ok_in(&linked, &["save", "-m", "linked"]);
    let out = r.sb.ok_in(&linked, &["show", "@", "--name-status"]).stdout;
    assert!(out.contains("A\tb.txt"), "{out}");
    assert!(!out.contains("key.secret"), "{out}");
}

/// The index reader agrees with `git ls-files` for every index version git writes, and
/// hands a split index (which it does not read) back to git, with the same result.
#[test]
fn the_index_reader_agrees_with_git_ls_files() {
    let r = Repo::new();
    r.write(".gitignore", b"*.log\n");
    let mut paths = vec![
        "a.txt".to_string(),
        "debug.log".to_string(),
        "dir/sub/file-with-a-long-shared-prefix-1.txt".to_string(),
        "dir/sub/file-with-a-long-shared-prefix-2.txt".to_string(),
        "dir/sub/file-with-a-long-shared-prefix-2.txtx".to_string(),
        "dir/zz".to_string(),
        "z/\u{e9}t\u{e9}.txt".to_string(),
    ];
    // Long names move the padding of versions 2 and 3 and the prefixes of version 4.
    paths.push(format!("long/{}/{}", "d".repeat(250), "n".repeat(250)));
    paths.push(format!("long/{}/{}", "d".repeat(250), "m".repeat(200)));
    for path in &paths {
        r.write(path, path.as_bytes());
    }
    r.git(&["add", "-f", "."]);
    // Intent-to-add needs the extended flags of index version 3.
    r.write("intent.txt", b"later\n");
    r.git(&["add", "-N", "intent.txt"]);
    let git_dir = r.git_dir();
    let ls_files = || -> Vec<Vec<u8>> {
        r.git(&["-c", "core.quotePath=false", "ls-files", "-z"])
            .split('\0')
            .filter(|p| !p.is_empty())
            .map(|p| p.as_bytes().to_vec())
            .collect()
    };
    for version in ["2", "3", "4"] {
        r.git(&["update-index", "--index-version", version]);
        let read = git_checkpoint::git::index::tracked_paths(&git_dir.join("index"), 20)
            .unwrap_or_else(|_| panic!("index version {version} not read"));
        assert_eq!(read, ls_files(), "index version {version}");
    }
    r.git(&["update-index", "--split-index"]);
    assert!(git_checkpoint::git::index::tracked_paths(&git_dir.join("index"), 20).is_err());

    // Either way the tracked-but-ignored file is saved.
    r.save("split");
    let saved = saved_paths(&r);
    assert!(saved.contains("debug.log"), "{saved:?}");
    assert!(saved.contains("intent.txt"), "{saved:?}");
}

/// Issue 34, finding 9: a byte that is not UTF-8 in a pattern stands for that byte, as in
/// git, not for any byte: `*\xff*` ignores only names holding `\xff`, `caf\xe9` hides
/// `caf\xe9` and neither `cafe` nor `cafx`, a class of such bytes matches only them, and
/// such lines keep their place in the precedence (a later line of the same file, or a
/// deeper `.gitignore`, decides). Compared with `git ls-files -o --exclude-standard`.
#[test]
fn a_pattern_byte_that_is_not_utf8_matches_only_itself() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let r = Repo::new();
    r.write(".gitignore", b"*\xff*\ncaf\xe9\n*.log\n!\xe9.log\n");
    r.write("sub/.gitignore", b"[\xe0-\xef]x\n!keep\xff\nd\xe9/\n");
    r.write("info/.gitignore", b"\xe9t\xe9*\n!\xe9t\xe9.md\n");
    write_all(
        &r,
        &[
            "a.txt",
            "cafe",
            "cafx",
            "a.log",
            "sub/b.txt",
            "info/note.md",
        ],
    );
    for name in [
        &b"caf\xe9"[..],
        b"x\xffy",
        b"\xe9.log",
        b"sub/\xe5x",
        b"sub/\xf5x",
        b"sub/keep\xff",
        b"sub/d\xe9/inner.txt",
        b"info/\xe9t\xe9.txt",
        b"info/\xe9t\xe9.md",
    ] {
        let path = r.p(OsStr::from_bytes(name));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, b"content\n").unwrap();
    }
    r.save("first");
    let saved = saved_paths(&r);
    let git = git_paths(&r);
    assert_eq!(saved, git, "the checkpoint differs from git add -A");
    for must in ["a.txt", "cafe", "cafx", ".gitignore", "sub/b.txt"] {
        assert!(saved.contains(must), "{must} missing from {saved:?}");
    }
    // The names git adds: 5 plain, the 3 ignore files, and 4 with Latin-1 bytes.
    assert_eq!(saved.len(), 12, "{saved:?}");
}
