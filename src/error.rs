//! The library's error type. Every variant reads as one line a user can act on, and
//! belongs to one [`ErrorKind`], so that a caller can tell a typo from a damaged store,
//! a hostile remote or a bug of ours without reading the text.

use std::path::PathBuf;

use crate::text::counted;

/// What an [`Error`] is about, and so whose move it is. The binary maps each kind to an
/// exit status and a hint, and names it in its `--json` errors and MCP tool errors by
/// [`ErrorKind::name`] (docs/design.md invariant 7).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// What the user asked for does not exist, does not parse or contradicts itself: a
    /// revision, a branch, a path, a command-line value. Fixed by asking differently.
    Input,
    /// A `checkpoint.*` setting does not parse. Fixed with `git config`.
    Config,
    /// The store is held by another process for longer than the configured wait; trying
    /// again later may work.
    Busy,
    /// The command stopped rather than do something unsafe or not understood: a symlink
    /// where one of our files belongs, a worktree path restore does not own, a push of
    /// what looks like a secret, a store of a newer format. Nothing was changed.
    Refused,
    /// The work was done, or in a dry run would be, but left conflicts for the user to
    /// resolve: a revert whose paths later work changed too. As git's merges do, this is
    /// an error only for the exit status.
    Conflict,
    /// The store's own data does not decode or fails its checks (invariant 10).
    Damaged,
    /// A commit from a remote is not one that an export writes: malformed or hostile
    /// (invariant 23). What it would have added was not stored.
    Remote,
    /// git, run as a subprocess, failed.
    Git,
    /// Reading or writing a file failed, the storage engine's file included, or its disk
    /// is full.
    Io,
    /// Something that cannot happen did: a bug of ours, to be reported.
    Internal,
}

impl ErrorKind {
    /// The kind's name as scripts and agents read it: `input`, `config`, `busy`,
    /// `refused`, `conflict`, `damaged`, `remote`, `git`, `io` or `internal`
    /// (docs/json.md, "Errors").
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::Input => "input",
            ErrorKind::Config => "config",
            ErrorKind::Busy => "busy",
            ErrorKind::Refused => "refused",
            ErrorKind::Conflict => "conflict",
            ErrorKind::Damaged => "damaged",
            ErrorKind::Remote => "remote",
            ErrorKind::Git => "git",
            ErrorKind::Io => "io",
            ErrorKind::Internal => "internal",
        }
    }
}

/// Errors from the library. Messages are complete sentences without a trailing period,
/// meant to follow `error: ` on one line.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Not inside a git worktree (or inside a bare repository).
    #[error("{0}")]
    NotAWorktree(String),
    /// A git command failed.
    #[error("git {command} failed: {message}")]
    Git {
        /// The git subcommand that failed.
        command: String,
        /// What git said.
        message: String,
    },
    /// Another process holds the store for longer than the configured wait.
    #[error("another git-checkpoint has held the store for {seconds} s; giving up (raise checkpoint.lockTimeout to wait longer)")]
    StoreBusy {
        /// How long we waited.
        seconds: u64,
    },
    /// The store was written by a newer version of git-checkpoint.
    #[error("the store {path} uses format {found}, newer than this git-checkpoint understands ({supported}); upgrade git-checkpoint")]
    NewerFormat {
        /// The store file.
        path: PathBuf,
        /// The format version found on disk.
        found: u8,
        /// The newest version this build reads.
        supported: u8,
    },
    /// A record on disk does not decode or fails its checks.
    #[error("the store is damaged: {0}")]
    Corrupt(String),
    /// A commit under a remote's checkpoint refs that no export writes: its message,
    /// trailers or tree are not a checkpoint's (invariant 23).
    #[error("{}not a checkpoint commit: {why}", commit.as_deref().map(|c| format!("commit {c}: ")).unwrap_or_default())]
    RemoteCommit {
        /// The commit, when known where the problem was found.
        commit: Option<String>,
        /// What is wrong with it.
        why: String,
    },
    /// A pull whose fetched branch was refused as a whole (its tip, or a commit below it,
    /// is not one an export writes), so the local branch was left alone.
    #[error("refused {tracked}, so {branch} was left as it was: {why}")]
    RemoteRefused {
        /// The fetched branch, `<remote>/<branch>`.
        tracked: String,
        /// The local branch that was to be updated.
        branch: String,
        /// Why the fetch refused it, naming the commit at fault.
        why: String,
    },
    /// A revision that names no checkpoint.
    #[error("unknown revision '{0}'")]
    UnknownRevision(String),
    /// A revision that does not parse.
    #[error("malformed revision '{rev}': {why}")]
    MalformedRevision {
        /// The revision as given.
        rev: String,
        /// What is wrong with it.
        why: String,
    },
    /// A `~N` that walks past a checkpoint without parents.
    #[error("revision '{rev}' reaches past checkpoint {root}, which has no parent")]
    PastRoot {
        /// The revision as given.
        rev: String,
        /// The parentless checkpoint reached.
        root: String,
    },
    /// A `^N` past the parents a checkpoint has.
    #[error("revision '{rev}' asks for parent {parent} of checkpoint {checkpoint}, which has only {parents}")]
    NoSuchParent {
        /// The revision as given.
        rev: String,
        /// The checkpoint whose parent was asked for.
        checkpoint: String,
        /// The parent asked for, from 1.
        parent: u64,
        /// How many parents it has.
        parents: usize,
    },
    /// A prefix that matches several checkpoints (a hex prefix), sessions or tool calls
    /// (a session revision's parts). The message counts them; a front end lists
    /// [`Candidate`]s, one line each, so that the user can pick.
    #[error("ambiguous revision '{rev}': it matches {}{}", if *more { "more than " } else { "" }, counted(candidates.len(), noun))]
    AmbiguousRevision {
        /// The prefix as given.
        rev: String,
        /// What it matches: `checkpoint`, `session` or `tool call`.
        noun: &'static str,
        /// The matches, up to [`Candidate::MAX`], in the order of their names.
        candidates: Vec<Candidate>,
        /// Whether more match than are listed.
        more: bool,
    },
    /// A session revision (`<session>:prompt<N>`) whose session no checkpoint names.
    #[error("no agent session id starts with '{0}' ('git checkpoint sessions' lists them)")]
    UnknownSession(String),
    /// A session revision naming a prompt or tool call the session has no checkpoint of.
    #[error("session {session} has no checkpoint for '{what}' ({} recorded)", counted(*prompts, "prompt"))]
    NotInSession {
        /// The session's full id.
        session: String,
        /// The selector after the `:`.
        what: String,
        /// The prompts the session has.
        prompts: u64,
    },
    /// A session revision naming a prompt or turn whose prompt checkpoint gc removed.
    #[error("session {session} has no checkpoint for '{what}': gc removed its prompts up to {highest} at {at} (--keep-prompts keeps whole prompts)")]
    RemovedByGc {
        /// The session's full id.
        session: String,
        /// The selector after the `:`.
        what: String,
        /// The highest prompt number that gc removed.
        highest: u64,
        /// When, in RFC 3339.
        at: String,
    },
    /// A session revision naming a session gc removed every checkpoint of.
    #[error("gc removed every checkpoint of session {session} at {at} (--keep-sessions keeps whole sessions)")]
    SessionRemovedByGc {
        /// The session's full id.
        session: String,
        /// When, in RFC 3339.
        at: String,
    },
    /// A branch that does not exist.
    #[error("no branch named '{0}'")]
    UnknownBranch(String),
    /// A branch name already taken.
    #[error("a branch named '{0}' already exists")]
    BranchExists(String),
    /// A name that cannot be a branch.
    #[error("'{name}' is not a valid branch name: {why}")]
    InvalidBranchName {
        /// The name as given.
        name: String,
        /// What is wrong with it.
        why: String,
    },
    /// Deleting the branch HEAD names.
    #[error("cannot delete branch '{0}': it is the current branch (switch to another one first)")]
    CurrentBranch(String),
    /// An attachment name the checkpoint does not have.
    #[error("checkpoint {checkpoint} has no attachment '{name}' (it has: {available})")]
    UnknownAttachment {
        /// The checkpoint's short id.
        checkpoint: String,
        /// The name asked for.
        name: String,
        /// The names it has, comma-separated, or "none".
        available: String,
    },
    /// A push with no remote named, neither as an argument nor as `checkpoint.remote`:
    /// publishing somewhere the user never chose (an upstream project's `origin`) would
    /// leak untracked files and transcripts.
    #[error("push publishes checkpoints only to a remote you name: run 'git checkpoint push {suggestion}', or set it once with 'git config checkpoint.remote {suggestion}'")]
    RemoteNotNamed {
        /// A remote of the repository to show in the advice (`origin` when there is
        /// one), or `<remote>`.
        suggestion: String,
    },
    /// The store holds no checkpoint yet.
    #[error("no checkpoint yet: run 'git checkpoint save' first")]
    NoCheckpoints,
    /// `undo` found no operation left to undo.
    #[error("nothing to undo: every operation in the log is undone already, or there is none ('git checkpoint op log' lists them)")]
    NothingToUndo,
    /// `redo` found no undo to go back on: none was made, or an operation came since.
    #[error(
        "nothing to redo: no undo since the last operation ('git checkpoint op log' lists them)"
    )]
    NothingToRedo,
    /// An operation number that the operation log does not hold.
    #[error("no operation '{0}' in the operation log ('git checkpoint op log' lists them)")]
    UnknownOperation(String),
    /// `undo`, `redo` or `op restore` cannot do what was asked of an operation; nothing
    /// was changed.
    #[error("op {op} {why}")]
    CannotUndo {
        /// The operation's number.
        op: u64,
        /// Why, as the rest of the sentence ("cannot be undone: gc removed …").
        why: String,
    },
    /// A file this tool will not open as asked: a symlink or something other than a
    /// regular file where one of its own files belongs, or a file outside the directory
    /// it must come from.
    #[error("refusing to use {}: {why}", path.display())]
    UnsafeFile {
        /// The file as named.
        path: PathBuf,
        /// Why, and what to do.
        why: String,
    },
    /// A push that would publish files or attachments that look like secrets, none of
    /// them named with `--allow` (docs/design.md, "push and fetch").
    #[error("refusing to publish what looks like secrets: {}; delete them from the checkpoints (git checkpoint drop), or name each (path, or attachment name) with --allow to publish it", found.join(", "))]
    LooksSecret {
        /// Each one as `<what> (<why>)`: a path, or `attachment <name> of <checkpoint>`.
        found: Vec<String>,
    },
    /// A stored file name that restore refuses to write.
    #[error("refusing to restore unsafe stored name {0:?}")]
    UnsafeName(String),
    /// Restore would have to write through a symlink or replace something it does not own.
    #[error("refusing to restore {path}: {why}")]
    RestoreBlocked {
        /// The worktree path involved.
        path: PathBuf,
        /// Why restore stops.
        why: String,
    },
    /// A path argument outside the worktree.
    #[error("path '{0}' is outside the worktree")]
    PathOutsideWorktree(String),
    /// `revert` of a checkpoint that has no parent: there is no earlier state to go back to.
    #[error("checkpoint {checkpoint} ('{rev}') is a first checkpoint: it has no parent to revert to (name a range A..B instead)")]
    NoParentToRevert {
        /// The revision as given.
        rev: String,
        /// The checkpoint's short id.
        checkpoint: String,
    },
    /// A path given to `restore` names nothing in the checkpoint nor in the worktree, as
    /// git's "pathspec did not match"; nothing was changed.
    #[error("pathspec '{path}' did not match any file in checkpoint {checkpoint} or in the worktree (ignored files aside)")]
    PathspecNoMatch {
        /// The path, relative to the worktree's top.
        path: String,
        /// The checkpoint's short id.
        checkpoint: String,
    },
    /// A path given to `revert` matches no path the change touched, as git's "pathspec
    /// did not match"; nothing was changed.
    #[error("pathspec '{path}' did not match any file that {rev} changed; nothing was changed")]
    RevertPathspecNoMatch {
        /// The path, relative to the worktree's top.
        path: String,
        /// The revision as given.
        rev: String,
    },
    /// `revert` found, before changing anything, that the worktree cannot take the
    /// revert (a directory it may not write, an immutable file, too little room).
    #[error("refusing to revert {}: {why}; nothing was changed", path.display())]
    RevertBlocked {
        /// The worktree path involved.
        path: PathBuf,
        /// Why the revert cannot be made.
        why: String,
    },
    /// `revert` failed after it began to change the worktree: some paths are reverted,
    /// others not. The checkpoint named holds the worktree as the revert found it.
    #[error("the revert stopped part-way ({done} of {total} paths changed): {cause}; the worktree as the revert found it is checkpoint {checkpoint}: git checkpoint restore {checkpoint} puts it back")]
    RevertStopped {
        /// Paths changed before the failure.
        done: usize,
        /// Paths the revert was to change.
        total: usize,
        /// What failed, in its own words.
        cause: Box<Error>,
        /// The short id of the checkpoint that undoes the revert.
        checkpoint: String,
    },
    /// A path `revert` was to change changed after the worktree was saved.
    #[error("{} changed while the revert ran; nothing was reverted: run it again", path.display())]
    RevertRaced {
        /// The path that changed.
        path: PathBuf,
    },
    /// `revert --no-conflicts` found paths that would conflict; nothing was changed.
    #[error("the revert would conflict in {}: {}; nothing was changed", counted(paths.len(), "path"), paths.join(", "))]
    RevertWouldConflict {
        /// The conflicting paths, as shown to the user.
        paths: Vec<String>,
    },
    /// `revert` left conflicts in the worktree (the report lists them).
    #[error("the revert left conflicts in {}: {}; resolve them, then save", counted(paths.len(), "path"), paths.join(", "))]
    RevertConflicts {
        /// The conflicting paths, as shown to the user.
        paths: Vec<String>,
    },
    /// A bad command-line value that the library checks.
    #[error("{0}")]
    InvalidArgument(String),
    /// A `checkpoint.*` config value that does not parse.
    #[error("bad config value '{value}' for {key}: expected {expected}")]
    BadConfig {
        /// The key, in its documented spelling.
        key: &'static str,
        /// The value found.
        value: String,
        /// What the key takes.
        expected: String,
    },
    /// An I/O error with the path it concerns.
    #[error("{}: {error}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The underlying error (not a `source`: the message already includes it).
        error: std::io::Error,
    },
    /// The disk holding the store is full.
    #[error("the disk holding the store is full; free some space and try again")]
    DiskFull,
    /// The storage engine could not read or write its file.
    #[error("store: {}I/O error: {error}", path.as_ref().map(|p| format!("{}: ", p.display())).unwrap_or_default())]
    StoreIo {
        /// The store file, when the failure was opening it.
        path: Option<PathBuf>,
        /// What the system said.
        error: std::io::Error,
    },
    /// Any other failure the storage engine reports, in its own words (it gives no more
    /// than text for these: a previous I/O error, a table of another type, …).
    #[error("store: {0}")]
    Store(String),
    /// Something that cannot happen did: a broken promise between two parts of this
    /// program, not anything a user, a file or a remote did.
    #[error("internal error: {0}")]
    Internal(String),
    /// `blame` asked for a path that is not a text file in the checkpoint it starts
    /// from.
    #[error("cannot blame '{path}': {why}")]
    CannotBlame {
        /// The path, as the worktree names it.
        path: String,
        /// Why: absent, a directory, a symlink, binary.
        why: String,
    },
}

/// Shorthand for results with [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Wraps an I/O error with the path it concerns.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            error: source,
        }
    }

    /// What this error is about ([`ErrorKind`]).
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::NotAWorktree(_)
            | Error::UnknownRevision(_)
            | Error::MalformedRevision { .. }
            | Error::PastRoot { .. }
            | Error::NoSuchParent { .. }
            | Error::AmbiguousRevision { .. }
            | Error::UnknownSession(_)
            | Error::NotInSession { .. }
            | Error::RemovedByGc { .. }
            | Error::SessionRemovedByGc { .. }
            | Error::UnknownBranch(_)
            | Error::BranchExists(_)
            | Error::InvalidBranchName { .. }
            | Error::CurrentBranch(_)
            | Error::UnknownAttachment { .. }
            | Error::RemoteNotNamed { .. }
            | Error::NoCheckpoints
            | Error::NothingToUndo
            | Error::NothingToRedo
            | Error::UnknownOperation(_)
            | Error::NoParentToRevert { .. }
            | Error::PathspecNoMatch { .. }
            | Error::RevertPathspecNoMatch { .. }
            | Error::CannotBlame { .. }
            | Error::PathOutsideWorktree(_)
            | Error::InvalidArgument(_) => ErrorKind::Input,
            Error::BadConfig { .. } => ErrorKind::Config,
            Error::StoreBusy { .. } => ErrorKind::Busy,
            Error::NewerFormat { .. }
            | Error::UnsafeFile { .. }
            | Error::RestoreBlocked { .. }
            | Error::LooksSecret { .. }
            | Error::RevertWouldConflict { .. }
            | Error::RevertRaced { .. }
            | Error::RevertBlocked { .. }
            | Error::CannotUndo { .. } => ErrorKind::Refused,
            Error::RevertConflicts { .. } => ErrorKind::Conflict,
            // A name no save records and no import lets in: the store was written by
            // something else.
            Error::Corrupt(_) | Error::UnsafeName(_) => ErrorKind::Damaged,
            Error::RemoteCommit { .. } | Error::RemoteRefused { .. } => ErrorKind::Remote,
            Error::Git { .. } => ErrorKind::Git,
            Error::Io { .. } | Error::DiskFull | Error::StoreIo { .. } | Error::Store(_) => {
                ErrorKind::Io
            }
            Error::Internal(_) => ErrorKind::Internal,
            // Whatever stopped it decides: a full disk, a refused permission, a race.
            Error::RevertStopped { cause, .. } => cause.kind(),
        }
    }

    /// The system's error behind this one, if it is a failed read or write: what a caller
    /// looks at to tell a refused permission from a missing file.
    pub fn io_error(&self) -> Option<&std::io::Error> {
        match self {
            Error::Io { error, .. } | Error::StoreIo { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// One of the things an ambiguous revision matches ([`Error::AmbiguousRevision`]), as
/// a front end lists it for the user to pick from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// What names it without ambiguity: a checkpoint's short id, a session's or a tool
    /// call's whole id.
    pub name: String,
    /// When it was made (a session: when its first checkpoint was), in nanoseconds
    /// since the Unix epoch.
    pub time_ns: i128,
    /// What it is, in a line: a checkpoint's message, a session's agent and first prompt.
    pub about: String,
}

impl Candidate {
    /// The most candidates an error lists.
    pub const MAX: usize = 10;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_messages_of_the_structured_variants_read_as_their_strings_did() {
        let bare = Error::RemoteCommit {
            commit: None,
            why: "no trailers".into(),
        };
        assert_eq!(bare.to_string(), "not a checkpoint commit: no trailers");
        let named = Error::RemoteCommit {
            commit: Some("abc".into()),
            why: "no trailers".into(),
        };
        assert_eq!(
            named.to_string(),
            "commit abc: not a checkpoint commit: no trailers"
        );
        let denied = || std::io::Error::from_raw_os_error(libc::EACCES);
        let opening = Error::StoreIo {
            path: Some("/x/store.redb".into()),
            error: denied(),
        };
        assert_eq!(
            opening.to_string(),
            "store: /x/store.redb: I/O error: Permission denied (os error 13)"
        );
        let using = Error::StoreIo {
            path: None,
            error: denied(),
        };
        assert_eq!(
            using.to_string(),
            "store: I/O error: Permission denied (os error 13)"
        );
        assert_eq!(
            using.io_error().map(std::io::Error::kind),
            Some(std::io::ErrorKind::PermissionDenied)
        );
    }

    #[test]
    fn a_typo_a_damaged_store_a_hostile_remote_and_a_bug_are_told_apart() {
        let kinds = [
            Error::UnknownRevision("x".into()).kind(),
            Error::Corrupt("x".into()).kind(),
            Error::RemoteCommit {
                commit: None,
                why: "x".into(),
            }
            .kind(),
            Error::Internal("x".into()).kind(),
        ];
        assert_eq!(
            kinds,
            [
                ErrorKind::Input,
                ErrorKind::Damaged,
                ErrorKind::Remote,
                ErrorKind::Internal
            ]
        );
    }
}
