//! Test builds only: inotify's events handed to the watcher as FSEvents hands events on
//! macOS, so that the watcher's contract there (an answer covers every change made before
//! the question, or says it cannot) is tested where the test suite runs. A thread reads
//! inotify as the events come and holds them back: the first event of a batch waits a
//! latency drawn between two bounds, and every event that comes meanwhile joins the batch;
//! events on the same path are coalesced into one, at the place of the first, their
//! changes merged (as FSEvents merges its flags); and with a rescan rate, now and then a
//! batch is dropped whole for one "events were lost" event, as FSEvents' `MustScanSubDirs`
//! with `UserDropped`/`KernelDropped` says. The watcher reads them through the same inbox
//! as macOS's, and waits for the same cookie before it answers.
//!
//! Selected by `GIT_CHECKPOINT_WATCH_DELAYED=<min ms>-<max ms>[:<n>]` in builds with the
//! `test-hooks` feature (src/fault.rs lists the test hooks): the latency's bounds, and
//! with `:<n>` one batch in `n` on average dropped for a rescan.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use inotify::Inotify;
use rustix::event::{PollFd, PollFlags};

use super::inbox::{self, Inbox, Outbox};
use super::inotify_queue::{read_now, READ_BUFFER};
use super::{Change, Event, WatchId};

/// The longest the thread sleeps before it looks whether the watcher is still there.
const LOOK_AGAIN: Duration = Duration::from_millis(100);

/// How late events are handed over, as the environment asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Delay {
    /// The shortest latency of a batch.
    min: Duration,
    /// The longest.
    max: Duration,
    /// One batch in this many, on average, is dropped for a rescan; `None`: never.
    rescan_one_in: Option<u32>,
}

impl Delay {
    /// The delay `GIT_CHECKPOINT_WATCH_DELAYED` asks for, in test builds only; `None`
    /// otherwise, or when it is not of the form `<min>-<max>[:<n>]`.
    pub(super) fn from_env() -> Option<Delay> {
        if !cfg!(feature = "test-hooks") {
            return None;
        }
        Delay::parse(&std::env::var("GIT_CHECKPOINT_WATCH_DELAYED").ok()?)
    }

    fn parse(text: &str) -> Option<Delay> {
        let (bounds, rescan) = match text.split_once(':') {
            Some((bounds, n)) => (bounds, Some(n.parse().ok().filter(|&n| n > 0)?)),
            None => (text, None),
        };
        let (min, max) = bounds.split_once('-')?;
        let (min, max): (u64, u64) = (min.parse().ok()?, max.parse().ok()?);
        (min <= max).then_some(Delay {
            min: Duration::from_millis(min),
            max: Duration::from_millis(max),
            rescan_one_in: rescan,
        })
    }

    fn latency(&self) -> Duration {
        rand::random_range(self.min..=self.max)
    }

    fn rescan(&self) -> bool {
        self.rescan_one_in
            .is_some_and(|n| rand::random_range(0..n) == 0)
    }
}

/// Starts the thread that reads `inotify` and hands its events over late; the watcher
/// reads them from the inbox returned. The thread ends once the inbox is dropped.
pub(super) fn start(inotify: Inotify, delay: Delay) -> std::io::Result<Inbox> {
    let (outbox, inbox) = inbox::pair()?;
    std::thread::Builder::new()
        .name("delayed events".into())
        .spawn(move || hold_back(inotify, delay, outbox))?;
    Ok(inbox)
}

/// The events read but not yet handed over, one per path.
#[derive(Default)]
struct Batch {
    events: Vec<Event>,
    /// Where each path's event is in `events`.
    slots: HashMap<(WatchId, Option<Vec<u8>>), usize>,
    /// When it is handed over; `None` while it is empty.
    due: Option<Instant>,
}

impl Batch {
    /// Adds `event`, merged into the event of the same path if the batch has one.
    fn add(&mut self, event: Event, delay: &Delay) {
        let key = (event.watch.clone(), event.name.clone());
        match self.slots.get(&key) {
            Some(&slot) => {
                let earlier = &mut self.events[slot].change;
                *earlier = merged(*earlier, event.change);
            }
            None => {
                self.slots.insert(key, self.events.len());
                self.events.push(event);
            }
        }
        self.due
            .get_or_insert_with(|| Instant::now() + delay.latency());
    }

    /// The batch's events, and the batch empty again.
    fn take(&mut self) -> Vec<Event> {
        self.slots.clear();
        self.due = None;
        std::mem::take(&mut self.events)
    }
}

/// The thread's loop: reads, holds back, hands over; returns once the watcher is gone or
/// inotify cannot be read (the inbox then tells the watcher, which goes blind).
fn hold_back(mut inotify: Inotify, delay: Delay, outbox: Outbox) {
    let mut buffer = vec![0u8; READ_BUFFER];
    let mut batch = Batch::default();
    while outbox.is_open() {
        let wait = batch.due.map_or(LOOK_AGAIN, |due| {
            due.saturating_duration_since(Instant::now())
                .min(LOOK_AGAIN)
        });
        let timeout = rustix::event::Timespec {
            tv_sec: 0,
            tv_nsec: i64::from(wait.subsec_nanos()),
        };
        let mut fds = [PollFd::new(&inotify, PollFlags::IN)];
        match rustix::event::poll(&mut fds, Some(&timeout)) {
            Ok(_) | Err(rustix::io::Errno::INTR) => {}
            Err(_) => return,
        }
        loop {
            match read_now(&mut inotify, &mut buffer) {
                Ok(events) if events.is_empty() => break,
                Ok(events) => events.into_iter().for_each(|e| batch.add(e, &delay)),
                Err(_) => return,
            }
        }
        if batch.due.is_some_and(|due| due <= Instant::now()) {
            let mut events = batch.take();
            if delay.rescan() {
                // The watcher looks at nothing but `overflow` in a lost-events event; the
                // first dropped event's watch stands in for "no watch".
                events.truncate(1);
                events[0].name = None;
                events[0].change = Change {
                    overflow: true,
                    ..Change::default()
                };
            }
            outbox.deliver(events);
        }
    }
}

/// `earlier` and a `later` change of the same path, as one: what either says happened,
/// and "only the attributes" only if both say so.
fn merged(earlier: Change, later: Change) -> Change {
    Change {
        overflow: earlier.overflow || later.overflow,
        unwatched: earlier.unwatched || later.unwatched,
        self_gone: earlier.self_gone || later.self_gone,
        is_dir: earlier.is_dir || later.is_dir,
        left: earlier.left || later.left,
        arrived: earlier.arrived || later.arrived,
        attributes_only: earlier.attributes_only && later.attributes_only,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_delay_reads_its_bounds_and_rescan_rate() {
        assert_eq!(
            Delay::parse("50-300"),
            Some(Delay {
                min: Duration::from_millis(50),
                max: Duration::from_millis(300),
                rescan_one_in: None,
            })
        );
        assert_eq!(
            Delay::parse("0-0:3").map(|d| d.rescan_one_in),
            Some(Some(3))
        );
        for bad in ["", "50", "300-50", "a-b", "50-300:0", "50-300:x"] {
            assert_eq!(Delay::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn merged_changes_keep_what_either_said() {
        let created = Change {
            arrived: true,
            is_dir: true,
            ..Change::default()
        };
        let touched = Change {
            attributes_only: true,
            ..Change::default()
        };
        let both = merged(created, touched);
        assert!(both.arrived && both.is_dir && !both.attributes_only);
        assert!(merged(touched, touched).attributes_only);
    }
}
