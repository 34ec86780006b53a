//! Shared by the integration tests: a real git repository in a temporary directory and
//! a way to run the real `git-checkpoint` binary in it, isolated from the user's own
//! git configuration (HOME points into the temporary directory, no system config).
#![allow(dead_code)]

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_git-checkpoint");

/// What a run of the binary produced.
pub struct Out {
    /// Exit code (-1 when killed by a signal).
    pub code: i32,
    /// stdout, lossy UTF-8.
    pub stdout: String,
    /// stderr, lossy UTF-8.
    pub stderr: String,
    /// stdout as bytes.
    pub bytes: Vec<u8>,
}

impl fmt::Display for Out {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "exit {}\n--- stdout\n{}--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

/// Fails the test if the binary panicked.
pub fn assert_no_panic(out: &Out, what: &str) {
    assert!(
        !out.stderr.contains("panicked") && !out.stderr.contains("RUST_BACKTRACE"),
        "{what} panicked:\n{out}"
    );
}

/// A git repository (branch `main`) in a temporary directory.
pub struct Repo {
    dir: tempfile::TempDir,
    /// The worktree root.
    pub root: PathBuf,
}

impl Default for Repo {
    fn default() -> Self {
        Self::new()
    }
}

impl Repo {
    /// A new, empty repository.
    pub fn new() -> Repo {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("work");
        std::fs::create_dir(&root).unwrap();
        std::fs::create_dir(dir.path().join("home")).unwrap();
        let repo = Repo { dir, root };
        repo.git(&["init", "-q", "-b", "main"]);
        repo
    }

    /// The HOME the tests run with.
    pub fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    /// A scratch directory beside the worktree (not inside it).
    pub fn scratch(&self, name: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::create_dir_all(&path).unwrap();
        path
    }

    /// A path in the worktree.
    pub fn p(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }

    /// Writes a file, creating its directories.
    pub fn write(&self, rel: &str, bytes: &[u8]) {
        let path = self.p(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }

    /// Reads a file.
    pub fn read(&self, rel: &str) -> Vec<u8> {
        std::fs::read(self.p(rel)).unwrap_or_else(|e| panic!("read {rel}: {e}"))
    }

    /// Whether a path exists (a dangling symlink counts).
    pub fn exists(&self, rel: &str) -> bool {
        std::fs::symlink_metadata(self.p(rel)).is_ok()
    }

    /// Removes a file.
    pub fn remove(&self, rel: &str) {
        std::fs::remove_file(self.p(rel)).unwrap();
    }

    fn command(&self, program: &str, dir: &Path) -> Command {
        let mut command = Command::new(program);
        command
            .current_dir(dir)
            .env("HOME", self.home())
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env_remove("GIT_PAGER")
            .env_remove("PAGER")
            .env_remove("NO_COLOR")
            .env_remove("COLUMNS")
            .stdin(Stdio::null());
        command
    }

    /// Runs git in the worktree and returns its stdout; fails the test if git fails.
    pub fn git(&self, args: &[&str]) -> String {
        let out = self.command("git", &self.root).args(args).output().unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Runs the binary in the worktree with extra environment.
    pub fn run_env(&self, args: &[&str], env: &[(&str, &str)]) -> Out {
        let mut command = self.command(BIN, &self.root);
        command.args(args);
        for (k, v) in env {
            command.env(k, v);
        }
        let out = command.output().unwrap();
        Out {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            bytes: out.stdout,
        }
    }

    /// Runs the binary in the worktree.
    pub fn run(&self, args: &[&str]) -> Out {
        self.run_env(args, &[])
    }

    /// Runs the binary and fails the test unless it exits 0.
    pub fn ok(&self, args: &[&str]) -> Out {
        let out = self.run(args);
        assert_eq!(out.code, 0, "{args:?}:\n{out}");
        assert_no_panic(&out, &format!("{args:?}"));
        out
    }

    /// Runs the binary with --json and parses its output.
    pub fn json(&self, args: &[&str]) -> serde_json::Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let out = self.ok(&all);
        serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{all:?}: {e}\n{out}"))
    }

    /// Saves with message `message` (always making a checkpoint) and returns its full id.
    pub fn save(&self, message: &str) -> String {
        let value = self.json(&["save", "--allow-empty", "-m", message]);
        value["id"].as_str().unwrap().to_string()
    }

    /// The full id a revision names.
    pub fn id(&self, rev: &str) -> String {
        self.json(&["show", rev])["id"]
            .as_str()
            .unwrap()
            .to_string()
    }

    /// Branch names, sorted, with the current one marked by a leading `*`.
    pub fn branches(&self) -> Vec<String> {
        self.json(&["branch"])
            .as_array()
            .unwrap()
            .iter()
            .map(|b| {
                let name = b["name"].as_str().unwrap();
                if b["current"].as_bool().unwrap() {
                    format!("*{name}")
                } else {
                    name.to_string()
                }
            })
            .collect()
    }

    /// Every file in the worktree outside `.git`, as `path=content` (symlinks as
    /// `path->target`), sorted: the worktree's state in one comparable value.
    pub fn files(&self) -> Vec<String> {
        let mut out = Vec::new();
        let mut stack = vec![self.root.clone()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                let rel = path.strip_prefix(&self.root).unwrap().display().to_string();
                if rel == ".git" {
                    continue;
                }
                let meta = std::fs::symlink_metadata(&path).unwrap();
                if meta.file_type().is_symlink() {
                    let target = std::fs::read_link(&path).unwrap();
                    out.push(format!("{rel}->{}", target.display()));
                } else if meta.is_dir() {
                    stack.push(path);
                } else {
                    let content = std::fs::read(&path).unwrap();
                    out.push(format!("{rel}={}", String::from_utf8_lossy(&content)));
                }
            }
        }
        out.sort();
        out
    }
}
