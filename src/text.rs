//! Text from people and agents (messages, metadata, names), made safe to print on a
//! terminal or hand to a model: a control character in it is shown, never obeyed, so an
//! `ESC [2J` in an agent's command line cannot clear the screen or retitle the window,
//! and a bidi control cannot reorder what a reader sees. Every front end (the CLI,
//! `browse`, `blame`, the MCP server) escapes through these functions.

use std::borrow::Cow;

/// `text` with each control character (C0, DEL and C1) and each bidi control escaped as
/// git escapes bytes in a quoted path: `\a \b \t \n \v \f \r` by name, any other as
/// the octal of its UTF-8 bytes (ESC is `\033`, U+009B is `\302\233`, U+202E is
/// `\342\200\256`). Everything else, backslashes included, stays as written, so
/// ordinary text reads unchanged; `--json` keeps the exact text.
pub fn escape_controls(text: &str) -> Cow<'_, str> {
    escape_except(text, &[])
}

/// [`escape_controls`], but keeping line breaks and tabs: for a whole message of several
/// lines, such as a warning or an error, whose lines and indents are its layout (git's
/// own advice indents the command to run with a tab). Neither moves the cursor anywhere
/// a line of text could not.
pub fn escape_controls_keeping_lines(text: &str) -> Cow<'_, str> {
    escape_except(text, &['\n', '\t'])
}

/// `names` as a sentence lists them, the first `at_most` by name and the rest counted:
/// `a`, `a and b`, `a, b and c`, `a, b, c and 2 more`.
pub fn list_names(names: &[String], at_most: usize) -> String {
    let mut shown: Vec<&str> = names.iter().take(at_most).map(String::as_str).collect();
    let more = format!("{} more", names.len().saturating_sub(at_most));
    if names.len() > at_most {
        shown.push(&more);
    }
    match shown.as_slice() {
        [] => String::new(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// [`escape_controls`], but keeping tabs: for one line of a file's content (`blame`),
/// whose indentation is its layout, as `show` and `diff` keep it.
pub fn escape_controls_keeping_tabs(text: &str) -> Cow<'_, str> {
    escape_except(text, &['\t'])
}

/// `n` and `noun`, the noun in the plural unless `n` is 1: "1 prompt", "0 prompts",
/// "3 tool calls", "2 branches". Every count a message gives goes through here. The
/// plural is English's regular one: `es` after s, x, ch and sh, `ies` for a `y` after a
/// consonant, else `s`.
pub fn counted<N: std::fmt::Display + PartialEq + From<u8>>(n: N, noun: &str) -> String {
    if n == N::from(1) {
        return format!("{n} {noun}");
    }
    let consonant_y = noun.strip_suffix('y').filter(|stem| {
        stem.chars()
            .last()
            .is_some_and(|c| !"aeiou".contains(c.to_ascii_lowercase()))
    });
    match consonant_y {
        Some(stem) => format!("{n} {stem}ies"),
        None if ["s", "x", "ch", "sh"].iter().any(|end| noun.ends_with(end)) => {
            format!("{n} {noun}es")
        }
        None => format!("{n} {noun}s"),
    }
}

/// Whether `c` is a bidi control: an embedding, override or isolate (U+202A to U+202E,
/// U+2066 to U+2069), which makes a terminal show the text around it in another order
/// than it is ("Trojan Source"). The marks (U+200E, U+200F) only affect neutral
/// characters beside them and stay.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

fn escape_except<'a>(text: &'a str, keep: &[char]) -> Cow<'a, str> {
    let escaped = |c: char| (c.is_control() || is_bidi_control(c)) && !keep.contains(&c);
    if !text.chars().any(escaped) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if escaped(c) {
            let mut bytes = [0; 4];
            for &b in c.encode_utf8(&mut bytes).as_bytes() {
                push_escaped_byte(&mut out, b);
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Appends byte `b` escaped as git escapes it in a quoted path: the C escape where
/// there is one, else a backslash and three octal digits.
pub(crate) fn push_escaped_byte(out: &mut String, b: u8) {
    match b {
        0x07 => out.push_str("\\a"),
        0x08 => out.push_str("\\b"),
        b'\t' => out.push_str("\\t"),
        b'\n' => out.push_str("\\n"),
        0x0b => out.push_str("\\v"),
        0x0c => out.push_str("\\f"),
        b'\r' => out.push_str("\\r"),
        b => out.push_str(&format!("\\{b:03o}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_listed_as_a_sentence_lists_them() {
        let names = |n: usize| (1..=n).map(|i| format!("f{i}")).collect::<Vec<_>>();
        assert_eq!(list_names(&names(0), 3), "");
        assert_eq!(list_names(&names(1), 3), "f1");
        assert_eq!(list_names(&names(2), 3), "f1 and f2");
        assert_eq!(list_names(&names(3), 3), "f1, f2 and f3");
        assert_eq!(list_names(&names(5), 3), "f1, f2, f3 and 2 more");
    }

    #[test]
    fn control_characters_are_escaped_and_nothing_else() {
        assert_eq!(
            escape_controls("plain \\ text, ünïcode"),
            "plain \\ text, ünïcode"
        );
        assert!(matches!(escape_controls("plain"), Cow::Borrowed(_)));
        assert_eq!(
            escape_controls("evil \x1b[2J\x07 message"),
            "evil \\033[2J\\a message"
        );
        assert_eq!(escape_controls("\x1b]0;title\x07"), "\\033]0;title\\a");
        assert_eq!(escape_controls("a\tb\nc\r\0\x7f"), "a\\tb\\nc\\r\\000\\177");
        assert_eq!(escape_controls("\u{9b}2J"), "\\302\\2332J");
        assert_eq!(
            escape_controls("a\u{202e}b\u{2066}c\u{2069}\u{200f}"),
            "a\\342\\200\\256b\\342\\201\\246c\\342\\201\\251\u{200f}"
        );
        assert_eq!(
            escape_controls_keeping_lines("x\u{202a}\ny"),
            "x\\342\\200\\252\ny"
        );
        assert_eq!(
            escape_controls_keeping_lines("one\x1b\ntwo\r\n\tthree"),
            "one\\033\ntwo\\r\n\tthree"
        );
        assert_eq!(
            escape_controls_keeping_tabs("\tint x;\x1b[2J\r\n"),
            "\tint x;\\033[2J\\r\\n"
        );
    }

    #[test]
    fn counts_are_singular_for_one_only() {
        assert_eq!(counted(1u64, "prompt"), "1 prompt");
        assert_eq!(counted(0usize, "second"), "0 seconds");
        assert_eq!(counted(3usize, "tool call"), "3 tool calls");
        assert_eq!(counted(2u64, "branch"), "2 branches");
        assert_eq!(counted(1u64, "branch"), "1 branch");
        assert_eq!(counted(4usize, "entry"), "4 entries");
        assert_eq!(counted(2usize, "day"), "2 days");
    }
}
