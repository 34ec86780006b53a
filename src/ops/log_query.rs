//! The filters `log` applies beyond metadata: the checkpoints a range leaves out, the
//! checkpoints whose change touched given paths, a text in the message; and the `path`
//! metadata a hook checkpoint gets from what it actually changed.
//!
//! Whether a checkpoint touched a path is decided from its tree and its first parent's,
//! walked together down the given paths only: a pair of subtrees with equal ids is
//! skipped without being read, and no file content is ever read (invariant: listing is
//! bounded by the trees that differ, not by the bytes stored).

use std::collections::HashSet;

use crate::diff::{checkpoint_root, diff_trees, Change, PathFilter};
use crate::model::Checkpoint;
use crate::storage::{Snapshot, TreeReader};
use crate::{CheckpointId, Result};

/// The checkpoints reachable from `tips` through every parent, the tips included (the
/// `A` side of `A..B`).
pub fn ancestry(snapshot: &Snapshot, tips: &[CheckpointId]) -> Result<HashSet<CheckpointId>> {
    let mut seen = HashSet::new();
    if tips.is_empty() {
        return Ok(seen);
    }
    let reader = snapshot.checkpoint_reader()?;
    let mut pending = tips.to_vec();
    while let Some(id) = pending.pop() {
        if seen.insert(id) {
            pending.extend(reader.get(id)?.parents);
        }
    }
    Ok(seen)
}

/// Whether `record`'s message holds `pattern`, whatever the case of either (`None`
/// matches everything).
pub fn grep_matches(record: &Checkpoint, pattern: Option<&str>) -> bool {
    match pattern {
        None => true,
        Some(pattern) => record
            .message
            .to_lowercase()
            .contains(&pattern.to_lowercase()),
    }
}

/// Decides whether a checkpoint's change against its first parent touched some paths.
pub struct PathQuery<'a> {
    snapshot: &'a Snapshot<'a>,
    reader: Option<TreeReader<'a>>,
    filter: PathFilter,
}

impl<'a> PathQuery<'a> {
    /// A query for `paths` (root-relative; none means every checkpoint matches).
    pub fn new(snapshot: &'a Snapshot<'a>, paths: &[Vec<u8>]) -> Result<Self> {
        let reader = match paths.is_empty() {
            true => None,
            false => Some(snapshot.trees(None)?),
        };
        Ok(PathQuery {
            snapshot,
            reader,
            filter: PathFilter::new(paths.to_vec()),
        })
    }

    /// Whether `record` changed one of the paths, or something below one, against its
    /// first parent (a first checkpoint against nothing).
    pub fn matches(&mut self, record: &Checkpoint) -> Result<bool> {
        let Some(reader) = &self.reader else {
            return Ok(true);
        };
        if self.filter.is_everything() {
            return Ok(true);
        }
        Ok(!changed_paths(self.snapshot, reader, record, &self.filter)?.is_empty())
    }
}

/// What `record` changed against its first parent under `filter`, each side bounded by
/// its record.
fn changed_paths(
    snapshot: &Snapshot,
    reader: &TreeReader<'_>,
    record: &Checkpoint,
    filter: &PathFilter,
) -> Result<Vec<Change>> {
    reader.expect(record);
    let parent = match record.parents.first() {
        Some(&parent) => Some(checkpoint_root(snapshot, reader, parent)?),
        None => None,
    };
    diff_trees(reader, parent, Some(record.tree), filter)
}

/// Metadata key: a path the step changed (the file the tool named when it is among the
/// changed ones, else the first changed path in path order).
pub const PATH_KEY: &str = "path";
/// Metadata key: how many paths the step changed.
pub const PATHS_KEY: &str = "paths";

/// The `path` and `paths` metadata for a tool step whose checkpoint changed `changes`,
/// given the metadata it already has. A tool that named a file keeps it as `path` when
/// the change touched it, or when the change touched nothing (a read); a shell command,
/// which names none, gets the first path it changed. `paths` counts the changed paths,
/// and is left out when nothing changed.
pub fn changed_path_meta(meta: &mut Vec<(String, String)>, changes: &[Change]) {
    if changes.is_empty() {
        return;
    }
    let text = |path: &[u8]| String::from_utf8_lossy(path).into_owned();
    let named = meta.iter().position(|(key, _)| key == PATH_KEY);
    let named_changed =
        named.is_some_and(|i| changes.iter().any(|change| text(&change.path) == meta[i].1));
    if !named_changed {
        let first = text(&changes[0].path);
        match named {
            Some(i) => meta[i].1 = first,
            None => meta.push((PATH_KEY.to_string(), first)),
        }
    }
    meta.push((PATHS_KEY.to_string(), changes.len().to_string()));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(path: &str) -> Change {
        Change {
            path: path.as_bytes().to_vec(),
            old: None,
            new: None,
        }
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn path_meta_comes_from_the_change() {
        // A shell step names no file: the first changed path.
        let mut meta = pairs(&[("tool", "Bash")]);
        changed_path_meta(&mut meta, &[change("a.c"), change("b.c")]);
        assert_eq!(
            meta,
            pairs(&[("tool", "Bash"), ("path", "a.c"), ("paths", "2")])
        );
        // A named file that changed stays.
        let mut meta = pairs(&[("path", "b.c")]);
        changed_path_meta(&mut meta, &[change("a.c"), change("b.c")]);
        assert_eq!(meta, pairs(&[("path", "b.c"), ("paths", "2")]));
        // A named file that did not change gives way to what did.
        let mut meta = pairs(&[("path", "x.c")]);
        changed_path_meta(&mut meta, &[change("a.c")]);
        assert_eq!(meta, pairs(&[("path", "a.c"), ("paths", "1")]));
        // Nothing changed: the metadata is left as it is.
        let mut meta = pairs(&[("path", "x.c")]);
        changed_path_meta(&mut meta, &[]);
        assert_eq!(meta, pairs(&[("path", "x.c")]));
    }

    #[test]
    fn grep_ignores_case() {
        let record = Checkpoint {
            message: "Fix the Parser".to_string(),
            ..Checkpoint::default()
        };
        assert!(grep_matches(&record, Some("parser")));
        assert!(grep_matches(&record, None));
        assert!(!grep_matches(&record, Some("lexer")));
    }
}
