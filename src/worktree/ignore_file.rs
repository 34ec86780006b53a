//! The patterns of ignore files (`.gitignore`, `info/exclude`, `core.excludesFile`),
//! read and matched on bytes as git reads and matches them.
//!
//! The `ignore` crate matches paths on bytes but takes patterns as text. A line that is
//! UTF-8 goes to it as it is; a line that is not (a Latin-1 `caf\xe9`) is turned into a
//! glob here, by the crate's own rules, with each byte that is not UTF-8 standing for
//! itself, as it does for git: never for any byte, which made `*\xff*` ignore every
//! file. The lines keep their order, so the last line that matches still decides.

use std::ffi::OsStr;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use globset::GlobBuilder;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use ignore::Match;
use regex::bytes::{Regex, RegexBuilder};

/// The patterns of one or more ignore files, in their order.
#[derive(Debug)]
pub(super) struct Patterns {
    /// Runs of consecutive lines: the last run with a match decides.
    runs: Vec<Run>,
}

/// Consecutive lines of [`Patterns`].
#[derive(Debug)]
enum Run {
    /// Lines that are UTF-8, matched by the `ignore` crate.
    Text(Gitignore),
    /// One line that is not UTF-8.
    Bytes(BytePattern),
}

/// A pattern line that is not UTF-8.
#[derive(Debug)]
struct BytePattern {
    /// Matches the path relative to the ignore file's directory.
    regex: Regex,
    /// `!pattern`: re-includes.
    whitelist: bool,
    /// `pattern/`: matches directories only.
    only_dir: bool,
}

impl Patterns {
    /// Whether the last matching line ignores `rel` (relative to the directory of the
    /// ignore files, `/`-separated bytes), re-includes it, or no line matches.
    pub(super) fn matched(&self, rel: &[u8], is_dir: bool) -> Match<()> {
        for run in self.runs.iter().rev() {
            let found = match run {
                Run::Text(matcher) => {
                    match matcher.matched(Path::new(OsStr::from_bytes(rel)), is_dir) {
                        Match::Ignore(_) => Match::Ignore(()),
                        Match::Whitelist(_) => Match::Whitelist(()),
                        Match::None => Match::None,
                    }
                }
                Run::Bytes(pattern)
                    if pattern.regex.is_match(rel) && (is_dir || !pattern.only_dir) =>
                {
                    match pattern.whitelist {
                        true => Match::Whitelist(()),
                        false => Match::Ignore(()),
                    }
                }
                Run::Bytes(_) => Match::None,
            };
            if !found.is_none() {
                return found;
            }
        }
        Match::None
    }
}

/// Builds [`Patterns`] from ignore files, line by line.
pub(super) struct PatternsBuilder {
    /// The directory the patterns are relative to.
    root: PathBuf,
    runs: Vec<Run>,
    /// The run of UTF-8 lines being added to.
    text: Option<GitignoreBuilder>,
}

impl PatternsBuilder {
    /// No patterns yet, relative to the directory `root`.
    pub(super) fn new(root: &Path) -> PatternsBuilder {
        PatternsBuilder {
            root: root.to_path_buf(),
            runs: Vec::new(),
            text: None,
        }
    }

    /// Adds the patterns of the ignore file `path`, reading them as git's
    /// `add_patterns_from_buffer` does: bytes, not text, so that a line in another
    /// encoding (a Latin-1 comment) costs no other line; a UTF-8 byte order mark at the
    /// start skipped; one `\r` before each line's end dropped; each line ends at its
    /// first NUL, as git reads it as a C string. Where `follow` is false (a `.gitignore`
    /// in the worktree, which git opens with `O_NOFOLLOW`), a symlink is an error, as it
    /// is to git. A line that is `!` alone matches nothing in git, and is dropped (the
    /// `ignore` crate would re-include everything). A pattern that does not parse is
    /// skipped, as git skips it; the others still apply.
    pub(super) fn add_file(&mut self, path: &Path, follow: bool) -> std::io::Result<()> {
        let mut options = std::fs::OpenOptions::new();
        options.read(true);
        // Never waits on a FIFO put in the file's place; it is then refused as not a file.
        let mut flags = libc::O_NONBLOCK;
        if !follow {
            flags |= libc::O_NOFOLLOW;
        }
        options.custom_flags(flags);
        let mut file = options.open(path)?;
        if !file.metadata()?.is_file() {
            return Err(std::io::Error::other("not a regular file"));
        }
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        let text = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(&bytes);
        for line in text.split(|&b| b == b'\n') {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let line = match line.iter().position(|&b| b == 0) {
                Some(nul) => &line[..nul],
                None => line,
            };
            self.add_line(path, line);
        }
        Ok(())
    }

    /// Adds one line of the ignore file `from`.
    fn add_line(&mut self, from: &Path, line: &[u8]) {
        match std::str::from_utf8(line) {
            Ok(text) => {
                if text.trim_end() == "!" {
                    return;
                }
                let root = &self.root;
                let builder = self.text.get_or_insert_with(|| GitignoreBuilder::new(root));
                let _ = builder.add_line(Some(from.to_path_buf()), text);
            }
            Err(_) => {
                if let Some(pattern) = byte_pattern(line) {
                    self.end_text_run();
                    self.runs.push(Run::Bytes(pattern));
                }
            }
        }
    }

    /// Ends the run of UTF-8 lines being added to. A run that does not build is left
    /// out, as a whole ignore file was before (the crate fails only on a set of globs
    /// too large to match).
    fn end_text_run(&mut self) {
        if let Some(builder) = self.text.take() {
            if let Ok(matcher) = builder.build() {
                self.runs.push(Run::Text(matcher));
            }
        }
    }

    /// The patterns added.
    pub(super) fn build(mut self) -> Patterns {
        self.end_text_run();
        Patterns { runs: self.runs }
    }
}

/// The glob of a line that is not UTF-8, by the rules the `ignore` crate applies to a
/// line (`GitignoreBuilder::add_line`), each byte that is not UTF-8 standing for itself;
/// `None` for a comment, a blank line, or a pattern that does not parse.
fn byte_pattern(line: &[u8]) -> Option<BytePattern> {
    let stand_ins = StandIns::for_line(line)?;
    let text = stand_ins.text(line);
    let mut line = text.as_str();
    if line.starts_with('#') {
        return None;
    }
    if !line.ends_with("\\ ") {
        line = line.trim_end();
    }
    if line.is_empty() {
        return None;
    }
    let (mut whitelist, mut absolute) = (false, false);
    if line.starts_with("\\!") || line.starts_with("\\#") {
        line = &line[1..];
        absolute = line.starts_with('/');
    } else {
        if let Some(rest) = line.strip_prefix('!') {
            whitelist = true;
            line = rest;
        }
        if let Some(rest) = line.strip_prefix('/') {
            absolute = true;
            line = rest;
        }
    }
    let mut only_dir = false;
    if let Some(rest) = line.strip_suffix('/') {
        only_dir = true;
        line = rest.strip_suffix('\\').unwrap_or(rest);
    }
    let mut glob = line.to_string();
    // No slash: it matches at any depth, unless it already says so.
    let anywhere = glob.starts_with("**/") || glob == "**";
    if !(absolute || line.contains('/') || anywhere) {
        glob = format!("**/{glob}");
    }
    if glob.ends_with("/**") {
        glob.push_str("/*");
    }
    let parsed = GlobBuilder::new(&glob)
        .literal_separator(true)
        .backslash_escape(true)
        .allow_unclosed_class(true)
        .build()
        .ok()?;
    let regex = RegexBuilder::new(&stand_ins.bytes_in_regex(parsed.regex()))
        .dot_matches_new_line(true)
        .build()
        .ok()?;
    Some(BytePattern {
        regex,
        whitelist,
        only_dir,
    })
}

/// The characters that stand for a line's bytes that are not UTF-8 while the line is
/// parsed as a glob: one per byte value, from a block of private-use characters that the
/// line does not hold itself.
struct StandIns {
    /// The character that stands for byte 0.
    base: u32,
}

impl StandIns {
    /// Stand-ins for `line`; `None` in the absurd case that the line holds a character
    /// of every block there is to choose from.
    fn for_line(line: &[u8]) -> Option<StandIns> {
        let held: Vec<u32> = line
            .utf8_chunks()
            .flat_map(|chunk| chunk.valid().chars())
            .map(u32::from)
            .collect();
        // The supplementary private use areas, in blocks of 256.
        (0xF_0000..0x10_FF00)
            .step_by(256)
            .find(|&base| !held.iter().any(|&c| (base..base + 256).contains(&c)))
            .map(|base| StandIns { base })
    }

    fn stand_in(&self, byte: u8) -> char {
        char::from_u32(self.base + u32::from(byte)).unwrap_or(char::REPLACEMENT_CHARACTER)
    }

    fn byte(&self, c: char) -> Option<u8> {
        u32::from(c)
            .checked_sub(self.base)
            .and_then(|b| u8::try_from(b).ok())
    }

    /// `line` as text, each byte that is not UTF-8 replaced by its stand-in.
    fn text(&self, line: &[u8]) -> String {
        let mut text = String::with_capacity(line.len() * 2);
        for chunk in line.utf8_chunks() {
            text.push_str(chunk.valid());
            text.extend(chunk.invalid().iter().map(|&b| self.stand_in(b)));
        }
        text
    }

    /// The regex globset made of the glob (`(?-u)`, each byte of a character that is
    /// not ASCII written `\xNN`), each stand-in's bytes replaced by the one byte it
    /// stands for. The regex is read escape by escape, so that `\\` followed by `xf3`
    /// is never taken for a byte.
    fn bytes_in_regex(&self, regex: &str) -> String {
        let mut out = String::with_capacity(regex.len());
        let mut pending: Vec<u8> = Vec::new();
        let mut chars = regex.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '\\' {
                if chars.peek() == Some(&'x') {
                    chars.next();
                    let hex: String = chars.by_ref().take(2).collect();
                    if let Ok(byte) = u8::from_str_radix(&hex, 16) {
                        pending.push(byte);
                        continue;
                    }
                    self.flush(&mut pending, &mut out);
                    out.push_str("\\x");
                    out.push_str(&hex);
                    continue;
                }
                self.flush(&mut pending, &mut out);
                out.push(c);
                if let Some(next) = chars.next() {
                    out.push(next);
                }
                continue;
            }
            self.flush(&mut pending, &mut out);
            out.push(c);
        }
        self.flush(&mut pending, &mut out);
        out
    }

    /// Writes the escaped bytes `pending` (whole UTF-8 characters, as globset writes
    /// them) to `out`, a stand-in as its one byte.
    fn flush(&self, pending: &mut Vec<u8>, out: &mut String) {
        let escape = |out: &mut String, b: u8| out.push_str(&format!("\\x{b:02x}"));
        for chunk in pending.utf8_chunks() {
            for c in chunk.valid().chars() {
                match self.byte(c) {
                    Some(byte) => escape(out, byte),
                    None => c.to_string().bytes().for_each(|b| escape(out, b)),
                }
            }
            chunk.invalid().iter().for_each(|&b| escape(out, b));
        }
        pending.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn patterns(lines: &[&[u8]]) -> Patterns {
        let mut builder = PatternsBuilder::new(Path::new("/top"));
        for line in lines {
            builder.add_line(Path::new("/top/.gitignore"), line);
        }
        builder.build()
    }

    fn ignored(patterns: &Patterns, rel: &[u8]) -> bool {
        patterns.matched(rel, false).is_ignore()
    }

    #[test]
    fn a_byte_that_is_not_utf8_stands_for_itself() {
        let p = patterns(&[b"*\xff*", b"caf\xe9", b"[\xe0-\xef]x"]);
        for yes in [&b"a\xffb"[..], b"\xff", b"d/caf\xe9", b"caf\xe9", b"\xe5x"] {
            assert!(ignored(&p, yes), "{:?}", String::from_utf8_lossy(yes));
        }
        for no in [
            &b"a.txt"[..],
            b"cafe",
            b"cafx",
            b"caf\xe8",
            b"\xf5x",
            b"caf\xc3\xa9",
        ] {
            assert!(!ignored(&p, no), "{:?}", String::from_utf8_lossy(no));
        }
    }

    #[test]
    fn lines_keep_their_order_across_the_two_kinds() {
        let p = patterns(&[b"*.log", b"!\xe9*.log", b"\xe9x.log"]);
        assert!(ignored(&p, b"a.log"));
        assert!(!ignored(&p, b"\xe9a.log"));
        assert!(ignored(&p, b"\xe9x.log"));
        let dir_only = patterns(&[b"d\xe9/"]);
        assert!(dir_only.matched(b"d\xe9", true).is_ignore());
        assert!(!dir_only.matched(b"d\xe9", false).is_ignore());
    }

    #[test]
    fn an_escaped_backslash_is_never_read_as_a_byte() {
        let stand_ins = StandIns { base: 0xF_0000 };
        assert_eq!(
            stand_ins.bytes_in_regex(r"\\xf3\xf3\xb0\x83\xbf"),
            r"\\xf3\xff"
        );
    }
}
