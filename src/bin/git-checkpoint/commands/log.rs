//! `git checkpoint log`

use std::io::Write;

use crate::ui::graph;
use crate::ui::output::{
    format_labels, format_size_delta, labels, paint, relative_time, style, CheckpointJson,
};
use git_checkpoint::diff::{changes_from_parent, size_delta};
use git_checkpoint::format::text::escape_controls;
use git_checkpoint::model::session::Session;
use git_checkpoint::ops::log::{self, LogQuery};

use git_checkpoint::storage::StoreRead;

use super::{Context, Output};

/// List checkpoints, newest first.
///
/// Without --all: the current checkpoint and its ancestors. With --all: every checkpoint
/// in the store, including the safety checkpoints made before restores, the lines a
/// restore left behind, and the checkpoints `fetch` brought in. Each line: short id, age,
/// branch labels (HEAD -> the current branch, <remote>/<branch> for fetched ones),
/// message, and what changed against the parent ([files +grown -shrunk]).
/// Children always come before parents, and each line of history is listed in one run.
/// On a terminal the output is coloured and paged (GIT_PAGER, core.pager, PAGER, less).
///
/// Examples:
///
///   git checkpoint log -n 5
///
///   git checkpoint log --graph --all
///
///   git checkpoint log --session 4f2a9c1d --all --json
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Every checkpoint in the store, not only the current line.
    #[arg(long)]
    all: bool,
    /// Show at most this many.
    #[arg(short = 'n', long = "max-count", value_name = "N")]
    max_count: Option<usize>,
    /// Draw the DAG beside the list, as `git log --graph` does.
    #[arg(long)]
    graph: bool,
    /// Only checkpoints whose metadata has this key=value pair (repeatable: all must
    /// match). The graph joins each one to its nearest listed ancestor.
    #[arg(long = "meta", value_name = "key=value", value_parser = super::save::parse_meta)]
    meta: Vec<(String, String)>,
    /// Only the checkpoints of the agent session whose id starts so (a unique prefix, as
    /// `git checkpoint sessions` shows it); use with --all to see every line it made.
    #[arg(long, value_name = "id-prefix")]
    session: Option<String>,
}

/// Runs `log`.
pub fn run(context: &Context, args: Args) -> anyhow::Result<()> {
    let output = render(context, args)?;
    context.emit(output)
}

/// Everything `log` prints, made while the store is open: each line's change summary
/// needs a diff, so all are made before anything is shown.
fn render(context: &Context, args: Args) -> anyhow::Result<Output> {
    let store = context.open_read_store()?;
    let read = store.snapshot()?;
    let mut meta = args.meta;
    if let Some(prefix) = &args.session {
        let session = Session::find(&read.checkpoints()?, prefix)?;
        meta.push(("session".to_string(), session));
    }
    let query = LogQuery {
        all: args.all,
        limit: args.max_count,
        meta,
    };
    let entries = log::log(&read, &query)?;
    let pinned = read.pins()?;
    if context.json {
        let list = entries
            .iter()
            .map(|e| {
                Ok(CheckpointJson {
                    pinned: pinned.contains(&e.id),
                    ..CheckpointJson::new(e.id, read.short_id(e.id)?, &e.record)
                })
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        return Output::json(&list);
    }
    if context.quiet {
        return Ok(Output::Nothing);
    }
    let head = read.head()?;
    // Fetched branches label their tips as `<remote>/<branch>`, as git labels
    // remote-tracking branches.
    let branches = read.branches_and_fetched()?;
    // Each side of each diff is bounded by its record (see `expect` below); log reads no
    // content, so it does not add up chunk lengths.
    let reader = read.trees(None)?;
    let now = git_checkpoint::clock::now_ns();
    let ages: Vec<String> = entries
        .iter()
        .map(|e| relative_time(e.record.time_ns, now))
        .collect();
    let age_width = ages.iter().map(String::len).max().unwrap_or(0);
    let rows = if args.graph {
        let nodes: Vec<_> = entries
            .iter()
            .map(|e| (e.id, e.graph_parents.clone()))
            .collect();
        Some(graph::layout(&nodes))
    } else {
        None
    };

    let colour = context.colour();
    let mut out = Vec::new();
    for (i, (entry, age)) in entries.iter().zip(&ages).enumerate() {
        let changes = changes_from_parent(&read, &reader, &entry.record)?;
        let mut line = String::new();
        if let Some(rows) = &rows {
            line += &rows[i].node.render(colour);
        }
        line += &paint(&read.short_id(entry.id)?, style::ID, colour);
        line += " ";
        line += &paint(&format!("{age:>age_width$}"), style::DIM, colour);
        line += "  ";
        let mut labels = format_labels(&labels(entry.id, &head, &branches), colour);
        if pinned.contains(&entry.id) {
            if !labels.is_empty() {
                labels += " ";
            }
            labels += &paint("[pinned]", style::DIM, colour);
        }
        let message = escape_controls(entry.record.message.lines().next().unwrap_or(""));
        for part in [labels.as_str(), &message] {
            if !part.is_empty() {
                line += part;
                line += " ";
            }
        }
        line += &paint(
            &format_size_delta(&size_delta(&changes)),
            style::DIM,
            colour,
        );
        writeln!(out, "{line}")?;
        if let Some(rows) = &rows {
            for row in &rows[i].after {
                writeln!(out, "{}", row.render(colour))?;
            }
        }
    }
    Ok(Output::Paged(out))
}
