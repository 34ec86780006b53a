//! The `git-checkpoint` binary: `cli.rs` parses arguments and hands each subcommand to
//! its file in `commands/`, which reports through `ui/`. All logic lives in the `git_checkpoint`
//! library.

mod cli;
mod commands;
mod ui;

use clap::Parser;
use git_checkpoint::format::text::escape_controls_keeping_lines;

fn main() {
    // Behave like other Unix tools when the reader of our output goes away (`| head`).
    // SAFETY: resetting a signal disposition to its default at startup, before any thread.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    std::panic::set_hook(Box::new(report_panic));
    let cli = cli::Cli::parse();
    let span = git_checkpoint::trace::span("command");
    let result = cli::run(cli);
    drop(span);
    let code = match result {
        Ok(()) => 0,
        Err(error) => {
            let lib_error = error.downcast_ref::<git_checkpoint::Error>();
            // An error may quote a revision, a name or a message as it was given.
            match lib_error {
                // git's own wording already starts with "fatal:".
                Some(git_checkpoint::Error::NotAWorktree(msg)) => {
                    eprintln!("{}", escape_controls_keeping_lines(msg))
                }
                _ => eprintln!(
                    "error: {}",
                    escape_controls_keeping_lines(&format!("{error:#}"))
                ),
            }
            lib_error.map_or(1, git_checkpoint::Error::exit_code)
        }
    };
    std::process::exit(code);
}

/// Ends the process at a panic with one clear line instead of a backtrace. The storage
/// engine panics on some kinds of damage to its file; that is a damaged store, not a bug
/// of ours, and exits like any other error. Exiting here, without unwinding, also keeps a
/// half-done transaction from being touched again: like a crash, it is simply never
/// committed.
fn report_panic(info: &std::panic::PanicHookInfo<'_>) {
    let message = info
        .payload()
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| info.payload().downcast_ref::<String>().cloned())
        .unwrap_or_default();
    let in_storage_engine = info.location().is_some_and(|l| l.file().contains("/redb-"));
    if in_storage_engine {
        eprintln!("error: the store is damaged and cannot be read ({message})");
        std::process::exit(1);
    }
    let location = info.location().map(|l| l.to_string()).unwrap_or_default();
    eprintln!("error: internal error at {location}: {message}; please report this");
    std::process::exit(101);
}
