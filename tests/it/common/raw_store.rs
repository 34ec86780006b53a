//! Raw access to a store file, for tests that craft or inspect records the commands
//! would never write: the on-disk table layout as the tests' own definitions, and the
//! file opened straight through redb.
//!
//! The library keeps its table definitions private to its storage layer. These mirror
//! docs/design.md's table list ("Tables") on purpose, copied rather than imported: a
//! change to the on-disk layout (a table's name, key type or value type) must show up
//! here as a failing test, not pass silently because the tests followed the library.

use std::path::Path;

use git_checkpoint::format::chunk::{encode_chunk, Hasher};
use git_checkpoint::format::codec;
use git_checkpoint::model::tree::{Entry, Node, Tree};
use git_checkpoint::model::Checkpoint;
use git_checkpoint::ops::workspace::Workspace;
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
/// Fetched branches, `<remote>/<branch>`, to their tips.
pub const REMOTE_BRANCHES: TableDefinition<&str, u128> = TableDefinition::new("remote_branches");
/// Pinned checkpoints.
pub const PINS: TableDefinition<u128, ()> = TableDefinition::new("pins");
/// The operation log: a number that only grows to a codec `Operation`.
pub const OPERATIONS: TableDefinition<u64, &[u8]> = TableDefinition::new("operations");
/// Checkpoints `drop` took out of the history, kept for undo: id to the record's bytes.
pub const DROPPED: TableDefinition<u128, &[u8]> = TableDefinition::new("dropped");

/// Opens the existing store file at `path` (`<worktree>/.git/checkpoint/store.redb`,
/// [`super::Repo::store_path`]) for raw reads and writes. redb holds the file
/// exclusively while the returned database lives: drop it before running a command (or
/// opening a [`Store`]) on the same store.
pub fn open(path: &Path) -> redb::Database {
    redb::Database::create(path).unwrap_or_else(|e| panic!("open {} raw: {e}", path.display()))
}

/// The hasher of the store at `path` (its key and chunking parameters), to name crafted
/// records as the store would. Opens the store through the library, as the worktree's
/// workspace opens it (`path` is `<worktree>/.git/checkpoint/store.redb`), and closes it
/// again before returning, so that [`open`] can take the file.
pub fn hasher(path: &Path) -> Hasher {
    let worktree = path
        .ancestors()
        .nth(3)
        .expect("<worktree>/.git/checkpoint/store.redb");
    let store = Workspace::discover(worktree, Default::default())
        .and_then(|workspace| workspace.open_store(&mut || {}))
        .unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    store.hasher.clone()
}

/// Writes a checkpoint whose root holds one file, `dir_name/file_name` (or `file_name`
/// at the top), and points the `evil` branch at it.
pub fn plant(store_path: &Path, dir_name: Option<&[u8]>, file_name: &[u8]) {
    let hasher = hasher(store_path);
    let db = open(store_path);
    let content = b"planted by a hostile store\n";
    let chunk = hasher.chunk_id(content);
    let file = Node::File {
        size: content.len() as u64,
        executable: false,
        chunks: vec![chunk],
    };
    let txn = db.begin_write().unwrap();
    {
        let mut chunks = txn.open_table(CHUNKS).unwrap();
        chunks
            .insert(chunk.0, encode_chunk(content, 3).as_slice())
            .unwrap();
        let mut trees = txn.open_table(TREES).unwrap();
        let mut put = |tree: Tree| {
            let bytes = codec::encode(&tree);
            let id = hasher.tree_id(&bytes);
            trees.insert(id.0, bytes.as_slice()).unwrap();
            id
        };
        let leaf = Entry {
            name: file_name.to_vec(),
            node: file,
        };
        let root = match dir_name {
            Some(dir) => {
                let inner = put(Tree {
                    entries: vec![leaf],
                });
                put(Tree {
                    entries: vec![Entry {
                        name: dir.to_vec(),
                        node: Node::Dir { tree: inner },
                    }],
                })
            }
            None => put(Tree {
                entries: vec![leaf],
            }),
        };
        let record = Checkpoint {
            tree: root,
            time_ns: 1,
            message: "hostile".into(),
            files: 1,
            bytes: content.len() as u64,
            ..Checkpoint::default()
        };
        let bytes = codec::encode(&record);
        let id = hasher.checkpoint_id(&bytes);
        txn.open_table(CHECKPOINTS)
            .unwrap()
            .insert(id.0, bytes.as_slice())
            .unwrap();
        txn.open_table(BRANCHES)
            .unwrap()
            .insert("evil", id.0)
            .unwrap();
    }
    txn.commit().unwrap();
}

/// Writes a chunk holding `content` and an empty tree that no checkpoint names, as an
/// interrupted writer of an older version could leave them: data nothing reaches, which
/// `verify` counts as garbage and `gc` deletes.
pub fn plant_unreachable(store_path: &Path, content: &[u8]) {
    let hasher = hasher(store_path);
    let db = open(store_path);
    let txn = db.begin_write().unwrap();
    {
        txn.open_table(CHUNKS)
            .unwrap()
            .insert(
                hasher.chunk_id(content).0,
                encode_chunk(content, 3).as_slice(),
            )
            .unwrap();
        let tree = codec::encode(&Tree::default());
        txn.open_table(TREES)
            .unwrap()
            .insert(hasher.tree_id(&tree).0, tree.as_slice())
            .unwrap();
    }
    txn.commit().unwrap();
}

/// Rewrites the value of `key` in `table` of the store at `path` with `edit` (a test
/// damaging a record, an index entry or a pack on purpose).
pub fn edit<K: redb::Key + 'static>(
    path: &Path,
    table: TableDefinition<K, &[u8]>,
    key: K::SelfType<'_>,
    edit: impl FnOnce(&mut Vec<u8>),
) {
    use redb::ReadableTable;
    let db = open(path);
    let txn = db.begin_write().unwrap();
    {
        let mut table = txn.open_table(table).unwrap();
        let mut value = table.get(&key).unwrap().unwrap().value().to_vec();
        edit(&mut value);
        table.insert(&key, value.as_slice()).unwrap();
    }
    txn.commit().unwrap();
}
