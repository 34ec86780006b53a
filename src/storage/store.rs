//! The store: one redb file per worktree at `<git-dir>/checkpoint/store.redb`.
//!
//! Its tables, with their keys and values, are listed once, in `tables.rs` (the table
//! constants, private to this layer) and in docs/design.md, "Tables"; values are
//! versioned records ([`crate::format::codec`]) or raw ids and bytes.
//!
//! redb lets one process open the file at a time and fails at once otherwise; [`Store::open`]
//! turns that into a bounded wait (docs/design.md invariant 4).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::RngCore;
use redb::{Builder, Database, DatabaseError, ReadOnlyDatabase, ReadableDatabase, ReadableTable};

use super::file::{StoreFile, SyncCounts};
use super::generation::read_generation;
use super::tables::*;
use super::{Snapshot, Transaction};
use crate::format::chunk::{ChunkParams, Hasher};
use crate::format::codec;
use crate::model::branch::BranchName;
use crate::model::operation::Invocation;
use crate::{Error, Result};

/// The layout of the tables: 1 = every chunk stored in its index entry; 2 = packs.
/// A store of format 1 is upgraded when it is first opened for writing (nothing is
/// rewritten: its chunks stay where they are, new ones go to packs), after which older
/// builds refuse it rather than misread it. Format 3 ([`LARGE_BLOCKS_FORMAT`]) is the
/// newest this build reads.
const STORE_FORMAT: u8 = 2;
const META_KEY: &str = "hash_key";
const META_CHUNKING: &str = "chunking";

/// redb's page cache. Its default (1 GiB) lets a first save of a big tree hold most of
/// what it writes in memory; saves stream chunks through and need little of it. Half of
/// it may hold pages not yet written to the file, which the final commit then writes
/// while nothing else runs: at 64 MiB, that made a third of a first save's time on a
/// 100 MB tree. 16 MiB still holds the stat cache of an 80k-file tree.
const STORE_CACHE_BYTES: usize = 16 << 20;
/// When the waiting process says that it waits.
const WAIT_NOTICE_AFTER: Duration = Duration::from_secs(1);

/// An open store, held exclusively by this process until dropped.
pub struct Store {
    pub(super) db: Database,
    /// The file it lives in.
    pub path: PathBuf,
    /// Names and cuts content with this store's key and parameters.
    pub hasher: Hasher,
    /// What opened it (a command line, an MCP tool call, a hook): the operation log
    /// records it with every operation committed through this store.
    pub invocation: Invocation,
    /// The file's syncs, told when the store closes. After `db`, so dropped after it: the
    /// close's own syncs are counted.
    _syncs: SyncNote,
}

/// Tells the trace, once the store file is closed, how many syncs redb asked of it and how
/// many reached the disk ([`StoreFile`]).
struct SyncNote(Arc<SyncCounts>);

impl Drop for SyncNote {
    fn drop(&mut self) {
        crate::trace::note(format_args!(
            "store: {} file syncs made, of {} asked",
            self.0.made(),
            self.0.asked()
        ));
    }
}

impl Store {
    /// Opens (creating on first use) the store at `path`. While another process holds it,
    /// retries with backoff for up to `timeout`, calling `on_wait` once after a second.
    pub(crate) fn open(path: &Path, timeout: Duration, on_wait: &mut dyn FnMut()) -> Result<Store> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        }
        let mut counts = None;
        let db = wait_for_lock(timeout, on_wait, || {
            let file = StoreFile::open(path)?;
            counts = Some(file.counts());
            Database::builder()
                .set_cache_size(STORE_CACHE_BYTES)
                .create_with_backend(file)
        })?
        .map_err(|e| open_error(path, e))?;
        let syncs = SyncNote(counts.unwrap_or_default());
        let (hasher, format) = init_meta(&db, path)?;
        if format < STORE_FORMAT {
            let txn = db.begin_write()?;
            txn.open_table(META)?
                .insert(META_FORMAT, [STORE_FORMAT].as_slice())?;
            txn.open_table(PACKS)?;
            txn.commit()?;
        }
        crate::fault::point("locked");
        Ok(Store {
            db,
            path: path.to_path_buf(),
            hasher,
            invocation: Invocation::Command(Vec::new()),
            _syncs: syncs,
        })
    }
}

/// A store opened only for reading: redb opens the file read-only, so the file stays
/// byte-identical (`log`, `show`, `status`, `diff`, `stats`, `gc --dry-run`). Holds the
/// file like [`Store`] does.
pub struct ReadStore {
    db: ReadDb,
    /// The file it lives in.
    pub path: PathBuf,
    /// Names content with this store's key and parameters.
    pub hasher: Hasher,
}

/// The database of a [`ReadStore`].
enum ReadDb {
    /// Opened read-only: the usual case.
    ReadOnly(ReadOnlyDatabase),
    /// A store that needs a repair a read-only open cannot make, and that a writable open
    /// could repair only in memory (a full disk keeps it from recording the repair): open
    /// for writing, used only for reading.
    Repaired(Database),
}

impl ReadDb {
    fn begin_read(&self) -> std::result::Result<redb::ReadTransaction, redb::TransactionError> {
        match self {
            ReadDb::ReadOnly(db) => db.begin_read(),
            ReadDb::Repaired(db) => db.begin_read(),
        }
    }
}

impl ReadStore {
    /// Opens the store at `path` read-only, waiting for another process as
    /// [`Store::open`] does. A store that does not exist yet, that an interrupted run
    /// left needing recovery (which redb refuses to do read-only), or of an older format,
    /// is first opened for writing once, which creates, repairs or upgrades it; a store
    /// that still needs recovery after that is kept open for writing (`ReadDb::Repaired`),
    /// and `on_repair` is told.
    pub(crate) fn open(
        path: &Path,
        timeout: Duration,
        on_wait: &mut dyn FnMut(),
        on_repair: &mut dyn FnMut(),
    ) -> Result<ReadStore> {
        // Bounded as the write cache is: a save's look reads the whole stat cache once,
        // and at redb's default (1 GiB) every page of it would stay in memory (8 MiB at
        // 100,000 files, 80 at a million).
        let attempt = || {
            Builder::new()
                .set_cache_size(STORE_CACHE_BYTES)
                .open_read_only(path)
        };
        let first = if path.exists() {
            wait_for_lock(timeout, on_wait, attempt)?
        } else {
            Err(DatabaseError::RepairAborted)
        };
        let db = match first {
            Err(DatabaseError::RepairAborted) => {
                drop(Store::open(path, timeout, on_wait)?);
                match wait_for_lock(timeout, on_wait, attempt)? {
                    Err(DatabaseError::RepairAborted) => {
                        on_repair();
                        ReadDb::Repaired(Store::open(path, timeout, on_wait)?.db)
                    }
                    other => ReadDb::ReadOnly(other.map_err(|e| open_error(path, e))?),
                }
            }
            other => ReadDb::ReadOnly(other.map_err(|e| open_error(path, e))?),
        };
        let (hasher, format) = {
            let txn = db.begin_read()?;
            hasher_from_meta(&txn.open_table(META)?, path)?
        };
        if format < STORE_FORMAT {
            drop(db);
            drop(Store::open(path, timeout, on_wait)?);
            return ReadStore::open(path, timeout, on_wait, on_repair);
        }
        Ok(ReadStore {
            db,
            path: path.to_path_buf(),
            hasher,
        })
    }
}

impl ReadStore {
    /// Opens the store at `path` read-only if that can be done at once and leaves the
    /// file as it is: `Ok(None)` when there is no store, another process has it open
    /// for writing, or it needs a recovery or upgrade (which [`ReadStore::open`] would
    /// make by writing). For tab completion, which must never wait and never write.
    pub(crate) fn open_now(path: &Path) -> Result<Option<ReadStore>> {
        if !path.exists() {
            return Ok(None);
        }
        let db = match Builder::new()
            .set_cache_size(STORE_CACHE_BYTES)
            .open_read_only(path)
        {
            Ok(db) => db,
            Err(DatabaseError::DatabaseAlreadyOpen | DatabaseError::RepairAborted) => {
                return Ok(None)
            }
            Err(e) => return Err(open_error(path, e)),
        };
        let (hasher, format) = {
            let txn = db.begin_read()?;
            hasher_from_meta(&txn.open_table(META)?, path)?
        };
        if format < STORE_FORMAT {
            return Ok(None);
        }
        Ok(Some(ReadStore {
            db: ReadDb::ReadOnly(db),
            path: path.to_path_buf(),
            hasher,
        }))
    }
}

/// Holds the store at `path` open read-only, so that no other process writes it, while
/// the caller looks at the file itself (verify copies it). `Ok(None)` when the file does
/// not open read-only (damaged, or needing a recovery this open will not make).
pub(in crate::storage) fn hold_read_only(
    path: &Path,
    timeout: Duration,
    on_wait: &mut dyn FnMut(),
) -> Result<Option<ReadOnlyDatabase>> {
    match wait_for_lock(timeout, on_wait, || Builder::new().open_read_only(path))? {
        Ok(db) => Ok(Some(db)),
        Err(_) => Ok(None),
    }
}

/// What looking at a store needs, whether it is open for writing ([`Store`]) or only for
/// reading ([`ReadStore`]).
pub trait StoreRead: Sync {
    /// A read view of the last committed state.
    fn snapshot(&self) -> Result<Snapshot<'_>>;
    /// Names and cuts content with this store's key and parameters.
    fn hasher(&self) -> &Hasher;
    /// The store's generation: it changes before every commit, so two reads that find it
    /// equal, each made with the store open, saw no commit between them (none from a
    /// build that predates it, which does not change it). 0 before the first.
    fn generation(&self) -> Result<u64>;
}

impl StoreRead for Store {
    fn snapshot(&self) -> Result<Snapshot<'_>> {
        Ok(Snapshot::new(self.db.begin_read()?, &self.hasher))
    }

    fn hasher(&self) -> &Hasher {
        &self.hasher
    }

    fn generation(&self) -> Result<u64> {
        read_generation(&self.path)
    }
}

impl StoreRead for ReadStore {
    fn snapshot(&self) -> Result<Snapshot<'_>> {
        Ok(Snapshot::new(self.db.begin_read()?, &self.hasher))
    }

    fn hasher(&self) -> &Hasher {
        &self.hasher
    }

    fn generation(&self) -> Result<u64> {
        read_generation(&self.path)
    }
}

/// A store open for reading or for writing, as a command that writes only when it must
/// (`save`) left it.
pub enum OpenedStore {
    /// Opened read-only; the file was not written.
    Read(ReadStore),
    /// Opened for writing.
    Write(Store),
}

impl StoreRead for OpenedStore {
    fn snapshot(&self) -> Result<Snapshot<'_>> {
        match self {
            OpenedStore::Read(store) => store.snapshot(),
            OpenedStore::Write(store) => store.snapshot(),
        }
    }

    fn hasher(&self) -> &Hasher {
        match self {
            OpenedStore::Read(store) => store.hasher(),
            OpenedStore::Write(store) => store.hasher(),
        }
    }

    fn generation(&self) -> Result<u64> {
        match self {
            OpenedStore::Read(store) => store.generation(),
            OpenedStore::Write(store) => store.generation(),
        }
    }
}

impl Store {
    /// A write transaction; nothing it does is seen until [`Transaction::commit`].
    pub fn transaction(&self) -> Result<Transaction<'_>> {
        Ok(Transaction::new(
            self.db.begin_write()?,
            &self.hasher,
            &self.path,
            &self.invocation,
        ))
    }

    /// Points HEAD of a store that has no HEAD and no branch yet at `branch`, so that its
    /// first checkpoint lands there (`checkpoint.defaultBranch`). A store in use is left
    /// as it is, and opening one costs only a read.
    pub fn init_head(&self, branch: &BranchName) -> Result<()> {
        if branch.as_str() == crate::model::branch::DEFAULT_BRANCH {
            return Ok(());
        }
        let is_new = {
            let read = self.db.begin_read()?;
            let state = read.open_table(STATE)?;
            let branches = read.open_table(BRANCHES)?;
            state.get(super::records::HEAD)?.is_none() && branches.first()?.is_none()
        };
        if is_new {
            let txn = self.transaction()?;
            txn.set_head(&crate::model::Head::Branch(branch.to_string()))?;
            txn.commit()?;
        }
        Ok(())
    }

    /// Compacts the file a step, giving the space of freed pages back; true while there
    /// is more to do. Each step is a two-phase commit of its own.
    pub fn compact(&mut self) -> Result<bool> {
        Ok(self.db.compact()?)
    }
}

/// Runs `attempt` (an open of the store file) until it stops failing with
/// `DatabaseAlreadyOpen`, with backoff, for up to `timeout`; calls `on_wait` once after a
/// second. Returns the last attempt's own result.
fn wait_for_lock<T>(
    timeout: Duration,
    on_wait: &mut dyn FnMut(),
    mut attempt: impl FnMut() -> Result<T, DatabaseError>,
) -> Result<Result<T, DatabaseError>> {
    let started = Instant::now();
    let mut noticed = false;
    let mut delay = Duration::from_millis(5);
    loop {
        match attempt() {
            Err(DatabaseError::DatabaseAlreadyOpen) => {
                let waited = started.elapsed();
                if waited >= timeout {
                    return Err(Error::StoreBusy {
                        seconds: waited.as_secs(),
                    });
                }
                if !noticed && waited >= WAIT_NOTICE_AFTER {
                    noticed = true;
                    on_wait();
                }
                std::thread::sleep(delay.min(timeout.saturating_sub(waited)));
                delay = (delay * 2).min(Duration::from_millis(200));
            }
            other => return Ok(other),
        }
    }
}

/// The error for a store file that does not open.
fn open_error(path: &Path, e: DatabaseError) -> Error {
    match e {
        DatabaseError::Storage(redb::StorageError::Corrupted(msg)) => {
            Error::Corrupt(format!("{}: {msg}", path.display()))
        }
        DatabaseError::Storage(redb::StorageError::Io(error))
            if error.raw_os_error() != Some(libc::ENOSPC) =>
        {
            Error::StoreIo {
                path: Some(path.to_path_buf()),
                error,
            }
        }
        e => Error::Store(format!("{}: {e}", path.display())),
    }
}

/// Reads the meta table, creating it (and every other table) in a new store, and refuses
/// a store written by a newer format.
fn init_meta(db: &Database, path: &Path) -> Result<(Hasher, u8)> {
    {
        let txn = db.begin_read()?;
        match txn.open_table(META) {
            Ok(meta) => return hasher_from_meta(&meta, path),
            Err(redb::TableError::TableDoesNotExist(_)) => {}
            Err(e) => return Err(e.into()),
        }
    }
    let mut key = [0u8; 32];
    rand::rng().fill_bytes(&mut key);
    let params = ChunkParams::default();
    let txn = db.begin_write()?;
    {
        let mut meta = txn.open_table(META)?;
        meta.insert(META_FORMAT, [STORE_FORMAT].as_slice())?;
        meta.insert(META_KEY, key.as_slice())?;
        meta.insert(META_CHUNKING, codec::encode(&params).as_slice())?;
        txn.open_table(CHUNKS)?;
        txn.open_table(PACKS)?;
        txn.open_table(TREES)?;
        txn.open_table(CHECKPOINTS)?;
        txn.open_table(BRANCHES)?;
        txn.open_table(STATE)?;
        txn.open_table(STAT_CACHE)?;
        txn.open_table(PINS)?;
    }
    txn.commit()?;
    Ok((Hasher::new(key, params), STORE_FORMAT))
}

fn hasher_from_meta(
    meta: &impl redb::ReadableTable<&'static str, &'static [u8]>,
    path: &Path,
) -> Result<(Hasher, u8)> {
    let get = |name: &str| -> Result<Vec<u8>> {
        meta.get(name)?
            .map(|v| v.value().to_vec())
            .ok_or_else(|| Error::Corrupt(format!("meta table lacks '{name}'")))
    };
    let format = match get(META_FORMAT)?.as_slice() {
        [found] if (1..=LARGE_BLOCKS_FORMAT).contains(found) => *found,
        [found] if *found > LARGE_BLOCKS_FORMAT => {
            return Err(Error::NewerFormat {
                path: path.to_path_buf(),
                found: *found,
                supported: LARGE_BLOCKS_FORMAT,
            })
        }
        _ => return Err(Error::Corrupt("meta format record is invalid".into())),
    };
    let key: [u8; 32] = get(META_KEY)?
        .try_into()
        .map_err(|_| Error::Corrupt("hash key has the wrong length".into()))?;
    let params: ChunkParams =
        codec::decode::<ChunkParams>(&get(META_CHUNKING)?, "chunking parameters")?.check()?;
    Ok((Hasher::new(key, params), format))
}
