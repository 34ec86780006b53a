//! The `git-checkpoint` binary: `cli.rs` parses arguments and hands each subcommand to
//! its file in `commands/`, which reports through `ui/`. All logic lives in the `git_checkpoint`
//! library.

mod browse;
mod cli;
mod commands;
mod complete;
mod ui;

use clap::Parser;
use git_checkpoint::error::ErrorKind;
use git_checkpoint::format::text::escape_controls_keeping_lines;

fn main() {
    // Behave like other Unix tools when the reader of our output goes away (`| head`).
    // SAFETY: resetting a signal disposition to its default at startup, before any thread.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    std::panic::set_hook(Box::new(report_panic));
    // A completion script calling back for candidates: answered before parsing.
    complete::answer_if_asked();
    let cli = cli::Cli::parse();
    let span = git_checkpoint::trace::span("command");
    let result = cli::run(cli);
    drop(span);
    let code = match result {
        Ok(()) => 0,
        Err(error) => report_error(&error),
    };
    std::process::exit(code);
}

/// Prints `error` as one line on stderr, with what to do about it when its kind says,
/// and returns the exit status: 128 outside a worktree, as git does; 101 for a bug of
/// ours, as for a panic; 1 for every other error (docs/design.md invariant 7). An error
/// the library did not make (clap's, the binary's own) has no kind and exits 1.
fn report_error(error: &anyhow::Error) -> i32 {
    let lib_error = error.downcast_ref::<git_checkpoint::Error>();
    // git's own wording already starts with "fatal:".
    if let Some(git_checkpoint::Error::NotAWorktree(msg)) = lib_error {
        eprintln!("{}", escape_controls_keeping_lines(msg));
        return 128;
    }
    let kind = lib_error.map(git_checkpoint::Error::kind);
    let hint = match kind {
        Some(ErrorKind::Damaged) => format!("; {RUN_VERIFY}"),
        Some(ErrorKind::Internal) => format!("; {REPORT_IT}"),
        _ => String::new(),
    };
    // An error may quote a revision, a name or a message as it was given.
    eprintln!(
        "error: {}{hint}",
        escape_controls_keeping_lines(&format!("{error:#}"))
    );
    match kind {
        Some(ErrorKind::Internal) => 101,
        _ => 1,
    }
}

/// What to do about a damaged store: verify lists every damaged record and the
/// checkpoints it affects.
const RUN_VERIFY: &str = "'git checkpoint verify' names everything damaged";

/// What to do about a bug of ours.
const REPORT_IT: &str = "this is a bug in git-checkpoint, please report it";

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
        eprintln!("error: the store is damaged and cannot be read ({message}); {RUN_VERIFY}");
        std::process::exit(1);
    }
    let location = info.location().map(|l| l.to_string()).unwrap_or_default();
    eprintln!("error: internal error at {location}: {message}; {REPORT_IT}");
    std::process::exit(101);
}
