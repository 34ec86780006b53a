//! Text from people and agents (messages, metadata, names), made safe to print on a
//! terminal: a control character in it is shown, never obeyed, so an `ESC [2J` in an
//! agent's command line cannot clear the screen or retitle the window.

use std::borrow::Cow;

/// `text` with each control character (C0, DEL and C1) escaped as git escapes bytes in
/// a quoted path: `\a \b \t \n \v \f \r` by name, any other as the octal of its UTF-8
/// bytes (ESC is `\033`, U+009B is `\302\233`). Everything else, backslashes included,
/// stays as written, so ordinary text reads unchanged; `--json` keeps the exact text.
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

fn escape_except<'a>(text: &'a str, keep: &[char]) -> Cow<'a, str> {
    let escaped = |c: char| c.is_control() && !keep.contains(&c);
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
            escape_controls_keeping_lines("one\x1b\ntwo\r\n\tthree"),
            "one\\033\ntwo\\r\n\tthree"
        );
    }
}
