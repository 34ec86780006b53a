//! Where the watcher is not trusted (issue 21, findings 6, 14 and 18): changes that raise
//! no inotify event in the worktree (a write through `mmap`, a second hard link, an
//! excludes file reached through a symlink, a filesystem mounted over a worktree
//! directory) never make a save or a restore lose or miss them, a watched save records a
//! skipped file as a walking save does, and the files under `<git-dir>/checkpoint/watch/`
//! are never opened through a planted symlink. Each watcher is a real process, stopped at
//! the end of its test.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::{Out, Repo};
use serde_json::Value;

/// A running watcher of a test repository, stopped when dropped.
struct Watcher<'r> {
    repo: &'r Repo,
}

impl<'r> Watcher<'r> {
    #[track_caller]
    fn start(repo: &'r Repo) -> Watcher<'r> {
        let out = repo.ok(&["watch", "--daemon"]);
        assert!(out.stdout.contains("in the background"), "{out}");
        Watcher { repo }
    }
}

impl Drop for Watcher<'_> {
    fn drop(&mut self) {
        let _ = self.repo.run(&["watch", "--stop"]);
    }
}

/// A traced save: its output, and whether it walked or went through the watcher.
#[track_caller]
fn traced_save(repo: &Repo, msg: &str) -> Out {
    let out = repo.run_env(&["save", "-m", msg], &[("GIT_CHECKPOINT_TRACE", "1")]);
    assert_eq!(out.code, 0, "{out}");
    out
}

fn ran(out: &Out, phase: &str) -> bool {
    let suffix = format!("ms  {phase}");
    out.stderr.lines().any(|line| line.ends_with(&suffix))
}

/// Starts a watcher on `repo` (already saved) and makes the save that records its first
/// token, then one that goes through it: from here a save trusts the watcher.
#[track_caller]
fn watching(repo: &Repo) -> Watcher<'_> {
    let watcher = Watcher::start(repo);
    repo.write("primer.txt", b"primer\n");
    let first = traced_save(repo, "primer");
    assert!(ran(&first, "walk"), "{first}");
    repo.write("primer.txt", b"primed\n");
    let second = traced_save(repo, "primed");
    assert!(
        ran(&second, "watch") && !ran(&second, "walk"),
        "the save did not go through the watcher\n{second}"
    );
    watcher
}

/// What a walk finds once the watcher is stopped: "Nothing changed" when the last
/// watched save recorded the worktree exactly.
#[track_caller]
fn assert_walk_agrees(repo: &Repo, watcher: Watcher<'_>, what: &str) {
    drop(watcher);
    let walked = traced_save(repo, "walked");
    assert!(ran(&walked, "walk"), "{walked}");
    assert!(
        walked.stdout.contains("Nothing changed"),
        "{what}: a walk records something the watched save missed:\n{walked}"
    );
}

/// Overwrites the start of `path` through a shared memory mapping: the length stays, and
/// no write(2) reaches the filesystem's notification hooks.
#[track_caller]
fn write_through_mmap(path: &Path, bytes: &[u8]) {
    let script = "import mmap, sys\n\
                  data = bytes.fromhex(sys.argv[2])\n\
                  with open(sys.argv[1], 'r+b') as f:\n\
                  \x20   m = mmap.mmap(f.fileno(), 0)\n\
                  \x20   m[:len(data)] = data\n\
                  \x20   m.flush()\n\
                  \x20   m.close()\n";
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let status = Command::new("python3")
        .args(["-c", script])
        .arg(path)
        .arg(hex)
        .status()
        .expect("python3 runs");
    assert!(status.success(), "the mmap write failed");
}

/// Finding 6: a change made through `mmap` raises no inotify event. The safety save
/// before a restore still sees it (it never trusts the watcher alone), so the restore
/// keeps it in a checkpoint instead of overwriting it.
#[test]
fn a_restore_keeps_a_change_made_through_mmap_that_the_watcher_cannot_see() {
    let repo = Repo::new();
    repo.write("f.txt", b"version one\n");
    let one = repo.save("one");
    let watcher = watching(&repo);
    repo.write("f.txt", b"version two\n");
    let two = traced_save(&repo, "two");
    assert!(two.stdout.contains("Saved"), "{two}");
    // A later tick of the filesystem's clock than the save's, so the kernel's new mtime
    // differs from the one recorded.
    std::thread::sleep(std::time::Duration::from_millis(50));
    write_through_mmap(&repo.p("f.txt"), b"VERSION 3!!\n");
    assert_eq!(repo.read_string("f.txt"), "VERSION 3!!\n");

    let restored = repo.json(&["restore", &one, "--json"]);
    let safety = restored["safety_checkpoint"].as_str().unwrap_or_default();
    assert!(
        !safety.is_empty(),
        "the restore made no safety checkpoint of the change written through mmap: {restored:#}"
    );
    assert_eq!(repo.read_string("f.txt"), "version one\n");
    repo.ok(&["restore", "--no-save", safety]);
    assert_eq!(
        repo.read_string("f.txt"),
        "VERSION 3!!\n",
        "the safety checkpoint holds the change written through mmap"
    );
    drop(watcher);
}

/// Finding 6: two hard links to one file, both in the worktree. A write through one
/// names only that one in an event; the watched save must not keep the other's old
/// content.
#[test]
fn a_watched_save_sees_a_change_through_another_hard_link() {
    let repo = Repo::new();
    repo.write("a.txt", b"shared content\n");
    std::fs::create_dir(repo.p("d")).unwrap();
    std::fs::hard_link(repo.p("a.txt"), repo.p("d/b.txt")).unwrap();
    repo.save("linked");
    // The stat cache vouches only for files older than its margin (2 s) when read: only
    // then would a save trust d/b.txt's recorded metadata instead of looking.
    std::thread::sleep(std::time::Duration::from_millis(2100));
    let watcher = watching(&repo);
    // In place: the same inode, so d/b.txt changes too.
    std::fs::write(repo.p("a.txt"), b"changed through a, longer\n").unwrap();
    assert_eq!(repo.read_string("d/b.txt"), "changed through a, longer\n");
    let save = traced_save(&repo, "through a");
    assert!(save.stdout.contains("Saved"), "{save}");
    assert_walk_agrees(&repo, watcher, "a change through another hard link");
}

/// Issue 34, finding 10: a file of the worktree with a second name outside it, edited
/// through that name, which is then removed. No event reaches the worktree; the watched
/// save looks at the file all the same (a file with more than one link is not vouched
/// for by the journal), and without walking the worktree.
#[test]
fn a_watched_save_sees_a_change_through_a_hard_link_made_outside() {
    let repo = Repo::new();
    repo.write("a.txt", b"version one\n");
    repo.write("b.txt", b"b\n");
    repo.save("one");
    let outside = repo.scratch("outside").join("a.txt");
    std::fs::hard_link(repo.p("a.txt"), &outside).unwrap();
    let watcher = watching(&repo);
    // A later tick of the filesystem's clock than the save's.
    std::thread::sleep(std::time::Duration::from_millis(50));
    std::fs::write(&outside, b"version two, written through the outside name\n").unwrap();
    std::fs::remove_file(&outside).unwrap();
    assert_eq!(
        repo.read_string("a.txt"),
        "version two, written through the outside name\n"
    );
    let save = traced_save(&repo, "through the outside name");
    assert!(
        save.stdout.contains("Saved"),
        "the watched save missed the change through the other link\n{save}"
    );
    assert!(
        ran(&save, "watch") && !ran(&save, "walk"),
        "the save walked instead of asking the watcher\n{save}"
    );
    // Once it has one name again it is looked at no more: the next save trusts the journal.
    repo.write("b.txt", b"bb\n");
    let next = traced_save(&repo, "b");
    assert_eq!(common::trace_count(&next, "paths looked at"), 1, "{next}");
    assert_walk_agrees(&repo, watcher, "a change through a hard link made outside");
}

/// Finding 6: the excludes file as dotfile managers install it, a symlink into another
/// directory. Editing its target changes what a walk captures; the watched save must see
/// that the rules changed.
#[test]
fn a_watched_save_follows_an_excludes_file_that_is_a_symlink() {
    let repo = Repo::new();
    let dotfiles = repo.home().join("dotfiles");
    std::fs::create_dir_all(&dotfiles).unwrap();
    std::fs::write(dotfiles.join("ignore"), b"*.tmp\n").unwrap();
    let git_config = repo.home().join(".config/git");
    std::fs::create_dir_all(&git_config).unwrap();
    std::os::unix::fs::symlink(dotfiles.join("ignore"), git_config.join("ignore")).unwrap();
    repo.write("keep.txt", b"keep\n");
    repo.write("notes.tmp", b"ignored for now\n");
    repo.save("start");
    let watcher = watching(&repo);
    std::fs::write(dotfiles.join("ignore"), b"*.bak\n").unwrap();
    let save = traced_save(&repo, "rules changed");
    assert!(
        save.stdout.contains("Saved"),
        "the edited excludes file went unnoticed: notes.tmp is no longer ignored\n{save}"
    );
    assert_walk_agrees(&repo, watcher, "an excludes file behind a symlink");
}

/// Finding 18: a file larger than `checkpoint.maxFileSize` appears while the watcher
/// runs. A later watched save records it as skipped, as a walking save does, and
/// `restore --no-save @` leaves it alone.
#[test]
fn a_watched_save_records_a_skipped_file_and_restore_leaves_it() {
    let repo = Repo::new();
    repo.git(&["config", "checkpoint.maxFileSize", "64k"]);
    repo.write("a.txt", b"a\n");
    repo.save("start");
    let watcher = watching(&repo);
    let big = common::pseudo_random(100_000, 18);
    repo.write("data.bin", &big);
    let first = traced_save(&repo, "big file appears");
    assert!(first.stdout.contains("Nothing changed"), "{first}");
    repo.write("a.txt", b"a changed\n");
    let later = traced_save(&repo, "later");
    assert!(later.stdout.contains("Saved"), "{later}");
    let log = repo.log_json(false);
    let skipped: Vec<&Value> = log[0]["skipped"].as_array().unwrap().iter().collect();
    assert!(
        skipped.iter().any(|s| s["path"] == "data.bin"),
        "the watched save recorded no skipped data.bin: {:#}",
        log[0]
    );
    repo.ok(&["restore", "--no-save", "@"]);
    assert!(
        repo.exists("data.bin") && repo.read("data.bin") == big,
        "restore --no-save @ deleted the skipped data.bin"
    );
    drop(watcher);
}

/// Finding 6: a filesystem mounted over a worktree directory after the watcher started
/// raises no event in the directory the watcher watches. A save must not trust the
/// watcher then. Needs root for `mount`: elsewhere it fails unless
/// `GIT_CHECKPOINT_TEST_SKIP_WATCH_MOUNT=<reason>` allows the skip.
#[test]
fn a_mount_over_a_worktree_directory_is_not_trusted_to_the_watcher() {
    if !common::is_root() {
        common::skip_only_if_allowed(
            "WATCH_MOUNT",
            "mounting a tmpfs over a worktree directory needs root",
        );
        return;
    }
    let repo = Repo::new();
    repo.write("sub/under.txt", b"under the mount\n");
    repo.save("start");
    let watcher = watching(&repo);
    let mounted = Mounted::tmpfs(&repo.p("sub"));
    repo.write("sub/on-tmpfs.txt", b"on the tmpfs\n");
    let save = traced_save(&repo, "on the mount");
    assert!(
        save.stdout.contains("Saved"),
        "files on a filesystem mounted over sub/ went unnoticed\n{save}"
    );
    assert_walk_agrees(&repo, watcher, "a mount over a worktree directory");
    drop(mounted);
}

/// A tmpfs mounted for a test, unmounted when dropped.
struct Mounted(std::path::PathBuf);

impl Mounted {
    #[track_caller]
    fn tmpfs(at: &Path) -> Mounted {
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "tmpfs"])
            .arg(at)
            .status()
            .expect("mount runs");
        assert!(status.success(), "mount -t tmpfs failed");
        Mounted(at.to_path_buf())
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

/// Finding 14: a symlink planted as `watch/pid` (or `watch/log`) must not make `watch`
/// truncate or write the file it points to.
#[test]
fn watch_refuses_a_planted_symlink_in_its_directory() {
    for name in ["pid", "log"] {
        let repo = Repo::new();
        repo.write("f.txt", b"f\n");
        repo.save("start");
        let victim = repo.sb.root.join("victim.txt");
        std::fs::write(&victim, b"precious\n").unwrap();
        let dir = repo.git_dir().join("checkpoint/watch");
        std::fs::create_dir_all(&dir).unwrap();
        std::os::unix::fs::symlink(&victim, dir.join(name)).unwrap();
        let out = repo.run(&["watch", "--daemon"]);
        // Whatever happened, no watcher is left behind.
        let _ = repo.run(&["watch", "--stop"]);
        assert_eq!(
            std::fs::read(&victim).unwrap(),
            b"precious\n",
            "watch wrote through a planted watch/{name} symlink\n{out}"
        );
        assert_ne!(out.code, 0, "watch/{name}: {out}");
        assert!(out.stderr.contains("symlink"), "watch/{name}: {out}");
    }
}

/// Finding 14: a save never writes the watcher's base through a planted symlink either
/// (`watch/base.tmp`), and a planted `watch/base` is only a reason to walk.
#[test]
fn a_save_never_writes_the_watch_base_through_a_symlink() {
    let repo = Repo::new();
    repo.write("f.txt", b"f\n");
    repo.save("start");
    let watcher = Watcher::start(&repo);
    let victim = repo.sb.root.join("victim.txt");
    std::fs::write(&victim, b"precious\n").unwrap();
    let dir = repo.git_dir().join("checkpoint/watch");
    std::os::unix::fs::symlink(&victim, dir.join("base.tmp")).unwrap();
    repo.write("f.txt", b"changed\n");
    let save = traced_save(&repo, "changed");
    assert!(save.stdout.contains("Saved"), "{save}");
    assert_eq!(
        std::fs::read(&victim).unwrap(),
        b"precious\n",
        "the save wrote through a planted watch/base.tmp symlink"
    );
    drop(watcher);
}
