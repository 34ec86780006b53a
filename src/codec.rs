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

fn checksum(body: &[u8]) -> [u8; 4] {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dag::{Checkpoint, Head};
    use crate::stat_cache::CacheEntry;
    use crate::tree::Tree;
    use proptest::prelude::*;

    proptest! {
        /// Arbitrary bytes never panic a decoder: they are an error or a value.
        #[test]
        fn decoders_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let _ = decode::<Tree>(&bytes, "tree");
            let _ = decode::<Checkpoint>(&bytes, "checkpoint");
            let _ = decode::<CacheEntry>(&bytes, "cache entry");
            let _ = decode::<Head>(&bytes, "head");
            let _ = decode::<crate::chunk::ChunkParams>(&bytes, "params");
            let mut with_header = vec![FORMAT_VERSION];
            with_header.extend_from_slice(&checksum(&bytes[bytes.len().min(4)..]));
            with_header.extend_from_slice(&bytes[bytes.len().min(4)..]);
            let _ = decode::<Tree>(&with_header, "tree");
            let _ = decode::<Checkpoint>(&with_header, "checkpoint");
        }

        /// Any single flipped bit in an encoded record is detected.
        #[test]
        fn flipped_bits_are_detected(bit in 0usize..(8 * 40)) {
            let head = Head::Branch("a-branch-name-of-some-length".into());
            let mut bytes = encode(&head);
            let bit = bit % (8 * bytes.len());
            bytes[bit / 8] ^= 1 << (bit % 8);
            prop_assert!(decode::<Head>(&bytes, "head").is_err());
        }
    }

    #[test]
    fn records_round_trip() {
        let head = Head::Detached(42);
        assert_eq!(decode::<Head>(&encode(&head), "head").unwrap(), head);
    }
}
