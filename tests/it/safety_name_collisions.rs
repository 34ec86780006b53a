//! Names a worktree's filesystem takes for one (docs/design.md invariant 28): where it
//! ignores case (`README`, `readme`) or Unicode normalization (`é` in NFC and in NFD),
//! every command that writes a tree refuses one that would put two such names side by
//! side, naming both, before anything changes: no file, no branch, no safety checkpoint.
//!
//! Linux's own filesystems tell every name apart, and this machine's kernel cannot make
//! one that does not (no `CONFIG_UNICODE`: neither ext4's nor tmpfs's `casefold`; no vfat),
//! so most tests give the worktree a Mac's rules through the probe's seam
//! (`GIT_CHECKPOINT_NAMES_PROBE`, test builds only) or git's `core.ignorecase`. One test
//! runs on a real case-insensitive filesystem, NTFS through `lowntfs-3g -o ignore_case`
//! (FUSE): it needs root, `/dev/fuse` and the `ntfs-3g` package, and fails where it cannot
//! run unless `GIT_CHECKPOINT_TEST_SKIP_CASE_INSENSITIVE_FS=<reason>` says why.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{self, assert_snap_eq, run_cmd, Out, Repo, DEFAULT_TIMEOUT};

/// The probe's seam: the answer the probe gives in a test build.
const PROBE: &str = "GIT_CHECKPOINT_NAMES_PROBE";

/// Runs `args` in `repo` with the probe answering `rules`.
#[track_caller]
fn with_rules(repo: &Repo, rules: &str, args: &[&str]) -> Out {
    repo.run_env(args, &[(PROBE, rules)])
}

/// Asserts `out` is a refusal in one line that names both `a` and `b`.
#[track_caller]
fn assert_refused_naming(out: &Out, a: &str, b: &str, what: &str) {
    assert_eq!(out.code, common::EXIT_REFUSED, "{what}: {out}");
    let line = out.stderr.trim_end();
    assert_eq!(line.lines().count(), 1, "{what}: one line: {out}");
    assert!(line.starts_with("error: refusing to "), "{what}: {out}");
    for name in [a, b] {
        assert!(
            line.contains(&format!("/{name}")),
            "{what}: names {name}: {out}"
        );
    }
    assert!(
        line.contains("takes the two names for one"),
        "{what}: {out}"
    );
}

/// `main`: `README`, then `readme` beside it (`both`), then without it again (`current`);
/// a branch `both` whose tip is `both`; the worktree on `main` with an unsaved change.
/// Returns (`both`, `current`).
fn history_with_both_names(repo: &Repo) -> (String, String) {
    repo.write("README", b"upper\n");
    repo.save("README");
    repo.write("readme", b"lower\n");
    let both = repo.save("readme beside it");
    repo.remove("readme");
    let current = repo.save("readme gone");
    repo.ok(&["fork", &both, "-b", "both"]);
    repo.ok(&["switch", "main"]);
    repo.write("notes.txt", b"unsaved\n");
    (both, current)
}

#[test]
fn every_command_that_writes_a_tree_refuses_names_a_case_blind_worktree_takes_for_one() {
    let repo = Repo::new();
    let (both, current) = history_with_both_names(&repo);
    let before = repo.snapshot();
    let log = repo.log_ids(true);
    let refused: [&[&str]; 7] = [
        &["restore", &both],
        &["restore", &both, "--dry-run"],
        &["restore", &both, "--", "readme"],
        &["fork", &both, "-b", "again"],
        &["switch", "both"],
        &["revert", &current],
        &["revert", &current, "--dry-run"],
    ];
    for args in refused {
        let out = with_rules(&repo, "case", args);
        assert_refused_naming(&out, "README", "readme", &format!("{args:?}"));
        assert_snap_eq(
            &before,
            &repo.snapshot(),
            &format!("{args:?} changed nothing"),
        );
        assert_eq!(
            repo.log_ids(true),
            log,
            "{args:?}: no checkpoint made or kept"
        );
        assert_eq!(
            repo.current(),
            log[0],
            "{args:?}: HEAD's branch did not move"
        );
    }
    assert!(repo.branches().iter().all(|b| !b.contains("again")));
    // Linux's own filesystem tells the two apart: the same restore goes through.
    repo.ok(&["restore", &both]);
    assert_eq!(repo.read("README"), b"upper\n");
    assert_eq!(repo.read("readme"), b"lower\n");
}

#[test]
fn a_restore_that_writes_both_names_is_refused_where_case_or_git_s_ignorecase_says_so() {
    let repo = Repo::new();
    let (both, _) = history_with_both_names(&repo);
    repo.remove("README");
    let before = repo.snapshot();
    let log = repo.log_ids(true);
    let out = with_rules(&repo, "case,normalization", &["restore", &both]);
    assert_refused_naming(&out, "README", "readme", "both written");
    assert_snap_eq(&before, &repo.snapshot(), "refused");
    assert_eq!(repo.log_ids(true), log);
    // git's own setting decides where it is set, over the probe, both ways.
    repo.git(&["config", "core.ignorecase", "true"]);
    let out = repo.run(&["restore", &both, "--dry-run"]);
    assert_refused_naming(&out, "README", "readme", "core.ignorecase=true");
    repo.git(&["config", "core.ignorecase", "false"]);
    let out = with_rules(&repo, "case", &["restore", &both, "--dry-run"]);
    assert_eq!(out.code, 0, "core.ignorecase=false decides: {out}");
}

#[test]
fn names_that_differ_only_in_normalization_collide_only_where_it_is_ignored() {
    let repo = Repo::new();
    let (nfc, nfd) = ("caf\u{e9}", "cafe\u{301}");
    repo.write(nfc, b"composed\n");
    repo.write(nfd, b"decomposed\n");
    let both = repo.save("both forms");
    repo.remove(nfd);
    repo.save("one form");
    let before = repo.snapshot();
    let out = with_rules(&repo, "normalization", &["restore", &both]);
    assert_refused_naming(&out, nfc, nfd, "normalization ignored");
    assert_snap_eq(&before, &repo.snapshot(), "refused");
    // Where only case is ignored, the two are different names.
    let out = with_rules(&repo, "case", &["restore", &both]);
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(repo.read(nfd), b"decomposed\n");
}

#[test]
fn a_name_whose_case_changed_is_restored_where_case_is_ignored() {
    // The old name is deleted before the new one is written: no collision.
    let repo = Repo::new();
    repo.write("Readme.md", b"old name\n");
    let old = repo.save("old name");
    repo.remove("Readme.md");
    repo.write("README.md", b"new name\n");
    repo.save("new name");
    let out = with_rules(&repo, "case", &["restore", &old]);
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(repo.read("Readme.md"), b"old name\n");
    assert!(!repo.exists("README.md"));
}

/// A mounted NTFS image, unmounted (lazily) when dropped.
struct Mounted(PathBuf);

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// An NTFS image of 32 MiB made in `dir` and mounted at `dir/mnt` by `lowntfs-3g` with
/// `ignore_case`; `None` (after `skip_only_if_allowed`) where that cannot be done.
fn case_insensitive_mount(dir: &Path) -> Option<Mounted> {
    let image = dir.join("ntfs.img");
    let mount_point = dir.join("mnt");
    std::fs::create_dir_all(&mount_point).unwrap();
    let steps = [
        Command::new("truncate")
            .arg("-s")
            .arg("32M")
            .arg(&image)
            .output(),
        Command::new("mkntfs")
            .args(["-F", "-q", "-f"])
            .arg(&image)
            .output(),
        Command::new("lowntfs-3g")
            .arg("-o")
            .arg("ignore_case")
            .arg(&image)
            .arg(&mount_point)
            .output(),
    ];
    for (step, done) in ["truncate", "mkntfs", "lowntfs-3g -o ignore_case"]
        .iter()
        .zip(steps)
    {
        let why_not = match done {
            Ok(o) if o.status.success() => continue,
            Ok(o) => format!(
                "{step} failed (it needs root, /dev/fuse and the ntfs-3g package): {}",
                String::from_utf8_lossy(&o.stderr).trim()
            ),
            Err(e) => format!("cannot run {step} (install the ntfs-3g package): {e}"),
        };
        common::skip_only_if_allowed("CASE_INSENSITIVE_FS", &why_not);
        return None;
    }
    Some(Mounted(mount_point))
}

#[test]
fn on_a_real_case_insensitive_filesystem_the_probe_finds_it_and_restore_refuses() {
    let repo = Repo::new();
    let Some(mounted) = case_insensitive_mount(&repo.sb.root) else {
        return;
    };
    // The worktree on NTFS, its git dir (and so the store) on this machine's own
    // filesystem: git's probe at init looked there, so only ours can tell.
    let git_dir = repo.sb.root.join("ntfs-repo.git");
    let work = mounted.0.join("work");
    let as_str = |p: &Path| p.to_str().unwrap().to_string();
    repo.sb.git(
        &repo.sb.root,
        &[
            "init",
            "-q",
            "-b",
            "main",
            "--separate-git-dir",
            &as_str(&git_dir),
            &as_str(&work),
        ],
    );
    let git_says = run_cmd(
        repo.sb
            .git_cmd(&work, &["config", "--get", "core.ignorecase"]),
        DEFAULT_TIMEOUT,
    );
    assert_ne!(
        git_says.stdout.trim(),
        "true",
        "git's own probe looked elsewhere"
    );
    std::fs::write(work.join("a.txt"), b"on NTFS\n").unwrap();
    repo.sb.ok_in(&work, &["save", "-m", "on NTFS"]);
    // The same store, a worktree on this machine's filesystem, which holds both names.
    let other = repo.sb.root.join("other");
    std::fs::create_dir_all(&other).unwrap();
    for (name, data) in [
        ("a.txt", "on NTFS\n"),
        ("README", "upper\n"),
        ("readme", "lower\n"),
    ] {
        std::fs::write(other.join(name), data).unwrap();
    }
    let mut save = repo
        .sb
        .bin_cmd(&other, &["save", "--json", "-m", "both names"]);
    save.env("GIT_DIR", &git_dir).env("GIT_WORK_TREE", &other);
    let saved = run_cmd(save, DEFAULT_TIMEOUT);
    assert_eq!(saved.code, 0, "{saved}");
    let both = common::id_of(&common::parse_json(&saved, "save")).unwrap();

    let before = common::snapshot(&work, true);
    let ids = || {
        let out = repo.sb.ok_in(&work, &["log", "--all", "--json"]);
        let log = common::parse_json(&out, "log");
        let log = log.as_array().unwrap();
        log.iter()
            .map(|c| common::id_of(c).unwrap())
            .collect::<Vec<_>>()
    };
    let log = ids();
    for args in [
        &["restore", both.as_str(), "--dry-run"][..],
        &["restore", &both],
    ] {
        let out = repo.sb.run_in(&work, args);
        assert_refused_naming(&out, "README", "readme", &format!("{args:?}"));
        assert_snap_eq(&before, &common::snapshot(&work, true), "refused");
        assert_eq!(ids(), log, "{args:?}: no checkpoint made or kept");
    }
    let kept = std::fs::read(git_dir.join("checkpoint").join("names")).unwrap();
    assert!(
        kept.starts_with(b"1 1 0 "),
        "the probe's answer is kept: case ignored, normalization not: {}",
        String::from_utf8_lossy(&kept)
    );
}
