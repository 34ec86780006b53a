//! `git checkpoint revert`

use std::path::PathBuf;

use git_checkpoint::diff::content::Content;
use git_checkpoint::diff::Change;
use git_checkpoint::format::text::escape_controls;
use git_checkpoint::model::tree::Node;
use git_checkpoint::ops::revert::{
    dry_run, revert, ConflictStyle, PathReport, RevertOptions, RevertReport, Status, Undo, Written,
};
use git_checkpoint::storage::StoreRead;
use git_checkpoint::Error;

use super::Context;
use crate::ui::json::{self, RevertJson};
use crate::ui::output::show_path;

/// Undo what a checkpoint changed, keeping everything since.
///
/// Each path the checkpoint changed against its first parent is merged three ways, as
/// `git revert` merges a commit: the base is the checkpoint, ours the worktree as it is
/// now, theirs the checkpoint's parent. A path nothing changed since goes back to what
/// the parent had (written, deleted or recreated); a text file changed since too is
/// merged line by line, and where both changed the same lines it gets git's conflict
/// markers (merge.conflictStyle: merge or diff3; zdiff3 is written as diff3). Binary
/// files, symlinks, files the checkpoint created or deleted and the worktree changed
/// since are conflicts left as the worktree has them. The executable bit is merged apart
/// from the content. Paths the checkpoint did not change are never touched.
///
/// The worktree is saved first as a checkpoint of its own, so every revert can be undone
/// with `git checkpoint restore <that checkpoint>`; the reverted worktree is then saved
/// as a checkpoint too ("revert of <rev> (N files)", HEAD's branch moved to it), unless
/// conflicts are left to resolve (then save once they are). Before anything is written, the
/// whole revert is checked (directories writable, room, names): one the worktree
/// cannot take is refused with nothing changed; one that fails part-way says so and
/// names that restore. Exit status 1 when anything conflicts (each conflict is listed);
/// --dry-run exits as the real run would.
///
/// <rev> is any revision restore takes (`3fa9c1e`, `@~2`, `<session>:prompt3`,
/// `<session>:<tool-call-id>`), or a range `A..B`: undo everything from A to B (an empty
/// side is `@`).
///
/// With paths, only the change to those files (or to what is below those directories)
/// is undone; each must match a path the change touched, as git's pathspecs must, or
/// the revert fails and nothing is changed.
///
/// Examples:
///
///   git checkpoint revert 5f1c:toolu_01A
///
///   git checkpoint revert 3fa9c1e --dry-run
///
///   git checkpoint revert 3fa9c1e..8b0d2aa --no-conflicts
///
///   git checkpoint revert 5f1c:turn2 -- src/parser.rs
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The checkpoint whose change to undo, or a range A..B.
    rev: String,
    /// Print the diff the revert would apply to the worktree, and change nothing.
    #[arg(long)]
    dry_run: bool,
    /// Change nothing if any path would conflict.
    #[arg(long)]
    no_conflicts: bool,
    /// Undo the change to these files or directories only (relative to the current
    /// directory).
    #[arg(last = true, value_name = "path")]
    paths: Vec<PathBuf>,
}

/// Runs `revert`.
pub fn run(context: &Context, args: Args) -> anyhow::Result<()> {
    let (conflict_style, style_warning) = ConflictStyle::of_repo(&context.workspace.repo)?;
    if let Some(warning) = style_warning {
        context.warn(warning);
    }
    let options = RevertOptions {
        dry_run: args.dry_run,
        no_conflicts: args.no_conflicts,
        conflict_style,
        settings: context.workspace.settings.clone(),
        progress: context.progress(),
    };
    let paths = context.workspace.repo.worktree_paths(&args.paths)?;
    // A dry run changes nothing, the store file included: it opens it read-only.
    let (report, shorts) = if args.dry_run {
        let store = context.open_read_store()?;
        let undo = Undo::resolve(&store.snapshot()?, &args.rev)?.limited_to(paths);
        let report = dry_run(&context.workspace.repo, &store, &undo, &options)?;
        let shorts = Shorts {
            described: undo.described(),
            ..Shorts::default()
        };
        (report, shorts)
    } else {
        let store = context.open_store()?;
        let undo = Undo::resolve(&store.snapshot()?, &args.rev)?.limited_to(paths);
        let report = revert(&context.workspace.repo, &store, &undo, &options)?;
        let snapshot = store.snapshot()?;
        let short = |id: Option<_>| id.map(|id| snapshot.short_id(id)).transpose();
        let shorts = Shorts {
            described: undo.described(),
            worktree: short(report.worktree)?,
            result: match report.checkpoint {
                Some(id) => Some((snapshot.short_id(id)?, snapshot.checkpoint(id)?.message)),
                None => None,
            },
        };
        (report, shorts)
    };
    say(context, &args.rev, &report, shorts, conflict_style)?;
    let conflicts = report.conflicts();
    if conflicts.is_empty() {
        return Ok(());
    }
    // A dry run exits as the real run would: 1 when it would leave conflicts.
    Err(match report.dry_run {
        true => Error::RevertWouldConflict { paths: conflicts },
        false => Error::RevertConflicts { paths: conflicts },
    }
    .into())
}

/// What a revert's report names: the revert as the user wrote it, and the short ids a
/// real one made, read while its store is open.
#[derive(Default)]
struct Shorts {
    /// The revision, and the paths it was limited to (`5f1c:turn2 -- a.rs`).
    described: String,
    /// The checkpoint that holds the worktree as the revert found it.
    worktree: Option<String>,
    /// The checkpoint the result was saved as, and its message.
    result: Option<(String, String)>,
}

/// Reports what the revert did, or would do.
fn say(
    context: &Context,
    rev: &str,
    report: &RevertReport,
    shorts: Shorts,
    style: ConflictStyle,
) -> anyhow::Result<()> {
    for warning in &report.warnings {
        context.warn(warning);
    }
    if context.json {
        return json::print(&RevertJson::new(rev, report, style));
    }
    if report.dry_run {
        if report.would_save {
            context.say("Would first save unsaved changes as a checkpoint");
        }
        let mut out = Vec::new();
        for entry in &report.paths {
            write_diff(&mut out, entry, context.colour())?;
        }
        if !context.quiet {
            use std::io::Write;
            std::io::stdout().write_all(&out)?;
        }
    }
    match (shorts.worktree, report.safety_checkpoint) {
        (Some(short), Some(_)) => context.say(&format!(
            "Saved unsaved changes as checkpoint {short} (undo the revert with: git checkpoint restore {short})"
        )),
        (Some(short), None) => context.say(&format!(
            "The worktree was saved already as checkpoint {short} (undo the revert with: git checkpoint restore {short})"
        )),
        _ => {}
    }
    let described = escape_controls(&shorts.described);
    if report.paths.is_empty() {
        context.say(&format!("Nothing to revert: {described} changed no file"));
        return Ok(());
    }
    let verb = if report.dry_run {
        "Would revert"
    } else {
        "Reverted"
    };
    context.say(&format!(
        "{verb} {described}: {} applied, {} conflicting, {} unchanged",
        report.with(Status::Applied).count(),
        report.with(Status::Conflict).count(),
        report.with(Status::Unchanged).count()
    ));
    for entry in &report.paths {
        let why = entry
            .why
            .as_deref()
            .map(|why| format!(" ({why})"))
            .unwrap_or_default();
        context.say(&format!(
            "  {:<9} {}{why}",
            entry.status.name(),
            show_path(&entry.path)
        ));
    }
    if let Some((short, message)) = shorts.result {
        context.say(&format!(
            "Saved the revert as checkpoint {short}: {}",
            escape_controls(&message)
        ));
    }
    Ok(())
}

/// Writes the diff from the worktree to what the revert makes of `entry`, as `diff`
/// shows changes.
fn write_diff(out: &mut Vec<u8>, entry: &PathReport, colour: bool) -> anyhow::Result<()> {
    let deleted = entry.status == Status::Applied && entry.result.is_none();
    if entry.result.is_none() && !deleted {
        return Ok(());
    }
    let new = entry.result.as_ref().map(|result| match result {
        // Chunks are not needed to show a node: only its kind and mode.
        Written::File {
            bytes,
            mode: Some(mode),
            ..
        } => Node::FileWithMode {
            size: bytes.len() as u64,
            mode: *mode,
            chunks: Vec::new(),
        },
        Written::File {
            bytes, executable, ..
        } => Node::File {
            size: bytes.len() as u64,
            executable: *executable,
            chunks: Vec::new(),
        },
        Written::Symlink(target) => Node::Symlink {
            target: target.clone(),
        },
    });
    let new_content = match &entry.result {
        Some(Written::File { bytes, .. }) => Content::Bytes(bytes.clone()),
        Some(Written::Symlink(target)) => Content::Bytes(target.clone()),
        None => Content::Absent,
    };
    let change = Change {
        path: entry.path.clone(),
        old: entry.ours.clone(),
        new,
    };
    crate::ui::patch::write_patch(out, &change, &entry.ours_content, &new_content, colour)?;
    Ok(())
}
