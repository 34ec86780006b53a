//! `git checkpoint watch`: a per-worktree watcher that keeps a journal of the paths
//! changed since a token, so that a save can look at those paths instead of walking the
//! whole worktree (docs/design.md, "The watcher").
//!
//! - [`journal`]: the paths events named, numbered, and the tokens that ask about them.
//! - [`daemon`]: the watcher process: the kernel's events, the journal, a Unix socket
//!   that answers.
//! - [`platform`]: the kernel's file-change events (inotify on Linux, FSEvents on macOS;
//!   no watcher elsewhere, where every save walks) and the mount table: the only code
//!   here that differs between systems.
//! - `cookie`: the sync point of an event source that delivers late (FSEvents): a file
//!   written in the worktree's top, whose event tells the watcher that every earlier
//!   change's event has arrived.
//! - [`client`]: what a save (and `watch --stop`) says to it.
//! - [`start`]: starting one in the background, for `watch --daemon` and, unless
//!   `checkpoint.autoWatch` is false, for every agent's hook run that finds none.
//! - [`share`]: the share of the user's inotify instances and watches that the watchers
//!   hook runs start may take, kept in a per-user registry of them.
//!
//! The watcher only reports changed paths. The save's side (the recorded base tree plus
//! the changed paths, read through the same rules as a walk, is the worktree; anything
//! uncertain walks) is a scan strategy of the save, in `ops/save/watched.rs`.
//!
//! The watcher never writes the store: the store stays single-writer, and the save
//! records the token it used (in a file beside the socket) only after its own commit.
//!
//! Everything in the watcher's directory is opened without following symlinks, and the
//! directory itself must be a real directory of the user's own ([`own_dir`]): a link
//! planted there never redirects a write (the pid file, the log, the base) nor forges an
//! answer (the socket).

pub mod client;
mod cookie;
pub mod daemon;
pub mod journal;
pub mod platform;
pub mod share;
pub mod start;

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use rustix::fs::FlockOperation;

use crate::git::repo::Repo;
use crate::{Error, Result};

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

/// Whether a watcher holds the pid file's lock: it runs, whatever the socket says.
pub fn is_locked(repo: &Repo) -> bool {
    let Ok(file) = open_pid_file(repo) else {
        return false;
    };
    rustix::fs::flock(&file, FlockOperation::NonBlockingLockShared).is_err()
}

/// Removes the socket and pid file a watcher that died (SIGKILL, a crash) left.
pub fn clean_up_if_dead(repo: &Repo) {
    let Ok(file) = open_pid_file(repo) else {
        let _ = std::fs::remove_file(socket_path(repo));
        return;
    };
    if rustix::fs::flock(&file, FlockOperation::NonBlockingLockExclusive).is_ok() {
        let _ = std::fs::remove_file(socket_path(repo));
        let _ = std::fs::remove_file(pid_path(repo));
    }
}

/// The pid file, for reading its lock.
fn open_pid_file(repo: &Repo) -> Result<File> {
    open_own_file(&pid_path(repo), std::fs::OpenOptions::new().read(true))
}

/// Where a daemon writes what it has to say.
pub fn log_path(repo: &Repo) -> PathBuf {
    dir(repo).join("log")
}

/// The base the last watched save recorded (token, tree, fingerprint).
pub fn base_path(repo: &Repo) -> PathBuf {
    dir(repo).join("base")
}

/// The watcher's directory, made if missing (readable by the user alone); refused if it
/// is a symlink, not a directory, or another user's.
pub fn own_dir(repo: &Repo) -> Result<PathBuf> {
    own_dir_at(dir(repo))
}

/// The directory `dir` (its parents made if missing), made if missing, readable by the
/// user alone; refused if it is a symlink, not a directory, or another user's.
pub(crate) fn own_dir_at(dir: PathBuf) -> Result<PathBuf> {
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
    }
    match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(Error::io(&dir, e)),
    }
    let meta = std::fs::symlink_metadata(&dir).map_err(|e| Error::io(&dir, e))?;
    let why = if meta.file_type().is_symlink() {
        "it is a symlink; remove it"
    } else if !meta.is_dir() {
        "it is not a directory; remove it"
    } else if meta.uid() != rustix::process::geteuid().as_raw() {
        "it belongs to another user; remove it"
    } else {
        return Ok(dir);
    };
    Err(Error::UnsafeFile {
        path: dir,
        why: why.into(),
    })
}

/// The watcher's directory as [`own_dir`] accepts it, without making it; `None` when it
/// is missing or not to be trusted (a save then walks).
pub(crate) fn trusted_dir(repo: &Repo) -> Option<PathBuf> {
    let dir = dir(repo);
    is_trusted_dir(&dir).then_some(dir)
}

/// Whether `dir` is a real directory of the user's own (not a symlink).
pub(crate) fn is_trusted_dir(dir: &Path) -> bool {
    std::fs::symlink_metadata(dir)
        .is_ok_and(|meta| meta.is_dir() && meta.uid() == rustix::process::geteuid().as_raw())
}

/// Opens a file of the watcher's directory with `options`, never through a symlink and
/// never blocking on a FIFO; refused unless it is a regular file with no other name (a
/// hard link planted there would make a write land in another file).
pub(crate) fn open_own_file(path: &Path, options: &mut OpenOptions) -> Result<File> {
    let file = options
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => Error::UnsafeFile {
                path: path.to_path_buf(),
                why: "it is a symlink; remove it".into(),
            },
            _ => Error::io(path, e),
        })?;
    let meta = file.metadata().map_err(|e| Error::io(path, e))?;
    if !meta.is_file() || meta.nlink() != 1 {
        return Err(Error::UnsafeFile {
            path: path.to_path_buf(),
            why: "it is not a regular file of its own; remove it".into(),
        });
    }
    Ok(file)
}

/// A fresh log file for a watcher started in the background, in place of any earlier
/// one (never written through a link planted in its place).
pub fn create_log(repo: &Repo) -> Result<File> {
    own_dir(repo)?;
    let path = log_path(repo);
    open_own_file(
        &path,
        OpenOptions::new().write(true).create(true).truncate(false),
    )
    .and_then(|file| {
        file.set_len(0).map_err(|e| Error::io(&path, e))?;
        Ok(file)
    })
}

/// The log a background watcher wrote, at most `limit` bytes of it, lossily as text;
/// empty if it cannot be read safely.
pub fn read_log(repo: &Repo, limit: u64) -> String {
    use std::io::Read;
    let mut text = Vec::new();
    if let Ok(file) = open_own_file(&log_path(repo), OpenOptions::new().read(true)) {
        let _ = file.take(limit).read_to_end(&mut text);
    }
    String::from_utf8_lossy(&text).into_owned()
}
