//! A process racing a restore: while the restore runs (paused at a point inside its
//! deletions, its staging of files, or its renames), another process moves a directory
//! the restore has already checked or made, and puts a symlink to an outside directory
//! in its place. Nothing outside the worktree may change, and the restore either
//! finishes with the exact target or fails and is finished by running it again.

use crate::common;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use common::{assert_snap_eq, Repo};

const DIRS: usize = 4;
const FILES: usize = 20;

/// Every file below `dir` (following nothing) with its content: the outside directory
/// must keep exactly this.
fn manifest(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let entry = entry.unwrap();
            let path = entry.path();
            if entry.file_type().unwrap().is_dir() {
                stack.push(path);
            } else {
                let content = std::fs::read(&path).unwrap_or_default();
                out.insert(path.strip_prefix(dir).unwrap().to_path_buf(), content);
            }
        }
    }
    out
}

fn fill(repo: &Repo, dirs: std::ops::Range<usize>, version: &str) {
    for d in dirs {
        for f in 0..FILES {
            repo.write(
                format!("d{d}/f{f:02}"),
                format!("{version} d{d} f{f}\n").as_bytes(),
            );
        }
    }
}

/// Runs `restore <target>` paused at `point`, swaps its directories for symlinks to
/// `outside` while it waits there, and returns whether the restore succeeded.
fn restore_racing_a_swap(
    repo: &Repo,
    target: &str,
    point: &str,
    outside: &Path,
    round: usize,
) -> bool {
    let started = Instant::now();
    let child = common::spawn_paused(repo, &["restore", target], point, 400);
    // Every directory the restore works in, whichever it has done already: the order
    // in which it goes through them is its own business.
    for d in 1..DIRS {
        let victim = repo.p(format!("d{d}"));
        // Only one of the restore's threads waits at the point; another may make the
        // directory between the look and the swap, and then it is moved away in turn.
        for attempt in 0.. {
            if std::fs::symlink_metadata(&victim).is_ok() {
                let moved = repo.sb.root.join(format!("moved-{round}-{d}-{attempt}"));
                std::fs::rename(&victim, moved).unwrap();
            }
            match std::os::unix::fs::symlink(outside, &victim) {
                Ok(()) => break,
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempt < 100 => {}
                Err(e) => panic!("cannot swap d{d} for a symlink: {e}"),
            }
        }
    }
    let out = child.wait_with_output().unwrap();
    common::assert_no_panic(
        &common::Out {
            code: out.status.code().unwrap_or(-1),
            signal: None,
            stdout: String::new(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            stdout_raw: Vec::new(),
            started,
            finished: Instant::now(),
        },
        point,
    );
    out.status.success()
}

#[test]
fn a_directory_swapped_for_a_symlink_mid_restore_never_leads_outside() {
    let repo = Repo::new();
    let outside = repo.scratch("outside");
    for f in 0..FILES {
        std::fs::write(outside.join(format!("f{f:02}")), format!("outside {f}\n")).unwrap();
    }
    let before = manifest(&outside);

    fill(&repo, 0..DIRS, "full");
    let full = repo.save("every directory full");
    let full_snap = repo.snapshot();
    for d in 1..DIRS {
        repo.remove(format!("d{d}"));
    }
    fill(&repo, 0..1, "changed");
    let sparse = repo.save("only d0");
    let sparse_snap = repo.snapshot();

    // From the sparse tree to the full one the restore makes directories and writes
    // files; from the full one to the sparse one it deletes files.
    let rounds = [
        (&full, &full_snap, "restore-mid-write"),
        (&full, &full_snap, "restore-mid-rename"),
        (&sparse, &sparse_snap, "restore-mid-delete"),
    ];
    for (round, (target, want, point)) in rounds.iter().cycle().take(9).enumerate() {
        // Start from the other tree.
        let start = if *target == &full { &sparse } else { &full };
        repo.ok(&["restore", start]);
        let finished = restore_racing_a_swap(&repo, target, point, &outside, round);
        assert_eq!(
            manifest(&outside),
            before,
            "round {round} ({point}): outside changed"
        );
        if finished {
            assert_snap_eq(want, &repo.snapshot(), &format!("round {round} ({point})"));
        }
        // Whatever happened, running the restore again finishes it exactly.
        repo.ok(&["restore", target]);
        assert_snap_eq(want, &repo.snapshot(), &format!("round {round} finished"));
        assert_eq!(manifest(&outside), before, "round {round}: outside changed");
    }
}

/// A save lists the files, then reads them: a directory swapped for a symlink in between
/// must not make it read (and store) a file outside the worktree.
#[test]
fn a_directory_swapped_for_a_symlink_mid_save_is_never_read_through() {
    let repo = Repo::new();
    let outside = repo.scratch("outside");
    std::fs::write(outside.join("notes.txt"), b"outside secret\n").unwrap();
    repo.write("a.txt", b"a\n");
    repo.write("dir/notes.txt", b"inside\n");
    let child = common::spawn_paused(
        &repo,
        &["save", "--json", "-m", "raced"],
        "save-walked",
        400,
    );
    std::fs::rename(repo.p("dir"), repo.sb.root.join("moved-dir")).unwrap();
    std::os::unix::fs::symlink(&outside, repo.p("dir")).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("dir/notes.txt vanished or was replaced"),
        "{stderr}"
    );
    // Whatever the checkpoint holds, it is not the outside file.
    repo.remove("dir");
    repo.ok(&["restore", "@", "--no-save"]);
    assert!(
        !repo.exists("dir/notes.txt"),
        "a file was stored for dir/notes.txt"
    );
    let stored = repo.ok(&["show", "@", "--name-status"]).stdout;
    assert!(!stored.contains("dir/notes.txt"), "{stored}");
}

/// A file deleted between the walk listing its directory and looking at it is simply
/// not part of the checkpoint: the save goes on.
#[test]
fn a_file_deleted_while_the_walk_lists_it_is_left_out() {
    let repo = Repo::new();
    repo.write("gone.txt", b"deleted mid-walk\n");
    repo.write("kept.txt", b"kept\n");
    let child = common::spawn_paused(&repo, &["save", "--json"], "walk-listed", 300);
    repo.remove("gone.txt");
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let saved: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(saved["files"], 1, "{saved}");
}
