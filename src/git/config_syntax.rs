//! The syntax of one git config file, parsed in-process as git's `git_parse_source`
//! parses it: sections, subsections, keys, quoted values, continuations and comments,
//! and git's spellings of a boolean. Below both [`crate::git::discover`] (which reads a
//! repository's `config` for its format) and [`crate::git::config`] (which reads every
//! file in git's order); this module reads no file itself.

/// One configuration entry: its key (once canonical, as git prints it: section and
/// name lower case, a subsection as written) and its value (`None` for a key given
/// without `=`).
pub(crate) type Entry = (Vec<u8>, Option<Vec<u8>>);

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

/// A command-line key as git's `git_config_parse_key` stores it: section and name
/// lower case, the subsection between them as given. `None` for a key git rejects.
pub(crate) fn canonical_key(key: &[u8]) -> Option<Vec<u8>> {
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
}
