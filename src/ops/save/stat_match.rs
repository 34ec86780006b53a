//! The walk matched with the stat cache: each walked file's entry, reduced to what its
//! scan uses ([`Cached`]: whether it vouches for the file, and its chunks), and the
//! cached paths the walk no longer found ([`StatCacheMatch`]). A walk of the whole
//! worktree is matched in one ordered pass ([`match_stat_cache`]); a watched save looks
//! up only the paths changed since its base ([`super::watched::Partial`]).

use crate::model::stat_cache::CacheEntry;
use crate::storage::Snapshot;
use crate::worktree::walk::{self, Kind};
use crate::{ChunkId, Result};

/// A walked file's stat cache entry, reduced to what its scan uses: 32 bytes, where the
/// entry with its stat takes 72, for every file of a tree (docs/design.md, "Save",
/// memory).
#[derive(Clone, Debug)]
pub(super) struct Cached {
    /// Whether the entry's metadata is the walk's: then it vouches for the file.
    pub(super) vouches: bool,
    /// Its chunk ids: the file's content when it vouches, else the version the last
    /// save stored (whose chunks new ones may be deltas of).
    pub(super) chunks: Vec<ChunkId>,
}

impl Cached {
    /// The entry `entry` of the walked file `walked`.
    pub(super) fn of(entry: CacheEntry, walked: &walk::WalkEntry) -> Cached {
        Cached {
            vouches: entry.stat == walked.stat,
            chunks: entry.chunks,
        }
    }
}

/// The stat cache entry of each walked file (aligned with `walked`), and removals for the
/// cached paths the walk no longer found: one ordered pass over both, since the walk and
/// the table are sorted alike. A cache entry that does not decode is only a missed
/// shortcut: that file is read.
pub(super) fn match_stat_cache(
    snapshot: &Snapshot,
    walked: &[walk::WalkEntry],
) -> Result<StatCacheMatch> {
    let mut cached = vec![None; walked.len()];
    let mut stale = Vec::new();
    let mut i = 0;
    snapshot.for_each_cached(|key, entry| {
        while i < walked.len() && walked[i].path.as_slice() < key {
            i += 1;
        }
        match walked.get(i) {
            Some(walked_entry) if walked_entry.path.as_slice() == key => {
                if walked_entry.kind == Kind::File {
                    cached[i] = entry.decode().ok().map(|e| Cached::of(e, walked_entry));
                }
            }
            _ => stale.push(key.to_vec()),
        }
    })?;
    Ok(StatCacheMatch { cached, stale })
}

/// What [`match_stat_cache`] (or [`Partial::match_stat_cache`]) found.
pub(super) struct StatCacheMatch {
    /// Each walked file's entry, if it has one that decodes.
    pub(super) cached: Vec<Option<Cached>>,
    /// Cached paths the walk did not find.
    pub(super) stale: Vec<Vec<u8>>,
}
