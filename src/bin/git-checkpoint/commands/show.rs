//! `git checkpoint show`

use std::io::Write;

use crate::ui::answer::show::ShowAnswer;
use crate::ui::json::{CheckpointJson, ShowJson};
use crate::ui::output::{format_labels, labels, paint, relative_time, short_commit, style};
use crate::ui::patch;
use git_checkpoint::clock::rfc3339;
use git_checkpoint::diff::content::{ContentReader, EXPAND_LIMIT};
use git_checkpoint::diff::{changes_from_parent, checkpoint_root, diff_trees, Change, PathFilter};
use git_checkpoint::format::size::human_bytes;
use git_checkpoint::text::escape_controls;

use git_checkpoint::model::Checkpoint;
use git_checkpoint::storage::{ReadStore, Snapshot, StoreRead, Turn};
use git_checkpoint::CheckpointId;

use super::{Context, FormatArgs, Output};

/// Show a checkpoint: its record, metadata and attachments, and its changes.
///
/// The changes are against its first parent (against nothing for the first
/// checkpoint), as a unified diff, or with --stat, --name-status or --name-only as a
/// summary.
///
/// A prompt's turn, `<session>:turn<N>` (`turn-1` for the last prompt), shows the
/// prompt's checkpoint (its message is the prompt) and everything the turn changed: from
/// that checkpoint to the last one the session saved before its next prompt.
///
/// Examples:
///
///   git checkpoint show @
///
///   git checkpoint show 3fa9c1e --stat
///
///   git checkpoint show main~2 --json
///
///   git checkpoint show 5f1c:turn-1 --stat
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The checkpoint or prompt turn (default: the current checkpoint).
    #[arg(default_value = "@")]
    rev: String,
    #[command(flatten)]
    format: FormatArgs,
}

/// Runs `show`.
pub fn run(context: &Context, args: Args) -> anyhow::Result<()> {
    let output = render(context, args, context.colour())?;
    context.emit(output)
}

/// What `show` shows of a checkpoint or a prompt's turn, read while the store is open:
/// handed to the function given to [`with_checkpoint`], which makes its output from it.
pub struct Shown<'a> {
    /// The store's snapshot, for ids, labels and the like.
    pub read: &'a Snapshot<'a>,
    /// The checkpoint (a turn's first).
    pub id: CheckpointId,
    /// Its shortest unique abbreviation.
    pub short: String,
    /// Its record.
    pub record: Checkpoint,
    /// The turn, when the revision named one.
    pub turn: Option<Turn>,
    /// Its changes against its first parent, or a turn's from its start to its end.
    pub changes: Vec<Change>,
    /// Reads what each change holds.
    pub reader: &'a ContentReader<'a>,
}

impl Shown<'_> {
    /// `show --json`'s document.
    pub fn json(&self) -> anyhow::Result<ShowJson> {
        Ok(ShowJson {
            checkpoint: CheckpointJson::new(self.id, self.short.clone(), &self.record),
            turn_end: self.turn.map(|turn| turn.end.hex()),
            changes: patch::summarize(&self.changes, self.reader)?,
        })
    }
}

/// Opens the store read-only, reads checkpoint or turn `rev` and its changes, and hands
/// them to `f`; the store is closed when this returns (`show`, `browse` and the MCP
/// server's `show`).
pub fn with_checkpoint<T>(
    context: &Context,
    rev: &str,
    f: impl FnOnce(&Shown<'_>) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    let store = context.open_read_store()?;
    let read = store.snapshot()?;
    let turn = read.resolve_turn(rev)?;
    let id = match turn {
        Some(turn) => turn.start,
        None => read.resolve(rev)?,
    };
    read_shown(&store, &read, id, turn, f)
}

/// [`with_checkpoint`] for checkpoint `id`, or, with `turn`, the turn from its start to
/// its end, already resolved: `browse`'s selected row.
pub fn with_resolved<T>(
    context: &Context,
    id: CheckpointId,
    turn: Option<Turn>,
    f: impl FnOnce(&Shown<'_>) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    let store = context.open_read_store()?;
    let read = store.snapshot()?;
    read_shown(&store, &read, id, turn, f)
}

/// Reads what `show` shows of checkpoint `id` (or `turn`) from the open store and hands
/// it to `f`.
fn read_shown<T>(
    store: &ReadStore,
    read: &Snapshot<'_>,
    id: CheckpointId,
    turn: Option<Turn>,
    f: impl FnOnce(&Shown<'_>) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    let record = read.checkpoint(id)?;
    // Checked against the store, and each side bounded by its record: a crafted tree
    // that expands past it is an error, not a walk without end.
    let tree_reader = read.checked_trees(None)?;
    let changes = match turn {
        // The turn's changes: from the worktree as the prompt found it to as it left it.
        Some(turn) => diff_trees(
            &tree_reader,
            Some(checkpoint_root(read, &tree_reader, turn.start)?),
            Some(checkpoint_root(read, &tree_reader, turn.end)?),
            &PathFilter::default(),
        )?,
        None => changes_from_parent(read, &tree_reader, &record)?,
    };
    let chunks = read.chunks()?;
    // What the records say bounds what is read, not what the chunks expand to.
    let reader = ContentReader::new(&store.hasher, &chunks, None).expanding_at_most(EXPAND_LIMIT);
    let short = read.short_id(id)?;
    f(&Shown {
        read,
        id,
        short,
        record,
        turn,
        changes,
        reader: &reader,
    })
}

/// `show --stat`'s text, uncoloured, and `show --json`'s document of `rev`: the MCP
/// server's `show`.
pub fn answer(context: &Context, rev: &str) -> anyhow::Result<ShowAnswer> {
    with_checkpoint(context, rev, |shown| {
        let mut text = Vec::new();
        write_shown(&mut text, patch::Format::Stat, false, shown)?;
        Ok(ShowAnswer {
            text,
            document: shown.json()?,
        })
    })
}

/// Everything `show` prints, the diff included, made while the store is open.
fn render(context: &Context, args: Args, colour: bool) -> anyhow::Result<Output> {
    let format = args.format.format();
    with_checkpoint(context, &args.rev, |shown| {
        render_shown(context, format, colour, shown)
    })
}

/// `show`'s output, in `format` and coloured if `colour`, of what [`with_checkpoint`]
/// read.
fn render_shown(
    context: &Context,
    format: patch::Format,
    colour: bool,
    shown: &Shown<'_>,
) -> anyhow::Result<Output> {
    if context.json {
        return Output::json(&shown.json()?);
    }
    if context.quiet {
        return Ok(Output::Nothing);
    }
    let mut out = Vec::new();
    write_shown(&mut out, format, colour, shown)?;
    Ok(Output::Paged(out))
}

/// Writes `show`'s text of what [`with_checkpoint`] read to `out`, as it is made: the
/// record (then a flush, so that a reader as `browse` can show it while the changes are
/// made), then the changes in `format`, file by file.
pub fn write_shown(
    out: &mut impl Write,
    format: patch::Format,
    colour: bool,
    shown: &Shown<'_>,
) -> anyhow::Result<()> {
    write_header(
        out,
        shown.read,
        shown.id,
        &shown.record,
        shown.turn.map(|turn| turn.end),
        colour,
    )?;
    out.flush()?;
    patch::write_changes(out, &shown.changes, shown.reader, format, colour)?;
    Ok(())
}

/// The checkpoint's header as `git show` prints a commit's: id and labels, its fields,
/// then its message; for a prompt's turn, where the turn ends (`turn_end`).
fn write_header(
    out: &mut impl Write,
    read: &Snapshot,
    id: CheckpointId,
    record: &Checkpoint,
    turn_end: Option<CheckpointId>,
    colour: bool,
) -> anyhow::Result<()> {
    let head = read.head()?;
    let branches = read.branches_and_fetched()?;
    let now = git_checkpoint::clock::now_ns();

    let labels = format_labels(&labels(id, &head, &branches), colour);
    let title = paint(&format!("checkpoint {id}"), style::ID, colour);
    writeln!(
        out,
        "{title}{}{labels}",
        if labels.is_empty() { "" } else { " " }
    )?;
    // Every value but the ids and sizes may come from a person or an agent.
    let field = |out: &mut dyn Write, name: &str, value: &str| {
        writeln!(out, "{name:<8}{}", escape_controls(value))
    };
    if !record.parents.is_empty() {
        let parents = record
            .parents
            .iter()
            .map(|&p| read.short_id(p))
            .collect::<Result<Vec<_>, _>>()?;
        field(out, "Parent:", &parents.join(" "))?;
    }
    field(
        out,
        "Date:",
        &format!(
            "{} ({})",
            rfc3339(record.time_ns),
            relative_time(record.time_ns, now)
        ),
    )?;
    if let Some(end) = turn_end {
        field(
            out,
            "Turn:",
            &format!("changes up to {}", read.short_id(end)?),
        )?;
    }
    if let Some(branch) = &record.branch {
        field(out, "Branch:", branch)?;
    }
    if let Some(commit) = &record.git_head {
        let on = record
            .git_branch
            .as_deref()
            .map(|b| format!(" ({b})"))
            .unwrap_or_default();
        field(out, "Git:", &format!("{}{on}", short_commit(commit)))?;
    }
    for (i, (key, value)) in record.meta.iter().enumerate() {
        field(
            out,
            if i == 0 { "Meta:" } else { "" },
            &format!("{key}={value}"),
        )?;
    }
    for (i, attachment) in record.attachments.iter().enumerate() {
        field(
            out,
            if i == 0 { "Attach:" } else { "" },
            &format!("{} ({})", attachment.name, human_bytes(attachment.size)),
        )?;
    }
    field(
        out,
        "Files:",
        &format!("{} ({})", record.files, human_bytes(record.bytes)),
    )?;
    writeln!(out)?;
    for line in record.message.lines() {
        writeln!(out, "    {}", escape_controls(line))?;
    }
    if !record.message.is_empty() {
        writeln!(out)?;
    }
    Ok(())
}
