//! Raw access to a store file, for tests that craft or inspect records the commands
//! would never write: the on-disk table layout as the tests' own definitions, and the
//! file opened straight through redb.
//!
//! The library keeps its table definitions private to its storage layer. These mirror
//! docs/design.md's table list ("Tables") on purpose, copied rather than imported: a
//! change to the on-disk layout (a table's name, key type or value type) must show up
//! here as a failing test, not pass silently because the tests followed the library.

use std::path::Path;
use std::time::Duration;

use git_checkpoint::format::chunk::Hasher;
use git_checkpoint::storage::Store;
use redb::TableDefinition;

/// Store-wide settings: `format`, `hash_key`, `chunking`.
pub const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
/// The chunk index: by chunk id, where the chunk is (in a pack, or inline).
pub const CHUNKS: TableDefinition<u128, &[u8]> = TableDefinition::new("chunks");
/// Packs of stored chunks, by sequence number.
pub const PACKS: TableDefinition<u64, &[u8]> = TableDefinition::new("packs");
/// Tree records by id.
pub const TREES: TableDefinition<u128, &[u8]> = TableDefinition::new("trees");
/// Checkpoint records by id.
pub const CHECKPOINTS: TableDefinition<u128, &[u8]> = TableDefinition::new("checkpoints");
/// Branch name to checkpoint id.
pub const BRANCHES: TableDefinition<&str, u128> = TableDefinition::new("branches");
/// Small named records: `head`, `restoring`.
pub const STATE: TableDefinition<&str, &[u8]> = TableDefinition::new("state");
/// Worktree path to the metadata and content ids seen at the last save.
pub const STAT_CACHE: TableDefinition<&[u8], &[u8]> = TableDefinition::new("stat_cache");
/// Pinned checkpoints.
pub const PINS: TableDefinition<u128, ()> = TableDefinition::new("pins");

/// Opens the existing store file at `path` (`<worktree>/.git/checkpoint/store.redb`,
/// [`super::Repo::store_path`]) for raw reads and writes. redb holds the file
/// exclusively while the returned database lives: drop it before running a command (or
/// opening a [`Store`]) on the same store.
pub fn open(path: &Path) -> redb::Database {
    redb::Database::create(path).unwrap_or_else(|e| panic!("open {} raw: {e}", path.display()))
}

/// The hasher of the store at `path` (its key and chunking parameters), to name crafted
/// records as the store would. Opens the store through the library and closes it again
/// before returning, so that [`open`] can take the file.
pub fn hasher(path: &Path) -> Hasher {
    let store = Store::open(path, Duration::from_secs(5), &mut || {})
        .unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    store.hasher.clone()
}
