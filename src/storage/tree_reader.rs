//! Reading trees from the store, checked: the one tree loader every operation uses.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;

use redb::ReadableTable;

use super::pack;
use super::tree_codec::{self, Loaded};
use crate::format::chunk::Hasher;
use crate::format::codec;
use crate::model::tree::{
    chunk_sum_mismatch, quoted, too_deep, tree_problem, Budget, Node, PendingTrees, Totals, Tree,
    MAX_DEPTH,
};
use crate::model::Checkpoint;
use crate::{ChunkId, Error, Result, TreeId};

type ReadOnly<K> = redb::ReadOnlyTable<K, &'static [u8]>;

/// The tree table of a read view, or of a write transaction in progress (a save reading
/// its parent's trees without opening a read view beside its own write).
pub(super) enum TreeTable<'a> {
    Read(ReadOnly<u128>),
    Write(redb::Table<'a, u128, &'static [u8]>),
}

/// Reads trees from the store, or from trees built in memory that are not stored yet,
/// and checks each one it reads (see [`TreeReader::get`]).
///
/// With `TreeReader::with_store` it also knows each checkpoint's recorded counts, which
/// bound what expanding that checkpoint's tree may yield ([`TreeReader::budget`]), and
/// the chunk index, against which it adds up each file's chunk lengths.
pub struct TreeReader<'a> {
    hasher: &'a Hasher,
    table: TreeTable<'a>,
    pending: Option<&'a PendingTrees>,
    /// The chunk index, when known.
    chunks: Option<ReadOnly<u128>>,
    /// The checkpoint records, read on first need for the counts of a root that no
    /// [`TreeReader::expect`] gave.
    records: Option<ReadOnly<u128>>,
    /// Recorded counts by root tree id.
    expected: RefCell<HashMap<TreeId, Totals>>,
    records_read: Cell<bool>,
}

impl<'a> TreeReader<'a> {
    /// A reader over the store's tree table and, optionally, unsaved trees.
    pub(super) fn new(
        hasher: &'a Hasher,
        table: TreeTable<'a>,
        pending: Option<&'a PendingTrees>,
    ) -> Result<Self> {
        Ok(TreeReader {
            hasher,
            table,
            pending,
            chunks: None,
            records: None,
            expected: RefCell::new(HashMap::new()),
            records_read: Cell::new(false),
        })
    }

    /// The same reader, also checking against the chunk index and the checkpoint
    /// records: every checkpoint's recorded counts bound the expansion of its tree, and
    /// each file's chunks must add up to its size by the index's lengths.
    pub(super) fn with_store(mut self, chunks: ReadOnly<u128>, records: ReadOnly<u128>) -> Self {
        self.chunks = Some(chunks);
        self.records = Some(records);
        self
    }

    /// Bounds the expansion of `record`'s tree by its recorded counts (a tree that is
    /// the root of several records gets the largest).
    pub fn expect(&self, record: &Checkpoint) {
        expect_in(&mut self.expected.borrow_mut(), record);
    }

    /// The budget for expanding tree `id`, if it is the root of a checkpoint this
    /// reader knows; `None` for trees built in memory, which are exactly the worktree.
    pub fn budget(&self, id: TreeId) -> Result<Option<Budget>> {
        if self.pending.is_some_and(|p| p.contains_key(&id)) {
            return Ok(None);
        }
        if !self.expected.borrow().contains_key(&id) {
            self.read_records()?;
        }
        Ok(self
            .expected
            .borrow()
            .get(&id)
            .map(|limit| Budget::new(id, *limit)))
    }

    fn read_records(&self) -> Result<()> {
        let Some(records) = self.records.as_ref().filter(|_| !self.records_read.get()) else {
            return Ok(());
        };
        self.records_read.set(true);
        let mut expected = self.expected.borrow_mut();
        for item in records.iter()? {
            let (_, value) = item?;
            // A record that does not decode bounds nothing; it is not this walk's
            // business (verify reports it), so it does not stop the walk either.
            if let Ok(record) = codec::decode::<Checkpoint>(value.value(), "checkpoint") {
                expect_in(&mut expected, &record);
            }
        }
        Ok(())
    }

    /// The tree `id`, checked: a stored tree (rebuilt from its delta chain if stored as a
    /// delta) must hash to its id and, stored whole, be encoded as a save encodes it (so
    /// that different ids always mean different trees); every tree must
    /// pass [`tree_problem`] and, with a chunk index, have each file's chunks add up to
    /// its size. An unsafe name is [`Error::UnsafeName`]; anything else
    /// [`Error::Corrupt`].
    pub fn get(&self, id: TreeId) -> Result<Tree> {
        crate::trace::TREES_READ.add(1);
        let what = || format!("tree {id}");
        let (tree, stored): (Tree, bool) = match self.pending.and_then(|p| p.get(&id)) {
            Some(bytes) => (codec::decode(bytes, &what())?, false),
            None => match match &self.table {
                TreeTable::Read(table) => tree_codec::load(table, id, Some(self.hasher))?,
                TreeTable::Write(table) => tree_codec::load(table, id, Some(self.hasher))?,
            } {
                Some(Loaded {
                    problem: Some(problem),
                    ..
                }) => return Err(Error::Corrupt(format!("{} {problem}", what()))),
                Some(loaded) => (loaded.tree, true),
                None => return Err(Error::Corrupt(format!("{} is missing", what()))),
            },
        };
        if let Some(problem) = tree_problem(&tree, &self.hasher.params()) {
            return Err(problem.into_error(id));
        }
        if let Some(index) = self.chunks.as_ref().filter(|_| stored) {
            for entry in &tree.entries {
                if let Node::File { size, chunks, .. } | Node::FileWithMode { size, chunks, .. } =
                    &entry.node
                {
                    // A chunk the index lacks (or cannot give) is left to the reads that
                    // need it, which say so: only a sum of known lengths is checked.
                    let raw_len = |c: ChunkId| -> Option<u64> {
                        let value = index.get(c.0).ok()??;
                        pack::Entry::parse(c, value.value()).ok()?.raw_len()
                    };
                    if let Some(sum) = chunk_sum_mismatch(*size, chunks, raw_len) {
                        return Err(Error::Corrupt(format!(
                            "{} has file {} of size {size} whose chunks hold {sum} bytes",
                            what(),
                            quoted(&entry.name)
                        )));
                    }
                }
            }
        }
        Ok(tree)
    }

    /// Whether tree `id` is among the trees built in memory or stored (stored as
    /// anything: nothing is read or checked).
    pub fn contains(&self, id: TreeId) -> Result<bool> {
        if self.pending.is_some_and(|p| p.contains_key(&id)) {
            return Ok(true);
        }
        Ok(match &self.table {
            TreeTable::Read(table) => table.get(id.0)?.is_some(),
            TreeTable::Write(table) => table.get(id.0)?.is_some(),
        })
    }

    /// Tree `id` reached as a subdirectory: checked as [`TreeReader::get`] does, and
    /// not empty (saves only record directories that hold files, so a walk that enters
    /// a changed directory always finds a change in it).
    pub fn get_subtree(&self, id: TreeId) -> Result<Tree> {
        let tree = self.get(id)?;
        if tree.entries.is_empty() {
            return Err(Error::Corrupt(format!(
                "tree {id} is empty but named as a directory (saves never record one)"
            )));
        }
        Ok(tree)
    }

    /// Every file and symlink under tree `id`, as `(path, node)` sorted by path, with
    /// paths prefixed by `prefix` (empty, or ending in `/`). Stops with an error as soon
    /// as it has yielded more than a checkpoint of `id` records ([`TreeReader::budget`]).
    pub fn flatten(&self, id: TreeId, prefix: &[u8], out: &mut Vec<(Vec<u8>, Node)>) -> Result<()> {
        let mut budget = self.budget(id)?;
        let tree = self.get(id)?;
        self.flatten_below(id, tree, prefix, 0, &mut budget, out)
    }

    fn flatten_below(
        &self,
        root: TreeId,
        tree: Tree,
        prefix: &[u8],
        depth: usize,
        budget: &mut Option<Budget>,
        out: &mut Vec<(Vec<u8>, Node)>,
    ) -> Result<()> {
        if depth > MAX_DEPTH {
            return Err(too_deep(root));
        }
        for entry in tree.entries {
            let mut path = prefix.to_vec();
            path.extend_from_slice(&entry.name);
            match entry.node {
                Node::Dir { tree } => {
                    path.push(b'/');
                    let subtree = self.get_subtree(tree)?;
                    self.flatten_below(root, subtree, &path, depth + 1, budget, out)?;
                }
                node => {
                    if let Some(budget) = budget {
                        budget.take(&node)?;
                    }
                    out.push((path, node));
                }
            }
        }
        Ok(())
    }
}

fn expect_in(expected: &mut HashMap<TreeId, Totals>, record: &Checkpoint) {
    let limit = expected.entry(record.tree).or_default();
    limit.files = limit.files.max(record.files);
    limit.bytes = limit.bytes.max(record.bytes);
}

#[cfg(test)]
mod tests {
    use redb::ReadableDatabase;

    use super::*;
    use crate::format::chunk::ChunkParams;
    use crate::model::tree::{test_file as file, Entry};
    use crate::storage::tables::TREES;

    /// Flattening a tree shared at every level stops as soon as it passes the counts
    /// its checkpoint records, and yields everything when they are honest.
    #[test]
    fn flattening_is_bounded_by_the_checkpoints_record() {
        let db = redb::Database::builder()
            .create_with_backend(redb::backends::InMemoryBackend::new())
            .unwrap();
        let hasher = Hasher::new([9; 32], ChunkParams::default());
        let txn = db.begin_write().unwrap();
        let root = {
            let mut table = txn.open_table(TREES).unwrap();
            let mut put = |entries: Vec<Entry>| {
                let bytes = codec::encode(&Tree { entries });
                let id = hasher.tree_id(&bytes);
                table.insert(id.0, bytes.as_slice()).unwrap();
                id
            };
            let name = |i: usize| format!("e{i:02}").into_bytes();
            let mut id = put((0..20)
                .map(|i| Entry {
                    name: name(i),
                    node: file(1),
                })
                .collect());
            for _ in 0..2 {
                id = put((0..20)
                    .map(|i| Entry {
                        name: name(i),
                        node: Node::Dir { tree: id },
                    })
                    .collect());
            }
            id
        };
        txn.commit().unwrap();
        let read = db.begin_read().unwrap();
        let table = read.open_table(TREES).unwrap();
        let record = |files: u64, bytes: u64| Checkpoint {
            tree: root,
            files,
            bytes,
            ..Checkpoint::default()
        };
        let lying = TreeReader::new(&hasher, TreeTable::Read(table), None).unwrap();
        lying.expect(&record(10, 8000));
        let mut out = Vec::new();
        let err = lying.flatten(root, b"", &mut out).unwrap_err().to_string();
        assert!(
            err.contains("more files than its checkpoint records (10)"),
            "{err}"
        );
        assert_eq!(out.len(), 10);
        let honest = TreeReader::new(
            &hasher,
            TreeTable::Read(read.open_table(TREES).unwrap()),
            None,
        )
        .unwrap();
        honest.expect(&record(8000, 8000));
        let mut out = Vec::new();
        honest.flatten(root, b"", &mut out).unwrap();
        assert_eq!(out.len(), 8000);
        assert_eq!(out[0].0, b"e00/e00/e00");
    }

    /// Flattening takes a chain of directories exactly [`MAX_DEPTH`] deep (as deep as a
    /// 4096-byte path goes) and refuses one level more.
    #[test]
    fn flattening_takes_max_depth_and_refuses_one_more() {
        // As deep as the binary's main thread goes: more than a test thread's stack.
        std::thread::Builder::new()
            .stack_size(64 << 20)
            .spawn(max_depth_chain)
            .unwrap()
            .join()
            .unwrap();
    }

    fn max_depth_chain() {
        let db = redb::Database::builder()
            .create_with_backend(redb::backends::InMemoryBackend::new())
            .unwrap();
        let hasher = Hasher::new([3; 32], ChunkParams::default());
        let txn = db.begin_write().unwrap();
        let mut chain = Vec::new();
        {
            let mut table = txn.open_table(TREES).unwrap();
            let mut id = {
                let bytes = codec::encode(&Tree {
                    entries: vec![Entry {
                        name: b"f".to_vec(),
                        node: file(1),
                    }],
                });
                let id = hasher.tree_id(&bytes);
                table.insert(id.0, bytes.as_slice()).unwrap();
                id
            };
            chain.push(id);
            for _ in 0..=MAX_DEPTH {
                let bytes = codec::encode(&Tree {
                    entries: vec![Entry {
                        name: b"d".to_vec(),
                        node: Node::Dir { tree: id },
                    }],
                });
                id = hasher.tree_id(&bytes);
                table.insert(id.0, bytes.as_slice()).unwrap();
                chain.push(id);
            }
        }
        txn.commit().unwrap();
        let read = db.begin_read().unwrap();
        let reader = TreeReader::new(
            &hasher,
            TreeTable::Read(read.open_table(TREES).unwrap()),
            None,
        )
        .unwrap();
        let mut out = Vec::new();
        reader.flatten(chain[MAX_DEPTH], b"", &mut out).unwrap();
        assert_eq!(out.len(), 1);
        let err = reader
            .flatten(chain[MAX_DEPTH + 1], b"", &mut Vec::new())
            .unwrap_err()
            .to_string();
        assert!(err.contains("deeper than"), "{err}");
    }
}
