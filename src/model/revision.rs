//! The revision language that names checkpoints.
//!
//! Revisions: a full id or a unique hex prefix of 4+ digits, a branch name, a fetched
//! branch `<remote>/<branch>` (a local branch of the same name wins), `@` for the
//! current checkpoint, each optionally followed by `~N` (N-th first-parent ancestor;
//! `~` alone means `~1`) and `^N` (the N-th parent; `^` alone is `^1`), chained in any
//! order as git chains them: `@~2^2~1`. Resolving one against a store is
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

/// A revision taken apart: what it starts from and the parent steps that follow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Revision<'a> {
    /// `@`, a branch name, an id prefix or a session revision.
    pub base: &'a str,
    /// The steps, in order.
    pub steps: Vec<Step>,
}

/// One move to a parent, repeated: `~N` is N moves to the first parent, `^N` one move
/// to the N-th parent (as git reads them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Step {
    /// Which parent, from 1 (the first: the checkpoint it was saved on top of).
    pub parent: u64,
    /// How many times.
    pub times: u64,
}

/// Splits `base~N^M…` into the base and its steps: `~N` (N first-parent steps; `~` is
/// `~1`) and `^N` (the N-th parent; `^` is `^1`, `^0` the checkpoint itself), in any
/// number and order.
pub fn parse(rev: &str) -> Result<Revision<'_>> {
    let malformed = |why: &str| Error::MalformedRevision {
        rev: rev.to_string(),
        why: why.to_string(),
    };
    let end = rev.find(['~', '^']).unwrap_or(rev.len());
    let base = &rev[..end];
    if base.is_empty() {
        return Err(malformed("it names no checkpoint before '~' or '^'"));
    }
    let mut steps = Vec::new();
    // Every operator is one byte: `rest` starts at one after each number.
    let mut rest = &rev[end..];
    while let Some(operator) = rest.chars().next() {
        let after = &rest[1..];
        let digits_end = after
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(after.len());
        let (digits, next) = after.split_at(digits_end);
        if !next.is_empty() && !next.starts_with(['~', '^']) {
            return Err(malformed(&format!(
                "'{operator}' must be followed by a number"
            )));
        }
        let n = if digits.is_empty() {
            1
        } else {
            digits
                .parse::<u64>()
                .map_err(|_| malformed(&format!("the number after '{operator}' is too large")))?
        };
        match operator {
            '~' => steps.push(Step {
                parent: 1,
                times: n,
            }),
            _ if n > 0 => steps.push(Step {
                parent: n,
                times: 1,
            }),
            _ => {}
        }
        rest = next;
    }
    Ok(Revision { base, steps })
}

/// Splits a range `A..B` (the checkpoints reachable from B and not from A, as git reads
/// it) into its two ends; an empty end is `@`, as git reads an empty end as `HEAD`.
/// `None` when `rev` holds no `..`. A symmetric difference `A...B` is malformed: the
/// store has no merge bases to compute it from cheaply, and reading it as `A..B` would
/// list something else than git does.
pub fn split_range(rev: &str) -> Result<Option<(&str, &str)>> {
    let Some(at) = rev.find("..") else {
        return Ok(None);
    };
    let (from, to) = (&rev[..at], &rev[at + 2..]);
    if to.starts_with('.') || to.contains("..") {
        return Err(Error::MalformedRevision {
            rev: rev.to_string(),
            why: "only 'A..B' ranges are read (not 'A...B', nor more than one '..')".to_string(),
        });
    }
    fn end(side: &str) -> &str {
        match side.is_empty() {
            true => "@",
            false => side,
        }
    }
    Ok(Some((end(from), end(to))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_split_as_git_reads_them() {
        assert_eq!(split_range("@").unwrap(), None);
        assert_eq!(split_range("a..b").unwrap(), Some(("a", "b")));
        assert_eq!(split_range("main..").unwrap(), Some(("main", "@")));
        assert_eq!(split_range("..o/main").unwrap(), Some(("@", "o/main")));
        assert!(split_range("a...b").is_err());
        assert!(split_range("a..b..c").is_err());
    }

    fn steps(list: &[(u64, u64)]) -> Vec<Step> {
        list.iter()
            .map(|&(parent, times)| Step { parent, times })
            .collect()
    }

    #[test]
    fn parent_suffixes_read_as_git_reads_them() {
        assert_eq!(
            parse("@").unwrap(),
            Revision {
                base: "@",
                steps: vec![]
            }
        );
        assert_eq!(parse("@~").unwrap().steps, steps(&[(1, 1)]));
        assert_eq!(parse("abcd~2~3").unwrap().steps, steps(&[(1, 2), (1, 3)]));
        assert_eq!(parse("main^").unwrap().steps, steps(&[(1, 1)]));
        assert_eq!(parse("main^2~3").unwrap().steps, steps(&[(2, 1), (1, 3)]));
        assert_eq!(parse("main^0").unwrap().steps, steps(&[]));
        assert_eq!(parse("s1:prompt3~").unwrap().base, "s1:prompt3");
        assert!(parse("~1").is_err());
        assert!(parse("^").is_err());
        assert!(parse("@~x").is_err());
        assert!(parse("@^x").is_err());
        assert!(parse("@~99999999999999999999999").is_err());
    }
}
