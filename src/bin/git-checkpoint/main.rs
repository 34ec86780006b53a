//! The `git-checkpoint` binary: `cli.rs` parses arguments and hands each subcommand to
//! its file in `commands/`, which reports through `ui/`. All logic lives in the `git_checkpoint`
//! library.

mod browse;
mod cli;
mod commands;
mod complete;
mod mcp;
mod ui;

use clap::Parser;
use commands::{REPORT_IT, RUN_VERIFY};
use ui::answer::Front;

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
    let json = cli.json;
    let span = git_checkpoint::trace::span("command");
    let result = cli::run(cli);
    drop(span);
    let code = match result {
        Ok(()) => 0,
        Err(error) => report_error(&error, json),
    };
    std::process::exit(code);
}

/// Prints `error` as one line on stderr and, with `--json`, as the error document on
/// stdout unless the command printed its own; returns the exit status (see
/// [`commands::error_line`]).
fn report_error(error: &anyhow::Error, json: bool) -> i32 {
    let report = commands::error_line(error);
    eprintln!("{}", report.line(Front::Cli { colour: false }));
    if json && !ui::json::printed() {
        // Printing a document of two strings cannot fail; if stdout is gone, the line
        // above said it all.
        let _ = ui::json::print(&report.json());
    }
    report.status
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
        eprintln!("error: the store is damaged and cannot be read ({message}); {RUN_VERIFY}");
        std::process::exit(1);
    }
    let location = info.location().map(|l| l.to_string()).unwrap_or_default();
    eprintln!("error: internal error at {location}: {message}; {REPORT_IT}");
    std::process::exit(101);
}
