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
pub mod op;
pub mod pin;
pub mod pull;
pub mod push;
pub mod redo;
pub mod restore;
pub mod revert;
pub mod save;
pub mod sessions;
pub mod show;
pub mod stats;
pub mod status;
pub mod switch;
pub mod undo;
pub mod unpin;
pub mod verify;
pub mod watch;

use std::io::{IsTerminal, Write};
use std::sync::Arc;

use git_checkpoint::doctor::store::interrupted_restore;
use git_checkpoint::error::ErrorKind;
use git_checkpoint::model::Head;
use git_checkpoint::ops::workspace::Workspace;
use git_checkpoint::progress::Progress;
use git_checkpoint::storage::{ReadStore, Snapshot, Store};
use git_checkpoint::text::escape_controls;
use git_checkpoint::CheckpointId;

use crate::ui::answer::{Answer, Front, Part, Said, Shorts};
use crate::ui::failure::Failure;
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
        let Some((target, warning)) = self.interrupted_restore(snapshot)? else {
            return Ok(None);
        };
        self.warn(warning);
        Ok(Some(target))
    }

    /// The short id a restore was restoring when it was interrupted, and the warning
    /// that says how to finish it; `None` when none was.
    pub fn interrupted_restore(
        &self,
        snapshot: &Snapshot,
    ) -> anyhow::Result<Option<(String, String)>> {
        let prefix = &self.workspace.repo.prefix;
        Ok(interrupted_restore(snapshot, prefix)?.map(|restore| {
            let warning = format!(
                "a restore to {} was interrupted; to finish it, run: {}",
                restore.target, restore.command
            );
            (restore.target, warning)
        }))
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
                json::print_text(&text);
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

    /// The front end this context prints to: the command line, coloured as
    /// [`Context::colour`] says.
    pub fn front(&self) -> Front {
        Front::Cli {
            colour: self.colour(),
        }
    }

    /// Tells `answer` as the command line says it: its JSON document with `--json`, its
    /// lines otherwise (warnings on stderr either way); then fails as it failed.
    pub fn tell(&self, answer: &impl Answer) -> anyhow::Result<()> {
        let front = self.front();
        let said = answer.said(front)?;
        if self.json {
            for part in &said.0 {
                if let Part::Warning(warning) = part {
                    self.warn(warning);
                }
            }
            json::print(&answer.json())?;
        } else {
            self.print(&said)?;
        }
        match answer.failure(front) {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }

    /// Prints what an answer says: lines to stdout ([`Context::say`]), warnings to
    /// stderr ([`Context::warn`]), raw parts (a diff) to stdout as they are; nothing but
    /// warnings with `--json`, nothing at all with `-q`.
    pub fn print(&self, said: &Said) -> anyhow::Result<()> {
        for part in &said.0 {
            match part {
                Part::Line(line) => self.say(line),
                Part::Warning(warning) => self.warn(warning),
                Part::Raw(bytes) if !self.quiet && !self.json => {
                    let mut out = std::io::stdout().lock();
                    out.write_all(bytes)?;
                    out.flush()?;
                }
                Part::Raw(_) => {}
            }
        }
        Ok(())
    }
}

/// The short ids of `ids`, read from `read` while the store is open, for an answer to
/// name them by.
pub fn shorts(
    read: &Snapshot,
    ids: impl IntoIterator<Item = CheckpointId>,
) -> anyhow::Result<Shorts> {
    let mut shorts = Shorts::default();
    for id in ids {
        shorts.0.insert(id, read.short_id(id)?);
    }
    Ok(shorts)
}

/// The short id and the message of the checkpoint a command saved its result as (a
/// revert's, a session restore's), read from `read` while the store is open.
pub fn saved_as(
    read: &Snapshot,
    id: Option<CheckpointId>,
) -> anyhow::Result<Option<(String, String)>> {
    let Some(id) = id else { return Ok(None) };
    Ok(Some((read.short_id(id)?, read.checkpoint(id)?.message)))
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
/// here): the cause first, then the advice. The error keeps its kind.
pub fn with_hint(context: &Context, error: anyhow::Error) -> anyhow::Error {
    let hint = store_access_hint(context, &error);
    match hint.or_else(|| unknown_revision_hint(context, &error)) {
        Some(hint) => hinted(error, hint),
        None => error,
    }
}

/// `error`, said with `hint` after it (`<error>; <hint>`), of the same kind.
pub fn hinted(error: anyhow::Error, hint: impl Into<String>) -> anyhow::Error {
    Hinted {
        error,
        hint: hint.into(),
    }
    .into()
}

/// An error with advice after it.
#[derive(Debug)]
struct Hinted {
    /// The error.
    error: anyhow::Error,
    /// What to do about it.
    hint: String,
}

impl std::fmt::Display for Hinted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#}; {}", self.error, self.hint)
    }
}

// No `source`: the message already holds the error's, which `{:#}` would repeat.
impl std::error::Error for Hinted {}

/// The exit status of a `Busy` error: sysexits' `EX_TEMPFAIL`, "try again later".
pub const EXIT_BUSY: i32 = 75;
/// The exit status of a `Refused` error: sysexits' `EX_NOPERM`, "not permitted".
pub const EXIT_REFUSED: i32 = 77;

/// How the front ends report a failure: its kind, its message and its exit status
/// ([`error_line`]).
pub struct ErrorLine {
    /// What it is about.
    pub kind: ErrorKind,
    /// The message as the CLI prints it after `error: `, escaped, with what to do about
    /// it when its kind says (git's own `fatal: …` for a directory outside a worktree).
    pub message: String,
    /// Whether `message` is git's own line (outside a worktree), which the CLI prints
    /// as it is.
    pub from_git: bool,
    /// The exit status.
    pub status: i32,
}

impl ErrorLine {
    /// The one line `front` shows: the CLI's `error: <message>` (git's line as git
    /// prints it); for a model, one sentence without git's `fatal:`.
    pub fn line(&self, front: Front) -> String {
        match (self.from_git, front) {
            (true, Front::Cli { .. }) => self.message.clone(),
            (true, Front::Mcp) => format!("error: {}", without_git_prefixes(&self.message)),
            (false, _) => format!("error: {}", self.message),
        }
    }

    /// The error document: `--json`'s on failure, an MCP tool error's structured
    /// content.
    pub fn json(&self) -> json::ErrorJson {
        json::ErrorJson {
            error: match self.from_git {
                true => without_git_prefixes(&self.message),
                false => self.message.clone(),
            },
            kind: self.kind.name(),
        }
    }
}

/// git's message as one sentence: its `fatal: ` (or `error: `) prefix gone and its
/// lines joined.
fn without_git_prefixes(message: &str) -> String {
    let lines: Vec<&str> = message
        .lines()
        .map(|line| {
            let line = line.trim();
            ["fatal: ", "error: "]
                .iter()
                .find_map(|prefix| line.strip_prefix(prefix))
                .unwrap_or(line)
        })
        .filter(|line| !line.is_empty())
        .collect();
    lines.join("; ")
}

/// The kind of `error`: the library's error's, or the binary's own ([`Failure`]); a
/// failed read or write is `Io`; anything else cannot happen, `Internal`.
pub fn error_kind(error: &anyhow::Error) -> ErrorKind {
    if let Some(hinted) = error.downcast_ref::<Hinted>() {
        return error_kind(&hinted.error);
    }
    let kind = error.chain().find_map(|cause| {
        cause
            .downcast_ref::<git_checkpoint::Error>()
            .map(git_checkpoint::Error::kind)
            .or_else(|| cause.downcast_ref::<Failure>().map(|failure| failure.kind))
            .or_else(|| cause.is::<std::io::Error>().then_some(ErrorKind::Io))
    });
    kind.unwrap_or(ErrorKind::Internal)
}

/// The library's error behind `error`, if it is one.
fn library_error(error: &anyhow::Error) -> Option<&git_checkpoint::Error> {
    match error.downcast_ref::<Hinted>() {
        Some(hinted) => library_error(&hinted.error),
        None => error.downcast_ref::<git_checkpoint::Error>(),
    }
}

/// The one line a front end prints for `error` (docs/design.md invariant 7): its message
/// with what to do about it when its kind says, and the exit status: 128 outside a
/// worktree, as git does; 101 for a bug of ours, as for a panic; 75 when the store
/// stayed busy (try again); 77 when the command refused; 1 for every other error. The
/// CLI prints it on stderr (and its document with `--json`); the MCP server answers a
/// failed tool call with it.
pub fn error_line(error: &anyhow::Error) -> ErrorLine {
    let kind = error_kind(error);
    // git's own wording already starts with "fatal:".
    if let Some(git_checkpoint::Error::NotAWorktree(msg)) = library_error(error) {
        return ErrorLine {
            kind,
            message: git_checkpoint::text::escape_controls_keeping_lines(msg).into_owned(),
            from_git: true,
            status: 128,
        };
    }
    let hint = match library_error(error).map(git_checkpoint::Error::kind) {
        Some(ErrorKind::Damaged) => format!("; {RUN_VERIFY}"),
        Some(ErrorKind::Internal) => format!("; {REPORT_IT}"),
        _ => String::new(),
    };
    // An error may quote a revision, a name or a message as it was given.
    let mut message = format!(
        "{}{hint}",
        git_checkpoint::text::escape_controls_keeping_lines(&format!("{error:#}"))
    );
    // What an ambiguous revision matches, one line each, to pick from, as git lists
    // the candidates of an ambiguous object name.
    if let Some(git_checkpoint::Error::AmbiguousRevision { candidates, .. }) = library_error(error)
    {
        for candidate in candidates {
            let hint = format!(
                "\nhint:   {}  {}  {}",
                escape_controls(&candidate.name),
                rfc3339_seconds(candidate.time_ns),
                escape_controls(&candidate.about)
            );
            message += hint.trim_end();
        }
    }
    let status = match kind {
        ErrorKind::Internal => 101,
        ErrorKind::Busy => EXIT_BUSY,
        ErrorKind::Refused => EXIT_REFUSED,
        _ => 1,
    };
    ErrorLine {
        kind,
        message,
        from_git: false,
        status,
    }
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
