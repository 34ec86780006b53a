//! The watchers hook runs start, across the worktrees of one user (issue 34, finding 11):
//! together they take at most a quarter of the user's inotify instances and watches, so
//! that other programs can still watch files; when the share is taken the watcher idle
//! longest makes room, else the hook run starts none (its saves walk); a worktree too big
//! for the share gets no watcher.
//!
//! The limits are lowered for real, in a user namespace of the test's own (`unshare
//! --user --map-root-user`, whose root may lower `/proc/sys/user/max_inotify_*`): hook
//! runs, their watchers and the program that counts what is left all run in it
//! (`nsenter`), so the kernel itself counts and refuses, and no other test's watcher is
//! counted. Where no user namespace can be made, the tests fail unless
//! `GIT_CHECKPOINT_TEST_SKIP_WATCH_USERNS=<reason>` allows the skip. Each worktree of a
//! test is in one sandbox (one HOME: one registry of hook-started watchers), and every
//! watcher is stopped, or killed, when the test ends.

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::cmd_watch::{alive, wait_until};
use crate::cmd_watch_auto::{auto_start_said, ping_at, watchers_of};
use common::{Out, Sandbox};
use serde_json::json;

/// A user namespace whose inotify limits are lowered, kept alive by a process in it.
struct Namespace {
    holder: Child,
}

impl Namespace {
    /// A namespace allowing `instances` inotify instances and `watches` watches; `None`
    /// (after the skip is allowed) where none can be made.
    fn new(instances: u64, watches: u64) -> Option<Namespace> {
        let script = format!(
            "echo {instances} > /proc/sys/user/max_inotify_instances && \
             echo {watches} > /proc/sys/user/max_inotify_watches && echo ready && exec sleep 600"
        );
        let holder = Command::new("unshare")
            .args(["--user", "--map-root-user", "sh", "-c", &script])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn();
        let mut namespace = Namespace {
            holder: holder.ok()?,
        };
        let mut line = String::new();
        let ready = namespace
            .holder
            .stdout
            .take()
            .is_some_and(|out| BufReader::new(out).read_line(&mut line).is_ok());
        if ready && line.trim() == "ready" {
            return Some(namespace);
        }
        drop(namespace);
        common::skip_only_if_allowed(
            "WATCH_USERNS",
            "a user namespace with lowered inotify limits cannot be made here (unshare --user)",
        );
        None
    }

    /// `cmd`, run in the namespace (its program, arguments, environment and directory).
    fn wrap(&self, cmd: &Command) -> Command {
        let mut wrapped = Command::new("nsenter");
        wrapped
            .arg("--target")
            .arg(self.holder.id().to_string())
            .args(["--user", "--preserve-credentials", "--"])
            .arg(cmd.get_program())
            .args(cmd.get_args());
        for (key, value) in cmd.get_envs() {
            match value {
                Some(value) => wrapped.env(key, value),
                None => wrapped.env_remove(key),
            };
        }
        if let Some(dir) = cmd.get_current_dir() {
            wrapped.current_dir(dir);
        }
        wrapped
    }

    /// How many inotify instances a program in the namespace can still make, trying up
    /// to `most`.
    fn instances_left(&self, most: u64) -> u64 {
        let script = format!(
            "import ctypes\n\
             libc = ctypes.CDLL(None, use_errno=True)\n\
             made = [fd for fd in (libc.inotify_init1(0) for _ in range({most})) if fd >= 0]\n\
             print(len(made))\n"
        );
        let mut cmd = Command::new("python3");
        cmd.args(["-c", &script]);
        let out = common::run_cmd(self.wrap(&cmd), common::DEFAULT_TIMEOUT);
        assert_eq!(out.code, 0, "{out}");
        out.stdout.trim().parse().expect("a count")
    }
}

impl Drop for Namespace {
    fn drop(&mut self) {
        let _ = self.holder.kill();
        let _ = self.holder.wait();
    }
}

/// Worktrees of one user, each saved once; their watchers are stopped (killed if need
/// be) when dropped.
struct Worktrees {
    sb: Sandbox,
    dirs: Vec<PathBuf>,
}

impl Worktrees {
    /// `count` worktrees, each with `subdirs` directories besides its top.
    fn new(count: usize, subdirs: usize) -> Worktrees {
        let sb = Sandbox::new();
        let dirs: Vec<PathBuf> = (0..count)
            .map(|i| {
                let dir = sb.init_repo(&format!("w{i}"));
                for d in 0..subdirs {
                    common::write_file(&dir.join(format!("d{d:03}/f.txt")), b"f\n", false);
                }
                common::write_file(&dir.join("f.txt"), b"one\n", false);
                sb.ok_in(&dir, &["save", "-q", "-m", "start"]);
                dir
            })
            .collect();
        Worktrees { sb, dirs }
    }

    /// One Claude Code tool step in worktree `i` through `hooks run claude`, traced,
    /// with hook runs starting watchers, in `namespace`, with `env` besides.
    #[track_caller]
    fn hook_run(&self, i: usize, namespace: &Namespace, env: &[(&str, &str)]) -> Out {
        let dir = &self.dirs[i];
        let payload = json!({
            "session_id": format!("s{i}"),
            "hook_event_name": "PostToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "make"},
            "tool_use_id": "toolu_1",
            "cwd": dir,
        });
        let mut cmd = self.sb.bin_cmd(dir, &["hooks", "run", "claude"]);
        cmd.env("GIT_CONFIG_VALUE_0", "true")
            .env("GIT_CHECKPOINT_TRACE", "1")
            .envs(env.iter().copied());
        let out = common::run_cmd_with_input(
            namespace.wrap(&cmd),
            Some(payload.to_string().as_bytes()),
            common::DEFAULT_TIMEOUT,
        );
        assert_eq!((out.code, out.stdout.as_str()), (0, ""), "{out}");
        out
    }

    /// The pid of the watcher of worktree `i` once it answers.
    #[track_caller]
    fn running(&self, i: usize) -> u32 {
        let git_dir = self.dirs[i].join(".git");
        let mut pid = None;
        wait_until("the watcher answers", || {
            pid = ping_at(&git_dir)
                .and_then(|reply| reply.strip_prefix("watching ")?.trim().parse().ok());
            pid.is_some()
        });
        pid.unwrap()
    }

    /// The worktrees a watcher runs for.
    fn watched(&self) -> Vec<usize> {
        (0..self.dirs.len())
            .filter(|&i| !watchers_of(&self.dirs[i]).is_empty())
            .collect()
    }

    fn watch_log(&self, i: usize) -> String {
        std::fs::read_to_string(self.dirs[i].join(".git/checkpoint/watch/log")).unwrap_or_default()
    }
}

impl Drop for Worktrees {
    fn drop(&mut self) {
        for dir in &self.dirs {
            let _ = common::run_cmd(
                self.sb.bin_cmd(dir, &["watch", "--stop"]),
                common::DEFAULT_TIMEOUT,
            );
            for pid in watchers_of(dir) {
                let _ = Command::new("kill")
                    .arg("-KILL")
                    .arg(pid.to_string())
                    .status();
            }
        }
    }
}

/// Hook runs in six worktrees under a limit of 8 inotify instances: two watchers start
/// (a quarter), the other hook runs start none and still save, and other programs can
/// still make the 6 instances left. (Without the share: six watchers, and two left.)
#[test]
fn hook_started_watchers_leave_other_programs_their_inotify_instances() {
    let Some(namespace) = Namespace::new(8, 100_000) else {
        return;
    };
    let worktrees = Worktrees::new(6, 0);
    let mut said = Vec::new();
    for i in 0..worktrees.dirs.len() {
        let out = worktrees.hook_run(i, &namespace, &[]);
        let what = auto_start_said(&out).to_string();
        if what.starts_with("Started") {
            worktrees.running(i);
        }
        said.push(what);
    }
    let left = namespace.instances_left(8);
    assert!(
        left >= 6,
        "only {left} of 8 inotify instances were left to other programs; the hook runs said {said:#?}"
    );
    assert_eq!(worktrees.watched(), [0, 1], "{said:#?}");
    assert!(
        said[2..].iter().all(|s| s.starts_with("OverShare")),
        "{said:#?}"
    );
    for dir in &worktrees.dirs {
        let log = worktrees.sb.ok_in(dir, &["log", "--json"]);
        let log: serde_json::Value = serde_json::from_str(&log.stdout).unwrap();
        assert_eq!(
            log.as_array().map(Vec::len),
            Some(2),
            "every hook run saved"
        );
    }
}

/// With the share taken, a new worktree's hook run asks the watcher idle longest to make
/// room (once idle for the eviction time, lowered here to 1.5 s) and starts its own; the
/// watcher of a worktree in use stays.
#[test]
fn the_watcher_idle_longest_makes_room_for_another_worktree() {
    let Some(namespace) = Namespace::new(8, 100_000) else {
        return;
    };
    let worktrees = Worktrees::new(3, 0);
    let evict = [("GIT_CHECKPOINT_WATCH_EVICT_IDLE_MS", "1500")];
    worktrees.hook_run(0, &namespace, &evict);
    let first = worktrees.running(0);
    std::thread::sleep(Duration::from_millis(2000));
    worktrees.hook_run(1, &namespace, &evict);
    let second = worktrees.running(1);
    let third = worktrees.hook_run(2, &namespace, &evict);
    assert!(
        auto_start_said(&third).starts_with("Started"),
        "no room was made for the third worktree's watcher\n{third}"
    );
    worktrees.running(2);
    wait_until("the idle watcher makes room", || !alive(first));
    assert!(alive(second), "the watcher of the worktree in use stopped");
    assert_eq!(worktrees.watched(), [1, 2]);
    assert!(
        worktrees.watch_log(0).contains("Made room"),
        "{}",
        worktrees.watch_log(0)
    );
}

/// A worktree with more directories than the share of watches (40 allowed: 10 for
/// hook-started watchers; the worktree has 21): its watcher stops and says why, and the
/// next hook run starts none, its save walking.
#[test]
fn a_worktree_with_more_directories_than_the_share_gets_no_watcher() {
    let Some(namespace) = Namespace::new(128, 40) else {
        return;
    };
    let worktrees = Worktrees::new(1, 20);
    let first = worktrees.hook_run(0, &namespace, &[]);
    if let Some(pid) = auto_start_said(&first)
        .strip_prefix("Started { pid: ")
        .and_then(|rest| rest.trim_end_matches(" }").parse::<u32>().ok())
    {
        wait_until("the watcher stops", || !alive(pid));
    }
    assert!(worktrees.watched().is_empty(), "a watcher still runs");
    let log = worktrees.watch_log(0);
    assert!(log.contains("This worktree has 21 directories"), "{log}");
    let next = worktrees.hook_run(0, &namespace, &[]);
    assert!(
        auto_start_said(&next).starts_with("OverShare"),
        "the next hook run started another watcher\n{next}"
    );
    assert!(worktrees.watched().is_empty());
}
