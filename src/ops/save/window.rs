//! The reads of a streaming scan ([`super::stream`]): each walked entry the stat cache
//! cannot vouch for is read on rayon's threads while the walk goes on, and every entry
//! comes back out in path order, the order its directory's tree and the stat cache
//! want. At most [`WINDOW`] entries are between the two at a time.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use super::read::{ScanContext, Scanned};
use super::stat_match::Cached;
use crate::worktree::walk::{Kind, WalkEntry};
use crate::Result;

/// How many entries may wait between the walk and their turn in path order: enough to
/// keep every core reading past a large file, few enough to hold at any size of tree.
const WINDOW: usize = 4096;

/// An entry waiting for its turn.
enum Slot {
    /// Scanned already (the stat cache vouched for it).
    Done(WalkEntry, Result<Scanned>),
    /// Being read; its outcome comes back under this number.
    Reading(u64),
}

/// An entry and its scan, as a reader hands them back.
type Outcome = (u64, WalkEntry, Result<Scanned>);

/// The entries between the walk and their turn, and the reads under way.
pub(super) struct Window<'scope, 'c> {
    scope: &'scope rayon::Scope<'c>,
    context: &'c ScanContext<'c>,
    /// Reading buffers, one per read under way at most, reused.
    buffers: &'c Mutex<Vec<Vec<u8>>>,
    queue: VecDeque<Slot>,
    next: u64,
    results: crossbeam_channel::Receiver<Outcome>,
    results_tx: crossbeam_channel::Sender<Outcome>,
    /// Outcomes that came back before their turn.
    arrived: HashMap<u64, (WalkEntry, Result<Scanned>)>,
}

impl<'scope, 'c> Window<'scope, 'c> {
    /// A window whose reads run as tasks of `scope`.
    pub(super) fn new(
        scope: &'scope rayon::Scope<'c>,
        context: &'c ScanContext<'c>,
        buffers: &'c Mutex<Vec<Vec<u8>>>,
    ) -> Self {
        let (results_tx, results) = crossbeam_channel::unbounded();
        Window {
            scope,
            context,
            buffers,
            queue: VecDeque::new(),
            next: 0,
            results,
            results_tx,
            arrived: HashMap::new(),
        }
    }

    /// Takes the next walked entry with its stat cache entry: one the cache vouches for
    /// is scanned at once, any other is read on another thread. Hands every entry whose
    /// turn has come to `done`, in path order, and waits for turns while the window is
    /// full.
    pub(super) fn push(
        &mut self,
        entry: WalkEntry,
        cached: Option<Cached>,
        done: &mut dyn FnMut(WalkEntry, Result<Scanned>) -> Result<()>,
    ) -> Result<()> {
        let vouched = entry.kind == Kind::File && cached.as_ref().is_some_and(|c| c.vouches);
        if vouched {
            // Taken from the cache: nothing is read, no buffer is needed.
            let scanned = self.context.scan_one(&entry, cached, &mut Vec::new());
            self.queue.push_back(Slot::Done(entry, scanned));
        } else {
            let number = self.next;
            self.next += 1;
            let (context, buffers, results) = (self.context, self.buffers, self.results_tx.clone());
            self.scope.spawn(move |_| {
                let mut buf = buffers
                    .lock()
                    .ok()
                    .and_then(|mut b| b.pop())
                    .unwrap_or_default();
                // A panic must not leave the window waiting for this entry for ever.
                let scanned = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    context.scan_one(&entry, cached, &mut buf)
                }))
                .unwrap_or_else(|_| Err(crate::Error::Internal("a reader panicked".into())));
                if let Ok(mut free) = buffers.lock() {
                    free.push(buf);
                }
                // The window may be gone (the scan failed): nobody waits for this.
                let _ = results.send((number, entry, scanned));
            });
            self.queue.push_back(Slot::Reading(number));
        }
        self.hand_on(done, WINDOW)
    }

    /// Hands every remaining entry to `done` in path order, waiting for the reads.
    pub(super) fn finish(
        &mut self,
        done: &mut dyn FnMut(WalkEntry, Result<Scanned>) -> Result<()>,
    ) -> Result<()> {
        self.hand_on(done, 0)
    }

    /// Hands on the entries at the front whose turn has come, then waits for reads
    /// until at most `keep` entries are left.
    fn hand_on(
        &mut self,
        done: &mut dyn FnMut(WalkEntry, Result<Scanned>) -> Result<()>,
        keep: usize,
    ) -> Result<()> {
        while let Ok((number, entry, scanned)) = self.results.try_recv() {
            self.arrived.insert(number, (entry, scanned));
        }
        loop {
            match self.queue.front() {
                None => return Ok(()),
                Some(Slot::Done(..)) => {
                    if let Some(Slot::Done(entry, scanned)) = self.queue.pop_front() {
                        done(entry, scanned)?;
                    }
                }
                Some(&Slot::Reading(number)) => match self.arrived.remove(&number) {
                    Some((entry, scanned)) => {
                        self.queue.pop_front();
                        done(entry, scanned)?;
                    }
                    None if self.queue.len() > keep => match self.results.recv() {
                        Ok((number, entry, scanned)) => {
                            self.arrived.insert(number, (entry, scanned));
                        }
                        Err(_) => {
                            return Err(crate::Error::Internal(
                                "a reader of the scan stopped".into(),
                            ))
                        }
                    },
                    None => return Ok(()),
                },
            }
        }
    }
}
