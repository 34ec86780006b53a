//! Paths as git writes them in its output.

use crate::text::push_escaped_byte;

/// A path as git prints it (`core.quotePath`, on by default): unchanged when it is
/// plain ASCII without `"`, `\` or control characters, otherwise in double quotes with
/// C escapes and every other byte in octal.
pub fn quote_path(path: &[u8]) -> String {
    let needs_quotes = |b: u8| b < 0x20 || b == b'"' || b == b'\\' || b >= 0x7f;
    if !path.iter().any(|&b| needs_quotes(b)) {
        return String::from_utf8_lossy(path).into_owned();
    }
    let mut out = String::with_capacity(path.len() + 2);
    out.push('"');
    for &b in path {
        match b {
            b'"' | b'\\' => {
                out.push('\\');
                out.push(b as char);
            }
            b if needs_quotes(b) => push_escaped_byte(&mut out, b),
            b => out.push(b as char),
        }
    }
    out.push('"');
    out
}

/// A prefix and a path quoted together, as git writes `a/<path>` in diff headers.
pub fn quote_prefixed(prefix: &str, path: &[u8]) -> String {
    let mut joined = prefix.as_bytes().to_vec();
    joined.extend_from_slice(path);
    quote_path(&joined)
}

/// The worktree path of the entry `name` of the directory `dir`: the two joined by a
/// slash, or just `name` at the top (`dir` empty).
pub fn join(dir: &[u8], name: &[u8]) -> Vec<u8> {
    let mut path = Vec::with_capacity(dir.len() + 1 + name.len());
    if !dir.is_empty() {
        path.extend_from_slice(dir);
        path.push(b'/');
    }
    path.extend_from_slice(name);
    path
}

/// Worktree path `path` as seen from the directory `prefix` (the current one: empty at the
/// top, else ending in `/`).
pub fn relative_to(prefix: &[u8], path: &[u8]) -> Vec<u8> {
    let parts = |p: &[u8]| -> Vec<Vec<u8>> {
        p.split(|&b| b == b'/')
            .filter(|c| !c.is_empty())
            .map(<[u8]>::to_vec)
            .collect()
    };
    let (here, there) = (parts(prefix), parts(path));
    let common = here.iter().zip(&there).take_while(|(a, b)| a == b).count();
    let mut out: Vec<Vec<u8>> = vec![b"..".to_vec(); here.len() - common];
    out.extend(there[common..].iter().cloned());
    match out.is_empty() {
        true => b".".to_vec(),
        false => out.join(&b'/'),
    }
}

/// `word` as one POSIX shell word: as it is when it holds only characters no shell reads
/// specially, else single-quoted.
pub fn shell_word(word: &[u8]) -> String {
    let text = String::from_utf8_lossy(word);
    let plain = |c: char| c.is_ascii_alphanumeric() || "._-/+,:@%=".contains(c);
    if !text.is_empty() && text.chars().all(plain) {
        return text.into_owned();
    }
    format!("'{}'", text.replace('\'', "'\\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_quoted_like_git() {
        assert_eq!(quote_path(b"src/a b.rs"), "src/a b.rs");
        assert_eq!(quote_path("t\u{e9}st".as_bytes()), "\"t\\303\\251st\"");
        assert_eq!(quote_path(b"a\tb\"c\\"), "\"a\\tb\\\"c\\\\\"");
        assert_eq!(quote_path(b"\x01\x7f"), "\"\\001\\177\"");
        assert_eq!(quote_prefixed("a/", b"x\ny"), "\"a/x\\ny\"");
    }
}
