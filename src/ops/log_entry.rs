//! What both of `log`'s orders list, the whole history at once
//! ([`log`](crate::ops::log::log)) or a page at a time ([`crate::ops::log_walk`]): one
//! [`LogEntry`] per checkpoint; and the maps keyed by checkpoint id both keep.

use std::hash::{BuildHasherDefault, Hasher};

use crate::model::Checkpoint;
use crate::CheckpointId;

/// Maps keyed by checkpoint id, hashed by [`IdHasher`].
pub(crate) type HashMap<K, V> = std::collections::HashMap<K, V, BuildHasherDefault<IdHasher>>;
/// Sets of checkpoint ids, hashed by [`IdHasher`].
pub(crate) type HashSet<K> = std::collections::HashSet<K, BuildHasherDefault<IdHasher>>;

/// Hashes a checkpoint id by its bits: ids are already uniform hashes, so mixing them
/// again (as the default hasher does, which showed in the profile of a 10,000-checkpoint
/// log) buys nothing. A crafted store can hold ids chosen to collide here; that degrades
/// the maps to slow lookups, it cannot make them give a wrong answer.
#[derive(Default)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write_u128(&mut self, n: u128) {
        self.0 ^= (n as u64) ^ ((n >> 64) as u64);
    }

    // Only ids are hashed here; anything else is still hashed, just plainly (FNV-1a).
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
    }
}

/// One checkpoint as [`log`](crate::ops::log::log) lists it.
#[derive(Clone, Debug)]
pub struct LogEntry {
    /// Its id.
    pub id: CheckpointId,
    /// Its record.
    pub record: Checkpoint,
    /// Its parents among the listed checkpoints: the real parents, or, where a parent is
    /// filtered out, its nearest listed ancestors, so a graph of the list stays connected.
    pub graph_parents: Vec<CheckpointId>,
}
