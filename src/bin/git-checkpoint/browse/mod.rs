//! `git checkpoint browse`: a full-screen terminal UI over the checkpoints. It sits
//! above `commands/` (it reads a checkpoint through `show`, acts through the same
//! library calls as `restore`, `fork`, `pin`, `drop` and `undo`, and reverts through
//! `revert`'s own answer); `commands/browse.rs` keeps its `Args` (the help text) and
//! the checks before the terminal is taken.
//!
//! - `action.rs`: what the keys that change things ask for, and ask first.
//! - `app.rs`: the state (the list, its folds, the selection, the dialog open) and what
//!   each key does to it; no terminal and no store, so the views can be tested on their own.
//! - `view.rs`: draws the state into a ratatui frame; `rows.rs`, the list's rows.
//! - `entries.rs`: the list's entries and the folds they make (sessions, prompts).
//! - `detail.rs`: makes the selected row's record and diff (the same text as `show`'s)
//!   on a thread of its own, handing them over as they are made, so that a big one
//!   never holds up a key.
//! - `store.rs`: reads the list, a checkpoint's changed paths and a search, and carries
//!   out the actions, each through the same library calls as the CLI, with the store
//!   open only for that one read or action.
//! - `terminal.rs`: the terminal's set-up and restoration (on exit, on a panic) and the
//!   loop that draws, reads keys and takes in the detail as it is made.

pub mod action;
pub mod app;
pub mod detail;
pub mod entries;
pub mod rows;
pub mod store;
pub mod terminal;
pub mod view;

use crate::commands::browse::{check, Args};
use crate::commands::Context;

/// Runs `browse`: refuses off a terminal (and with `--json` or `-q`), then runs the UI.
pub fn run(context: &Context, args: Args) -> anyhow::Result<()> {
    let colour = check(context, &args)?;
    terminal::run(context, colour)
}
