//! `browse` in a real terminal: tmux runs a shell on a pseudo-terminal of 120 by 40,
//! the test types into it (`send-keys`) and reads the screen (`capture-pane`), driving
//! the real binary on a real repository. Every wait polls the screen until the text is
//! there (or fails after a minute with the screen in the message); nothing is timed.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common;
use common::{run_cmd, Repo, DEFAULT_TIMEOUT};

/// One tmux server of our own (its own socket, no configuration file) with one window
/// running an interactive shell in the worktree.
struct Tmux {
    socket: PathBuf,
}

impl Tmux {
    fn start(repo: &Repo, env: &[(&str, &str)]) -> Tmux {
        let socket = repo.scratch("tmux").join("socket");
        let mut command = Command::new("tmux");
        repo.sb.isolate(&mut command);
        command
            .args(["-S"])
            .arg(&socket)
            .args([
                "-f",
                "/dev/null",
                "new-session",
                "-d",
                "-x",
                "120",
                "-y",
                "40",
                "-c",
            ])
            .arg(&repo.dir)
            .args(["bash", "--norc", "--noprofile"])
            .env("PS1", "ready$ ")
            .env("TERM", "xterm-256color");
        for (k, v) in env {
            command.env(k, v);
        }
        let out = run_cmd(command, DEFAULT_TIMEOUT);
        assert_eq!(out.code, 0, "tmux new-session: {}", out.stderr);
        let tmux = Tmux { socket };
        tmux.wait_for("ready$");
        tmux
    }

    fn tmux(&self, args: &[&str]) -> String {
        let mut command = Command::new("tmux");
        command.arg("-S").arg(&self.socket).args(args);
        let out = run_cmd(command, DEFAULT_TIMEOUT);
        assert_eq!(out.code, 0, "tmux {args:?}: {}", out.stderr);
        out.stdout
    }

    /// Types `text` as it is.
    fn type_text(&self, text: &str) {
        self.tmux(&["send-keys", "-l", text]);
    }

    /// Presses keys by tmux's names (`Enter`, `C-c`, `j`).
    fn press(&self, key: &str) {
        self.tmux(&["send-keys", key]);
    }

    fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p"])
    }

    /// Waits until the screen shows `text`, and returns the screen.
    #[track_caller]
    fn wait_for(&self, text: &str) -> String {
        let start = Instant::now();
        loop {
            let screen = self.screen();
            if screen.contains(text) {
                return screen;
            }
            assert!(
                start.elapsed() < DEFAULT_TIMEOUT,
                "waited for {text:?}; the screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Whether the program running shows the alternate screen (a full-screen UI).
    fn alternate_screen(&self) -> bool {
        self.tmux(&["display-message", "-p", "#{alternate_on}"])
            .trim()
            == "1"
    }

    /// Checks, from the shell, that the terminal is back in its normal (cooked) mode:
    /// lines are edited and echoed, as before `browse` took it.
    #[track_caller]
    fn assert_terminal_restored(&self) {
        // The program leaves the alternate screen as it exits: wait for that, as for
        // any text on the screen.
        let start = Instant::now();
        while self.alternate_screen() {
            assert!(start.elapsed() < DEFAULT_TIMEOUT, "{}", self.screen());
            std::thread::sleep(Duration::from_millis(50));
        }
        let cursor = self.tmux(&["display-message", "-p", "#{cursor_flag}"]);
        assert_eq!(cursor.trim(), "1", "the cursor is hidden");
        // The quotes keep the typed command from matching what it prints.
        self.type_text("stty -a | tr ' ' '\\n' | grep -x -e -icanon -e icanon -e -echo -e echo | tr '\\n' ' '; echo 'MO''DES'");
        self.press("Enter");
        let screen = self.wait_for("MODES");
        assert!(screen.contains("icanon echo MODES"), "{screen}");
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .status();
    }
}

/// Two checkpoints of `a.txt` ("one", then "two"), and "three" unsaved in the worktree.
fn history() -> Repo {
    let repo = Repo::new();
    repo.write("a.txt", b"one\n");
    repo.save_forced("first");
    repo.write("a.txt", b"two\n");
    repo.save_forced("second");
    repo.write("a.txt", b"three\n");
    repo
}

fn start_browse(repo: &Repo, env: &[(&str, &str)]) -> Tmux {
    let tmux = Tmux::start(repo, env);
    tmux.type_text(&format!("{} browse", common::BIN));
    tmux.press("Enter");
    tmux.wait_for("Checkpoints (2)");
    tmux
}

#[test]
fn navigate_show_a_diff_restore_with_confirmation_and_quit() {
    let repo = history();
    let tmux = start_browse(&repo, &[]);
    assert!(tmux.alternate_screen());
    // The newest is selected, its diff beside the list.
    tmux.wait_for("+two");
    tmux.press("j");
    let screen = tmux.wait_for("+one");
    assert!(screen.contains("show "), "{screen}");
    // A restore asks first; anything but y leaves everything as it was.
    tmux.press("r");
    tmux.wait_for("Restore the worktree to checkpoint");
    tmux.press("n");
    tmux.wait_for("Cancelled");
    assert_eq!(repo.read_string("a.txt"), "three\n");
    tmux.press("r");
    tmux.wait_for("Restore the worktree to checkpoint");
    tmux.press("y");
    let screen = tmux.wait_for("Restored checkpoint");
    assert_eq!(repo.read_string("a.txt"), "one\n");
    // The unsaved "three" went into a safety checkpoint first, as `restore` does; the
    // list is read again and shows it.
    tmux.wait_for("Checkpoints (3)");
    let safety = screen
        .split("unsaved changes saved as ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no safety checkpoint named:\n{screen}"))
        .to_string();
    tmux.press("q");
    tmux.assert_terminal_restored();
    repo.ok(&["restore", &safety]);
    assert_eq!(repo.read_string("a.txt"), "three\n");
}

#[test]
fn ctrl_c_leaves_the_terminal_as_it_was() {
    let repo = history();
    let tmux = start_browse(&repo, &[]);
    tmux.press("C-c");
    tmux.assert_terminal_restored();
    assert_eq!(repo.read_string("a.txt"), "three\n");
}

#[test]
fn a_panic_restores_the_terminal_and_is_reported() {
    let repo = history();
    let tmux = start_browse(&repo, &[("GIT_CHECKPOINT_PANIC", "browse-key")]);
    tmux.press("j");
    let screen = tmux.wait_for("internal error");
    assert!(screen.contains("test panic at browse-key"), "{screen}");
    tmux.assert_terminal_restored();
}

#[test]
fn off_a_terminal_browse_refuses_in_one_line() {
    let repo = history();
    let out = repo.run(&["browse"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);
    assert!(
        out.stderr.contains("browse needs a terminal"),
        "{}",
        out.stderr
    );
    assert!(out.stdout.is_empty());
}
