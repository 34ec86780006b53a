//! git's configuration, read in-process: the same files in the same order as
//! `git config --get-regexp` reads them (system, global, local, worktree, then the
//! command line's `GIT_CONFIG_COUNT` and `GIT_CONFIG_PARAMETERS`), with `include.path` and
//! the `includeIf` conditions `gitdir:`, `gitdir/i:` and `onbranch:`. Whatever this reader
//! is not certain to read as git does (an unknown include condition form, a syntax
//! error, an unreadable file, a system config it cannot locate) makes it answer `None`,
//! and the caller asks `git config` instead: a wrong answer here would silently change a
//! setting, a fallback only costs a process.
//!
//! The syntax of one file is [`crate::git::config_syntax`]; the environment's and the
//! command line's entries are [`crate::git::config_env`]; this module reads the files in
//! git's order and follows includes and their conditions.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use crate::git::config_env::{env_bool, env_count_entries, parse_parameters};
use crate::git::config_syntax::{canonical_key, parse, Entry};
use crate::git::discover::Found;

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
