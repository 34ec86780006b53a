//! Line diffs grouped into hunks as git groups them, as plain values for a caller to lay
//! out: no header text and no colour here.
//!
//! Line diffs come from `imara-diff` (Myers, then git's indent heuristic for where an
//! ambiguous block of added or removed lines sits), so hunks match git's own; the hunk
//! grouping and function-name context follow git's xdiff.

use imara_diff::{Algorithm, Diff, InternedInput};

/// Lines of context around each change.
const CONTEXT: usize = 3;
/// git's function-name context is at most this many bytes of the line.
const FUNC_NAME_MAX: usize = 80;

/// What a line in a hunk is, which decides its sign and colour when laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineKind {
    /// Unchanged, shown around changes.
    Context,
    /// Only on the old side.
    Removed,
    /// Only on the new side.
    Added,
}

/// One line of a hunk, split from its line end so that a layout can add its own and
/// mark a last line that has none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Line<'a> {
    /// Context, removed or added.
    pub kind: LineKind,
    /// The line's bytes without its `\n`.
    pub text: &'a [u8],
    /// The line is the last of its side and ends without `\n` (git's `\ No newline at
    /// end of file`).
    pub no_newline: bool,
}

/// A run of changes with their context, as one `@@` section of a unified diff.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hunk<'a> {
    /// The first old line shown, counted from 0.
    pub old_start: usize,
    /// How many old lines (context and removed) the hunk covers.
    pub old_count: usize,
    /// The first new line shown, counted from 0.
    pub new_start: usize,
    /// How many new lines (context and added) the hunk covers.
    pub new_count: usize,
    /// The nearest line above the hunk that starts like a definition, as git names it
    /// after the `@@` range; carried over from an earlier hunk when none is nearer.
    pub function: Option<&'a [u8]>,
    /// The lines in order.
    pub lines: Vec<Line<'a>>,
}

/// A line diff of two texts, kept as changed blocks so that counting lines for a
/// summary costs no hunk building.
pub struct LineDiff<'a> {
    old: Vec<&'a [u8]>,
    new: Vec<&'a [u8]>,
    /// Changed blocks: (old start, old end, new start, new end), in order.
    blocks: Vec<(usize, usize, usize, usize)>,
}

impl<'a> LineDiff<'a> {
    /// The diff of `old` and `new` by line, with lines placed as git places them.
    pub fn new(old: &'a [u8], new: &'a [u8]) -> Self {
        let input = InternedInput::new(old, new);
        let mut diff = Diff::compute(Algorithm::Myers, &input);
        diff.postprocess_lines(&input);
        let blocks = diff
            .hunks()
            .map(|h| {
                (
                    h.before.start as usize,
                    h.before.end as usize,
                    h.after.start as usize,
                    h.after.end as usize,
                )
            })
            .collect();
        let lines = |tokens: &[imara_diff::Token]| -> Vec<&'a [u8]> {
            tokens.iter().map(|&t| input.interner[t]).collect()
        };
        LineDiff {
            old: lines(&input.before),
            new: lines(&input.after),
            blocks,
        }
    }

    /// Lines added, for `--stat` and summaries.
    pub fn insertions(&self) -> u64 {
        self.blocks.iter().map(|b| (b.3 - b.2) as u64).sum()
    }

    /// Lines removed, for `--stat` and summaries.
    pub fn deletions(&self) -> u64 {
        self.blocks.iter().map(|b| (b.1 - b.0) as u64).sum()
    }

    /// The hunks as git builds them: blocks closer than twice the context share a hunk
    /// (git's `xdl_get_hunk`), and each names the nearest line above it that starts
    /// like a definition (git's default function-name rule).
    pub fn hunks(&self) -> Vec<Hunk<'a>> {
        let mut hunks = Vec::new();
        let mut func: Option<&'a [u8]> = None;
        // git searches each hunk's function line only back to the previous hunk's start,
        // and keeps the previous one when it finds none.
        let mut searched_to: isize = -1;
        let mut i = 0;
        while i < self.blocks.len() {
            let mut j = i;
            while j + 1 < self.blocks.len()
                && self.blocks[j + 1].0 - self.blocks[j].1 <= 2 * CONTEXT
            {
                j += 1;
            }
            let (first, last) = (self.blocks[i], self.blocks[j]);
            let s1 = first.0.saturating_sub(CONTEXT);
            let s2 = first.2 - (first.0 - s1);
            let tail = CONTEXT
                .min(self.old.len() - last.1)
                .min(self.new.len() - last.3);
            let (e1, e2) = (last.1 + tail, last.3 + tail);

            let mut line = s1 as isize - 1;
            while line > searched_to {
                if let Some(name) = function_name(self.old[line as usize]) {
                    func = Some(name);
                    break;
                }
                line -= 1;
            }
            searched_to = s1 as isize - 1;

            let mut lines = Vec::new();
            let (mut o, mut n) = (s1, s2);
            // Context is equal on both sides; it is taken from the old side between
            // blocks and from the new side after the last.
            for &(b0, b1, b2, b3) in &self.blocks[i..=j] {
                lines.extend(
                    self.old[o..b0]
                        .iter()
                        .map(|&t| line_of(LineKind::Context, t)),
                );
                lines.extend(
                    self.old[b0..b1]
                        .iter()
                        .map(|&t| line_of(LineKind::Removed, t)),
                );
                lines.extend(
                    self.new[b2..b3]
                        .iter()
                        .map(|&t| line_of(LineKind::Added, t)),
                );
                (o, n) = (b1, b3);
            }
            let rest = e1 - o;
            lines.extend(
                self.new[n..n + rest]
                    .iter()
                    .map(|&t| line_of(LineKind::Context, t)),
            );
            hunks.push(Hunk {
                old_start: s1,
                old_count: e1 - s1,
                new_start: s2,
                new_count: e2 - s2,
                function: func,
                lines,
            });
            i = j + 1;
        }
        hunks
    }
}

fn line_of(kind: LineKind, text: &[u8]) -> Line<'_> {
    match text.strip_suffix(b"\n") {
        Some(body) => Line {
            kind,
            text: body,
            no_newline: false,
        },
        None => Line {
            kind,
            text,
            no_newline: true,
        },
    }
}

/// git's default function-name rule: a line starting with a letter, `_` or `$`, cut to
/// 80 bytes, trailing white space removed, and never split inside a UTF-8 character.
fn function_name(line: &[u8]) -> Option<&[u8]> {
    let first = *line.first()?;
    if !(first.is_ascii_alphabetic() || first == b'_' || first == b'$') {
        return None;
    }
    let mut name = &line[..line.len().min(FUNC_NAME_MAX)];
    while let Some((last, rest)) = name.split_last() {
        if last.is_ascii_whitespace() {
            name = rest;
        } else {
            break;
        }
    }
    let valid = match std::str::from_utf8(name) {
        Ok(_) => name.len(),
        Err(e) if e.error_len().is_none() => e.valid_up_to(),
        Err(_) => name.len(),
    };
    Some(&name[..valid])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranges(old: &str, new: &str) -> Vec<(usize, usize, usize, usize)> {
        LineDiff::new(old.as_bytes(), new.as_bytes())
            .hunks()
            .iter()
            .map(|h| (h.old_start, h.old_count, h.new_start, h.new_count))
            .collect()
    }

    #[test]
    fn hunks_follow_git() {
        assert_eq!(ranges("", "a\n"), [(0, 0, 0, 1)]);
        assert_eq!(ranges("a\n", ""), [(0, 1, 0, 0)]);
        let hunks = LineDiff::new(b"a\nb\n", b"a\nb").hunks();
        let last = hunks[0].lines.last().unwrap();
        assert_eq!(
            (last.kind, last.text, last.no_newline),
            (LineKind::Added, &b"b"[..], true)
        );
        let old: String = (1..=20).map(|i| format!("l{i}\n")).collect();
        let new = old.replace("l2\n", "L2\n").replace("l19\n", "L19\n");
        let diff = LineDiff::new(old.as_bytes(), new.as_bytes());
        let hunks = diff.hunks();
        assert_eq!(ranges(&old, &new), [(0, 5, 0, 5), (15, 5, 15, 5)]);
        assert_eq!(hunks[0].function, None);
        assert_eq!(hunks[1].function, Some(&b"l15"[..]));
        assert_eq!((diff.insertions(), diff.deletions()), (2, 2));
    }

    #[test]
    fn close_changes_share_a_hunk() {
        let old: String = (1..=12).map(|i| format!("l{i}\n")).collect();
        let new = old.replace("l2\n", "L2\n").replace("l9\n", "L9\n");
        assert_eq!(ranges(&old, &new).len(), 1);
        let new = old.replace("l2\n", "L2\n").replace("l10\n", "L10\n");
        assert_eq!(ranges(&old, &new).len(), 2);
    }

    #[test]
    fn function_names_are_cut_like_git() {
        assert_eq!(function_name(b"fn main() {  \n").unwrap(), b"fn main() {");
        assert_eq!(function_name(b"    indented\n"), None);
        assert_eq!(function_name(&[b'x'; 100]).unwrap().len(), 80);
        let mut split = vec![b'x'; 79];
        split.extend_from_slice("é".as_bytes());
        assert_eq!(function_name(&split).unwrap().len(), 79);
    }
}
