//! Our server's entry in an agent's JSON file (`mcpServers.checkpoint`), added and
//! removed by editing the file's text: the span of the entry is found in the file as
//! written and spliced in or out, so every other byte stays as it was (comments, which
//! Gemini CLI and Cursor read, the layout, numbers such as `1e3` or integers past 64
//! bits, the other servers). Install then uninstall gives back the file byte for byte.
//!
//! The file is read as JSONC (comments and trailing commas allowed, through
//! `jsonc-parser`, which gives each value's place in the text). A file with a key
//! written twice in one object is refused: which one the agent reads is its own
//! business, and an edit could only guess.

use std::path::Path;

use jsonc_parser::ast::{Object, ObjectProp, ObjectPropName, Value as Node};
use jsonc_parser::common::Ranged;
use jsonc_parser::tokens::{Token, TokenAndRange};
use jsonc_parser::{parse_to_ast, CollectOptions, CommentCollectionStrategy, ParseOptions};
use serde_json::{Map, Value};

use super::mcp_entry::{taken, Registered, Registration, SERVER_NAME};
use super::settings_file::replace_file;
use crate::{Error, Result};

/// The top-level key every agent keeps its servers under.
const SERVERS: &str = "mcpServers";

/// Adds `ours` as [`SERVER_NAME`] to the file at `path`, creating the file (and the
/// servers object) if needed. An entry of that name exactly as `ours` is found as it is;
/// one exactly as one of `older` (what an earlier build wrote) is replaced; any other
/// is the user's own, and refused. `agent` names the agent in a refusal.
pub(super) fn install(
    path: &Path,
    agent: &str,
    ours: &Value,
    older: &[Value],
) -> Result<Registered> {
    let Some(text) = read(path)? else {
        replace_file(path, new_file(ours).as_bytes(), None)?;
        return Ok(Registered::Added);
    };
    let parsed = Parsed::of(&text, path)?;
    let not_laid_out = |why: &str| {
        Error::InvalidArgument(format!(
            "{} is not laid out as {agent}'s MCP settings: {why}",
            path.display()
        ))
    };
    let root = parsed
        .root()
        .ok_or_else(|| not_laid_out("the top level is not a JSON object"))?;
    let edited = match member(root, SERVERS) {
        None => parsed.insert(root, SERVERS, &single(ours)),
        Some(servers) => {
            let Node::Object(servers) = &servers.value else {
                return Err(not_laid_out("\"mcpServers\" is not an object"));
            };
            match member(servers, SERVER_NAME) {
                None => parsed.insert(servers, SERVER_NAME, ours),
                Some(found) => match parsed.value_of(found) {
                    Some(value) if value == *ours => return Ok(Registered::AlreadyThere),
                    Some(value) if older.contains(&value) => {
                        // Out, then in again as this build writes it.
                        let without = parsed.remove(servers, found);
                        let parsed = Parsed::of(&without, path)?;
                        let root = parsed.root().ok_or_else(|| not_laid_out("no object"))?;
                        match member(root, SERVERS).map(|s| &s.value) {
                            Some(Node::Object(servers)) => {
                                parsed.insert(servers, SERVER_NAME, ours)
                            }
                            _ => return Err(not_laid_out("\"mcpServers\" is not an object")),
                        }
                    }
                    _ => return Err(taken(path)),
                },
            }
        }
    };
    write(path, &edited)?;
    Ok(Registered::Added)
}

/// Removes [`SERVER_NAME`] from the file at `path` if it is exactly one of `ours`, then
/// the servers object if install created it, then the file if nothing else is in it.
/// Returns false if there was nothing of ours to remove.
pub(super) fn uninstall(path: &Path, ours: &[Value]) -> Result<bool> {
    let Some(text) = read(path)? else {
        return Ok(false);
    };
    let parsed = Parsed::of(&text, path)?;
    let Some(root) = parsed.root() else {
        return Ok(false);
    };
    let Some(servers_member) = member(root, SERVERS) else {
        return Ok(false);
    };
    let Node::Object(servers) = &servers_member.value else {
        return Ok(false);
    };
    let Some(found) = member(servers, SERVER_NAME) else {
        return Ok(false);
    };
    let Some(value) = parsed.value_of(found).filter(|value| ours.contains(value)) else {
        return Ok(false);
    };
    // The servers object goes with our entry only if it is exactly what install makes
    // when it creates one; a user's own (an empty `{}` left behind) stays.
    let created = servers.properties.len() == 1
        && servers_member.range.text(&text) == parsed.render_member(root, SERVERS, &single(&value));
    let edited = match created {
        true => parsed.remove(root, servers_member),
        false => parsed.remove(servers, found),
    };
    // Nothing left but the braces (no member, no comment): the file install created.
    let empty = edited.split_whitespace().collect::<String>() == "{}";
    if empty {
        std::fs::remove_file(path).map_err(|e| Error::io(path, e))?;
        if let Some(dir) = path.parent() {
            // Only succeeds if the directory is empty, i.e. the install created it.
            let _ = std::fs::remove_dir(dir);
        }
    } else {
        write(path, &edited)?;
    }
    Ok(true)
}

/// The entry named [`SERVER_NAME`] in the file at `path`: its command, and whether it
/// is exactly one of `ours`; `None` when there is none. Changes nothing.
pub(super) fn registration(path: &Path, ours: &[Value]) -> Result<Option<Registration>> {
    let Some(text) = read(path)? else {
        return Ok(None);
    };
    let parsed = Parsed::of(&text, path)?;
    let servers = parsed
        .root()
        .and_then(|root| member(root, SERVERS))
        .map(|servers| &servers.value);
    let Some(Node::Object(servers)) = servers else {
        return Ok(None);
    };
    let Some(found) = member(servers, SERVER_NAME) else {
        return Ok(None);
    };
    let value = parsed.value_of(found);
    Ok(Some(Registration {
        command: value
            .as_ref()
            .and_then(|value| value.get("command"))
            .and_then(Value::as_str)
            .map(str::to_string),
        ours: value.is_some_and(|value| ours.contains(&value)),
    }))
}

/// The file's text, or `None` when there is no file or only whitespace in it (written
/// as a new file).
fn read(path: &Path) -> Result<Option<String>> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(path, e)),
    };
    let text = String::from_utf8(bytes).map_err(|_| {
        Error::InvalidArgument(format!("{} is not valid JSON: not UTF-8", path.display()))
    })?;
    Ok((!text.trim().is_empty()).then_some(text))
}

/// Writes `text` over the file at `path`, keeping its permissions.
fn write(path: &Path, text: &str) -> Result<()> {
    let mode = std::fs::metadata(path)
        .ok()
        .map(|m| std::os::unix::fs::PermissionsExt::mode(&m.permissions()));
    replace_file(path, text.as_bytes(), mode)
}

/// `{"checkpoint": <entry>}`: the servers object install creates.
fn single(entry: &Value) -> Value {
    let mut servers = Map::new();
    servers.insert(SERVER_NAME.to_string(), entry.clone());
    Value::Object(servers)
}

/// A new file holding only the servers object with our entry, two spaces a level.
fn new_file(entry: &Value) -> String {
    let layout = Layout {
        indent: "  ".to_string(),
        unit: "  ".to_string(),
        newline: "\n",
        one_line: None,
    };
    format!("{{\n  {}\n}}\n", layout.member(SERVERS, &single(entry)))
}

/// The member `name` of `object`, if any.
fn member<'o, 'a>(object: &'o Object<'a>, name: &str) -> Option<&'o ObjectProp<'a>> {
    object.properties.iter().find(|p| key(p) == name)
}

/// A member's name, decoded.
fn key<'a>(prop: &'a ObjectProp) -> &'a str {
    match &prop.name {
        ObjectPropName::String(name) => &name.value,
        ObjectPropName::Word(name) => name.value,
    }
}

/// The first key written twice in one object anywhere in `node`, if any.
fn duplicate_key<'a>(node: &'a Node) -> Option<&'a str> {
    match node {
        Node::Object(object) => {
            let mut seen = std::collections::HashSet::new();
            for prop in &object.properties {
                if !seen.insert(key(prop)) {
                    return Some(key(prop));
                }
            }
            object
                .properties
                .iter()
                .find_map(|p| duplicate_key(&p.value))
        }
        Node::Array(array) => array.elements.iter().find_map(duplicate_key),
        _ => None,
    }
}

/// A file's text with its syntax tree and tokens (commas included).
struct Parsed<'t> {
    text: &'t str,
    value: Node<'t>,
    tokens: Vec<TokenAndRange<'t>>,
}

impl<'t> Parsed<'t> {
    /// Parses `text` as JSONC, refusing a syntax error or a key written twice.
    fn of(text: &'t str, path: &Path) -> Result<Parsed<'t>> {
        let options = ParseOptions {
            allow_comments: true,
            allow_trailing_commas: true,
            allow_loose_object_property_names: false,
            allow_missing_commas: false,
            allow_single_quoted_strings: false,
            allow_hexadecimal_numbers: false,
            allow_unary_plus_numbers: false,
            allow_bare_decimal_point_numbers: false,
            allow_extended_string_escapes: false,
            allow_non_finite_numbers: false,
        };
        let collect = CollectOptions {
            comments: CommentCollectionStrategy::Off,
            tokens: true,
        };
        let invalid = |why: String| {
            Error::InvalidArgument(format!("{} is not valid JSON: {why}", path.display()))
        };
        let parsed = parse_to_ast(text, &collect, &options).map_err(|e| invalid(e.to_string()))?;
        let value = parsed.value.ok_or_else(|| invalid("no value".into()))?;
        if let Some(name) = duplicate_key(&value) {
            return Err(Error::InvalidArgument(format!(
                "{} has the key \"{name}\" twice in one object; which one counts is the agent's business: remove one by hand first",
                path.display()
            )));
        }
        Ok(Parsed {
            text,
            value,
            tokens: parsed.tokens.unwrap_or_default(),
        })
    }

    /// The top-level object, if the file is one.
    fn root(&self) -> Option<&Object<'t>> {
        match &self.value {
            Node::Object(object) => Some(object),
            _ => None,
        }
    }

    /// A member's value as JSON, or `None` when it is not plain JSON (a comment in it):
    /// then it is not one install wrote.
    fn value_of(&self, prop: &ObjectProp) -> Option<Value> {
        serde_json::from_str(prop.value.range().text(self.text)).ok()
    }

    /// The first comma between `from` and `to`.
    fn comma_between(&self, from: usize, to: usize) -> Option<std::ops::Range<usize>> {
        self.tokens
            .iter()
            .find(|t| t.range.start >= from && t.range.end <= to && t.token == Token::Comma)
            .map(|t| t.range.start..t.range.end)
    }

    /// The text with `name: value` added as the last member of `object`, laid out as
    /// the object is: on a line of its own at its members' indent, or on its one line.
    fn insert(&self, object: &Object, name: &str, value: &Value) -> String {
        let layout = self.layout(object);
        let member = layout.member(name, value);
        let text = self.text;
        let close = object.range.end - 1;
        let separator = match layout.one_line {
            None => format!("{}{}", layout.newline, layout.indent),
            Some(_) if object.properties.is_empty() => String::new(),
            Some(true) => " ".to_string(),
            Some(false) => String::new(),
        };
        let Some(last) = object.properties.last() else {
            let at = match layout.one_line {
                None => after_same_line_comments(text, object.range.start + 1),
                Some(_) => object.range.start + 1,
            };
            return splice(text, &[(at, at, format!("{separator}{member}"))]);
        };
        match self.comma_between(last.range.end, close) {
            // A trailing comma: ours goes after it, with one of its own.
            Some(comma) => {
                let at = after_same_line_comments(text, comma.end);
                splice(text, &[(at, at, format!("{separator}{member},"))])
            }
            // The comma right after the last value, ours after what is on its line.
            None => {
                let at = after_same_line_comments(text, last.range.end);
                splice(
                    text,
                    &[
                        (last.range.end, last.range.end, ",".to_string()),
                        (at, at, format!("{separator}{member}")),
                    ],
                )
            }
        }
    }

    /// The text without `prop` (a member of `object`): the member, the whitespace before
    /// it, and one comma beside it, which is exactly what [`Parsed::insert`] adds.
    fn remove(&self, object: &Object, prop: &ObjectProp) -> String {
        let text = self.text;
        let index = object
            .properties
            .iter()
            .position(|p| p.range == prop.range)
            .unwrap_or_default();
        let start = text[..prop.range.start]
            .trim_end_matches([' ', '\t', '\n', '\r'])
            .len();
        let next = object
            .properties
            .get(index + 1)
            .map_or(object.range.end - 1, |p| p.range.start);
        let comma = self.comma_between(prop.range.end, next).or_else(|| {
            let previous = object.properties.get(index.checked_sub(1)?)?;
            self.comma_between(previous.range.end, prop.range.start)
        });
        let mut cuts = vec![(start, prop.range.end, String::new())];
        if let Some(comma) = comma {
            cuts.push((comma.start, comma.end, String::new()));
        }
        splice(text, &cuts)
    }

    /// `name: value` as [`Parsed::insert`] writes it into `object`.
    fn render_member(&self, object: &Object, name: &str, value: &Value) -> String {
        self.layout(object).member(name, value)
    }

    /// How a member added to `object` is laid out.
    fn layout(&self, object: &Object) -> Layout {
        let text = self.text;
        let newline = if text.contains("\r\n") { "\r\n" } else { "\n" };
        let object_text = object.range.text(text);
        // The separators of the file's first member: `"a": 1` or `"a":1`.
        let first = self.root().and_then(|root| root.properties.first());
        let spaced = first.is_none_or(|p| {
            let name_end = match &p.name {
                ObjectPropName::String(name) => name.range.end,
                ObjectPropName::Word(name) => name.range.end,
            };
            text[name_end..p.value.range().start].contains(' ')
        });
        if !object_text.contains('\n') {
            return Layout {
                indent: String::new(),
                unit: String::new(),
                newline,
                one_line: Some(spaced),
            };
        }
        // A level's indent: the root's first member's, which stands one level in.
        let unit = first
            .and_then(|p| own_line_indent(text, p.range.start))
            .filter(|unit| !unit.is_empty())
            .unwrap_or("  ")
            .to_string();
        let indent = match object.properties.last() {
            Some(last) => own_line_indent(text, last.range.start).map(str::to_string),
            None => None,
        };
        let indent =
            indent.unwrap_or_else(|| format!("{}{unit}", line_indent(text, object.range.start)));
        Layout {
            indent,
            unit,
            newline,
            one_line: None,
        }
    }
}

/// How a new member is written.
struct Layout {
    /// Its indent, on a line of its own.
    indent: String,
    /// One more level's indent.
    unit: String,
    /// `\n`, or `\r\n` in a file that has it.
    newline: &'static str,
    /// `Some(spaced)` when the object is on one line: everything on that line, with a
    /// space after each `:` and `,` if `spaced`.
    one_line: Option<bool>,
}

impl Layout {
    /// `"name": value`.
    fn member(&self, name: &str, value: &Value) -> String {
        let colon = match self.one_line {
            Some(false) => ":",
            _ => ": ",
        };
        format!(
            "{}{colon}{}",
            Value::String(name.to_string()),
            self.value(value, &self.indent)
        )
    }

    /// `value` as written at `indent`: objects a member a line (or all on one line in a
    /// one-line object), arrays of plain values on one line.
    fn value(&self, value: &Value, indent: &str) -> String {
        let (space, comma) = match self.one_line {
            Some(false) => ("", ","),
            _ => (" ", ", "),
        };
        match value {
            Value::Object(map) if !map.is_empty() => {
                let colon = format!(":{space}");
                match self.one_line {
                    Some(_) => {
                        let members: Vec<String> = map
                            .iter()
                            .map(|(k, v)| {
                                format!(
                                    "{}{colon}{}",
                                    Value::String(k.clone()),
                                    self.value(v, indent)
                                )
                            })
                            .collect();
                        format!("{{{}}}", members.join(comma))
                    }
                    None => {
                        let inner = format!("{indent}{}", self.unit);
                        let members: Vec<String> = map
                            .iter()
                            .map(|(k, v)| {
                                format!(
                                    "{inner}{}: {}",
                                    Value::String(k.clone()),
                                    self.value(v, &inner)
                                )
                            })
                            .collect();
                        let separator = format!(",{}", self.newline);
                        format!(
                            "{{{nl}{}{nl}{indent}}}",
                            members.join(&separator),
                            nl = self.newline
                        )
                    }
                }
            }
            Value::Array(items) => {
                let items: Vec<String> = items.iter().map(|v| self.value(v, indent)).collect();
                format!("[{}]", items.join(comma))
            }
            other => other.to_string(),
        }
    }
}

/// The indent of the line `at` is on, when only that indent stands before `at` on it.
fn own_line_indent(text: &str, at: usize) -> Option<&str> {
    let line_start = text[..at].rfind('\n').map_or(0, |n| n + 1);
    let before = &text[line_start..at];
    before
        .bytes()
        .all(|b| b == b' ' || b == b'\t')
        .then_some(before)
}

/// The whitespace that starts the line `at` is on.
fn line_indent(text: &str, at: usize) -> &str {
    let line_start = text[..at].rfind('\n').map_or(0, |n| n + 1);
    let line = &text[line_start..];
    &line[..line.len() - line.trim_start_matches([' ', '\t']).len()]
}

/// Where a member added after position `from` goes: after the comments on the rest of
/// its line (a `// …` of the user's stays with the value it was written beside), but
/// before the whitespace that ends that line, so that the new member's own line break
/// and indent are all that stands between.
fn after_same_line_comments(text: &str, from: usize) -> usize {
    let mut end = from;
    let mut at = from;
    loop {
        let rest = &text[at..];
        let blank = rest.len() - rest.trim_start_matches([' ', '\t']).len();
        let rest = &rest[blank..];
        if rest.starts_with("//") {
            let line = rest.find(['\n', '\r']).unwrap_or(rest.len());
            return at + blank + rest[..line].trim_end_matches([' ', '\t']).len();
        }
        match rest.strip_prefix("/*").and_then(|body| body.find("*/")) {
            Some(close) if !rest[..close + 4].contains('\n') => {
                at += blank + close + 4;
                end = at;
            }
            _ => return end,
        }
    }
}

/// `text` with each `(start, end, replacement)` applied; the ranges do not overlap.
fn splice(text: &str, edits: &[(usize, usize, String)]) -> String {
    let mut edits: Vec<&(usize, usize, String)> = edits.iter().collect();
    edits.sort_by_key(|(start, end, _)| (*start, *end));
    let mut out = String::with_capacity(text.len() + 256);
    let mut at = 0;
    for (start, end, replacement) in edits {
        out.push_str(&text[at..*start]);
        out.push_str(replacement);
        at = *end;
    }
    out.push_str(&text[at..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Installs into a file holding `original`, checks what `check` asks of the text,
    /// then uninstalls: the file comes back byte for byte.
    fn round_trip(original: &str, check: impl FnOnce(&str)) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        std::fs::write(&path, original).unwrap();
        let ours = json!({"command": "git-checkpoint", "args": ["mcp"]});
        assert_eq!(
            install(&path, "test", &ours, &[]).unwrap(),
            Registered::Added
        );
        let installed = std::fs::read_to_string(&path).unwrap();
        check(&installed);
        let value = Parsed::of(&installed, &path).unwrap();
        let root = value.root().unwrap();
        let Node::Object(servers) = &member(root, SERVERS).unwrap().value else {
            panic!("{installed}")
        };
        assert_eq!(
            value.value_of(member(servers, SERVER_NAME).unwrap()),
            Some(ours.clone())
        );
        assert_eq!(
            install(&path, "test", &ours, &[]).unwrap(),
            Registered::AlreadyThere
        );
        assert!(uninstall(&path, &[ours]).unwrap());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), original);
    }

    #[test]
    fn every_layout_comes_back_byte_for_byte() {
        for original in [
            // A trailing comma, kept, and ours gets one too.
            "{\n  \"a\": 1,\n}\n",
            // Windows line ends.
            "{\r\n  \"a\": 1\r\n}\r\n",
            // A comment after the last value stays with it; a block one too.
            "{\n  \"a\": 1 // about a  \n}",
            "{\"a\": 1 /* about a */}",
            // An empty servers object of the user's (laid out otherwise than install
            // would make one, which is then told from it).
            "{\n  \"x\": true,\n  \"mcpServers\": {}\n}\n",
            "{\n  \"mcpServers\": { }\n}",
            // The closing brace on the last value's line.
            "{\n    \"a\": [1,\n      2]}",
        ] {
            round_trip(original, |text| {
                assert!(text.contains("\"checkpoint\""), "{text}");
                if original.contains("\r\n") {
                    assert!(!text.replace("\r\n", "").contains('\n'), "{text:?}");
                }
            });
        }
    }

    #[test]
    fn ours_is_laid_out_as_the_object_it_joins() {
        round_trip("{\n\t\"a\": 1\n}\n", |text| {
            assert!(
                text.contains("\n\t\"mcpServers\": {\n\t\t\"checkpoint\": {\n\t\t\t\"command\""),
                "{text}"
            );
        });
        round_trip("{\"a\":1}", |text| {
            assert_eq!(
                text,
                "{\"a\":1,\"mcpServers\":{\"checkpoint\":{\"command\":\"git-checkpoint\",\"args\":[\"mcp\"]}}}"
            );
        });
    }

    #[test]
    fn a_key_written_twice_or_a_broken_file_is_refused() {
        let path = Path::new("f.json");
        for text in ["{\"a\": {\"b\": 1, \"b\": 2}}", "[{\"a\": 1, \"a\": 1}]"] {
            let error = Parsed::of(text, path).err().unwrap().to_string();
            assert!(error.contains("twice"), "{error}");
        }
        for text in ["{\"a\": 1", "{'a': 1}", "{a: 1}"] {
            let error = Parsed::of(text, path).err().unwrap().to_string();
            assert!(error.contains("not valid JSON"), "{error}");
        }
    }
}
