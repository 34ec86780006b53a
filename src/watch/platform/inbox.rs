//! Events that another thread delivers in batches (FSEvents' dispatch queue on macOS, the
//! thread that holds inotify's events back in test builds), handed to the watcher's
//! thread: a channel of batches, and a socket pair whose bytes wake the watcher's
//! `poll` when a batch arrives. The watcher reads them as it reads inotify's queue:
//! [`Inbox`] is polled for readability and read dry.

use std::io::{Read, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, TryRecvError};
use std::sync::Arc;

use super::Event;

/// The delivering side.
pub(super) struct Outbox {
    batches: Sender<Vec<Event>>,
    wake: UnixStream,
    /// Cleared when the watcher drops its [`Inbox`]: nobody reads any more.
    open: Arc<AtomicBool>,
}

/// The watcher's side.
pub(super) struct Inbox {
    batches: Receiver<Vec<Event>>,
    wake: UnixStream,
    /// The delivering side's socket, kept open here too: a delivering thread that died
    /// never leaves a socket at its end, which `poll` would report ready for ever.
    _wake_sender: UnixStream,
    open: Arc<AtomicBool>,
}

/// A new, empty inbox and the outbox that delivers to it.
pub(super) fn pair() -> std::io::Result<(Outbox, Inbox)> {
    let (sender, receiver) = UnixStream::pair()?;
    sender.set_nonblocking(true)?;
    receiver.set_nonblocking(true)?;
    let (send, receive) = mpsc::channel();
    let open = Arc::new(AtomicBool::new(true));
    Ok((
        Outbox {
            batches: send,
            wake: sender.try_clone()?,
            open: Arc::clone(&open),
        },
        Inbox {
            batches: receive,
            wake: receiver,
            _wake_sender: sender,
            open,
        },
    ))
}

impl Outbox {
    /// Hands `batch` to the watcher, in order after the batches before it.
    pub(super) fn deliver(&self, batch: Vec<Event>) {
        if batch.is_empty() || self.batches.send(batch).is_err() {
            return;
        }
        // A full socket already holds a wakeup the watcher has not read.
        let _ = (&self.wake).write(&[1]);
    }

    /// Whether the watcher still reads what is delivered.
    pub(super) fn is_open(&self) -> bool {
        self.open.load(Ordering::Acquire)
    }
}

impl Inbox {
    /// Every event delivered so far, in order; empty when none is. An error once the
    /// delivering side has gone (its thread ended): no event will come again.
    pub(super) fn take(&mut self) -> std::io::Result<Vec<Event>> {
        // The wakeups first: a batch delivered after this read leaves a byte to wake on.
        let mut wakeups = [0u8; 256];
        while matches!((&self.wake).read(&mut wakeups), Ok(n) if n > 0) {}
        let mut events = Vec::new();
        loop {
            match self.batches.try_recv() {
                Ok(batch) => events.extend(batch),
                Err(TryRecvError::Empty) => return Ok(events),
                Err(TryRecvError::Disconnected) if events.is_empty() => {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::BrokenPipe,
                        "the file-change events stopped coming",
                    ))
                }
                Err(TryRecvError::Disconnected) => return Ok(events),
            }
        }
    }
}

/// Polled for readability: a batch has arrived.
impl AsFd for Inbox {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.wake.as_fd()
    }
}

impl Drop for Inbox {
    fn drop(&mut self) {
        self.open.store(false, Ordering::Release);
    }
}
