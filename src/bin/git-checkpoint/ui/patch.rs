//! Showing changes as `git diff` shows them: unified diffs with git's headers (mode
//! lines, new and deleted files, symlinks as their target, `Binary files … differ`),
//! `--stat`, `--name-status` and `--name-only`.
//!
//! Line diffs come from `imara-diff` (Myers, then git's indent heuristic for where an
//! ambiguous block of added or removed lines sits), so hunks match git's own; the hunk
//! grouping, header format and function-name context follow git's xdiff.

use std::ffi::OsStr;
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use git_checkpoint::storage::pack::{LastPack, ReadChunks};
use imara_diff::{Algorithm, Diff, InternedInput};
use serde::Serialize;

use crate::ui::output::{paint, quote_path, quote_prefixed, style};
use git_checkpoint::diff::Change;
use git_checkpoint::format::chunk::Hasher;
use git_checkpoint::model::tree::Node;
use git_checkpoint::{Error, Result};

/// Lines of context around each change.
const CONTEXT: usize = 3;
/// Files larger than this are called binary without being read (git's
/// `core.bigFileThreshold` default).
const BIG_FILE: u64 = 512 << 20;
/// git calls content binary when a NUL byte occurs in this many leading bytes.
const BINARY_PROBE: usize = 8000;
/// git's function-name context is at most this many bytes of the line.
const FUNC_NAME_MAX: usize = 80;
/// The width `--stat` fits in when `COLUMNS` does not say (git's default off a terminal).
const STAT_WIDTH: usize = 80;

/// How changes are shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Unified diffs.
    Patch,
    /// A diffstat.
    Stat,
    /// A status letter and the path per line.
    NameStatus,
    /// The path per line.
    NameOnly,
}

/// Reads what a change has on each side: the old side from the store, the new side
/// from the store or, for a comparison with the worktree, from the worktree itself.
pub struct ContentReader<'a> {
    hasher: &'a Hasher,
    chunks: &'a ReadChunks,
    worktree: Option<&'a Path>,
}

/// One side of a change as read.
enum Content {
    Absent,
    TooBig(u64),
    Bytes(Vec<u8>),
}

impl Content {
    fn bytes(&self) -> &[u8] {
        match self {
            Content::Bytes(b) => b,
            _ => &[],
        }
    }
}

impl<'a> ContentReader<'a> {
    /// A reader over the store's chunks; with `worktree`, new sides are read from files
    /// under that root (they came from a scan that stored nothing).
    pub fn new(hasher: &'a Hasher, chunks: &'a ReadChunks, worktree: Option<&'a Path>) -> Self {
        ContentReader {
            hasher,
            chunks,
            worktree,
        }
    }

    fn read(&self, path: &[u8], node: Option<&Node>, new_side: bool) -> Result<Content> {
        Ok(match node {
            None | Some(Node::Dir { .. }) => Content::Absent,
            Some(Node::Symlink { target }) => Content::Bytes(target.clone()),
            Some(Node::File { size, .. } | Node::FileWithMode { size, .. }) if *size > BIG_FILE => {
                Content::TooBig(*size)
            }
            Some(Node::File { size, chunks, .. } | Node::FileWithMode { size, chunks, .. }) => {
                match self.worktree.filter(|_| new_side) {
                    Some(root) => {
                        let full = root.join(OsStr::from_bytes(path));
                        Content::Bytes(std::fs::read(&full).map_err(|e| Error::io(full, e))?)
                    }
                    None => Content::Bytes(self.read_stored(path, *size, chunks)?),
                }
            }
        })
    }

    /// A stored file's content, which must be exactly `size` bytes: reading stops at the
    /// first chunk that takes it past `size`, so a file record listing more content than
    /// it says (a crafted store) costs no more than its size and one chunk.
    fn read_stored(&self, path: &[u8], size: u64, chunks: &[u128]) -> Result<Vec<u8>> {
        let wrong = |held: &str| {
            Error::Corrupt(format!(
                "file {}: its chunks hold {held} than its recorded size of {size} bytes",
                quote_path(path)
            ))
        };
        let mut out = Vec::new();
        let mut last = LastPack::default();
        for &id in chunks {
            self.chunks.read(self.hasher, id, &mut out, &mut last)?;
            if out.len() as u64 > size {
                return Err(wrong("more"));
            }
        }
        if (out.len() as u64) < size {
            return Err(wrong("less"));
        }
        Ok(out)
    }

    fn sides(&self, change: &Change) -> Result<(Content, Content)> {
        Ok((
            self.read(&change.path, change.old.as_ref(), false)?,
            self.read(&change.path, change.new.as_ref(), true)?,
        ))
    }
}

/// The mode shown for a node, as git writes modes: `100644`, `100755`, `120000`, and for
/// a file that keeps its own permission bits those bits (`100600`), which git never
/// shows because it keeps only the executable bit.
fn mode(node: &Node) -> u32 {
    match node {
        Node::FileWithMode { mode, .. } => 0o100000 | (mode & 0o777),
        Node::File { .. } if node.is_executable() => 0o100755,
        Node::File { .. } => 0o100644,
        Node::Symlink { .. } => 0o120000,
        Node::Dir { .. } => 0o040000,
    }
}

fn is_binary(content: &Content) -> bool {
    match content {
        Content::TooBig(_) => true,
        Content::Bytes(b) => b[..b.len().min(BINARY_PROBE)].contains(&0),
        Content::Absent => false,
    }
}

fn size(content: &Content) -> u64 {
    match content {
        Content::Absent => 0,
        Content::TooBig(n) => *n,
        Content::Bytes(b) => b.len() as u64,
    }
}

/// A line diff of two texts, as git groups it into hunks.
struct LineDiff<'a> {
    old: Vec<&'a [u8]>,
    new: Vec<&'a [u8]>,
    /// Changed blocks: (old start, old end, new start, new end), in order.
    blocks: Vec<(usize, usize, usize, usize)>,
}

impl<'a> LineDiff<'a> {
    fn new(old: &'a [u8], new: &'a [u8]) -> Self {
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

    fn insertions(&self) -> u64 {
        self.blocks.iter().map(|b| (b.3 - b.2) as u64).sum()
    }

    fn deletions(&self) -> u64 {
        self.blocks.iter().map(|b| (b.1 - b.0) as u64).sum()
    }

    /// Writes the hunks: blocks closer than twice the context share a hunk (git's
    /// `xdl_get_hunk`), and each header names the nearest line above it that starts
    /// like a definition (git's default function-name rule).
    fn write_hunks(&self, out: &mut impl Write, colour: bool) -> io::Result<()> {
        let mut func: Vec<u8> = Vec::new();
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
                    func = name;
                    break;
                }
                line -= 1;
            }
            searched_to = s1 as isize - 1;
            let mut header =
                format!("@@ -{} +{} @@", range(s1, e1 - s1), range(s2, e2 - s2)).into_bytes();
            if colour {
                header = paint(&String::from_utf8_lossy(&header), style::FRAG, true).into_bytes();
            }
            out.write_all(&header)?;
            if !func.is_empty() {
                out.write_all(b" ")?;
                out.write_all(&func)?;
            }
            out.write_all(b"\n")?;

            let (mut o, mut n) = (s1, s2);
            // Context is equal on both sides; it is printed from the old side between
            // blocks and from the new side after the last.
            for &(b0, b1, b2, b3) in &self.blocks[i..=j] {
                while o < b0 {
                    write_line(out, b' ', self.old[o], None)?;
                    o += 1;
                }
                for &text in &self.old[b0..b1] {
                    write_line(out, b'-', text, colour.then_some(style::OLD))?;
                }
                for &text in &self.new[b2..b3] {
                    write_line(out, b'+', text, colour.then_some(style::NEW))?;
                }
                (o, n) = (b1, b3);
            }
            while o < e1 {
                write_line(out, b' ', self.new[n], None)?;
                o += 1;
                n += 1;
            }
            i = j + 1;
        }
        Ok(())
    }
}

/// A hunk range as git prints it: `start,count`, the count left out when it is 1, and
/// an empty range given as the line before it.
fn range(start: usize, count: usize) -> String {
    match count {
        0 => format!("{start},0"),
        1 => format!("{}", start + 1),
        n => format!("{},{n}", start + 1),
    }
}

/// git's default function-name rule: a line starting with a letter, `_` or `$`, cut to
/// 80 bytes, trailing white space removed, and never split inside a UTF-8 character.
fn function_name(line: &[u8]) -> Option<Vec<u8>> {
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
    Some(name[..valid].to_vec())
}

fn write_line(out: &mut impl Write, sign: u8, text: &[u8], colour: Option<&str>) -> io::Result<()> {
    let (body, newline) = match text.strip_suffix(b"\n") {
        Some(body) => (body, true),
        None => (text, false),
    };
    if let Some(code) = colour {
        write!(out, "\x1b[{code}m")?;
    }
    out.write_all(&[sign])?;
    out.write_all(body)?;
    if colour.is_some() {
        out.write_all(b"\x1b[m")?;
    }
    out.write_all(b"\n")?;
    if !newline {
        out.write_all(b"\\ No newline at end of file\n")?;
    }
    Ok(())
}

/// How a change is shown in JSON and counted in `--stat`.
#[derive(Clone, Debug, Serialize)]
pub struct FileSummary {
    /// Path relative to the worktree root (lossy UTF-8).
    pub path: String,
    /// `A`, `D`, `M` or `T`.
    pub status: String,
    /// git's mode on the old side (`100644`, `100755`, `120000`), if present.
    pub old_mode: Option<String>,
    /// git's mode on the new side, if present.
    pub new_mode: Option<String>,
    /// Bytes on the old side.
    pub old_size: u64,
    /// Bytes on the new side.
    pub new_size: u64,
    /// Whether either side is binary (then there are no line counts).
    pub binary: bool,
    /// Lines added, for text.
    pub insertions: Option<u64>,
    /// Lines removed, for text.
    pub deletions: Option<u64>,
}

/// Summarises each change, reading content to count lines.
pub fn summarize(changes: &[Change], reader: &ContentReader<'_>) -> Result<Vec<FileSummary>> {
    changes
        .iter()
        .map(|change| {
            let (old, new) = reader.sides(change)?;
            let binary = is_binary(&old) || is_binary(&new);
            let counts = (!binary).then(|| {
                let diff = LineDiff::new(old.bytes(), new.bytes());
                (diff.insertions(), diff.deletions())
            });
            let mode_text = |n: &Option<Node>| n.as_ref().map(|n| format!("{:06o}", mode(n)));
            Ok(FileSummary {
                path: String::from_utf8_lossy(&change.path).into_owned(),
                status: change.status().to_string(),
                old_mode: mode_text(&change.old),
                new_mode: mode_text(&change.new),
                old_size: size(&old),
                new_size: size(&new),
                binary,
                insertions: counts.map(|c| c.0),
                deletions: counts.map(|c| c.1),
            })
        })
        .collect()
}

/// Writes `changes` in `format`, with ANSI colours when `colour`.
pub fn write_changes(
    out: &mut impl Write,
    changes: &[Change],
    reader: &ContentReader<'_>,
    format: Format,
    colour: bool,
) -> Result<()> {
    let io = |e: io::Error| Error::io("<stdout>", e);
    match format {
        Format::NameOnly => {
            for change in changes {
                writeln!(out, "{}", quote_path(&change.path)).map_err(io)?;
            }
        }
        Format::NameStatus => {
            for change in changes {
                writeln!(out, "{}\t{}", change.status(), quote_path(&change.path)).map_err(io)?;
            }
        }
        Format::Stat => {
            let summaries = summarize(changes, reader)?;
            write_stat(out, &summaries, changes, colour).map_err(io)?;
        }
        Format::Patch => {
            for change in changes {
                // git shows a file that became a symlink (or back) as a deletion and an
                // addition.
                let parts = if change.status() == 'T' {
                    vec![
                        Change {
                            path: change.path.clone(),
                            old: change.old.clone(),
                            new: None,
                        },
                        Change {
                            path: change.path.clone(),
                            old: None,
                            new: change.new.clone(),
                        },
                    ]
                } else {
                    vec![change.clone()]
                };
                for part in &parts {
                    let (old, new) = reader.sides(part)?;
                    write_patch(out, part, &old, &new, colour).map_err(io)?;
                }
            }
        }
    }
    Ok(())
}

fn write_patch(
    out: &mut impl Write,
    change: &Change,
    old: &Content,
    new: &Content,
    colour: bool,
) -> io::Result<()> {
    let meta =
        |out: &mut dyn Write, text: &str| writeln!(out, "{}", paint(text, style::META, colour));
    let a = quote_prefixed("a/", &change.path);
    let b = quote_prefixed("b/", &change.path);
    meta(out, &format!("diff --git {a} {b}"))?;
    match (&change.old, &change.new) {
        (None, Some(n)) => meta(out, &format!("new file mode {:06o}", mode(n)))?,
        (Some(o), None) => meta(out, &format!("deleted file mode {:06o}", mode(o)))?,
        (Some(o), Some(n)) if mode(o) != mode(n) => {
            meta(out, &format!("old mode {:06o}", mode(o)))?;
            meta(out, &format!("new mode {:06o}", mode(n)))?;
        }
        _ => {}
    }
    let same = matches!((old, new), (Content::Bytes(x), Content::Bytes(y)) if x == y);
    let both_empty = size(old) == 0 && size(new) == 0;
    if same || both_empty {
        return Ok(());
    }
    let old_label = if change.old.is_some() {
        a
    } else {
        "/dev/null".into()
    };
    let new_label = if change.new.is_some() {
        b
    } else {
        "/dev/null".into()
    };
    if is_binary(old) || is_binary(new) {
        return writeln!(out, "Binary files {old_label} and {new_label} differ");
    }
    // git ends a label holding a space with a tab, so that tools can find its end.
    let tab = |label: &str| if label.contains(' ') { "\t" } else { "" };
    meta(out, &format!("--- {old_label}{}", tab(&old_label)))?;
    meta(out, &format!("+++ {new_label}{}", tab(&new_label)))?;
    LineDiff::new(old.bytes(), new.bytes()).write_hunks(out, colour)
}

/// Writes a diffstat as git lays it out in `width` columns (`COLUMNS`, else 80).
fn write_stat(
    out: &mut impl Write,
    files: &[FileSummary],
    changes: &[Change],
    colour: bool,
) -> io::Result<()> {
    if files.is_empty() {
        return Ok(());
    }
    let width = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.parse::<usize>().ok())
        .unwrap_or(STAT_WIDTH);
    let names: Vec<String> = changes.iter().map(|c| quote_path(&c.path)).collect();
    let changed = |f: &FileSummary| f.insertions.unwrap_or(0) + f.deletions.unwrap_or(0);
    let max_change = files
        .iter()
        .filter(|f| !f.binary)
        .map(changed)
        .max()
        .unwrap_or(0) as usize;
    let max_len = names.iter().map(|n| n.chars().count()).max().unwrap_or(0);
    let bin_width = files
        .iter()
        .filter(|f| f.binary)
        .map(|f| 14 + decimal_width(f.old_size as usize) + decimal_width(f.new_size as usize))
        .max()
        .unwrap_or(0);
    let number_width = decimal_width(max_change).max(if bin_width > 0 { 3 } else { 0 });
    let width = width.max(16 + 6 + number_width);
    let mut graph_width = if max_change + 4 > bin_width {
        max_change
    } else {
        bin_width - 4
    };
    let mut name_width = max_len;
    if name_width + number_width + 6 + graph_width > width {
        let room = (width * 3 / 8).saturating_sub(number_width + 6);
        if graph_width > room {
            graph_width = room.max(6);
        }
        if name_width > width - number_width - 6 - graph_width {
            name_width = width - number_width - 6 - graph_width;
        } else {
            graph_width = width - number_width - 6 - name_width;
        }
    }
    let (mut adds, mut dels) = (0, 0);
    for (file, name) in files.iter().zip(&names) {
        let shown = fit_name(name, name_width);
        let pad = name_width.saturating_sub(shown.chars().count());
        write!(out, " {shown}{} |", " ".repeat(pad))?;
        if file.binary {
            writeln!(
                out,
                " {:>number_width$} {} -> {} bytes",
                "Bin",
                paint(&file.old_size.to_string(), style::OLD, colour),
                paint(&file.new_size.to_string(), style::NEW, colour)
            )?;
            continue;
        }
        let (added, deleted) = (file.insertions.unwrap_or(0), file.deletions.unwrap_or(0));
        adds += added;
        dels += deleted;
        let (mut plus, mut minus) = (added as usize, deleted as usize);
        if graph_width <= max_change {
            let total = scale(plus + minus, graph_width, max_change)
                .max(if plus > 0 && minus > 0 { 2 } else { 0 });
            if plus < minus {
                plus = scale(plus, graph_width, max_change);
                minus = total - plus;
            } else {
                minus = scale(minus, graph_width, max_change);
                plus = total - minus;
            }
        }
        let total = added + deleted;
        write!(
            out,
            " {total:>number_width$}{}",
            if total > 0 { " " } else { "" }
        )?;
        writeln!(
            out,
            "{}{}",
            paint(&"+".repeat(plus), style::NEW, colour),
            paint(&"-".repeat(minus), style::OLD, colour)
        )?;
    }
    let plural = |n: u64, one: &str, many: &str| {
        if n == 1 {
            one.to_string()
        } else {
            many.to_string()
        }
    };
    let mut summary = format!(
        " {} {}",
        files.len(),
        plural(files.len() as u64, "file changed", "files changed")
    );
    if adds > 0 || dels == 0 {
        summary += &format!(", {adds} {}", plural(adds, "insertion(+)", "insertions(+)"));
    }
    if dels > 0 || adds == 0 {
        summary += &format!(", {dels} {}", plural(dels, "deletion(-)", "deletions(-)"));
    }
    writeln!(out, "{summary}")
}

/// git's `scale_linear`: a non-zero count never scales to zero.
fn scale(n: usize, width: usize, max: usize) -> usize {
    if n == 0 {
        0
    } else {
        1 + n * (width - 1) / max
    }
}

fn decimal_width(n: usize) -> usize {
    n.to_string().len()
}

/// A name cut to `width` as git cuts it: `...` then the tail, from a `/` if there is one.
fn fit_name(name: &str, width: usize) -> String {
    let chars: Vec<char> = name.chars().collect();
    if chars.len() <= width {
        return name.to_string();
    }
    let keep = width.saturating_sub(3);
    let tail: String = chars[chars.len() - keep..].iter().collect();
    match tail.find('/') {
        Some(slash) => format!("...{}", &tail[slash..]),
        None => format!("...{tail}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hunks(old: &str, new: &str) -> String {
        let mut out = Vec::new();
        LineDiff::new(old.as_bytes(), new.as_bytes())
            .write_hunks(&mut out, false)
            .unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn hunk_headers_follow_git() {
        assert_eq!(hunks("", "a\n"), "@@ -0,0 +1 @@\n+a\n");
        assert_eq!(hunks("a\n", ""), "@@ -1 +0,0 @@\n-a\n");
        assert_eq!(
            hunks("a\nb\n", "a\nb"),
            "@@ -1,2 +1,2 @@\n a\n-b\n+b\n\\ No newline at end of file\n"
        );
        let old: String = (1..=20).map(|i| format!("l{i}\n")).collect();
        let new = old.replace("l2\n", "L2\n").replace("l19\n", "L19\n");
        assert_eq!(
            hunks(&old, &new),
            "@@ -1,5 +1,5 @@\n l1\n-l2\n+L2\n l3\n l4\n l5\n\
             @@ -16,5 +16,5 @@ l15\n l16\n l17\n l18\n-l19\n+L19\n l20\n"
        );
    }

    #[test]
    fn close_changes_share_a_hunk() {
        let old: String = (1..=12).map(|i| format!("l{i}\n")).collect();
        let new = old.replace("l2\n", "L2\n").replace("l9\n", "L9\n");
        assert_eq!(hunks(&old, &new).matches("@@ -").count(), 1);
        let new = old.replace("l2\n", "L2\n").replace("l10\n", "L10\n");
        assert_eq!(hunks(&old, &new).matches("@@ -").count(), 2);
    }

    #[test]
    fn function_names_are_cut_like_git() {
        assert_eq!(function_name(b"fn main() {  \n").unwrap(), b"fn main() {");
        assert_eq!(function_name(b"    indented\n"), None);
        assert_eq!(function_name(&[b'x'; 100]).unwrap().len(), 80);
        let mut split = vec![b'x'; 79];
        split.extend_from_slice("é".as_bytes());
        assert_eq!(function_name(&split).unwrap().len(), 79);
        assert_eq!(fit_name("abcdefghij/klmno", 10), ".../klmno");
    }
}
