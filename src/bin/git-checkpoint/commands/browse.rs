//! `git checkpoint browse`

use std::io::IsTerminal;

use super::Context;
use crate::ui::failure::Failure;
use crate::ui::output::colour_wanted;

/// Browse the checkpoints in a full-screen terminal UI.
///
/// The checkpoint graph on the left (every branch; an agent's sessions fold into
/// prompts, prompts into tool calls), the selected checkpoint's record and diff on the
/// right, as `show` prints them (a folded prompt's: its whole turn). Keys: j/k move, h/l
/// fold and unfold, / searches messages, metadata and changed paths, r restores the
/// worktree, f restores one file, s restores only the files the checkpoint's agent
/// session changed since it (as `restore --only-session`), u reverts the step, or a
/// folded prompt's whole turn (as `revert`), x one file's change in it (as `revert --
/// <path>`), F forks, p pins, d drops (each asked to be
/// confirmed; a restore or a revert first saves unsaved changes, as the commands do), R
/// reads the list again, ? lists the keys, q quits. The list is read a page at a time,
/// newest first, as far as the screen needs, so a long history opens at once; the diff
/// is made beside the UI and shown as it is made, so keys act at once even on a big
/// checkpoint. The store is opened only for each read or action, never while the UI
/// waits for a key. Colour follows NO_COLOR. Needs a terminal on stdout.
///
/// Examples:
///
///   git checkpoint browse
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Checks that `browse` can run here, and says whether to colour. The UI itself is
/// `browse/`, above `commands/` (it reads through `show` and acts as `restore` does), so
/// `cli.rs` hands the command to `browse::run`, which calls this first.
pub fn check(context: &Context, _args: &Args) -> anyhow::Result<bool> {
    if context.json || context.quiet {
        return Err(Failure::input("browse is interactive and takes neither --json nor -q; 'git checkpoint log --graph --all' lists the checkpoints"));
    }
    if !std::io::stdout().is_terminal() {
        return Err(Failure::input("browse needs a terminal, and stdout is not one; 'git checkpoint log --graph --all' lists the checkpoints"));
    }
    Ok(colour_wanted(true))
}
