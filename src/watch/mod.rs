//! `git checkpoint watch`: a per-worktree watcher that keeps a journal of the paths
//! changed since a token, so that a save can look at those paths instead of walking the
//! whole worktree (docs/design.md, "The watcher").
//!
//! - [`journal`]: the paths events named, numbered, and the tokens that ask about them.
//! - [`daemon`]: the watcher process: inotify, the journal, a Unix socket that answers.
//! - [`client`]: what a save (and `watch --stop`) says to it.
//! - [`refresh`]: the save's side: the recorded base tree plus the changed paths, read
//!   through the same rules as a walk, is the worktree; anything uncertain walks.
//!
//! The watcher never writes the store: the store stays single-writer, and the save
//! records the token it used (in a file beside the socket) only after its own commit.

pub mod client;
pub mod daemon;
pub mod journal;
pub mod refresh;

use std::path::PathBuf;

use crate::git::repo::Repo;

/// A point in one watcher's journal: every change after it carries a higher number.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Token {
    /// The watcher instance; a new one (a new process, or lost events) starts afresh.
    pub instance: u64,
    /// The number of the last event journaled when the token was handed out.
    pub seq: u64,
}

impl Token {
    /// The token as `<instance hex> <seq>`, as the socket and the base file carry it.
    pub fn encode(self) -> String {
        format!("{:016x} {}", self.instance, self.seq)
    }

    /// Reads [`Token::encode`]'s form.
    pub fn decode(text: &str) -> Option<Token> {
        let (instance, seq) = text.trim().split_once(' ')?;
        Some(Token {
            instance: u64::from_str_radix(instance, 16).ok()?,
            seq: seq.parse().ok()?,
        })
    }
}

/// The watcher's directory: `<git-dir>/checkpoint/watch/`, which is not in the worktree
/// and so never watched.
pub fn dir(repo: &Repo) -> PathBuf {
    repo.checkpoint_dir().join("watch")
}

/// The socket the watcher answers on.
pub fn socket_path(repo: &Repo) -> PathBuf {
    dir(repo).join("socket")
}

/// The pid file, locked by the running watcher for as long as it runs.
pub fn pid_path(repo: &Repo) -> PathBuf {
    dir(repo).join("pid")
}

/// Where a daemon writes what it has to say.
pub fn log_path(repo: &Repo) -> PathBuf {
    dir(repo).join("log")
}

/// The base the last watched save recorded (token, tree, fingerprint).
pub fn base_path(repo: &Repo) -> PathBuf {
    dir(repo).join("base")
}
