//! `git checkpoint watch`: a save that asks the watcher records exactly what a save that
//! walks records, for every kind of change made while the watcher runs, and it really
//! does skip the walk (the trace shows a "watch" phase and no "walk" phase). The watcher
//! is a real process, stopped (or killed) at the end of each test.

use crate::common;
use std::process::Command;
use std::time::{Duration, Instant};

use common::Repo;

/// A running watcher of a test repository, stopped when dropped (killed if need be).
pub(crate) struct Watcher<'r> {
    repo: &'r Repo,
    pid: u32,
}

impl<'r> Watcher<'r> {
    #[track_caller]
    pub(crate) fn start(repo: &'r Repo, extra: &[&str]) -> Watcher<'r> {
        Watcher::start_with(repo, extra, &[])
    }

    /// [`Watcher::start`] with `env` set for the watcher.
    #[track_caller]
    pub(crate) fn start_with(repo: &'r Repo, extra: &[&str], env: &[(&str, &str)]) -> Watcher<'r> {
        let mut args = vec!["watch", "--daemon"];
        args.extend_from_slice(extra);
        let out = repo.run_env(&args, env);
        assert!(
            out.code == 0 && out.stdout.contains("in the background"),
            "{out}"
        );
        Watcher {
            repo,
            pid: pid_of(repo).expect("a pid file"),
        }
    }
}

impl Drop for Watcher<'_> {
    fn drop(&mut self) {
        if self.repo.dir.exists() {
            let _ = self.repo.run(&["watch", "--stop"]);
        }
        if alive(self.pid) {
            kill(self.pid, "KILL");
        }
    }
}

pub(crate) fn pid_of(repo: &Repo) -> Option<u32> {
    std::fs::read_to_string(repo.git_dir().join("checkpoint/watch/pid"))
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Whether the process runs (a zombie does not count): from `/proc` where there is one,
/// else from `ps` (macOS).
pub(crate) fn alive(pid: u32) -> bool {
    let state = match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .map(|rest| rest.trim_start().to_string()),
        Err(_) if std::path::Path::new("/proc/self").exists() => None,
        Err(_) => Command::new("ps")
            .args(["-o", "stat=", "-p", &pid.to_string()])
            .output()
            .ok()
            .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_string())
            .filter(|state| !state.is_empty()),
    };
    state.is_some_and(|state| !state.starts_with('Z'))
}

fn kill(pid: u32, signal: &str) {
    let status = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(pid.to_string())
        .status()
        .unwrap();
    assert!(status.success());
}

#[track_caller]
pub(crate) fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Whether a traced command's output shows it ran `phase`.
pub(crate) fn ran(out: &common::Out, phase: &str) -> bool {
    let suffix = format!("ms  {phase}");
    out.stderr.lines().any(|line| line.ends_with(&suffix))
}

/// What a traced save says, and which phases it ran.
pub(crate) struct Traced {
    pub(crate) out: common::Out,
}

impl Traced {
    pub(crate) fn ran(&self, phase: &str) -> bool {
        ran(&self.out, phase)
    }
    pub(crate) fn saved(&self) -> bool {
        self.out.stdout.contains("Saved checkpoint")
    }
}

#[track_caller]
pub(crate) fn traced_save(repo: &Repo, msg: &str) -> Traced {
    let out = repo.run_env(&["save", "-m", msg], &[("GIT_CHECKPOINT_TRACE", "1")]);
    assert_eq!(out.code, 0, "{out}");
    Traced { out }
}

/// A save that must go through the watcher, skipping the walk.
#[track_caller]
pub(crate) fn watched_save(repo: &Repo, msg: &str) -> Traced {
    let save = traced_save(repo, msg);
    assert!(
        save.ran("watch") && !save.ran("walk"),
        "the save walked instead of asking the watcher\n{}",
        save.out
    );
    save
}

/// The saved tree is what a walk records: with the watcher stopped, a save walks and
/// finds nothing changed.
#[track_caller]
pub(crate) fn assert_walk_agrees(repo: &Repo, watcher: Watcher<'_>) {
    drop(watcher);
    let save = traced_save(repo, "walked");
    assert!(save.ran("walk") && !save.ran("watch"), "{}", save.out);
    assert!(
        save.out.stdout.contains("Nothing changed"),
        "a walk records something else than the watched save did:\n{}\n{}",
        save.out,
        repo.ok(&["diff", "--stat"]).stdout
    );
}

/// A repository with a few files and directories, saved, with a watcher running whose
/// token the last save recorded.
fn watched_repo(repo: &Repo) -> Watcher<'_> {
    repo.write("top.txt", b"top\n");
    repo.write("a/one.txt", b"one\n");
    repo.write("a/deep/two.txt", b"two\n");
    repo.write("b/three.txt", b"three\n");
    repo.write(".gitignore", b"*.log\n");
    repo.save("start");
    let watcher = Watcher::start(repo, &[]);
    // The first save after the watcher starts walks, and records its token.
    repo.write("primer.txt", b"primer\n");
    let first = traced_save(repo, "primer");
    assert!(first.saved() && first.ran("walk"), "{}", first.out);
    watcher
}

#[test]
fn create_modify_delete_through_the_watcher_match_a_walk() {
    let repo = Repo::new();
    let watcher = watched_repo(&repo);
    repo.write("new.txt", b"new\n");
    repo.write("fresh/dir/deeper/file.txt", b"in a new directory\n");
    repo.write("a/one.txt", b"ONE\n");
    repo.remove("b/three.txt");
    let save = watched_save(&repo, "changes");
    assert!(save.saved(), "{}", save.out);
    // Nothing changed since: the save looks at no file at all.
    let again = traced_save(&repo, "nothing");
    assert!(
        again.out.stdout.contains("Nothing changed"),
        "{}",
        again.out
    );
    assert!(
        again.ran("watch: ask") && !again.ran("watch") && !again.ran("walk"),
        "{}",
        again.out
    );
    assert_walk_agrees(&repo, watcher);
}

#[test]
fn a_restore_while_watched_then_a_save_matches_a_walk() {
    let repo = Repo::new();
    let watcher = watched_repo(&repo);
    let before = repo.current();
    repo.write("a/one.txt", b"changed\n");
    repo.write("c/new.txt", b"new\n");
    assert!(watched_save(&repo, "changed").saved());
    repo.ok(&["restore", &before]);
    repo.write("b/three.txt", b"after the restore\n");
    let save = traced_save(&repo, "after the restore");
    assert!(save.saved(), "{}", save.out);
    assert_walk_agrees(&repo, watcher);
}

#[test]
fn renames_across_directories_match_a_walk() {
    let repo = Repo::new();
    let watcher = watched_repo(&repo);
    std::fs::rename(repo.p("a/one.txt"), repo.p("b/moved.txt")).unwrap();
    std::fs::rename(repo.p("a/deep"), repo.p("b/deep-moved")).unwrap();
    let save = watched_save(&repo, "renamed");
    assert!(save.saved(), "{}", save.out);
    // A change inside the moved directory is seen under its new path.
    repo.write("b/deep-moved/two.txt", b"changed after the move\n");
    repo.write("b/deep-moved/new.txt", b"new after the move\n");
    let save = watched_save(&repo, "inside the moved directory");
    assert!(save.saved(), "{}", save.out);
    assert_walk_agrees(&repo, watcher);
}

#[test]
fn a_directory_replaced_by_a_file_and_back_matches_a_walk() {
    let repo = Repo::new();
    let watcher = watched_repo(&repo);
    std::fs::remove_dir_all(repo.p("a")).unwrap();
    repo.write("a", b"a file where a directory was\n");
    let save = watched_save(&repo, "dir to file");
    assert!(save.saved(), "{}", save.out);
    repo.remove("b/three.txt");
    std::fs::remove_dir(repo.p("b")).unwrap();
    repo.write("b/again/file.txt", b"back\n");
    let save = watched_save(&repo, "directory again");
    assert!(save.saved(), "{}", save.out);
    assert_walk_agrees(&repo, watcher);
}

#[test]
fn ignored_files_and_changed_ignore_rules_match_a_walk() {
    let repo = Repo::new();
    let watcher = watched_repo(&repo);
    repo.write("a/build.log", b"ignored\n");
    let save = watched_save(&repo, "ignored");
    assert!(
        !save.saved(),
        "an ignored file made a checkpoint\n{}",
        save.out
    );
    // A new .gitignore below the top decides about files that did not change.
    repo.write("a/.gitignore", b"one.txt\n");
    let save = watched_save(&repo, "rules");
    assert!(save.saved(), "{}", save.out);
    assert_walk_agrees(&repo, watcher);
}

#[test]
#[cfg_attr(
    not(target_os = "linux"),
    ignore = "inotify's queue overflows; FSEvents' lost events are cmd_watch_delayed's and \
              platform/fsevents.rs's"
)]
fn a_burst_that_overflows_the_kernel_queue_makes_the_next_save_walk() {
    let repo = Repo::new();
    let watcher = watched_repo(&repo);
    // Stopped, the watcher reads nothing: the burst overflows the kernel's queue
    // (`max_queued_events`, 16384 by default) for certain.
    // The directory is watched once a save has asked about it.
    repo.write("burst/keep.txt", b"keep\n");
    assert!(watched_save(&repo, "burst directory").saved());
    kill(watcher.pid, "STOP");
    let burst = repo.p("burst");
    for i in 0..34_000 {
        let path = burst.join(format!("f{i}"));
        std::fs::write(&path, b"x").unwrap();
        if i % 1000 != 0 {
            std::fs::remove_file(&path).unwrap();
        }
    }
    kill(watcher.pid, "CONT");
    let save = traced_save(&repo, "after the burst");
    assert!(
        save.saved() && save.ran("walk") && !save.ran("watch"),
        "lost events must make the save walk\n{}",
        save.out
    );
    // The watcher recovered: the next change goes through it again.
    repo.write("burst/after.txt", b"after\n");
    repo.remove("burst/f0");
    let save = watched_save(&repo, "after the recovery");
    assert!(save.saved(), "{}", save.out);
    assert_walk_agrees(&repo, watcher);
}

#[test]
fn a_killed_watcher_makes_the_save_walk_and_a_new_one_starts() {
    let repo = Repo::new();
    let watcher = watched_repo(&repo);
    kill(watcher.pid, "KILL");
    wait_until("the watcher is dead", || !alive(watcher.pid));
    repo.write("a/one.txt", b"changed with no watcher\n");
    let save = traced_save(&repo, "no watcher");
    assert!(save.saved() && save.ran("walk"), "{}", save.out);
    assert!(repo.ok(&["save"]).stdout.contains("Nothing changed"));
    // Its stale pid file and socket do not stop a new watcher.
    let again = Watcher::start(&repo, &[]);
    assert_ne!(again.pid, watcher.pid);
    // Dropping the dead one would stop the new one.
    std::mem::forget(watcher);
    repo.write("b/three.txt", b"seen by the new watcher\n");
    let save = traced_save(&repo, "new watcher primes");
    assert!(save.saved(), "{}", save.out);
    repo.write("b/four.txt", b"four\n");
    let save = watched_save(&repo, "new watcher");
    assert!(save.saved(), "{}", save.out);
    assert_walk_agrees(&repo, again);
}

#[test]
fn one_watcher_per_worktree_and_stop_stops_it() {
    let repo = Repo::new();
    repo.write("f.txt", b"f\n");
    let watcher = Watcher::start(&repo, &[]);
    let second = repo.run(&["watch"]);
    assert_ne!(second.code, 0, "{second}");
    assert!(second.stderr.contains("already running"), "{second}");
    let stop = repo.ok(&["watch", "--stop"]);
    assert!(stop.stdout.contains("Stopped the watcher"), "{stop}");
    wait_until("the watcher exits", || !alive(watcher.pid));
    assert!(!repo.git_dir().join("checkpoint/watch/socket").exists());
    assert!(!repo.git_dir().join("checkpoint/watch/pid").exists());
    let again = repo.ok(&["watch", "--stop"]);
    assert!(again.stdout.contains("No watcher was running"), "{again}");
}

#[test]
fn the_watcher_exits_when_its_worktree_is_removed() {
    let repo = Repo::new();
    repo.write("f.txt", b"f\n");
    let watcher = Watcher::start(&repo, &[]);
    std::fs::remove_dir_all(&repo.dir).unwrap();
    wait_until("the watcher exits", || !alive(watcher.pid));
}

#[test]
fn save_after_quiet_time_makes_a_checkpoint_with_its_meta() {
    let repo = Repo::new();
    repo.write("f.txt", b"f\n");
    repo.save("start");
    let watcher = Watcher::start(&repo, &["--save-after", "300ms", "--meta", "by=watch"]);
    repo.write("g.txt", b"g\n");
    wait_until("a checkpoint is saved", || repo.log_json(false).len() == 2);
    let log = repo.log_json(false);
    let newest = &log[0];
    assert_eq!(newest["meta"]["by"], "watch", "{newest}");
    drop(watcher);
    let after = repo.ok(&["save"]);
    assert!(after.stdout.contains("Nothing changed"), "{after}");
}
