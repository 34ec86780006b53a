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
    /// Set when the walk is over (done, or given up): the threads stop.
    over: bool,
}

/// The lock and the wake-up of [`Shared`].
struct Sched {
    shared: Mutex<Shared>,
    wake: Condvar,
}

impl Sched {
    fn lock(&self) -> MutexGuard<'_, Shared> {
        self.shared.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn wait<'g>(&self, guard: MutexGuard<'g, Shared>) -> MutexGuard<'g, Shared> {
        self.wake.wait(guard).unwrap_or_else(|e| e.into_inner())
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
            over: false,
        }),
        wake: Condvar::new(),
    };
    let threads = rayon::current_num_threads().max(1);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| list_ahead(state, &sched));
        }
        let handed = hand_on(&sched, each);
        sched.lock().over = true;
        sched.wake.notify_all();
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
                let may = shared.pending.peek().is_some_and(|Reverse(next)| {
                    shared.ahead < AHEAD || shared.wanted.as_ref() == Some(&next.dir)
                });
                if may {
                    if let Some(Reverse(next)) = shared.pending.pop() {
                        break next;
                    }
                }
                shared = sched.wait(shared);
            }
        };
        // A panic must not leave the walk waiting for this directory for ever.
        let listed = std::panic::catch_unwind(AssertUnwindSafe(|| list_dir(state, &dir, rules)))
            .unwrap_or_else(|_| Err(Error::Internal("a walk thread panicked".into())));
        let mut shared = sched.lock();
        let ready = listed.map(|mut listed| {
            listed
                .subdirs
                .sort_unstable_by(|a, b| dir_order(&a.0, &b.0));
            let subdirs = listed.subdirs.iter().map(|(sub, _)| sub.clone()).collect();
            for (sub, rules) in listed.subdirs.drain(..) {
                shared.pending.push(Reverse(Pending { dir: sub, rules }));
            }
            shared.ahead += listed.batch.entries.len();
            Ready { listed, subdirs }
        });
        shared.listed.insert(dir, ready);
        drop(shared);
        sched.wake.notify_all();
    }
}

/// The listing of `dir`, once a thread has made it.
fn take(sched: &Sched, dir: &[u8]) -> Result<Ready> {
    let mut shared = sched.lock();
    shared.wanted = Some(dir.to_vec());
    sched.wake.notify_all();
    loop {
        if let Some(ready) = shared.listed.remove(dir) {
            shared.wanted = None;
            if let Ok(ready) = &ready {
                shared.ahead -= ready.listed.batch.entries.len();
            }
            return ready;
        }
        shared = sched.wait(shared);
    }
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
    each: &mut dyn FnMut(Item) -> Result<ControlFlow<()>>,
) -> Result<ControlFlow<()>> {
    let mut stack = vec![match open(sched, Vec::new(), each)? {
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
            match open(sched, dir, each)? {
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
    dir: Vec<u8>,
    each: &mut dyn FnMut(Item) -> Result<ControlFlow<()>>,
) -> Result<ControlFlow<(), Frame>> {
    let Ready { listed, subdirs } = take(sched, &dir)?;
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
