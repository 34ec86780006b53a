//! The directory cache: per worktree directory, what a walk kept of its listing, so that
//! a walk need not list a directory again, nor match its entries against the ignore
//! rules, while nothing that decides that listing changed (git's untracked cache).
//!
//! Invariant (the stat cache's racy-git rule, applied to directories): a listing is
//! written only when the directory's mtime and ctime, and those of every ignore file that
//! decided it, are older by [`RACY_MARGIN_NS`] than the filesystem's clock read *before*
//! the directory was listed. Adding, removing or renaming an entry moves the directory's
//! mtime and ctime; editing an ignore file moves its own. A change after the listing
//! therefore leaves a time past the recorded one, so a directory whose metadata equals
//! the record's, under ignore files whose metadata all equal theirs then (the record's
//! rules fingerprint), lists as recorded. Setting the mtime back (`touch -d`) moves the
//! ctime, which no user can set back.
//!
//! [`RACY_MARGIN_NS`]: super::stat_cache::RACY_MARGIN_NS

use serde::{Deserialize, Serialize};

use super::stat_cache::FileStat;
use crate::Result;

/// What a walk kept of one directory's entries (`.git` and ignored entries left out).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DirListing {
    /// The directory's own metadata, taken before it was listed.
    pub stat: FileStat,
    /// Its own `.gitignore`'s metadata then (`lstat`: a symlink is not followed), if it
    /// had one.
    pub gitignore: Option<FileStat>,
    /// The fingerprint of every ignore file that decided the listing: the metadata of
    /// the `.gitignore` files from the top down to this directory, the excludes file's
    /// and `info/exclude`'s, and their paths ([`rules_fingerprint`]).
    pub rules: u128,
    /// The entries kept, in the order they were listed.
    pub entries: Vec<ListedEntry>,
}

/// One entry a walk kept.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListedEntry {
    /// Its name in the directory.
    #[serde(with = "serde_bytes")]
    pub name: Vec<u8>,
    /// What it was.
    pub kind: ListedKind,
}

/// What a listed entry was, as far as the walk decided from the listing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ListedKind {
    /// A directory the ignore rules did not match: walked into.
    Dir,
    /// Anything else the ignore rules did not match (a file, a symlink, a FIFO): its
    /// kind is read again from its metadata at every walk.
    Other,
    /// Not a directory, and tracked when listed: kept without asking the ignore rules, so
    /// the listing holds only while it is still tracked.
    Tracked,
}

/// The fingerprint of the ignore rules one level adds to those above it (`parent`, the
/// fingerprint of the directory above, or of the excludes files at the top): a path and
/// the metadata of the file there, if any.
pub fn rules_fingerprint(parent: u128, path: &[u8], stat: Option<&FileStat>) -> u128 {
    let mut hasher = blake3::Hasher::new();
    hasher.update(&parent.to_le_bytes());
    hasher.update(&(path.len() as u64).to_le_bytes());
    hasher.update(path);
    match stat {
        None => hasher.update(&[0]),
        Some(stat) => hasher.update(&crate::format::codec::encode(stat)),
    };
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&hasher.finalize().as_bytes()[..16]);
    u128::from_le_bytes(bytes)
}

/// Whether a listing made now may be written: the directory's metadata settled by
/// `clock_ns` (the filesystem's clock read before the listing), and so every ignore file
/// that decided it (`rules_settled`; see the module invariant).
pub fn may_record(dir: &FileStat, rules_settled: bool, clock_ns: i64) -> bool {
    rules_settled && dir.is_settled(clock_ns)
}

/// Whether an ignore file's metadata is settled by `clock_ns`; one that does not exist
/// has no time to judge.
pub fn rule_settled(stat: Option<&FileStat>, clock_ns: i64) -> bool {
    stat.is_none_or(|stat| stat.is_settled(clock_ns))
}

/// The listings earlier walks recorded, by worktree directory path (the top is the empty
/// path), looked up one directory at a time as a walk comes to it: a walk never holds
/// the whole cache, which names every file of the worktree (docs/design.md, "Save",
/// memory). Shared by the walk's threads.
pub trait DirListings: Sync {
    /// The listing recorded for `dir`, if one is and it decodes (one that does not is
    /// only a missed shortcut: the directory is listed again).
    fn get(&self, dir: &[u8]) -> Option<DirListing>;

    /// Calls `each` with every directory a listing is recorded for.
    fn each_dir(&self, each: &mut dyn FnMut(&[u8])) -> Result<()>;
}

/// The changes to the directory cache one walk found.
#[derive(Clone, Debug, Default)]
pub struct DirCacheUpdates {
    /// Directories listed afresh and settled: their new listing.
    pub put: Vec<(Vec<u8>, DirListing)>,
    /// Directories whose recorded listing no longer holds, or that are gone.
    pub remove: Vec<Vec<u8>>,
}

impl DirCacheUpdates {
    /// Whether there is nothing to write.
    pub fn is_empty(&self) -> bool {
        self.put.is_empty() && self.remove.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::stat_cache::RACY_MARGIN_NS;

    fn at(mtime_ns: i64, ctime_ns: i64) -> FileStat {
        FileStat {
            mtime_ns,
            ctime_ns,
            ..FileStat::default()
        }
    }

    #[test]
    fn a_listing_may_be_recorded_only_when_its_directory_and_rules_are_settled() {
        let clock = 100 * RACY_MARGIN_NS;
        let old = clock - RACY_MARGIN_NS - 1;
        let fresh = clock - RACY_MARGIN_NS + 1;
        assert!(may_record(&at(old, old), true, clock));
        // The mtime set back but the ctime fresh (`touch -d`): still racy.
        assert!(!may_record(&at(old, fresh), true, clock));
        assert!(!may_record(&at(fresh, old), true, clock));
        assert!(!may_record(&at(old, old), false, clock));
        assert!(rule_settled(None, clock));
        assert!(rule_settled(Some(&at(old, old)), clock));
        assert!(!rule_settled(Some(&at(old, fresh)), clock));
        assert!(!rule_settled(Some(&at(fresh, old)), clock));
    }

    #[test]
    fn the_rules_fingerprint_changes_with_any_level() {
        let a = rules_fingerprint(0, b"d/.gitignore", Some(&at(1, 2)));
        assert_ne!(a, rules_fingerprint(0, b"d/.gitignore", Some(&at(1, 3))));
        assert_ne!(a, rules_fingerprint(0, b"d/.gitignore", None));
        assert_ne!(a, rules_fingerprint(0, b"e/.gitignore", Some(&at(1, 2))));
        assert_ne!(a, rules_fingerprint(1, b"d/.gitignore", Some(&at(1, 2))));
        assert_eq!(a, rules_fingerprint(0, b"d/.gitignore", Some(&at(1, 2))));
    }

    #[test]
    fn a_listing_round_trips_through_the_codec() {
        let listing = DirListing {
            stat: at(5, 6),
            gitignore: Some(at(1, 2)),
            rules: 7,
            entries: vec![
                ListedEntry {
                    name: b"sub".to_vec(),
                    kind: ListedKind::Dir,
                },
                ListedEntry {
                    name: b"\xff.c".to_vec(),
                    kind: ListedKind::Tracked,
                },
            ],
        };
        let bytes = crate::format::codec::encode(&listing);
        let back: DirListing = crate::format::codec::decode(&bytes, "listing").unwrap();
        assert_eq!(back, listing);
    }
}
