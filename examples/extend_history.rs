//! Extends a store's history to N checkpoints by writing records straight into it, for
//! benchmarks that need a long history sooner than N real saves make one
//! (benches/browse_first_screen.sh). Each new checkpoint goes on top of the current one
//! (HEAD's branch moves to it), at times spread from the last one's to now, and takes the tree, sizes and change summary of one of
//! the real checkpoints already there, in turn, so `show` and `diff` work on every one
//! of them. Every 40th step starts an agent session as the hooks record one: a prompt's
//! checkpoint, then tool calls, four prompts of four tool calls each.
//!
//! The store is opened as every command opens it, through the worktree's
//! `Workspace`, so it waits as `checkpoint.lockTimeout` says.
//!
//!   cargo run --release --example extend_history -- <worktree> <N>

use std::path::Path;

use git_checkpoint::agents::worktree_files;
use git_checkpoint::model::Checkpoint;
use git_checkpoint::ops::workspace::Workspace;
use git_checkpoint::storage::StoreRead;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(worktree), Some(n)) = (args.next(), args.next()) else {
        return Err("usage: extend_history <worktree> <N>".into());
    };
    let n: usize = n.parse()?;
    let workspace = Workspace::discover(Path::new(&worktree), worktree_files())?;
    let store = workspace.open_store(&mut || {})?;
    let snapshot = store.snapshot()?;
    let mut real = snapshot.checkpoints()?;
    real.sort_by_key(|(_, record)| record.time_ns);
    let reader = snapshot.checkpoint_reader()?;
    let summaries = real
        .iter()
        .map(|(id, _)| reader.summary(*id))
        .collect::<Result<Vec<_>, _>>()?;
    let mut current = snapshot
        .current()?
        .ok_or("the store has no checkpoint yet")?;
    let mut time_ns = snapshot.checkpoint(current)?.time_ns;
    let have = real.len();
    // The new checkpoints' times spread from the last one's to now, as if saved since.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_nanos() as i128;
    let gap = ((now - time_ns) / n.saturating_sub(have).max(1) as i128).max(1_000_000);
    drop(reader);
    drop(snapshot);
    if have >= n {
        return Ok(());
    }
    let txn = store.transaction()?;
    let mut session = 0;
    for i in have..n {
        let (_, model) = &real[i % have];
        // Agent sessions: 20 of every 40 steps, from step 20 on.
        let step = i % 40;
        let mut meta = Vec::new();
        let message = if step >= 20 {
            if step == 20 {
                session += 1;
            }
            let prompt = (step - 20) / 5 + 1;
            let kind = if (step - 20) % 5 == 0 {
                "prompt"
            } else {
                "tool"
            };
            meta = vec![
                ("agent".to_string(), "claude".to_string()),
                (
                    "session".to_string(),
                    format!("{session:08x}-5e6f-4a0b-9c8d-7e6f5a4b3c2d"),
                ),
                ("prompt".to_string(), prompt.to_string()),
                ("kind".to_string(), kind.to_string()),
            ];
            match kind {
                "prompt" => format!("before prompt {prompt}: step {i}"),
                _ => format!("after Edit: file{}.c", i % 500 + 1),
            }
        } else {
            format!("step {i}")
        };
        time_ns += gap;
        let mut record = Checkpoint {
            parents: vec![current],
            time_ns,
            message,
            meta,
            ..model.clone()
        };
        let id = txn.add_checkpoint(&mut record)?;
        if let Some(summary) = &summaries[i % have] {
            txn.set_summary(id, summary)?;
        }
        current = id;
    }
    txn.move_head(current)?;
    txn.commit()?;
    println!("extended the history from {have} to {n} checkpoints");
    Ok(())
}
