//! The walk matched with the stat cache: each walked file's entry, reduced to what its
//! scan uses ([`Cached`]: whether it vouches for the file, and its chunks), and the
//! cached paths the walk no longer found ([`StatCacheMatch`]). A walk of the whole
//! worktree is matched as it goes, the cache read in path order alongside
//! ([`super::stream`]); a watched save looks up only the paths changed since its base
//! ([`super::watched::Partial`]).

use crate::model::stat_cache::CacheEntry;
use crate::worktree::walk;
use crate::ChunkId;

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

/// What [`Partial::match_stat_cache`](super::watched::Partial::match_stat_cache) found.
pub(super) struct StatCacheMatch {
    /// Each walked file's entry, if it has one that decodes.
    pub(super) cached: Vec<Option<Cached>>,
    /// Cached paths the walk did not find.
    pub(super) stale: Vec<Vec<u8>>,
}
