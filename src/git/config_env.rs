//! The configuration git takes from its environment rather than from files: the
//! numbered `GIT_CONFIG_COUNT` / `GIT_CONFIG_KEY_<n>` / `GIT_CONFIG_VALUE_<n>` entries,
//! `git -c` (`GIT_CONFIG_PARAMETERS`), and boolean variables as git's `git_env_bool`
//! reads them. Each answers `None` for anything git would refuse, so the caller asks
//! git instead.

use std::os::unix::ffi::{OsStrExt, OsStringExt};

use crate::git::config_syntax::{parse_bool, Entry};

/// A boolean environment variable as git's `git_env_bool` reads it; `None` for a value
/// git would die on.
pub(crate) fn env_bool(name: &str, default: bool) -> Option<bool> {
    match std::env::var_os(name) {
        None => Some(default),
        Some(value) => parse_bool(Some(value.as_bytes())),
    }
}

/// `GIT_CONFIG_COUNT` with its `GIT_CONFIG_KEY_<n>` / `GIT_CONFIG_VALUE_<n>` pairs.
pub(crate) fn env_count_entries() -> Option<Vec<Entry>> {
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
pub(crate) fn parse_parameters(mut rest: &[u8]) -> Option<Vec<Entry>> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::config_syntax::canonical_key;

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
}
