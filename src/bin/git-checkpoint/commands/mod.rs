//! One file per subcommand: its `Args` (the help text) and one function that resolves
//! the arguments, does the work through the library, and reports; and what they share,
//! [`Context`]. `cli.rs`, above, parses the command line and dispatches here; nothing
//! here looks back at it (`completions` and `install-man` are handed the clap
//! definition).

pub mod attachment;
pub mod blame;
pub mod branch;
pub mod browse;
pub mod completions;
pub mod diff;
pub mod doctor;
pub mod drop;
pub mod export;
pub mod fetch;
pub mod fork;
pub mod gc;
pub mod hooks;
pub mod install_man;
pub mod log;
pub mod mcp;
pub mod pin;
pub mod pull;
pub mod push;
pub mod restore;
pub mod revert;
pub mod save;
pub mod sessions;
pub mod show;
pub mod stats;
pub mod status;
pub mod switch;
pub mod unpin;
pub mod verify;
pub mod watch;

use std::io::{IsTerminal, Write};
use std::sync::Arc;

use git_checkpoint::format::text::escape_controls;
use git_checkpoint::model::Head;
use git_checkpoint::ops::doctor::store::interrupted_restore;
use git_checkpoint::ops::workspace::Workspace;
use git_checkpoint::progress::Progress;
use git_checkpoint::storage::{ReadStore, Snapshot, Store};

use crate::ui::pager::Pager;
use crate::ui::progress_bar::TerminalBar;
use crate::ui::{json, output};

/// How `diff` and `show` print changes: the unified diff, or one of git's summaries
/// (at most one).
#[derive(Debug, Default, clap::Args)]
#[group(id = "format", multiple = false)]
pub struct FormatArgs {
    /// A diffstat instead of the diff.
    #[arg(long)]
    stat: bool,
    /// A status letter and path per changed file instead of the diff.
    #[arg(long)]
    name_status: bool,
    /// Only the paths of changed files.
    #[arg(long)]
    name_only: bool,
}

impl FormatArgs {
    /// The format asked for.
    pub fn format(&self) -> crate::ui::patch::Format {
        use crate::ui::patch::Format;
        if self.stat {
            Format::Stat
        } else if self.name_status {
            Format::NameStatus
        } else if self.name_only {
            Format::NameOnly
        } else {
            Format::Patch
        }
    }
}

/// How many rows a summary shows of a long list (`stats`, `gc`) before "-v lists all".
pub const SUMMARY_ROWS: usize = 5;

/// What every command needs: the worktree and the output switches.
pub struct Context {
    /// The worktree and its settings: the one door to its store.
    pub workspace: Workspace,
    /// `-q`.
    pub quiet: bool,
    /// `--json`.
    pub json: bool,
}

impl Context {
    /// Opens the store, waiting for another process as `checkpoint.lockTimeout` allows;
    /// a new store's HEAD names `checkpoint.defaultBranch`.
    pub fn open_store(&self) -> git_checkpoint::Result<Store> {
        let quiet = self.quiet;
        let _span = git_checkpoint::trace::span("open store");
        self.workspace.open_store(&mut || {
            if !quiet {
                eprintln!("waiting for another git-checkpoint to finish...");
            }
        })
    }

    /// Opens the store read-only (the file stays byte-identical), waiting likewise.
    pub fn open_read_store(&self) -> git_checkpoint::Result<ReadStore> {
        let quiet = self.quiet;
        self.workspace.open_read_store(
            &mut || {
                if !quiet {
                    eprintln!("waiting for another git-checkpoint to finish...");
                }
            },
            &mut || {
                self.warn(
                    "the store needs a repair that it cannot record (is its disk full?); opened for writing to read it",
                )
            },
        )
    }

    /// A progress bar on stderr, only where a person watches: stderr is a terminal and
    /// neither `-q` nor `--json` was given.
    pub fn progress(&self) -> Option<Arc<dyn Progress>> {
        (!self.quiet && !self.json && std::io::stderr().is_terminal())
            .then(|| Arc::new(TerminalBar::new()) as Arc<dyn Progress>)
    }

    /// Warns if a restore was interrupted, and returns the short id it was restoring.
    pub fn warn_interrupted_restore(&self, snapshot: &Snapshot) -> anyhow::Result<Option<String>> {
        let prefix = &self.workspace.repo.prefix;
        let Some(restore) = interrupted_restore(snapshot, prefix)? else {
            return Ok(None);
        };
        self.warn(format!(
            "a restore to {} was interrupted; to finish it, run: {}",
            restore.target, restore.command
        ));
        Ok(Some(restore.target))
    }

    /// Says on stderr, for a person, why a listing came out empty and what to run: a
    /// store with no checkpoint at all, or none on HEAD's branch while other branches
    /// (fetched ones too) have some. Scripts reading stdout still see an empty list.
    pub fn explain_empty(&self, read: &Snapshot) -> anyhow::Result<()> {
        if self.quiet || self.json || read.current()?.is_some() {
            return Ok(());
        }
        let local = read.branches()?;
        let message = if !local.is_empty() {
            let name = match read.head()? {
                Head::Branch(name) => name,
                Head::Detached(_) => return Ok(()),
            };
            format!(
                "no checkpoint on branch '{name}' yet: 'git checkpoint save' makes one, 'git checkpoint branch' lists the branches that have some"
            )
        } else if !read.branches_and_fetched()?.is_empty() {
            "no checkpoints of this worktree yet, only fetched ones: 'git checkpoint save' makes the first, 'git checkpoint pull <remote> <branch>' starts from a fetched branch".to_string()
        } else {
            "no checkpoints yet: run 'git checkpoint save' to make the first".to_string()
        };
        eprintln!("{message}");
        Ok(())
    }

    /// Prints a warning to stderr unless quiet, as one line: control characters in the
    /// text it quotes (a path, a message) are escaped, line breaks included.
    pub fn warn(&self, message: impl std::fmt::Display) {
        if !self.quiet {
            eprintln!("warning: {}", escape_controls(&message.to_string()));
        }
    }

    /// Whether output a person reads (log, show, diff) is coloured: only on a terminal,
    /// never with --json or -q. Asked before the output is made, as the pager only
    /// starts once it is made and the store is closed.
    pub fn colour(&self) -> bool {
        !self.json && !self.quiet && output::colour_wanted(std::io::stdout().is_terminal())
    }

    /// Writes what a read command made. Call it only once the store is closed (the
    /// commands make their [`Output`] in a function that owns the store): the pager, or
    /// a terminal that does not take the output, may keep this process for as long as
    /// the user likes, and the store must not be held meanwhile, or every save and
    /// agent hook waits for it.
    pub fn emit(&self, output: Output) -> anyhow::Result<()> {
        let (text, paged) = match output {
            Output::Nothing => return Ok(()),
            Output::Json(text) => {
                println!("{text}");
                return Ok(());
            }
            Output::Lines(lines) => {
                for line in lines {
                    self.say(&line);
                }
                return Ok(());
            }
            Output::Paged(text) => (text, true),
            Output::Plain(bytes) => (bytes, false),
        };
        let _pager = (paged && !self.json && !self.quiet)
            .then(|| Pager::start(&self.workspace.repo))
            .flatten();
        let mut out = std::io::stdout().lock();
        out.write_all(&text)?;
        out.flush()?;
        Ok(())
    }

    /// Prints a line of chatter to stdout unless quiet or producing JSON, as one line:
    /// control characters in the text it quotes are escaped, line breaks included.
    pub fn say(&self, line: &str) {
        if !self.quiet && !self.json {
            println!("{}", escape_controls(line));
        }
    }
}

/// What a read command shows, made while it has the store open and written by
/// [`Context::emit`] after the store is closed.
pub enum Output {
    /// Nothing (`-q`).
    Nothing,
    /// One JSON document.
    Json(String),
    /// Lines of chatter, printed as [`Context::say`] prints them.
    Lines(Vec<String>),
    /// Text a person reads, through the pager on a terminal; text from people and
    /// agents in it is already escaped ([`escape_controls`]).
    Paged(Vec<u8>),
    /// Bytes written as they are: a listing already escaped, or an attachment.
    Plain(Vec<u8>),
}

impl Output {
    /// `value` as the one JSON document on stdout.
    pub fn json(value: &impl serde::Serialize) -> anyhow::Result<Output> {
        Ok(Output::Json(json::text(value)?))
    }
}

/// `error` with what to do about it on the same line, when the likely cause is known
/// (a store this user may not write, a revision that looks right but names nothing
/// here): the cause first, then the advice.
pub fn with_hint(context: &Context, error: anyhow::Error) -> anyhow::Error {
    let hint = store_access_hint(context, &error);
    match hint.or_else(|| unknown_revision_hint(context, &error)) {
        Some(hint) => anyhow::anyhow!("{error:#}; {hint}"),
        None => error,
    }
}

/// The one line the CLI prints for `error`, with what to do about it when its kind
/// says, and the exit status: 128 outside a worktree, as git does; 101 for a bug of
/// ours, as for a panic; 1 for every other error (docs/design.md invariant 7). An error
/// the library did not make (clap's, the binary's own) has no kind and exits 1. The
/// MCP server answers a failed tool call with the same line.
pub fn error_line(error: &anyhow::Error) -> (String, i32) {
    let lib_error = error.downcast_ref::<git_checkpoint::Error>();
    // git's own wording already starts with "fatal:".
    if let Some(git_checkpoint::Error::NotAWorktree(msg)) = lib_error {
        return (
            git_checkpoint::format::text::escape_controls_keeping_lines(msg).into_owned(),
            128,
        );
    }
    let kind = lib_error.map(git_checkpoint::Error::kind);
    let hint = match kind {
        Some(git_checkpoint::error::ErrorKind::Damaged) => format!("; {RUN_VERIFY}"),
        Some(git_checkpoint::error::ErrorKind::Internal) => format!("; {REPORT_IT}"),
        _ => String::new(),
    };
    // An error may quote a revision, a name or a message as it was given.
    let mut line = format!(
        "error: {}{hint}",
        git_checkpoint::format::text::escape_controls_keeping_lines(&format!("{error:#}"))
    );
    // What an ambiguous revision matches, one line each, to pick from, as git lists
    // the candidates of an ambiguous object name.
    if let Some(git_checkpoint::Error::AmbiguousRevision { candidates, .. }) = lib_error {
        for candidate in candidates {
            let hint = format!(
                "\nhint:   {}  {}  {}",
                escape_controls(&candidate.name),
                rfc3339_seconds(candidate.time_ns),
                escape_controls(&candidate.about)
            );
            line += hint.trim_end();
        }
    }
    let code = match kind {
        Some(git_checkpoint::error::ErrorKind::Internal) => 101,
        _ => 1,
    };
    (line, code)
}

/// A time as RFC 3339 in UTC to the second (`2026-11-26T20:20:19Z`), as a line that
/// tells things apart by their dates shows it.
fn rfc3339_seconds(time_ns: i128) -> String {
    let time = git_checkpoint::clock::rfc3339(time_ns);
    match time.split_once('.') {
        Some((seconds, _)) => format!("{seconds}Z"),
        None => time,
    }
}

/// What to do about a damaged store: verify lists every damaged record and the
/// checkpoints it affects.
pub const RUN_VERIFY: &str = "'git checkpoint verify' names everything damaged";

/// What to do about a bug of ours.
pub const REPORT_IT: &str = "this is a bug in git-checkpoint, please report it";

/// What to do about a store this user may not write, when `error` is a refused
/// permission: the bare "Permission denied" of a file in the store's directory leaves the
/// user guessing whether it is the owner, the mode or another user's repository.
fn store_access_hint(context: &Context, error: &anyhow::Error) -> Option<String> {
    let denied = error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::PermissionDenied)
            || cause
                .downcast_ref::<git_checkpoint::Error>()
                .and_then(git_checkpoint::Error::io_error)
                .is_some_and(|e| e.kind() == std::io::ErrorKind::PermissionDenied)
    });
    if !denied {
        return None;
    }
    let dir = context.workspace.repo.checkpoint_dir();
    // The directory when the store's files are not made yet, else the file that refused.
    let refused = [dir.join("store.redb"), dir.clone()]
        .into_iter()
        .find(|p| p.exists() && rustix::fs::access(p, rustix::fs::Access::WRITE_OK).is_err())?;
    let owner = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata(&refused).ok()?);
    let me = rustix::process::geteuid().as_raw();
    Some(if owner == me {
        format!(
            "{} is not writable (check its permissions, or whether its disk is mounted read-only)",
            refused.display()
        )
    } else {
        format!(
            "{} belongs to uid {owner}, not to you (uid {me}): run git checkpoint as its owner, or have them make {} writable for you",
            refused.display(),
            dir.display()
        )
    })
}

/// Why a revision names nothing here, and what to do: git's own `HEAD` (ours is `@`), a
/// remote branch fetched by another worktree of the repository (the fetched commits are
/// shared, but each worktree's store is its own), or else where the ids are listed.
fn unknown_revision_hint(context: &Context, error: &anyhow::Error) -> Option<String> {
    let Some(git_checkpoint::Error::UnknownRevision(rev)) =
        error.downcast_ref::<git_checkpoint::Error>()
    else {
        return None;
    };
    let base = rev.split(['~', '^']).next().unwrap_or(rev);
    if base == "HEAD" {
        let suffix = &rev[base.len()..];
        return Some(format!(
            "the current checkpoint is '@' here, not HEAD: try '@{suffix}'"
        ));
    }
    fetched_elsewhere_hint(context, base).or_else(|| Some(WHERE_IDS_ARE.to_string()))
}

/// Where to find the ids a revision can name, for one that names nothing.
const WHERE_IDS_ARE: &str =
    "'git checkpoint log --all' lists every checkpoint, 'git checkpoint sessions' every agent session";

/// Why `base`, a remote branch's name, names nothing here when another worktree of the
/// repository fetched it: what to run here first.
fn fetched_elsewhere_hint(context: &Context, base: &str) -> Option<String> {
    if !base.contains('/') {
        return None;
    }
    let root = &context.workspace.repo.root;
    let fetched_ref = format!("refs/checkpoints-remote/{base}");
    git_checkpoint::git::repo::git(root, &["rev-parse", "--verify", "--quiet", &fetched_ref])
        .ok()?;
    let remotes = git_checkpoint::git::repo::git(root, &["remote"]).ok()?;
    let remote = String::from_utf8_lossy(&remotes)
        .lines()
        .filter(|name| base.starts_with(&format!("{name}/")))
        .max_by_key(|name| name.len())
        .map(str::to_string)?;
    Some(format!(
        "another worktree of this repository fetched {base}, and each worktree keeps its own checkpoints: run 'git checkpoint fetch {remote}' here first"
    ))
}
