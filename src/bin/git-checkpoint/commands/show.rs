//! `git checkpoint show`

use std::io::Write;

use crate::ui::json::{CheckpointJson, ShowJson};
use crate::ui::output::{format_labels, labels, paint, relative_time, short_commit, style};
use crate::ui::patch;
use git_checkpoint::clock::rfc3339;
use git_checkpoint::diff::content::ContentReader;
use git_checkpoint::diff::{changes_from_parent, Change};
use git_checkpoint::format::size::human_bytes;
use git_checkpoint::format::text::escape_controls;

use git_checkpoint::model::Checkpoint;
use git_checkpoint::storage::{Snapshot, StoreRead};
use git_checkpoint::CheckpointId;

use super::{Context, FormatArgs, Output};

/// Show a checkpoint: its record, metadata and attachments, and its changes.
///
/// The changes are against its first parent (against nothing for the first
/// checkpoint), as a unified diff, or with --stat, --name-status or --name-only as a
/// summary.
///
/// Examples:
///
///   git checkpoint show @
///
///   git checkpoint show 3fa9c1e --stat
///
///   git checkpoint show main~2 --json
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The checkpoint (default: the current one).
    #[arg(default_value = "@")]
    rev: String,
    #[command(flatten)]
    format: FormatArgs,
}

/// Runs `show`.
pub fn run(context: &Context, args: Args) -> anyhow::Result<()> {
    let output = render(context, args)?;
    context.emit(output)
}

/// What `show` shows of a checkpoint, read while the store is open: handed to the
/// function given to [`with_checkpoint`], which makes its output from it.
pub struct Shown<'a> {
    /// The store's snapshot, for ids, labels and the like.
    pub read: &'a Snapshot<'a>,
    /// The checkpoint.
    pub id: CheckpointId,
    /// Its shortest unique abbreviation.
    pub short: String,
    /// Its record.
    pub record: Checkpoint,
    /// Its changes against its first parent.
    pub changes: Vec<Change>,
    /// Reads what each change holds.
    pub reader: &'a ContentReader<'a>,
}

/// Opens the store read-only, reads checkpoint `rev` and its changes, and hands them to
/// `f`; the store is closed when this returns (`show`, and the MCP server's `show`).
pub fn with_checkpoint<T>(
    context: &Context,
    rev: &str,
    f: impl FnOnce(&Shown<'_>) -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    let store = context.open_read_store()?;
    let read = store.snapshot()?;
    let id = read.resolve(rev)?;
    let record = read.checkpoint(id)?;
    // Checked against the store, and each side bounded by its record: a crafted tree
    // that expands past it is an error, not a walk without end.
    let tree_reader = read.checked_trees(None)?;
    let changes = changes_from_parent(&read, &tree_reader, &record)?;
    let chunks = read.chunks()?;
    let reader = ContentReader::new(&store.hasher, &chunks, None);
    let short = read.short_id(id)?;
    f(&Shown {
        read: &read,
        id,
        short,
        record,
        changes,
        reader: &reader,
    })
}

/// Everything `show` prints, the diff included, made while the store is open.
fn render(context: &Context, args: Args) -> anyhow::Result<Output> {
    let format = args.format.format();
    with_checkpoint(context, &args.rev, |shown| {
        render_shown(context, format, shown)
    })
}

/// `show`'s output, in `format`, of what [`with_checkpoint`] read.
pub fn render_shown(
    context: &Context,
    format: crate::ui::patch::Format,
    shown: &Shown<'_>,
) -> anyhow::Result<Output> {
    let Shown {
        read,
        id,
        short,
        record,
        changes,
        reader,
    } = shown;
    let (read, id, reader) = (*read, *id, *reader);
    if context.json {
        return Output::json(&ShowJson {
            checkpoint: CheckpointJson::new(id, short.clone(), record),
            changes: patch::summarize(changes, reader)?,
        });
    }
    if context.quiet {
        return Ok(Output::Nothing);
    }
    let head = read.head()?;
    let branches = read.branches_and_fetched()?;
    let now = git_checkpoint::clock::now_ns();

    let colour = context.colour();
    let mut out = Vec::new();
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
        field(&mut out, "Parent:", &parents.join(" "))?;
    }
    field(
        &mut out,
        "Date:",
        &format!(
            "{} ({})",
            rfc3339(record.time_ns),
            relative_time(record.time_ns, now)
        ),
    )?;
    if let Some(branch) = &record.branch {
        field(&mut out, "Branch:", branch)?;
    }
    if let Some(commit) = &record.git_head {
        let on = record
            .git_branch
            .as_deref()
            .map(|b| format!(" ({b})"))
            .unwrap_or_default();
        field(&mut out, "Git:", &format!("{}{on}", short_commit(commit)))?;
    }
    for (i, (key, value)) in record.meta.iter().enumerate() {
        field(
            &mut out,
            if i == 0 { "Meta:" } else { "" },
            &format!("{key}={value}"),
        )?;
    }
    for (i, attachment) in record.attachments.iter().enumerate() {
        field(
            &mut out,
            if i == 0 { "Attach:" } else { "" },
            &format!("{} ({})", attachment.name, human_bytes(attachment.size)),
        )?;
    }
    field(
        &mut out,
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
    patch::write_changes(&mut out, changes, reader, format, colour)?;
    Ok(Output::Paged(out))
}
