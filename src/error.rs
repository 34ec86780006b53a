//! The library's error type. Every variant reads as one line a user can act on.

use std::path::PathBuf;

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
    /// A hex prefix that matches several checkpoints.
    #[error("ambiguous revision '{rev}': it matches {}", candidates.join(", "))]
    AmbiguousRevision {
        /// The prefix as given.
        rev: String,
        /// Full ids of some of the matching checkpoints.
        candidates: Vec<String>,
    },
    /// A session revision (`<session>:prompt<N>`) whose session no checkpoint names.
    #[error("no agent session id starts with '{0}' ('git checkpoint sessions' lists them)")]
    UnknownSession(String),
    /// A session revision naming a prompt or tool call the session has no checkpoint of.
    #[error("session {session} has no checkpoint for '{what}' ({prompts} prompts recorded)")]
    NotInSession {
        /// The session's full id.
        session: String,
        /// The selector after the `:`.
        what: String,
        /// The prompts the session has.
        prompts: u64,
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
    /// An error from the storage engine.
    #[error("store: {0}")]
    Store(String),
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

    /// The process exit code for this error: 128 outside a worktree, like git; 1 otherwise.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::NotAWorktree(_) => 128,
            _ => 1,
        }
    }
}
