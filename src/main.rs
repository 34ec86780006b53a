//! The `git-checkpoint` binary: parses arguments and hands each subcommand to its file in
//! `commands/`. All logic lives in the `git_checkpoint` library.

mod cli;
mod commands;

use clap::Parser;

fn main() {
    // Behave like other Unix tools when the reader of our output goes away (`| head`).
    // SAFETY: resetting a signal disposition to its default at startup, before any thread.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = cli::Cli::parse();
    let code = match commands::run(cli) {
        Ok(()) => 0,
        Err(error) => {
            let lib_error = error.downcast_ref::<git_checkpoint::Error>();
            match lib_error {
                // git's own wording already starts with "fatal:".
                Some(git_checkpoint::Error::NotAWorktree(msg)) => eprintln!("{msg}"),
                _ => eprintln!("error: {error:#}"),
            }
            lib_error.map_or(1, git_checkpoint::Error::exit_code)
        }
    };
    std::process::exit(code);
}
