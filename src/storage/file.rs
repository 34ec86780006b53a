//! The store file under redb, as a write open uses it: redb's own file backend, with the
//! syncs that make nothing more durable taken out.
//!
//! A write open, one commit and the close ask the disk for 6 `fdatasync`s (docs/performance.md,
//! "Where an unwatched hook run goes"): 1 when the open marks the header as in use, 1 for the
//! commit, then 4 when the store closes (redb records its allocator state with a two-phase
//! commit, then writes the clean-shutdown header, each half synced on its own). The commit's
//! sync is the durability a save promises; most of the rest sync nothing but the header.
//! On this disk each one costs about 4 ms, as much as a whole `git status` with a few.
//!
//! [`StoreFile`] keeps every write and its order to the disk, and changes only when a sync
//! asked for is made (docs/design.md invariant 26):
//! - A sync with nothing written since the last one is skipped: there is nothing to make
//!   durable.
//! - A sync that would make only the header durable (the first `HEADER_BYTES` of the file,
//!   nothing else written since the last sync) is owed, not made at once. It is made before
//!   the next write of any other byte or change of length, so nothing written after it can
//!   reach the disk before it, and at the latest when the file is closed. Another header
//!   write meanwhile replaces the header in the page cache, so a power cut finds on the disk
//!   the header of the last sync or one written after it, together with every page of the
//!   last sync: the state a power cut at some moment of redb's own sequence leaves, which
//!   redb's recovery handles.
//!
//! What is delayed so is only ever a header: redb's bookkeeping (the recovery flag of the
//! open, the second half of a two-phase commit, the clean-shutdown header). A commit that
//! changes the tables writes pages (copy on write gives it a new root page at least), so its
//! sync is made when redb asks: when [`redb::WriteTransaction::commit`] returns, the commit is
//! on the disk as before. A write open, a commit and the close now make 4 syncs (6 still
//! where the close trims free pages off the file's end, a small store: the change of
//! length waits for the owed sync).

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io;
use std::ops::Bound;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use redb::backends::FileBackend;
use redb::{BackendError, DatabaseError, StorageBackend};

/// The size of redb's database header at the start of the file (redb 4's `DB_HEADER_SIZE`:
/// the god byte, the layout and the two commit slots). redb writes it alone, at offset 0,
/// and only there; a write at 0 longer than this (a future redb with a bigger header) is
/// treated as any other write, whose syncs are made when asked.
const HEADER_BYTES: usize = 320;

/// How many syncs redb asked of one open file, and how many reached the disk.
#[derive(Debug, Default)]
pub(super) struct SyncCounts {
    asked: AtomicU64,
    made: AtomicU64,
}

impl SyncCounts {
    /// Syncs redb asked for.
    pub(super) fn asked(&self) -> u64 {
        self.asked.load(Ordering::Relaxed)
    }

    /// Syncs made (`fdatasync` calls).
    pub(super) fn made(&self) -> u64 {
        self.made.load(Ordering::Relaxed)
    }
}

/// What was written since the last sync made.
#[derive(Debug, Default)]
struct Unsynced {
    /// Bytes other than the header written, or the length changed.
    body: bool,
    /// The header written.
    header: bool,
    /// A sync asked for and not made yet (only the header was unsynced then).
    owed: bool,
}

/// The store file as a write open gives it to redb (see the module's doc). Generic over the
/// backend beneath so that a test can put a simulated disk there.
pub(super) struct StoreFile<B: StorageBackend = FileBackend> {
    inner: B,
    /// Held across each write, change of length and sync, so that the decision and the
    /// operation are one step for writes from several threads.
    unsynced: Mutex<Unsynced>,
    counts: Arc<SyncCounts>,
}

impl StoreFile<FileBackend> {
    /// Opens (creating it empty if missing) the file at `path` for a write open, as redb's
    /// own `Builder::create` does.
    pub(super) fn open(path: &Path) -> Result<StoreFile<FileBackend>, DatabaseError> {
        let file: File = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)?;
        Ok(StoreFile::new(FileBackend::new(file)?))
    }
}

impl<B: StorageBackend> StoreFile<B> {
    /// Puts the sync rules over `inner`.
    pub(super) fn new(inner: B) -> StoreFile<B> {
        StoreFile {
            inner,
            unsynced: Mutex::new(Unsynced::default()),
            counts: Arc::default(),
        }
    }

    /// The counts of this file, shared: they can be read after redb has closed it.
    pub(super) fn counts(&self) -> Arc<SyncCounts> {
        Arc::clone(&self.counts)
    }

    fn state(&self) -> MutexGuard<'_, Unsynced> {
        // A panic while held leaves flags that only ever ask for more syncs: safe to reuse.
        self.unsynced.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Makes a sync, clearing what it covers.
    fn sync_now(&self, unsynced: &mut Unsynced) -> io::Result<()> {
        self.inner.sync_data()?;
        self.counts.made.fetch_add(1, Ordering::Relaxed);
        *unsynced = Unsynced::default();
        Ok(())
    }

    /// Before anything but the header is written or the length changes: an owed sync is
    /// made, so that what follows never reaches the disk before the header it was owed for.
    fn before_body(&self, unsynced: &mut Unsynced) -> io::Result<()> {
        if unsynced.owed {
            self.sync_now(unsynced)?;
        }
        Ok(())
    }
}

impl<B: StorageBackend> fmt::Debug for StoreFile<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StoreFile")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

impl<B: StorageBackend> StorageBackend for StoreFile<B> {
    fn len(&self) -> io::Result<u64> {
        self.inner.len()
    }

    fn read(&self, offset: u64, out: &mut [u8]) -> io::Result<()> {
        self.inner.read(offset, out)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        let mut unsynced = self.state();
        self.before_body(&mut unsynced)?;
        self.inner.set_len(len)?;
        unsynced.body = true;
        Ok(())
    }

    fn sync_data(&self) -> io::Result<()> {
        self.counts.asked.fetch_add(1, Ordering::Relaxed);
        let mut unsynced = self.state();
        if unsynced.body {
            self.sync_now(&mut unsynced)
        } else {
            // Only the header, or nothing, since the last sync made: owed (made before the
            // next other write, or at close), or nothing to do.
            unsynced.owed |= unsynced.header;
            Ok(())
        }
    }

    fn write(&self, offset: u64, data: &[u8]) -> io::Result<()> {
        let mut unsynced = self.state();
        if offset == 0 && data.len() <= HEADER_BYTES {
            self.inner.write(offset, data)?;
            unsynced.header = true;
        } else {
            self.before_body(&mut unsynced)?;
            self.inner.write(offset, data)?;
            unsynced.body = true;
        }
        Ok(())
    }

    fn close(&self) -> io::Result<()> {
        // redb's last word (the clean-shutdown header) is synced here, once; the locks are
        // released whether it could be or not.
        let synced = {
            let mut unsynced = self.state();
            if unsynced.owed {
                self.sync_now(&mut unsynced)
            } else {
                Ok(())
            }
        };
        let closed = self.inner.close();
        synced.and(closed)
    }

    fn try_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.inner.try_lock_range(start, end)
    }

    fn try_lock_shared_range(
        &self,
        start: Bound<u64>,
        end: Bound<u64>,
    ) -> Result<bool, BackendError> {
        self.inner.try_lock_shared_range(start, end)
    }

    fn lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.inner.lock_range(start, end)
    }

    fn lock_shared_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.inner.lock_shared_range(start, end)
    }

    fn unlock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<(), BackendError> {
        self.inner.unlock_range(start, end)
    }

    fn query_lock_range(&self, start: Bound<u64>, end: Bound<u64>) -> Result<bool, BackendError> {
        self.inner.query_lock_range(start, end)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicU64;

    use redb::{Builder, Database, ReadableDatabase, TableDefinition};

    use super::*;

    const TABLE: TableDefinition<u64, &[u8]> = TableDefinition::new("t");
    /// A key rewritten by every commit, so that commits free pages as well as take them.
    const REWRITTEN: u64 = 1 << 40;
    /// Keys of filler, so that the file has room inside it as a store has.
    const BULK: u64 = 1 << 41;

    /// What is in the file now, and what a power cut would leave of it.
    #[derive(Default)]
    struct Platter {
        /// The file as the page cache has it.
        now: Vec<u8>,
        /// The file as of the last sync.
        durable: Vec<u8>,
        /// Every header written since the last sync, in order.
        headers: Vec<Vec<u8>>,
        /// Crash images checked so far.
        checked: u64,
    }

    /// A disk whose every step is a moment a power cut may come: at each write, change of
    /// length and sync, the states the disk may then hold are opened by redb and checked.
    #[derive(Clone)]
    struct Disk {
        platter: Arc<Mutex<Platter>>,
        /// Commits that returned: each one must be in every crash image from then on.
        committed: Arc<AtomicU64>,
        /// Whether to check crash images at every step (a test of counts alone does not).
        checking: bool,
        /// The value each commit stores under its key.
        value_of: fn(u64) -> Vec<u8>,
        scratch: Arc<tempfile::TempDir>,
    }

    impl fmt::Debug for Disk {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("Disk")
        }
    }

    impl Disk {
        fn new(checking: bool, value_of: fn(u64) -> Vec<u8>) -> Disk {
            Disk {
                platter: Arc::default(),
                committed: Arc::default(),
                checking,
                value_of,
                scratch: Arc::new(tempfile::tempdir().unwrap()),
            }
        }

        /// The states a power cut now may leave: what the last sync made durable, that with
        /// any header written since on top (a header is one sector), and all that was written.
        fn crash_images(platter: &Platter) -> Vec<Vec<u8>> {
            let mut images = vec![platter.durable.clone(), platter.now.clone()];
            for header in &platter.headers {
                let mut image = platter.durable.clone();
                if image.len() >= header.len() {
                    image[..header.len()].copy_from_slice(header);
                    images.push(image);
                }
            }
            images
        }

        /// Opens every crash image with redb (repairing it if it must) and checks that it
        /// is sound and holds every commit that returned.
        fn check(&self, platter: &mut Platter) {
            if !self.checking {
                return;
            }
            let committed = self.committed.load(Ordering::SeqCst);
            for image in Disk::crash_images(platter) {
                // A power cut while redb creates the file, before its magic number is
                // durable, leaves a file redb refuses whatever the backend: not ours to check.
                if !image.starts_with(b"redb") && !platter.durable.starts_with(b"redb") {
                    continue;
                }
                platter.checked += 1;
                let path = self.scratch.path().join("image.redb");
                std::fs::write(&path, &image).unwrap();
                let mut db = Database::create(&path)
                    .unwrap_or_else(|e| panic!("a crash image does not open: {e}"));
                db.check_integrity()
                    .unwrap_or_else(|e| panic!("a crash image fails its check: {e}"));
                if committed == 0 {
                    continue;
                }
                let read = db.begin_read().unwrap();
                let table = read.open_table(TABLE).unwrap();
                for key in 0..committed {
                    let value = table.get(key).unwrap().unwrap_or_else(|| {
                        panic!("commit {key} returned and a power cut loses it")
                    });
                    assert_eq!(value.value(), (self.value_of)(key).as_slice());
                }
                // The commits that returned, and one in flight at most.
                let made = table.range(0..REWRITTEN).unwrap().count() as u64;
                assert!(made <= committed + 1, "keys no commit made");
                if let Some(rewritten) = table.get(REWRITTEN).unwrap() {
                    let last = u64::from(rewritten.value()[0]);
                    assert!(last + 1 >= committed, "an older commit's value came back");
                }
            }
        }

        /// One step of the file. The states around a write of a page are those around the
        /// header writes and syncs that bound it (the page is in `now`, not in `durable`),
        /// so only the other steps are checked.
        fn event(&self, checked: bool, change: impl FnOnce(&mut Platter)) {
            let mut platter = self.platter.lock().unwrap();
            if checked {
                self.check(&mut platter);
            }
            change(&mut platter);
            if checked {
                self.check(&mut platter);
            }
        }
    }

    fn value_of(key: u64) -> Vec<u8> {
        vec![key as u8; 3000 + key as usize * 500]
    }

    fn small_value_of(key: u64) -> Vec<u8> {
        vec![key as u8; 100]
    }

    impl StorageBackend for Disk {
        fn len(&self) -> io::Result<u64> {
            Ok(self.platter.lock().unwrap().now.len() as u64)
        }

        fn read(&self, offset: u64, out: &mut [u8]) -> io::Result<()> {
            let platter = self.platter.lock().unwrap();
            let start = offset as usize;
            let bytes = platter
                .now
                .get(start..start + out.len())
                .ok_or_else(|| io::Error::other("read past the end"))?;
            out.copy_from_slice(bytes);
            Ok(())
        }

        fn set_len(&self, len: u64) -> io::Result<()> {
            // A length change is metadata that `fdatasync` makes durable: until then the
            // durable image keeps its length.
            self.event(true, |platter| platter.now.resize(len as usize, 0));
            Ok(())
        }

        fn sync_data(&self) -> io::Result<()> {
            self.event(true, |platter| {
                platter.durable = platter.now.clone();
                platter.headers.clear();
            });
            Ok(())
        }

        fn write(&self, offset: u64, data: &[u8]) -> io::Result<()> {
            let header = offset == 0 && data.len() <= HEADER_BYTES;
            self.event(header, |platter| {
                let start = offset as usize;
                platter.now[start..start + data.len()].copy_from_slice(data);
                if header {
                    platter.headers.push(data.to_vec());
                }
            });
            Ok(())
        }
    }

    /// One write open of the simulated disk: a commit of a new key (and the key every commit
    /// rewrites), optionally a compaction (redb's two-phase commits, owed syncs followed by
    /// page writes), then the close. Returns the file's counts.
    fn session(disk: &Disk, key: u64, compact: bool, bulk: u64) -> Arc<SyncCounts> {
        let file = StoreFile::new(disk.clone());
        let counts = file.counts();
        let mut db = Builder::new().create_with_backend(file).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut table = txn.open_table(TABLE).unwrap();
            table.insert(key, value_of(key).as_slice()).unwrap();
            table
                .insert(REWRITTEN, vec![key as u8; 9000].as_slice())
                .unwrap();
            for extra in 0..bulk {
                table.insert(BULK + extra, [7u8; 1000].as_slice()).unwrap();
            }
        }
        txn.commit().unwrap();
        disk.committed.store(key + 1, Ordering::SeqCst);
        // Durable as it returns: what the last sync made holds it.
        disk.check(&mut disk.platter.lock().unwrap());
        if compact {
            db.compact().unwrap();
        }
        drop(db);
        counts
    }

    #[test]
    fn a_power_cut_at_any_step_leaves_a_file_that_opens_with_every_commit_that_returned() {
        let disk = Disk::new(true, value_of);
        for key in 0..6 {
            session(&disk, key, key == 3, 0);
        }
        // And a file with room inside, where the close's header syncs are one.
        let disk = Disk::new(true, small_value_of);
        for key in 0..4 {
            let counts = small_session(&disk, key, 4000);
            if key > 0 {
                assert_eq!(counts.made(), 4, "session {key}");
            }
        }
        let checked = disk.platter.lock().unwrap().checked;
        assert!(checked > 100, "only {checked} crash images checked");
    }

    /// A write open of a file with room inside it, as a store in use has: a commit of a
    /// few small rows, then the close.
    fn small_session(disk: &Disk, key: u64, rows: u64) -> Arc<SyncCounts> {
        let file = StoreFile::new(disk.clone());
        let counts = file.counts();
        let db = Builder::new().create_with_backend(file).unwrap();
        let txn = db.begin_write().unwrap();
        {
            let mut table = txn.open_table(TABLE).unwrap();
            if key == 0 {
                for row in 0..rows {
                    table.insert(BULK + row, [7u8; 400].as_slice()).unwrap();
                }
            }
            table.insert(key, small_value_of(key).as_slice()).unwrap();
            table
                .insert(BULK + key * 97, [2u8; 400].as_slice())
                .unwrap();
        }
        txn.commit().unwrap();
        disk.committed.store(key + 1, Ordering::SeqCst);
        disk.check(&mut disk.platter.lock().unwrap());
        drop(db);
        counts
    }

    #[test]
    fn a_write_open_a_commit_and_the_close_make_four_syncs() {
        let disk = Disk::new(false, small_value_of);
        small_session(&disk, 0, 4000);
        for key in 1..6 {
            let counts = small_session(&disk, key, 4000);
            // redb asks for 6: the open's header, the commit, and 4 in the close. The
            // commit's is made; the open's header is owed until the commit's first page
            // goes out, the close's two header-only ones and its empty one are one sync at
            // the close.
            assert_eq!((counts.asked(), counts.made()), (6, 4), "session {key}");
        }
    }
}
