//! A read command closes the store before it shows its output: a pager the user left
//! open (or a terminal that does not take the output) must not keep a save or an
//! agent's hook waiting for the store. The pager runs on a real pseudo-terminal made by
//! `script(1)` and never reads its input, as a user who walked away from `less` does.

use crate::common;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::{run_cmd, run_cmd_with_input, Repo};
use serde_json::json;

/// A pager that never reads its input, as a user who walked away from `less` is: it
/// writes its process id to `pid_file` (`exec` keeps the id) and sleeps past the test.
fn stalled_pager(pid_file: &Path) -> String {
    format!("echo $$ > '{}'; exec sleep 600", pid_file.display())
}

/// How long a writer may take while the read command still shows its output: well
/// under the 60 s a stuck hook waited, and more than the 2 s lock timeout set here, so a
/// writer that had to wait for the lock fails instead of merely being slow.
const PROMPT: Duration = Duration::from_secs(10);

/// A read command showing its output in a pager that does not read.
struct Paged {
    /// `script(1)` running the command.
    script: Child,
    /// The pager's process id.
    pager: i32,
}

impl Paged {
    /// Runs `args` on a pseudo-terminal and returns once its pager runs, so the command
    /// has reached its output.
    fn start(repo: &Repo, args: &str) -> Paged {
        let pid_file = repo.sb.root.join("pager.pid");
        let mut script = common::terminal_cmd(repo, &format!("{} {args}", common::BIN))
            .env("GIT_PAGER", stalled_pager(&pid_file))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("script(1) starts");
        let started = Instant::now();
        let pager = loop {
            if let Some(status) = script.try_wait().unwrap() {
                panic!("{args} ended ({status}) before its pager ran");
            }
            let written = std::fs::read_to_string(&pid_file).unwrap_or_default();
            if let Ok(pid) = written.trim().parse::<i32>() {
                break pid;
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "{args}: no pager started"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        Paged { script, pager }
    }

    /// Whether the command still runs (it waits for its pager).
    fn running(&mut self) -> bool {
        self.script.try_wait().unwrap().is_none()
    }
}

impl Drop for Paged {
    /// Kills the pager; the command and `script` then end by themselves.
    fn drop(&mut self) {
        // SAFETY: kill(2) of the pager this test started; no memory is involved.
        unsafe {
            libc::kill(self.pager, libc::SIGKILL);
        }
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.running() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.script.kill();
        let _ = self.script.wait();
    }
}

/// A history with something for `show` and `diff` to show, and a 2 s lock timeout.
fn history() -> Repo {
    let repo = Repo::new();
    repo.git(&["config", "checkpoint.lockTimeout", "2"]);
    repo.write("a.txt", b"one\n");
    repo.save("first");
    repo.write("a.txt", b"two\n");
    repo.save("second");
    repo
}

/// While `args` sits in a stalled pager, a save and a hook both save at once.
fn writers_are_not_held_up_by(args: &str) {
    writers_are_not_held_up_in(history(), args);
}

/// As [`writers_are_not_held_up_by`], in `repo`.
fn writers_are_not_held_up_in(repo: Repo, args: &str) {
    let mut paged = Paged::start(&repo, args);

    repo.write("a.txt", b"three\n");
    let save = run_cmd(
        repo.sb.bin_cmd(&repo.dir, &["save", "-m", "x"]),
        PROMPT + Duration::from_secs(5),
    );
    assert!(
        save.code == 0 && save.elapsed() < PROMPT,
        "{args}: save waited for the pager ({:?})\n{save}",
        save.elapsed()
    );

    repo.write("a.txt", b"four\n");
    let payload = json!({
        "session_id": "pager-session",
        "cwd": repo.dir,
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "echo four > a.txt", "description": "edit"},
        "tool_response": {"stdout": "", "stderr": "", "interrupted": false}
    });
    let out = run_cmd_with_input(
        repo.sb.bin_cmd(&repo.dir, &["hooks", "run", "claude"]),
        Some(payload.to_string().as_bytes()),
        PROMPT + Duration::from_secs(5),
    );
    assert!(
        out.code == 0 && out.elapsed() < PROMPT,
        "{args}: the hook waited for the pager ({:?})\n{out}",
        out.elapsed()
    );
    // The command still waits for its pager: the writers ran while it was open.
    assert!(paged.running(), "{args}: the pager ended early");
    drop(paged);

    let log = repo.log_json(false);
    let messages: Vec<&str> = log.iter().filter_map(|c| c["message"].as_str()).collect();
    assert_eq!(
        messages[..2],
        ["after Bash: echo four > a.txt", "x"],
        "{args}: the writers did not save"
    );
    assert_eq!(log[0]["meta"]["session"], "pager-session", "{args}");
}

#[test]
fn log_in_a_stalled_pager_holds_no_store() {
    writers_are_not_held_up_by("log");
}

/// `log` streams its lines to the pager as it makes them; a log longer than a pipe holds
/// fills the pipe to a pager that does not read while lines are still to be made. The
/// store is still closed once the last line is made, not once the pager has taken it.
#[test]
fn a_log_longer_than_the_pipe_in_a_stalled_pager_holds_no_store() {
    let repo = history();
    // 12 lines of 12 KiB each: well past the 64 KiB a pipe holds.
    let long = "long message ".repeat(1000);
    for i in 0..12 {
        repo.write("a.txt", format!("long {i}\n").as_bytes());
        repo.save(&format!("{i} {long}"));
    }
    writers_are_not_held_up_in(repo, "log --graph --all");
}

#[test]
fn log_graph_in_a_stalled_pager_holds_no_store() {
    writers_are_not_held_up_by("log --graph --all");
}

#[test]
fn show_in_a_stalled_pager_holds_no_store() {
    writers_are_not_held_up_by("show @");
}

#[test]
fn diff_in_a_stalled_pager_holds_no_store() {
    writers_are_not_held_up_by("diff @~1 @");
}

#[test]
fn diff_against_the_worktree_in_a_stalled_pager_holds_no_store() {
    writers_are_not_held_up_by("diff");
}
