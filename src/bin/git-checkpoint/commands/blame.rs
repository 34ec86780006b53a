//! `git checkpoint blame`

use std::io::Write;
use std::path::PathBuf;

use crate::ui::agent_label::AgentLabels;
use crate::ui::failure::Failure;
use crate::ui::json::BlameLineJson;
use crate::ui::output::{paint, relative_time, style};
use git_checkpoint::diff::content::ContentReader;
use git_checkpoint::model::Checkpoint;
use git_checkpoint::ops::blame::{blame, Blame};
use git_checkpoint::storage::StoreRead;
use git_checkpoint::text::{escape_controls, escape_controls_keeping_tabs};

use super::{Context, Output};

/// Show which checkpoint last changed each line of a file.
///
/// For an agent's checkpoints, also the agent, session and prompt. Walks first parents from the checkpoint given (default: the current one), diffs the
/// file's successive versions, and names for each line the checkpoint that made it what
/// it is. Checkpoints that left the file as it was cost no read. Each line: short id,
/// who (`claude 4f2a9c1d:prompt3` for a hook checkpoint, else the message), age, line
/// number and the line. --porcelain prints git blame's porcelain format, with the
/// checkpoint's metadata as header lines.
///
/// Examples:
///
///   git checkpoint blame src/main.rs
///
///   git checkpoint blame --porcelain main~3 -- builtin/add.c
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The checkpoint to start from, then the file (`-- <path>` also works); with one
    /// argument, the file as the current checkpoint holds it.
    #[arg(value_name = "rev", num_args = 1..=2, required = true)]
    args: Vec<String>,
    /// The file, after `--`.
    #[arg(last = true, value_name = "path")]
    path: Vec<PathBuf>,
    /// git blame's machine-readable format.
    #[arg(long)]
    porcelain: bool,
}

/// Runs `blame`.
pub fn run(context: &Context, args: Args) -> anyhow::Result<()> {
    let output = render(context, args)?;
    context.emit(output)
}

/// A metadata value of `record`.
fn meta<'a>(record: &'a Checkpoint, key: &str) -> Option<&'a str> {
    record
        .meta
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

/// Everything `blame` prints, made while the store is open.
fn render(context: &Context, args: Args) -> anyhow::Result<Output> {
    let (rev, path) = match (args.args.as_slice(), args.path.as_slice()) {
        ([path], []) => ("@", PathBuf::from(path)),
        ([rev], [path]) => (rev.as_str(), path.clone()),
        ([rev, path], []) => (rev.as_str(), PathBuf::from(path)),
        _ => {
            return Err(Failure::input(
                "blame takes one file: 'blame [<rev>] <path>' or 'blame <rev> -- <path>'",
            ))
        }
    };
    let path = context.workspace.repo.worktree_path(&path)?;
    let store = context.open_read_store()?;
    let read = store.snapshot()?;
    let start = read.resolve(rev)?;
    let trees = read.checked_trees(None)?;
    let chunks = read.chunks()?;
    let content = ContentReader::new(&store.hasher, &chunks, None);
    let found = blame(&read, &trees, &content, start, &path)?;
    let any_session = found.origins.values().any(|r| meta(r, "session").is_some());
    let agents = match any_session {
        true => AgentLabels::new(&read.checkpoints()?),
        false => AgentLabels::new(&[]),
    };
    let mut short = std::collections::HashMap::new();
    for &id in found.origins.keys() {
        short.insert(id, read.short_id(id)?);
    }
    if context.json {
        let lines: Vec<BlameLineJson> = found
            .lines
            .iter()
            .enumerate()
            .map(|(n, line)| {
                let record = &found.origins[&line.origin];
                BlameLineJson {
                    line: n + 1,
                    id: line.origin.to_string(),
                    short_id: short[&line.origin].clone(),
                    origin_line: line.origin_line,
                    agent: meta(record, "session")
                        .and(meta(record, "agent"))
                        .map(str::to_string),
                    session: meta(record, "session").map(str::to_string),
                    prompt: meta(record, "prompt").and_then(|p| p.parse().ok()),
                    text: String::from_utf8_lossy(strip_eol(&line.text)).into_owned(),
                }
            })
            .collect();
        return Output::json(&lines);
    }
    if context.quiet {
        return Ok(Output::Nothing);
    }
    let path_text = String::from_utf8_lossy(&path).into_owned();
    if args.porcelain {
        return Ok(Output::Plain(porcelain(&found, &path_text)?));
    }
    let now = git_checkpoint::clock::now_ns();
    let who = |record: &Checkpoint| {
        agents
            .label(record)
            .unwrap_or_else(|| record.message.lines().next().unwrap_or("").to_string())
    };
    let who_width = found
        .origins
        .values()
        .map(|r| who(r).chars().count().min(30))
        .max()
        .unwrap_or(0);
    let ages: std::collections::HashMap<_, _> = found
        .origins
        .iter()
        .map(|(&id, r)| (id, relative_time(r.time_ns, now)))
        .collect();
    let age_width = ages.values().map(String::len).max().unwrap_or(0);
    let number_width = found.lines.len().to_string().len();
    let colour = context.colour();
    let mut out = Vec::new();
    for (n, line) in found.lines.iter().enumerate() {
        let record = &found.origins[&line.origin];
        let who: String = who(record).chars().take(30).collect();
        writeln!(
            out,
            "{} ({:<who_width$} {:>age_width$} {:>number_width$}) {}",
            paint(&short[&line.origin], style::ID, colour),
            escape_controls(&who),
            ages[&line.origin],
            n + 1,
            // The line's tabs are its layout, as `show` and `diff` keep them.
            escape_controls_keeping_tabs(&String::from_utf8_lossy(strip_eol(&line.text))),
        )?;
    }
    Ok(Output::Paged(out))
}

/// `line` without its `\n` (or `\r\n`).
fn strip_eol(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// git blame's porcelain format: per group of consecutive lines from one checkpoint, a
/// line `<id> <origin line> <final line> <count>`, then, the first time a checkpoint
/// appears, its header lines (`message`, `time`, its metadata as `meta <key> <value>`,
/// `filename`); each line of the file follows its header line after a tab, as it is.
fn porcelain(found: &Blame, path: &str) -> anyhow::Result<Vec<u8>> {
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let lines = &found.lines;
    let mut n = 0;
    while n < lines.len() {
        let first = &lines[n];
        let mut count = 1;
        while n + count < lines.len()
            && lines[n + count].origin == first.origin
            && lines[n + count].origin_line == first.origin_line + count
        {
            count += 1;
        }
        for k in 0..count {
            let line = &lines[n + k];
            match k {
                0 => writeln!(
                    out,
                    "{} {} {} {count}",
                    line.origin,
                    line.origin_line,
                    n + 1
                )?,
                _ => writeln!(out, "{} {} {}", line.origin, line.origin_line, n + k + 1)?,
            }
            if k == 0 && seen.insert(line.origin) {
                let record = &found.origins[&line.origin];
                let one_line =
                    |text: &str| escape_controls(text.lines().next().unwrap_or("")).into_owned();
                writeln!(out, "message {}", one_line(&record.message))?;
                writeln!(out, "time {}", record.time_ns.div_euclid(1_000_000_000))?;
                for (key, value) in &record.meta {
                    writeln!(out, "meta {} {}", one_line(key), one_line(value))?;
                }
                writeln!(out, "filename {}", escape_controls(path))?;
            }
            out.push(b'\t');
            out.extend_from_slice(&line.text);
            if !line.text.ends_with(b"\n") {
                out.push(b'\n');
            }
        }
        n += count;
    }
    Ok(out)
}
