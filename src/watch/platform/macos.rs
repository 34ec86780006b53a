//! The watcher's kernel interface on macOS: one FSEvents stream on the worktree's top,
//! recursive, with an event per file (`kFSEventStreamCreateFlagFileEvents`), delivered
//! on a dispatch queue of its own into the watcher's inbox (`inbox.rs`); and the mount
//! table from `getfsstat(2)`.
//!
//! FSEvents delivers late (its latency, here 10 ms, and the time fseventsd takes), so
//! [`Events::delivers_late`]: the watcher waits for a cookie's event before it answers
//! (`watch::cookie`). What an event says is read by `fsevents.rs`, which the test suite
//! runs everywhere; this file is only the stream. Nothing is asked of the kernel per
//! directory: the daemon's watches are the directories it keeps track of, named by
//! their worktree path, which is also what lets it pass by the events FSEvents reports
//! in directories it does not watch (`.git`, the store), as inotify never reports them.
//!
//! None of this can be run where the test suite runs; a Mac checks it with
//! `cargo test --test it watch` (docs/watcher.md).

use std::ffi::{c_char, c_int, c_void, CStr};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::Arc;

use dispatch2::{DispatchQueue, DispatchRetained};
use objc2_core_foundation::{CFArray, CFString};
use objc2_core_services as fs;

use super::fsevents::{self, flag};
use super::inbox::{self, Inbox, Outbox};
use super::{Event, Limits};

// The flags `fsevents.rs` reads are the SDK's.
const _: () = assert!(
    flag::MUST_SCAN_SUBDIRS == fs::kFSEventStreamEventFlagMustScanSubDirs
        && flag::USER_DROPPED == fs::kFSEventStreamEventFlagUserDropped
        && flag::KERNEL_DROPPED == fs::kFSEventStreamEventFlagKernelDropped
        && flag::EVENT_IDS_WRAPPED == fs::kFSEventStreamEventFlagEventIdsWrapped
        && flag::HISTORY_DONE == fs::kFSEventStreamEventFlagHistoryDone
        && flag::ROOT_CHANGED == fs::kFSEventStreamEventFlagRootChanged
        && flag::MOUNT == fs::kFSEventStreamEventFlagMount
        && flag::UNMOUNT == fs::kFSEventStreamEventFlagUnmount
        && flag::ITEM_CREATED == fs::kFSEventStreamEventFlagItemCreated
        && flag::ITEM_REMOVED == fs::kFSEventStreamEventFlagItemRemoved
        && flag::ITEM_INODE_META_MOD == fs::kFSEventStreamEventFlagItemInodeMetaMod
        && flag::ITEM_RENAMED == fs::kFSEventStreamEventFlagItemRenamed
        && flag::ITEM_MODIFIED == fs::kFSEventStreamEventFlagItemModified
        && flag::ITEM_FINDER_INFO_MOD == fs::kFSEventStreamEventFlagItemFinderInfoMod
        && flag::ITEM_CHANGE_OWNER == fs::kFSEventStreamEventFlagItemChangeOwner
        && flag::ITEM_XATTR_MOD == fs::kFSEventStreamEventFlagItemXattrMod
        && flag::ITEM_IS_DIR == fs::kFSEventStreamEventFlagItemIsDir
);

/// How long FSEvents gathers events before it delivers them (seconds): with
/// `NoDefer`, the first event after a quiet spell goes at once.
const LATENCY: f64 = 0.01;

/// FSEvents documents no per-user limit on streams; hook-started watchers keep to the
/// share of this many (a quarter, as of Linux's default 128 inotify instances).
const STREAMS: u64 = 128;

/// A watched directory: its worktree path (empty for the top).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct WatchId(Vec<u8>);

/// The stream on the worktree's top and the events it delivered.
pub(crate) struct Events {
    /// The worktree's top as the daemon names it: [`Events::add`] takes paths below it.
    root: PathBuf,
    /// Declared before the queue: stopped and released before the queue is.
    _stream: Stream,
    _queue: DispatchRetained<DispatchQueue>,
    inbox: Inbox,
}

/// What the stream's callback needs: owned by the stream, released with it.
struct Context {
    /// The worktree's top as FSEvents names paths (canonical).
    top: Vec<u8>,
    outbox: Outbox,
}

/// A started stream; stopped, invalidated and released when dropped.
struct Stream(fs::FSEventStreamRef);

impl Events {
    /// Starts a stream on `root` and everything below it, from now on.
    pub(crate) fn new(root: &Path) -> std::io::Result<Events> {
        let top = std::fs::canonicalize(root)?;
        let top_text = top.to_str().ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "the worktree's path is not UTF-8",
            )
        })?;
        let paths = CFArray::from_retained_objects(&[CFString::from_str(top_text)]);
        let (outbox, inbox) = inbox::pair()?;
        let context = Arc::into_raw(Arc::new(Context {
            top: top.as_os_str().as_bytes().to_vec(),
            outbox,
        }));
        let mut stream_context = fs::FSEventStreamContext {
            version: 0,
            info: context as *mut c_void,
            retain: None,
            release: Some(release_context),
            copyDescription: None,
        };
        // SAFETY: the context is copied into the stream, which owns `context` from now on
        // and hands it to `release_context` when released; `deliver` is of the type
        // FSEvents calls, with C-string paths (no `UseCFTypes`).
        let stream = unsafe {
            fs::FSEventStreamCreate(
                None,
                Some(deliver),
                &mut stream_context,
                paths.as_opaque(),
                fs::kFSEventStreamEventIdSinceNow,
                LATENCY,
                fs::kFSEventStreamCreateFlagFileEvents
                    | fs::kFSEventStreamCreateFlagNoDefer
                    | fs::kFSEventStreamCreateFlagWatchRoot,
            )
        };
        if stream.is_null() {
            // The context leaks: whether a failed create released it is not documented.
            return Err(std::io::Error::other("FSEvents made no stream"));
        }
        let stream = Stream(stream);
        let queue = DispatchQueue::new("git-checkpoint.watch", None);
        // SAFETY: the stream is valid until `Stream` drops it; the queue outlives it.
        let started = unsafe {
            fs::FSEventStreamSetDispatchQueue(stream.0, Some(&queue));
            fs::FSEventStreamStart(stream.0)
        };
        if !started {
            drop(stream);
            return Err(std::io::Error::other("FSEvents did not start the stream"));
        }
        Ok(Events {
            root: root.to_path_buf(),
            _stream: stream,
            _queue: queue,
            inbox,
        })
    }

    /// Always: FSEvents delivers after a latency.
    pub(crate) fn delivers_late(&self) -> bool {
        true
    }

    /// Watches the directory `dir`: the stream sees it already; the daemon keeps track
    /// of it by its worktree path. `None` when it is not a directory (any more).
    pub(crate) fn add(&mut self, dir: &Path) -> std::io::Result<Option<WatchId>> {
        let Ok(rel) = dir.strip_prefix(&self.root) else {
            return Ok(None);
        };
        let is_dir = std::fs::symlink_metadata(dir).is_ok_and(|meta| meta.is_dir());
        Ok(is_dir.then(|| WatchId(rel.as_os_str().as_bytes().to_vec())))
    }

    /// Stops watching a directory: nothing to tell FSEvents.
    pub(crate) fn remove(&mut self, _id: WatchId) {}

    /// The events delivered so far; empty when none is.
    pub(crate) fn read(&mut self) -> std::io::Result<Vec<Event>> {
        self.inbox.take()
    }
}

/// Polled for readability: a batch has arrived.
impl AsFd for Events {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.inbox.as_fd()
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // SAFETY: the stream was made by `FSEventStreamCreate` and is released once.
        unsafe {
            fs::FSEventStreamStop(self.0);
            fs::FSEventStreamInvalidate(self.0);
            fs::FSEventStreamRelease(self.0);
        }
    }
}

/// FSEvents' callback: hands the batch to the watcher, each event read by
/// `fsevents::translate`. Never panics (it runs inside CoreServices).
unsafe extern "C-unwind" fn deliver(
    _stream: fs::ConstFSEventStreamRef,
    info: *mut c_void,
    count: usize,
    paths: NonNull<c_void>,
    flags: NonNull<fs::FSEventStreamEventFlags>,
    _ids: NonNull<fs::FSEventStreamEventId>,
) {
    // SAFETY: `info` is the stream's `Context`, alive until `release_context`; without
    // `UseCFTypes`, `paths` is an array of `count` C strings and `flags` of `count` flags.
    let (context, paths, flags) = unsafe {
        (
            &*(info as *const Context),
            std::slice::from_raw_parts(paths.as_ptr() as *const *const c_char, count),
            std::slice::from_raw_parts(flags.as_ptr(), count),
        )
    };
    if !context.outbox.is_open() {
        // The watcher is stopping: nobody will read these.
        return;
    }
    let batch = paths
        .iter()
        .zip(flags)
        .filter_map(|(&path, &flags)| {
            // SAFETY: each path is a NUL-terminated string FSEvents owns for the call.
            let path = unsafe { CStr::from_ptr(path) }.to_bytes();
            let is_dir_now = || {
                std::fs::symlink_metadata(std::ffi::OsStr::from_bytes(path))
                    .is_ok_and(|meta| meta.is_dir())
            };
            let event = fsevents::translate(&context.top, path, flags, is_dir_now)?;
            Some(Event {
                watch: WatchId(event.dir),
                name: event.name,
                change: event.change,
            })
        })
        .collect();
    context.outbox.deliver(batch);
}

/// Releases the stream's `Context` with the stream.
unsafe extern "C-unwind" fn release_context(info: *const c_void) {
    // SAFETY: `info` is the `Arc::into_raw` of `Events::new`, released once.
    drop(unsafe { Arc::from_raw(info as *const Context) });
}

/// The share of FSEvents streams hook-started watchers keep to ([`STREAMS`]); no limit
/// on directories, which cost a stream nothing.
pub(crate) fn limits() -> Option<Limits> {
    Some(Limits {
        instances: STREAMS,
        watches: u64::MAX,
    })
}

/// Whether a filesystem is mounted strictly below the worktree's top `root`: FSEvents
/// does not follow a stream into another filesystem. Also when the mount table cannot
/// be read: then nothing is known.
pub(crate) fn mounts_below(root: &Path) -> bool {
    let (Some(points), Ok(root)) = (mount_points(), std::fs::canonicalize(root)) else {
        return true;
    };
    let root = root.as_os_str().as_bytes();
    points
        .iter()
        .any(|point| super::is_strictly_below(point, root))
}

/// The mount point of every mounted filesystem (`getfsstat(2)`, into a table of our
/// own); `None` when it cannot be read.
fn mount_points() -> Option<Vec<Vec<u8>>> {
    // SAFETY: a null table asks for the number of filesystems only.
    let count = unsafe { libc::getfsstat(std::ptr::null_mut(), 0, libc::MNT_NOWAIT) };
    // Room for filesystems mounted meanwhile; a full table is read again, larger.
    let mut capacity = usize::try_from(count).ok()? + 8;
    loop {
        // SAFETY: `statfs` is plain integers and arrays, for which zero is a value.
        let mut table = vec![unsafe { std::mem::zeroed::<libc::statfs>() }; capacity];
        let bytes = c_int::try_from(capacity * std::mem::size_of::<libc::statfs>()).ok()?;
        // SAFETY: `table` holds `bytes` bytes of `statfs` records.
        let got = unsafe { libc::getfsstat(table.as_mut_ptr(), bytes, libc::MNT_NOWAIT) };
        let got = usize::try_from(got).ok()?;
        if got < capacity {
            return Some(
                table[..got]
                    .iter()
                    .map(|fs| {
                        fs.f_mntonname
                            .iter()
                            .take_while(|&&c| c != 0)
                            .map(|&c| c as u8)
                            .collect()
                    })
                    .collect(),
            );
        }
        capacity *= 2;
    }
}
