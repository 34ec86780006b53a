//! Reverting: undo what one checkpoint changed (or a range of them), in today's worktree,
//! keeping everything since, as `git revert` does for a commit.
//!
//! The change undone is "from tree X to tree Y" ([`Undo`]): a checkpoint against its
//! first parent, or a range `A..B`; any revision form that resolves to such a pair plugs
//! in. Each path that differs between X and Y is merged three ways: base Y (what the
//! change made), ours the worktree, theirs X (what was there before). Paths the change did
//! not touch are never looked at.
//!
//! Per path, with O the worktree's node, B the base's and T theirs:
//! - O is B (nothing changed it since): it becomes T (written, or deleted).
//! - O is T already: unchanged.
//! - Files on all three sides: the content and the permission bits are merged apart.
//!   Content: O is B's → T's; T is B's or O's → O's; otherwise a text merge by
//!   [`diffy`] (clean, or with git's conflict markers); binary content is never merged
//!   (conflict, O is left). Bits: O kept B's → T's, else O's.
//! - Anything else (a symlink changed on both sides, a file R created and ours changed
//!   since, a file R deleted that something now occupies, a directory in the way) is a
//!   conflict that leaves the worktree's path as it is.
//!
//! Order of work: the worktree is saved first (the safety checkpoint, beside HEAD's
//! branch, as restore does), the plan is made from exactly what was saved, and only then
//! is anything written, through handles of the directories it concerns
//! ([`crate::worktree`]): a new file or symlink is made under a temporary name beside its
//! target and renamed over it, never written through a path that could be a symlink. A
//! refused revert (`--no-conflicts`) drops its safety checkpoint again and changes nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;

use crate::diff::content::{Content, ContentReader};
use crate::diff::{diff_trees, Change, PathFilter};
use crate::git::repo::Repo;
use crate::model::revision;
use crate::model::tree::Node;
use crate::ops::save::{self, SaveOptions, SaveOutcome, Warning};
use crate::progress::Progress;
use crate::settings::Settings;
use crate::storage::{Snapshot, Store, StoreRead};
use crate::worktree::exempt::ExemptPaths;
use crate::worktree::{temp_name, Worktree, TEMP_LINK_SUFFIX, TEMP_RANDOM_CHARS};
use crate::{CheckpointId, Error, Result, TreeId};

/// The change to undo: from tree `before` to tree `after`. Reverting it makes each path
/// it touched what it was in `before`, merged with what the worktree made of it since.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Undo {
    /// The state the change started from (the merge's "theirs").
    pub before: TreeId,
    /// The state the change made (the merge's base).
    pub after: TreeId,
    /// The checkpoints, where the pair came from checkpoints: (before, after).
    pub checkpoints: Option<(CheckpointId, CheckpointId)>,
    /// How conflict markers name the base side (`3fa9c1e`, `3fa9c1e..8b0d2aa`).
    pub after_label: String,
    /// How they name the side being gone back to (`parent of 3fa9c1e`).
    pub before_label: String,
}

impl Undo {
    /// The change `rev` names ([`Snapshot::resolve_change`]): a checkpoint against its
    /// first parent, a range `A..B` (from A to B) or a prompt's turn `<session>:turn<N>`
    /// (from its before-prompt checkpoint to its end). A first checkpoint has no parent
    /// to go back to: an error.
    pub fn resolve(snapshot: &Snapshot, rev: &str) -> Result<Undo> {
        let change = snapshot.resolve_change(rev)?;
        let to_short = snapshot.short_id(change.to)?;
        let Some(from) = change.from else {
            return Err(Error::NoParentToRevert {
                rev: rev.to_string(),
                checkpoint: to_short,
            });
        };
        let from_short = snapshot.short_id(from)?;
        let single = !change.turn && revision::parse_range(rev)?.is_none();
        let (before_label, after_label) = if single {
            (format!("parent of {to_short}"), to_short)
        } else {
            (from_short.clone(), format!("{from_short}..{to_short}"))
        };
        Ok(Undo {
            before: snapshot.checkpoint(from)?.tree,
            after: snapshot.checkpoint(change.to)?.tree,
            checkpoints: Some((from, change.to)),
            after_label,
            before_label,
        })
    }
}

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

/// How a revert runs.
#[derive(Clone, Debug, Default)]
pub struct RevertOptions {
    /// Plan only: change nothing, the store included.
    pub dry_run: bool,
    /// Change nothing if any path would conflict.
    pub no_conflicts: bool,
    /// How text conflicts are written.
    pub conflict_style: ConflictStyle,
    /// The `checkpoint.*` settings the safety save applies, from the caller's
    /// [`crate::ops::workspace::Workspace`].
    pub settings: Settings,
    /// Where to report progress, if anywhere.
    pub progress: Option<Arc<dyn Progress>>,
}

/// What became of one path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// The change to it was undone (written or deleted).
    Applied,
    /// Both the change and the worktree changed it; see [`PathReport::markers`].
    Conflict,
    /// Nothing to do: it is already as it was before the change, or the merge gives
    /// what the worktree holds.
    Unchanged,
}

impl Status {
    /// The word `--json` and the text report use.
    pub fn name(self) -> &'static str {
        match self {
            Status::Applied => "applied",
            Status::Conflict => "conflict",
            Status::Unchanged => "unchanged",
        }
    }
}

/// A file or symlink as the revert writes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Written {
    /// A regular file.
    File {
        /// Its content.
        bytes: Vec<u8>,
        /// Its permission bits, when they are not git's two (a `0600` key file).
        mode: Option<u32>,
        /// Whether it is executable (git's notion).
        executable: bool,
    },
    /// A symlink and its target.
    Symlink(Vec<u8>),
}

/// What the revert did (or would do) to one path the change touched.
#[derive(Clone, Debug)]
pub struct PathReport {
    /// Its worktree path.
    pub path: Vec<u8>,
    /// What became of it.
    pub status: Status,
    /// For a conflict: whether the file was written with conflict markers (a text
    /// conflict) or left as the worktree had it.
    pub markers: bool,
    /// Why, in a few words, for conflicts and unchanged paths.
    pub why: Option<String>,
    /// The worktree's node before the revert (`None`: nothing there).
    pub ours: Option<Node>,
    /// The worktree's content before the revert, read for a dry run's diff (`Absent`
    /// otherwise).
    pub ours_content: Content,
    /// What the path holds after the revert; `None` for a deletion, or when nothing is
    /// written.
    pub result: Option<Written>,
}

/// What a revert did, or would do.
#[derive(Debug, Default)]
pub struct RevertReport {
    /// The checkpoint the worktree was saved as first, if it had unsaved changes.
    pub safety_checkpoint: Option<CheckpointId>,
    /// The checkpoint holding the worktree as the revert found it: the safety checkpoint,
    /// or the current one when nothing was unsaved. Restoring it undoes the revert.
    pub worktree: Option<CheckpointId>,
    /// Whether a dry run found unsaved changes that a real run would save first.
    pub would_save: bool,
    /// Whether nothing was changed because this was a dry run.
    pub dry_run: bool,
    /// Every path the change touched, sorted.
    pub paths: Vec<PathReport>,
    /// Things the user should hear about.
    pub warnings: Vec<Warning>,
}

impl RevertReport {
    /// The paths with `status`.
    pub fn with(&self, status: Status) -> impl Iterator<Item = &PathReport> {
        self.paths.iter().filter(move |p| p.status == status)
    }

    /// The conflicting paths, as shown to the user.
    pub fn conflicts(&self) -> Vec<String> {
        self.with(Status::Conflict)
            .map(|p| String::from_utf8_lossy(&p.path).into_owned())
            .collect()
    }
}

/// Reverts `undo` in the worktree: saves it first, merges each path the change touched,
/// and writes the result. Conflicts are written (or left) and reported; with
/// `no_conflicts`, any conflict refuses the whole revert before anything changes. A dry
/// run is [`dry_run`].
pub fn revert(
    repo: &Repo,
    store: &Store,
    undo: &Undo,
    options: &RevertOptions,
) -> Result<RevertReport> {
    if options.dry_run {
        return dry_run(repo, store, undo, options);
    }
    let mut report = RevertReport::default();
    let saved = save::save(
        repo,
        store,
        &SaveOptions {
            message: format!("before revert of {}", undo.after_label),
            // Recorded as skipped, so the revert leaves them alone.
            skip_unreadable: true,
            // A watcher cannot see every change; the revert must miss none.
            walk: true,
            settings: options.settings.clone(),
            progress: options.progress.clone(),
            keep_head: true,
            ..SaveOptions::default()
        },
    )?;
    report.warnings.extend(saved.warnings);
    let ours_id = match saved.outcome {
        SaveOutcome::Saved { id, .. } => {
            report.safety_checkpoint = Some(id);
            id
        }
        SaveOutcome::Unchanged { current } => current,
    };
    report.worktree = Some(ours_id);
    let snapshot = store.snapshot()?;
    let ours_tree = snapshot.checkpoint(ours_id)?.tree;
    let skipped: BTreeSet<Vec<u8>> = saved.skipped.into_iter().map(|s| s.path).collect();
    let chunks = snapshot.chunks()?;
    let reader = ContentReader::new(&store.hasher, &chunks, None);
    let planned = plan(
        repo,
        &snapshot,
        (ours_tree, None),
        &skipped,
        undo,
        &reader,
        &reader,
        options,
    );
    let planned = match planned {
        Ok(planned) => planned,
        Err(e) => {
            drop(snapshot);
            forget(store, report.safety_checkpoint);
            return Err(e);
        }
    };
    drop(snapshot);
    report.paths = planned;
    let conflicts = report.conflicts();
    if options.no_conflicts && !conflicts.is_empty() {
        forget(store, report.safety_checkpoint);
        return Err(Error::RevertWouldConflict { paths: conflicts });
    }
    if !report
        .paths
        .iter()
        .any(|p| p.status == Status::Applied || p.markers)
    {
        // Nothing is written: the worktree is as it was saved, and needs no way back.
        forget(store, report.safety_checkpoint);
        report.safety_checkpoint = None;
        report.worktree = None;
        return Ok(report);
    }
    // Something may have changed the worktree since it was saved (an agent still at
    // work): what the plan replaces must still be what it merged, else nothing is done.
    crate::fault::point("revert-planned");
    if let Err(e) = still_as_saved(repo, &report.paths) {
        forget(store, report.safety_checkpoint);
        return Err(e);
    }
    // HEAD's branch takes the safety checkpoint, as a save would have moved it: the
    // worktree it records is the one the revert starts from.
    if let Some(safety) = report.safety_checkpoint {
        let txn = store.transaction()?;
        txn.move_head(safety)?;
        txn.commit()?;
    }
    let changed = apply(repo, &report.paths)?;
    // The stat cache may hold the old files' metadata, equal in size and time to the new
    // ones within the clock's grain: forgotten, so the next save reads them.
    let txn = store.transaction()?;
    txn.forget_cached(&changed)?;
    txn.commit()?;
    Ok(report)
}

/// What [`revert`] would do, changing nothing: not the worktree, not the store, which
/// may be open only for reading. Each path's worktree content is read for the diff.
pub fn dry_run(
    repo: &Repo,
    store: &impl StoreRead,
    undo: &Undo,
    options: &RevertOptions,
) -> Result<RevertReport> {
    let scan = save::look_by_walking(repo, &options.settings, store, options.progress.as_deref())?;
    let snapshot = store.snapshot()?;
    let current_tree = match snapshot.current()? {
        Some(id) => Some(snapshot.checkpoint(id)?.tree),
        None => None,
    };
    let skipped: BTreeSet<Vec<u8>> = scan.skipped.iter().map(|s| s.path.clone()).collect();
    let chunks = snapshot.chunks()?;
    let stored = ContentReader::new(store.hasher(), &chunks, None);
    // The scan stored nothing: the worktree's side is read from the files themselves.
    let worktree = ContentReader::new(store.hasher(), &chunks, Some(&repo.root));
    let mut paths = plan(
        repo,
        &snapshot,
        (scan.root, Some(&scan.trees)),
        &skipped,
        undo,
        &stored,
        &worktree,
        options,
    )?;
    for path in paths
        .iter_mut()
        .filter(|p| p.result.is_some() || p.status == Status::Applied)
    {
        path.ours_content = read_ours(&worktree, &path.path, path.ours.as_ref())?;
    }
    Ok(RevertReport {
        would_save: current_tree != Some(scan.root),
        dry_run: true,
        paths,
        warnings: scan.warnings,
        ..RevertReport::default()
    })
}

/// Drops the safety checkpoint `id` a revert made and no longer needs, as restore drops
/// its own: nothing points at it (it was saved beside HEAD's branch). Should that fail,
/// it stays beside the branch, which is harmless.
fn forget(store: &Store, id: Option<CheckpointId>) {
    let Some(id) = id else { return };
    let dropped = store.snapshot().and_then(|snapshot| {
        crate::ops::gc::plan_drop(&snapshot, &BTreeSet::from([id]), &BTreeSet::new())
    });
    if let Ok(plan) = dropped {
        let _ = crate::ops::gc::commit(store, &plan);
    }
}

/// The merge of every path `undo` touched with the worktree (`ours`: its tree, with its
/// pending trees if only scanned). `stored` reads the two sides of the change, `ours`
/// the worktree's side.
#[allow(clippy::too_many_arguments)]
fn plan(
    repo: &Repo,
    snapshot: &Snapshot,
    ours: (TreeId, Option<&crate::model::PendingTrees>),
    skipped: &BTreeSet<Vec<u8>>,
    undo: &Undo,
    stored: &ContentReader<'_>,
    ours_reader: &ContentReader<'_>,
    options: &RevertOptions,
) -> Result<Vec<PathReport>> {
    let tree_reader = snapshot.checked_trees(ours.1)?;
    // old: theirs (before the change), new: the base (what the change made).
    let reverted = diff_trees(
        &tree_reader,
        Some(undo.before),
        Some(undo.after),
        &PathFilter::default(),
    )?;
    if reverted.is_empty() {
        return Ok(Vec::new());
    }
    // What the worktree changed since, on those paths only: old the base, new ours.
    let filter = PathFilter::new(reverted.iter().map(|c| c.path.clone()).collect());
    let since: BTreeMap<Vec<u8>, Change> =
        diff_trees(&tree_reader, Some(undo.after), Some(ours.0), &filter)?
            .into_iter()
            .map(|c| (c.path.clone(), c))
            .collect();
    let mut exempt = ExemptPaths::of(repo);
    let worktree = Worktree::open(&repo.root)?;
    let mut out = Vec::with_capacity(reverted.len());
    for change in reverted {
        let (theirs, base) = (change.old.as_ref(), change.new.as_ref());
        let ours_node = match since.get(&change.path) {
            Some(c) => c.new.clone(),
            None => base.cloned(),
        };
        let mut entry = PathReport {
            path: change.path.clone(),
            status: Status::Unchanged,
            markers: false,
            why: None,
            ours: ours_node.clone(),
            ours_content: Content::Absent,
            result: None,
        };
        let conflict = |entry: &mut PathReport, why: &str| {
            entry.status = Status::Conflict;
            entry.why = Some(why.to_string());
        };
        // A directory of the worktree where the change had a file: something below it
        // differs from the base.
        let mut below = change.path.clone();
        below.push(b'/');
        let directory_here = since
            .range(below.clone()..)
            .next()
            .is_some_and(|(p, c)| p.starts_with(&below) && c.new.is_some());
        if exempt.contains(&change.path) {
            entry.why = Some(
                "a revert never changes the git dir, a linked worktree or an agent's settings"
                    .into(),
            );
        } else if skipped.contains(&change.path) {
            conflict(&mut entry, "no checkpoint holds what the worktree has there (larger than checkpoint.maxFileSize, or unreadable); left as it is");
        } else if directory_here {
            conflict(
                &mut entry,
                "the worktree has a directory here now; left as it is",
            );
        } else if same(ours_node.as_ref(), theirs) {
            entry.why = Some("already as it was before the change".into());
        } else if same(ours_node.as_ref(), base) {
            match theirs {
                None => {
                    entry.status = Status::Applied;
                }
                Some(node) => {
                    if ours_node.is_none() && occupied(&worktree, &change.path)? {
                        conflict(&mut entry, "something no checkpoint holds is there now (an ignored file?); left as it is");
                    } else {
                        match written(node, read(stored, &change.path, node)?) {
                            Some(result) => {
                                entry.status = Status::Applied;
                                entry.result = Some(result);
                            }
                            None => conflict(
                                &mut entry,
                                "too big to revert by merging; use restore <rev> -- <path>",
                            ),
                        }
                    }
                }
            }
        } else {
            merge_changed(
                &mut entry,
                (base, ours_node.as_ref(), theirs),
                stored,
                ours_reader,
                undo,
                options.conflict_style,
            )?;
        }
        out.push(entry);
    }
    Ok(out)
}

/// The merge of a path that both the change and the worktree changed (O is neither B
/// nor T): only files on all three sides are merged; anything else conflicts, left as
/// the worktree has it.
fn merge_changed(
    entry: &mut PathReport,
    (base, ours, theirs): (Option<&Node>, Option<&Node>, Option<&Node>),
    stored: &ContentReader<'_>,
    ours_reader: &ContentReader<'_>,
    undo: &Undo,
    style: ConflictStyle,
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
            style,
        ) {
            Ok(clean) => Content::Bytes(clean),
            Err(marked) => {
                entry.status = Status::Conflict;
                entry.markers = true;
                entry.why = Some("changed on both sides; conflict markers written".into());
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
fn text_merge(
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
fn same(a: Option<&Node>, b: Option<&Node>) -> bool {
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
fn same_content(a: &Node, b: &Node) -> bool {
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

fn is_file(node: &Node) -> bool {
    matches!(node, Node::File { .. } | Node::FileWithMode { .. })
}

/// A file's permission bits as the checkpoint records them.
fn bits(node: &Node) -> u32 {
    match node {
        Node::FileWithMode { mode, .. } => *mode & 0o777,
        _ if node.is_executable() => 0o755,
        _ => 0o644,
    }
}

/// A stored node's content.
fn read(stored: &ContentReader<'_>, path: &[u8], node: &Node) -> Result<Content> {
    let change = Change {
        path: path.to_vec(),
        old: Some(node.clone()),
        new: None,
    };
    Ok(stored.sides(&change)?.0)
}

/// The worktree's content at `path` (through a reader of the worktree in a dry run, of
/// the safety checkpoint otherwise).
fn read_ours(ours: &ContentReader<'_>, path: &[u8], node: Option<&Node>) -> Result<Content> {
    let change = Change {
        path: path.to_vec(),
        old: None,
        new: node.cloned(),
    };
    Ok(ours.sides(&change)?.1)
}

/// What to write for `node`'s kind and bits with `content`; `None` for content too big
/// to have been read.
fn written(node: &Node, content: Content) -> Option<Written> {
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

/// Whether anything (a file the scan left out: ignored, or new) is at `path`.
fn occupied(worktree: &Worktree, path: &[u8]) -> Result<bool> {
    let (dir, name) = split_name(path);
    match worktree.dir(dir, false) {
        Ok(Some(dir)) => Ok(dir.kind(name)?.is_some()),
        Ok(None) => Ok(false),
        // A symlink or a file where a directory of the path belongs: in the way.
        Err(_) => Ok(true),
    }
}

/// `path` split at its last `/` into its directory (empty at the top) and its name.
fn split_name(path: &[u8]) -> (&[u8], &[u8]) {
    match path.iter().rposition(|&b| b == b'/') {
        Some(slash) => (&path[..slash], &path[slash + 1..]),
        None => (&[], path),
    }
}

/// Checks, before anything is written, that each path the plan changes still holds
/// what the plan merged: the same kind (or nothing), a file of the same size and
/// executable bit, a symlink to the same target. A cheap look that catches a file
/// rewritten since the save; content rewritten in place at the same size within the
/// moment between is left to the safety checkpoint, which holds what was merged.
fn still_as_saved(repo: &Repo, paths: &[PathReport]) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    for entry in paths
        .iter()
        .filter(|p| p.status == Status::Applied || p.markers)
    {
        let full = repo.root.join(std::ffi::OsStr::from_bytes(&entry.path));
        let found = match std::fs::symlink_metadata(&full) {
            Ok(meta) => Some(meta),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(Error::io(full, e)),
        };
        let same = match (&entry.ours, &found) {
            (None, None) => true,
            (Some(Node::Symlink { target }), Some(meta)) => {
                meta.file_type().is_symlink()
                    && std::fs::read_link(&full)
                        .is_ok_and(|t| t.as_os_str().as_bytes() == target.as_slice())
            }
            (Some(node), Some(meta)) if is_file(node) => {
                let size = match node {
                    Node::File { size, .. } | Node::FileWithMode { size, .. } => *size,
                    _ => 0,
                };
                meta.is_file()
                    && meta.len() == size
                    && (meta.mode() & 0o100 != 0) == node.is_executable()
            }
            _ => false,
        };
        if !same {
            return Err(Error::RevertRaced { path: full });
        }
    }
    Ok(())
}

/// Writes the plan: deletions first (a file may give way to a directory the change had),
/// then each new file or symlink under a temporary name beside its target, renamed over
/// it. Returns the paths changed.
fn apply(repo: &Repo, paths: &[PathReport]) -> Result<Vec<Vec<u8>>> {
    let worktree = Worktree::open(&repo.root)?;
    let mut changed = Vec::new();
    for entry in paths
        .iter()
        .filter(|p| p.status == Status::Applied && p.result.is_none())
    {
        let (dir, name) = split_name(&entry.path);
        if let Some(handle) = worktree.dir(dir, false)? {
            handle.remove_file(name)?;
            changed.push(entry.path.clone());
        }
        remove_empty_parents(&worktree, dir);
    }
    for entry in paths.iter().filter(|p| p.status != Status::Unchanged) {
        let Some(result) = &entry.result else {
            continue;
        };
        let (dir_path, name) = split_name(&entry.path);
        let dir = worktree.dir(dir_path, true)?.ok_or_else(|| {
            Error::io(
                worktree.display(dir_path),
                std::io::Error::from(std::io::ErrorKind::NotFound),
            )
        })?;
        if dir.kind(name)? == Some(rustix::fs::FileType::Directory) {
            // Emptied by the deletions above, or holding what the plan did not see.
            dir.remove_dir_if_empty(name);
        }
        let tmp = match result {
            Written::Symlink(target) => {
                let tmp = temp_name(TEMP_RANDOM_CHARS, TEMP_LINK_SUFFIX);
                if !dir.symlink(target, &tmp)? {
                    return Err(Error::io(
                        dir.display(&tmp),
                        std::io::Error::from(std::io::ErrorKind::AlreadyExists),
                    ));
                }
                tmp
            }
            Written::File {
                bytes,
                mode,
                executable,
            } => {
                let tmp = temp_name(TEMP_RANDOM_CHARS, "");
                // git's two modes go through the umask as any new file; a file's own
                // bits are set exactly once written (owner-only until then).
                let create = match (mode, executable) {
                    (Some(_), _) => 0o600,
                    (None, true) => 0o777,
                    (None, false) => 0o666,
                };
                let Some(mut file) = dir.create_file(&tmp, create)? else {
                    return Err(Error::io(
                        dir.display(&tmp),
                        std::io::Error::from(std::io::ErrorKind::AlreadyExists),
                    ));
                };
                let done = file
                    .write_all(bytes)
                    .and_then(|()| match mode {
                        Some(mode) => file.set_permissions(std::fs::Permissions::from_mode(*mode)),
                        None => Ok(()),
                    })
                    .and_then(|()| file.sync_all());
                if let Err(e) = done {
                    drop(file);
                    let _ = dir.remove_file(&tmp);
                    return Err(Error::io(dir.display(&entry.path), e));
                }
                tmp
            }
        };
        if let Err(e) = dir.rename(&tmp, name) {
            let _ = dir.remove_file(&tmp);
            return Err(e);
        }
        changed.push(entry.path.clone());
    }
    Ok(changed)
}

/// Removes `dir` and the directories above it while they are empty, as git does when a
/// revert deletes a directory's last file.
fn remove_empty_parents(worktree: &Worktree, mut dir: &[u8]) {
    while !dir.is_empty() {
        let (parent, name) = split_name(dir);
        let Ok(Some(handle)) = worktree.dir(parent, false) else {
            return;
        };
        handle.remove_dir_if_empty(name);
        if matches!(handle.kind(name), Ok(Some(_))) {
            return;
        }
        dir = parent;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn undo() -> Undo {
        Undo {
            before: TreeId::default(),
            after: TreeId::default(),
            checkpoints: None,
            after_label: "3fa9c1e".into(),
            before_label: "parent of 3fa9c1e".into(),
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
