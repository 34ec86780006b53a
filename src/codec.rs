//! The record encoding shared by every table: one format-version byte, then postcard.
//!
//! Invariant: a record whose version byte is newer than [`FORMAT_VERSION`] is never
//! decoded (it fails with [`Error::Corrupt`] naming the version); postcard's wire format
//! is stable within 1.x, so fields and enum variants are only ever appended.

use serde::{de::DeserializeOwned, Serialize};

use crate::{Error, Result};

/// The record and store format this build writes and reads.
pub const FORMAT_VERSION: u8 = 1;

/// Encodes `value` behind the format-version byte.
pub fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    // Serialising our own plain types into a Vec cannot fail.
    postcard::to_extend(value, vec![FORMAT_VERSION]).expect("postcard encodes into a Vec")
}

/// Decodes a record written by [`encode`]; `what` names it in the error.
pub fn decode<T: DeserializeOwned>(bytes: &[u8], what: &str) -> Result<T> {
    match bytes.split_first() {
        Some((&FORMAT_VERSION, body)) => postcard::from_bytes(body)
            .map_err(|e| Error::Corrupt(format!("{what} does not decode ({e})"))),
        Some((version, _)) => Err(Error::Corrupt(format!(
            "{what} has record format {version}, this build reads {FORMAT_VERSION}"
        ))),
        None => Err(Error::Corrupt(format!("{what} is empty"))),
    }
}
