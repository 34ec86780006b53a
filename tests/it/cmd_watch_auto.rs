//! The watcher where agents work: an agent's hook run starts the worktree's watcher when
//! none runs (`checkpoint.autoWatch`, on by default, off in every other test's
//! environment), without waiting for it; the next saves go through it; it exits when the
//! worktree is idle (`checkpoint.watchIdleExit`) or removed; hook runs at the same moment
//! start one; and a restore's safety save still sees what the watcher cannot. Every
//! watcher a test starts is stopped (or killed) by a guard when the test ends.

use crate::common;

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::cmd_watch::{alive, pid_of, ran, wait_until};
use common::{Out, Repo};
use serde_json::json;

/// Stops the watcher of a worktree when dropped: `watch --stop`, then SIGKILL to every
/// process seen as its watcher that still runs.
struct Guard<'r> {
    repo: &'r Repo,
    pids: Vec<u32>,
}

impl<'r> Guard<'r> {
    fn new(repo: &'r Repo) -> Guard<'r> {
        Guard {
            repo,
            pids: Vec::new(),
        }
    }

    /// Waits (bounded) until a watcher runs and answers on its socket; remembers and
    /// returns its pid.
    #[track_caller]
    fn running(&mut self) -> u32 {
        let mut pid = None;
        wait_until("a watcher runs", || {
            pid = pid_of(self.repo).filter(|&pid| alive(pid));
            pid.is_some()
        });
        let pid = pid.unwrap();
        self.pids.push(pid);
        wait_until("the watcher answers", || {
            ping(self.repo).is_some_and(|reply| reply == format!("watching {pid}\n"))
        });
        pid
    }
}

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        if self.repo.dir.exists() {
            let _ = self.repo.run(&["watch", "--stop"]);
        }
        self.pids.extend(watchers_of(&self.repo.dir));
        for &pid in &self.pids {
            if alive(pid) {
                let _ = Command::new("kill")
                    .arg("-KILL")
                    .arg(pid.to_string())
                    .status();
            }
        }
    }
}

/// The watcher's answer to `ping` on its socket.
fn ping(repo: &Repo) -> Option<String> {
    ping_at(&repo.git_dir())
}

/// The answer to `ping` of the watcher of the repository whose git dir is `git_dir`.
pub(crate) fn ping_at(git_dir: &Path) -> Option<String> {
    use std::io::{Read, Write};
    let socket = git_dir.join("checkpoint/watch/socket");
    let mut stream = std::os::unix::net::UnixStream::connect(socket).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    stream.write_all(b"ping\n").ok()?;
    let mut reply = String::new();
    stream.read_to_string(&mut reply).ok()?;
    Some(reply)
}

/// The live processes of the binary under test that run `-C <root> watch`: the watchers
/// hook runs started for the worktree at `root`.
pub(crate) fn watchers_of(root: &Path) -> Vec<u32> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return found;
    };
    for entry in entries.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
        let is_ours = args.windows(3).any(|w| {
            w[0] == b"-C" && w[1] == root.as_os_str().as_encoded_bytes() && w[2] == b"watch"
        });
        if is_ours && alive(pid) {
            found.push(pid);
        }
    }
    found
}

/// One Claude Code tool step in `repo` through `hooks run claude`, traced, with hook runs
/// allowed to start a watcher (`auto`) or not: the test environment's
/// `checkpoint.autoWatch`, given on git's command line (`GIT_CONFIG_*`), set either way.
#[track_caller]
/// Whether a process holds the lock of `file` (the start lock a hook-started watcher
/// inherits). A watcher whose main thread is already a zombie, so not [`alive`], may
/// still hold it for a moment while its other threads exit and its files close.
fn held(file: &Path) -> bool {
    use std::os::fd::AsRawFd;
    let Ok(file) = std::fs::File::open(file) else {
        return false;
    };
    // SAFETY: flock on a descriptor this function owns for the whole call.
    let free = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_SH | libc::LOCK_NB) } == 0;
    !free
}

fn hook_run(repo: &Repo, auto: bool) -> Out {
    let payload = json!({
        "session_id": "s1",
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "make"},
        "tool_use_id": "toolu_1",
        "cwd": repo.dir,
    });
    let mut cmd = repo.sb.bin_cmd(&repo.dir, &["hooks", "run", "claude"]);
    cmd.env("GIT_CONFIG_VALUE_0", if auto { "true" } else { "false" })
        .env("GIT_CHECKPOINT_TRACE", "1");
    // The hook's output is read to its end: a watcher that kept the hook's stdout or
    // stderr open would hold this up until the timeout fails the test.
    let out = common::run_cmd_with_input(
        cmd,
        Some(payload.to_string().as_bytes()),
        common::DEFAULT_TIMEOUT,
    );
    assert_eq!((out.code, out.stdout.as_str()), (0, ""), "{out}");
    out
}

pub(crate) fn auto_start_said(out: &Out) -> &str {
    out.stderr
        .lines()
        .find_map(|line| line.strip_prefix("trace: watch: auto-start: "))
        .unwrap_or_else(|| panic!("no auto-start trace line\n{out}"))
}

#[test]
fn a_hook_run_starts_a_watcher_that_the_next_saves_use() {
    let repo = Repo::new();
    repo.write("f.txt", b"one\n");
    let mut guard = Guard::new(&repo);
    let first = hook_run(&repo, true);
    assert!(auto_start_said(&first).starts_with("Started"), "{first}");
    let pid = guard.running();

    // The next hook run finds it running, and its save asks it (and walks, recording
    // the token); the one after goes through the watcher instead of walking.
    repo.write("f.txt", b"two\n");
    let second = hook_run(&repo, true);
    assert_eq!(auto_start_said(&second), "Running", "{second}");
    assert!(ran(&second, "watch: ask"), "{second}");
    repo.write("g.txt", b"three\n");
    let third = hook_run(&repo, true);
    assert!(
        ran(&third, "watch") && !ran(&third, "walk"),
        "the hook's save did not go through the watcher\n{third}"
    );
    let log = repo.log_json(false);
    assert_eq!(log.len(), 3, "one checkpoint per hook run");

    let stop = repo.ok(&["watch", "--stop"]);
    assert!(
        stop.stdout
            .contains(&format!("Stopped the watcher (pid {pid})")),
        "{stop}"
    );
    wait_until("the watcher exits", || !alive(pid));
}

#[test]
fn with_auto_watch_false_a_hook_run_starts_none() {
    let repo = Repo::new();
    repo.write("f.txt", b"one\n");
    let _guard = Guard::new(&repo);
    // The user's own setting, in the repository's config, without the test
    // environment's.
    repo.git(&["config", "checkpoint.autoWatch", "false"]);
    let mut cmd = repo.sb.bin_cmd(&repo.dir, &["hooks", "run", "claude"]);
    for key in ["GIT_CONFIG_COUNT", "GIT_CONFIG_KEY_0", "GIT_CONFIG_VALUE_0"] {
        cmd.env_remove(key);
    }
    cmd.env("GIT_CHECKPOINT_TRACE", "1");
    let payload = json!({"session_id": "s1", "hook_event_name": "UserPromptSubmit",
                         "prompt": "go", "cwd": repo.dir});
    let out = common::run_cmd_with_input(
        cmd,
        Some(payload.to_string().as_bytes()),
        common::DEFAULT_TIMEOUT,
    );
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(auto_start_said(&out), "Off", "{out}");
    assert_eq!(repo.log_json(false).len(), 1, "the hook still saved\n{out}");
    // The start is decided before the hook exits: nothing was spawned to appear later.
    assert!(watchers_of(&repo.dir).is_empty());
    assert!(pid_of(&repo).is_none());
    let stop = repo.ok(&["watch", "--stop"]);
    assert!(stop.stdout.contains("No watcher was running"), "{stop}");

    // The default (the key unset) starts one.
    let mut guard = Guard::new(&repo);
    repo.git(&["config", "--unset", "checkpoint.autoWatch"]);
    let mut cmd = repo.sb.bin_cmd(&repo.dir, &["hooks", "run", "claude"]);
    for key in ["GIT_CONFIG_COUNT", "GIT_CONFIG_KEY_0", "GIT_CONFIG_VALUE_0"] {
        cmd.env_remove(key);
    }
    let out = common::run_cmd_with_input(
        cmd,
        Some(payload.to_string().as_bytes()),
        common::DEFAULT_TIMEOUT,
    );
    assert_eq!(out.code, 0, "{out}");
    guard.running();
}

#[test]
fn an_auto_started_watcher_exits_when_the_worktree_is_idle() {
    let repo = Repo::new();
    repo.write("f.txt", b"one\n");
    repo.git(&["config", "checkpoint.watchIdleExit", "2s"]);
    let mut guard = Guard::new(&repo);
    hook_run(&repo, true);
    let pid = guard.running();
    let start_lock = repo.git_dir().join("checkpoint/watch/start");
    wait_until("the idle watcher exits", || {
        !alive(pid) && !held(&start_lock)
    });
    let log = std::fs::read_to_string(repo.git_dir().join("checkpoint/watch/log")).unwrap();
    assert!(log.contains("Nothing happened for a while"), "{log}");
    assert!(!repo.git_dir().join("checkpoint/watch/socket").exists());
    // And the next hook run starts a new one.
    let again = hook_run(&repo, true);
    assert!(auto_start_said(&again).starts_with("Started"), "{again}");
    let second = guard.running();
    assert_ne!(second, pid);
}

#[test]
fn an_auto_started_watcher_exits_when_the_worktree_is_removed() {
    let repo = Repo::new();
    repo.write("f.txt", b"one\n");
    let mut guard = Guard::new(&repo);
    hook_run(&repo, true);
    let pid = guard.running();
    std::fs::remove_dir_all(&repo.dir).unwrap();
    wait_until("the watcher exits", || !alive(pid));
}

#[test]
fn hook_runs_at_the_same_moment_start_one_watcher() {
    let repo = Repo::new();
    repo.write("f.txt", b"one\n");
    repo.save("start");
    let mut guard = Guard::new(&repo);
    let barrier = std::sync::Barrier::new(4);
    let outs: Vec<Out> = std::thread::scope(|scope| {
        let runs: Vec<_> = (0..4)
            .map(|_| {
                scope.spawn(|| {
                    barrier.wait();
                    hook_run(&repo, true)
                })
            })
            .collect();
        runs.into_iter().map(|run| run.join().unwrap()).collect()
    });
    let started = outs
        .iter()
        .filter(|out| auto_start_said(out).starts_with("Started"))
        .count();
    assert_eq!(started, 1, "{outs:#?}");
    let pid = guard.running();
    assert_eq!(watchers_of(&repo.dir), vec![pid]);
    let log = std::fs::read_to_string(repo.git_dir().join("checkpoint/watch/log")).unwrap();
    assert!(!log.contains("already running"), "{log}");
}

/// A file of the worktree with a second name outside it: a write through that name
/// raises no event in the worktree, so the watcher cannot see it. The safety save before
/// a restore walks and keeps it; the restore does not overwrite it unsaved.
#[test]
fn a_restore_keeps_a_change_the_auto_started_watcher_cannot_see() {
    let repo = Repo::new();
    repo.write("a.txt", b"version one\n");
    let one = repo.save("one");
    let mut guard = Guard::new(&repo);
    hook_run(&repo, true);
    guard.running();
    let outside = repo.scratch("outside").join("a.txt");
    std::fs::hard_link(repo.p("a.txt"), &outside).unwrap();
    repo.write("b.txt", b"b\n");
    hook_run(&repo, true);
    repo.write("b.txt", b"bb\n");
    let watched = hook_run(&repo, true);
    assert!(
        ran(&watched, "watch") && !ran(&watched, "walk"),
        "the hook's save did not go through the watcher\n{watched}"
    );
    // A later tick of the filesystem's clock than the save's.
    std::thread::sleep(Duration::from_millis(50));
    std::fs::write(&outside, b"VERSION TWO, unsaved\n").unwrap();
    assert_eq!(repo.read_string("a.txt"), "VERSION TWO, unsaved\n");

    let restored = repo.json(&["restore", &one, "--json"]);
    let safety = restored["safety_checkpoint"].as_str().unwrap_or_default();
    assert!(
        !safety.is_empty(),
        "the restore made no safety checkpoint of the change through the other link: {restored:#}"
    );
    assert_eq!(repo.read_string("a.txt"), "version one\n");
    repo.ok(&["restore", "--no-save", safety]);
    assert_eq!(
        repo.read_string("a.txt"),
        "VERSION TWO, unsaved\n",
        "the safety checkpoint holds the change made through the other link"
    );
}

/// Finding 11 (issue 34): events on ignored files (a build writing `build/`) are no use
/// of the worktree, and do not keep an auto-started watcher from its idle exit; changes
/// to a file a save captures do.
#[test]
fn changes_to_ignored_files_do_not_keep_an_idle_watcher_alive() {
    let repo = Repo::new();
    repo.write(".gitignore", b"build/\n");
    repo.write("src.txt", b"one\n");
    std::fs::create_dir(repo.p("build")).unwrap();
    repo.git(&["config", "checkpoint.watchIdleExit", "2s"]);
    let mut guard = Guard::new(&repo);
    hook_run(&repo, true);
    let pid = guard.running();
    let write_for = |rel: &str, how_long: Duration| {
        let until = std::time::Instant::now() + how_long;
        let mut n = 0u64;
        while std::time::Instant::now() < until && alive(pid) {
            n += 1;
            repo.write(rel, format!("{n}\n").as_bytes());
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    // The control: a captured file changing keeps it for longer than its idle time.
    write_for("src.txt", Duration::from_secs(4));
    assert!(alive(pid), "the watcher exited while src.txt changed");
    // An ignored one does not: it exits while the writes go on.
    let exited = std::thread::scope(|scope| {
        let writer = scope.spawn(|| write_for("build/out.o", Duration::from_secs(20)));
        let deadline = std::time::Instant::now() + Duration::from_secs(15);
        while alive(pid) && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        let exited = !alive(pid);
        writer.join().unwrap();
        exited
    });
    assert!(
        exited,
        "the watcher still ran after 15 s of writes to build/out.o only (idle exit 2 s)"
    );
    let log = std::fs::read_to_string(repo.git_dir().join("checkpoint/watch/log")).unwrap();
    assert!(log.contains("Nothing happened for a while"), "{log}");
}

/// Issue 39, item 8: `hooks uninstall` stops the watcher hook runs started in the
/// worktree; a watcher the user started stays.
#[test]
fn hooks_uninstall_stops_the_watcher_hook_runs_started() {
    let repo = Repo::new();
    repo.write("f.txt", b"one\n");
    repo.ok(&["hooks", "install", "claude"]);
    let mut guard = Guard::new(&repo);
    hook_run(&repo, true);
    let pid = guard.running();
    let out = repo.ok(&["hooks", "uninstall", "claude"]);
    assert!(
        out.stdout.contains(&format!(
            "Stopped the watcher hook runs started (pid {pid})"
        )),
        "{out}"
    );
    wait_until("the watcher exits", || !alive(pid));

    repo.ok(&["hooks", "install", "claude"]);
    repo.ok(&["watch", "--daemon"]);
    let mine = guard.running();
    let out = repo.ok(&["hooks", "uninstall", "claude"]);
    assert!(!out.stdout.contains("Stopped the watcher"), "{out}");
    assert!(
        alive(mine),
        "uninstall stopped the watcher the user started"
    );
}
