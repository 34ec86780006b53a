//! `git checkpoint branch`

use git_checkpoint::model::branch::BranchName;
use git_checkpoint::model::operation::{NewOperation, OpKind};
use git_checkpoint::model::Head;

use git_checkpoint::storage::StoreRead;

use super::{Context, Output};
use crate::ui::json::{BranchDeletedJson, BranchJson, BranchRenamedJson};

/// List, delete or rename branches.
///
/// Without options (or with --list): every branch, `*` marking the current one, with
/// its tip's short id and message. -d deletes a branch but not its checkpoints, which
/// stay in `log --all` until retention removes them; the current branch cannot be
/// deleted. -m renames a branch (HEAD follows). New branches come from
/// `git checkpoint fork`.
///
/// Examples:
///
///   git checkpoint branch
///
///   git checkpoint branch -d fork-2
///
///   git checkpoint branch -m fork-1 parser-rewrite
#[derive(Debug, clap::Args)]
pub struct Args {
    /// List branches (the default).
    #[arg(long, conflicts_with_all = ["delete", "rename"])]
    list: bool,
    /// Delete this branch.
    #[arg(
        short = 'd',
        long = "delete",
        value_name = "name",
        conflicts_with = "rename"
    )]
    delete: Option<String>,
    /// Rename branch <old> to <new>.
    #[arg(short = 'm', long = "move", num_args = 2, value_names = ["old", "new"])]
    rename: Option<Vec<String>>,
}

/// Runs `branch`.
pub fn run(context: &Context, args: Args) -> anyhow::Result<()> {
    let output = render(context, args)?;
    context.emit(output)
}

/// Does a deletion or a rename, or lists; what to print is made while the store is
/// open and printed after it is closed. Only a deletion or a rename opens the store for
/// writing: the listing leaves the file byte-identical (docs/design.md, section 5).
fn render(context: &Context, args: Args) -> anyhow::Result<Output> {
    if args.delete.is_none() && args.rename.is_none() {
        return list(context);
    }
    let store = context.open_store()?;
    if let Some(name) = args.delete {
        let txn = store.transaction()?;
        let before = txn.view()?;
        let tip = txn.delete_branch(&name)?;
        let summary = format!("delete branch {name}");
        txn.record_operation(NewOperation::new(OpKind::BranchDelete, summary, before))?;
        txn.commit()?;
        let short = store.snapshot()?.short_id(tip)?;
        if context.json {
            return Output::json(&BranchDeletedJson {
                deleted: name,
                id: tip.hex(),
            });
        }
        return Ok(Output::Lines(vec![format!(
            "Deleted branch {name} (was {short})"
        )]));
    }
    if let Some([old, new]) = args.rename.as_deref() {
        let txn = store.transaction()?;
        let before = txn.view()?;
        let tip = txn.rename_branch(old, &BranchName::new(new)?)?;
        let summary = format!("rename branch {old} to {new}");
        txn.record_operation(NewOperation::new(OpKind::BranchRename, summary, before))?;
        txn.commit()?;
        if context.json {
            return Output::json(&BranchRenamedJson {
                renamed: old.clone(),
                to: new.clone(),
                id: tip.hex(),
            });
        }
        return Ok(Output::Lines(vec![format!(
            "Renamed branch {old} to {new}"
        )]));
    }
    // clap gives -m exactly two names; anything else lists, as without options.
    drop(store);
    list(context)
}

/// The listing: every branch, the current one marked.
fn list(context: &Context) -> anyhow::Result<Output> {
    let store = context.open_read_store()?;
    let read = store.snapshot()?;
    let head = read.head()?;
    let mut rows = Vec::new();
    for (name, tip) in read.branches()? {
        let record = read.checkpoint(tip)?;
        rows.push((
            head == Head::Branch(name.clone()),
            name,
            tip,
            read.short_id(tip)?,
            record.message,
        ));
    }
    if context.json {
        let list: Vec<_> = rows
            .iter()
            .map(|(current, name, tip, short, message)| BranchJson {
                name: name.clone(),
                id: tip.hex(),
                short_id: short.clone(),
                current: *current,
                message: message.clone(),
            })
            .collect();
        return Output::json(&list);
    }
    if rows.is_empty() {
        context.explain_empty(&read)?;
    }
    let width = rows.iter().map(|r| r.1.len()).max().unwrap_or(0);
    let lines = rows
        .iter()
        .map(|(current, name, _, short, message)| {
            let marker = if *current { '*' } else { ' ' };
            let message = message.lines().next().unwrap_or("");
            format!("{marker} {name:<width$} {short} {message}")
                .trim_end()
                .to_string()
        })
        .collect();
    Ok(Output::Lines(lines))
}
