//! How tree records are stored: whole, or as a delta against another stored tree.
//!
//! A tree's id is always the hash of its canonical record (`codec::encode(&tree)`), so
//! dedup and every id are the same whichever way it is stored. A value in the trees
//! table is either
//!
//! - the canonical record itself, first byte [`FORMAT_VERSION`] (every tree of stores
//!   written before deltas, and every tree stored whole today), or
//! - a delta: `[DELTA, checksum (4), depth, base id (u128 LE), codec, body]`, where the
//!   checksum covers everything after it (as a codec record's does), `depth` is 1 on a
//!   base stored whole and one more than a delta base's, at most [`MAX_CHAIN`], `codec`
//!   is 0 (raw) or 1 (zstd), and the body is the postcard encoding of [`Edits`]: the
//!   names the base has and the tree does not, and the entries the tree has that the
//!   base lacks or holds differently, both sorted by name, ids as 16 raw bytes.
//!
//! Why: a save rewrites every directory on the changed paths, and a large directory's
//! record (500 entries at the root of git's own source) holds 16-byte ids that do not
//! compress; stored whole, those records were most of what a small-edit save added.
//!
//! Invariant (docs/design.md invariant 22): a delta's base is in the table whenever the
//! delta is, and each step down a chain is strictly shallower, at most [`MAX_CHAIN`]
//! deep, so reading a tree decodes at most that many records and a crafted loop ends in
//! an error. [`super::Transaction::remove_trees`], the one place trees leave the table,
//! spares every base a staying delta needs.

use std::collections::{BTreeMap, HashMap};

use redb::ReadableTable;
use serde::{Deserialize, Serialize};

use crate::format::chunk::{self, Hasher};
use crate::format::codec::{self, checksum, FORMAT_VERSION};
use crate::model::tree::{Entry, Node, Tree};
use crate::model::PendingTrees;
use crate::{ChunkId, Error, Result, TreeId};

/// The first byte of a tree stored as a delta. Whole records start with
/// [`FORMAT_VERSION`] instead.
pub const DELTA: u8 = 0xC1;
/// The deepest chain: reading a tree decodes at most this many deltas and one whole
/// record. Past it, a tree is stored against its chain's whole record, or whole.
pub const MAX_CHAIN: u8 = 16;
/// Bytes before a delta's codec byte: tag, checksum, depth, base id.
const HEADER: usize = 1 + 4 + 1 + 16;
const RAW: u8 = 0;
const ZSTD: u8 = 1;
const ZSTD_LEVEL: i32 = 3;
/// Bodies shorter than this are not worth a zstd frame.
const COMPRESS_FROM: usize = 128;
/// The most a delta body decompresses to: far more than any directory's entries, and a
/// bound on what a crafted frame can make a read allocate.
const MAX_BODY: u64 = 256 << 20;

/// A delta: what turns the base's entries into the tree's.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Edits {
    /// Names the base has and the tree does not, sorted.
    removed: Vec<serde_bytes::ByteBuf>,
    /// Entries the base lacks or holds differently, sorted by name.
    upserts: Vec<StoredEntry>,
}

/// An entry in a delta body: [`Entry`], with ids as 16 raw bytes rather than postcard's
/// varint of a random `u128` (19 bytes).
#[derive(Debug, Serialize, Deserialize)]
struct StoredEntry {
    #[serde(with = "serde_bytes")]
    name: Vec<u8>,
    node: StoredNode,
}

/// [`Node`], variant for variant (a variant appended there is appended here).
#[derive(Debug, Serialize, Deserialize)]
enum StoredNode {
    File {
        size: u64,
        executable: bool,
        chunks: Vec<[u8; 16]>,
    },
    Symlink {
        #[serde(with = "serde_bytes")]
        target: Vec<u8>,
    },
    Dir {
        tree: [u8; 16],
    },
    FileWithMode {
        size: u64,
        mode: u32,
        chunks: Vec<[u8; 16]>,
    },
}

fn raw_ids(ids: &[ChunkId]) -> Vec<[u8; 16]> {
    ids.iter().map(|c| c.0.to_le_bytes()).collect()
}

fn chunk_ids(raw: Vec<[u8; 16]>) -> Vec<ChunkId> {
    raw.into_iter()
        .map(|b| ChunkId(u128::from_le_bytes(b)))
        .collect()
}

impl From<&Entry> for StoredEntry {
    fn from(entry: &Entry) -> Self {
        let node = match &entry.node {
            Node::File {
                size,
                executable,
                chunks,
            } => StoredNode::File {
                size: *size,
                executable: *executable,
                chunks: raw_ids(chunks),
            },
            Node::Symlink { target } => StoredNode::Symlink {
                target: target.clone(),
            },
            Node::Dir { tree } => StoredNode::Dir {
                tree: tree.0.to_le_bytes(),
            },
            Node::FileWithMode { size, mode, chunks } => StoredNode::FileWithMode {
                size: *size,
                mode: *mode,
                chunks: raw_ids(chunks),
            },
        };
        StoredEntry {
            name: entry.name.clone(),
            node,
        }
    }
}

impl From<StoredEntry> for Entry {
    fn from(stored: StoredEntry) -> Self {
        let node = match stored.node {
            StoredNode::File {
                size,
                executable,
                chunks,
            } => Node::File {
                size,
                executable,
                chunks: chunk_ids(chunks),
            },
            StoredNode::Symlink { target } => Node::Symlink { target },
            StoredNode::Dir { tree } => Node::Dir {
                tree: TreeId(u128::from_le_bytes(tree)),
            },
            StoredNode::FileWithMode { size, mode, chunks } => Node::FileWithMode {
                size,
                mode,
                chunks: chunk_ids(chunks),
            },
        };
        Entry {
            name: stored.name,
            node,
        }
    }
}

/// The edits that turn `base` into `tree` (both sorted by name).
fn diff(base: &[Entry], tree: &[Entry]) -> Edits {
    let mut edits = Edits::default();
    let (mut old, mut new) = (base.iter().peekable(), tree.iter().peekable());
    loop {
        match (old.peek(), new.peek()) {
            (None, None) => break,
            (Some(o), Some(n)) if o.name == n.name => {
                if o.node != n.node {
                    edits.upserts.push((*n).into());
                }
                old.next();
                new.next();
            }
            (Some(o), n) if n.is_none_or(|n| o.name < n.name) => {
                edits
                    .removed
                    .push(serde_bytes::ByteBuf::from(o.name.clone()));
                old.next();
            }
            (_, Some(n)) => {
                edits.upserts.push((*n).into());
                new.next();
            }
            (_, None) => unreachable!("the arm above takes a base entry with no tree entry"),
        }
    }
    edits
}

/// `base`'s entries with `deltas` (oldest first) applied. The deltas are first folded
/// into one set of edits (the last word on each name wins), so a chain costs one pass
/// over the base's entries, not one per delta. The result is sorted and its names
/// unique when the base's and each delta's are (which [`decode_edits`] checks);
/// whether it is the tree it should be is for its id to say.
fn apply(base: Vec<Entry>, deltas: impl IntoIterator<Item = Edits>) -> Vec<Entry> {
    let mut overlay: BTreeMap<Vec<u8>, Option<Entry>> = BTreeMap::new();
    for edits in deltas {
        for name in edits.removed {
            overlay.insert(name.into_vec(), None);
        }
        for stored in edits.upserts {
            let entry = Entry::from(stored);
            overlay.insert(entry.name.clone(), Some(entry));
        }
    }
    let mut out = Vec::with_capacity(base.len() + overlay.len());
    let mut overlay = overlay.into_iter().peekable();
    for entry in base {
        while let Some((_, new)) = overlay.next_if(|(name, _)| *name < entry.name) {
            out.extend(new);
        }
        match overlay.next_if(|(name, _)| *name == entry.name) {
            Some((_, new)) => out.extend(new),
            None => out.push(entry),
        }
    }
    out.extend(overlay.filter_map(|(_, new)| new));
    out
}

/// A delta value, its header parsed and its checksum checked.
struct DeltaValue<'a> {
    depth: u8,
    base: TreeId,
    codec: u8,
    body: &'a [u8],
}

/// Parses the stored value of tree `id`: `None` for a whole record.
fn parse(id: TreeId, value: &[u8]) -> Result<Option<DeltaValue<'_>>> {
    let bad = |why: String| Err(Error::Corrupt(format!("tree {id} {why}")));
    match value.first() {
        Some(&FORMAT_VERSION) => return Ok(None),
        Some(&DELTA) if value.len() > HEADER => {}
        Some(&DELTA) => return bad("is truncated".into()),
        // A whole record of another format; the decoder says which.
        Some(_) => return Ok(None),
        None => return bad("is empty".into()),
    }
    if value[1..5] != checksum(&value[5..]) {
        return bad("fails its checksum".into());
    }
    let depth = value[5];
    if !(1..=MAX_CHAIN).contains(&depth) {
        return bad(format!(
            "is a delta of depth {depth} (deltas are 1 to {MAX_CHAIN} deep)"
        ));
    }
    let mut base = [0u8; 16];
    base.copy_from_slice(&value[6..HEADER]);
    let base = TreeId(u128::from_le_bytes(base));
    if base == id {
        return bad("is a delta of itself".into());
    }
    Ok(Some(DeltaValue {
        depth,
        base,
        codec: value[HEADER],
        body: &value[HEADER + 1..],
    }))
}

/// The tree a stored value is a delta of, if it is one.
pub(super) fn base_of(id: TreeId, value: &[u8]) -> Result<Option<TreeId>> {
    Ok(parse(id, value)?.map(|delta| delta.base))
}

fn decode_edits(id: TreeId, delta: &DeltaValue<'_>) -> Result<Edits> {
    let bad = |why: String| Error::Corrupt(format!("tree {id}: its delta {why}"));
    let raw;
    let body = match delta.codec {
        RAW => delta.body,
        ZSTD => {
            // Frames written here record their size; a crafted one may not claim more
            // than a body can hold.
            let size = zstd::zstd_safe::get_frame_content_size(delta.body)
                .ok()
                .flatten()
                .ok_or_else(|| bad("does not record its size".into()))?;
            if size > MAX_BODY {
                return Err(bad(format!("claims {size} bytes, more than {MAX_BODY}")));
            }
            // `size` is at most MAX_BODY, which fits a usize.
            raw = chunk::decompress(delta.body, size as usize)
                .map_err(|e| bad(format!("does not decompress ({e})")))?;
            &raw
        }
        other => return Err(bad(format!("has codec {other}, this build reads 0 and 1"))),
    };
    let edits: Edits =
        postcard::from_bytes(body).map_err(|e| bad(format!("does not decode ({e})")))?;
    if !strictly_increasing(edits.removed.iter().map(|n| n.as_slice()))
        || !strictly_increasing(edits.upserts.iter().map(|e| e.name.as_slice()))
    {
        return Err(bad("lists names out of order".into()));
    }
    Ok(edits)
}

fn strictly_increasing<'a>(names: impl Iterator<Item = &'a [u8]>) -> bool {
    let mut last: Option<&[u8]> = None;
    names
        .into_iter()
        .all(|name| last.replace(name).is_none_or(|prev| prev < name))
}

/// A stored tree, read back.
pub(super) struct Loaded {
    /// The tree.
    pub tree: Tree,
    /// The trees read to rebuild it, from its delta base down to the whole record its
    /// chain starts from; empty for a tree stored whole.
    pub chain: Vec<TreeId>,
    /// What is wrong with it against its id, when read with a hasher: it does not hash
    /// to it, or (stored whole) is not encoded as saves encode trees.
    pub problem: Option<&'static str>,
}

/// Reads tree `id` from `table`, rebuilding it from its chain if it is stored as a
/// delta; `None` if the table lacks it. With `hasher`, also checks it against its id
/// ([`Loaded::problem`]). A damaged record or chain (a missing base, one not shallower
/// than the delta naming it, a delta that does not apply) is [`Error::Corrupt`].
pub(super) fn load(
    table: &impl ReadableTable<u128, &'static [u8]>,
    id: TreeId,
    hasher: Option<&Hasher>,
) -> Result<Option<Loaded>> {
    let Some(value) = table.get(id.0)? else {
        return Ok(None);
    };
    let value = value.value();
    let Some(delta) = parse(id, value)? else {
        let tree: Tree = codec::decode(value, &format!("tree {id}"))?;
        let problem = hasher.and_then(|hasher| {
            if hasher.tree_id(value) != id {
                Some("does not match its id")
            } else if codec::encode(&tree) != value {
                Some("is not encoded the way saves encode trees")
            } else {
                None
            }
        });
        return Ok(Some(Loaded {
            tree,
            chain: Vec::new(),
            problem,
        }));
    };
    let mut steps = vec![decode_edits(id, &delta)?];
    let mut chain = Vec::new();
    let (mut depth, mut base) = (delta.depth, delta.base);
    let whole: Tree = loop {
        chain.push(base);
        let Some(value) = table.get(base.0)? else {
            return Err(Error::Corrupt(format!(
                "tree {id}: its delta base {base} is missing"
            )));
        };
        let value = value.value();
        let below = |e: Error| match e {
            Error::Corrupt(message) => {
                Error::Corrupt(format!("tree {id}: its delta base {base}: {message}"))
            }
            e => e,
        };
        match parse(base, value).map_err(below)? {
            None => break codec::decode(value, &format!("tree {base}")).map_err(below)?,
            Some(next) if next.depth >= depth => {
                return Err(Error::Corrupt(format!(
                    "tree {id}: its delta chain does not get shallower at {base} \
                     (depth {} under depth {depth}; a loop or a lie)",
                    next.depth
                )));
            }
            Some(next) => {
                steps.push(decode_edits(base, &next).map_err(below)?);
                (depth, base) = (next.depth, next.base);
            }
        }
    };
    let tree = Tree {
        entries: apply(whole.entries, steps.into_iter().rev()),
    };
    let problem = hasher
        .filter(|hasher| hasher.tree_id(&codec::encode(&tree)) != id)
        .map(|_| "does not match its id");
    Ok(Some(Loaded {
        tree,
        chain,
        problem,
    }))
}

/// For each tree of `pending` that lies at the same path as a tree under `like` (a
/// stored root, such as the parent checkpoint's), that tree: the natural delta base.
/// Unchanged subtrees are not entered; a tree of `like` that does not read gives no
/// bases below it.
pub(super) fn bases(
    table: &impl ReadableTable<u128, &'static [u8]>,
    pending: &PendingTrees,
    root: TreeId,
    like: TreeId,
) -> Result<HashMap<TreeId, TreeId>> {
    let mut out = HashMap::new();
    let mut stack = vec![(root, like)];
    while let Some((new, old)) = stack.pop() {
        if new == old || out.contains_key(&new) {
            continue;
        }
        let Some(bytes) = pending.get(&new) else {
            continue;
        };
        out.insert(new, old);
        let Ok(new_tree) = codec::decode::<Tree>(bytes, "tree") else {
            continue;
        };
        let Ok(Some(old_tree)) = load(table, old, None) else {
            continue;
        };
        let old_dirs: HashMap<&[u8], TreeId> = old_tree
            .tree
            .entries
            .iter()
            .filter_map(|e| match e.node {
                Node::Dir { tree } => Some((e.name.as_slice(), tree)),
                _ => None,
            })
            .collect();
        for entry in &new_tree.entries {
            if let (Node::Dir { tree }, Some(&old)) =
                (&entry.node, old_dirs.get(entry.name.as_slice()))
            {
                stack.push((*tree, old));
            }
        }
    }
    Ok(out)
}

/// The value to store for tree `bytes` (its canonical record): a delta against `base`
/// when that takes at most half the bytes, or, when `base`'s chain is already
/// [`MAX_CHAIN`] deep, against the whole record that chain starts from when that takes
/// at most a quarter (the edits since then, which stay few while the same files change);
/// otherwise `bytes` itself. A base that does not read back as its id is not used.
pub(super) fn stored_form(
    table: &impl ReadableTable<u128, &'static [u8]>,
    hasher: &Hasher,
    bytes: &[u8],
    base: Option<TreeId>,
) -> Result<Vec<u8>> {
    let whole = || Ok(bytes.to_vec());
    let Some(base) = base else {
        return whole();
    };
    let Ok(Some(loaded)) = load(table, base, Some(hasher)) else {
        return whole();
    };
    if loaded.problem.is_some() {
        return whole();
    }
    let Ok(tree) = codec::decode::<Tree>(bytes, "tree") else {
        return whole();
    };
    let depth = loaded.chain.len();
    let (base, base_tree, depth, limit) = if depth < usize::from(MAX_CHAIN) {
        (base, loaded.tree, depth + 1, bytes.len() / 2)
    } else {
        let Some(&start) = loaded.chain.last() else {
            return whole();
        };
        let Ok(Some(start_tree)) = load(table, start, Some(hasher)) else {
            return whole();
        };
        (start, start_tree.tree, 1, bytes.len() / 4)
    };
    let value = encode_delta(&base_tree.entries, &tree.entries, base, depth);
    Ok(if value.len() <= limit {
        value
    } else {
        bytes.to_vec()
    })
}

/// The delta value of `tree` against `base` (id `base_id`), `depth` deep.
fn encode_delta(base: &[Entry], tree: &[Entry], base_id: TreeId, depth: usize) -> Vec<u8> {
    // Serialising our own plain types into a Vec cannot fail.
    let body = postcard::to_stdvec(&diff(base, tree)).expect("postcard encodes into a Vec");
    let compressed = (body.len() >= COMPRESS_FROM)
        .then(|| zstd::bulk::compress(&body, ZSTD_LEVEL).ok())
        .flatten()
        .filter(|c| c.len() < body.len());
    let (codec, body) = match compressed {
        Some(c) => (ZSTD, c),
        None => (RAW, body),
    };
    let mut out = Vec::with_capacity(HEADER + 1 + body.len());
    out.extend_from_slice(&[DELTA, 0, 0, 0, 0]);
    out.push(u8::try_from(depth).unwrap_or(MAX_CHAIN));
    out.extend_from_slice(&base_id.0.to_le_bytes());
    out.push(codec);
    out.extend_from_slice(&body);
    let sum = checksum(&out[5..]);
    out[1..5].copy_from_slice(&sum);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::tree::test_file as file;

    fn entry(name: &str, node: Node) -> Entry {
        Entry {
            name: name.as_bytes().to_vec(),
            node,
        }
    }

    /// Every kind of edit (removed, replaced, inserted before, between and after the
    /// base's names) survives encoding and applies back to the tree.
    #[test]
    fn edits_turn_the_base_into_the_tree() {
        let base = vec![
            entry("b", file(1)),
            entry("c", file(2)),
            entry("d", Node::Dir { tree: TreeId(7) }),
            entry("f", file(3)),
        ];
        let tree = vec![
            entry("a", file(9)),
            entry("c", file(4)),
            entry(
                "d",
                Node::Symlink {
                    target: b"x".to_vec(),
                },
            ),
            entry("e", file(5)),
            entry(
                "g",
                Node::FileWithMode {
                    size: 1,
                    mode: 0o600,
                    chunks: vec![ChunkId(u128::MAX)],
                },
            ),
        ];
        let value = encode_delta(&base, &tree, TreeId(1), 1);
        let delta = parse(TreeId(2), &value).unwrap().unwrap();
        assert_eq!((delta.depth, delta.base), (1, TreeId(1)));
        let edits = decode_edits(TreeId(2), &delta).unwrap();
        assert_eq!(edits.removed.len(), 2);
        assert_eq!(edits.upserts.len(), 5);
        assert_eq!(apply(base, [edits]), tree);
    }

    /// A chain applies as its deltas one after the other would: a name added, changed
    /// and removed again along the way ends as the last delta left it.
    #[test]
    fn a_chain_applies_as_its_deltas_in_turn() {
        let v0 = vec![entry("a", file(1)), entry("m", file(2))];
        let v1 = vec![
            entry("a", file(1)),
            entry("b", file(3)),
            entry("m", file(2)),
        ];
        let v2 = vec![entry("b", file(4)), entry("m", file(2))];
        let v3 = vec![
            entry("a", file(5)),
            entry("m", file(2)),
            entry("z", file(6)),
        ];
        let edits = |from: &[Entry], to: &[Entry]| {
            let value = encode_delta(from, to, TreeId(1), 1);
            decode_edits(TreeId(2), &parse(TreeId(2), &value).unwrap().unwrap()).unwrap()
        };
        let chain = [edits(&v0, &v1), edits(&v1, &v2), edits(&v2, &v3)];
        assert_eq!(apply(v0, chain), v3);
    }
}
