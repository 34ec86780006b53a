//! The watcher process: one thread that reads the kernel's file-change events (through
//! [`platform`]) into the [`Journal`] and answers the socket, so that an answer always
//! reflects every change made before the question. inotify queues an event in the very
//! system call that changes the file: the watcher reads the queue dry before it answers.
//! Where events arrive late (FSEvents), it writes a cookie in the worktree and reads
//! until the cookie's own event has come (`watch::cookie`); if it does not come in time,
//! the answer is "stale" and the save walks.
//!
//! Directories are watched one by one (the kernel's watches are not recursive). A directory that
//! appears (created, or moved in) is watched, and its whole subtree, *before* the event
//! that names it is numbered: the token that first covers the new directory is handed
//! out only once every change inside it raises an event, and the save that receives it
//! walks the new directory whole. A directory moved within the worktree keeps its
//! watches, which the re-add at its new path re-labels; one moved out of the worktree
//! loses them (its events would only name paths that are no longer there). (FSEvents'
//! stream sees the whole tree: there a watch is only this map's record of a directory,
//! which still lets the watcher pass by events in `.git` and the store as inotify does.)
//!
//! Lost events (the kernel queue overflowed, FSEvents' "rescan") restart the journal under a new instance id
//! after every directory is watched again; a directory that cannot be watched (the
//! `max_user_watches` limit, a permission) makes the journal blind: every token is
//! stale, and every save walks.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags};
use rustix::fs::FlockOperation;

use super::cookie::{self, Cookie};
use super::journal::{Journal, Since};
use super::platform::{self, Change, Event, Events, WatchId};
use super::share::{self, Registration};
use super::{client, Token};
use crate::format::path::join;
use crate::git::repo::Repo;
use crate::worktree::exempt::{is_watch_cookie, GitDirs};
use crate::worktree::walk::IgnoredPaths;
use crate::{Error, Result};

/// How often the watcher looks whether its worktree still exists and whether a save it
/// started has finished, when nothing else wakes it.
const TICK: Duration = Duration::from_millis(500);

/// `watch --save-after`: save once the worktree has been quiet this long.
pub struct Quiet {
    /// The quiet time.
    pub after: Duration,
    /// Makes the save; runs on its own thread, which asks this watcher like any save.
    pub save: Arc<dyn Fn() + Send + Sync>,
}

/// Why the watcher stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// `watch --stop` asked.
    Stopped,
    /// The worktree's top directory went away.
    WorktreeGone,
    /// Nothing happened for the idle time given to [`run`]: no event on a path a save
    /// captures, no question.
    Idle,
    /// A hook run asked it to make room for another worktree's watcher: hook-started
    /// watchers held their share of the user's inotify limits, and it was idle longest.
    MadeRoom,
    /// The worktree has more directories (at least `watches`) than the share of the
    /// user's inotify watches left this hook-started watcher.
    OverShare {
        /// The directories it found, watched or not.
        watches: u64,
    },
}

/// Runs the watcher of `repo`'s worktree until it is stopped, the worktree goes away, or
/// (with `idle_exit`) no event came on a path a save captures and no client asked for
/// that long. A hook-started watcher runs under its `registration` ([`share`]): it
/// watches no more directories than it can reserve, and makes room when asked.
/// `ready` is called once the socket answers. Fails at once if another watcher runs.
/// Where this system has no watcher ([`platform::available`]), fails before it touches
/// anything.
///
/// [`share`]: super::share
pub fn run(
    repo: &Repo,
    quiet: Option<Quiet>,
    idle_exit: Option<Duration>,
    registration: Option<Registration>,
    ready: impl FnOnce(),
) -> Result<Exit> {
    platform::available()?;
    super::own_dir(repo)?;
    let pid_path = super::pid_path(repo);
    let mut pid_file = super::open_own_file(
        &pid_path,
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false),
    )?;
    if rustix::fs::flock(&pid_file, FlockOperation::NonBlockingLockExclusive).is_err() {
        let mut text = String::new();
        let _ = pid_file.read_to_string(&mut text);
        return Err(Error::InvalidArgument(format!(
            "a watcher is already running on this worktree (pid {})",
            text.trim()
        )));
    }
    pid_file.set_len(0).map_err(|e| Error::io(&pid_path, e))?;
    writeln!(pid_file, "{}", std::process::id()).map_err(|e| Error::io(&pid_path, e))?;

    let socket = super::socket_path(repo);
    // Holding the lock, any socket here is a dead watcher's, and so is any cookie.
    let _ = std::fs::remove_file(&socket);
    cookie::remove_left_behind(&repo.root);
    let listener = UnixListener::bind(&socket).map_err(|e| Error::io(&socket, e))?;
    listener
        .set_nonblocking(true)
        .map_err(|e| Error::io(&socket, e))?;

    let events = Events::new(&repo.root).map_err(|e| Error::io(&repo.root, e))?;
    let root_meta = std::fs::metadata(&repo.root).map_err(|e| Error::io(&repo.root, e))?;
    // The ignore checker borrows its own copy: the watcher keeps one too.
    let walk_git_dirs = GitDirs::of(repo);
    let mut watcher = Watcher {
        root: repo.root.clone(),
        root_id: (root_meta.dev(), root_meta.ino()),
        git_dir: repo.git_dir.canonicalize().ok(),
        git_dirs: GitDirs::of(repo),
        events,
        wds: HashMap::new(),
        journal: Journal::new(),
        exit: None,
        last_change: None,
        last_activity: Instant::now(),
        // Without the rules (an excludes file cannot be read), every event is activity.
        ignored: IgnoredPaths::new(repo, &walk_git_dirs).ok(),
        registration,
        cookies: 0,
        awaited: None,
        sync_failing: false,
    };
    watcher.watch_tree(Vec::new());
    ready();
    let exit = match watcher.exit {
        Some(exit) => Ok(exit),
        None => {
            if watcher.registration.is_some() {
                share::clear_over_share(&super::dir(repo));
            }
            watcher.serve(&listener, quiet, idle_exit)
        }
    };
    if let Ok(Exit::OverShare { watches }) = exit {
        share::note_over_share(&super::dir(repo), watches);
    }
    drop(watcher);
    let _ = std::fs::remove_file(&socket);
    let _ = std::fs::remove_file(&pid_path);
    drop(pid_file);
    exit
}

struct Watcher<'r> {
    root: PathBuf,
    /// The top directory's device and inode: another directory made at the same path
    /// is not the worktree this watcher watched.
    root_id: (u64, u64),
    /// The repository's own directory, never watched, wherever it is.
    git_dir: Option<PathBuf>,
    /// The repository's own directories inside the worktree (the git dir, the common
    /// dir, the store), never watched: git's and the store's writes are no change of the
    /// worktree, and a save never captures them.
    git_dirs: GitDirs,
    events: Events,
    /// Each watched directory's worktree path.
    wds: HashMap<WatchId, Vec<u8>>,
    journal: Journal,
    exit: Option<Exit>,
    /// When the last change was journaled, for `--save-after`; `None` once saved.
    last_change: Option<Instant>,
    /// When the last event on a path a save captures arrived or a client last asked,
    /// for the idle exit and the registry.
    last_activity: Instant,
    /// Which paths a walk passes by: events there are no use of the worktree.
    ignored: Option<IgnoredPaths<'r>>,
    /// A hook-started watcher's entry in the registry of them.
    registration: Option<Registration>,
    /// How many cookies this watcher has written.
    cookies: u64,
    /// The name of the cookie whose event [`Watcher::sync`] waits for.
    awaited: Option<Vec<u8>>,
    /// The last sync failed (said once in the log, not at every save).
    sync_failing: bool,
}

fn is_dot_git(name: &[u8]) -> bool {
    name.eq_ignore_ascii_case(b".git")
}

impl Watcher<'_> {
    /// Watches the directory `top` (a worktree path) and every directory below it,
    /// except repositories' own `.git` directories. A hook-started watcher that cannot
    /// reserve another watch counts the directories left and stops
    /// ([`Exit::OverShare`]).
    fn watch_tree(&mut self, top: Vec<u8>) {
        let mut pending = vec![top];
        // The directories found once the share ran out, watched or not.
        let mut over_share: Option<u64> = None;
        while let Some(dir) = pending.pop() {
            let full = self.root.join(OsStr::from_bytes(&dir));
            if self.git_dir.as_deref() == Some(full.as_path()) || self.git_dirs.is(&dir) {
                continue;
            }
            let held = self.wds.len() as u64;
            if over_share.is_none()
                && self
                    .registration
                    .as_mut()
                    .is_some_and(|registration| !registration.room_for(held))
            {
                over_share = Some(held);
            }
            if let Some(found) = &mut over_share {
                *found += 1;
            } else {
                match self.events.add(&full) {
                    Ok(Some(wd)) => {
                        self.wds.insert(wd, dir.clone());
                    }
                    // Gone again, or replaced by a file: its parent's events say so.
                    Ok(None) => continue,
                    Err(e) => {
                        eprintln!(
                            "git-checkpoint watch: cannot watch {}: {e}; every save walks until the watcher restarts",
                            full.display()
                        );
                        self.journal.go_blind();
                        return;
                    }
                }
            }
            let Ok(entries) = std::fs::read_dir(&full) else {
                continue;
            };
            for entry in entries.flatten() {
                let name = entry.file_name();
                if is_dot_git(name.as_bytes()) {
                    continue;
                }
                if entry.file_type().is_ok_and(|t| t.is_dir()) {
                    pending.push(join(&dir, name.as_bytes()));
                }
            }
        }
        if let Some(watches) = over_share {
            // Directories went unwatched: no answer before the exit may vouch for them.
            self.journal.go_blind();
            self.exit = Some(Exit::OverShare { watches });
        }
    }

    /// Stops watching `top` and every directory below it (moved away: their events
    /// would carry paths they no longer have).
    fn unwatch_tree(&mut self, top: &[u8]) {
        let gone: Vec<WatchId> = self
            .wds
            .iter()
            .filter(|(_, path)| {
                path.strip_prefix(top)
                    .is_some_and(|rest| rest.is_empty() || rest.first() == Some(&b'/'))
            })
            .map(|(wd, _)| wd.clone())
            .collect();
        for wd in gone {
            self.wds.remove(&wd);
            self.events.remove(wd);
        }
    }

    /// Reads every queued event into the journal.
    fn drain(&mut self) {
        loop {
            let events = match self.events.read() {
                Ok(events) => events,
                Err(e) => {
                    if !self.journal.is_blind() {
                        eprintln!("git-checkpoint watch: reading events: {e}");
                        self.journal.go_blind();
                    }
                    return;
                }
            };
            if events.is_empty() {
                return;
            }
            for event in events {
                self.event(event);
            }
        }
    }

    fn event(&mut self, event: Event) {
        let Event {
            watch: wd,
            name,
            change,
        } = event;
        if change.overflow {
            // Events were lost: nothing journaled so far can be vouched for, and a
            // directory made meanwhile may be unwatched. Watch everything again (an
            // existing watch is kept), then start a new instance.
            self.last_activity = Instant::now();
            self.watch_tree(Vec::new());
            if !self.journal.is_blind() {
                self.journal.restart();
            }
            self.last_change = Some(Instant::now());
            return;
        }
        let Some(dir) = self.wds.get(&wd).cloned() else {
            return;
        };
        if change.unwatched {
            self.wds.remove(&wd);
        }
        let Some(name) = name else {
            if dir.is_empty() && (change.self_gone || change.unwatched) {
                self.exit = Some(Exit::WorktreeGone);
            }
            return;
        };
        if dir.is_empty() && is_watch_cookie(&name) {
            // The watcher's own, no change of the worktree.
            if self.awaited.as_deref() == Some(name.as_slice()) {
                self.awaited = None;
            }
            return;
        }
        let path = join(&dir, &name);
        if self.git_dirs.contains(&path) {
            return;
        }
        if is_dot_git(&name) {
            // A nested repository's `.git` came or went: whether its directory is a
            // linked worktree (not captured) may have changed, so it is looked at whole.
            // The top's own `.git` is the repository itself, never captured.
            if !dir.is_empty() {
                self.note(dir);
            }
            return;
        }
        let Change {
            is_dir,
            left,
            arrived,
            attributes_only,
            ..
        } = change;
        self.note_use(&path, &name, is_dir);
        if is_dir {
            if left {
                self.unwatch_tree(&path);
            }
            if arrived {
                self.watch_tree(path.clone());
            }
            // A directory's own times and mode are not part of a checkpoint.
            if attributes_only {
                return;
            }
        }
        self.note(path);
    }

    /// Counts an event on `path` (named `name`) as use of the worktree, for the idle
    /// exit, unless a walk passes the path by (an ignored build output is no use). A
    /// changed `.gitignore` makes the rules be read again.
    fn note_use(&mut self, path: &[u8], name: &[u8], is_dir: bool) {
        let passed_by = match &mut self.ignored {
            Some(ignored) => {
                if name == b".gitignore" {
                    ignored.forget_rules();
                }
                ignored.passes_by(path, is_dir)
            }
            None => false,
        };
        if !passed_by {
            self.last_activity = Instant::now();
        }
    }

    fn note(&mut self, path: Vec<u8>) {
        self.journal.record(path);
        self.last_change = Some(Instant::now());
    }

    /// Whether the worktree's top is still the directory this watcher watches.
    fn root_present(&self) -> bool {
        std::fs::metadata(&self.root).is_ok_and(|m| (m.dev(), m.ino()) == self.root_id)
    }

    fn serve(
        &mut self,
        listener: &UnixListener,
        quiet: Option<Quiet>,
        idle_exit: Option<Duration>,
    ) -> Result<Exit> {
        let mut saving: Option<JoinHandle<()>> = None;
        let mut last_tick = Instant::now();
        loop {
            let mut timeout = TICK;
            if let (Some(quiet), Some(last)) = (&quiet, self.last_change) {
                timeout = timeout.min(quiet.after.saturating_sub(last.elapsed()));
            }
            let ts = rustix::event::Timespec {
                tv_sec: timeout.as_secs() as i64,
                tv_nsec: i64::from(timeout.subsec_nanos()),
            };
            let mut fds = [
                PollFd::new(&self.events, PollFlags::IN),
                PollFd::new(listener, PollFlags::IN),
            ];
            match rustix::event::poll(&mut fds, Some(&ts)) {
                Ok(_) | Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(Error::io(&self.root, e.into())),
            }
            self.drain();
            loop {
                match listener.accept() {
                    Ok((stream, _)) => self.answer(stream),
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(Error::io(&self.root, e)),
                }
            }
            if last_tick.elapsed() >= TICK {
                last_tick = Instant::now();
                if let Some(registration) = &mut self.registration {
                    registration.note_activity(self.last_activity);
                }
                if !self.root_present() {
                    self.exit = Some(Exit::WorktreeGone);
                } else if idle_exit.is_some_and(|idle| self.last_activity.elapsed() >= idle)
                    // Never with a `--save-after` save running or still due.
                    && saving.is_none()
                    && (quiet.is_none() || self.last_change.is_none())
                {
                    self.exit = Some(Exit::Idle);
                }
            }
            if let Some(exit) = self.exit {
                if let Some(save) = saving.take() {
                    let _ = save.join();
                }
                return Ok(exit);
            }
            if saving.as_ref().is_some_and(JoinHandle::is_finished) {
                if let Some(save) = saving.take() {
                    let _ = save.join();
                }
            }
            if let (Some(quiet), Some(last), None) = (&quiet, self.last_change, &saving) {
                if last.elapsed() >= quiet.after {
                    // Changes after this point set `last_change` again, and save again.
                    self.last_change = None;
                    let save = Arc::clone(&quiet.save);
                    saving = Some(std::thread::spawn(move || save()));
                }
            }
        }
    }

    /// Journals every change made before now: reads the queue dry and, where events
    /// arrive late, reads on until the event of a cookie written now has come. `false`
    /// when that cannot be made sure (no cookie could be written, its event did not come
    /// within the time a save waits for an answer, or events were lost meanwhile).
    fn sync(&mut self) -> bool {
        self.drain();
        if !self.events.delivers_late() {
            return true;
        }
        if self.journal.is_blind() {
            // Every answer is stale: nothing to wait for.
            return false;
        }
        self.cookies += 1;
        let cookie = match Cookie::write(&self.root, self.cookies) {
            Ok(cookie) => cookie,
            Err(e) => return self.sync_failed(&format!("cannot write a cookie: {e}")),
        };
        self.awaited = Some(cookie.name().to_vec());
        let instance = self.journal.token().instance;
        let deadline = Instant::now() + client::answer_timeout();
        while self.awaited.is_some() {
            let left = deadline.saturating_duration_since(Instant::now());
            let lost = self.journal.token().instance != instance || self.journal.is_blind();
            if lost || self.exit.is_some() {
                // Events were lost, or the watcher stops: the answer is stale anyway.
                self.awaited = None;
                return false;
            }
            if left.is_zero() {
                self.awaited = None;
                return self.sync_failed("the cookie's event did not come in time");
            }
            let ts = rustix::event::Timespec {
                tv_sec: left.as_secs() as i64,
                tv_nsec: i64::from(left.subsec_nanos()),
            };
            let mut fds = [PollFd::new(&self.events, PollFlags::IN)];
            let _ = rustix::event::poll(&mut fds, Some(&ts));
            self.drain();
        }
        self.sync_failing = false;
        true
    }

    /// Notes that a sync failed, saying why in the log the first time in a row.
    fn sync_failed(&mut self, why: &str) -> bool {
        if !self.sync_failing {
            eprintln!("git-checkpoint watch: {why}; saves walk until a cookie comes back");
            self.sync_failing = true;
        }
        false
    }

    /// Answers one connection: `since <token>|none`, `ping`, `stop` or `make-room`.
    fn answer(&mut self, stream: UnixStream) {
        self.last_activity = Instant::now();
        let _ = stream.set_nonblocking(false);
        let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
        let _ = stream.set_write_timeout(Some(Duration::from_secs(2)));
        let mut line = String::new();
        let mut reader = BufReader::new(stream.take(256));
        if reader.read_line(&mut line).is_err() {
            return;
        }
        let mut stream = reader.into_inner().into_inner();
        let reply = match line.trim().split_once(' ').unwrap_or((line.trim(), "")) {
            ("since", token) => {
                let synced = self.sync();
                self.since(Token::decode(token), synced)
            }
            ("ping", _) => format!("watching {}\n", std::process::id()).into_bytes(),
            ("stop", _) => {
                self.exit = Some(Exit::Stopped);
                b"stopping\n".to_vec()
            }
            // Only a hook-started watcher makes room; one the user started stays.
            ("make-room", _) if self.registration.is_some() => {
                self.exit = Some(Exit::MadeRoom);
                b"stopping\n".to_vec()
            }
            _ => b"unknown request\n".to_vec(),
        };
        let _ = stream.write_all(&reply);
    }

    /// The answer to `since <token>`; stale unless the journal is `synced`: the save then
    /// walks, and the token it records is safe (a change the walk may miss has an event
    /// numbered after it).
    fn since(&self, token: Option<Token>, synced: bool) -> Vec<u8> {
        let now = self.journal.token().encode();
        match self.journal.since(token.filter(|_| synced)) {
            Since::Stale => format!("stale {now}\n").into_bytes(),
            Since::Paths(paths) => {
                let mut reply = format!("changes {now}\n").into_bytes();
                for path in paths {
                    reply.extend_from_slice(&path);
                    reply.push(0);
                }
                reply
            }
        }
    }
}
