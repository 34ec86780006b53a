//! `git checkpoint log`

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::mpsc::{self, Sender};

use crate::ui::agent_label::AgentLabels;
use crate::ui::answer::checkpoints::{CheckpointPage, Listed, LogRow};
use crate::ui::failure::Failure;
use crate::ui::graph;
use crate::ui::json::CheckpointJson;
use crate::ui::output::{labels, relative_time};
use crate::ui::pager::{self, Pager};
use git_checkpoint::diff::{size_delta, LineDiffs, SizeDelta};
use git_checkpoint::error::ErrorKind;
use git_checkpoint::model::revision::parse_range;
use git_checkpoint::model::session::Session;
use git_checkpoint::model::{Checkpoint, Head};
use git_checkpoint::ops::log::{self, LogEntry, LogQuery};
use git_checkpoint::storage::{CheckpointReader, Snapshot, StoreRead, TreeReader};
use git_checkpoint::CheckpointId;

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
        let written = writer.join().map_err(|_| {
            Failure::error(ErrorKind::Internal, "the thread writing the output failed")
        })?;
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
    let trees = read.trees(None)?;
    let mut rows = Rows::new(&read, &trees, &entries)?;
    let graph = if args.graph {
        let nodes: Vec<_> = entries
            .iter()
            .map(|e| (e.id, e.graph_parents.clone()))
            .collect();
        Some(graph::layout(&nodes))
    } else {
        None
    };
    let age_width = rows.age_width(&entries);
    let colour = context.colour();
    for (i, entry) in entries.iter().enumerate() {
        let mut line = String::new();
        if let Some(graph) = &graph {
            line += &graph[i].node.render(colour);
        }
        line += &rows.row(entry)?.line(age_width, colour);
        line += "\n";
        if let Some(graph) = &graph {
            for row in &graph[i].after {
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

/// What the lines of a listing need beyond each entry, read once while the store is
/// open: `log`'s lines, and those of the MCP server's `list_checkpoints`.
pub struct Rows<'r, 'a> {
    read: &'a Snapshot<'a>,
    checkpoints: CheckpointReader,
    diffs: LineDiffs<'r, 'a>,
    head: Head,
    branches: Vec<(String, CheckpointId)>,
    pinned: HashSet<CheckpointId>,
    agents: AgentLabels,
    now_ns: i128,
}

impl<'r, 'a> Rows<'r, 'a> {
    /// The rows of `entries`, read through `read` and its `trees`.
    pub fn new(
        read: &'a Snapshot<'a>,
        trees: &'r TreeReader<'a>,
        entries: &[LogEntry],
    ) -> anyhow::Result<Self> {
        // Sessions are named by their short ids among all the store's sessions; only
        // read every record when a listed checkpoint belongs to one.
        let agents = match entries
            .iter()
            .any(|e| e.record.meta.iter().any(|(k, _)| k == "session"))
        {
            true => AgentLabels::new(&read.checkpoints()?),
            false => AgentLabels::new(&[]),
        };
        Ok(Rows {
            read,
            checkpoints: read.checkpoint_reader()?,
            // Each side of each diff is bounded by its record (see `expect`); a listing
            // reads no content, so it does not add up chunk lengths.
            diffs: LineDiffs::new(trees),
            head: read.head()?,
            // Fetched branches label their tips as `<remote>/<branch>`, as git labels
            // remote-tracking branches.
            branches: read.branches_and_fetched()?,
            pinned: read.pins()?,
            agents,
            now_ns: git_checkpoint::clock::now_ns(),
        })
    }

    /// The width the ages of `entries` are right-aligned to.
    pub fn age_width(&self, entries: &[LogEntry]) -> usize {
        (entries.iter())
            .map(|e| relative_time(e.record.time_ns, self.now_ns).len())
            .max()
            .unwrap_or(0)
    }

    /// The row of `entry`.
    pub fn row(&mut self, entry: &LogEntry) -> anyhow::Result<LogRow> {
        // Kept by the save that made it; computed from the trees for checkpoints older
        // than the summaries, imported ones and ones gc re-parented.
        let delta: SizeDelta = match self.checkpoints.summary(entry.id)? {
            Some(summary) => summary.into(),
            None => size_delta(&self.diffs.changes_from_parent(self.read, &entry.record)?),
        };
        Ok(LogRow {
            short: self.checkpoints.short_id(entry.id)?,
            age: relative_time(entry.record.time_ns, self.now_ns),
            labels: labels(entry.id, &self.head, &self.branches),
            pinned: self.pinned.contains(&entry.id),
            agent: self.agents.label(&entry.record),
            message: entry
                .record
                .message
                .lines()
                .next()
                .unwrap_or("")
                .to_string(),
            delta,
        })
    }

    /// The short id of `record`'s session, for a hook checkpoint.
    pub fn session(&self, record: &Checkpoint) -> Option<String> {
        self.agents.session(record)
    }
}

/// Which checkpoints a page lists: the MCP server's `list_checkpoints`.
#[derive(Debug, Default)]
pub struct PageRequest {
    /// Every checkpoint in the store, not only the current one and its ancestors.
    pub all: bool,
    /// Only those of the agent session whose id starts so.
    pub session: Option<String>,
    /// Only those of this prompt of the session.
    pub prompt: Option<u64>,
    /// Only those whose change against their first parent touched these worktree paths.
    pub paths: Vec<Vec<u8>>,
    /// Only those made on this branch.
    pub branch: Option<String>,
    /// Only those whose message holds this text, whatever its case.
    pub grep: Option<String>,
    /// Skip this many of them.
    pub offset: usize,
    /// List at most this many.
    pub limit: usize,
    /// Give `log --json`'s whole records as the structured content.
    pub verbose: bool,
}

/// A page of the checkpoints `request` picks, newest first, each listed as `log` lists
/// it: the MCP server's `list_checkpoints`.
pub fn page(context: &Context, request: PageRequest) -> anyhow::Result<CheckpointPage> {
    let store = context.open_read_store()?;
    let read = store.snapshot()?;
    let mut meta = Vec::new();
    if let Some(prefix) = &request.session {
        meta.push((
            "session".to_string(),
            Session::find(&read.checkpoints()?, prefix)?,
        ));
    }
    if let Some(prompt) = request.prompt {
        meta.push(("prompt".to_string(), prompt.to_string()));
    }
    let query = LogQuery {
        all: request.all,
        // One more than the page, to know whether another follows; the branch is
        // filtered here, after the query.
        limit: (request.branch.is_none()).then_some(request.offset + request.limit + 1),
        meta,
        paths: request.paths,
        grep: request.grep,
        ..LogQuery::default()
    };
    let mut matching = log::log(&read, &query)?.into_iter().filter(|entry| {
        (request.branch.as_ref()).is_none_or(|branch| entry.record.branch.as_ref() == Some(branch))
    });
    let entries: Vec<LogEntry> = matching
        .by_ref()
        .skip(request.offset)
        .take(request.limit)
        .collect();
    let more = matching.next().is_some();
    let trees = read.trees(None)?;
    let mut rows = Rows::new(&read, &trees, &entries)?;
    let current = read.current()?;
    let next_offset = more.then_some(request.offset + entries.len());
    let listed = entries
        .into_iter()
        .map(|entry| {
            Ok(Listed {
                row: rows.row(&entry)?,
                session: rows.session(&entry.record),
                current: current == Some(entry.id),
                id: entry.id,
                record: entry.record,
            })
        })
        .collect::<anyhow::Result<_>>()?;
    Ok(CheckpointPage {
        listed,
        next_offset,
        verbose: request.verbose,
        has_store: true,
    })
}
