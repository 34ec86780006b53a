//! Every `--json` shape: one `Serialize` type per record a command prints, so that the
//! scripting contract (`docs/json.md`) is read, and changed, in one place.
//!
//! Fields serialize in the order they are declared here, and that order, their names
//! and their types are what scripts rely on: a field is added at the end of its record,
//! never renamed or retyped (`docs/json.md`, "Stability"). Ids are full 32-digit hex
//! unless the field is named `short_id`; times are RFC 3339 in UTC; sizes are bytes;
//! paths are worktree paths as lossy UTF-8.

mod blame;
mod doctor;
mod operations;
mod records;
mod remote;
mod upkeep;
mod worktree;

pub use blame::*;
pub use doctor::*;
pub use operations::*;
pub use records::*;
pub use remote::*;
pub use upkeep::*;
pub use worktree::*;

use serde::Serialize;

use git_checkpoint::CheckpointId;

use crate::ui::output::show_path;

/// Prints `value` as the one JSON document on stdout.
pub fn print(value: &impl Serialize) -> anyhow::Result<()> {
    println!("{}", text(value)?);
    Ok(())
}

/// `value` as the document `print` writes, for output made before it is written.
pub fn text(value: &impl Serialize) -> anyhow::Result<String> {
    Ok(serde_json::to_string_pretty(value)?)
}

/// Worktree paths as the JSON lists of them hold them.
fn paths(list: &[Vec<u8>]) -> Vec<String> {
    list.iter().map(|path| show_path(path)).collect()
}

/// Full ids, in order.
fn hexes(ids: &[CheckpointId]) -> Vec<String> {
    ids.iter().map(|id| id.hex()).collect()
}
