//! Shared helpers for the integration tests: isolated git environments, running
//! the real `git-checkpoint` binary with a timeout, and exact worktree snapshots.
#![allow(dead_code)]

pub mod claude;
pub mod mcp;
pub mod raw_store;
pub mod real_agent;
pub mod tmux;

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fmt;
use std::fs;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;
use tempfile::TempDir;

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_git-checkpoint");

/// The exit status of an error of kind `Refused`: the command stopped rather than do
/// something unsafe, and changed nothing (docs/json.md, "Errors").
pub const EXIT_REFUSED: i32 = 77;
/// The exit status of an error of kind `Busy`: the store stayed held past the wait.
pub const EXIT_BUSY: i32 = 75;

/// Every invocation is killed (and the test failed) after this long, so that a
/// hang in the implementation fails the suite instead of blocking it.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// Variables that could point git (or the binary) somewhere else.
const SCRUB_ENV: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_CONFIG",
    "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT",
    "GIT_PREFIX",
    "GIT_CHECKPOINT_PAUSE",
    // The probe's seam (`worktree::names`): a test that wants it sets it.
    "GIT_CHECKPOINT_NAMES_PROBE",
    // Where Copilot CLI's user-level hooks are, which `hooks install copilot --global` uses.
    "COPILOT_HOME",
    // Where the agents keep their transcripts, which hooks attach only from there.
    "CLAUDE_CONFIG_DIR",
    "CODEX_HOME",
    "GEMINI_CLI_HOME",
    // Where the registry of hook-started watchers is (`watch::share`): the sandbox's
    // HOME, so that no other test's watcher counts against a test's share.
    "XDG_STATE_HOME",
];

/// The key that lets an agent's hook run start a watcher, off in every test's
/// environment ([`Sandbox::isolate`]).
pub const AUTO_WATCH_KEY: &str = "checkpoint.autoWatch";

/// Output of one finished process.
#[derive(Debug)]
pub struct Out {
    /// The exit code, or -1 when a signal ended the process.
    pub code: i32,
    /// The signal that ended the process, if one did.
    pub signal: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub stdout_raw: Vec<u8>,
    pub started: Instant,
    pub finished: Instant,
}

impl Out {
    pub fn elapsed(&self) -> Duration {
        self.finished - self.started
    }
}

impl fmt::Display for Out {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "exit code {} (signal {:?})\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.code, self.signal, self.stdout, self.stderr
        )
    }
}

/// Runs `cmd` to completion (stdin closed), killing it and panicking after `timeout`.
pub fn run_cmd(cmd: Command, timeout: Duration) -> Out {
    run_cmd_with_input(cmd, None, timeout)
}

/// Runs `cmd` to completion with `input` on its stdin (closed when `None`), killing it
/// and panicking after `timeout`.
pub fn run_cmd_with_input(mut cmd: Command, input: Option<&[u8]>, timeout: Duration) -> Out {
    cmd.stdin(if input.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let desc = format!("{cmd:?}");
    let started = Instant::now();
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("spawn {desc}: {e}"));
    if let (Some(input), Some(mut stdin)) = (input, child.stdin.take()) {
        // From a thread, so a child that does not read cannot block the timeout.
        let input = input.to_vec();
        thread::spawn(move || {
            let _ = std::io::Write::write_all(&mut stdin, &input);
        });
    }
    let mut so = child.stdout.take().expect("stdout pipe");
    let mut se = child.stderr.take().expect("stderr pipe");
    let t_out = thread::spawn(move || {
        let mut b = Vec::new();
        let _ = so.read_to_end(&mut b);
        b
    });
    let t_err = thread::spawn(move || {
        let mut b = Vec::new();
        let _ = se.read_to_end(&mut b);
        b
    });
    let mut nap = Duration::from_millis(1);
    let status = loop {
        if let Some(st) = child.try_wait().expect("try_wait") {
            break st;
        }
        if started.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            let err = t_err.join().unwrap_or_default();
            panic!(
                "timed out after {timeout:?} (killed): {desc}\nstderr so far:\n{}",
                String::from_utf8_lossy(&err)
            );
        }
        thread::sleep(nap);
        nap = (nap * 2).min(Duration::from_millis(20));
    };
    let finished = Instant::now();
    let stdout_raw = t_out.join().expect("stdout reader");
    let stderr = t_err.join().expect("stderr reader");
    Out {
        code: status.code().unwrap_or(-1),
        signal: status.signal(),
        stdout: String::from_utf8_lossy(&stdout_raw).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
        stdout_raw,
        started,
        finished,
    }
}

/// `script(1)` running `command_line` (a shell command) on a new pseudo-terminal in the
/// worktree, in the sandbox with colour allowed (`NO_COLOR` unset, `TERM=xterm`), no
/// pager set and stdin closed.
pub fn terminal_cmd(repo: &Repo, command_line: &str) -> Command {
    let mut command = Command::new("script");
    repo.sb.isolate(&mut command);
    command
        .args(["-qec", command_line, "/dev/null"])
        .current_dir(&repo.dir)
        .env("TERM", "xterm")
        .env_remove("GIT_PAGER")
        .env_remove("PAGER")
        .env_remove("NO_COLOR")
        .stdin(Stdio::null());
    command
}

/// Asserts the process did not panic (invariant 7); used on every binary run.
#[track_caller]
pub fn assert_no_panic(out: &Out, what: &str) {
    assert!(
        !out.stderr.contains("panicked") && !out.stderr.contains("RUST_BACKTRACE"),
        "{what}: the binary panicked\n{out}"
    );
    assert!(
        out.code != 101,
        "{what}: exit code 101 (panic exit code)\n{out}"
    );
}

/// Asserts the process was ended by the abort of an armed fault point (SIGABRT), not by
/// an ordinary failure that happens to exit non-zero.
#[track_caller]
pub fn assert_aborted(out: &Out, what: &str) {
    assert_eq!(
        out.signal,
        Some(libc::SIGABRT),
        "{what}: the fault point did not fire\n{out}"
    );
}

/// A temporary directory with an isolated HOME; every git and binary process
/// spawned through it ignores the user's and the system's git configuration.
pub struct Sandbox {
    _tmp: TempDir,
    pub root: PathBuf,
    pub home: PathBuf,
}

impl Default for Sandbox {
    fn default() -> Self {
        Self::new()
    }
}

impl Sandbox {
    pub fn new() -> Self {
        let tmp = tempfile::Builder::new()
            .prefix("gcp-test-")
            .tempdir()
            .expect("tempdir");
        let root = tmp.path().canonicalize().expect("canonicalize tempdir");
        let home = root.join("home");
        fs::create_dir_all(home.join(".config")).expect("mkdir home");
        Sandbox {
            _tmp: tmp,
            root,
            home,
        }
    }

    /// Applies the isolated environment to a command.
    pub fn isolate(&self, cmd: &mut Command) {
        for k in SCRUB_ENV {
            cmd.env_remove(k);
        }
        cmd.env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", self.home.join(".config"))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", self.home.join(".gitconfig"))
            .env("GIT_AUTHOR_NAME", "Test Author")
            .env("GIT_AUTHOR_EMAIL", "author@example.com")
            .env("GIT_COMMITTER_NAME", "Test Committer")
            .env("GIT_COMMITTER_EMAIL", "committer@example.com")
            // Never let git discover a repository above the sandbox.
            .env("GIT_CEILING_DIRECTORIES", &self.root)
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("NO_COLOR", "1")
            // A watcher slowed by the other tests running still answers (a save that
            // gives up on it walks, and a test expecting a watched save would fail).
            .env("GIT_CHECKPOINT_WATCH_ANSWER_MS", "5000");
        // No agent's hook run starts a watcher: a test that wants one starts it, and
        // stops it (tests/it/cmd_watch_auto.rs turns this back on with `-c`), so that
        // no test leaves a watcher process behind or races one over its temp dir.
        cmd.env("GIT_CONFIG_COUNT", "1")
            .env("GIT_CONFIG_KEY_0", AUTO_WATCH_KEY)
            .env("GIT_CONFIG_VALUE_0", "false");
    }

    pub fn git_cmd(&self, cwd: &Path, args: &[&str]) -> Command {
        let mut c = Command::new("git");
        self.isolate(&mut c);
        // Our own read-only git calls must not refresh the index behind our back.
        c.env("GIT_OPTIONAL_LOCKS", "0");
        c.current_dir(cwd).args(args);
        c
    }

    /// Runs git and returns its stdout; panics if git fails.
    #[track_caller]
    pub fn git(&self, cwd: &Path, args: &[&str]) -> String {
        let out = run_cmd(self.git_cmd(cwd, args), DEFAULT_TIMEOUT);
        assert_eq!(out.code, 0, "git {args:?} in {}\n{out}", cwd.display());
        out.stdout
    }

    pub fn bin_cmd<S: AsRef<OsStr>>(&self, cwd: &Path, args: &[S]) -> Command {
        let mut c = Command::new(BIN);
        self.isolate(&mut c);
        c.current_dir(cwd).args(args);
        c
    }

    /// Runs the binary in `cwd`; always checks it did not panic.
    #[track_caller]
    pub fn run_in<S: AsRef<OsStr> + fmt::Debug>(&self, cwd: &Path, args: &[S]) -> Out {
        let out = run_cmd(self.bin_cmd(cwd, args), DEFAULT_TIMEOUT);
        assert_no_panic(&out, &format!("git-checkpoint {args:?}"));
        out
    }

    /// Runs the binary in `cwd` and asserts exit 0.
    #[track_caller]
    pub fn ok_in<S: AsRef<OsStr> + fmt::Debug>(&self, cwd: &Path, args: &[S]) -> Out {
        let out = self.run_in(cwd, args);
        assert_eq!(
            out.code,
            0,
            "git-checkpoint {args:?} in {} failed\n{out}",
            cwd.display()
        );
        out
    }

    /// `git init -q -b main` of a new directory `rel` inside the sandbox.
    pub fn init_repo(&self, rel: &str) -> PathBuf {
        let dir = self.root.join(rel);
        fs::create_dir_all(&dir).expect("mkdir repo");
        self.git(&dir, &["init", "-q", "-b", "main"]);
        dir
    }
}

/// A sandbox holding one freshly initialised repository at `<sandbox>/repo`.
pub struct Repo {
    pub sb: Sandbox,
    pub dir: PathBuf,
}

impl Default for Repo {
    fn default() -> Self {
        Self::new()
    }
}

impl Repo {
    pub fn new() -> Self {
        let sb = Sandbox::new();
        let dir = sb.init_repo("repo");
        Repo { sb, dir }
    }

    /// Absolute path of `rel` inside the worktree.
    pub fn p(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.dir.join(rel)
    }

    #[track_caller]
    pub fn run<S: AsRef<OsStr> + fmt::Debug>(&self, args: &[S]) -> Out {
        self.sb.run_in(&self.dir, args)
    }

    #[track_caller]
    pub fn ok<S: AsRef<OsStr> + fmt::Debug>(&self, args: &[S]) -> Out {
        self.sb.ok_in(&self.dir, args)
    }

    /// Runs with exit 0 and parses stdout as one JSON document.
    #[track_caller]
    pub fn json<S: AsRef<OsStr> + fmt::Debug>(&self, args: &[S]) -> Value {
        let out = self.ok(args);
        parse_json(&out, &format!("{args:?}"))
    }

    /// `save --json` with extra args; returns the parsed object.
    #[track_caller]
    pub fn save_json(&self, extra: &[&str]) -> Value {
        let mut args = vec!["save", "--json"];
        args.extend_from_slice(extra);
        self.json(&args)
    }

    /// Saves with a message and returns the new checkpoint's full id.
    #[track_caller]
    pub fn save(&self, msg: &str) -> String {
        let v = self.save_json(&["-m", msg]);
        match id_of(&v) {
            Some(id) => id,
            None => panic!("save -m {msg:?} made no checkpoint: {v}"),
        }
    }

    /// Saves with `--allow-empty`, returns the id.
    #[track_caller]
    pub fn save_forced(&self, msg: &str) -> String {
        let v = self.save_json(&["-m", msg, "--allow-empty"]);
        match id_of(&v) {
            Some(id) => id,
            None => panic!("save --allow-empty made no checkpoint: {v}"),
        }
    }

    /// `log --json` (`--all` when `all`), as a vector of checkpoint objects.
    #[track_caller]
    pub fn log_json(&self, all: bool) -> Vec<Value> {
        let v = if all {
            self.json(&["log", "--all", "--json"])
        } else {
            self.json(&["log", "--json"])
        };
        match v.as_array() {
            Some(a) => a.clone(),
            None => panic!("log --json is not an array: {v}"),
        }
    }

    #[track_caller]
    pub fn log_ids(&self, all: bool) -> Vec<String> {
        self.log_json(all)
            .iter()
            .map(|c| id_of(c).expect("log entry without id"))
            .collect()
    }

    /// The current checkpoint per `log --json` (newest of the current line).
    #[track_caller]
    pub fn current(&self) -> String {
        self.log_ids(false)
            .into_iter()
            .next()
            .expect("log is empty")
    }

    #[track_caller]
    pub fn git(&self, args: &[&str]) -> String {
        self.sb.git(&self.dir, args)
    }

    pub fn write(&self, rel: impl AsRef<Path>, data: &[u8]) {
        write_file(&self.p(rel), data, false);
    }

    pub fn write_exec(&self, rel: impl AsRef<Path>, data: &[u8]) {
        write_file(&self.p(rel), data, true);
    }

    pub fn symlink(&self, rel: impl AsRef<Path>, target: impl AsRef<Path>) {
        let p = self.p(rel);
        if let Some(parent) = p.parent() {
            fs::create_dir_all(parent).unwrap();
        }
        std::os::unix::fs::symlink(target, &p)
            .unwrap_or_else(|e| panic!("symlink {}: {e}", p.display()));
    }

    #[track_caller]
    pub fn read(&self, rel: impl AsRef<Path>) -> Vec<u8> {
        let p = self.p(rel);
        fs::read(&p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()))
    }

    #[track_caller]
    pub fn read_string(&self, rel: impl AsRef<Path>) -> String {
        String::from_utf8(self.read(rel)).expect("utf-8 content")
    }

    pub fn exists(&self, rel: impl AsRef<Path>) -> bool {
        fs::symlink_metadata(self.p(rel)).is_ok()
    }

    /// Removes a file, symlink or directory tree (whatever is there).
    pub fn remove(&self, rel: impl AsRef<Path>) {
        remove_any(&self.p(rel));
    }

    pub fn set_exec(&self, rel: impl AsRef<Path>, exec: bool) {
        let p = self.p(rel);
        let mode = if exec { 0o755 } else { 0o644 };
        fs::set_permissions(&p, fs::Permissions::from_mode(mode)).unwrap();
    }

    /// Snapshot of the worktree (everything except the top-level `.git`).
    pub fn snapshot(&self) -> Snap {
        snapshot(&self.dir, true)
    }

    /// The HOME the binary and git run with.
    pub fn home(&self) -> PathBuf {
        self.sb.home.clone()
    }

    /// A scratch directory beside the worktree (not inside it).
    /// Runs the binary with `args` under `strace -f -y`, tracing `calls`; returns its
    /// outcome and the system calls seen, one per line, each fd shown with its path.
    pub fn traced(&self, calls: &[&str], args: &[&str]) -> (Out, String) {
        let log = self.scratch("strace").join(format!(
            "trace-{}",
            std::time::SystemTime::now()
                .duration_since(std::time::SystemTime::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        let mut cmd = Command::new("strace");
        self.sb.isolate(&mut cmd);
        cmd.current_dir(&self.dir)
            .args(["-f", "-qq", "-y", "-o"])
            .arg(&log)
            .arg("-e")
            .arg(format!("trace={}", calls.join(",")))
            .arg(BIN)
            .args(args);
        let out = run_cmd(cmd, DEFAULT_TIMEOUT);
        let trace = fs::read_to_string(&log).unwrap_or_else(|e| {
            panic!("strace left no trace (is strace installed?): {e}\n{out}");
        });
        (out, trace)
    }

    pub fn scratch(&self, name: &str) -> PathBuf {
        let path = self.sb.root.join(name);
        fs::create_dir_all(&path).unwrap();
        path
    }

    /// Runs `args` with exit 0 on a clock past the undo window of every operation a test
    /// makes ([`PAST_THE_UNDO_WINDOW`]), as a gc that may remove what undo keeps must.
    #[track_caller]
    pub fn ok_past_the_undo_window(&self, args: &[&str]) -> Out {
        let out = self.run_env(args, &[PAST_THE_UNDO_WINDOW]);
        assert_eq!(out.code, 0, "{args:?}: {out}");
        out
    }

    /// Runs the binary in the worktree with extra environment.
    #[track_caller]
    pub fn run_env(&self, args: &[&str], env: &[(&str, &str)]) -> Out {
        let mut cmd = self.sb.bin_cmd(&self.dir, args);
        for (key, value) in env {
            cmd.env(key, value);
        }
        let out = run_cmd(cmd, DEFAULT_TIMEOUT);
        assert_no_panic(&out, &format!("{args:?}"));
        out
    }

    /// Runs `--json <args>` with exit 0 and parses the document it prints.
    #[track_caller]
    pub fn json_of(&self, args: &[&str]) -> Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        self.json(&all)
    }

    /// The full ids of the parents of the checkpoint `rev` names.
    #[track_caller]
    pub fn parents(&self, rev: &str) -> Vec<String> {
        self.json_of(&["show", rev])["parents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p.as_str().unwrap().to_string())
            .collect()
    }

    /// The full id a revision names.
    #[track_caller]
    pub fn id(&self, rev: &str) -> String {
        self.json_of(&["show", rev])["id"]
            .as_str()
            .unwrap()
            .to_string()
    }

    /// Branch names, sorted, with the current one marked by a leading `*`.
    #[track_caller]
    pub fn branches(&self) -> Vec<String> {
        self.json_of(&["branch"])
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
    /// `path->target`), sorted: the worktree's state as one printable value.
    pub fn files(&self) -> Vec<String> {
        self.snapshot()
            .into_iter()
            .filter_map(|(path, node)| {
                let path = String::from_utf8_lossy(&path).into_owned();
                match node {
                    Node::File { data, .. } => {
                        Some(format!("{path}={}", String::from_utf8_lossy(&data)))
                    }
                    Node::Link(target) => {
                        Some(format!("{path}->{}", String::from_utf8_lossy(&target)))
                    }
                    Node::Dir | Node::Other => None,
                }
            })
            .collect()
    }

    pub fn git_dir(&self) -> PathBuf {
        self.dir.join(".git")
    }

    pub fn store_path(&self) -> PathBuf {
        self.git_dir().join("checkpoint").join("store.redb")
    }
}

#[track_caller]
pub fn parse_json(out: &Out, what: &str) -> Value {
    match serde_json::from_str(out.stdout.trim()) {
        Ok(v) => v,
        Err(e) => panic!("{what}: stdout is not one JSON document ({e})\n{out}"),
    }
}

/// The `id` field of a checkpoint object, if it is a string.
pub fn id_of(v: &Value) -> Option<String> {
    v.get("id").and_then(Value::as_str).map(str::to_owned)
}

pub fn is_hex(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_hexdigit())
}

pub fn write_file(p: &Path, data: &[u8], exec: bool) {
    if let Some(parent) = p.parent() {
        fs::create_dir_all(parent).unwrap();
    }
    if fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_symlink()) {
        fs::remove_file(p).unwrap();
    }
    fs::write(p, data).unwrap_or_else(|e| panic!("write {}: {e}", p.display()));
    let mode = if exec { 0o755 } else { 0o644 };
    fs::set_permissions(p, fs::Permissions::from_mode(mode)).unwrap();
}

pub fn remove_any(p: &Path) {
    match fs::symlink_metadata(p) {
        Ok(m) if m.is_dir() => fs::remove_dir_all(p).unwrap(),
        Ok(_) => fs::remove_file(p).unwrap(),
        Err(_) => {}
    }
}

/// Removes empty directories below `root` (bottom-up), never `root` itself nor
/// anything inside a `.git`.
pub fn prune_empty_dirs(root: &Path) {
    fn go(dir: &Path) -> bool {
        let mut empty = true;
        for e in fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let ft = e.file_type().unwrap();
            if ft.is_dir() && e.file_name() != ".git" {
                if go(&e.path()) {
                    fs::remove_dir(e.path()).unwrap();
                } else {
                    empty = false;
                }
            } else {
                empty = false;
            }
        }
        empty
    }
    go(root);
}

/// Deterministic pseudo-random bytes (xorshift64).
pub fn pseudo_random(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut v = Vec::with_capacity(len + 8);
    while v.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.extend_from_slice(&x.to_le_bytes());
    }
    v.truncate(len);
    v
}

/// One entry of a snapshot.
#[derive(Clone, PartialEq, Eq)]
pub enum Node {
    Dir,
    File { data: Vec<u8>, exec: bool },
    Link(Vec<u8>),
    Other,
}

impl Node {
    pub fn is_captured_kind(&self) -> bool {
        matches!(self, Node::File { .. } | Node::Link(_))
    }
}

fn fnv(data: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in data {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    h
}

impl fmt::Debug for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Node::Dir => write!(f, "dir"),
            Node::File { data, exec } => {
                let kind = if *exec { "exec" } else { "file" };
                if data.len() <= 40 {
                    write!(f, "{kind}({:?})", String::from_utf8_lossy(data))
                } else {
                    write!(f, "{kind}(len={}, fnv={:016x})", data.len(), fnv(data))
                }
            }
            Node::Link(t) => write!(f, "symlink -> {:?}", String::from_utf8_lossy(t)),
            Node::Other => write!(f, "special file"),
        }
    }
}

/// Path (raw bytes, relative, `/`-separated) to node.
pub type Snap = BTreeMap<Vec<u8>, Node>;

pub fn show_path(p: &[u8]) -> String {
    format!("{:?}", String::from_utf8_lossy(p))
}

/// Walks `root` without following symlinks. With `skip_root_git`, the top-level
/// `.git` is left out (nested `.git` directories are included).
pub fn snapshot(root: &Path, skip_root_git: bool) -> Snap {
    let mut out = Snap::new();
    walk(root, root, skip_root_git, &mut out);
    out
}

fn walk(root: &Path, dir: &Path, skip_root_git: bool, out: &mut Snap) {
    let mut entries: Vec<_> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read_dir {}: {e}", dir.display()))
        .map(|e| e.unwrap())
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let path = e.path();
        if skip_root_git && dir == root && e.file_name() == ".git" {
            continue;
        }
        let rel = path
            .strip_prefix(root)
            .unwrap()
            .as_os_str()
            .as_bytes()
            .to_vec();
        let m = fs::symlink_metadata(&path).unwrap();
        let ft = m.file_type();
        if ft.is_symlink() {
            let t = fs::read_link(&path).unwrap();
            out.insert(rel, Node::Link(t.as_os_str().as_bytes().to_vec()));
        } else if ft.is_dir() {
            out.insert(rel, Node::Dir);
            walk(root, &path, skip_root_git, out);
        } else if ft.is_file() {
            let data = fs::read(&path).unwrap();
            out.insert(
                rel,
                Node::File {
                    data,
                    exec: m.mode() & 0o111 != 0,
                },
            );
        } else {
            out.insert(rel, Node::Other);
        }
    }
}

/// Paths whose entries differ between two snapshots, described for a message.
pub fn snap_diff(expected: &Snap, actual: &Snap) -> Vec<String> {
    let mut d = Vec::new();
    for (k, v) in expected {
        match actual.get(k) {
            None => d.push(format!("missing  {}: expected {v:?}", show_path(k))),
            Some(a) if a != v => d.push(format!(
                "differs  {}: expected {v:?}, found {a:?}",
                show_path(k)
            )),
            _ => {}
        }
    }
    for (k, v) in actual {
        if !expected.contains_key(k) {
            d.push(format!("extra    {}: {v:?}", show_path(k)));
        }
    }
    d
}

#[track_caller]
pub fn assert_snap_eq(expected: &Snap, actual: &Snap, what: &str) {
    let d = snap_diff(expected, actual);
    assert!(
        d.is_empty(),
        "{what}: worktree differs ({} entries)\n{}",
        d.len(),
        d.join("\n")
    );
}

/// Whether a relative path lies inside some `.git` directory.
pub fn in_dot_git(rel: &[u8]) -> bool {
    rel.split(|b| *b == b'/').any(|c| c == b".git")
}

/// Apparent size and allocated bytes (st_blocks * 512) of a file.
pub fn file_usage(p: &Path) -> (u64, u64) {
    let m = fs::metadata(p).unwrap_or_else(|e| panic!("stat {}: {e}", p.display()));
    (m.len(), m.blocks() * 512)
}

/// Spawns the binary in the background; the handle yields its output.
pub fn spawn_bg(cmd: Command, timeout: Duration) -> thread::JoinHandle<Out> {
    thread::spawn(move || run_cmd(cmd, timeout))
}

/// The variable that lets a test skip when the machine cannot run it:
/// `GIT_CHECKPOINT_TEST_SKIP_<NAME>=<reason>`. Without it such a test fails, so a skip
/// never shows as a silent `ok`: whoever skips one has said why. The variable is read
/// only when the test cannot run; where it can, it runs whatever the variable says.
pub fn skip_variable(name: &str) -> String {
    format!("GIT_CHECKPOINT_TEST_SKIP_{name}")
}

/// Called by a test that cannot run here, just before it returns: prints the skip when
/// `GIT_CHECKPOINT_TEST_SKIP_<name>` holds a reason, and otherwise fails the test,
/// saying what is missing and how to opt out.
#[track_caller]
pub fn skip_only_if_allowed(name: &str, why_not: &str) {
    let variable = skip_variable(name);
    match std::env::var(&variable) {
        Ok(reason) if !reason.trim().is_empty() => {
            eprintln!("SKIPPED ({variable}={reason}): {why_not}");
        }
        _ => panic!(
            "this test cannot run here: {why_not}\n\
             Run it where it can, or set {variable}=<reason> to skip it knowingly."
        ),
    }
}

/// Whether the tests run as root (who reads and writes everything).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Makes everything below `dir` readable and writable by anyone (for [`run_unprivileged`]).
pub fn open_up(dir: &Path) {
    let status = Command::new("chmod")
        .arg("-R")
        .arg("a+rwX")
        .arg(dir)
        .status()
        .unwrap();
    assert!(status.success());
}

/// Whether [`run_unprivileged`] can run here: as root it needs setpriv(1), and without
/// it the test is skipped knowingly (`GIT_CHECKPOINT_TEST_SKIP_UNREADABLE`) or fails.
/// As root, the sandbox's git config then trusts every directory (`safe.directory = *`),
/// so that git lets `nobody` into the root-owned repository.
pub fn prepare_unprivileged(repo: &Repo) -> bool {
    if !is_root() {
        return true;
    }
    if let Err(e) = Command::new("setpriv").arg("--version").output() {
        skip_only_if_allowed(
            "UNREADABLE",
            &format!("running as root, and setpriv (to drop root) cannot run: {e}"),
        );
        return false;
    }
    fs::write(repo.sb.home.join(".gitconfig"), "[safe]\n\tdirectory = *\n").unwrap();
    true
}

/// Runs the binary in the worktree as `nobody` through setpriv(1) when the tests run as
/// root, so that file permissions apply; as itself otherwise.
pub fn run_unprivileged(repo: &Repo, args: &[&str]) -> Out {
    run_unprivileged_with_input(repo, args, None)
}

/// [`run_unprivileged`] with `input` on stdin (an agent's hook payload).
pub fn run_unprivileged_with_input(repo: &Repo, args: &[&str], input: Option<&[u8]>) -> Out {
    let out = run_cmd_with_input(unprivileged_cmd(repo, args), input, DEFAULT_TIMEOUT);
    assert_no_panic(&out, &format!("{args:?}"));
    out
}

/// The command [`run_unprivileged`] runs, to be run or spawned by the caller.
pub fn unprivileged_cmd(repo: &Repo, args: &[&str]) -> Command {
    let mut cmd = if is_root() {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", BIN]);
        repo.sb.isolate(&mut c);
        c.current_dir(&repo.dir).args(args);
        c
    } else {
        repo.sb.bin_cmd(&repo.dir, args)
    };
    cmd.env("HOME", &repo.sb.home);
    cmd
}

/// Spawns the binary with `args` in the worktree, paused for `ms` at the fault point
/// `point` (stdout and stderr piped), and returns once the process is inside that pause,
/// as its announcement (`GIT_CHECKPOINT_PAUSED_FILE`) shows; a kill or a change made now
/// is known to land there.
pub fn spawn_paused(repo: &Repo, args: &[&str], point: &str, ms: u64) -> std::process::Child {
    spawn_paused_cmd(repo, repo.sb.bin_cmd(&repo.dir, args), point, ms)
}

/// [`spawn_paused`] for a command of the caller's (one [`unprivileged_cmd`] made, say).
pub fn spawn_paused_cmd(
    repo: &Repo,
    mut cmd: Command,
    point: &str,
    ms: u64,
) -> std::process::Child {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static SPAWNED: AtomicUsize = AtomicUsize::new(0);
    let paused = repo.sb.root.join(format!(
        "paused-{}",
        SPAWNED.fetch_add(1, Ordering::Relaxed)
    ));
    let args: Vec<_> = cmd.get_args().map(|a| a.to_os_string()).collect();
    let mut child = cmd
        .env("GIT_CHECKPOINT_PAUSE", format!("{point}:{ms}"))
        .env("GIT_CHECKPOINT_PAUSED_FILE", &paused)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while !paused.exists() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("{args:?} ended ({status}) before reaching {point}");
        }
        assert!(
            started.elapsed() < DEFAULT_TIMEOUT,
            "{args:?} never reached {point}"
        );
        thread::sleep(Duration::from_millis(1));
    }
    child
}

/// `PATH` with the directory of the binary under test first, so that `git checkpoint`
/// finds it as an installed hook command would.
pub fn path_with_bin() -> String {
    let bin_dir = Path::new(BIN)
        .parent()
        .expect("the binary is in a directory");
    format!(
        "{}:{}",
        bin_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// The count called `name` ("paths looked at", "stat cache entries read", "trees read",
/// "checkpoint records read") on the `trace: counts:` line of a run traced with
/// `GIT_CHECKPOINT_TRACE=1`.
#[track_caller]
pub fn trace_count(out: &Out, name: &str) -> u64 {
    let line = out
        .stderr
        .lines()
        .find_map(|l| l.strip_prefix("trace: counts: "))
        .unwrap_or_else(|| panic!("the trace reports no counts\n{out}"));
    line.split(", ")
        .find_map(|part| part.strip_prefix(name)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no count of {name:?} in {line:?}"))
}

/// Runs `hooks run claude` in `cwd` with `input` on stdin.
pub fn run_hook(sb: &Sandbox, cwd: &Path, input: &[u8]) -> Out {
    run_agent_hook(sb, cwd, "claude", input)
}

/// Runs `hooks run <agent>` in `cwd` with `input` on stdin, as the agent would.
pub fn run_agent_hook(sb: &Sandbox, cwd: &Path, agent: &str, input: &[u8]) -> Out {
    let out = run_cmd_with_input(
        sb.bin_cmd(cwd, &["hooks", "run", agent]),
        Some(input),
        DEFAULT_TIMEOUT,
    );
    assert_no_panic(&out, &format!("hooks run {agent}"));
    out
}

/// Runs `hooks run <agent>` in `cwd` with `input` on stdin and checks that it exits 0
/// with exactly `stdout` (what the agent reads) and nothing on stderr.
#[track_caller]
pub fn hook_answers(sb: &Sandbox, cwd: &Path, agent: &str, input: &[u8], stdout: &str) {
    let out = run_agent_hook(sb, cwd, agent, input);
    assert_eq!(
        (out.code, out.stdout.as_str(), out.stderr.as_str()),
        (0, stdout, ""),
        "{out}"
    );
}

/// The payload `tests/fixtures/agents/<agent>/<name>.json`, with each `$KEY` in its
/// strings replaced by the value `vars` gives it.
pub fn agent_fixture(agent: &str, name: &str, vars: &[(&str, &str)]) -> Value {
    let path = format!(
        "{}/tests/fixtures/agents/{agent}/{name}.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut value: Value = serde_json::from_slice(&text).unwrap();
    fill_in(&mut value, vars);
    value
}

fn fill_in(value: &mut Value, vars: &[(&str, &str)]) {
    match value {
        Value::String(text) => {
            for (key, with) in vars {
                *text = text.replace(&format!("${key}"), with);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| fill_in(v, vars)),
        Value::Object(map) => map.values_mut().for_each(|v| fill_in(v, vars)),
        _ => {}
    }
}

/// Checks that `sessions --json` lists exactly one session, of `agent` with id `id`,
/// `prompts` prompts and `first_prompt` as its first prompt's first line; returns its
/// short id.
#[track_caller]
pub fn only_session(
    repo: &Repo,
    agent: &str,
    id: &str,
    prompts: u64,
    first_prompt: &str,
) -> String {
    let sessions = repo.json_of(&["sessions", "--json"]);
    assert_eq!(sessions.as_array().map(Vec::len), Some(1), "{sessions:#}");
    let listed = &sessions[0];
    assert_eq!(
        (
            &listed["agent"],
            &listed["id"],
            &listed["prompts"],
            &listed["first_prompt"]
        ),
        (
            &Value::from(agent),
            &Value::from(id),
            &Value::from(prompts),
            &Value::from(first_prompt)
        ),
        "{sessions:#}"
    );
    listed["short_id"].as_str().unwrap().to_string()
}

/// The one checkpoint of `log` (as `log --json` lists them) whose metadata has every
/// `(key, value)` of `pairs`.
#[track_caller]
pub fn checkpoint_with<'l>(log: &'l [Value], pairs: &[(&str, &str)]) -> &'l Value {
    let found: Vec<&Value> = log
        .iter()
        .filter(|c| pairs.iter().all(|(k, v)| c["meta"][*k] == *v))
        .collect();
    assert_eq!(found.len(), 1, "one checkpoint with {pairs:?}: {log:#?}");
    found[0]
}

/// A clock past the undo window of every operation a test makes (docs/undo.md): gc
/// keeps what undoing an operation needs for seven days after it.
pub const PAST_THE_UNDO_WINDOW: (&str, &str) = ("GIT_CHECKPOINT_NOW", "2100-01-01T00:00:00Z");

/// The line [`run_measuring_peak`]'s wrapper ends stderr with.
const PEAK_MARKER: &str = "\ngit-checkpoint-test peak resident KiB: ";

/// Runs `cmd` (as [`run_cmd_with_input`] does) under a small python3 process that reports
/// the peak resident memory of its one child, and returns the output with that peak in
/// bytes. The test process cannot ask the kernel itself: all tests run in one process,
/// and a child spawned from it starts out counting that process's own resident pages
/// (`ru_maxrss` of a forked or vforked child includes what it shared at the fork), so
/// the figure would be that of whatever the other tests hold at that moment.
pub fn run_measuring_peak(cmd: Command, input: Option<&[u8]>) -> (Out, u64) {
    run_limited_measuring_peak(cmd, input, None, DEFAULT_TIMEOUT)
}

/// Limits the kernel puts on a measured child ([`run_limited_measuring_peak`]).
pub struct ChildLimits {
    /// Its address space (`RLIMIT_AS`), in bytes: allocations past it fail.
    pub address_space: u64,
    /// The size of any file it writes (`RLIMIT_FSIZE`), in bytes.
    pub file_size: u64,
}

/// [`run_measuring_peak`] with `limits` set in the child, killed after `timeout`.
pub fn run_limited_measuring_peak(
    cmd: Command,
    input: Option<&[u8]>,
    limits: Option<ChildLimits>,
    timeout: Duration,
) -> (Out, u64) {
    const MEASURE: &str = "import resource, subprocess, sys\n\
        limits = [int(n) for n in sys.argv[2].split(',') if n]\n\
        def limit():\n\
        \x20   for which, value in zip((resource.RLIMIT_AS, resource.RLIMIT_FSIZE), limits):\n\
        \x20       resource.setrlimit(which, (value, value))\n\
        code = subprocess.run(sys.argv[3:], preexec_fn=limit).returncode\n\
        peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss\n\
        sys.stderr.write('%s%d\\n' % (sys.argv[1], peak))\n\
        sys.exit(code if code >= 0 else 128 - code)\n";
    let mut wrapper = Command::new("python3");
    // `python3 -c CODE MARKER LIMITS PROGRAM ARGS…`: the marker comes as an argument, so
    // that the script needs no quoting of its own.
    let limits = limits
        .map(|l| format!("{},{}", l.address_space, l.file_size))
        .unwrap_or_default();
    wrapper
        .arg("-c")
        .arg(MEASURE)
        .arg(PEAK_MARKER)
        .arg(limits)
        .arg(cmd.get_program())
        .args(cmd.get_args());
    if let Some(dir) = cmd.get_current_dir() {
        wrapper.current_dir(dir);
    }
    for (key, value) in cmd.get_envs() {
        match value {
            Some(value) => wrapper.env(key, value),
            None => wrapper.env_remove(key),
        };
    }
    let mut out = run_cmd_with_input(wrapper, input, timeout);
    let at = out
        .stderr
        .rfind(PEAK_MARKER)
        .unwrap_or_else(|| panic!("the measuring wrapper reported no peak:\n{out}"));
    let kib: u64 = out.stderr[at + PEAK_MARKER.len()..]
        .trim()
        .parse()
        .unwrap_or_else(|e| panic!("the measuring wrapper's peak: {e}\n{out}"));
    out.stderr.truncate(at);
    (out, kib * 1024)
}

/// The ids `log --json <args>` lists, newest first.
#[track_caller]
pub fn log_ids(repo: &Repo, args: &[&str]) -> Vec<String> {
    let mut all = vec!["log"];
    all.extend_from_slice(args);
    repo.json_of(&all)
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap().to_string())
        .collect()
}

/// How many chunks, trees and checkpoints the store holds.
pub fn table_sizes(repo: &Repo) -> [u64; 3] {
    use crate::common::raw_store::{self, CHECKPOINTS, CHUNKS, TREES};
    use redb::{ReadableDatabase, ReadableTableMetadata};
    let path = repo.p(".git/checkpoint/store.redb");
    let db = raw_store::open(&path);
    let read = db.begin_read().unwrap();
    [
        read.open_table(CHUNKS).unwrap().len().unwrap(),
        read.open_table(TREES).unwrap().len().unwrap(),
        read.open_table(CHECKPOINTS).unwrap().len().unwrap(),
    ]
}
