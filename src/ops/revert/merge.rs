//! The merge of one path that both the change and the worktree changed: permission bits
//! apart from content, text by [`diffy`] with git's conflict markers relabelled as
//! `git revert` labels them, in the style `merge.conflictStyle` names
//! ([`ConflictStyle`]); and the small node comparisons and reads the plan shares.

use crate::diff::content::{Content, ContentReader};
use crate::diff::Change;
use crate::git::repo::Repo;
use crate::model::tree::Node;
use crate::Result;

use super::{PathReport, RevertOptions, Status, Undo, Written};

/// How conflicts are written (git's `merge.conflictStyle`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ConflictStyle {
    /// `<<<<<<<` ours `=======` theirs `>>>>>>>`.
    #[default]
    Merge,
    /// The same with the base between `|||||||` and `=======`.
    Diff3,
}

impl ConflictStyle {
    /// The style git's `merge.conflictStyle` value asks for, and a warning when it is
    /// one this build writes differently: `zdiff3` is written as `diff3` (the merge
    /// library has no zealous variant; the base is shown all the same), and an unknown
    /// value as `merge`, git's default.
    pub fn from_config(value: &str) -> (ConflictStyle, Option<String>) {
        match value.trim().to_ascii_lowercase().as_str() {
            "" | "merge" => (ConflictStyle::Merge, None),
            "diff3" => (ConflictStyle::Diff3, None),
            "zdiff3" => (
                ConflictStyle::Diff3,
                Some("merge.conflictStyle is zdiff3; conflicts are written as diff3 (the same markers, with the lines both sides share left inside them)".into()),
            ),
            other => (
                ConflictStyle::Merge,
                Some(format!(
                    "merge.conflictStyle '{other}' is unknown; conflicts are written in the merge style"
                )),
            ),
        }
    }

    /// The style the repository's git configuration asks for (`merge.conflictStyle`),
    /// with a warning as [`ConflictStyle::from_config`] gives one.
    pub fn of_repo(repo: &Repo) -> Result<(ConflictStyle, Option<String>)> {
        let value = crate::git::repo::git(
            &repo.root,
            &[
                "config",
                "--default",
                "merge",
                "--get",
                "merge.conflictStyle",
            ],
        )?;
        Ok(ConflictStyle::from_config(&String::from_utf8_lossy(&value)))
    }

    /// The name git gives it.
    pub fn name(self) -> &'static str {
        match self {
            ConflictStyle::Merge => "merge",
            ConflictStyle::Diff3 => "diff3",
        }
    }
}

/// The merge of a path that both the change and the worktree changed (O is neither B
/// nor T): only files on all three sides are merged; anything else conflicts, left as
/// the worktree has it.
pub(super) fn merge_changed(
    entry: &mut PathReport,
    (base, ours, theirs): (Option<&Node>, Option<&Node>, Option<&Node>),
    stored: &ContentReader<'_>,
    ours_reader: &ContentReader<'_>,
    undo: &Undo,
    options: &RevertOptions,
) -> Result<()> {
    let path = entry.path.clone();
    let left = |entry: &mut PathReport, why: &str| {
        entry.status = Status::Conflict;
        entry.why = Some(format!("{why}; left as it is"));
    };
    let (Some(b), Some(o), Some(t)) = (base, ours, theirs) else {
        let why = match (base, ours, theirs) {
            (None, Some(_), _) => "the change deleted it, and the worktree has it again",
            (_, None, _) => "the worktree deleted it since",
            (Some(_), Some(_), None) => "the change created it, and the worktree changed it since",
            _ => "changed on both sides",
        };
        left(entry, why);
        return Ok(());
    };
    if !is_file(b) || !is_file(o) || !is_file(t) {
        left(entry, "a symlink changed on both sides");
        return Ok(());
    }
    // The permission bits, merged apart from the content.
    let mode = if bits(o) == bits(b) {
        t
    } else if bits(t) == bits(b) || bits(o) == bits(t) {
        o
    } else {
        left(entry, "its permission bits changed on both sides");
        return Ok(());
    };
    let content = if same_content(o, b) {
        read(stored, &path, t)?
    } else if same_content(t, b) || same_content(o, t) {
        read_ours(ours_reader, &path, Some(o))?
    } else {
        let (b_bytes, o_bytes, t_bytes) = (
            read(stored, &path, b)?,
            read_ours(ours_reader, &path, Some(o))?,
            read(stored, &path, t)?,
        );
        if b_bytes.is_binary() || o_bytes.is_binary() || t_bytes.is_binary() {
            left(entry, "binary, and changed on both sides");
            return Ok(());
        }
        match text_merge(
            b_bytes.bytes(),
            o_bytes.bytes(),
            t_bytes.bytes(),
            undo,
            options.conflict_style,
        ) {
            Ok(clean) => Content::Bytes(clean),
            Err(marked) => {
                entry.status = Status::Conflict;
                entry.markers = true;
                entry.why = Some(if options.dry_run {
                    "changed on both sides; conflict markers would be written".into()
                } else {
                    "changed on both sides; conflict markers written".into()
                });
                entry.result = written(o, Content::Bytes(marked));
                return Ok(());
            }
        }
    };
    let Some(result) = written(mode, content) else {
        left(entry, "too big to merge");
        return Ok(());
    };
    let unchanged = match (&result, o) {
        (Written::File { bytes, .. }, _) if bits(mode) == bits(o) => {
            let ours_bytes = read_ours(ours_reader, &path, Some(o))?;
            ours_bytes.bytes() == bytes.as_slice()
        }
        _ => false,
    };
    if unchanged {
        entry.why = Some("the merge gives what the worktree holds".into());
    } else {
        entry.status = Status::Applied;
        entry.result = Some(result);
    }
    Ok(())
}

/// The three-way text merge of `base`, `ours` and `theirs` by [`diffy`]: `Ok` when clean,
/// `Err` with git's conflict markers. diffy labels the sides `ours`, `original` and
/// `theirs`; those lines are renamed as git's revert names them (the worktree, the
/// change, the state before it), unless one of the inputs holds such a line itself, where
/// a renaming could not tell them apart.
pub(super) fn text_merge(
    base: &[u8],
    ours: &[u8],
    theirs: &[u8],
    undo: &Undo,
    style: ConflictStyle,
) -> std::result::Result<Vec<u8>, Vec<u8>> {
    let mut options = diffy::MergeOptions::new();
    options
        .set_conflict_style(match style {
            ConflictStyle::Merge => diffy::ConflictStyle::Merge,
            ConflictStyle::Diff3 => diffy::ConflictStyle::Diff3,
        })
        // Every marker at the start of a line, as `git merge-file` writes them.
        .set_incomplete_hunk_style(diffy::IncompleteHunkStyle::Git);
    let marked = match options.merge_bytes(base, ours, theirs) {
        Ok(clean) => return Ok(clean),
        Err(marked) => marked,
    };
    let labels: [(&[u8], String); 3] = [
        (b"<<<<<<< ours", "<<<<<<< worktree".to_string()),
        (b"||||||| original", format!("||||||| {}", undo.after_label)),
        (b">>>>>>> theirs", format!(">>>>>>> {}", undo.before_label)),
    ];
    let holds = |text: &[u8]| {
        text.split(|&b| b == b'\n')
            .any(|line| labels.iter().any(|(from, _)| line == *from))
    };
    if holds(base) || holds(ours) || holds(theirs) {
        return Err(marked);
    }
    let mut out = Vec::with_capacity(marked.len());
    for (i, line) in marked.split(|&b| b == b'\n').enumerate() {
        if i > 0 {
            out.push(b'\n');
        }
        match labels.iter().find(|(from, _)| line == *from) {
            Some((_, to)) => out.extend_from_slice(to.as_bytes()),
            None => out.extend_from_slice(line),
        }
    }
    Err(out)
}

/// Whether two sides hold the same thing: both absent, or the same kind with the same
/// content and permission bits.
pub(super) fn same(a: Option<&Node>, b: Option<&Node>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => {
            is_file(a) == is_file(b) && same_content(a, b) && (!is_file(a) || bits(a) == bits(b))
        }
        _ => false,
    }
}

/// Whether two nodes hold the same content: chunks are cut from the content alone, so
/// equal content has equal chunk lists.
pub(super) fn same_content(a: &Node, b: &Node) -> bool {
    match (a, b) {
        (Node::Symlink { target: x }, Node::Symlink { target: y }) => x == y,
        (
            Node::File {
                size: sx,
                chunks: cx,
                ..
            }
            | Node::FileWithMode {
                size: sx,
                chunks: cx,
                ..
            },
            Node::File {
                size: sy,
                chunks: cy,
                ..
            }
            | Node::FileWithMode {
                size: sy,
                chunks: cy,
                ..
            },
        ) => sx == sy && cx == cy,
        _ => false,
    }
}

/// Whether `node` is a regular file (with git's modes or its own bits).
pub(super) fn is_file(node: &Node) -> bool {
    matches!(node, Node::File { .. } | Node::FileWithMode { .. })
}

/// A file's permission bits as the checkpoint records them.
pub(super) fn bits(node: &Node) -> u32 {
    match node {
        Node::FileWithMode { mode, .. } => *mode & 0o777,
        _ if node.is_executable() => 0o755,
        _ => 0o644,
    }
}

/// A stored node's content.
pub(super) fn read(stored: &ContentReader<'_>, path: &[u8], node: &Node) -> Result<Content> {
    let change = Change {
        path: path.to_vec(),
        old: Some(node.clone()),
        new: None,
    };
    Ok(stored.sides(&change)?.0)
}

/// The worktree's content at `path` (through a reader of the worktree in a dry run, of
/// the safety checkpoint otherwise).
pub(super) fn read_ours(
    ours: &ContentReader<'_>,
    path: &[u8],
    node: Option<&Node>,
) -> Result<Content> {
    let change = Change {
        path: path.to_vec(),
        old: None,
        new: node.cloned(),
    };
    Ok(ours.sides(&change)?.1)
}

/// What to write for `node`'s kind and bits with `content`; `None` for content too big
/// to have been read.
pub(super) fn written(node: &Node, content: Content) -> Option<Written> {
    let Content::Bytes(bytes) = content else {
        return None;
    };
    Some(match node {
        Node::Symlink { .. } => Written::Symlink(bytes),
        Node::FileWithMode { mode, .. } => Written::File {
            bytes,
            mode: Some(*mode & 0o777),
            executable: mode & 0o100 != 0,
        },
        _ => Written::File {
            bytes,
            mode: None,
            executable: node.is_executable(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::TreeId;

    fn undo() -> Undo {
        Undo {
            before: TreeId::default(),
            after: TreeId::default(),
            checkpoints: None,
            after_label: "3fa9c1e".into(),
            before_label: "parent of 3fa9c1e".into(),
            revision: "3fa9c1e".into(),
            paths: Vec::new(),
        }
    }

    fn lines(with: &[(usize, &str)]) -> Vec<u8> {
        let mut out = String::new();
        for n in 1..=10 {
            match with.iter().find(|(at, _)| *at == n) {
                Some((_, line)) => out.push_str(line),
                None => out.push_str(&format!("line {n}")),
            }
            out.push('\n');
        }
        out.into_bytes()
    }

    #[test]
    fn changes_apart_merge_cleanly() {
        let base = lines(&[(5, "five")]);
        let ours = lines(&[(5, "five"), (8, "eight")]);
        let theirs = lines(&[]);
        let merged = text_merge(&base, &ours, &theirs, &undo(), ConflictStyle::Merge);
        assert_eq!(merged, Ok(lines(&[(8, "eight")])));
    }

    #[test]
    fn conflicts_are_labelled_as_git_revert_labels_them() {
        let (base, ours, theirs) = (b"a\nb2\nc\n", b"a\nb3\nc\n", b"a\nb\nc\n");
        let marked = text_merge(base, ours, theirs, &undo(), ConflictStyle::Diff3).unwrap_err();
        assert_eq!(
            String::from_utf8(marked).unwrap(),
            "a\n<<<<<<< worktree\nb3\n||||||| 3fa9c1e\nb2\n=======\nb\n>>>>>>> parent of 3fa9c1e\nc\n"
        );
        // A file that holds a line like diffy's own label keeps diffy's labels: a
        // renaming could not tell the two apart.
        let ours = b"a\n<<<<<<< ours\nc\n";
        let marked = text_merge(base, ours, theirs, &undo(), ConflictStyle::Merge).unwrap_err();
        assert!(String::from_utf8(marked)
            .unwrap()
            .contains(">>>>>>> theirs\n"));
    }

    #[test]
    fn conflict_styles_read_as_git_names_them() {
        assert_eq!(
            ConflictStyle::from_config("merge\n"),
            (ConflictStyle::Merge, None)
        );
        assert_eq!(
            ConflictStyle::from_config("Diff3"),
            (ConflictStyle::Diff3, None)
        );
        let (style, warning) = ConflictStyle::from_config("zdiff3");
        assert_eq!(style, ConflictStyle::Diff3);
        assert!(warning.unwrap().contains("written as diff3"));
        assert_eq!(ConflictStyle::from_config("odd").0, ConflictStyle::Merge);
    }
}
