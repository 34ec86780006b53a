//! Dynamic tab completion: the scripts `completions <shell>` prints call the binary back
//! with `GIT_CHECKPOINT_COMPLETE=<shell>` and the words of the command line, and this
//! answers with candidates before anything else runs (clap_complete's `CompleteEnv`
//! engine walks the clap definition; the completers added here read the store).
//!
//! A completion never writes and never waits: the store is opened, through the
//! worktree's `Workspace` as every command opens it, read-only and only if that can be
//! done at once (`Workspace::open_read_store_now`), and every failure (no repository, a
//! busy or damaged store) just offers nothing.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;
use std::sync::OnceLock;

use clap::CommandFactory;
use clap_complete::engine::{ArgValueCompleter, CompletionCandidate};
use clap_complete::env::CompleteEnv;
use git_checkpoint::agents::worktree_files;
use git_checkpoint::complete::{self, Candidate};
use git_checkpoint::ops::workspace::Workspace;
use git_checkpoint::storage::{Snapshot, StoreRead};

/// The environment variable that asks for completions; its value names the shell.
pub const VAR: &str = "GIT_CHECKPOINT_COMPLETE";

/// The command line being completed (after the `--` the scripts put before it), for
/// completers that depend on another word: `-C <path>`, the revision of `attachment`.
static WORDS: OnceLock<Vec<String>> = OnceLock::new();

/// Answers a completion request and exits, when a completion script asked for one;
/// returns at once otherwise.
pub fn answer_if_asked() {
    if std::env::var_os(VAR).is_none_or(|shell| shell.is_empty()) {
        return;
    }
    let args: Vec<OsString> = std::env::args_os().collect();
    let words = args
        .iter()
        .skip_while(|a| *a != "--")
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let _ = WORDS.set(words);
    let cwd = std::env::current_dir().ok();
    match CompleteEnv::with_factory(command)
        .var(VAR)
        .try_complete(args, cwd.as_deref())
    {
        Ok(true) => std::process::exit(0),
        Ok(false) => {}
        // Silent: a shell prints whatever a completion writes in the middle of the line.
        Err(_) => std::process::exit(1),
    }
}

/// The clap definition with a completer on every argument that names something in the
/// store.
fn command() -> clap::Command {
    with_completers(crate::cli::Cli::command())
}

/// Adds completers to `cmd`'s arguments and, recursively, its subcommands'. Arguments
/// are recognised by their ids, so a new command's `rev` argument completes too.
fn with_completers(cmd: clap::Command) -> clap::Command {
    let name = cmd.get_name().to_string();
    // In place: `mut_arg` moves the argument last, which renumbers positionals.
    cmd.mut_args(|arg| match completer_for(&name, arg.get_id().as_str()) {
        Some(completer) => arg.add(completer),
        None => arg,
    })
    .mut_subcommands(with_completers)
}

/// What argument `arg` of subcommand `command` completes from the store, if anything.
fn completer_for(command: &str, arg: &str) -> Option<ArgValueCompleter> {
    match (command, arg) {
        ("switch", "branch") | ("branch", "delete") => {
            Some(ArgValueCompleter::new(|current: &OsStr| {
                offer(current, complete::branches)
            }))
        }
        ("attachment", "name") => Some(ArgValueCompleter::new(|current: &OsStr| {
            let Some(rev) = attachment_rev() else {
                return Vec::new();
            };
            offer(current, |snapshot, current| {
                complete::attachments(snapshot, &rev, current)
            })
        })),
        (_, "rev" | "revs") => Some(ArgValueCompleter::new(|current: &OsStr| {
            offer(current, complete::revisions)
        })),
        (_, "session") => Some(ArgValueCompleter::new(|current: &OsStr| {
            offer(current, complete::sessions)
        })),
        _ => None,
    }
}

/// Runs `list` on the store of the worktree being completed in; nothing on any error.
fn offer(
    current: &OsStr,
    list: impl FnOnce(&Snapshot, &str) -> git_checkpoint::Result<Vec<Candidate>>,
) -> Vec<CompletionCandidate> {
    let Some(current) = current.to_str() else {
        return Vec::new();
    };
    let candidates = (|| -> git_checkpoint::Result<Vec<Candidate>> {
        let workspace = Workspace::discover(&start_dir(), worktree_files())?;
        let Some(store) = workspace.open_read_store_now()? else {
            return Ok(Vec::new());
        };
        let snapshot = store.snapshot()?;
        list(&snapshot, current)
    })();
    candidates
        .unwrap_or_default()
        .into_iter()
        .map(|c| CompletionCandidate::new(c.value).help(c.help.map(Into::into)))
        .collect()
}

/// Where the command would run: each `-C <path>` of the line applied in turn, as git
/// applies them (git's bash completion passes its own `-C`s on).
fn start_dir() -> PathBuf {
    let mut dir = PathBuf::from(".");
    let mut words = WORDS.get().map(Vec::as_slice).unwrap_or_default().iter();
    while let Some(word) = words.next() {
        if word == "-C" {
            if let Some(path) = words.next() {
                dir = dir.join(path);
            }
        } else if let Some(path) = word.strip_prefix("-C") {
            dir = dir.join(path);
        }
    }
    dir
}

/// The revision `attachment <rev> <name>` names: the first word after `attachment`
/// that is not an option.
fn attachment_rev() -> Option<String> {
    let words = WORDS.get()?;
    let at = words.iter().position(|w| w == "attachment")?;
    words[at + 1..]
        .iter()
        .find(|w| !w.starts_with('-'))
        .cloned()
}
