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
mod error;
mod operations;
mod pages;
mod records;
mod remote;
mod upkeep;
mod worktree;

pub use blame::*;
pub use doctor::*;
pub use error::*;
pub use operations::*;
pub use pages::*;
pub use records::*;
pub use remote::*;
pub use upkeep::*;
pub use worktree::*;

use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;

use git_checkpoint::CheckpointId;

use crate::ui::output::show_path;

/// Whether this process printed its JSON document already: a command that fails after
/// printing its report (`verify`, a revert with conflicts) prints no error document.
static PRINTED: AtomicBool = AtomicBool::new(false);

/// Prints `value` as the one JSON document on stdout.
pub fn print(value: &impl Serialize) -> anyhow::Result<()> {
    print_text(&text(value)?);
    Ok(())
}

/// Prints a document made by [`text`] on stdout.
pub fn print_text(document: &str) {
    println!("{document}");
    PRINTED.store(true, Ordering::Relaxed);
}

/// Whether a document was printed ([`print`]).
pub fn printed() -> bool {
    PRINTED.load(Ordering::Relaxed)
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
