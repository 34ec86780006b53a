//! Showing changes as `git diff` shows them: unified diffs with git's headers (mode
//! lines, new and deleted files, symlinks as their target, `Binary files … differ`),
//! `--stat`, `--name-status` and `--name-only`.
//!
//! The library reads each side (`diff::content`) and builds the hunks (`diff::unified`);
//! this module lays them out: headers, `@@` ranges, signs and colour.

use std::io::{self, Write};

use crate::ui::json::FileSummary;
use crate::ui::output::{paint, show_path, style};
use git_checkpoint::diff::content::{Content, ContentReader, EXPAND_LIMIT};
use git_checkpoint::diff::unified::{Hunk, LineDiff, LineKind};
use git_checkpoint::diff::Change;
use git_checkpoint::format::path::{quote_path, quote_prefixed};
use git_checkpoint::format::size::human_bytes;
use git_checkpoint::model::tree::Node;
use git_checkpoint::{Error, Result};

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

/// Writes `hunks` as git does: an `@@` header with the ranges and the function-name
/// context, then each line with its sign.
fn write_hunks(out: &mut impl Write, hunks: &[Hunk<'_>], colour: bool) -> io::Result<()> {
    for hunk in hunks {
        let header = format!(
            "@@ -{} +{} @@",
            range(hunk.old_start, hunk.old_count),
            range(hunk.new_start, hunk.new_count)
        );
        out.write_all(paint(&header, style::FRAG, colour).as_bytes())?;
        if let Some(func) = hunk.function {
            out.write_all(b" ")?;
            out.write_all(func)?;
        }
        out.write_all(b"\n")?;
        for line in &hunk.lines {
            let (sign, code) = match line.kind {
                LineKind::Context => (b' ', None),
                LineKind::Removed => (b'-', colour.then_some(style::OLD)),
                LineKind::Added => (b'+', colour.then_some(style::NEW)),
            };
            if let Some(code) = code {
                write!(out, "\x1b[{code}m")?;
            }
            out.write_all(&[sign])?;
            out.write_all(line.text)?;
            if code.is_some() {
                out.write_all(b"\x1b[m")?;
            }
            out.write_all(b"\n")?;
            if line.no_newline {
                out.write_all(b"\\ No newline at end of file\n")?;
            }
        }
    }
    Ok(())
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

/// Summarises each change, reading content to count lines.
pub fn summarize(changes: &[Change], reader: &ContentReader<'_>) -> Result<Vec<FileSummary>> {
    changes
        .iter()
        .map(|change| {
            let (old, new) = reader.sides(change)?;
            let binary = old.is_binary() || new.is_binary();
            let counts = (!binary).then(|| {
                let diff = LineDiff::new(old.bytes(), new.bytes());
                (diff.insertions(), diff.deletions())
            });
            let mode_text = |n: &Option<Node>| n.as_ref().map(|n| format!("{:06o}", mode(n)));
            Ok(FileSummary {
                path: show_path(&change.path),
                status: change.status().to_string(),
                old_mode: mode_text(&change.old),
                new_mode: mode_text(&change.new),
                old_size: old.size(),
                new_size: new.size(),
                binary,
                insertions: counts.map(|c| c.0),
                deletions: counts.map(|c| c.1),
                unexpanded: old.is_unexpanded() || new.is_unexpanded(),
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
            let unexpanded = summaries.iter().filter(|s| s.unexpanded).count();
            write_unexpanded_note(out, unexpanded).map_err(io)?;
        }
        Format::Patch => {
            let mut unexpanded = 0;
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
                    if old.is_unexpanded() || new.is_unexpanded() {
                        unexpanded += 1;
                    }
                    write_patch(out, part, &old, &new, colour).map_err(io)?;
                }
            }
            write_unexpanded_note(out, unexpanded).map_err(io)?;
        }
    }
    Ok(())
}

/// After the changes, when `count` of them were left unread for the reader's limit:
/// which, and why their sizes are all there is.
fn write_unexpanded_note(out: &mut impl Write, count: usize) -> io::Result<()> {
    if count == 0 {
        return Ok(());
    }
    writeln!(
        out,
        "{count} file(s) not expanded: one diff reads at most {} of content, so these show \
         the sizes their records give",
        human_bytes(EXPAND_LIMIT)
    )
}

/// Writes one change as `git diff` shows it, from its two sides as read (`revert
/// --dry-run` shows content that is in no tree yet).
pub fn write_patch(
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
    let both_empty = old.size() == 0 && new.size() == 0;
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
    if old.is_unexpanded() || new.is_unexpanded() {
        return writeln!(
            out,
            "Content not expanded: {old_label} and {new_label} ({} -> {} bytes)",
            old.size(),
            new.size()
        );
    }
    if old.is_binary() || new.is_binary() {
        return writeln!(out, "Binary files {old_label} and {new_label} differ");
    }
    // git ends a label holding a space with a tab, so that tools can find its end.
    let tab = |label: &str| if label.contains(' ') { "\t" } else { "" };
    meta(out, &format!("--- {old_label}{}", tab(&old_label)))?;
    meta(out, &format!("+++ {new_label}{}", tab(&new_label)))?;
    write_hunks(
        out,
        &LineDiff::new(old.bytes(), new.bytes()).hunks(),
        colour,
    )
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
    let columns = StatColumns::fit(files, &names, width);
    let (mut adds, mut dels) = (0, 0);
    for (file, name) in files.iter().zip(&names) {
        columns.write_row(out, file, name, colour)?;
        adds += file.insertions.unwrap_or(0);
        dels += file.deletions.unwrap_or(0);
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

/// The columns of a diffstat, fitted as git's `show_stats` fits them.
struct StatColumns {
    /// Width of the name column.
    name: usize,
    /// Width of the count column.
    number: usize,
    /// Width of the `+++---` graph.
    graph: usize,
    /// The most lines any text file changed: the graph's full scale.
    max_change: usize,
}

impl StatColumns {
    /// Fits the columns for `files`, named `names`, into `width`.
    fn fit(files: &[FileSummary], names: &[String], width: usize) -> Self {
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
        let number = decimal_width(max_change).max(if bin_width > 0 { 3 } else { 0 });
        let width = width.max(16 + 6 + number);
        let mut graph = if max_change + 4 > bin_width {
            max_change
        } else {
            bin_width - 4
        };
        let mut name = max_len;
        if name + number + 6 + graph > width {
            let room = (width * 3 / 8).saturating_sub(number + 6);
            if graph > room {
                graph = room.max(6);
            }
            if name > width - number - 6 - graph {
                name = width - number - 6 - graph;
            } else {
                graph = width - number - 6 - name;
            }
        }
        StatColumns {
            name,
            number,
            graph,
            max_change,
        }
    }

    /// Writes `file`'s row: its name, its count and its graph, or for a binary file its
    /// sizes.
    fn write_row(
        &self,
        out: &mut impl Write,
        file: &FileSummary,
        name: &str,
        colour: bool,
    ) -> io::Result<()> {
        let number_width = self.number;
        let shown = fit_name(name, self.name);
        let pad = self.name.saturating_sub(shown.chars().count());
        write!(out, " {shown}{} |", " ".repeat(pad))?;
        if file.binary {
            return writeln!(
                out,
                " {:>number_width$} {} -> {} bytes",
                "Bin",
                paint(&file.old_size.to_string(), style::OLD, colour),
                paint(&file.new_size.to_string(), style::NEW, colour)
            );
        }
        let (added, deleted) = (file.insertions.unwrap_or(0), file.deletions.unwrap_or(0));
        let (mut plus, mut minus) = (added as usize, deleted as usize);
        if self.graph <= self.max_change {
            let total = scale(plus + minus, self.graph, self.max_change)
                .max(if plus > 0 && minus > 0 { 2 } else { 0 });
            if plus < minus {
                plus = scale(plus, self.graph, self.max_change);
                minus = total - plus;
            } else {
                minus = scale(minus, self.graph, self.max_change);
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
        )
    }
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
        let diff = LineDiff::new(old.as_bytes(), new.as_bytes());
        write_hunks(&mut out, &diff.hunks(), false).unwrap();
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
    fn names_are_cut_like_git() {
        assert_eq!(fit_name("abcdefghij/klmno", 10), ".../klmno");
        assert_eq!(fit_name("abcdefghijklmno", 10), "...ijklmno");
        assert_eq!(fit_name("short", 10), "short");
    }
}
