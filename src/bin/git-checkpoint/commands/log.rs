//! `git checkpoint log`

use std::path::PathBuf;
use std::sync::mpsc::{self, Sender};

use crate::ui::agent_label::AgentLabels;
use crate::ui::graph;
use crate::ui::json::CheckpointJson;
use crate::ui::output::{format_labels, format_size_delta, labels, paint, relative_time, style};
use crate::ui::pager::{self, Pager};
use git_checkpoint::diff::{size_delta, LineDiffs, SizeDelta};
use git_checkpoint::format::text::escape_controls;
use git_checkpoint::model::revision::parse_range;
use git_checkpoint::model::session::Session;
use git_checkpoint::ops::log::{self, LogEntry, LogQuery};
use git_checkpoint::storage::{Snapshot, StoreRead};

use super::{Context, Output};

/// List checkpoints, newest first, or the ones a query picks.
///
/// Ask which ones touched a path, came from a session, or lie between two revisions.
/// Without a revision or --all: the current checkpoint and its ancestors. With
/// revisions: the checkpoints reachable from them (branches, `<remote>/<branch>`, any
/// revision); `A..B` lists those reachable from B and not from A (`main..origin/main`:
/// what a fetch brought that main lacks). With --all: every checkpoint
/// in the store, including the safety checkpoints made before restores, the lines a
/// restore left behind, and the checkpoints `fetch` brought in. Each line: short id, age,
/// branch labels (HEAD -> the current branch, <remote>/<branch> for fetched ones),
/// the agent, session and prompt of a hook checkpoint (`claude 4f2a9c1d:prompt3`),
/// message, and what changed against the parent ([files +grown -shrunk]).
/// `-- <path>…` keeps the checkpoints whose change against their first parent touched
/// those files or directories (decided from the trees, without reading content);
/// --session, --grep and --meta filter further, and all filters combine.
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
///
///   git checkpoint log --all -- builtin/add.c
///
///   git checkpoint log --graph main ckpt/main
///
///   git checkpoint log main..origin/main --grep fix
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Start from these revisions instead of the current checkpoint; `A..B` for the
    /// checkpoints reachable from B and not from A.
    #[arg(value_name = "rev")]
    revs: Vec<String>,
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
    /// Only checkpoints whose message holds this text (case does not matter).
    #[arg(long, value_name = "text")]
    grep: Option<String>,
    /// Only checkpoints whose change touched these files or directories (relative to
    /// the current directory).
    #[arg(last = true, value_name = "path")]
    paths: Vec<PathBuf>,
}

impl Args {
    /// Whether anything but the revisions narrows the list (an empty list is then an
    /// answer, not a store without checkpoints).
    fn filtered(&self) -> bool {
        !self.meta.is_empty()
            || self.session.is_some()
            || self.grep.is_some()
            || !self.paths.is_empty()
            || !self.revs.is_empty()
    }
}

/// Runs `log`.
///
/// The text list streams: each line goes out as soon as it is made, so the first screen
/// shows at once however long the history. Lines are made on this thread with the store
/// open and handed to a writer thread over a channel that never blocks, so the store is
/// closed as soon as the last line is made, whether or not a pager (or a terminal that
/// does not take the output) has read them: a pager left open never keeps a save or an
/// agent's hook waiting for the store.
pub fn run(context: &Context, args: Args) -> anyhow::Result<()> {
    if context.json || context.quiet {
        let output = render_json(context, args)?;
        return context.emit(output);
    }
    let pager = Pager::command(&context.workspace.repo);
    std::thread::scope(|scope| {
        let (lines, received) = mpsc::channel();
        let writer = scope.spawn(move || pager::stream(pager.as_deref(), received));
        let made = render_text(context, args, &lines);
        drop(lines);
        let written = writer
            .join()
            .map_err(|_| anyhow::anyhow!("the thread writing the output failed"))?;
        made?;
        Ok(written?)
    })
}

/// The checkpoints `args` asks for, read through `read`.
fn entries(context: &Context, read: &Snapshot, args: &Args) -> anyhow::Result<Vec<LogEntry>> {
    let mut meta = args.meta.clone();
    if let Some(prefix) = &args.session {
        let session = Session::find(&read.checkpoints()?, prefix)?;
        meta.push(("session".to_string(), session));
    }
    let (mut from, mut exclude) = (Vec::new(), Vec::new());
    for rev in &args.revs {
        match parse_range(rev)? {
            Some(range) => {
                exclude.push(read.resolve(range.from)?);
                from.push(read.resolve(range.to)?);
            }
            None => from.push(read.resolve(rev)?),
        }
    }
    let query = LogQuery {
        all: args.all,
        limit: args.max_count,
        meta,
        from,
        exclude,
        paths: context.workspace.repo.worktree_paths(&args.paths)?,
        grep: args.grep.clone(),
    };
    Ok(log::log(read, &query)?)
}

/// The JSON list (or nothing, with `-q`), made while the store is open.
fn render_json(context: &Context, args: Args) -> anyhow::Result<Output> {
    let store = context.open_read_store()?;
    let read = store.snapshot()?;
    let entries = entries(context, &read, &args)?;
    if !context.json {
        return Ok(Output::Nothing);
    }
    let pinned = read.pins()?;
    let checkpoints = read.checkpoint_reader()?;
    let list = entries
        .iter()
        .map(|e| {
            Ok(CheckpointJson {
                pinned: pinned.contains(&e.id),
                ..CheckpointJson::new(e.id, checkpoints.short_id(e.id)?, &e.record)
            })
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    Output::json(&list)
}

/// Makes the text list line by line with the store open, sending each line (with the
/// graph rows after it) to `out` as soon as it is made; stops early, without an error,
/// once nothing receives them (the reader went away).
fn render_text(context: &Context, args: Args, out: &Sender<Vec<u8>>) -> anyhow::Result<()> {
    let store = context.open_read_store()?;
    let read = store.snapshot()?;
    let entries = entries(context, &read, &args)?;
    if entries.is_empty() && !args.filtered() {
        context.explain_empty(&read)?;
    }
    let pinned = read.pins()?;
    let head = read.head()?;
    // Fetched branches label their tips as `<remote>/<branch>`, as git labels
    // remote-tracking branches.
    let branches = read.branches_and_fetched()?;
    // Each side of each diff is bounded by its record (see `expect`); log reads no
    // content, so it does not add up chunk lengths.
    let checkpoints = read.checkpoint_reader()?;
    let reader = read.trees(None)?;
    let mut diffs = LineDiffs::new(&reader);
    // Sessions are named by their short ids among all the store's sessions; only read
    // every record when a listed checkpoint belongs to one.
    let agents = match entries
        .iter()
        .any(|e| e.record.meta.iter().any(|(k, _)| k == "session"))
    {
        true => AgentLabels::new(&read.checkpoints()?),
        false => AgentLabels::new(&[]),
    };
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
    for (i, (entry, age)) in entries.iter().zip(&ages).enumerate() {
        // Kept by the save that made it; computed from the trees for checkpoints older
        // than the summaries, imported ones and ones gc re-parented.
        let delta: SizeDelta = match checkpoints.summary(entry.id)? {
            Some(summary) => summary.into(),
            None => size_delta(&diffs.changes_from_parent(&read, &entry.record)?),
        };
        let mut line = String::new();
        if let Some(rows) = &rows {
            line += &rows[i].node.render(colour);
        }
        line += &paint(&checkpoints.short_id(entry.id)?, style::ID, colour);
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
        let agent = match agents.label(&entry.record) {
            Some(label) => paint(&escape_controls(&label), style::META, colour),
            None => String::new(),
        };
        let message = escape_controls(entry.record.message.lines().next().unwrap_or(""));
        for part in [labels.as_str(), &agent, &message] {
            if !part.is_empty() {
                line += part;
                line += " ";
            }
        }
        line += &paint(&format_size_delta(&delta), style::DIM, colour);
        line += "\n";
        if let Some(rows) = &rows {
            for row in &rows[i].after {
                line += &row.render(colour);
                line += "\n";
            }
        }
        if out.send(line.into_bytes()).is_err() {
            break;
        }
        git_checkpoint::fault::point("log-line-sent");
    }
    Ok(())
}
