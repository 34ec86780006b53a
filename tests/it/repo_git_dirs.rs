//! The repository's own directories inside the worktree, and git's ignore rules read
//! exactly as git reads them (issue 21, findings 1, 10, 21 and 22).
//!
//! A git dir, common dir or store that lies inside the worktree under a name other than
//! `.git` (a dotfiles repository, `core.worktree`, `--separate-git-dir`, a linked
//! worktree holding its repository) is never captured, listed or reported as changed,
//! and a restore of a checkpoint that holds it (taken while it was an ordinary directory)
//! neither writes nor deletes it. A save holds exactly what `git add -A` would add when
//! an ignore file is a symlink, holds bytes that are not UTF-8, a line that is `!` alone
//! or a pattern with a NUL byte.

use crate::common;
use crate::repo_ignore_rules::{git_paths, saved_paths};

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::*;

/// A worktree at `<sandbox>/w` whose git dir sits where the layout puts it; every git
/// and binary command runs with `env` (`GIT_DIR`, `GIT_WORK_TREE`) as its user would.
struct Layout {
    sb: Sandbox,
    root: PathBuf,
    env: Vec<(&'static str, PathBuf)>,
    /// The git dir's path relative to the worktree, as a save would list it.
    git_dir_name: &'static str,
}

impl Layout {
    /// `git init --bare w/.dotfiles`, used with `GIT_DIR=w/.dotfiles GIT_WORK_TREE=w`.
    fn dotfiles() -> Layout {
        let sb = Sandbox::new();
        let root = sb.root.join("w");
        fs::create_dir_all(&root).unwrap();
        sb.git(
            &sb.root,
            &["init", "-q", "--bare", "-b", "main", "w/.dotfiles"],
        );
        let env = vec![
            ("GIT_DIR", root.join(".dotfiles")),
            ("GIT_WORK_TREE", root.clone()),
        ];
        Layout::committed(sb, root, env, ".dotfiles")
    }

    /// A git dir at `w/tools/meta.git` whose `core.worktree` is `w`, used with
    /// `GIT_DIR=w/tools/meta.git`.
    fn core_worktree() -> Layout {
        let sb = Sandbox::new();
        let root = sb.root.join("w");
        let git_dir = root.join("tools/meta.git");
        fs::create_dir_all(&git_dir).unwrap();
        let dir_arg = format!("--git-dir={}", git_dir.display());
        sb.git(&root, &[&dir_arg, "init", "-q", "-b", "main"]);
        sb.git(&root, &[&dir_arg, "config", "core.bare", "false"]);
        sb.git(&root, &[&dir_arg, "config", "core.worktree", "../.."]);
        Layout::committed(sb, root, vec![("GIT_DIR", git_dir)], "tools/meta.git")
    }

    /// `git init --separate-git-dir=w/.gitstore w`: `w/.git` is a file naming it.
    fn separate_git_dir() -> Layout {
        let sb = Sandbox::new();
        let root = sb.root.join("w");
        fs::create_dir_all(&root).unwrap();
        let separate = format!("--separate-git-dir={}", root.join(".gitstore").display());
        sb.git(&sb.root, &["init", "-q", "-b", "main", &separate, "w"]);
        assert!(root.join(".git").is_file(), "git made a .git file");
        Layout::committed(sb, root, Vec::new(), ".gitstore")
    }

    /// A linked worktree `w` of a bare repository that was then moved into it as
    /// `w/.repo` (`git worktree repair`): its git dir is `w/.repo/worktrees/w`, its
    /// common dir `w/.repo`.
    fn linked_worktree_holding_its_repository() -> Layout {
        let sb = Sandbox::new();
        sb.git(&sb.root, &["init", "-q", "--bare", "-b", "main", "x.git"]);
        sb.git(&sb.root.join("x.git"), &["worktree", "add", "-q", "../w"]);
        let root = sb.root.join("w");
        fs::rename(sb.root.join("x.git"), root.join(".repo")).unwrap();
        sb.git(&root.join(".repo"), &["worktree", "repair", "../"]);
        let dirs = sb.git(&root, &["rev-parse", "--git-dir", "--git-common-dir"]);
        assert!(
            dirs.contains("w/.repo/worktrees/w") && dirs.contains("w/.repo"),
            "{dirs}"
        );
        Layout::committed(sb, root, Vec::new(), ".repo")
    }

    /// The layout with one git commit of `tracked.txt`, and a remote whose URL holds
    /// a credential.
    fn committed(
        sb: Sandbox,
        root: PathBuf,
        env: Vec<(&'static str, PathBuf)>,
        git_dir_name: &'static str,
    ) -> Layout {
        let layout = Layout {
            sb,
            root,
            env,
            git_dir_name,
        };
        layout.write("tracked.txt", b"tracked v1\n");
        layout.git(&["add", "tracked.txt"]);
        layout.git(&["commit", "-q", "-m", "first"]);
        layout.git(&[
            "remote",
            "add",
            "origin",
            "https://user:s3cret-token@example.invalid/dotfiles.git",
        ]);
        layout
    }

    fn git(&self, args: &[&str]) -> String {
        let mut cmd = self.sb.git_cmd(&self.root, args);
        for (key, value) in &self.env {
            cmd.env(key, value);
        }
        let out = run_cmd(cmd, DEFAULT_TIMEOUT);
        assert_eq!(out.code, 0, "git {args:?}\n{out}");
        out.stdout
    }

    fn run(&self, args: &[&str]) -> Out {
        let mut cmd = self.sb.bin_cmd(&self.root, args);
        for (key, value) in &self.env {
            cmd.env(key, value);
        }
        let out = run_cmd(cmd, DEFAULT_TIMEOUT);
        assert_no_panic(&out, &format!("{args:?}"));
        out
    }

    #[track_caller]
    fn ok(&self, args: &[&str]) -> Out {
        let out = self.run(args);
        assert_eq!(out.code, 0, "git-checkpoint {args:?} failed\n{out}");
        out
    }

    fn write(&self, rel: &str, data: &[u8]) {
        write_file(&self.root.join(rel), data, false);
    }

    #[track_caller]
    fn save(&self, msg: &str) -> String {
        let out = self.ok(&["save", "--json", "-m", msg]);
        let v = parse_json(&out, "save --json");
        id_of(&v).unwrap_or_else(|| panic!("save -m {msg:?} made no checkpoint: {v}"))
    }

    /// Every checkpoint of every branch.
    fn ids(&self) -> Vec<String> {
        let v = parse_json(&self.ok(&["log", "--all", "--json"]), "log --json");
        v.as_array()
            .unwrap()
            .iter()
            .map(|c| id_of(c).unwrap())
            .collect()
    }

    /// What every checkpoint lists as changed against its parent: a path that any
    /// checkpoint holds is listed by the first one that holds it.
    fn listed(&self) -> String {
        self.ids()
            .iter()
            .map(|id| self.ok(&["show", id, "--name-status"]).stdout)
            .collect()
    }

    #[track_caller]
    fn assert_git_dir_not_listed(&self, when: &str) {
        let name = self.git_dir_name;
        let listed = self.listed();
        assert!(
            !listed.contains(&format!("\t{name}/")),
            "{name}: a checkpoint holds the git dir ({when}):\n{listed}"
        );
        let status = self.ok(&["status"]).stdout;
        assert!(
            !status.contains(name),
            "{name}: status lists the git dir ({when}):\n{status}"
        );
    }

    /// `verify` checks every checkpoint `log --all` lists: the store is the live one.
    #[track_caller]
    fn assert_store_intact(&self) {
        let count = self.ids().len();
        let verify = self.ok(&["verify"]).stdout;
        assert!(
            verify.contains(&format!("Checked {count} checkpoints")),
            "{}: the store lost checkpoints ({count} listed):\n{verify}",
            self.git_dir_name
        );
    }

    fn head(&self) -> String {
        self.git(&["rev-parse", "HEAD"]).trim().to_string()
    }
}

/// One layout through saves, a git commit between them, `status` and a restore of the
/// first checkpoint: the git dir is never listed, git's branch stays where git put it
/// and the store keeps every checkpoint, the safety checkpoint included.
fn never_captured_nor_restored(layout: &Layout) {
    let name = layout.git_dir_name;
    layout.write("notes.txt", b"notes v1\n");
    let first = layout.save("one");
    layout.assert_git_dir_not_listed("first save");

    layout.write("tracked.txt", b"tracked v2\n");
    layout.git(&["commit", "-q", "-am", "second"]);
    let second_commit = layout.head();
    layout.write("notes.txt", b"notes v2\n");
    layout.assert_git_dir_not_listed("after a git commit");
    layout.save("two");
    layout.assert_git_dir_not_listed("second save");

    layout.write("notes.txt", b"notes v3\n");
    let out = layout.ok(&["restore", "--json", &first]);
    let report = parse_json(&out, "restore --json");
    let safety = report["safety_checkpoint"]
        .as_str()
        .unwrap_or_else(|| panic!("{name}: no safety checkpoint: {report}"))
        .to_string();
    assert_eq!(
        fs::read(layout.root.join("notes.txt")).unwrap(),
        b"notes v1\n",
        "{name}: the worktree is restored"
    );
    assert_eq!(
        layout.head(),
        second_commit,
        "{name}: the restore moved git's branch"
    );
    assert_eq!(
        layout.git(&["rev-list", "--count", "HEAD"]).trim(),
        "2",
        "{name}: git lost a commit"
    );
    assert!(
        layout.ids().contains(&safety),
        "{name}: the safety checkpoint {safety} is gone from the store"
    );
    layout.assert_store_intact();
    layout.assert_git_dir_not_listed("after the restore");
}

#[test]
fn a_dotfiles_git_dir_is_never_captured_and_a_restore_keeps_git_and_the_store() {
    let layout = Layout::dotfiles();
    never_captured_nor_restored(&layout);
    let config = fs::read_to_string(layout.root.join(".dotfiles/config")).unwrap();
    assert!(config.contains("s3cret-token"), "git's config is git's");
}

#[test]
fn a_core_worktree_git_dir_is_never_captured() {
    let layout = Layout::core_worktree();
    layout.write("tools/build.sh", b"make\n");
    never_captured_nor_restored(&layout);
    // The directory around the git dir is the worktree's own.
    let listed = layout.listed();
    assert!(listed.contains("tools/build.sh"), "{listed}");
}

#[test]
fn a_separate_git_dir_inside_the_worktree_is_never_captured() {
    never_captured_nor_restored(&Layout::separate_git_dir());
}

#[test]
fn a_linked_worktree_holding_its_repository_never_captures_it() {
    never_captured_nor_restored(&Layout::linked_worktree_holding_its_repository());
}

/// A checkpoint taken while `w/.meta` was an ordinary directory holds `HEAD`, `config`
/// and a `checkpoint/store.redb` there; then `.meta` becomes the git dir. Restoring that
/// checkpoint leaves git's files and the store alone, and says so.
#[test]
fn a_restore_spares_a_git_dir_that_an_older_checkpoint_holds() {
    let r = Repo::new();
    r.write("a.txt", b"a v1\n");
    r.git(&["add", "a.txt"]);
    r.git(&["commit", "-q", "-m", "first"]);
    r.write(".meta/HEAD", b"ref: refs/heads/planted\n");
    r.write(".meta/config", b"[core]\n\tbare = true\n");
    r.write(".meta/checkpoint/store.redb", b"not a store\n");
    r.write(
        ".meta/refs/heads/main",
        b"0000000000000000000000000000000000000000\n",
    );
    let old = r.save("while .meta was ordinary");
    let listed = r.ok(&["show", &old, "--name-status"]).stdout;
    assert!(listed.contains(".meta/HEAD"), "{listed}");

    // `.meta` becomes the git dir, store and all: `.git` is now a file naming it.
    r.remove(".meta");
    fs::rename(r.p(".git"), r.p(".meta")).unwrap();
    r.write(".git", b"gitdir: .meta\n");
    let git_head = r.git(&["rev-parse", "HEAD"]);
    r.write("a.txt", b"a v2\n");
    r.git(&["commit", "-q", "-am", "second"]);
    let git_head_now = r.git(&["rev-parse", "HEAD"]);
    assert_ne!(git_head, git_head_now);
    let git_files = |r: &Repo| {
        ["HEAD", "config", "refs/heads/main", "checkpoint/store.redb"]
            .map(|f| fs::read(r.p(".meta").join(f)).unwrap_or_default())
    };
    r.write("a.txt", b"a v3\n");
    r.save("after");

    let before = git_files(&r);
    let out = r.ok(&["restore", &old]);
    assert_eq!(r.read("a.txt"), b"a v1\n", "the worktree is restored");
    let after = git_files(&r);
    assert!(
        before[..3] == after[..3],
        "the restore wrote git's files from the older checkpoint:\n{out}"
    );
    assert_ne!(after[3], b"not a store\n", "the store was replaced:\n{out}");
    assert_eq!(
        r.git(&["rev-parse", "HEAD"]),
        git_head_now,
        "git's branch moved"
    );
    assert!(
        out.stdout.contains("Left .meta/HEAD untouched")
            && out.stdout.contains("the repository's git dir"),
        "{out}"
    );
    let count = r.log_ids(true).len();
    let verify = r.ok(&["verify"]).stdout;
    assert!(
        verify.contains(&format!("Checked {count} checkpoints")),
        "{verify}"
    );
}

/// A running watcher of a layout, stopped when dropped.
struct Watcher<'l> {
    layout: &'l Layout,
}

impl Drop for Watcher<'_> {
    fn drop(&mut self) {
        let _ = self.layout.run(&["watch", "--stop"]);
    }
}

/// The linked layout's common dir is not its git dir, and holds the objects and refs a
/// git commit writes: the watcher neither watches nor reports it, and a watched save
/// records what a walk does.
#[test]
fn a_watched_save_never_reports_the_common_dir() {
    let layout = Layout::linked_worktree_holding_its_repository();
    layout.write("notes.txt", b"notes v1\n");
    layout.save("start");
    let out = layout.ok(&["watch", "--daemon"]);
    let _watcher = Watcher { layout: &layout };
    assert!(out.stdout.contains("in the background"), "{out}");
    let traced_save = |msg: &str| {
        let mut cmd = layout.sb.bin_cmd(&layout.root, &["save", "-m", msg]);
        cmd.env("GIT_CHECKPOINT_TRACE", "1");
        let out = run_cmd(cmd, DEFAULT_TIMEOUT);
        assert_eq!(out.code, 0, "{out}");
        out
    };
    let ran = |out: &Out, phase: &str| {
        let suffix = format!("ms  {phase}");
        out.stderr.lines().any(|line| line.ends_with(&suffix))
    };
    // A save that went through the watcher, not a walk (the first after the watcher
    // starts walks, and records its token), with a new change each time it walked.
    let watched_save = |msg: &str| {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let save = traced_save(msg);
            if ran(&save, "watch") && !ran(&save, "walk") {
                return save;
            }
            assert!(
                Instant::now() < deadline,
                "the saves walked instead of asking the watcher:\n{save}"
            );
            layout.write("notes.txt", format!("{:?}\n", Instant::now()).as_bytes());
        }
    };
    layout.write("notes.txt", b"notes v2\n");
    watched_save("primer");

    // git writes into the common dir (a tag, an object), not into the index.
    layout.git(&["tag", "v1"]);
    layout.git(&["hash-object", "-w", "notes.txt"]);
    layout.write("notes.txt", b"notes v3\n");
    let save = watched_save("watched");
    assert!(save.stdout.contains("Saved checkpoint"), "{save}");
    layout.assert_git_dir_not_listed("watched save");
    drop(_watcher);
    let walked = traced_save("walked");
    assert!(
        walked.stdout.contains("Nothing changed"),
        "a walk records something else than the watched save did:\n{walked}"
    );
}

#[track_caller]
fn assert_saves_what_git_adds(r: &Repo, what: &str) {
    let out = r.run(&["save", "-m", what]);
    assert_eq!(out.code, 0, "{what}: the save failed\n{out}");
    let git = git_paths(r);
    assert!(
        git.len() > 1,
        "{what}: the test needs files git adds: {git:?}"
    );
    assert_eq!(
        saved_paths(r),
        git,
        "{what}: the checkpoint differs from git add -A"
    );
}

fn write_all(r: &Repo, paths: &[&str]) {
    for path in paths {
        r.write(path, format!("{path}\n").as_bytes());
    }
}

/// git 2.47 opens a worktree's `.gitignore` without following a symlink (it warns and
/// reads no rule from it): `src/work.rs` is added.
#[test]
fn a_symlinked_gitignore_is_not_followed() {
    let r = Repo::new();
    let outside = r.scratch("rules").join("ignore");
    fs::write(&outside, b"work.rs\n*.log\n").unwrap();
    r.symlink(".gitignore", &outside);
    r.symlink("sub/.gitignore", &outside);
    write_all(
        &r,
        &[
            "src/work.rs",
            "a.log",
            "sub/work.rs",
            "sub/b.log",
            "keep.txt",
        ],
    );
    assert_saves_what_git_adds(&r, "symlinked .gitignore");
    assert!(saved_paths(&r).contains("src/work.rs"));
}

/// Latin-1 bytes in a comment cost none of the rules after it, and a pattern that is not
/// UTF-8 still ignores the name with those bytes.
#[test]
fn a_gitignore_line_that_is_not_utf8_costs_no_rule() {
    let r = Repo::new();
    r.write(".gitignore", b"# r\xe9sum\xe9\n*.log\n.env\ncaf\xe9.txt\n");
    r.write("sub/.gitignore", b"# \xff\xfe\n*.tmp\n");
    write_all(
        &r,
        &["build.log", ".env", "a.txt", "sub/x.tmp", "sub/y.txt"],
    );
    let latin1 = OsStr::from_bytes(b"caf\xe9.txt");
    fs::write(r.p(latin1), b"a Latin-1 name\n").unwrap();
    assert_saves_what_git_adds(&r, "non-UTF-8 .gitignore");
    let saved = saved_paths(&r);
    assert!(
        !saved.contains(".env") && !saved.contains("build.log"),
        "{saved:?}"
    );
}

/// The same bytes in `info/exclude` and in `core.excludesFile` make no save fail.
#[test]
fn an_excludes_file_that_is_not_utf8_fails_no_save() {
    let r = Repo::new();
    r.write(".git/info/exclude", b"# \xe9t\xe9\n*.log\n");
    let excludes = r.scratch("cfg").join("ignore");
    fs::write(&excludes, b"# na\xefve\n.env\n").unwrap();
    r.git(&["config", "core.excludesFile", excludes.to_str().unwrap()]);
    write_all(&r, &["build.log", ".env", "a.txt", "b.txt"]);
    assert_saves_what_git_adds(&r, "non-UTF-8 excludes files");
}

/// A line that is `!` alone re-includes nothing; a line ends at its first NUL byte, so
/// `*\0.bak` is `*` and `x\0y` is `x`.
#[test]
fn a_bare_negation_and_a_nul_byte_read_as_git_reads_them() {
    let r = Repo::new();
    r.write(".gitignore", b"*.tmp\n!\nx\0y\n");
    r.write("sub/.gitignore", b"*\0.bak\n");
    write_all(&r, &["a.tmp", "x", "xy", "b.txt", "sub/c.txt", "sub/d.bak"]);
    assert_saves_what_git_adds(&r, "`!` and NUL");
    let saved = saved_paths(&r);
    assert!(
        !saved.contains("a.tmp") && !saved.contains("sub/c.txt"),
        "{saved:?}"
    );

    // Files git ignores that appear later are neither saved first nor deleted by a
    // restore of the checkpoint that lacks them.
    let old = r.current();
    write_all(&r, &["new.tmp", "sub/new.txt", "x"]);
    r.write("b.txt", b"b v2\n");
    r.ok(&["restore", &old]);
    assert_eq!(r.read("b.txt"), b"b.txt\n");
    for ignored in ["new.tmp", "sub/new.txt", "x"] {
        assert!(
            r.exists(ignored),
            "the restore deleted the ignored {ignored}"
        );
    }
}
