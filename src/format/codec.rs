//! The record encoding shared by every table: one format-version byte, a 4-byte
//! checksum of the body, then the body in postcard.
//!
//! Invariants: a record whose version byte is not [`FORMAT_VERSION`] is never decoded,
//! and neither is one whose checksum does not match, so a flipped byte on disk is an
//! error rather than a plausible wrong value. postcard's wire format is stable within
//! 1.x; fields and enum variants are only ever appended.

use serde::{de::DeserializeOwned, Serialize};

use crate::{Error, Result};

/// The record and store format this build writes and reads.
pub const FORMAT_VERSION: u8 = 1;

pub(crate) fn checksum(body: &[u8]) -> [u8; 4] {
    let hash = blake3::hash(body);
    let mut out = [0u8; 4];
    out.copy_from_slice(&hash.as_bytes()[..4]);
    out
}

/// Encodes `value` behind the format-version byte and checksum.
pub fn encode<T: Serialize>(value: &T) -> Vec<u8> {
    // Serialising our own plain types into a Vec cannot fail.
    let mut out = postcard::to_extend(value, vec![FORMAT_VERSION, 0, 0, 0, 0])
        .expect("postcard encodes into a Vec");
    let sum = checksum(&out[5..]);
    out[1..5].copy_from_slice(&sum);
    out
}

/// Decodes a record written by [`encode`]; `what` names it in the error.
pub fn decode<T: DeserializeOwned>(bytes: &[u8], what: &str) -> Result<T> {
    match bytes {
        [FORMAT_VERSION, sum @ ..] if sum.len() >= 4 => {
            let (sum, body) = sum.split_at(4);
            if sum != checksum(body) {
                return Err(Error::Corrupt(format!("{what} fails its checksum")));
            }
            postcard::from_bytes(body)
                .map_err(|e| Error::Corrupt(format!("{what} does not decode ({e})")))
        }
        [version, ..] if *version != FORMAT_VERSION => Err(Error::Corrupt(format!(
            "{what} has record format {version}, this build reads {FORMAT_VERSION}"
        ))),
        _ => Err(Error::Corrupt(format!("{what} is truncated"))),
    }
}
