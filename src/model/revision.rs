//! The revision language that names checkpoints.
//!
//! Revisions: a full id or a unique hex prefix of 4+ digits, a branch name, a fetched
//! branch `<remote>/<branch>` (a local branch of the same name wins), `@` for the
//! current checkpoint, each optionally followed by `~N` (N-th first-parent ancestor;
//! `~` alone means `~1`) and `^N` (the N-th parent; `^` alone is `^1`), chained in any
//! order as git chains them: `@~2^2~1`. Resolving one against a store is
//! the storage layer's `Snapshot::resolve`.
//!
//! Ranges: `A..B` is the change from A to B ([`parse_range`]); `revert`, `diff` and `show`
//! take one.
//!
//! Session revisions: `<session>:prompt<N>`, `<session>:turn<N>` (the last checkpoint of
//! prompt N's turn; as a pair, `Snapshot::resolve_turn`), either with `-<K>` for the
//! K-th prompt from the end, and `<session>:<tool call id prefix>` name
//! checkpoints saved in this store only; fetched checkpoints can carry any session id
//! and any time, so `<remote>:<session>:…` is needed to name one of theirs (among the
//! checkpoints reachable from that remote's fetched branches).

use crate::{Error, Result};

/// A range `A..B`: the change from checkpoint A to checkpoint B (as git reads `A..B` for
/// a diff). An empty side is `@`, as git's is `HEAD`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Range<'a> {
    /// Where the change starts (`A`).
    pub from: &'a str,
    /// Where it ends (`B`).
    pub to: &'a str,
}

/// Reads `rev` as a range `A..B`; `Ok(None)` when it holds no `..` (one revision).
/// `A...B` (git's symmetric difference) is refused: it names no single change.
pub fn parse_range<'a>(rev: &'a str) -> Result<Option<Range<'a>>> {
    let Some(dots) = rev.find("..") else {
        return Ok(None);
    };
    let (from, to) = (&rev[..dots], &rev[dots + 2..]);
    if to.starts_with('.') {
        return Err(Error::MalformedRevision {
            rev: rev.to_string(),
            why: "'...' is not supported; name a range as A..B".into(),
        });
    }
    if to.contains("..") {
        return Err(Error::MalformedRevision {
            rev: rev.to_string(),
            why: "a range has one '..'".into(),
        });
    }
    let side = |s: &'a str| if s.is_empty() { "@" } else { s };
    Ok(Some(Range {
        from: side(from),
        to: side(to),
    }))
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_split_as_git_reads_them() {
        let split = |rev| parse_range(rev).unwrap().map(|r| (r.from, r.to));
        assert_eq!(split("@"), None);
        assert_eq!(split("a..b"), Some(("a", "b")));
        assert_eq!(split("main.."), Some(("main", "@")));
        assert_eq!(split("..o/main"), Some(("@", "o/main")));
        assert!(parse_range("a...b").is_err());
        assert!(parse_range("a..b..c").is_err());
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

    #[test]
    fn ranges_read_as_git_reads_them() {
        let range = |from, to| Some(Range { from, to });
        assert_eq!(parse_range("main").unwrap(), None);
        assert_eq!(parse_range("a1b2..@~2").unwrap(), range("a1b2", "@~2"));
        assert_eq!(
            parse_range("s1:prompt2..").unwrap(),
            range("s1:prompt2", "@")
        );
        assert_eq!(parse_range("..main").unwrap(), range("@", "main"));
        assert!(parse_range("a...b").is_err());
        assert!(parse_range("a..b..c").is_err());
    }
}
