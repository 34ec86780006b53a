//! What a hostile remote can do to a store through `fetch` (issue 21, findings 8, 9,
//! 11, 12, 13 and 14): commits crafted with git plumbing in a bare remote, as an
//! attacker would push them, fetched by the real binary.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{parse_json, raw_store, Repo};
use git_checkpoint::format::codec;
use git_checkpoint::model::tree::{Entry, Tree};
use git_checkpoint::ops::workspace::Workspace;
use git_checkpoint::storage::StoreRead;

/// A repository with bare remotes beside it.
struct Setup {
    repo: Repo,
}

impl Setup {
    fn new() -> Self {
        Setup { repo: Repo::new() }
    }

    /// A new bare repository, added as remote `name` of the worktree.
    fn remote(&self, name: &str) -> PathBuf {
        let dir = self
            .repo
            .sb
            .root
            .join(format!("{}.git", name.replace('/', "-")));
        self.repo.sb.git(
            &self.repo.sb.root,
            &["init", "-q", "--bare", dir.to_str().unwrap()],
        );
        self.repo
            .git(&["remote", "add", name, dir.to_str().unwrap()]);
        dir
    }

    /// Runs git in `dir` with `input` on stdin; returns stdout, trimmed.
    fn git_in(&self, dir: &Path, args: &[&str], input: &[u8]) -> String {
        let out = common::run_cmd_with_input(
            self.repo.sb.git_cmd(dir, args),
            Some(input),
            common::DEFAULT_TIMEOUT,
        );
        assert_eq!(out.code, 0, "git {args:?}\n{out}");
        out.stdout.trim().to_string()
    }

    fn blob(&self, dir: &Path, data: &[u8]) -> String {
        self.git_in(dir, &["hash-object", "-w", "--stdin"], data)
    }

    /// A tree of `entries` (mode, object, name), written as given: `git mktree` keeps
    /// a name listed twice.
    fn tree(&self, dir: &Path, entries: &[(&str, &str, &str)]) -> String {
        let mut input = String::new();
        for (mode, object, name) in entries {
            let kind = if *mode == "040000" { "tree" } else { "blob" };
            input.push_str(&format!("{mode} {kind} {object}\t{name}\n"));
        }
        self.git_in(dir, &["mktree"], input.as_bytes())
    }

    fn commit(&self, dir: &Path, tree: &str, parents: &[&str], message: &str) -> String {
        let mut args = vec!["commit-tree", tree];
        for p in parents {
            args.extend(["-p", p]);
        }
        self.git_in(dir, &args, message.as_bytes())
    }

    /// Points `refs/checkpoints/<branch>` of the remote at `commit`.
    fn publish(&self, dir: &Path, branch: &str, commit: &str) {
        let name = format!("refs/checkpoints/{branch}");
        self.git_in(dir, &["update-ref", &name, commit], b"");
    }

    /// A checkpoint commit of one file `ok.txt` holding `text`, published as `branch`.
    fn good_branch(&self, dir: &Path, branch: &str, text: &str, id: u128) -> String {
        let blob = self.blob(dir, text.as_bytes());
        let tree = self.tree(dir, &[("100644", &blob, "ok.txt")]);
        let commit = self.commit(dir, &tree, &[], &message(id, ""));
        self.publish(dir, branch, &commit);
        commit
    }
}

/// A checkpoint commit's message (docs/design.md, "Sharing through git"), with
/// `extra` trailer lines.
fn message(id: u128, extra: &str) -> String {
    format!("crafted\n\nCheckpoint-Id: {id:032x}\nCheckpoint-Time: 1000000000\n{extra}")
}

/// The commands that read the whole store all work, and `verify` finds nothing.
#[track_caller]
fn store_is_usable(repo: &Repo) {
    for args in [&["log", "--all"][..], &["stats"], &["gc"], &["verify"]] {
        let out = repo.run(args);
        assert_eq!(out.code, 0, "{args:?} on a store a fetch wrote\n{out}");
    }
}

#[test]
fn a_tree_with_a_name_twice_or_a_file_beside_its_directory_is_refused_and_the_rest_fetched() {
    let s = Setup::new();
    let bare = s.remote("origin");
    s.good_branch(&bare, "good", "fine\n", 1);
    let blob = s.blob(&bare, b"hostile\n");
    let twice = s.tree(&bare, &[("100644", &blob, "f"), ("100644", &blob, "f")]);
    let twice = s.commit(&bare, &twice, &[], &message(2, ""));
    s.publish(&bare, "twice", &twice);
    let inner = s.tree(&bare, &[("100644", &blob, "b")]);
    let clash = s.tree(&bare, &[("100644", &blob, "a"), ("040000", &inner, "a")]);
    let clash = s.commit(&bare, &clash, &[], &message(3, ""));
    s.publish(&bare, "clash", &clash);
    // A good child of the bad commit goes with it.
    let child_tree = s.tree(&bare, &[("100644", &blob, "g")]);
    let child = s.commit(&bare, &child_tree, &[&twice], &message(4, ""));
    s.publish(&bare, "child", &child);

    let fetched = s.repo.run(&["fetch", "origin"]);
    assert!(
        fetched.stderr.contains("refused origin/twice")
            && fetched.stderr.contains("\"f\" twice")
            && fetched.stderr.contains("refused origin/clash")
            && fetched
                .stderr
                .contains("\"a\" both as a file and as the directory")
            && fetched
                .stderr
                .contains(&format!("refused origin/child: commit {twice}")),
        "each bad branch is named with why\n{fetched}"
    );
    assert_eq!(
        fetched.code, 1,
        "a refused branch fails the fetch\n{fetched}"
    );
    s.repo.ok(&["show", "origin/good"]);
    for bad in ["origin/twice", "origin/clash", "origin/child"] {
        assert_eq!(s.repo.run(&["show", bad]).code, 1, "{bad} was imported");
    }
    store_is_usable(&s.repo);
    s.repo.write("mine.txt", b"a save and its automatic gc\n");
    s.repo.ok(&["save", "-m", "after the fetch"]);
    store_is_usable(&s.repo);
}

#[test]
fn a_commit_that_is_not_a_checkpoint_is_skipped_and_the_other_branches_fetched() {
    let s = Setup::new();
    let bare = s.remote("origin");
    let good = s.good_branch(&bare, "good", "fine\n", 1);
    let blob = s.blob(&bare, b"x\n");
    let tree = s.tree(&bare, &[("100644", &blob, "x")]);
    let plain = s.commit(&bare, &tree, &[], "an ordinary commit\n");
    s.publish(&bare, "plain", &plain);
    let fetched = s.repo.run(&["--json", "fetch", "origin"]);
    assert!(
        fetched.stderr.contains("refused origin/plain")
            && fetched.stderr.contains(&plain)
            && fetched.stderr.contains("no trailers"),
        "the bad branch is named with why\n{fetched}"
    );
    assert_eq!(fetched.code, 1, "{fetched}");
    let report = parse_json(&fetched, "fetch --json");
    assert_eq!(report["refused"][0]["name"], "origin/plain", "{report}");
    assert_eq!(report["branches"][0]["name"], "origin/good", "{report}");
    let shown = s.repo.json(&["--json", "show", "origin/good"]);
    assert_eq!(shown["files"], 1, "{shown}");
    // The good branch stays fetched while the bad one is still there.
    let again = s.repo.run(&["fetch", "origin"]);
    assert!(again.stderr.contains("refused origin/plain"), "{again}");
    s.repo.ok(&["show", "origin/good"]);
    assert!(s
        .repo
        .git(&["rev-parse", "refs/checkpoints-remote/origin/good"])
        .contains(&good));
}

/// The id and tree of a checkpoint, read through the library.
fn tip_tree(repo: &Repo, name: &str) -> (u128, u128) {
    let store = Workspace::discover(&repo.dir, Default::default())
        .and_then(|workspace| workspace.open_store(&mut || {}))
        .unwrap();
    let snapshot = store.snapshot().unwrap();
    let id = snapshot.remote_branch(name).unwrap().unwrap();
    let tree = snapshot.checkpoint(id).unwrap().tree;
    (id.0, tree.0)
}

#[test]
fn a_damaged_fetched_checkpoint_can_be_dropped_and_a_removed_remotes_tips_too() {
    let s = Setup::new();
    let bare = s.remote("origin");
    s.good_branch(&bare, "one", "one\n", 1);
    s.good_branch(&bare, "two", "two\n", 2);
    s.repo.ok(&["fetch", "origin"]);
    // What an older build let in: a tree holding one name twice.
    let (_, tree) = tip_tree(&s.repo, "origin/two");
    let mut entry: Option<Entry> = None;
    raw_store::edit(&s.repo.store_path(), raw_store::TREES, tree, |bytes| {
        let whole: Tree = codec::decode(bytes, "tree").expect("a full tree record");
        entry = whole.entries.first().cloned();
    });
    let entry = entry.unwrap();
    raw_store::edit(&s.repo.store_path(), raw_store::TREES, tree, |bytes| {
        *bytes = codec::encode(&Tree {
            entries: vec![entry.clone(), entry.clone()],
        });
    });
    let verify = s.repo.run(&["verify"]);
    assert_eq!(verify.code, 1, "verify reports the damage\n{verify}");

    let refused = s.repo.run(&["drop", "origin/one"]);
    assert_eq!(
        refused.code, 1,
        "a sound tip of a configured remote stays\n{refused}"
    );
    assert!(refused.stderr.contains("mirrors the remote"), "{refused}");
    let dropped = s.repo.run(&["drop", "origin/two"]);
    assert_eq!(dropped.code, 0, "a damaged tip can be dropped\n{dropped}");
    assert!(dropped.stdout.contains("Dropped 1 checkpoint"), "{dropped}");
    store_is_usable(&s.repo);

    s.repo.git(&["remote", "remove", "origin"]);
    let dropped = s.repo.run(&["drop", "origin/one"]);
    assert_eq!(dropped.code, 0, "its remote is gone\n{dropped}");
    assert_eq!(s.repo.log_ids(true), Vec::<String>::new());
    store_is_usable(&s.repo);
}

#[test]
fn hostile_attachment_names_are_left_out_and_never_pushed_back() {
    let s = Setup::new();
    let bare = s.remote("origin");
    let data = s.blob(&bare, b"att");
    let file = s.blob(&bare, b"file\n");
    let tree = s.tree(&bare, &[("100644", &file, "ok.txt")]);
    let mut extra = String::new();
    for name in ["notes.txt", ".", "..", "hex:"] {
        extra.push_str(&format!("Checkpoint-Attachment: 3 {data} {name}\n"));
    }
    let commit = s.commit(&bare, &tree, &[], &message(1, &extra));
    s.publish(&bare, "main", &commit);
    // The attachments ref that brings the blob along, as a push makes it.
    let holder = s.tree(&bare, &[("100644", &data, "notes.txt")]);
    let side = s.tree(&bare, &[("040000", &holder, &commit)]);
    let side = s.commit(&bare, &side, &[], "Attachments of checkpoints, by commit\n");
    s.git_in(
        &bare,
        &["update-ref", "refs/checkpoints-attachments/main", &side],
        b"",
    );

    let fetched = s.repo.ok(&["fetch", "origin"]);
    for name in ["\".\"", "\"..\"", "\"\""] {
        assert!(
            fetched
                .stderr
                .contains(&format!("left out attachment {name}")),
            "{name} is named\n{fetched}"
        );
    }
    let shown = s.repo.json(&["--json", "show", "origin/main"]);
    let names: Vec<&str> = shown["attachments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["notes.txt"], "{shown}");

    // The victim works on it and pushes to its own remote.
    let mine = s.remote("mine");
    s.repo.ok(&["fork", "origin/main", "-b", "theirs"]);
    let pushed = s.repo.run(&["push", "mine", "theirs"]);
    assert_eq!(pushed.code, 0, "{pushed}");
    let fsck = common::run_cmd(
        s.repo.sb.git_cmd(&mine, &["fsck", "--strict"]),
        common::DEFAULT_TIMEOUT,
    );
    assert_eq!(fsck.code, 0, "the pushed objects pass fsck\n{fsck}");
    let listed = s.git_in(
        &mine,
        &[
            "ls-tree",
            "-r",
            "--name-only",
            "refs/checkpoints-attachments/theirs",
        ],
        b"",
    );
    assert_eq!(listed, format!("{commit}/notes.txt"));
    let crashes: Vec<_> = std::fs::read_dir(s.repo.git_dir())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("fast_import_crash")
        })
        .collect();
    assert!(crashes.is_empty(), "{crashes:?}");
}

#[test]
fn a_skipped_path_outside_the_worktree_is_refused_at_import() {
    let s = Setup::new();
    let bare = s.remote("origin");
    s.good_branch(&bare, "good", "fine\n", 1);
    let blob = s.blob(&bare, b"x\n");
    let tree = s.tree(&bare, &[("100644", &blob, "x")]);
    for (branch, path, id) in [
        ("absolute", "/etc/passwd", 2),
        ("up", "../outside", 3),
        ("git", "sub/.git/config", 4),
    ] {
        let extra = format!("Checkpoint-Skipped: too-large 5 {path}\n");
        let commit = s.commit(&bare, &tree, &[], &message(id, &extra));
        s.publish(&bare, branch, &commit);
    }
    let fetched = s.repo.run(&["fetch", "origin"]);
    assert_eq!(fetched.code, 1, "{fetched}");
    for (branch, path) in [
        ("absolute", "/etc/passwd"),
        ("up", "../outside"),
        ("git", "sub/.git/config"),
    ] {
        assert!(
            fetched.stderr.contains(&format!("refused origin/{branch}"))
                && fetched.stderr.contains(&format!("skipped file \"{path}\"")),
            "{branch} is refused\n{fetched}"
        );
        assert_eq!(s.repo.run(&["show", &format!("origin/{branch}")]).code, 1);
    }
    let restored = s.repo.run(&["restore", "origin/absolute"]);
    assert!(!restored.stdout.contains("/etc/passwd"), "{restored}");
    s.repo.ok(&["show", "origin/good"]);
}

#[test]
fn remotes_whose_names_nest_are_refused_before_one_forgets_the_others_branches() {
    let s = Setup::new();
    let ci = s.remote("team/ci");
    s.good_branch(&ci, "main", "ci\n", 1);
    s.repo.ok(&["fetch", "team/ci"]);
    s.repo.ok(&["show", "team/ci/main"]);

    let team = s.remote("team");
    s.good_branch(&team, "dev", "team\n", 2);
    let fetched = s.repo.run(&["fetch", "team"]);
    assert_eq!(fetched.code, 1, "{fetched}");
    assert!(
        fetched.stderr.contains("'team' and 'team/ci'")
            && fetched.stderr.contains("git remote rename team/ci"),
        "{fetched}"
    );
    s.repo.ok(&["show", "team/ci/main"]);
    s.repo.git(&[
        "rev-parse",
        "--verify",
        "refs/checkpoints-remote/team/ci/main",
    ]);
    assert_eq!(s.repo.run(&["fetch", "team/ci"]).code, 1);
    // Renamed, both fetch side by side.
    s.repo.git(&["remote", "rename", "team/ci", "team-ci"]);
    s.repo.ok(&["fetch", "team"]);
    s.repo.ok(&["fetch", "team-ci"]);
    s.repo.ok(&["show", "team/dev"]);
    s.repo.ok(&["show", "team-ci/main"]);
}

#[test]
fn fetched_files_larger_than_max_file_size_are_recorded_as_skipped() {
    let s = Setup::new();
    let bare = s.remote("origin");
    let big = s.blob(&bare, &common::pseudo_random(2 << 20, 21));
    let small = s.blob(&bare, b"small\n");
    let tree = s.tree(
        &bare,
        &[("100644", &big, "big.bin"), ("100644", &small, "small.txt")],
    );
    let commit = s.commit(&bare, &tree, &[], &message(1, ""));
    s.publish(&bare, "main", &commit);
    s.repo.git(&["config", "checkpoint.maxFileSize", "1m"]);

    let fetched = s.repo.ok(&["fetch", "origin"]);
    assert!(
        fetched.stderr.contains("left out \"big.bin\"")
            && fetched.stderr.contains("checkpoint.maxFileSize"),
        "{fetched}"
    );
    let shown = s.repo.json(&["--json", "show", "origin/main"]);
    assert_eq!(shown["files"], 1, "{shown}");
    assert_eq!(shown["skipped"][0]["path"], "big.bin", "{shown}");
    assert_eq!(shown["skipped"][0]["size"], 2 << 20, "{shown}");
    assert_eq!(shown["skipped"][0]["reason"], "too-large", "{shown}");
    let stats = s.repo.json(&["--json", "stats"]);
    let stored = stats["stored_chunk_bytes"].as_u64().unwrap();
    assert!(stored < 1 << 20, "the big file was stored: {stats}");
}

/// The peak resident memory of `cmd`'s process, in bytes, read from its
/// `/proc/<pid>/status` (`VmHWM`, which only grows) until it exits.
fn peak_memory(mut cmd: std::process::Command) -> (u64, common::Out) {
    use std::io::Read;
    cmd.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let started = Instant::now();
    let mut child = cmd.spawn().unwrap();
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak = 0u64;
    let status = loop {
        if let Ok(text) = std::fs::read_to_string(&status_file) {
            if let Some(kb) = text
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            {
                peak = peak.max(kb * 1024);
            }
        }
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(started.elapsed() < Duration::from_secs(120), "fetch hangs");
        std::thread::sleep(Duration::from_millis(5));
    };
    let finished = Instant::now();
    let mut stdout = Vec::new();
    let mut stderr = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_end(&mut stdout)
        .unwrap();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let out = common::Out {
        code: status.code().unwrap_or(-1),
        signal: None,
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr,
        stdout_raw: stdout,
        started,
        finished,
    };
    (peak, out)
}

#[test]
fn a_huge_blob_is_streamed_through_the_chunker() {
    let s = Setup::new();
    let bare = s.remote("origin");
    const SIZE: u64 = 128 << 20;
    // Fast compression: the test is about memory, and zeros compress at any level.
    s.git_in(&bare, &["config", "core.compression", "1"], b"");
    let zeros = s.repo.sb.root.join("zeros");
    std::fs::File::create(&zeros)
        .unwrap()
        .set_len(SIZE)
        .unwrap();
    let big = s.git_in(&bare, &["hash-object", "-w", zeros.to_str().unwrap()], b"");
    std::fs::remove_file(&zeros).unwrap();
    let tree = s.tree(&bare, &[("100644", &big, "zeros.bin")]);
    let commit = s.commit(&bare, &tree, &[], &message(1, ""));
    s.publish(&bare, "main", &commit);
    s.repo.git(&["config", "checkpoint.maxFileSize", "0"]);

    let (peak, fetched) = peak_memory(s.repo.sb.bin_cmd(&s.repo.dir, &["fetch", "origin"]));
    assert_eq!(fetched.code, 0, "{fetched}");
    eprintln!("peak {} MiB", peak >> 20);
    assert!(
        peak < 64 << 20,
        "fetching a {SIZE}-byte blob took {} MiB",
        peak >> 20
    );
    let shown = s.repo.json(&["--json", "show", "origin/main"]);
    assert_eq!(shown["bytes"], SIZE, "{shown}");
    assert_eq!(
        shown["skipped"].as_array().map(Vec::len),
        Some(0),
        "{shown}"
    );
}

#[test]
fn the_graph_of_a_checkpoint_with_hundreds_of_parents_grows_linearly() {
    let s = Setup::new();
    let bare = s.remote("origin");
    const PARENTS: usize = 600;
    // One fast-import run: roots with empty trees, then one commit merging them all.
    let mut stream = String::new();
    let data = |stream: &mut String, text: &str| {
        stream.push_str(&format!("data {}\n{text}\n", text.len()));
    };
    for n in 1..=PARENTS {
        stream.push_str(&format!(
            "reset refs/roots/r\ncommit refs/roots/r\nmark :{n}\ncommitter a <a@b> {n} +0000\n"
        ));
        data(&mut stream, &message(n as u128, ""));
    }
    stream.push_str("commit refs/checkpoints/main\ncommitter a <a@b> 9999 +0000\n");
    data(&mut stream, &message(9999, ""));
    stream.push_str("from :1\n");
    for n in 2..=PARENTS {
        stream.push_str(&format!("merge :{n}\n"));
    }
    stream.push('\n');
    s.git_in(&bare, &["fast-import", "--quiet"], stream.as_bytes());
    s.repo.ok(&["fetch", "origin"]);

    let out = s.repo.ok(&["log", "--all", "--graph"]);
    let lines = out.stdout.lines().count();
    assert!(lines > PARENTS, "{lines} lines");
    // Each line is its graph (bounded) and its checkpoint's short description; lanes
    // for every parent at once would make the output grow with the square.
    assert!(
        out.stdout.len() < (PARENTS + 1) * 300,
        "{} bytes of graph for {} checkpoints; the widest line {} bytes",
        out.stdout.len(),
        PARENTS + 1,
        out.stdout.lines().map(str::len).max().unwrap_or(0)
    );
}

/// Finding 2 (issue 34): a remote publishes `refs/checkpoints/fix-$(touch${IFS}FILE)`,
/// a name git and the branch-name rules accept, which a shell runs once completion puts
/// it on a command line. Fetch refuses names outside letters, digits and `-_./` with one
/// line naming the branch, and fetches the rest; the refused name reaches neither the
/// store nor completion.
#[test]
fn a_branch_name_a_shell_would_run_is_refused_at_fetch_and_the_rest_fetched() {
    let s = Setup::new();
    let bare = s.remote("origin");
    s.good_branch(&bare, "good", "fine\n", 1);
    let hostile = "fix-$(touch${IFS}PWNED)";
    s.good_branch(&bare, hostile, "hostile\n", 2);

    let fetched = s.repo.run(&["fetch", "origin"]);
    let line = fetched
        .stderr
        .lines()
        .find(|line| line.contains(&format!("refused origin/{hostile}")))
        .unwrap_or_else(|| panic!("no line refuses the hostile name\n{fetched}"));
    assert!(
        line.contains("letters, digits"),
        "the refusal says what a name may hold: {line}"
    );
    assert_eq!(
        fetched.code, 1,
        "a refused branch fails the fetch\n{fetched}"
    );
    s.repo.ok(&["show", "origin/good"]);
    // Its checkpoint (id 2, as the commit's trailer says) was not imported.
    let imported = s.repo.run(&["show", &format!("{:032x}", 2)]);
    assert_eq!(
        imported.code, 1,
        "the hostile branch was imported\n{imported}"
    );
    let mut complete = s
        .repo
        .sb
        .bin_cmd(&s.repo.dir, &["--", "git-checkpoint", "show", "origin/"]);
    complete.env("GIT_CHECKPOINT_COMPLETE", "fish");
    let offered = common::run_cmd(complete, common::DEFAULT_TIMEOUT);
    assert_eq!(offered.stdout, "origin/good\tfetched branch\n", "{offered}");
    assert!(!s.repo.exists("PWNED"));
    store_is_usable(&s.repo);
}
