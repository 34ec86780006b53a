//! The directory cache (docs/design.md, "Directory cache"): a save without a watcher
//! takes a directory's entries from the listing an earlier save recorded while the
//! directory's metadata and the ignore files that decided it are unchanged, and must
//! never miss what a walk would see. Every test here checks the cached save against a
//! walk without the cache (`GIT_CHECKPOINT_DIR_CACHE=off`, a test hook): `status` then
//! finds the worktree clean exactly when the two agree. The saves run with
//! `GIT_CHECKPOINT_DIR_CACHE=eager` (no two-second racy margin beyond the clock's own
//! tick), so that a directory made by the test is recorded at once, and with the trace
//! on, whose note says how many directories the walk took from the cache.

use crate::common;

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::time::{Duration, SystemTime};

use common::{Out, Repo};
use proptest::prelude::*;

const CACHED: &[(&str, &str)] = &[
    ("GIT_CHECKPOINT_DIR_CACHE", "eager"),
    ("GIT_CHECKPOINT_TRACE", "1"),
];

/// Saves with the directory cache; returns the output.
#[track_caller]
fn save(r: &Repo, message: &str) -> Out {
    let out = r.run_env(&["save", "-m", message], CACHED);
    assert_eq!(out.code, 0, "save -m {message}\n{out}");
    out
}

/// How many directories the save's walk took from the cache, and how many it listed.
#[track_caller]
fn walked(out: &Out) -> (usize, usize) {
    let line = out
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix("trace: walk: "))
        .unwrap_or_else(|| panic!("no walk note in the trace\n{out}"));
    let numbers: Vec<usize> = line
        .split(' ')
        .filter_map(|word| word.parse().ok())
        .collect();
    (numbers[0], numbers[1])
}

/// How many `.gitignore` files the save's walk read and compiled.
#[track_caller]
fn gitignores_read(out: &Out) -> usize {
    let line = out
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix("trace: walk: "))
        .unwrap_or_else(|| panic!("no walk note in the trace\n{out}"));
    let count = line
        .strip_suffix(" .gitignore files read")
        .and_then(|rest| rest.rsplit(' ').next())
        .unwrap_or_else(|| panic!("no .gitignore count in the walk note\n{out}"));
    count.parse().unwrap()
}

/// Asserts that a walk without the cache finds what the last cached save recorded.
#[track_caller]
fn assert_same_as_uncached(r: &Repo, what: &str) {
    let out = r.run_env(
        &["--json", "status"],
        &[("GIT_CHECKPOINT_DIR_CACHE", "off")],
    );
    let status = common::parse_json(&out, "status");
    assert_eq!(
        status["clean"], true,
        "{what}: the cached save missed what a walk sees: {}",
        status["changes"]
    );
}

/// Lets the coarse filesystem clock move past what the test just did, so that the
/// directories it made are older than the next save's clock (and so recorded).
fn tick() {
    std::thread::sleep(Duration::from_millis(20));
}

/// Sets the mtime of `path` to `mtime` (what `touch -d` does; the ctime moves to now).
fn set_mtime(path: &Path, mtime: SystemTime) {
    let file = fs::File::open(path).unwrap();
    file.set_modified(mtime).unwrap();
}

fn mtime(path: &Path) -> SystemTime {
    fs::symlink_metadata(path).unwrap().modified().unwrap()
}

/// A worktree of three levels, saved once with the cache (which records every directory).
fn recorded_repo() -> Repo {
    let r = Repo::new();
    r.write("top.txt", b"top\n");
    r.write("d/a.txt", b"a\n");
    r.write("d/e/b.txt", b"b\n");
    r.write("d/e/f/c.txt", b"c\n");
    r.write("g/h.txt", b"h\n");
    tick();
    save(&r, "first");
    r
}

#[test]
fn a_save_with_nothing_changed_lists_no_directory() {
    let r = recorded_repo();
    let out = save(&r, "again");
    // The top, d, d/e, d/e/f and g.
    assert_eq!(walked(&out), (5, 0), "{out}");
    // A file edited in place leaves its directory's listing as it was.
    fs::write(r.p("d/e/b.txt"), b"edited\n").unwrap();
    let out = save(&r, "edited");
    assert_eq!(walked(&out), (5, 0), "{out}");
    assert_same_as_uncached(&r, "a file edited in place");
    // A file added is seen in its directory alone.
    r.write("d/e/new.txt", b"new\n");
    let out = save(&r, "added");
    assert_eq!(walked(&out), (4, 1), "{out}");
    assert_same_as_uncached(&r, "a file added");
}

#[test]
fn a_directory_listed_below_cached_ones_obeys_their_gitignore_files() {
    // A directory taken from the cache matches nothing, so the `.gitignore` files on the
    // way down are read only once a directory below them is listed again; then every
    // one of them must be, or what they ignore would be saved.
    let r = Repo::new();
    r.write(".gitignore", b"*.log\n");
    r.write("d/.gitignore", b"*.tmp\n");
    r.write("d/e/a.txt", b"a\n");
    tick();
    save(&r, "first");
    let out = save(&r, "nothing changed");
    assert_eq!(walked(&out), (3, 0), "{out}");
    assert_eq!(gitignores_read(&out), 0, "{out}");
    r.write("d/e/b.log", b"ignored by the top .gitignore\n");
    r.write("d/e/c.tmp", b"ignored by d/.gitignore\n");
    r.write("d/e/f.txt", b"kept\n");
    let out = save(&r, "d/e listed");
    assert_eq!(walked(&out), (2, 1), "{out}");
    assert_eq!(gitignores_read(&out), 2, "{out}");
    let files = r.json_of(&["show", "--stat", "@"]).to_string();
    assert!(files.contains("d/e/f.txt"), "{files}");
    assert!(
        !files.contains("b.log") && !files.contains("c.tmp"),
        "an ignored file was saved: {files}"
    );
    assert_same_as_uncached(&r, "a directory listed below cached ones");
}

#[test]
fn a_file_added_where_the_directory_mtime_was_set_back_is_saved() {
    let r = recorded_repo();
    let before = mtime(&r.p("d/e"));
    r.write("d/e/hidden.txt", b"hidden\n");
    set_mtime(&r.p("d/e"), before);
    assert_eq!(mtime(&r.p("d/e")), before);
    let out = save(&r, "after touch -d");
    // The ctime moved, which no one can set back: the directory is listed again.
    assert_eq!(walked(&out).1, 1, "{out}");
    assert_same_as_uncached(&r, "a directory whose mtime was set back");
}

#[test]
fn an_edited_gitignore_is_obeyed_in_every_directory_below_it() {
    let r = Repo::new();
    r.write(".gitignore", b"*.tmp\n");
    r.write("d/e/x.tmp", b"x\n");
    r.write("d/e/y.txt", b"y\n");
    r.write("d/z.log", b"z\n");
    tick();
    save(&r, "first");
    // Edited in place, to the same length, its mtime set back: only its ctime tells.
    let before = mtime(&r.p(".gitignore"));
    fs::write(r.p(".gitignore"), b"*.log\n").unwrap();
    set_mtime(&r.p(".gitignore"), before);
    save(&r, "top .gitignore edited");
    assert_same_as_uncached(&r, "the top .gitignore edited");
    // A .gitignore in a directory between the top and the file.
    tick();
    r.write("d/.gitignore", b"y.txt\n");
    save(&r, "d/.gitignore made");
    assert_same_as_uncached(&r, "a .gitignore made above a recorded directory");
    tick();
    fs::write(r.p("d/.gitignore"), b"!*.log\n").unwrap();
    save(&r, "d/.gitignore edited");
    assert_same_as_uncached(&r, "a .gitignore edited above a recorded directory");
    tick();
    fs::remove_file(r.p("d/.gitignore")).unwrap();
    save(&r, "d/.gitignore removed");
    assert_same_as_uncached(&r, "a .gitignore removed above a recorded directory");
}

#[test]
fn an_edited_excludes_file_is_obeyed() {
    let r = recorded_repo();
    // info/exclude, which no directory's times follow.
    let exclude = r.git_dir().join("info").join("exclude");
    fs::create_dir_all(exclude.parent().unwrap()).unwrap();
    fs::write(&exclude, b"c.txt\n").unwrap();
    save(&r, "info/exclude");
    assert_same_as_uncached(&r, "info/exclude edited");
    // core.excludesFile: named, then edited.
    let excludes = r.home().join("excludes");
    fs::write(&excludes, b"h.txt\n").unwrap();
    r.git(&["config", "core.excludesFile", excludes.to_str().unwrap()]);
    save(&r, "core.excludesFile named");
    assert_same_as_uncached(&r, "core.excludesFile named");
    tick();
    fs::write(&excludes, b"a.txt\n").unwrap();
    save(&r, "core.excludesFile edited");
    assert_same_as_uncached(&r, "core.excludesFile edited");
}

#[test]
fn a_new_nested_repository_keeps_its_files_and_not_its_git_dir() {
    let r = recorded_repo();
    r.git(&["init", "-q", "d/e"]);
    save(&r, "nested repository");
    assert_same_as_uncached(&r, "a nested repository made in a recorded directory");
    let files = r.json_of(&["show", "--stat", "@"]);
    assert!(
        !files.to_string().contains("d/e/.git"),
        "a nested .git was saved: {files}"
    );
}

#[test]
fn an_ignored_file_no_longer_tracked_is_left_out_again() {
    let r = Repo::new();
    r.write(".gitignore", b"*.log\n");
    r.write("d/keep.log", b"kept while tracked\n");
    r.write("d/a.txt", b"a\n");
    r.git(&["add", "-f", "d/keep.log"]);
    tick();
    save(&r, "tracked");
    assert_same_as_uncached(&r, "an ignored file tracked");
    r.git(&["rm", "-q", "--cached", "d/keep.log"]);
    save(&r, "untracked");
    assert_same_as_uncached(&r, "an ignored file no longer tracked");
}

/// One step of the model test.
#[derive(Clone, Debug)]
enum Step {
    /// Write a file (making its directories).
    Write(usize, u8),
    /// Remove a file or a whole directory.
    Remove(usize),
    /// Write a `.gitignore` holding these patterns in one of the directories.
    Ignore(usize, Vec<usize>),
    /// Write `info/exclude` with these patterns.
    Exclude(Vec<usize>),
    /// Write a file, then set its directory's mtime back to what it was before (`touch
    /// -d`; the ctime moves to now).
    Sneak(usize, u8),
    /// Save with the cache, after letting the clock tick (so that it records).
    Save,
}

const DIRS: &[&str] = &["", "a", "a/b", "a/b/c", "d"];
const NAMES: &[&str] = &["x.txt", "y.log", "z", "c"];
const PATTERNS: &[&str] = &["*.log", "!y.log", "z", "c/", "b", "*.txt", "/a"];

fn path(index: usize) -> String {
    let dir = DIRS[index % DIRS.len()];
    let name = NAMES[(index / DIRS.len()) % NAMES.len()];
    match dir {
        "" => name.to_string(),
        dir => format!("{dir}/{name}"),
    }
}

fn step() -> impl Strategy<Value = Step> {
    let pattern = || proptest::collection::vec(0..PATTERNS.len(), 0..3);
    prop_oneof![
        4 => (0..DIRS.len() * NAMES.len(), any::<u8>()).prop_map(|(p, b)| Step::Write(p, b)),
        2 => (0..DIRS.len() * NAMES.len()).prop_map(Step::Remove),
        2 => (0..DIRS.len(), pattern()).prop_map(|(d, p)| Step::Ignore(d, p)),
        1 => pattern().prop_map(Step::Exclude),
        2 => (0..DIRS.len() * NAMES.len(), any::<u8>()).prop_map(|(p, b)| Step::Sneak(p, b)),
        3 => Just(Step::Save),
    ]
}

fn apply(r: &Repo, step: &Step) {
    match step {
        Step::Write(p, byte) => {
            let rel = path(*p);
            // A file where a directory of the path is: the directory goes first.
            let mut at = String::new();
            for part in rel.split('/') {
                at = if at.is_empty() {
                    part.to_string()
                } else {
                    format!("{at}/{part}")
                };
                if at != rel && r.p(&at).is_file() {
                    fs::remove_file(r.p(&at)).unwrap();
                }
            }
            if r.p(&rel).is_dir() {
                fs::remove_dir_all(r.p(&rel)).unwrap();
            }
            r.write(&rel, &[*byte, b'\n']);
        }
        Step::Remove(p) => common::remove_any(&r.p(path(*p))),
        Step::Ignore(d, patterns) => {
            let dir = r.p(DIRS[*d]);
            if dir.is_dir() {
                let text: String = patterns
                    .iter()
                    .map(|&i| format!("{}\n", PATTERNS[i]))
                    .collect();
                fs::write(dir.join(".gitignore"), text).unwrap();
            }
        }
        Step::Exclude(patterns) => {
            let text: String = patterns
                .iter()
                .map(|&i| format!("{}\n", PATTERNS[i]))
                .collect();
            let exclude = r.git_dir().join("info").join("exclude");
            fs::create_dir_all(exclude.parent().unwrap()).unwrap();
            fs::write(exclude, text).unwrap();
        }
        Step::Sneak(p, byte) => {
            let rel = path(*p);
            let dir = r.p(&rel).parent().unwrap().to_path_buf();
            let before = fs::symlink_metadata(&dir).ok().filter(|m| m.is_dir());
            apply(r, &Step::Write(*p, *byte));
            if let Some(meta) = before {
                let at = SystemTime::UNIX_EPOCH
                    + Duration::new(meta.mtime() as u64, meta.mtime_nsec() as u32);
                set_mtime(&dir, at);
            }
        }
        Step::Save => {
            tick();
            save(r, "step");
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 12,
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    /// Whatever the edits (files, directories, ignore files, mtimes set back), a save
    /// with the directory cache records what a walk without it finds.
    #[test]
    fn a_cached_save_records_what_an_uncached_walk_finds(
        steps in proptest::collection::vec(step(), 1..12)
    ) {
        let r = Repo::new();
        r.write("a/b/c/x.txt", b"x\n");
        r.write("d/z", b"z\n");
        tick();
        save(&r, "first");
        for (i, step) in steps.iter().enumerate() {
            apply(&r, step);
            if matches!(step, Step::Save) || i + 1 == steps.len() {
                if !matches!(step, Step::Save) {
                    save(&r, "last");
                }
                assert_same_as_uncached(&r, &format!("after {:?}", &steps[..=i]));
            }
        }
    }
}
