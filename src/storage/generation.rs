//! The store's generation: a number in a file beside the store that every commit changes
//! first ([`new_generation`]), so that a process that let go of the store can tell
//! whether anything was committed since ([`super::StoreRead::generation`]).

use std::path::{Path, PathBuf};

use rand::RngCore;

use crate::{Error, Result};

/// The file beside the store holding its generation. Kept out of the store itself: a
/// record rewritten by every commit would change how redb lays out and grows the file.
fn generation_path(store_path: &Path) -> PathBuf {
    store_path.with_file_name("generation")
}

/// Reads the generation ([`super::StoreRead::generation`]); a missing or short file reads
/// as 0.
pub(super) fn read_generation(store_path: &Path) -> Result<u64> {
    let path = generation_path(store_path);
    match std::fs::read(&path) {
        Ok(bytes) => Ok(<[u8; 8]>::try_from(bytes.as_slice()).map_or(0, u64::from_le_bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
        Err(e) => Err(Error::io(&path, e)),
    }
}

/// Gives the store a new, random generation, before a commit (so that a commit is never
/// seen without it; a crash in between only makes a reader think there was one). Not
/// synced: the generation matters only between processes running at the same time.
pub(super) fn new_generation(store_path: &Path) -> Result<()> {
    let path = generation_path(store_path);
    let next = rand::rng().next_u64().max(1);
    std::fs::write(&path, next.to_le_bytes()).map_err(|e| Error::io(&path, e))
}
