//! `git checkpoint verify`

use git_checkpoint::error::ErrorKind;
use git_checkpoint::format::size::human_bytes;
use git_checkpoint::text::counted;

use super::Context;
use crate::ui::failure::Failure;
use crate::ui::json::{self, VerifyJson};

/// Check the store for damage.
///
/// Checks the file's page checksums, then that every checkpoint record decodes, that its
/// parents exist (with no cycle), that every tree it reaches exists, decodes, hashes to
/// its id, has safe names in strictly increasing order and files whose chunks fit their
/// size, and expands to no more files and bytes than its checkpoint records, that every
/// chunk those trees name exists, that branches, HEAD and pins point at existing
/// checkpoints, and that the stat cache names only existing chunks. With --read-data
/// every chunk is also read, decompressed, re-hashed and its length checked.
///
/// The check runs on a private copy of the store (in TMPDIR), taken while no other
/// process writes it, so the store itself is never changed and may be read-only.
///
/// Trees and chunks that no checkpoint reaches (a save that crashed after writing its
/// chunks leaves some) are garbage, not damage: they are counted, with the bytes a gc
/// would free, and do not fail the check.
///
/// A damaged store gets a list of what is damaged and of the checkpoints it affects
/// (those that would not restore exactly, or whose parent is gone), and exit status 1.
///
/// Examples:
///
///   git checkpoint verify
///
///   git checkpoint verify --read-data --json
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Also read, decompress and re-hash every chunk.
    #[arg(long)]
    read_data: bool,
}

/// Runs `verify`.
pub fn run(context: &Context, args: Args) -> anyhow::Result<()> {
    let report = context.workspace.verify(
        &mut || context.warn("waiting for another git-checkpoint to finish..."),
        args.read_data,
    )?;
    if context.json {
        json::print(&VerifyJson::new(&report))?;
    } else {
        let read = if args.read_data {
            format!(
                "; read and re-hashed {} ({})",
                counted(report.chunks_read, "chunk"),
                human_bytes(report.bytes_read)
            )
        } else {
            String::new()
        };
        if report.opened {
            context.say(&format!(
                "Checked {}, {}, {}{read}",
                counted(report.checkpoints, "checkpoint"),
                counted(report.trees, "tree"),
                counted(report.chunks, "chunk")
            ));
        }
        if report.unreachable_trees + report.unreachable_chunks > 0 {
            context.say(&format!(
                "Garbage, not damage: {} and {}; git checkpoint gc would free {}",
                counted(report.unreachable_trees, "unreachable tree"),
                counted(report.unreachable_chunks, "unreachable chunk"),
                human_bytes(report.unreachable_bytes)
            ));
        }
        for problem in &report.problems {
            eprintln!("damaged: {}: {}", problem.object, problem.message);
        }
        if !report.affected.is_empty() {
            eprintln!(
                "affected checkpoints ({}): {}",
                report.affected.len(),
                report
                    .affected
                    .iter()
                    .map(|id| id.hex())
                    .collect::<Vec<_>>()
                    .join(" ")
            );
        }
        if report.ok() {
            context.say("No problems found");
        }
    }
    if report.ok() {
        Ok(())
    } else {
        // Not the library's `Corrupt`: this is verify's own verdict, and the hint a
        // damaged store's error gets (run verify) would send the user back here.
        Err(Failure::error(
            ErrorKind::Damaged,
            format!(
                "the store is damaged: {} found, {} affected",
                counted(report.problems.len(), "problem"),
                counted(report.affected.len(), "checkpoint")
            ),
        ))
    }
}
