//! The walk of the whole worktree in path order, on every core, holding a bounded
//! window of it: the directories are listed in parallel ([`list_dir`]), each by the
//! first free thread, in the order the walk will need them, and at most [`AHEAD`] files
//! and symlinks ahead of what the walk has handed on; the walk hands on what they hold
//! in path-byte order (the order of git's index and of the stat cache's keys), so that
//! whoever takes it can match, read and build trees directory by directory and hold no
//! list of every file (docs/design.md, "Save", memory).
//!
//! Path order is a depth-first walk in which a directory's entries go in the order of
//! their names, a subdirectory's name taken with a slash after it (`a-b`, `a.txt`, then
//! the files of `a/`, then `a0`): the order in which git sorts its index. The directories
//! waiting to be listed are kept in that order too, so the one the walk needs next is
//! always the first of them.

use std::cmp::{Ordering as CmpOrdering, Reverse};
use std::collections::binary_heap::PeekMut;
use std::collections::{BinaryHeap, HashMap};
use std::ops::ControlFlow;
use std::panic::AssertUnwindSafe;
use std::sync::{Condvar, Mutex, MutexGuard};

use super::found::WalkEntry;
use super::parallel::{list_dir, Listed, WalkState};
use super::rules::DirRules;
use crate::model::dir_cache::DirListing;
use crate::{Error, Result};

/// How many files and symlinks the walk's threads may list ahead of the ones handed on:
/// enough to keep every thread busy, few enough that the window stays small at any size
/// of tree (a directory the walk needs next is listed whatever the window holds).
const AHEAD: usize = 8192;

/// What the walk hands on, in path order.
pub(super) enum Item {
    /// A file or symlink.
    Entry(WalkEntry),
    /// A listing made afresh and settled, which the directory cache may record.
    Listing(Vec<u8>, DirListing),
    /// A directory that is a linked worktree of the same repository, not entered.
    Linked(Vec<u8>),
    /// A FIFO, socket or device, never captured.
    Special(Vec<u8>),
    /// A temporary file an interrupted restore left behind, never captured.
    Leftover(Vec<u8>),
}

/// A directory waiting to be listed.
struct Pending {
    dir: Vec<u8>,
    rules: DirRules,
}

/// How two directories stand in path order: as their paths with a slash after each.
fn dir_order(a: &[u8], b: &[u8]) -> CmpOrdering {
    a.iter()
        .chain(std::iter::once(&b'/'))
        .cmp(b.iter().chain(std::iter::once(&b'/')))
}

/// Whether the file `path` comes before everything below the directory `dir` (a
/// sibling) in path order: before `dir` with a slash after it.
fn file_before_dir(path: &[u8], dir: &[u8]) -> bool {
    path.iter().cmp(dir.iter().chain(std::iter::once(&b'/'))) == CmpOrdering::Less
}

impl PartialEq for Pending {
    fn eq(&self, other: &Self) -> bool {
        self.dir == other.dir
    }
}

impl Eq for Pending {}

impl PartialOrd for Pending {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}

impl Ord for Pending {
    fn cmp(&self, other: &Self) -> CmpOrdering {
        dir_order(&self.dir, &other.dir)
    }
}

/// A listed directory waiting to be handed on.
struct Ready {
    listed: Listed,
    /// Its subdirectories' paths, in path order (their rules went with them to be
    /// listed).
    subdirs: Vec<Vec<u8>>,
}

/// What the walk's threads and the thread handing on share.
struct Shared {
    /// Directories to list, the first in path order on top.
    pending: BinaryHeap<Reverse<Pending>>,
    /// Directories listed and not yet handed on, by path.
    listed: HashMap<Vec<u8>, Result<Ready>>,
    /// How many files and symlinks `listed` holds.
    ahead: usize,
    /// The directory the handing thread waits for, if it waits.
    wanted: Option<Vec<u8>>,
    /// How many of the walk's threads wait for work.
    idle: usize,
    /// Set when the walk is over (done, or given up): the threads stop.
    over: bool,
}

impl Shared {
    /// Whether a thread may take the first directory waiting: the window has room, or it
    /// is the one the walk needs.
    fn may_list(&self) -> bool {
        self.pending.peek().is_some_and(|Reverse(next)| {
            self.ahead < AHEAD || self.wanted.as_ref() == Some(&next.dir)
        })
    }
}

/// The lock of [`Shared`] and its two wake-ups, each rung only for whoever waits on it:
/// on a tree of a few thousand files a wake-up of every thread at every directory costs
/// more than the listing (a futex call and a context switch each).
struct Sched {
    shared: Mutex<Shared>,
    /// Rung for the walk's threads: a directory to list, room in the window, the end.
    work: Condvar,
    /// Rung for the thread handing on: the directory it wants is listed.
    ready: Condvar,
}

impl Sched {
    fn lock(&self) -> MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn wait<'g>(&self, on: &Condvar, guard: MutexGuard<'g, Shared>) -> MutexGuard<'g, Shared> {
        on.wait(guard).unwrap_or_else(|e| e.into_inner())
    }

    /// Wakes as many idle threads as there are directories they may list now.
    fn wake_listers(&self, shared: &Shared) {
        if shared.idle == 0 || !shared.may_list() {
            return;
        }
        let listable = if shared.ahead < AHEAD {
            shared.pending.len()
        } else {
            1
        };
        for _ in 0..listable.min(shared.idle) {
            self.work.notify_one();
        }
    }
}

/// Walks the directory tree below the top of `state` (whose rules are `top`) in path
/// order, handing each file, symlink and listing to `each` as the walk comes to it.
/// Fails with the first error in path order, or the first `each` returns; the walk stops
/// there, and where `each` breaks.
pub(super) fn walk_in_order(
    state: &WalkState<'_>,
    top: DirRules,
    each: &mut dyn FnMut(Item) -> Result<ControlFlow<()>>,
) -> Result<ControlFlow<()>> {
    let sched = Sched {
        shared: Mutex::new(Shared {
            pending: BinaryHeap::from([Reverse(Pending {
                dir: Vec::new(),
                rules: top,
            })]),
            listed: HashMap::new(),
            ahead: 0,
            wanted: None,
            idle: 0,
            over: false,
        }),
        work: Condvar::new(),
        ready: Condvar::new(),
    };
    let threads = rayon::current_num_threads().max(1);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| list_ahead(state, &sched));
        }
        let handed = hand_on(&sched, state, each);
        sched.lock().over = true;
        sched.work.notify_all();
        handed
    })
}

/// One of the walk's threads: lists the first directory waiting, while the window has
/// room or it is the one the walk needs, until the walk is over.
fn list_ahead(state: &WalkState<'_>, sched: &Sched) {
    loop {
        let Pending { dir, rules } = {
            let mut shared = sched.lock();
            loop {
                if shared.over {
                    return;
                }
                if shared.may_list() {
                    if let Some(Reverse(next)) = shared.pending.pop() {
                        break next;
                    }
                }
                shared.idle += 1;
                shared = sched.wait(&sched.work, shared);
                shared.idle -= 1;
            }
        };
        let ready = list(state, &dir, rules);
        let mut shared = sched.lock();
        let ready = file(&mut shared, ready);
        let wanted = shared.wanted.as_ref() == Some(&dir);
        shared.listed.insert(dir, ready);
        sched.wake_listers(&shared);
        drop(shared);
        if wanted {
            sched.ready.notify_one();
        }
    }
}

/// The listing of `dir`, its subdirectories in path order.
fn list(state: &WalkState<'_>, dir: &[u8], rules: DirRules) -> Result<Listed> {
    // A panic must not leave the walk waiting for this directory for ever.
    let listed = std::panic::catch_unwind(AssertUnwindSafe(|| list_dir(state, dir, rules)))
        .unwrap_or_else(|_| Err(Error::Internal("a walk thread panicked".into())));
    listed.map(|mut listed| {
        listed
            .subdirs
            .sort_unstable_by(|a, b| dir_order(&a.0, &b.0));
        listed
    })
}

/// Files a listing as ready: its subdirectories join the directories to list, its files
/// and symlinks count in the window.
fn file(shared: &mut Shared, listed: Result<Listed>) -> Result<Ready> {
    listed.map(|mut listed| {
        let subdirs = listed.subdirs.iter().map(|(sub, _)| sub.clone()).collect();
        for (sub, rules) in listed.subdirs.drain(..) {
            shared.pending.push(Reverse(Pending { dir: sub, rules }));
        }
        shared.ahead += listed.batch.entries.len();
        Ready { listed, subdirs }
    })
}

/// The listing of `dir`, once it is made. When no thread has taken it yet (it is then
/// the first waiting, as the walk needs directories in path order), the thread handing
/// on lists it itself rather than wait for one to wake.
fn take(sched: &Sched, state: &WalkState<'_>, dir: &[u8]) -> Result<Ready> {
    let mut shared = sched.lock();
    let ready = match shared.listed.remove(dir) {
        Some(ready) => ready,
        None => match unlisted(&mut shared, dir) {
            Some(Pending { dir, rules }) => {
                drop(shared);
                let listed = list(state, &dir, rules);
                shared = sched.lock();
                let ready = file(&mut shared, listed);
                sched.wake_listers(&shared);
                ready
            }
            None => {
                shared.wanted = Some(dir.to_vec());
                // The window may be full: a thread may now list this one all the same.
                sched.wake_listers(&shared);
                loop {
                    if let Some(ready) = shared.listed.remove(dir) {
                        shared.wanted = None;
                        break ready;
                    }
                    shared = sched.wait(&sched.ready, shared);
                }
            }
        },
    };
    if let Ok(ready) = &ready {
        let was_full = shared.ahead >= AHEAD;
        shared.ahead -= ready.listed.batch.entries.len();
        if was_full {
            sched.wake_listers(&shared);
        }
    }
    ready
}

/// `dir`, taken from the directories waiting if no thread has taken it yet (it is then
/// the first of them: the walk needs directories in path order).
fn unlisted(shared: &mut Shared, dir: &[u8]) -> Option<Pending> {
    let first = shared.pending.peek_mut()?;
    (first.0.dir == dir).then(|| PeekMut::pop(first).0)
}

/// A directory being handed on: what is left of its files and subdirectories.
struct Frame {
    entries: std::iter::Peekable<std::vec::IntoIter<WalkEntry>>,
    subdirs: std::iter::Peekable<std::vec::IntoIter<Vec<u8>>>,
}

/// Hands on every directory's findings in path order, depth first, each directory's
/// files merged with its subdirectories by path.
fn hand_on(
    sched: &Sched,
    state: &WalkState<'_>,
    each: &mut dyn FnMut(Item) -> Result<ControlFlow<()>>,
) -> Result<ControlFlow<()>> {
    let mut stack = vec![match open(sched, state, Vec::new(), each)? {
        ControlFlow::Continue(frame) => frame,
        ControlFlow::Break(()) => return Ok(ControlFlow::Break(())),
    }];
    while let Some(frame) = stack.last_mut() {
        let file_first = match (frame.entries.peek(), frame.subdirs.peek()) {
            (Some(entry), Some(dir)) => file_before_dir(&entry.path, dir),
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => {
                stack.pop();
                continue;
            }
        };
        if file_first {
            if let Some(entry) = frame.entries.next() {
                if each(Item::Entry(entry))?.is_break() {
                    return Ok(ControlFlow::Break(()));
                }
            }
        } else if let Some(dir) = frame.subdirs.next() {
            match open(sched, state, dir, each)? {
                ControlFlow::Continue(frame) => stack.push(frame),
                ControlFlow::Break(()) => return Ok(ControlFlow::Break(())),
            }
        }
    }
    Ok(ControlFlow::Continue(()))
}

/// Takes the listing of `dir`, hands on what it found besides files and symlinks, and
/// returns the rest, to hand on in path order.
fn open(
    sched: &Sched,
    state: &WalkState<'_>,
    dir: Vec<u8>,
    each: &mut dyn FnMut(Item) -> Result<ControlFlow<()>>,
) -> Result<ControlFlow<(), Frame>> {
    let Ready { listed, subdirs } = take(sched, state, &dir)?;
    let Listed { batch, record, .. } = listed;
    let aside = (batch.linked_worktrees.into_iter().map(Item::Linked))
        .chain(batch.special.into_iter().map(Item::Special))
        .chain(batch.leftovers.into_iter().map(Item::Leftover))
        .chain(record.map(|listing| Item::Listing(dir, listing)));
    for item in aside {
        if each(item)?.is_break() {
            return Ok(ControlFlow::Break(()));
        }
    }
    Ok(ControlFlow::Continue(Frame {
        entries: batch.entries.into_iter().peekable(),
        subdirs: subdirs.into_iter().peekable(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Path order is the order of full paths as bytes: a file whose name is a prefix of a
    /// sibling directory's comes first, a name sorting before the slash goes before the
    /// directory's contents, one sorting after it after them.
    #[test]
    fn files_and_directories_go_in_the_order_of_their_full_paths() {
        assert!(file_before_dir(b"a/x", b"a/x-y"));
        assert!(file_before_dir(b"a/x.txt", b"a/x"));
        assert!(!file_before_dir(b"a/x0", b"a/x"));
        assert_eq!(dir_order(b"a-c", b"a"), CmpOrdering::Less);
        assert_eq!(dir_order(b"a", b"a0"), CmpOrdering::Less);
        assert_eq!(dir_order(b"", b"a"), CmpOrdering::Less);
    }
}
