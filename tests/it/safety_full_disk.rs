//! A full disk in the middle of a save: a clear error, the store intact, earlier
//! checkpoints restorable, and the next save works once space is freed. Runs on a small
//! tmpfs mounted by the test, which needs root (as in CI).
//!
//! Where no tmpfs can be mounted the test FAILS, unless it is skipped knowingly by
//! setting `GIT_CHECKPOINT_TEST_SKIP_FULL_DISK=<reason>` (the scheme every test that
//! depends on the machine follows: `GIT_CHECKPOINT_TEST_SKIP_<NAME>=<reason>`, see
//! `common::skip_only_if_allowed`). The variable only allows a skip; where the mount
//! works the test runs regardless.

use crate::common;
use std::process::Command;

use common::{assert_snap_eq, pseudo_random, Repo, EXIT_REFUSED};

struct Mount(std::path::PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// Mounts a tmpfs of `size` inside the sandbox and makes a repository on it; `None`
/// (after `skip_only_if_allowed`) where no tmpfs can be mounted.
fn small_disk(repo: &Repo, size: &str) -> Option<(Mount, Repo)> {
    let mount_point = repo.sb.root.join("small");
    std::fs::create_dir_all(&mount_point).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
        .arg(&mount_point)
        .output();
    let why_not = match mounted {
        Ok(o) if o.status.success() => None,
        Ok(o) => Some(format!(
            "mount -t tmpfs failed (it needs root): {}",
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Err(e) => Some(format!("cannot run mount: {e}")),
    };
    if let Some(why_not) = why_not {
        common::skip_only_if_allowed("FULL_DISK", &why_not);
        return None;
    }
    let mount = Mount(mount_point.clone());
    let work = mount_point.join("repo");
    std::fs::create_dir_all(&work).unwrap();
    repo.sb.git(&work, &["init", "-q", "-b", "main"]);
    Some((
        mount,
        Repo {
            sb: common::Sandbox::new(),
            dir: work,
        },
    ))
}

/// A restore that needs more space than the worktree's filesystem has is refused before
/// it changes anything, instead of failing half-way through its writes.
#[test]
fn a_restore_that_cannot_fit_is_refused_before_any_change() {
    let repo = Repo::new();
    let Some((_mount, small)) = small_disk(&repo, "24m") else {
        return;
    };
    // Zeros: the store keeps them in a few bytes, the worktree needs them all.
    small.write("z1.bin", &vec![0u8; 10 << 20]);
    small.write("z2.bin", &vec![0u8; 10 << 20]);
    let big = small.save("twenty MiB of zeros");
    small.remove("z1.bin");
    small.remove("z2.bin");
    small.write("a.txt", b"only in the second checkpoint\n");
    small.write(".gitignore", b"filler\n");
    small.save("small");
    small.write("filler", &pseudo_random(8 << 20, 3));
    let before = small.snapshot();
    for args in [
        &["restore", big.as_str(), "--dry-run"][..],
        &["restore", big.as_str()],
    ] {
        let out = small.run(args);
        assert_eq!(out.code, EXIT_REFUSED, "{args:?}: {out}");
        assert!(out.stderr.contains("free some space"), "{out}");
        assert_snap_eq(&before, &small.snapshot(), &format!("{args:?}"));
    }
    // Once there is room, it goes through.
    small.remove("filler");
    small.ok(&["restore", &big]);
    assert_eq!(small.read("z2.bin").len(), 10 << 20);
    assert!(!small.exists("a.txt"));
}

#[test]
fn a_full_disk_fails_the_save_cleanly_and_loses_nothing() {
    let repo = Repo::new();
    let Some((_mount, small)) = small_disk(&repo, "24m") else {
        return;
    };
    small.write("a.txt", b"first version\n");
    small.write("data.bin", &pseudo_random(2 << 20, 1));
    let first = small.save("first");
    let first_snap = small.snapshot();

    // Incompressible data that cannot fit next to its own stored copy.
    small.write("big.bin", &pseudo_random(12 << 20, 2));
    let out = small.run(&["save", "-m", "too big"]);
    assert_eq!(out.code, 1, "{out}");
    assert!(
        out.stderr.contains("disk holding the store is full"),
        "{out}"
    );
    assert_eq!(out.stderr.trim().lines().count(), 1, "{out}");

    // The store opens and still holds the first checkpoint, exactly. It needs a repair
    // it cannot record while the disk is full: a read command says so, and still reads.
    let out = small.ok(&["log"]);
    assert!(out.stderr.contains("needs a repair"), "{out}");
    assert_eq!(small.log_ids(true), vec![first.clone()]);
    std::fs::remove_file(small.p("big.bin")).unwrap();
    small.write("a.txt", b"second version\n");
    let second = small.save("second");
    small.ok(&["restore", &first]);
    assert_snap_eq(&first_snap, &small.snapshot(), "first after a full disk");
    small.ok(&["restore", &second]);
    assert_eq!(small.read("a.txt"), b"second version\n");
}
