//! `docs/design.md` cannot rot unnoticed: every "invariant N" the code cites is one the
//! design numbers, and every file, module, function or type an invariant's "Kept in"
//! list names exists in `src/`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The invariants of section 3, by number, each with its text.
fn invariants() -> Vec<(u32, String)> {
    let design = std::fs::read_to_string(root().join("docs/design.md")).unwrap();
    let section = design
        .split("\n## 3. Invariants")
        .nth(1)
        .expect("design.md has a section 3, Invariants")
        .split("\n## ")
        .next()
        .unwrap();
    let mut found: Vec<(u32, String)> = Vec::new();
    for line in section.lines() {
        let numbered = line
            .split_once(". **")
            .and_then(|(n, _)| n.parse::<u32>().ok());
        match numbered {
            Some(n) => found.push((n, line.to_string())),
            None => {
                if let Some((_, text)) = found.last_mut() {
                    text.push('\n');
                    text.push_str(line);
                }
            }
        }
    }
    found
}

/// Every number that `text` cites as "invariant N" (also "invariants N and M").
fn cited_numbers(text: &str) -> Vec<u32> {
    let lower = text.to_lowercase();
    let mut numbers = Vec::new();
    for (at, _) in lower.match_indices("invariant") {
        let rest = &lower[at + "invariant".len()..];
        let rest = rest.strip_prefix('s').unwrap_or(rest);
        // "invariants 1, 13 and 18", "invariant 20".
        for word in rest
            .split_whitespace()
            .take_while(|w| {
                w.trim_end_matches([',', ')', '.', ';', ':'])
                    .chars()
                    .all(|c| c.is_ascii_digit())
                    || *w == "and"
            })
            .filter(|w| *w != "and")
        {
            if let Ok(n) = word.trim_end_matches([',', ')', '.', ';', ':']).parse() {
                numbers.push(n);
            }
        }
    }
    numbers
}

#[test]
fn the_invariants_are_numbered_one_to_n() {
    let numbers: Vec<u32> = invariants().iter().map(|(n, _)| *n).collect();
    let expected: Vec<u32> = (1..=numbers.len() as u32).collect();
    assert_eq!(numbers, expected, "docs/design.md section 3 numbering");
}

#[test]
fn every_invariant_the_code_cites_exists() {
    let known: BTreeSet<u32> = invariants().iter().map(|(n, _)| *n).collect();
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    let mut wrong = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for (line_no, line) in text.lines().enumerate() {
            for n in cited_numbers(line) {
                if !known.contains(&n) {
                    wrong.push(format!("{}:{}: invariant {n}", file.display(), line_no + 1));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "cited invariants that docs/design.md does not number:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn every_kept_in_list_names_code_that_exists() {
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    let sources: Vec<(PathBuf, String)> = files
        .iter()
        .map(|f| (f.clone(), std::fs::read_to_string(f).unwrap()))
        .collect();
    let module_exists = |name: &str| {
        files.iter().any(|f| {
            f.file_stem().is_some_and(|s| s == name)
                || f.parent()
                    .and_then(Path::file_name)
                    .is_some_and(|d| d == name)
        })
    };
    let defined = |name: &str| {
        [
            "fn ", "struct ", "enum ", "trait ", "type ", "const ", "static ", "mod ",
        ]
        .iter()
        .any(|kind| {
            let wanted = format!("{kind}{name}");
            sources.iter().any(|(_, text)| {
                text.match_indices(&wanted).any(|(at, _)| {
                    !text[at + wanted.len()..]
                        .starts_with(|c: char| c.is_alphanumeric() || c == '_')
                })
            })
        })
    };
    let mut wrong = Vec::new();
    for (n, text) in invariants() {
        let Some((_, kept)) = text.split_once("Kept in") else {
            continue;
        };
        // The list runs to the end of its sentence: a full stop before a space or a line
        // break.
        let end = kept
            .char_indices()
            .find(|&(at, c)| {
                c == '.' && kept[at + 1..].starts_with(|next: char| next.is_whitespace())
            })
            .map_or(kept.len(), |(at, _)| at);
        let kept = &kept[..end];
        for token in kept.split('`').skip(1).step_by(2) {
            if token.contains('/') {
                let path = token.trim_end_matches('/');
                if !root().join(path).exists() {
                    wrong.push(format!("invariant {n}: {token} does not exist"));
                }
                continue;
            }
            let parts: Vec<&str> = token
                .split("::")
                .map(|p| p.trim_end_matches("()"))
                .collect();
            let Some(last) = parts.last() else { continue };
            if parts.len() == 1 || last == &"*" {
                // A bare name (a setting, a table) or a whole type (`Dir::*`).
                continue;
            }
            let first = parts[0];
            if !module_exists(first) && !defined(first) {
                wrong.push(format!("invariant {n}: {token}: no module or type {first}"));
            }
            if !defined(last) {
                wrong.push(format!(
                    "invariant {n}: {token}: nothing in src/ defines {last}"
                ));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "docs/design.md \"Kept in\" lists name code that does not exist:\n{}",
        wrong.join("\n")
    );
}
