//! `git checkpoint log`

use std::collections::HashMap;

use git_checkpoint::dag::{self, Head};
use git_checkpoint::output::{relative_time, CheckpointJson};
use git_checkpoint::store::{BRANCHES, CHECKPOINTS, STATE};
use git_checkpoint::Id;
use redb::{ReadableDatabase, ReadableTable};

use super::{print_json, Context};

/// List checkpoints, newest first.
///
/// Without --all: the current checkpoint and its ancestors. With --all: every checkpoint
/// in the store, including the safety checkpoints made before restores and the lines a
/// restore left behind.
///
/// Examples:
///
///   git checkpoint log -n 5
///
///   git checkpoint log --all --json
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Every checkpoint in the store, not only the current line.
    #[arg(long)]
    all: bool,
    /// Show at most this many.
    #[arg(short = 'n', long = "max-count", value_name = "N")]
    max_count: Option<usize>,
}

/// Runs `log`.
pub fn run(context: &Context, args: Args) -> anyhow::Result<()> {
    let store = context.open_store()?;
    let read = store.db.begin_read()?;
    let entries = dag::log(&read, args.all, args.max_count)?;
    let checkpoints = read.open_table(CHECKPOINTS)?;
    let pinned = git_checkpoint::gc::pinned(&read)?;
    if context.json {
        let list = entries
            .iter()
            .map(|(id, record)| {
                Ok(CheckpointJson {
                    pinned: pinned.contains(id),
                    ..CheckpointJson::new(*id, dag::short_id(&checkpoints, *id)?, record)
                })
            })
            .collect::<anyhow::Result<Vec<_>>>()?;
        return print_json(&list);
    }
    let state = read.open_table(STATE)?;
    let branches = read.open_table(BRANCHES)?;
    let head = dag::head(&state)?;
    let mut labels: HashMap<Id, Vec<String>> = HashMap::new();
    for item in branches.iter()? {
        let (name, tip) = item?;
        let name = name.value().to_string();
        let label = match &head {
            Head::Branch(current) if *current == name => format!("HEAD -> {name}"),
            _ => name,
        };
        labels.entry(Id(tip.value())).or_default().push(label);
    }
    if let Head::Detached(id) = head {
        labels.entry(Id(id)).or_default().insert(0, "HEAD".into());
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as i128)
        .unwrap_or(0);
    for (id, record) in &entries {
        let label = labels
            .get(id)
            .map(|l| format!("({}) ", l.join(", ")))
            .unwrap_or_default();
        let pin = if pinned.contains(id) { "[pinned] " } else { "" };
        context.say(&format!(
            "{} {:>15}  {label}{pin}{}",
            dag::short_id(&checkpoints, *id)?,
            relative_time(record.time_ns, now),
            record.message
        ));
    }
    Ok(())
}
