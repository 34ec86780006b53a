//! git's configuration, read in-process: the same files in the same order as
//! `git config --get-regexp` reads them (system, global, local, worktree, then the
//! command line's `GIT_CONFIG_COUNT` and `GIT_CONFIG_PARAMETERS`), with `include.path` and
//! the `includeIf` conditions `gitdir:`, `gitdir/i:` and `onbranch:`. Whatever this reader
//! is not certain to read as git does (an unknown include condition form, a syntax
//! error, an unreadable file, a system config it cannot locate) makes it answer `None`,
//! and the caller asks `git config` instead: a wrong answer here would silently change a
//! setting, a fallback only costs a process.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use crate::git::discover::Found;

/// One configuration entry: its key (once canonical, as git prints it: section and
/// name lower case, a subsection as written) and its value (`None` for a key given
/// without `=`).
pub(crate) type Entry = (Vec<u8>, Option<Vec<u8>>);

/// git stops following includes this deep (`MAX_INCLUDE_DEPTH`).
const MAX_INCLUDE_DEPTH: usize = 10;

/// Every entry whose key `wanted` accepts, in the order git reads them (so the last
/// one of a key wins), or `None` when git must be asked.
pub(crate) fn read(found: &Found, wanted: &dyn Fn(&[u8]) -> bool) -> Option<Vec<Entry>> {
    // `GIT_CONFIG` makes `git config` read that one file instead.
    if std::env::var_os("GIT_CONFIG").is_some() {
        return None;
    }
    let mut reader = Reader {
        found,
        wanted,
        entries: Vec::new(),
        depth: 0,
    };
    if !env_bool("GIT_CONFIG_NOSYSTEM", false)? {
        let system = match std::env::var_os("GIT_CONFIG_SYSTEM") {
            Some(path) if path.is_empty() => return None,
            Some(path) => found.cwd.join(path),
            None => system_config()?,
        };
        reader.file(&system)?;
    }
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty());
    match std::env::var_os("GIT_CONFIG_GLOBAL") {
        Some(path) if path.is_empty() => return None,
        Some(path) => reader.file(&found.cwd.join(path))?,
        None => {
            let xdg = match std::env::var_os("XDG_CONFIG_HOME").filter(|x| !x.is_empty()) {
                Some(xdg) => Some(PathBuf::from(xdg).join("git/config")),
                None => home
                    .as_ref()
                    .map(|h| Path::new(h).join(".config/git/config")),
            };
            if let Some(xdg) = xdg {
                reader.file(&xdg)?;
            }
            if let Some(home) = &home {
                reader.file(&Path::new(home).join(".gitconfig"))?;
            }
        }
    }
    reader.file(&found.common_dir.join("config"))?;
    if found.worktree_config {
        reader.file(&found.git_dir.join("config.worktree"))?;
    }
    // git reads the numbered variables first, then `-c` (`GIT_CONFIG_PARAMETERS`).
    for (key, value) in env_count_entries()? {
        reader.command_line(&key, value)?;
    }
    if let Some(params) = std::env::var_os("GIT_CONFIG_PARAMETERS") {
        for (key, value) in parse_parameters(params.as_bytes())? {
            reader.command_line(&key, value)?;
        }
    }
    Some(reader.entries)
}

/// The system-wide file git was built to read: `<sysconfdir>/gitconfig`, where a git
/// built for `/usr` has `/etc` and one built for `/usr/local` has `/usr/local/etc`
/// (the one found here). Known only for a git binary (not a wrapper script) installed
/// under one of those prefixes on Linux; elsewhere git is asked.
fn system_config() -> Option<PathBuf> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    let path = std::env::var_os("PATH")?;
    let git = std::env::split_paths(&path)
        .map(|dir| dir.join("git"))
        .find(|candidate| candidate.is_file())?
        .canonicalize()
        .ok()?;
    let mut magic = [0u8; 4];
    std::io::Read::read_exact(&mut std::fs::File::open(&git).ok()?, &mut magic).ok()?;
    if &magic != b"\x7fELF" {
        return None;
    }
    // `git checkpoint` run by git finds git's own copy in its exec path first.
    let prefix = ["bin/git", "lib/git-core/git", "libexec/git-core/git"]
        .iter()
        .find_map(|tail| {
            let text = git.as_os_str().as_bytes();
            text.strip_suffix(tail.as_bytes())?.strip_suffix(b"/")
        })?;
    match prefix {
        b"/usr" | b"" => Some(PathBuf::from("/etc/gitconfig")),
        b"/usr/local" => Some(PathBuf::from("/usr/local/etc/gitconfig")),
        _ => None,
    }
}

/// A boolean environment variable as git's `git_env_bool` reads it; `None` for a value
/// git would die on.
pub(crate) fn env_bool(name: &str, default: bool) -> Option<bool> {
    match std::env::var_os(name) {
        None => Some(default),
        Some(value) => parse_bool(Some(value.as_bytes())),
    }
}

/// A config boolean as git reads one: no value is true, the usual words, or an integer
/// (non-zero is true). `None` for anything else.
pub(crate) fn parse_bool(value: Option<&[u8]>) -> Option<bool> {
    let Some(value) = value else {
        return Some(true);
    };
    let text = std::str::from_utf8(value).ok()?.to_ascii_lowercase();
    match text.as_str() {
        "true" | "yes" | "on" => Some(true),
        "" | "false" | "no" | "off" => Some(false),
        number => number.parse::<i64>().ok().map(|n| n != 0),
    }
}

/// `GIT_CONFIG_COUNT` with its `GIT_CONFIG_KEY_<n>` / `GIT_CONFIG_VALUE_<n>` pairs.
fn env_count_entries() -> Option<Vec<Entry>> {
    let Some(count) = std::env::var_os("GIT_CONFIG_COUNT") else {
        return Some(Vec::new());
    };
    let count: usize = count.to_str()?.parse().ok()?;
    (0..count)
        .map(|i| {
            let key = std::env::var_os(format!("GIT_CONFIG_KEY_{i}"))?;
            let value = std::env::var_os(format!("GIT_CONFIG_VALUE_{i}"))?;
            Some((key.into_vec(), Some(value.into_vec())))
        })
        .collect()
}

/// `GIT_CONFIG_PARAMETERS` as `git -c` writes it: shell-quoted `'key'='value'` items (or
/// the older `'key=value'`), separated by spaces.
fn parse_parameters(mut rest: &[u8]) -> Option<Vec<Entry>> {
    let mut out = Vec::new();
    while !rest.is_empty() {
        let (key, after) = sq_dequote_step(rest)?;
        match after.first() {
            None | Some(b' ' | b'\t' | b'\n') => {
                // The old form: the first '=' ends the key; none means no value.
                match key.iter().position(|&b| b == b'=') {
                    Some(eq) => out.push((key[..eq].to_vec(), Some(key[eq + 1..].to_vec()))),
                    None => out.push((key, None)),
                }
                rest = after;
            }
            Some(b'=') => {
                let after = &after[1..];
                match after.first() {
                    Some(b'\'') => {
                        let (value, after) = sq_dequote_step(after)?;
                        if !matches!(after.first(), None | Some(b' ' | b'\t' | b'\n')) {
                            return None;
                        }
                        out.push((key, Some(value)));
                        rest = after;
                    }
                    None | Some(b' ' | b'\t' | b'\n') => {
                        out.push((key, None));
                        rest = after;
                    }
                    Some(_) => return None,
                }
            }
            Some(_) => return None,
        }
        rest = trim_start(rest);
    }
    Some(out)
}

/// One single-quoted word (`'it'\''s'` is `it's`), and what follows it.
fn sq_dequote_step(text: &[u8]) -> Option<(Vec<u8>, &[u8])> {
    if text.first() != Some(&b'\'') {
        return None;
    }
    let mut out = Vec::new();
    let mut i = 1;
    loop {
        let c = *text.get(i)?;
        if c != b'\'' {
            out.push(c);
            i += 1;
            continue;
        }
        // Out of the quotes: `\'` or `\!` followed by a new quote continue the word.
        match (text.get(i + 1), text.get(i + 2), text.get(i + 3)) {
            (Some(b'\\'), Some(&escaped @ (b'\'' | b'!')), Some(b'\'')) => {
                out.push(escaped);
                i += 4;
            }
            _ => return Some((out, &text[i + 1..])),
        }
    }
}

fn trim_start(mut text: &[u8]) -> &[u8] {
    while let Some((first, rest)) = text.split_first() {
        if !first.is_ascii_whitespace() {
            break;
        }
        text = rest;
    }
    text
}

/// Where an entry came from: a file (relative includes and `./` conditions resolve
/// against it) or the command line.
enum Origin<'a> {
    File(&'a Path),
    CommandLine,
}

/// Reads files in order into `entries`, following includes.
struct Reader<'a> {
    found: &'a Found,
    wanted: &'a dyn Fn(&[u8]) -> bool,
    entries: Vec<Entry>,
    depth: usize,
}

impl Reader<'_> {
    /// One config file; a missing one is skipped, as git skips it.
    fn file(&mut self, path: &Path) -> Option<()> {
        let text = match std::fs::read(path) {
            Ok(text) => text,
            Err(e) if is_missing(&e) => return Some(()),
            Err(_) => return None,
        };
        let mut entries = Vec::new();
        parse(&text, &mut |key, value| entries.push((key, value)))?;
        for (key, value) in entries {
            self.entry(key, value, &Origin::File(path))?;
        }
        Some(())
    }

    /// One `-c` or `GIT_CONFIG_KEY_<n>` entry: its key canonicalised as git does.
    fn command_line(&mut self, key: &[u8], value: Option<Vec<u8>>) -> Option<()> {
        let key = canonical_key(key)?;
        self.entry(key, value, &Origin::CommandLine)
    }

    fn entry(&mut self, key: Vec<u8>, value: Option<Vec<u8>>, origin: &Origin) -> Option<()> {
        let include = if key == b"include.path" {
            true
        } else if let Some(rest) = key.strip_prefix(b"includeif.") {
            match rest.strip_suffix(b".path") {
                Some(condition) => self.condition(condition, origin)?,
                None => false,
            }
        } else {
            false
        };
        // git hands on the directive itself before the file it includes.
        let include_path = if include { Some(value.clone()?) } else { None };
        if (self.wanted)(&key) {
            self.entries.push((key, value));
        }
        match include_path {
            Some(path) => self.include(&path, origin),
            None => Some(()),
        }
    }

    /// Follows one include whose condition held.
    fn include(&mut self, path: &[u8], origin: &Origin) -> Option<()> {
        let path = interpolate(path, false)?;
        let path = if path.is_absolute() {
            path
        } else {
            match origin {
                Origin::File(file) => file.parent()?.join(path),
                Origin::CommandLine => return None,
            }
        };
        match std::fs::metadata(&path) {
            Ok(_) => {}
            Err(e) if is_missing(&e) => return Some(()),
            Err(_) => return None,
        }
        self.depth += 1;
        if self.depth > MAX_INCLUDE_DEPTH {
            return None;
        }
        self.file(&path)?;
        self.depth -= 1;
        Some(())
    }

    /// Whether an `includeIf.<condition>.path` applies; `None` for a condition git
    /// evaluates that this reader does not (`hasconfig:`).
    fn condition(&self, condition: &[u8], origin: &Origin) -> Option<bool> {
        if let Some(pattern) = condition.strip_prefix(b"gitdir:") {
            self.by_gitdir(pattern, origin, false)
        } else if let Some(pattern) = condition.strip_prefix(b"gitdir/i:") {
            self.by_gitdir(pattern, origin, true)
        } else if let Some(pattern) = condition.strip_prefix(b"onbranch:") {
            let branch =
                match crate::git::refs::head_branch(&self.found.git_dir, &self.found.common_dir)? {
                    Some(branch) => branch,
                    None => return Some(false),
                };
            let mut pattern = pattern.to_vec();
            if pattern.ends_with(b"/") {
                pattern.extend_from_slice(b"**");
            }
            wildmatch(&pattern, &branch, false)
        } else if condition.starts_with(b"hasconfig:") {
            None
        } else {
            // git takes an unknown condition as false.
            Some(false)
        }
    }

    /// `gitdir:` matching as git's `include_by_gitdir`: the pattern against the real
    /// git directory, then against the git directory as given.
    fn by_gitdir(&self, pattern: &[u8], origin: &Origin, icase: bool) -> Option<bool> {
        let pattern = interpolate(pattern, true)?;
        let mut pattern = pattern.into_os_string().into_vec();
        let mut prefix = 0;
        if pattern.starts_with(b"./") {
            let Origin::File(file) = origin else {
                return None;
            };
            let dir = file
                .canonicalize()
                .ok()?
                .parent()?
                .as_os_str()
                .as_bytes()
                .to_vec();
            prefix = dir.len() + 1;
            pattern.splice(0..1, dir);
        } else if !pattern.starts_with(b"/") {
            pattern.splice(0..0, b"**/".iter().copied());
        }
        if pattern.ends_with(b"/") {
            pattern.extend_from_slice(b"**");
        }
        for text in [&self.found.git_dir, &self.found.git_dir_as_set] {
            let text = text.as_os_str().as_bytes();
            if text.len() < prefix {
                continue;
            }
            let literal_matches = if icase {
                pattern[..prefix].eq_ignore_ascii_case(&text[..prefix])
            } else {
                pattern[..prefix] == text[..prefix]
            };
            if literal_matches && wildmatch(&pattern[prefix..], &text[prefix..], icase)? {
                return Some(true);
            }
        }
        Some(false)
    }
}

fn is_missing(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
    )
}

/// git's `interpolate_path` for the forms this reader knows: `~/` (the home directory,
/// resolved when `real_home`, as git does for `gitdir:`); `~user` and `%(prefix)` are
/// left to git.
fn interpolate(path: &[u8], real_home: bool) -> Option<PathBuf> {
    if path.is_empty() || path.starts_with(b"%(prefix)") {
        return None;
    }
    if let Some(rest) = path.strip_prefix(b"~") {
        let rest = rest
            .strip_prefix(b"/")
            .or(rest.is_empty().then_some(&b""[..]))?;
        let home = PathBuf::from(std::env::var_os("HOME").filter(|h| !h.is_empty())?);
        let home = if real_home {
            home.canonicalize().ok()?
        } else {
            home
        };
        let mut joined = home.into_os_string().into_vec();
        joined.push(b'/');
        joined.extend_from_slice(rest);
        return Some(PathBuf::from(OsString::from_vec(joined)));
    }
    Some(PathBuf::from(OsStr::from_bytes(path)))
}

/// A command-line key as git's `git_config_parse_key` stores it: section and name
/// lower case, the subsection between them as given. `None` for a key git rejects.
fn canonical_key(key: &[u8]) -> Option<Vec<u8>> {
    let last_dot = key.iter().rposition(|&b| b == b'.')?;
    if last_dot == 0 || last_dot + 1 == key.len() {
        return None;
    }
    let first_dot = key.iter().position(|&b| b == b'.')?;
    let mut out = Vec::with_capacity(key.len());
    for (i, &c) in key.iter().enumerate() {
        if i < first_dot || i > last_dot {
            if !is_key_char(c) || (i == last_dot + 1 && !c.is_ascii_alphabetic()) {
                return None;
            }
            out.push(c.to_ascii_lowercase());
        } else if c == b'\n' {
            return None;
        } else {
            out.push(c);
        }
    }
    Some(out)
}

fn is_key_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'-'
}

/// git's own `isspace`: space, tab, newline and carriage return only.
fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r')
}

/// Parses one config file's text as git's `git_parse_source` does, calling `sink` with
/// each entry's full key and value. `None` on anything git reports as a bad line.
pub(crate) fn parse(text: &[u8], sink: &mut dyn FnMut(Vec<u8>, Option<Vec<u8>>)) -> Option<()> {
    let text = text.strip_prefix(b"\xef\xbb\xbf").unwrap_or(text);
    let mut src = Source { text, pos: 0 };
    let mut section: Option<Vec<u8>> = None;
    let mut comment = false;
    loop {
        let (c, eof) = src.next();
        if c == b'\n' {
            if eof {
                return Some(());
            }
            comment = false;
            continue;
        }
        if comment || is_space(c) {
            continue;
        }
        if c == b'#' || c == b';' {
            comment = true;
            continue;
        }
        if c == b'[' {
            let name = src.section_header()?;
            if name.is_empty() {
                return None;
            }
            section = Some(name);
            continue;
        }
        if !c.is_ascii_alphabetic() {
            return None;
        }
        // An entry before any section header is an error in git too.
        let mut key = section.clone()?;
        key.push(b'.');
        key.push(c.to_ascii_lowercase());
        let value = src.rest_of_entry(&mut key)?;
        sink(key, value);
    }
}

/// The text being parsed, read as git's `get_next_char` does (`\r\n` is `\n`; the end
/// reads as a final `\n`).
struct Source<'a> {
    text: &'a [u8],
    pos: usize,
}

impl Source<'_> {
    /// The next character and whether the text had ended.
    fn next(&mut self) -> (u8, bool) {
        let Some(&c) = self.text.get(self.pos) else {
            return (b'\n', true);
        };
        self.pos += 1;
        if c == b'\r' && self.text.get(self.pos) == Some(&b'\n') {
            self.pos += 1;
            return (b'\n', false);
        }
        (c, false)
    }

    /// After `[`: `section]`, `section.sub]` (all lower case) or `section "sub"]` (the
    /// subsection as written).
    fn section_header(&mut self) -> Option<Vec<u8>> {
        let mut name = Vec::new();
        loop {
            let (c, eof) = self.next();
            if eof {
                return None;
            }
            if c == b']' {
                return Some(name);
            }
            if is_space(c) {
                return self.extended_header(name, c);
            }
            if !is_key_char(c) && c != b'.' {
                return None;
            }
            name.push(c.to_ascii_lowercase());
        }
    }

    fn extended_header(&mut self, mut name: Vec<u8>, mut c: u8) -> Option<Vec<u8>> {
        loop {
            if c == b'\n' {
                return None;
            }
            c = self.next().0;
            if !is_space(c) {
                break;
            }
        }
        if c != b'"' {
            return None;
        }
        name.push(b'.');
        loop {
            let mut c = self.next().0;
            if c == b'\n' {
                return None;
            }
            if c == b'"' {
                break;
            }
            if c == b'\\' {
                c = self.next().0;
                if c == b'\n' {
                    return None;
                }
            }
            name.push(c);
        }
        (self.next().0 == b']').then_some(name)
    }

    /// The rest of a key's name, then its value, if it has `=`.
    fn rest_of_entry(&mut self, key: &mut Vec<u8>) -> Option<Option<Vec<u8>>> {
        let mut c;
        loop {
            let (next, eof) = self.next();
            c = next;
            if eof || !is_key_char(c) {
                break;
            }
            key.push(c.to_ascii_lowercase());
        }
        while c == b' ' || c == b'\t' {
            c = self.next().0;
        }
        if c == b'\n' {
            return Some(None);
        }
        if c != b'=' {
            return None;
        }
        self.value().map(Some)
    }

    /// A value as git's `parse_value` reads it: quotes, the escapes `\n \t \b \\ \"`,
    /// `\` before a newline continuing the line, comments, inner whitespace kept and
    /// trailing whitespace dropped.
    fn value(&mut self) -> Option<Vec<u8>> {
        let mut value = Vec::new();
        let mut quote = false;
        let mut comment = false;
        let mut trim_len = 0;
        loop {
            let c = self.next().0;
            if c == b'\n' {
                if quote {
                    return None;
                }
                if trim_len > 0 {
                    value.truncate(trim_len);
                }
                return Some(value);
            }
            if comment {
                continue;
            }
            if is_space(c) && !quote {
                if trim_len == 0 {
                    trim_len = value.len();
                }
                if !value.is_empty() {
                    value.push(c);
                }
                continue;
            }
            if !quote && (c == b';' || c == b'#') {
                comment = true;
                continue;
            }
            trim_len = 0;
            if c == b'\\' {
                let escaped = match self.next().0 {
                    b'\n' => continue,
                    b't' => b'\t',
                    b'b' => 0x08,
                    b'n' => b'\n',
                    c @ (b'\\' | b'"') => c,
                    _ => return None,
                };
                value.push(escaped);
                continue;
            }
            if c == b'"' {
                quote = !quote;
                continue;
            }
            value.push(c);
        }
    }
}

/// git's `wildmatch` with `WM_PATHNAME` for the patterns include conditions use: `*`,
/// `?`, `**` as a whole path component, and literal characters. `None` for bracket
/// expressions and backslash escapes, which are left to git.
pub(crate) fn wildmatch(pattern: &[u8], text: &[u8], icase: bool) -> Option<bool> {
    if pattern.iter().any(|&c| c == b'[' || c == b'\\') {
        return None;
    }
    Some(matches(pattern, 0, text, icase))
}

fn matches(pattern: &[u8], p: usize, text: &[u8], icase: bool) -> bool {
    let Some(&c) = pattern.get(p) else {
        return text.is_empty();
    };
    match c {
        b'?' => match text.split_first() {
            Some((&t, rest)) if t != b'/' => matches(pattern, p + 1, rest, icase),
            _ => false,
        },
        b'*' => {
            let mut end = p;
            while pattern.get(end) == Some(&b'*') {
                end += 1;
            }
            let whole_component = end - p == 2
                && (p == 0 || pattern[p - 1] == b'/')
                && matches!(pattern.get(end), None | Some(b'/'));
            if whole_component {
                if end == pattern.len() {
                    return true;
                }
                // `**/`: no directory, or any number of them.
                let after = end + 1;
                if matches(pattern, after, text, icase) {
                    return true;
                }
                return text
                    .iter()
                    .enumerate()
                    .any(|(i, &t)| t == b'/' && matches(pattern, after, &text[i + 1..], icase));
            }
            for i in 0..=text.len() {
                if matches(pattern, end, &text[i..], icase) {
                    return true;
                }
                if text.get(i) == Some(&b'/') {
                    return false;
                }
            }
            false
        }
        _ => match text.split_first() {
            Some((&t, rest)) => {
                let same = if icase {
                    t.eq_ignore_ascii_case(&c)
                } else {
                    t == c
                };
                same && matches(pattern, p + 1, rest, icase)
            }
            None => false,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(text: &str) -> Option<Vec<(String, Option<String>)>> {
        let mut out = Vec::new();
        parse(text.as_bytes(), &mut |k, v| {
            out.push((
                String::from_utf8_lossy(&k).into_owned(),
                v.map(|v| String::from_utf8_lossy(&v).into_owned()),
            ))
        })?;
        Some(out)
    }

    #[test]
    fn values_read_as_git_reads_them() {
        let got = entries(
            "[Checkpoint]\n\tA = x  y  ; comment\n\tb\n\tc =\n\
             [checkpoint \"Sub\\\"q\"]\n\td = \"  q # r \"\\t\\n\\\\ \n\
             [checkpoint.Gc]\r\n\tkeep = 1\\\n2\n",
        )
        .expect("parses");
        let want = [
            ("checkpoint.a", Some("x  y")),
            ("checkpoint.b", None),
            ("checkpoint.c", Some("")),
            ("checkpoint.Sub\"q.d", Some("  q # r \t\n\\")),
            ("checkpoint.gc.keep", Some("12")),
        ];
        let want: Vec<_> = want
            .iter()
            .map(|(k, v)| (k.to_string(), v.map(str::to_string)))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn bad_lines_are_refused() {
        for text in [
            "key = 1\n",
            "[a]\n\tk = \"open\n",
            "[a]\n\tk = \\q\n",
            "[a\n",
            "[a]\n\t1k = v\n",
        ] {
            assert_eq!(entries(text), None, "{text:?}");
        }
    }

    #[test]
    fn parameters_read_as_git_writes_them() {
        let got = parse_parameters(b"'a.b'='it'\\''s' 'a.c'= 'a.d'='' 'old.k=v' 'old.flag'")
            .expect("parses");
        let want: Vec<(Vec<u8>, Option<Vec<u8>>)> = vec![
            (b"a.b".to_vec(), Some(b"it's".to_vec())),
            (b"a.c".to_vec(), None),
            (b"a.d".to_vec(), Some(Vec::new())),
            (b"old.k".to_vec(), Some(b"v".to_vec())),
            (b"old.flag".to_vec(), None),
        ];
        assert_eq!(got, want);
        assert_eq!(canonical_key(b"Sec.SuB.KeY"), Some(b"sec.SuB.key".to_vec()));
        assert_eq!(canonical_key(b"nodot"), None);
    }

    #[test]
    fn wildmatch_follows_pathname_rules() {
        let cases: [(&str, &str, bool); 9] = [
            ("**/work/**", "/home/u/work/r/.git", true),
            ("/home/*/.git", "/home/u/.git", true),
            ("/home/*/.git", "/home/u/v/.git", false),
            ("/a/**/b", "/a/b", true),
            ("/a/**/b", "/a/x/y/b", true),
            ("/a/**", "/a", false),
            ("fe?t", "feat", true),
            ("fe?t", "fe/t", false),
            ("feat/**", "feat/x/y", true),
        ];
        for (pattern, text, want) in cases {
            assert_eq!(
                wildmatch(pattern.as_bytes(), text.as_bytes(), false),
                Some(want),
                "{pattern} {text}"
            );
        }
        assert_eq!(wildmatch(b"/A/*", b"/a/b", true), Some(true));
        assert_eq!(wildmatch(b"[ab]", b"a", false), None);
    }
}
