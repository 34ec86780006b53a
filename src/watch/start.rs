//! Starting a watcher in the background: shared by `watch --daemon`, which then waits
//! until it answers, and an agent's hook run ([`auto_start`]), which does not wait.
//!
//! The watcher is the binary's own `watch` command ([`spawn`]), a child in its own
//! process group (a signal to the hook's or the shell's group does not reach it), with
//! stdin from `/dev/null` and its output in the watcher's log: it holds nothing of its
//! parent's open, so an agent that reads a hook's stdout to the end is not kept waiting
//! for the watcher to exit.
//!
//! One start at a time: a hook run takes an exclusive `flock` on `watch/start` before it
//! looks whether a watcher runs, and hands that lock to the child it starts (the same
//! open file, inherited), which holds it for as long as it runs. A second hook run at
//! the same moment fails that lock and starts nothing; the pid file's lock
//! ([`super::daemon::run`]) still settles a race with a watcher the user starts.
//!
//! A hook run starts one only within the share of the user's inotify limits that
//! hook-started watchers may take ([`share::reserve`]), which also hands the watcher its
//! registry entry's lock the same way.

use std::ffi::OsStr;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use rustix::fs::FlockOperation;

use super::share::{self, Room};
use super::{client, platform};
use crate::git::repo::Repo;
use crate::settings::Settings;
use crate::{Error, Result};

/// The arguments of the watcher a hook run starts for the worktree at `root`:
/// `-C <root> watch --auto --entry <entry>`, which exits when idle
/// (`checkpoint.watchIdleExit`, [`Settings::watch_idle_exit`]) and holds what its
/// registry entry ([`share::Reservation`]) reserves.
pub fn auto_args<'a>(root: &'a Path, entry: &'a str) -> [&'a OsStr; 6] {
    [
        OsStr::new("-C"),
        root.as_os_str(),
        OsStr::new("watch"),
        OsStr::new("--auto"),
        OsStr::new("--entry"),
        OsStr::new(entry),
    ]
}

/// The lock a hook run holds while it starts a watcher, and its watcher after.
pub fn start_lock_path(repo: &Repo) -> PathBuf {
    super::dir(repo).join("start")
}

/// Starts `program` (this binary) with `args` (a `watch` command line for `repo`'s
/// worktree; the child starts in this process's directory) in the background: its own
/// process group, no stdin, stdout and stderr to `log`. Returns at once; the caller
/// decides whether to wait for it to answer.
pub fn spawn<S: AsRef<OsStr>>(repo: &Repo, program: &Path, args: &[S], log: File) -> Result<Child> {
    let log_path = super::log_path(repo);
    let stdout = log.try_clone().map_err(|e| Error::io(&log_path, e))?;
    Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(stdout)
        .stderr(log)
        .process_group(0)
        .spawn()
        .map_err(|e| Error::io(program, e))
}

/// What [`auto_start`] did.
#[derive(Debug)]
pub enum AutoStart {
    /// `checkpoint.autoWatch` is false.
    Off,
    /// This system has no watcher ([`platform::available`]).
    Unavailable,
    /// A watcher runs already, or another hook run is starting one.
    Running,
    /// None was started: the watchers hook runs start hold their share of the user's
    /// inotify limits ([`share`]), for the reason given; the saves walk.
    OverShare(String),
    /// A watcher was started (it may not answer yet).
    Started {
        /// The watcher's process id.
        pid: u32,
    },
    /// It could not be started; the reason is in the watcher's log where it could be
    /// written.
    Failed(Error),
}

/// Starts the watcher of `repo`'s worktree in the background unless one runs (or
/// `checkpoint.autoWatch` is false, or this system has none), without waiting for it:
/// what an agent's hook run does after its save. Never fails the caller: a failure is
/// appended to the watcher's log and returned as [`AutoStart::Failed`]. `program` is
/// the binary to run ([`auto_args`]).
pub fn auto_start(repo: &Repo, settings: &Settings, program: &Path) -> AutoStart {
    match settings.auto_watch.get() {
        Ok(true) => {}
        Ok(false) => return AutoStart::Off,
        Err(e) => return failed(repo, e),
    }
    if platform::available().is_err() {
        return AutoStart::Unavailable;
    }
    // A bad idle time would only make the watcher fail at its start, at every hook run.
    if let Err(e) = settings.watch_idle_exit(true) {
        return failed(repo, e);
    }
    start(repo, program).unwrap_or_else(|e| failed(repo, e))
}

/// Takes the start lock, and with it starts a watcher unless one runs, or is being
/// started, or the share leaves no room for it.
fn start(repo: &Repo, program: &Path) -> Result<AutoStart> {
    super::own_dir(repo)?;
    let path = start_lock_path(repo);
    let lock = super::open_own_file(
        &path,
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false),
    )?;
    if rustix::fs::flock(&lock, FlockOperation::NonBlockingLockExclusive).is_err() {
        return Ok(AutoStart::Running);
    }
    // A watcher the user started holds only the pid file's lock.
    if super::is_locked(repo) {
        return Ok(AutoStart::Running);
    }
    let reservation = match share::reserve(&super::dir(repo))? {
        Room::Reserved(reservation) => reservation,
        Room::Full(why) => return Ok(AutoStart::OverShare(why)),
    };
    let log = super::create_log(repo)?;
    // The child inherits the locked files (the same open files, so the same locks): they
    // are released when the watcher exits, not when this process does.
    rustix::io::fcntl_setfd(&lock, rustix::io::FdFlags::empty())
        .map_err(|e| Error::io(&path, e.into()))?;
    rustix::io::fcntl_setfd(reservation.lock(), rustix::io::FdFlags::empty())
        .map_err(|e| Error::io(&path, e.into()))?;
    let child = spawn(repo, program, &auto_args(&repo.root, reservation.id()), log)?;
    reservation.handed_over();
    Ok(AutoStart::Started { pid: child.id() })
}

/// Stops the watcher hook runs started for `repo`'s worktree (`hooks uninstall`): one
/// that holds the start lock, which a watcher the user started does not. Its pid, or
/// `None` when none runs.
pub fn stop_hook_started(repo: &Repo) -> Result<Option<u32>> {
    let Ok(lock) = super::open_own_file(&start_lock_path(repo), OpenOptions::new().read(true))
    else {
        return Ok(None);
    };
    if rustix::fs::flock(&lock, FlockOperation::NonBlockingLockShared).is_ok() {
        return Ok(None);
    }
    drop(lock);
    client::stop(repo)
}

/// Appends why a watcher could not be started to the watcher's log (never written
/// through a link planted there); a log that cannot be written is let be.
fn failed(repo: &Repo, error: Error) -> AutoStart {
    let line = format!(
        "{} a hook run could not start the watcher: {error}\n",
        crate::clock::rfc3339(crate::clock::now_ns())
    );
    if super::own_dir(repo).is_ok() {
        if let Ok(mut log) = super::open_own_file(
            &super::log_path(repo),
            OpenOptions::new().append(true).create(true),
        ) {
            let _ = log.write_all(line.as_bytes());
        }
    }
    AutoStart::Failed(error)
}
