//! The README and the guides in `docs/` run as tests: every ```` ```console ```` block is
//! run, command by command, against the real binary in a real git repository, and what
//! each command prints must be what the page shows. So the manual cannot drift from the
//! program.
//!
//! Why not `trycmd`: the examples run as `git checkpoint …` through git, one page is one
//! story whose later blocks use the state and the ids of earlier ones, and checkpoint ids
//! are random per store. A page should show real ids, not `[..]`; here an id the page
//! shows stands for whatever id the program printed in its place, consistently, and a
//! later command that names it (or a prefix of it) is run with the real one.
//!
//! The rules a page follows:
//! - `$ <command>` lines run in order, each in a bash that starts where the last one
//!   ended (its directory and shell variables carry on, to later blocks too), stdout and
//!   stderr merged; the lines after it, up to the next `$`, are what it prints.
//! - Before matching, both sides are normalised: runs of spaces are one space, ages
//!   (`37 seconds ago`) and times (RFC 3339, `0.07 s`) match any age and time, and the
//!   sandbox's home directory is `/home/me` (the page's project is `/home/me/project`).
//! - A hexadecimal word of 7 or more digits is an id: it matches any hexadecimal word of
//!   the same length, the same one every time.
//! - `[..]` in a line matches any text; a line `...` matches any number of lines.
//! - ```` ```console,ignore ```` blocks are not run (a damaged store, a long agent history); an HTML
//!   comment `<!-- docs-test` … `-->` holds shell lines run, silently, before the next
//!   block (files an example needs but that would only clutter the page). Other blocks
//!   (```` ```sh ````: commands shown without output) are not run.
//! - `GIT_CHECKPOINT_DOCS_BLESS=1` writes what the program printed into the pages.

use crate::common;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{run_cmd, Sandbox};

/// What a hidden set-up prints when it got to its end.
const MARK: &str = "gcp-docs-setup-done";

/// One command of a page and what the page says it prints.
struct Step {
    line: usize,
    command: String,
    expected: Vec<String>,
}

/// A command run from a page, and whether its output is what the page shows.
struct Outcome {
    /// Why the output is not what the page shows; `None` when it is.
    report: Option<String>,
    /// Whether the page shows wildcards there (which blessing keeps).
    wild: bool,
    /// The page's line of the command (1-based), and how many lines after it it shows.
    line: usize,
    shown: usize,
    /// What the program printed, in the page's terms.
    printed: Vec<String>,
    /// The command as it ran: the page's with the program's ids.
    ran: String,
}

/// A part of a page that runs: a console block, or a hidden set-up comment.
enum Part {
    Block(Vec<Step>),
    Setup { line: usize, script: String },
}

/// The runnable parts of a Markdown page, in order.
fn parse(page: &str) -> Vec<Part> {
    let mut parts = Vec::new();
    let mut lines = page.lines().enumerate();
    while let Some((n, line)) = lines.next() {
        let line = line.trim_end();
        if line.starts_with("<!-- docs-test") {
            let script: Vec<&str> = lines
                .by_ref()
                .map(|(_, l)| l)
                .take_while(|l| l.trim() != "-->")
                .collect();
            parts.push(Part::Setup {
                line: n + 1,
                script: script.join("\n"),
            });
        } else if let Some(info) = line.strip_prefix("```") {
            let body: Vec<(usize, &str)> = lines
                .by_ref()
                .take_while(|(_, l)| l.trim_end() != "```")
                .collect();
            if info == "console" {
                parts.push(Part::Block(steps(&body)));
            }
        }
    }
    parts
}

/// The commands of a console block with their expected output.
fn steps(body: &[(usize, &str)]) -> Vec<Step> {
    let mut steps: Vec<Step> = Vec::new();
    for &(n, line) in body {
        if let Some(command) = line.strip_prefix("$ ") {
            steps.push(Step {
                line: n + 1,
                command: command.to_string(),
                expected: Vec::new(),
            });
        } else if let Some(step) = steps.last_mut() {
            step.expected.push(line.to_string());
        }
    }
    steps
}

/// The sandbox a page runs in: a home at `/home/me` as the page shows it, git's identity
/// and default branch set, and the binary under test on `PATH` so that `git checkpoint`
/// finds it.
struct Session {
    sb: Sandbox,
    cwd: PathBuf,
    ids: Ids,
}

impl Session {
    fn new() -> Self {
        let sb = Sandbox::new();
        fs::write(
            sb.home.join(".gitconfig"),
            "[user]\n\tname = Me\n\temail = me@example.com\n[init]\n\tdefaultBranch = main\n",
        )
        .unwrap();
        let cwd = sb.home.join("project");
        fs::create_dir_all(&cwd).unwrap();
        Session {
            cwd,
            sb,
            ids: Ids::default(),
        }
    }

    /// Runs `script` in bash from the current directory with the shell variables earlier
    /// scripts left, then keeps the directory and variables it ends with; returns its
    /// stdout and stderr merged.
    fn bash(&mut self, script: &str) -> String {
        let bin_dir = Path::new(common::BIN).parent().unwrap();
        let path = format!(
            "{}:{}",
            bin_dir.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let cwd_file = self.sb.root.join("cwd");
        let vars = self.sb.root.join("vars");
        let mut cmd = Command::new("bash");
        self.sb.isolate(&mut cmd);
        cmd.current_dir(&self.cwd)
            .env("PATH", path)
            .env_remove("GIT_AUTHOR_NAME")
            .env_remove("GIT_AUTHOR_EMAIL")
            .env_remove("GIT_COMMITTER_NAME")
            .env_remove("GIT_COMMITTER_EMAIL")
            .arg("-c")
            .arg(format!(
                "source '{vars}' 2>/dev/null\nexec 2>&1\n{script}\n\
                 pwd > '{cwd}'; declare -p | grep -v '^declare -[a-zA-Z]*r' > '{vars}'\n",
                vars = vars.display(),
                cwd = cwd_file.display()
            ));
        let out = run_cmd(cmd, Duration::from_secs(180));
        common::assert_no_panic(&out, script);
        if let Ok(dir) = fs::read_to_string(&cwd_file) {
            self.cwd = PathBuf::from(dir.trim_end());
        }
        out.stdout
    }

    /// Runs one console block, command by command (so an id a command prints can be
    /// named by the next); returns for each what it printed, and how that differs from
    /// the page.
    fn block(&mut self, page: &str, steps: &[Step]) -> Vec<Outcome> {
        let mut outcomes = Vec::new();
        for step in steps {
            let command = self.ids.substitute(&step.command);
            let output = self.bash(&command);
            let home = self.sb.home.display().to_string();
            let printed = output
                .replace(&home, "/home/me")
                .lines()
                .map(|l| l.trim_end().to_string())
                .collect();
            let actual: Vec<String> = output
                .lines()
                .map(|l| self.normalise(l))
                .filter(|l| !l.is_empty())
                .collect();
            let expected: Vec<String> = step
                .expected
                .iter()
                .map(|l| normalise_line(l))
                .filter(|l| !l.is_empty())
                .collect();
            let report = (!self.ids.lines_match(&expected, &actual)).then(|| {
                format!(
                    "{page}:{}: $ {}\n--- the page shows ---\n{}\n--- the program printed ---\n{}\n",
                    step.line,
                    step.command,
                    expected.join("\n"),
                    actual.join("\n")
                )
            });
            outcomes.push(Outcome {
                report,
                wild: expected.iter().any(|l| l == "..." || l.contains("[..]")),
                line: step.line,
                shown: step.expected.len(),
                printed,
                ran: command,
            });
        }
        outcomes
    }

    /// A line of the program's output in the page's terms: the sandbox's home is
    /// `/home/me`, then as [`normalise_line`].
    fn normalise(&self, line: &str) -> String {
        let home = self.sb.home.display().to_string();
        normalise_line(&line.replace(&home, "/home/me"))
    }
}

/// Spaces, ages and times as the matcher compares them.
fn normalise_line(line: &str) -> String {
    let words: Vec<&str> = line.split_whitespace().collect();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let w = words[i];
        if is_age(&words[i..]) {
            out.push("<age>".into());
            i += 3;
            continue;
        }
        let seconds = w.trim_start_matches('(');
        if words
            .get(i + 1)
            .is_some_and(|n| n.trim_end_matches(')') == "s")
            && seconds.contains('.')
            && seconds.parse::<f64>().is_ok()
        {
            out.push(format!("{}<t>", &w[..w.len() - seconds.len()]));
        } else {
            out.push(time_free(w));
        }
        i += 1;
    }
    out.join(" ")
}

/// Whether `words` start with an age as the program prints it: `37 seconds ago`.
fn is_age(words: &[&str]) -> bool {
    let [n, unit, ago, ..] = words else {
        return false;
    };
    let units = ["second", "minute", "hour", "day", "week", "month", "year"];
    n.trim_start_matches('(').parse::<u64>().is_ok()
        && units.contains(&unit.trim_end_matches('s'))
        && ago.trim_end_matches([',', ')']) == "ago"
}

/// `word` with any RFC 3339 time in it replaced by `<time>`.
fn time_free(word: &str) -> String {
    let b = word.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| r.clone().all(|i| b.get(i).is_some_and(u8::is_ascii_digit));
    for start in 0..b.len() {
        if digits(start..start + 4)
            && b.get(start + 4) == Some(&b'-')
            && b.get(start + 10) == Some(&b'T')
            && digits(start + 11..start + 13)
        {
            let end = (start + 11..b.len())
                .find(|&i| !matches!(b[i], b'0'..=b'9' | b':' | b'.' | b'Z' | b'+' | b'-'))
                .unwrap_or(b.len());
            return format!("{}<time>{}", &word[..start], time_free(&word[end..]));
        }
    }
    word.to_string()
}

/// A piece of an expected line.
#[derive(Debug)]
enum Piece {
    Text(char),
    Id(String),
    Any,
}

/// The ids a page shows, each with the id the program printed in its place.
#[derive(Default)]
struct Ids {
    seen: BTreeMap<String, String>,
}

impl Ids {
    /// `command` with every hexadecimal word that starts an id the page showed replaced by
    /// the same length of the id the program printed.
    fn substitute(&self, command: &str) -> String {
        let mut out = String::new();
        for (word, is_hex) in hex_words(command) {
            let real = (is_hex && word.len() >= 4)
                .then(|| self.real(word))
                .flatten();
            out.push_str(real.as_deref().unwrap_or(word));
        }
        out
    }

    /// The program's id for `shown`, a page's id or a prefix of one.
    fn real(&self, shown: &str) -> Option<String> {
        self.seen
            .iter()
            .find(|(page, real)| page.starts_with(shown) && real.len() >= shown.len())
            .map(|(_, real)| real[..shown.len()].to_string())
    }

    /// Whether `actual` is what `expected` shows; on a match, the ids it paired are kept.
    fn lines_match(&mut self, expected: &[String], actual: &[String]) -> bool {
        let mut seen = self.seen.clone();
        if match_lines(expected, actual, &mut seen) {
            self.seen = seen;
            true
        } else {
            false
        }
    }
}

/// Splits `text` into words of hexadecimal digits standing alone (`true`) and the rest.
fn hex_words(text: &str) -> Vec<(&str, bool)> {
    let mut words = Vec::new();
    let mut start = 0;
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut i = 0;
    while i < chars.len() {
        let alnum_before = i > 0 && chars[i - 1].1.is_ascii_alphanumeric();
        let run = chars[i..]
            .iter()
            .take_while(|(_, c)| c.is_ascii_digit() || ('a'..='f').contains(c))
            .count();
        let after = chars.get(i + run).map(|&(_, c)| c);
        if run > 0 && !alnum_before && !after.is_some_and(|c| c.is_ascii_alphanumeric()) {
            let at = chars[i].0;
            let end = chars.get(i + run).map_or(text.len(), |&(p, _)| p);
            words.push((&text[start..at], false));
            words.push((&text[at..end], true));
            start = end;
            i += run;
        } else {
            i += run.max(1);
        }
    }
    words.push((&text[start..], false));
    words
}

/// An expected line cut into text, ids (7 or more hex digits) and `[..]` wildcards.
fn pieces(line: &str) -> Vec<Piece> {
    let mut out = Vec::new();
    for (n, part) in line.split("[..]").enumerate() {
        if n > 0 {
            out.push(Piece::Any);
        }
        for (word, is_hex) in hex_words(part) {
            if is_hex && word.len() >= 7 {
                out.push(Piece::Id(word.to_string()));
            } else {
                out.extend(word.chars().map(Piece::Text));
            }
        }
    }
    out
}

/// Whether the lines match, `...` standing for any number of lines.
fn match_lines(expected: &[String], actual: &[String], ids: &mut BTreeMap<String, String>) -> bool {
    let Some((first, rest)) = expected.split_first() else {
        return actual.is_empty();
    };
    if first == "..." {
        return (0..=actual.len()).any(|skip| {
            let mut tried = ids.clone();
            let ok = match_lines(rest, &actual[skip..], &mut tried);
            if ok {
                *ids = tried;
            }
            ok
        });
    }
    let Some((line, actual_rest)) = actual.split_first() else {
        return false;
    };
    let chars: Vec<char> = line.chars().collect();
    match_line(&pieces(first), &chars, ids) && match_lines(rest, actual_rest, ids)
}

/// Whether one line matches, pairing the page's ids with the program's.
fn match_line(pieces: &[Piece], line: &[char], ids: &mut BTreeMap<String, String>) -> bool {
    let Some((first, rest)) = pieces.split_first() else {
        return line.is_empty();
    };
    match first {
        Piece::Text(c) => line.first() == Some(c) && match_line(rest, &line[1..], ids),
        Piece::Any => (0..=line.len()).any(|skip| {
            let mut tried = ids.clone();
            let ok = match_line(rest, &line[skip..], &mut tried);
            if ok {
                *ids = tried;
            }
            ok
        }),
        Piece::Id(shown) => {
            let len = line
                .iter()
                .take_while(|c| c.is_ascii_digit() || ('a'..='f').contains(*c))
                .count();
            if len != shown.len() || line.get(len).is_some_and(char::is_ascii_alphanumeric) {
                return false;
            }
            let real: String = line[..len].iter().collect();
            pair(shown, &real, ids) && match_line(rest, &line[len..], ids)
        }
    }
}

/// Pairs a page's id with the program's, unless it (or an id it is a prefix of, or that
/// is a prefix of it) was already paired with another.
fn pair(shown: &str, real: &str, ids: &mut BTreeMap<String, String>) -> bool {
    for (page, known) in ids.iter() {
        let n = page.len().min(shown.len());
        if page[..n] == shown[..n] && known[..n] != real[..n] {
            return false;
        }
    }
    let keep = ids.get(shown).is_none_or(|k| k.len() < real.len());
    if keep {
        ids.insert(shown.to_string(), real.to_string());
    }
    true
}

/// Runs every console block of a page (a path from the top of the repository) in one
/// sandbox, and fails listing every command whose output differs from the page. With
/// `GIT_CHECKPOINT_DOCS_BLESS=1` it writes what the program printed into the page
/// instead (then read the change before committing it).
fn run_page(page: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(page);
    let text = fs::read_to_string(&path).unwrap();
    let mut session = Session::new();
    let mut outcomes = Vec::new();
    for part in parse(&text) {
        match part {
            Part::Setup { line, script } => {
                let out = session.bash(&format!("set -e\n{script}\necho {MARK}"));
                assert!(
                    out.contains(MARK),
                    "{page}:{line}: the set-up failed:\n{out}"
                );
            }
            Part::Block(steps) => outcomes.extend(session.block(page, &steps)),
        }
    }
    if std::env::var_os("GIT_CHECKPOINT_DOCS_BLESS").is_some() {
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        for o in outcomes
            .iter()
            .rev()
            .filter(|o| !o.wild || o.report.is_some())
        {
            lines.splice(o.line..o.line + o.shown, o.printed.iter().cloned());
            lines[o.line - 1] = format!("$ {}", o.ran);
        }
        fs::write(&path, lines.join("\n") + "\n").unwrap();
        return;
    }
    let reports: Vec<&str> = outcomes
        .iter()
        .filter_map(|o| o.report.as_deref())
        .collect();
    assert!(reports.is_empty(), "{}", reports.join("\n"));
}

/// The guides that have a test of their own below; every other page in `docs/` runs in
/// [`every_other_guide_runs_as_written`].
const GUIDES: &[&str] = &[
    "docs/agents.md",
    "docs/commands.md",
    "docs/sharing.md",
    "docs/storage.md",
    "docs/undo.md",
];

#[test]
fn the_readme_runs_as_written() {
    run_page("README.md");
}

#[test]
fn the_commands_guide_runs_as_written() {
    run_page("docs/commands.md");
}

#[test]
fn the_agents_guide_runs_as_written() {
    run_page("docs/agents.md");
}

#[test]
fn the_sharing_guide_runs_as_written() {
    run_page("docs/sharing.md");
}

#[test]
fn the_storage_guide_runs_as_written() {
    run_page("docs/storage.md");
}

#[test]
fn the_undo_guide_runs_as_written() {
    run_page("docs/undo.md");
}

#[test]
fn every_other_guide_runs_as_written() {
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs");
    let mut pages: Vec<String> = fs::read_dir(&docs)
        .unwrap()
        .map(|e| format!("docs/{}", e.unwrap().file_name().to_string_lossy()))
        .filter(|p| p.ends_with(".md") && !GUIDES.contains(&p.as_str()))
        .collect();
    pages.sort();
    for page in pages {
        run_page(&page);
    }
}

/// Without `--locked`, `cargo install` ignores Cargo.lock and builds the newest compatible
/// version of every dependency, which no test ran against: every install line a page
/// gives pins them.
#[test]
fn every_install_line_builds_the_versions_the_tests_ran_against() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages = vec![root.join("README.md")];
    for entry in fs::read_dir(root.join("docs")).unwrap() {
        pages.push(entry.unwrap().path());
    }
    let mut install_lines = 0;
    for page in pages
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
    {
        let text = fs::read_to_string(page).unwrap();
        for line in text.lines().filter(|l| l.contains("cargo install ")) {
            let command = &line[line.find("cargo install ").unwrap()..];
            if command.contains("--path") || command.contains("--git") {
                install_lines += 1;
                assert!(
                    command.contains("--locked"),
                    "{}: an install without --locked: {line}",
                    page.display()
                );
            }
        }
    }
    assert!(install_lines >= 1, "the README gives no install line");
}

#[test]
fn the_runner_pairs_ids_and_normalises_ages_and_times() {
    let mut ids = Ids::default();
    let expected = vec![normalise_line(
        "Saved checkpoint 5862d44 on main (2 files, 9 B)  37 seconds ago 2026-11-22T05:40:07.7Z (0.08 s)",
    )];
    let actual = vec![normalise_line(
        "Saved checkpoint 0a1b2c3 on main (2 files, 9 B) 1 hour ago 2027-01-02T03:04:05.1Z (1.25 s)",
    )];
    assert!(ids.lines_match(&expected, &actual));
    assert_eq!(
        ids.substitute("git checkpoint restore 5862 -- x"),
        "git checkpoint restore 0a1b -- x"
    );
    let other = vec!["Saved checkpoint ffffff1 on main (2 files, 9 B)".to_string()];
    let again = vec!["Saved checkpoint 5862d44 on main (2 files, 9 B)".to_string()];
    assert!(
        !ids.lines_match(&again, &other),
        "an id pairs with one id only"
    );
    let any = vec!["a".to_string(), "...".to_string(), "z [..] end".to_string()];
    let lines: Vec<String> = ["a", "b", "c", "z what ever end"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert!(ids.lines_match(&any, &lines));
}
