//! The share of the user's inotify limits that the watchers hook runs start may take.
//! The kernel lets one user hold a fixed number of inotify instances (128 unless set)
//! and of watched directories, over all of the user's programs: an agent that works in
//! many worktrees would otherwise leave a watcher in each, and editors and build tools
//! would fail to watch anything ("Too many open files"). Hook-started watchers
//! ([`super::start::auto_start`]) take at most a quarter of each ([`Share`]); a watcher
//! the user starts is the user's choice and is not counted.
//!
//! They are listed in a per-user registry directory ([`registry_dir`]). An entry is a
//! file `<id>.lock`, locked for as long as its watcher runs (the hook run that starts a
//! watcher makes and locks it, and hands the lock to the watcher, as it hands over the
//! start lock), and a file `<id>`: the watches its watcher holds or has reserved, when
//! its worktree was last in use, and its watcher directory. `<id>` is replaced whole
//! (written aside, then renamed), never read half-written. An entry whose lock nobody
//! holds is a watcher that died; whoever lists the registry removes it.
//!
//! Hook runs and watchers change the registry under its own lock: a hook run counts the
//! entries, makes room and adds its watcher's entry in one go ([`reserve`]), so hook runs
//! in several worktrees at once never start more watchers than the share; a watcher
//! reserves watches, [`WATCH_RESERVE`] at a time, the same way before it watches more
//! directories ([`Registration::room_for`]).
//!
//! When the share is taken, the watcher idle longest, if its worktree was not used for
//! [`EVICT_AFTER_IDLE`], is asked to make room; else no watcher starts, and the hook
//! run's saves walk as they do without one. A watcher that cannot reserve the watches its
//! worktree needs stops, and leaves how many in its directory ([`note_over_share`]):
//! hook runs start one again only once that many fit.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rustix::fs::FlockOperation;

use super::platform::{self, Limits};
use super::{client, open_own_file, own_dir_at};
use crate::{Error, Result};

/// Hook-started watchers take at most one part in this many of the user's inotify
/// instances and watches: the rest is the editors', the build tools' and the user's.
const SHARE_DIVISOR: u64 = 4;

/// A hook-started watcher whose worktree was not used for this long may be asked to
/// make room for another worktree's: one used within it is at work, and stopping it
/// would only make the two take turns.
pub const EVICT_AFTER_IDLE: Duration = Duration::from_secs(60);

/// How many watches a watcher reserves at a time, beyond those it holds.
pub const WATCH_RESERVE: u64 = 256;

/// How long a hook run waits for a watcher it asked to make room to go, and anyone for
/// the registry's lock (held only while entries are counted and written).
const WAIT: Duration = Duration::from_secs(2);

/// What the hook-started watchers of one user may hold in all.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Share {
    /// inotify instances: watchers.
    pub instances: u64,
    /// Watched directories.
    pub watches: u64,
}

impl Share {
    /// The share of `limits` (a quarter), at least one of each.
    pub fn of(limits: Limits) -> Share {
        Share {
            instances: (limits.instances / SHARE_DIVISOR).max(1),
            watches: (limits.watches / SHARE_DIVISOR).max(1),
        }
    }

    /// The share of this system's limits, as the kernel has them now.
    pub fn here() -> Result<Share> {
        platform::limits().map(Share::of).ok_or_else(|| {
            Error::InvalidArgument("the kernel's file-watching limits cannot be read".into())
        })
    }
}

/// [`EVICT_AFTER_IDLE`], or in test builds `GIT_CHECKPOINT_WATCH_EVICT_IDLE_MS`: a test
/// of which watcher makes room need not wait a minute.
fn evict_after_idle() -> Duration {
    if cfg!(feature = "test-hooks") {
        if let Some(ms) = std::env::var("GIT_CHECKPOINT_WATCH_EVICT_IDLE_MS")
            .ok()
            .and_then(|v| v.parse().ok())
        {
            return Duration::from_millis(ms);
        }
    }
    EVICT_AFTER_IDLE
}

/// The registry of the user's hook-started watchers:
/// `$XDG_STATE_HOME/git-checkpoint/watchers`, else
/// `~/.local/state/git-checkpoint/watchers`; `None` without either variable.
pub fn registry_dir() -> Option<PathBuf> {
    let state = std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .filter(|dir| dir.is_absolute())
        .or_else(|| {
            std::env::var_os("HOME")
                .map(PathBuf::from)
                .filter(|home| home.is_absolute())
                .map(|home| home.join(".local/state"))
        })?;
    Some(state.join("git-checkpoint").join("watchers"))
}

/// Milliseconds since the epoch, by the wall clock (entries are compared across
/// processes).
fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// One hook-started watcher, as its entry says.
struct Entry {
    id: String,
    /// Watches held or reserved.
    watches: u64,
    /// When its worktree was last in use (milliseconds since the epoch).
    active_ms: u64,
    /// Its watcher directory (`<git-dir>/checkpoint/watch`); `None` while the entry is
    /// being made.
    watch_dir: Option<PathBuf>,
}

/// The registry, locked by this process until dropped.
struct Registry {
    dir: PathBuf,
    _lock: File,
}

impl Registry {
    /// Takes the registry's lock, waiting at most [`WAIT`].
    fn lock() -> Result<Registry> {
        let dir = registry_dir().ok_or_else(|| {
            Error::InvalidArgument("neither XDG_STATE_HOME nor HOME is set".into())
        })?;
        let dir = own_dir_at(dir)?;
        let path = dir.join("lock");
        let lock = open_own_file(
            &path,
            OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false),
        )?;
        let deadline = Instant::now() + WAIT;
        while rustix::fs::flock(&lock, FlockOperation::NonBlockingLockExclusive).is_err() {
            if Instant::now() > deadline {
                return Err(Error::InvalidArgument(format!(
                    "{} stayed locked for {} seconds",
                    path.display(),
                    WAIT.as_secs()
                )));
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        Ok(Registry { dir, _lock: lock })
    }

    /// The entries of running watchers; those of watchers that died are removed.
    fn entries(&self) -> Vec<Entry> {
        let Ok(listing) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut entries = Vec::new();
        for item in listing.flatten() {
            let name = item.file_name();
            let Some(id) = name.to_str().and_then(|n| n.strip_suffix(".lock")) else {
                continue;
            };
            if !is_entry_id(id) {
                continue;
            }
            if !is_held(&self.dir.join(&name)) {
                remove_entry(&self.dir, id);
                continue;
            }
            entries.push(read_entry(&self.dir, id).unwrap_or(Entry {
                id: id.to_string(),
                watches: 0,
                active_ms: now_ms(),
                watch_dir: None,
            }));
        }
        entries
    }
}

/// Whether `id` is an entry's id as [`reserve`] makes them: 16 hex digits (an id given
/// on a command line names no other file).
fn is_entry_id(id: &str) -> bool {
    id.len() == 16 && id.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Whether a process holds the lock of the file at `path`.
fn is_held(path: &Path) -> bool {
    open_own_file(path, OpenOptions::new().read(true))
        .is_ok_and(|file| rustix::fs::flock(&file, FlockOperation::NonBlockingLockShared).is_err())
}

fn remove_entry(dir: &Path, id: &str) {
    let _ = std::fs::remove_file(dir.join(id));
    let _ = std::fs::remove_file(dir.join(format!("{id}.lock")));
}

/// Reads entry `id`: `watches <n>`, `active <ms>`, `dir <path>` lines.
fn read_entry(dir: &Path, id: &str) -> Option<Entry> {
    let mut text = Vec::new();
    open_own_file(&dir.join(id), OpenOptions::new().read(true))
        .ok()?
        .take(64 << 10)
        .read_to_end(&mut text)
        .ok()?;
    let mut lines = text.strip_suffix(b"\n")?.splitn(3, |&b| b == b'\n');
    let mut number = |key: &[u8]| -> Option<u64> {
        std::str::from_utf8(lines.next()?.strip_prefix(key)?)
            .ok()?
            .parse()
            .ok()
    };
    let watches = number(b"watches ")?;
    let active_ms = number(b"active ")?;
    let watch_dir = lines.next()?.strip_prefix(b"dir ")?;
    Some(Entry {
        id: id.to_string(),
        watches,
        active_ms,
        watch_dir: Some(PathBuf::from(std::ffi::OsStr::from_bytes(watch_dir))),
    })
}

/// Writes entry `id` whole: aside, then renamed over the old one.
fn write_entry(dir: &Path, id: &str, watches: u64, active_ms: u64, watch_dir: &Path) -> Result<()> {
    let aside = dir.join(format!("{id}.tmp"));
    let mut text = format!("watches {watches}\nactive {active_ms}\ndir ").into_bytes();
    text.extend_from_slice(watch_dir.as_os_str().as_bytes());
    text.push(b'\n');
    open_own_file(
        &aside,
        OpenOptions::new().write(true).create(true).truncate(true),
    )?
    .write_all(&text)
    .map_err(|e| Error::io(&aside, e))?;
    let path = dir.join(id);
    std::fs::rename(&aside, &path).map_err(|e| Error::io(&path, e))
}

/// The registry entry of a watcher about to be started, its lock held by this process:
/// the lock is to be inherited by the watcher ([`Reservation::lock`]). Dropped before
/// [`Reservation::handed_over`], it is removed.
pub struct Reservation {
    dir: PathBuf,
    id: String,
    lock: File,
    handed_over: bool,
}

impl Reservation {
    /// The entry's id, for the watcher's command line (`watch --auto --entry <id>`).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The entry's locked file, to be inherited by the watcher.
    pub fn lock(&self) -> &File {
        &self.lock
    }

    /// The watcher started: the entry is its own now, and lives as long as it runs.
    pub fn handed_over(mut self) {
        self.handed_over = true;
    }
}

impl Drop for Reservation {
    fn drop(&mut self) {
        if !self.handed_over {
            remove_entry(&self.dir, &self.id);
        }
    }
}

/// Whether a hook run may start a watcher.
pub enum Room {
    /// Yes: its entry is made ([`Reservation`]).
    Reserved(Reservation),
    /// No: the share is taken (why), and no watcher was idle long enough to make room.
    Full(String),
}

/// Makes room for one more hook-started watcher, that of the worktree whose watcher
/// directory is `watch_dir`, and makes its entry, under the registry's lock; when the
/// share is taken, asks the watchers idle longest to stop first, as long as they were
/// idle for [`EVICT_AFTER_IDLE`].
pub fn reserve(watch_dir: &Path) -> Result<Room> {
    let share = Share::here()?;
    let registry = Registry::lock()?;
    // A worktree whose watcher stopped for want of watches needs at least that many.
    let needed = over_share_noted(watch_dir).unwrap_or(1).max(1);
    if needed > share.watches {
        return Ok(Room::Full(format!(
            "its {needed} directories are more than the {} watches hook-started watchers may hold",
            share.watches
        )));
    }
    loop {
        let entries = registry.entries();
        let held: u64 = entries.iter().map(|e| e.watches).sum();
        if (entries.len() as u64) < share.instances && held + needed <= share.watches {
            return make_entry(&registry.dir, watch_dir).map(Room::Reserved);
        }
        let now = now_ms();
        let idle_enough = evict_after_idle().as_millis() as u64;
        let oldest = entries
            .iter()
            .filter(|e| e.watch_dir.is_some() && now.saturating_sub(e.active_ms) >= idle_enough)
            .min_by_key(|e| e.active_ms);
        let Some(Entry {
            id,
            watch_dir: Some(victim),
            ..
        }) = oldest
        else {
            return Ok(Room::Full(format!(
                "hook-started watchers hold their share of the user's file-watching limits \
                 ({} of {} watchers, {held} of {} watches) and none was idle for {} s",
                entries.len(),
                share.instances,
                share.watches,
                idle_enough / 1000
            )));
        };
        if !client::make_room(victim) || !wait_until_gone(&registry.dir, id) {
            return Ok(Room::Full(format!(
                "the idle watcher of {} did not make room",
                victim.display()
            )));
        }
    }
}

/// Waits (at most [`WAIT`]) until the watcher of entry `id` has gone.
fn wait_until_gone(dir: &Path, id: &str) -> bool {
    let lock = dir.join(format!("{id}.lock"));
    let deadline = Instant::now() + WAIT;
    while is_held(&lock) {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    remove_entry(dir, id);
    true
}

/// Makes a new entry for a watcher of `watch_dir`, locked by this process: the lock is
/// taken under a name no one lists, then renamed into place.
fn make_entry(dir: &Path, watch_dir: &Path) -> Result<Reservation> {
    let id = format!("{:016x}", rand::random::<u64>());
    let aside = dir.join(format!("{id}.lock.tmp"));
    let lock = open_own_file(
        &aside,
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false),
    )?;
    rustix::fs::flock(&lock, FlockOperation::NonBlockingLockExclusive)
        .map_err(|e| Error::io(&aside, e.into()))?;
    let reservation = Reservation {
        dir: dir.to_path_buf(),
        id,
        lock,
        handed_over: false,
    };
    write_entry(dir, &reservation.id, 0, now_ms(), watch_dir)?;
    let path = dir.join(format!("{}.lock", reservation.id));
    std::fs::rename(&aside, &path).map_err(|e| Error::io(&path, e))?;
    Ok(reservation)
}

/// A hook-started watcher's own entry, made by the hook run that started it: what it
/// holds and when its worktree was last in use. Removed when dropped.
pub struct Registration {
    dir: PathBuf,
    id: String,
    watch_dir: PathBuf,
    share: Share,
    /// The watches the entry says this watcher may hold.
    reserved: u64,
    /// When the entry last said the worktree was in use, and when that was written.
    written_active_ms: u64,
}

impl Registration {
    /// Entry `id`, which the hook run that started this watcher (of `watch_dir`) made.
    pub fn adopt(id: &str, watch_dir: &Path) -> Result<Registration> {
        // Its lock is the one this process inherited: held, and by no one else.
        let dir = registry_dir()
            .filter(|dir| is_entry_id(id) && is_held(&dir.join(format!("{id}.lock"))))
            .ok_or_else(|| {
                Error::InvalidArgument(format!("no running hook run made the watcher entry '{id}'"))
            })?;
        let registration = Registration {
            dir,
            id: id.to_string(),
            watch_dir: watch_dir.to_path_buf(),
            share: Share::here()?,
            reserved: 0,
            written_active_ms: now_ms(),
        };
        registration.write()?;
        Ok(registration)
    }

    fn write(&self) -> Result<()> {
        write_entry(
            &self.dir,
            &self.id,
            self.reserved,
            self.written_active_ms,
            &self.watch_dir,
        )
    }

    /// Whether this watcher, holding `held` watches, may watch one more directory:
    /// within its reservation, or once it reserved more, under the registry's lock, from
    /// what the other hook-started watchers leave of the share.
    pub fn room_for(&mut self, held: u64) -> bool {
        if held < self.reserved {
            return true;
        }
        let Ok(registry) = Registry::lock() else {
            return false;
        };
        let others: u64 = registry
            .entries()
            .iter()
            .filter(|e| e.id != self.id)
            .map(|e| e.watches)
            .sum();
        let left = self.share.watches.saturating_sub(others);
        let wanted = (held + WATCH_RESERVE).min(left);
        if wanted <= held {
            return false;
        }
        self.reserved = wanted;
        self.write().is_ok()
    }

    /// Records that the worktree was last in use at `last` (written when it moved by a
    /// second or more: hook runs compare idle times in seconds).
    pub fn note_activity(&mut self, last: Instant) {
        let active_ms = now_ms().saturating_sub(last.elapsed().as_millis() as u64);
        if active_ms >= self.written_active_ms + 1000 {
            self.written_active_ms = active_ms;
            let _ = self.write();
        }
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        remove_entry(&self.dir, &self.id);
    }
}

/// Notes in `watch_dir` that its worktree needs `watches` watched directories, more
/// than the share left its watcher, which stopped.
pub fn note_over_share(watch_dir: &Path, watches: u64) {
    let path = watch_dir.join("over-share");
    if let Ok(mut file) = open_own_file(
        &path,
        OpenOptions::new().write(true).create(true).truncate(true),
    ) {
        let _ = writeln!(file, "{watches}");
    }
}

/// Forgets [`note_over_share`]'s note: the worktree's watcher watches it all now.
pub fn clear_over_share(watch_dir: &Path) {
    let _ = std::fs::remove_file(watch_dir.join("over-share"));
}

/// The watches [`note_over_share`] noted for `watch_dir`, if any: hook runs start no
/// watcher there until that many fit in the share (`doctor` says so).
pub fn over_share_noted(watch_dir: &Path) -> Option<u64> {
    let mut text = String::new();
    open_own_file(&watch_dir.join("over-share"), OpenOptions::new().read(true))
        .ok()?
        .take(64)
        .read_to_string(&mut text)
        .ok()?;
    text.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_share_is_a_quarter_and_never_nothing() {
        let share = Share::of(Limits {
            instances: 128,
            watches: 8192,
        });
        assert_eq!((share.instances, share.watches), (32, 2048));
        let share = Share::of(Limits {
            instances: 2,
            watches: 3,
        });
        assert_eq!((share.instances, share.watches), (1, 1));
    }

    #[test]
    fn entry_ids_name_no_other_file() {
        assert!(is_entry_id("0123456789abcdef"));
        for bad in [
            "",
            "../../etc/passwd",
            "0123456789abcdeg",
            "0123456789abcdef0",
        ] {
            assert!(!is_entry_id(bad), "{bad}");
        }
    }
}
