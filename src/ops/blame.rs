//! `blame`: which checkpoint last changed each line of a file.
//!
//! The file's versions are found by walking first parents from the starting checkpoint
//! and looking the path up in each tree; a checkpoint whose root tree, or whose file
//! node, equals the one after it is passed over without reading anything more. Only
//! the distinct versions are read and diffed, oldest first, with `imara-diff` (Myers
//! and git's line placement, as `diff` uses): lines a version leaves in place keep
//! their origin, lines it adds take it as theirs.

use std::collections::HashMap;

use imara_diff::{Algorithm, Diff, InternedInput};

use crate::diff::content::{Content, ContentReader};
use crate::diff::Change;
use crate::model::command_checkpoint::made_by_call;
use crate::model::tree::Node;
use crate::model::Checkpoint;
use crate::storage::{Snapshot, TreeReader};
use crate::{CheckpointId, Error, Result, TreeId};

/// One line of the file, with where it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlameLine {
    /// The checkpoint that last changed (or added) it.
    pub origin: CheckpointId,
    /// Its line number, from 1, in that checkpoint's version of the file.
    pub origin_line: usize,
    /// The line, with its line ending.
    pub text: Vec<u8>,
}

/// The file's lines with their origins, and the records of those origins.
#[derive(Clone, Debug)]
pub struct Blame {
    /// Every line of the file as the starting checkpoint holds it, in order.
    pub lines: Vec<BlameLine>,
    /// The record of each origin.
    pub origins: HashMap<CheckpointId, Checkpoint>,
}

/// Blames `path` (root-relative) as checkpoint `start` holds it. `content` reads the
/// versions; `trees` is a checked tree reader of the same snapshot.
pub fn blame(
    snapshot: &Snapshot,
    trees: &TreeReader<'_>,
    content: &ContentReader<'_>,
    start: CheckpointId,
    path: &[u8],
) -> Result<Blame> {
    let cannot = |why: &str| Error::CannotBlame {
        path: String::from_utf8_lossy(path).into_owned(),
        why: why.to_string(),
    };
    let reader = snapshot.checkpoint_reader()?;
    // Newest first: each distinct version of the file with the oldest checkpoint of the
    // run that holds it (the one that made it so).
    let mut versions: Vec<(Node, CheckpointId, Checkpoint)> = Vec::new();
    let mut last_root: Option<TreeId> = None;
    let mut id = start;
    loop {
        let record = reader.get(id)?;
        let node = if last_root == Some(record.tree) {
            versions.last().map(|(node, ..)| node.clone())
        } else {
            trees.expect(&record);
            node_at(trees, record.tree, path)?
        };
        last_root = Some(record.tree);
        let node = match node {
            Some(node @ (Node::File { .. } | Node::FileWithMode { .. })) => node,
            Some(Node::Dir { .. }) if versions.is_empty() => {
                return Err(cannot("it is a directory"));
            }
            Some(Node::Symlink { .. }) if versions.is_empty() => {
                return Err(cannot("it is a symlink"));
            }
            None if versions.is_empty() => {
                return Err(cannot("no such file in that checkpoint"));
            }
            // Before the file was made (or while it was something else): its history
            // starts after this one.
            _ => break,
        };
        let parent = record.parents.first().copied();
        match versions.last_mut() {
            // A tool call's step that filed a command's result under its session
            // (`made_by_call`) made what that result holds: the call keeps the lines.
            Some(last) if last.0 == node && made_by_call(&last.2) == Some(id) => {}
            Some(last) if last.0 == node => {
                last.1 = id;
                last.2 = record;
            }
            _ => versions.push((node, id, record)),
        }
        match parent {
            Some(parent) => id = parent,
            None => break,
        }
    }

    let mut lines: Vec<BlameLine> = Vec::new();
    let mut previous: Vec<u8> = Vec::new();
    let mut origins = HashMap::new();
    for (node, origin, record) in versions.into_iter().rev() {
        let text = match content.sides(&Change {
            path: path.to_vec(),
            old: None,
            new: Some(node),
        })? {
            (_, content @ Content::Bytes(_)) if !content.is_binary() => content.bytes().to_vec(),
            _ if origin == start || lines.is_empty() => {
                return Err(cannot("it is a binary file"));
            }
            _ => return Err(cannot("a version of it is a binary file")),
        };
        lines = next_lines(&previous, &text, &lines, origin);
        // Lines a version only moved keep their origin; a version whose every line came
        // from elsewhere is named nowhere.
        if lines.iter().any(|l| l.origin == origin) {
            origins.insert(origin, record);
        }
        previous = text;
    }
    Ok(Blame { lines, origins })
}

/// The lines of `new`: the ones the diff from `old` leaves in place keep their entry of
/// `blamed` (the lines of `old`), the others come from `origin`.
fn next_lines(
    old: &[u8],
    new: &[u8],
    blamed: &[BlameLine],
    origin: CheckpointId,
) -> Vec<BlameLine> {
    let input = InternedInput::new(old, new);
    let mut diff = Diff::compute(Algorithm::Myers, &input);
    diff.postprocess_lines(&input);
    let new_lines: Vec<&[u8]> = input.after.iter().map(|&t| input.interner[t]).collect();
    let mut out = Vec::with_capacity(new_lines.len());
    let (mut i, mut j) = (0usize, 0usize);
    let take_new = |out: &mut Vec<BlameLine>, j: usize| {
        out.push(BlameLine {
            origin,
            origin_line: j + 1,
            text: new_lines[j].to_vec(),
        })
    };
    for hunk in diff.hunks() {
        let (before, after) = (hunk.before, hunk.after);
        // The lines up to the hunk are the same on both sides.
        while j < after.start as usize {
            out.push(blamed[i].clone());
            i += 1;
            j += 1;
        }
        i = before.end as usize;
        while j < after.end as usize {
            take_new(&mut out, j);
            j += 1;
        }
    }
    while j < new_lines.len() {
        out.push(blamed[i].clone());
        i += 1;
        j += 1;
    }
    out
}

/// The node at `path` in tree `root`, if there is one.
fn node_at(trees: &TreeReader<'_>, root: TreeId, path: &[u8]) -> Result<Option<Node>> {
    let mut tree = trees.get(root)?;
    let mut parts = path
        .split(|&b| b == b'/')
        .filter(|p| !p.is_empty())
        .peekable();
    while let Some(name) = parts.next() {
        let Some(entry) = tree.entries.iter().find(|e| e.name == name) else {
            return Ok(None);
        };
        match (&entry.node, parts.peek()) {
            (node, None) => return Ok(Some(node.clone())),
            (Node::Dir { tree: sub }, Some(_)) => tree = trees.get_subtree(*sub)?,
            (_, Some(_)) => return Ok(None),
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blamed(text: &str, origin: u128) -> Vec<BlameLine> {
        text.split_inclusive('\n')
            .enumerate()
            .map(|(n, line)| BlameLine {
                origin: CheckpointId(origin),
                origin_line: n + 1,
                text: line.as_bytes().to_vec(),
            })
            .collect()
    }

    #[test]
    fn unchanged_lines_keep_their_origin() {
        let first = blamed("a\nb\nc\n", 1);
        let next = next_lines(b"a\nb\nc\n", b"a\nB\nc\nd\n", &first, CheckpointId(2));
        let origins: Vec<(u128, usize)> =
            next.iter().map(|l| (l.origin.0, l.origin_line)).collect();
        assert_eq!(origins, vec![(1, 1), (2, 2), (1, 3), (2, 4)]);
        assert_eq!(next[1].text, b"B\n");
    }
}
