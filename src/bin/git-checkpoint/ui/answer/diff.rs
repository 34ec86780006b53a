//! What a diff cut to a budget answers: the MCP server's `diff`, whose reader has a
//! small context. The patch is `diff`'s own, file by file, up to the budget; a note
//! says what was left out and how to get it.

use git_checkpoint::diff::content::ContentReader;
use git_checkpoint::diff::Change;
use git_checkpoint::CheckpointId;

use super::{Answer, Front, Said};
use crate::ui::json::{DiffJson, DiffPageJson, FileSummary};
use crate::ui::output::show_path;
use crate::ui::patch::{self, Format};

/// A patch cut at a byte budget, on a file's boundary, else a line's.
pub struct DiffPage {
    /// The old side's checkpoint; `None` when there is no checkpoint yet.
    pub from: Option<CheckpointId>,
    /// The new side's checkpoint; `None` for the worktree.
    pub to: Option<CheckpointId>,
    /// Every changed file, summarised, whether its patch fits or not.
    pub changes: Vec<FileSummary>,
    /// The patch as far as it fits.
    pub patch: String,
    /// The bytes of the whole patch.
    pub patch_bytes: usize,
    /// What did not fit: a file's path, or `the rest of <path>` for the first file cut
    /// at a line.
    pub left_out: Vec<String>,
    /// The most bytes a page may have, for the note's advice.
    pub max_budget: usize,
}

impl DiffPage {
    /// The page of `changes` (read through `reader`) from `from` to `to`, the patch cut
    /// at `budget` bytes; `max_budget` is the largest budget a caller may ask for.
    pub fn new(
        (from, to): (Option<CheckpointId>, Option<CheckpointId>),
        changes: &[Change],
        reader: &ContentReader<'_>,
        budget: usize,
        max_budget: usize,
    ) -> anyhow::Result<DiffPage> {
        let mut text = String::new();
        let mut total = 0;
        let mut left_out = Vec::new();
        for change in changes {
            let mut one = Vec::new();
            patch::write_changes(
                &mut one,
                std::slice::from_ref(change),
                reader,
                Format::Patch,
                false,
            )?;
            let one = String::from_utf8_lossy(&one);
            total += one.len();
            if left_out.is_empty() && text.len() + one.len() <= budget {
                text += &one;
            } else if left_out.is_empty() && text.is_empty() {
                // Even the first file is over the budget: as many of its lines as fit.
                let mut end = budget;
                while !one.is_char_boundary(end) {
                    end -= 1;
                }
                let cut = one[..end].rfind('\n').map_or(0, |i| i + 1);
                text += &one[..cut];
                left_out.push(format!("the rest of {}", show_path(&change.path)));
            } else {
                left_out.push(show_path(&change.path));
            }
        }
        Ok(DiffPage {
            from,
            to,
            changes: patch::summarize(changes, reader)?,
            patch: text,
            patch_bytes: total,
            left_out,
            max_budget,
        })
    }
}

impl Answer for DiffPage {
    type Json = DiffPageJson;

    fn json(&self) -> DiffPageJson {
        DiffPageJson {
            diff: DiffJson {
                from: self.from.map(CheckpointId::hex),
                to: self.to.map(CheckpointId::hex),
                changes: self.changes.clone(),
            },
            cut: !self.left_out.is_empty(),
            patch_bytes: self.patch_bytes,
            left_out: self.left_out.clone(),
            patch: self.patch.clone(),
        }
    }

    /// The patch as `diff` prints it (the files' own text), then, when it was cut, a
    /// note of ours after a blank line.
    fn said(&self, _front: Front) -> anyhow::Result<Said> {
        let mut said = Said::default();
        if self.changes.is_empty() {
            said.line("No changes.");
            return Ok(said);
        }
        said.raw(self.patch.clone().into_bytes());
        if !self.left_out.is_empty() {
            said.line("");
            said.line(format!(
                "[diff cut: {} of {} bytes shown; left out: {}. Call diff again with paths set to the files wanted, or with a larger max_bytes (at most {}).]",
                self.patch.len(),
                self.patch_bytes,
                self.left_out.join(", "),
                self.max_budget
            ));
        }
        Ok(said)
    }
}
