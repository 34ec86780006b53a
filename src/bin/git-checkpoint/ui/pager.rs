//! Paging long output on a terminal, as git does: through `GIT_PAGER`, else the
//! `core.pager` setting, else `PAGER`, else `less`, started with `LESS=FRX` and `LV=-c`
//! unless those are set, so that output shorter than a screen prints as if no pager ran.
//! Never when stdout is not a terminal, and not when the pager is empty or `cat`.

use std::io::{IsTerminal, Write};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;

use git_checkpoint::git::repo::Repo;

/// A running pager that receives everything written to stdout. Dropping it closes the
/// pipe and waits until the user quits the pager.
pub struct Pager {
    child: Child,
}

impl Pager {
    /// Starts the configured pager and points stdout at it, if stdout is a terminal and
    /// a pager is configured. A pager that cannot be started is skipped silently, as the
    /// output is still shown.
    pub fn start(repo: &Repo) -> Option<Pager> {
        Pager::spawn(&Pager::command(repo)?)
    }

    /// The pager to start, if stdout is a terminal and a pager is configured.
    pub fn command(repo: &Repo) -> Option<String> {
        if !std::io::stdout().is_terminal() {
            return None;
        }
        choose(
            std::env::var("GIT_PAGER").ok().as_deref(),
            repo.config("core.pager"),
            std::env::var("PAGER").ok().as_deref(),
        )
    }

    /// Starts `command` (from [`Pager::command`]) and points stdout at it.
    pub fn spawn(command: &str) -> Option<Pager> {
        let mut shell = Command::new("sh");
        shell.arg("-c").arg(command).stdin(Stdio::piped());
        if std::env::var_os("LESS").is_none() {
            shell.env("LESS", "FRX");
        }
        if std::env::var_os("LV").is_none() {
            shell.env("LV", "-c");
        }
        let mut child = shell.spawn().ok()?;
        let pipe = child.stdin.take()?;
        let _ = std::io::stdout().flush();
        // fd 1 then refers to the pipe, and `pipe` closes its own copy when dropped.
        let redirected = rustix::stdio::dup2_stdout(&pipe).is_ok();
        drop(pipe);
        if !redirected {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        // Ctrl-C while the pager shows belongs to the pager; this process ends when the
        // pager goes away (SIGPIPE on the next write), never leaving it orphaned.
        // SAFETY: only sets dispositions to SIG_IGN, so no handler code of ours ever
        // runs, and nothing reads the previous handler. (Neither rustix nor nix offers
        // a safe call for this: their signal functions take arbitrary handlers.)
        unsafe {
            libc::signal(libc::SIGINT, libc::SIG_IGN);
            libc::signal(libc::SIGQUIT, libc::SIG_IGN);
        }
        Some(Pager { child })
    }
}

impl Drop for Pager {
    fn drop(&mut self) {
        let _ = std::io::stdout().flush();
        // Replace fd 1 with /dev/null: that closes the last write end of the pipe, so
        // the pager sees the end of the output.
        if let Ok(null) = std::fs::File::open("/dev/null") {
            let _ = rustix::stdio::dup2_stdout(&null);
        }
        let _ = self.child.wait();
    }
}

/// Writes the output that arrives on `chunks`, in order, as it arrives, until every
/// sender is gone: through the pager `command` if there is one, started with the first
/// chunk (so that nothing is paged when nothing comes). Whatever has arrived while a
/// write was under way goes out in the next write, so a long output takes few writes and
/// the first lines are not held back behind the rest.
pub fn stream(command: Option<&str>, chunks: Receiver<Vec<u8>>) -> std::io::Result<()> {
    let Ok(mut pending) = chunks.recv() else {
        return Ok(());
    };
    let _pager = command.and_then(Pager::spawn);
    let mut out = std::io::stdout().lock();
    loop {
        while let Ok(more) = chunks.try_recv() {
            pending.extend_from_slice(&more);
        }
        out.write_all(&pending)?;
        out.flush()?;
        match chunks.recv() {
            Ok(next) => pending = next,
            Err(_) => return Ok(()),
        }
    }
}

/// The pager command from `GIT_PAGER`, `core.pager` and `PAGER`, first set wins, with
/// `less` as the default; `None` when it is empty or `cat` (git's "no pager").
pub fn choose(
    git_pager: Option<&str>,
    core_pager: Option<&str>,
    pager: Option<&str>,
) -> Option<String> {
    let command = git_pager.or(core_pager).or(pager).unwrap_or("less").trim();
    (!command.is_empty() && command != "cat").then(|| command.to_string())
}

#[cfg(test)]
mod tests {
    use super::choose;

    #[test]
    fn the_pager_is_chosen_as_git_chooses_it() {
        assert_eq!(choose(None, None, None).as_deref(), Some("less"));
        assert_eq!(choose(None, None, Some("more")).as_deref(), Some("more"));
        assert_eq!(
            choose(None, Some("most"), Some("more")).as_deref(),
            Some("most")
        );
        assert_eq!(
            choose(Some("lv"), Some("most"), Some("more")).as_deref(),
            Some("lv")
        );
        assert_eq!(choose(Some(""), Some("most"), None), None);
        assert_eq!(choose(None, Some("cat"), Some("more")), None);
    }
}
