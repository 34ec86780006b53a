//! The stat cache: per worktree path, the metadata and content ids seen when it was last
//! read, so that a save never reads a file whose metadata did not change.
//!
//! Invariant (git's racy-git rule): an entry is written only when the file's mtime and
//! ctime are older, by [`RACY_MARGIN_NS`], than the filesystem's clock at the start of
//! the save that read it. A later write to the file then necessarily moves its mtime or
//! ctime past the recorded value, so equal metadata means equal content. Entries that
//! could still be racy are removed instead, and the file is read again next time.

use serde::{Deserialize, Serialize};

use crate::ChunkId;

/// Coarse filesystem clocks (FAT, SMB) and clock skew stay within this margin.
pub const RACY_MARGIN_NS: i64 = 2_000_000_000;

/// What `lstat` says about a file, reduced to what detects a change.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileStat {
    /// Length in bytes.
    pub size: u64,
    /// Modification time, nanoseconds since the epoch.
    pub mtime_ns: i64,
    /// Status-change time, nanoseconds since the epoch.
    pub ctime_ns: i64,
    /// Inode number.
    pub ino: u64,
    /// Device number.
    pub dev: u64,
    /// Mode bits, including the file type.
    pub mode: u32,
}

impl FileStat {
    /// Reduces full metadata to a `FileStat`.
    pub fn from_metadata(m: &std::fs::Metadata) -> FileStat {
        use std::os::unix::fs::MetadataExt;
        FileStat {
            size: m.size(),
            mtime_ns: m
                .mtime()
                .saturating_mul(1_000_000_000)
                .saturating_add(m.mtime_nsec()),
            ctime_ns: m
                .ctime()
                .saturating_mul(1_000_000_000)
                .saturating_add(m.ctime_nsec()),
            ino: m.ino(),
            dev: m.dev(),
            mode: m.mode(),
        }
    }

    /// Whether content read now can be trusted to stay described by this metadata:
    /// see the module invariant. A zero or pre-epoch time is never trusted.
    pub fn is_settled(&self, clock_ns: i64) -> bool {
        let limit = clock_ns.saturating_sub(RACY_MARGIN_NS);
        self.mtime_ns > 0 && self.ctime_ns > 0 && self.mtime_ns < limit && self.ctime_ns < limit
    }
}

/// One cached file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheEntry {
    /// Metadata when the content was read.
    pub stat: FileStat,
    /// The content's chunk ids.
    pub chunks: Vec<ChunkId>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(mtime_ns: i64, ctime_ns: i64) -> FileStat {
        FileStat {
            mtime_ns,
            ctime_ns,
            ..FileStat::default()
        }
    }

    /// Settled means both times are older than the clock by the margin: a file whose
    /// mtime was set back (`touch -d`) but whose ctime is fresh is still racy.
    #[test]
    fn only_files_whose_mtime_and_ctime_are_both_old_are_settled() {
        let clock = 100 * RACY_MARGIN_NS;
        let old = clock - RACY_MARGIN_NS - 1;
        let fresh = clock - RACY_MARGIN_NS + 1;
        assert!(at(old, old).is_settled(clock));
        assert!(!at(old, fresh).is_settled(clock));
        assert!(!at(fresh, old).is_settled(clock));
        assert!(!at(fresh, fresh).is_settled(clock));
        // Exactly the margin is not older than it.
        let edge = clock - RACY_MARGIN_NS;
        assert!(!at(edge, old).is_settled(clock));
        assert!(!at(old, edge).is_settled(clock));
        // Times a filesystem could not give (0 or before the epoch) never vouch.
        assert!(!at(0, old).is_settled(clock));
        assert!(!at(old, 0).is_settled(clock));
        // No clock (a look at a store it may not write): nothing is settled.
        assert!(!at(old, old).is_settled(i64::MIN));
    }
}
