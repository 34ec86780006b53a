//! The revision language that names checkpoints.
//!
//! Revisions: a full id or a unique hex prefix of 4+ digits, a branch name, a fetched
//! branch `<remote>/<branch>` (a local branch of the same name wins), `@` for the
//! current checkpoint, each optionally followed by `~N` (N-th first-parent ancestor;
//! `~` alone means `~1`, and suffixes chain: `@~2~1`). Resolving one against a store is
//! the storage layer's `Snapshot::resolve`.
//!
//! Session revisions: `<session>:prompt<N>` and `<session>:<tool call id prefix>` name
//! checkpoints saved in this store only; fetched checkpoints can carry any session id
//! and any time, so `<remote>:<session>:…` is needed to name one of theirs (among the
//! checkpoints reachable from that remote's fetched branches).

use crate::{Error, Result};

/// Shortest abbreviation printed or accepted.
pub const MIN_SHORT_ID: usize = 7;
/// Shortest hex prefix accepted as a revision.
pub const MIN_PREFIX: usize = 4;

/// A revision taken apart: what it starts from and how many first-parent steps follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Revision<'a> {
    /// `@`, a branch name or an id prefix.
    pub base: &'a str,
    /// The total of its `~N` suffixes.
    pub steps: u64,
}

/// Splits `base~N~M` into the base and the total number of first-parent steps.
pub fn parse(rev: &str) -> Result<Revision<'_>> {
    let malformed = |why: &str| Error::MalformedRevision {
        rev: rev.to_string(),
        why: why.to_string(),
    };
    let mut parts = rev.split('~');
    let base = parts.next().unwrap_or_default();
    if base.is_empty() {
        return Err(malformed("it names no checkpoint before '~'"));
    }
    let mut steps: u64 = 0;
    for part in parts {
        let n = if part.is_empty() {
            1
        } else {
            part.parse::<u64>()
                .map_err(|_| malformed("'~' must be followed by a number"))?
        };
        steps = steps.saturating_add(n);
    }
    Ok(Revision { base, steps })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ancestry_suffixes_add_up() {
        assert_eq!(
            parse("@").unwrap(),
            Revision {
                base: "@",
                steps: 0
            }
        );
        assert_eq!(
            parse("@~").unwrap(),
            Revision {
                base: "@",
                steps: 1
            }
        );
        assert_eq!(
            parse("abcd~2~3").unwrap(),
            Revision {
                base: "abcd",
                steps: 5
            }
        );
        assert!(parse("~1").is_err());
        assert!(parse("@~x").is_err());
    }
}
