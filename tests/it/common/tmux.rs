//! A real terminal for the tests: tmux runs a shell on a pseudo-terminal of 120 by 40 (or
//! wider),
//! a test types into it (`send-keys`) and reads the screen (`capture-pane`). Every wait
//! polls the screen until the text is there (or fails after a minute with the screen in
//! the message); nothing is timed.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use super::{run_cmd, Repo, DEFAULT_TIMEOUT};

/// One tmux server of our own (its own socket, no configuration file) with one window
/// running an interactive shell in the worktree; killed when dropped.
pub struct Tmux {
    socket: PathBuf,
}

impl Tmux {
    pub fn start(repo: &Repo, env: &[(&str, &str)]) -> Tmux {
        Tmux::start_with_width(repo, env, 120)
    }

    /// [`Tmux::start`] on a terminal `width` columns wide.
    pub fn start_with_width(repo: &Repo, env: &[(&str, &str)], width: u16) -> Tmux {
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
                &width.to_string(),
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

    pub fn tmux(&self, args: &[&str]) -> String {
        let mut command = Command::new("tmux");
        command.arg("-S").arg(&self.socket).args(args);
        let out = run_cmd(command, DEFAULT_TIMEOUT);
        assert_eq!(out.code, 0, "tmux {args:?}: {}", out.stderr);
        out.stdout
    }

    /// Types `text` as it is.
    pub fn type_text(&self, text: &str) {
        self.tmux(&["send-keys", "-l", text]);
    }

    /// Presses keys by tmux's names (`Enter`, `C-c`, `j`).
    pub fn press(&self, key: &str) {
        self.tmux(&["send-keys", key]);
    }

    pub fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p"])
    }

    /// Waits until the screen shows `text`, and returns the screen.
    #[track_caller]
    pub fn wait_for(&self, text: &str) -> String {
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
    pub fn alternate_screen(&self) -> bool {
        self.tmux(&["display-message", "-p", "#{alternate_on}"])
            .trim()
            == "1"
    }

    /// Checks, from the shell, that the terminal is back in its normal (cooked) mode:
    /// lines are edited and echoed, as before `browse` took it.
    #[track_caller]
    pub fn assert_terminal_restored(&self) {
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
