//! Finding the worktree and reading git's configuration and HEAD in-process: for every
//! layout git supports the tool must find what `git rev-parse` finds, read the config
//! values `git config` reads, record the HEAD commit `git rev-parse` resolves, and start
//! no `git` process on the hot path to do it.

use crate::common;
use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{id_of, run_cmd, Repo, Sandbox, DEFAULT_TIMEOUT};

/// What discovery found, as the `GIT_CHECKPOINT_TRACE` line prints it.
#[derive(Debug, PartialEq, Eq)]
struct Found {
    root: String,
    git_dir: String,
    common_dir: String,
    prefix: String,
}

/// What one traced `status` shows.
struct Trace {
    /// Which way discovery went: `in-process` or `git`.
    discovery: String,
    /// Which way the config read went.
    config: String,
    found: Found,
    /// The config map, as the trace prints it.
    map: String,
}

/// The environment of one run: variables set, and variables removed.
#[derive(Clone, Copy, Default)]
struct Env<'a> {
    set: &'a [(&'a str, &'a str)],
    unset: &'a [&'a str],
}

impl<'a> Env<'a> {
    /// Only these variables set.
    fn with(set: &'a [(&'a str, &'a str)]) -> Self {
        Env { set, unset: &[] }
    }

    fn apply(&self, cmd: &mut Command) {
        for (k, v) in self.set {
            cmd.env(k, v);
        }
        for k in self.unset {
            cmd.env_remove(k);
        }
    }
}

/// Runs `status` with tracing on in `cwd` (after `-C dir`, when given) and returns what
/// its trace shows.
fn traced(sb: &Sandbox, cwd: &Path, env: Env, dash_c: Option<&Path>) -> Trace {
    let mut args: Vec<&std::ffi::OsStr> = Vec::new();
    if let Some(dir) = dash_c {
        args.push("-C".as_ref());
        args.push(dir.as_os_str());
    }
    args.push("status".as_ref());
    let mut cmd = sb.bin_cmd(cwd, &args);
    cmd.env("GIT_CHECKPOINT_TRACE", "1");
    env.apply(&mut cmd);
    let out = run_cmd(cmd, DEFAULT_TIMEOUT);
    assert_eq!(out.code, 0, "status in {}\n{out}", cwd.display());
    let line = |prefix: &str| -> String {
        out.stderr
            .lines()
            .find_map(|l| l.strip_prefix(prefix))
            .unwrap_or_else(|| panic!("no {prefix:?} line\n{out}"))
            .to_string()
    };
    let discover = line("trace: discover: ");
    let (ways, facts) = discover.split_once("; ").expect("trace form");
    let (discovery, config) = ways.split_once(", config: ").expect("trace form");
    let field = |name: &str, next: Option<&str>| -> String {
        let start = facts.find(&format!("{name}=")).expect("field") + name.len() + 1;
        let rest = &facts[start..];
        let end = next
            .and_then(|n| rest.find(&format!(" {n}=")))
            .unwrap_or(rest.len());
        rest[..end].to_string()
    };
    Trace {
        discovery: discovery.to_string(),
        config: config.to_string(),
        found: Found {
            root: field("root", Some("git-dir")),
            git_dir: field("git-dir", Some("common-dir")),
            common_dir: field("common-dir", Some("prefix")),
            prefix: field("prefix", None),
        },
        map: line("trace: config: "),
    }
}

/// git run in `cwd` with `env`, whatever its exit code.
fn git_with(sb: &Sandbox, cwd: &Path, args: &[&str], env: Env) -> common::Out {
    let mut cmd = sb.git_cmd(cwd, args);
    env.apply(&mut cmd);
    run_cmd(cmd, DEFAULT_TIMEOUT)
}

/// What `git rev-parse` finds from `cwd` with `env`.
fn git_finds(sb: &Sandbox, cwd: &Path, env: Env) -> Found {
    let asks = [
        "rev-parse",
        "--show-toplevel",
        "--absolute-git-dir",
        "--path-format=absolute",
        "--git-common-dir",
        "--show-prefix",
    ];
    let out = git_with(sb, cwd, &asks, env);
    assert_eq!(out.code, 0, "git rev-parse in {}\n{out}", cwd.display());
    let lines: Vec<&str> = out.stdout.lines().collect();
    Found {
        root: lines[0].to_string(),
        git_dir: lines[1].to_string(),
        common_dir: lines[2].to_string(),
        prefix: lines.get(3).unwrap_or(&"").to_string(),
    }
}

/// The tool, in-process, finds exactly what git finds from `cwd`.
#[track_caller]
fn assert_finds_as_git(sb: &Sandbox, cwd: &Path, env: Env) -> Found {
    let trace = traced(sb, cwd, env, None);
    assert_eq!(trace.found, git_finds(sb, cwd, env), "in {}", cwd.display());
    assert_eq!(
        (trace.discovery.as_str(), trace.config.as_str()),
        ("in-process", "in-process")
    );
    trace.found
}

/// A save from `cwd` makes its store in `git_dir`, where the tool keeps it.
#[track_caller]
fn saves_into(sb: &Sandbox, cwd: &Path, git_dir: &Path) {
    sb.ok_in(cwd, &["save", "-m", "here"]);
    assert!(
        git_dir.join("checkpoint/store.redb").is_file(),
        "no store in {}",
        git_dir.display()
    );
}

/// A repository at `<sandbox>/<rel>` with one commit and a subdirectory `sub/`.
fn committed(sb: &Sandbox, rel: &str) -> PathBuf {
    let dir = sb.init_repo(rel);
    fs::create_dir_all(dir.join("sub")).unwrap();
    fs::write(dir.join("sub/file.txt"), "one\n").unwrap();
    fs::write(dir.join("top.txt"), "top\n").unwrap();
    sb.git(&dir, &["add", "-A"]);
    sb.git(&dir, &["commit", "-q", "-m", "first"]);
    dir
}

#[test]
fn plain_repository_at_the_top_and_in_a_subdirectory() {
    let sb = Sandbox::new();
    let dir = committed(&sb, "repo");
    let found = assert_finds_as_git(&sb, &dir, Env::default());
    assert_eq!(found.prefix, "");
    let found = assert_finds_as_git(&sb, &dir.join("sub"), Env::default());
    assert_eq!(found.prefix, "sub/");
    saves_into(&sb, &dir.join("sub"), &dir.join(".git"));
}

#[test]
fn separate_git_dir_through_a_git_file() {
    let sb = Sandbox::new();
    let wt = sb.root.join("wt");
    fs::create_dir_all(wt.join("sub")).unwrap();
    let sep = sb.root.join("sep.git");
    sb.git(
        &sb.root,
        &[
            "init",
            "-q",
            "-b",
            "main",
            "--separate-git-dir",
            sep.to_str().unwrap(),
            wt.to_str().unwrap(),
        ],
    );
    assert!(wt.join(".git").is_file());
    let found = assert_finds_as_git(&sb, &wt.join("sub"), Env::default());
    assert_eq!(found.git_dir, sep.to_str().unwrap());
    fs::write(wt.join("sub/a.txt"), "a\n").unwrap();
    saves_into(&sb, &wt.join("sub"), &sep);
    assert!(!wt.join(".git/checkpoint").exists());
}

#[test]
fn linked_worktree_and_path_relative_restore_from_its_subdirectory() {
    let sb = Sandbox::new();
    let main = committed(&sb, "repo");
    let linked = sb.root.join("linked");
    sb.git(&main, &["worktree", "add", "-q", linked.to_str().unwrap()]);
    let found = assert_finds_as_git(&sb, &linked.join("sub"), Env::default());
    assert_eq!(
        found.git_dir,
        main.join(".git/worktrees/linked").to_str().unwrap()
    );
    assert_eq!(found.common_dir, main.join(".git").to_str().unwrap());
    let sub = linked.join("sub");
    saves_into(&sb, &sub, &main.join(".git/worktrees/linked"));
    assert!(!main.join(".git/checkpoint").exists());
    fs::write(sub.join("file.txt"), "changed\n").unwrap();
    fs::write(linked.join("top.txt"), "changed too\n").unwrap();
    sb.ok_in(&sub, &["restore", "@", "--", "file.txt"]);
    assert_eq!(fs::read_to_string(sub.join("file.txt")).unwrap(), "one\n");
    // Only the path relative to the subdirectory was restored.
    assert_eq!(
        fs::read_to_string(linked.join("top.txt")).unwrap(),
        "changed too\n"
    );
}

#[test]
fn linked_worktree_of_a_bare_repository() {
    let sb = Sandbox::new();
    let source = committed(&sb, "source");
    let bare = sb.root.join("bare.git");
    sb.git(
        &sb.root,
        &[
            "clone",
            "-q",
            "--bare",
            source.to_str().unwrap(),
            bare.to_str().unwrap(),
        ],
    );
    let linked = sb.root.join("linked");
    sb.git(&bare, &["worktree", "add", "-q", linked.to_str().unwrap()]);
    // The common config says `core.bare = true`; git ignores that in a linked worktree.
    let found = assert_finds_as_git(&sb, &linked.join("sub"), Env::default());
    assert_eq!(found.common_dir, bare.to_str().unwrap());
    saves_into(&sb, &linked, &bare.join("worktrees/linked"));
}

#[test]
fn submodule_checkout() {
    let sb = Sandbox::new();
    let upstream = committed(&sb, "upstream");
    let outer = committed(&sb, "outer");
    sb.git(
        &outer,
        &[
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "-q",
            upstream.to_str().unwrap(),
            "mod",
        ],
    );
    let module = outer.join("mod");
    assert!(module.join(".git").is_file());
    let found = assert_finds_as_git(&sb, &module.join("sub"), Env::default());
    assert_eq!(found.root, module.to_str().unwrap());
    assert_eq!(
        found.git_dir,
        outer.join(".git/modules/mod").to_str().unwrap()
    );
    saves_into(&sb, &module, &outer.join(".git/modules/mod"));
}

#[test]
fn git_dir_and_work_tree_from_the_environment() {
    let sb = Sandbox::new();
    let repo = committed(&sb, "repo");
    let elsewhere = sb.root.join("elsewhere.git");
    fs::rename(repo.join(".git"), &elsewhere).unwrap();
    let env = [
        ("GIT_DIR", elsewhere.to_str().unwrap()),
        ("GIT_WORK_TREE", repo.to_str().unwrap()),
    ];
    let found = assert_finds_as_git(&sb, &repo.join("sub"), Env::with(&env));
    assert_eq!(found.prefix, "sub/");
    // Relative forms are relative to the current directory.
    let env = [("GIT_DIR", "../../elsewhere.git"), ("GIT_WORK_TREE", "..")];
    assert_finds_as_git(&sb, &repo.join("sub"), Env::with(&env));
    // `GIT_DIR` alone: the current directory is the top of the worktree.
    let env = [("GIT_DIR", elsewhere.to_str().unwrap())];
    let found = assert_finds_as_git(&sb, &repo.join("sub"), Env::with(&env));
    assert_eq!(found.root, repo.join("sub").to_str().unwrap());
}

#[test]
fn core_worktree_names_the_worktree() {
    let sb = Sandbox::new();
    let repo = committed(&sb, "repo");
    let elsewhere = sb.root.join("meta/elsewhere.git");
    fs::create_dir_all(elsewhere.parent().unwrap()).unwrap();
    fs::rename(repo.join(".git"), &elsewhere).unwrap();
    // Relative to the git directory.
    sb.git(
        &sb.root,
        &[
            "--git-dir",
            elsewhere.to_str().unwrap(),
            "config",
            "core.worktree",
            "../../repo",
        ],
    );
    let env = [("GIT_DIR", elsewhere.to_str().unwrap())];
    let found = assert_finds_as_git(&sb, &repo.join("sub"), Env::with(&env));
    assert_eq!(found.root, repo.to_str().unwrap());
    assert_eq!(found.prefix, "sub/");
    // Without GIT_DIR there is no repository here any more.
    assert_ne!(sb.run_in(&repo.join("sub"), &["status"]).code, 0);
    let mut cmd = sb.bin_cmd(&repo.join("sub"), &["save", "-m", "one"]);
    cmd.env("GIT_DIR", &elsewhere);
    let out = run_cmd(cmd, DEFAULT_TIMEOUT);
    assert_eq!(out.code, 0, "{out}");
    assert!(elsewhere.join("checkpoint/store.redb").is_file());
}

#[test]
fn symlinked_path_resolves_as_git_resolves_it() {
    let sb = Sandbox::new();
    let repo = committed(&sb, "repo");
    let link = sb.root.join("link");
    std::os::unix::fs::symlink(&repo, &link).unwrap();
    let trace = traced(&sb, &sb.root, Env::default(), Some(&link.join("sub")));
    assert_eq!(
        trace.found,
        git_finds(&sb, &link.join("sub"), Env::default())
    );
    assert_eq!(trace.found.root, repo.to_str().unwrap());
    assert_eq!(trace.found.prefix, "sub/");
    assert_eq!(trace.discovery, "in-process");
}

#[test]
fn bare_repository_and_no_repository_fail_with_gits_wording() {
    let sb = Sandbox::new();
    let bare = sb.root.join("bare.git");
    sb.git(&sb.root, &["init", "-q", "--bare", bare.to_str().unwrap()]);
    let out = sb.run_in(&bare, &["status"]);
    assert_ne!(out.code, 0);
    assert!(
        out.stderr
            .contains("this operation must be run in a work tree"),
        "{out}"
    );
    let outside = sb.root.join("outside");
    fs::create_dir_all(&outside).unwrap();
    let out = sb.run_in(&outside, &["status"]);
    assert_ne!(out.code, 0);
    assert!(out.stderr.contains("not a git repository"), "{out}");
    // A repository above the ceiling is not found, as git does not find it.
    let repo = committed(&sb, "repo");
    let mut cmd = sb.bin_cmd(&repo.join("sub"), &["status"]);
    cmd.env("GIT_CEILING_DIRECTORIES", &repo);
    let out = run_cmd(cmd, DEFAULT_TIMEOUT);
    assert_ne!(out.code, 0);
    assert!(out.stderr.contains("not a git repository"), "{out}");
}

/// `git config -z --get-regexp` of the keys the tool reads, as the tool's trace prints
/// its map (keys lower case, the last value winning).
fn git_config_map(sb: &Sandbox, cwd: &Path, env: Env) -> String {
    let pattern = r"^(checkpoint\..*|core\.excludesfile|core\.pager|extensions\.objectformat)$";
    let out = git_with(sb, cwd, &["config", "-z", "--get-regexp", pattern], env);
    let mut map = BTreeMap::new();
    for record in out.stdout_raw.split(|&b| b == 0).filter(|r| !r.is_empty()) {
        let text = String::from_utf8_lossy(record);
        let (key, value) = text.split_once('\n').unwrap_or((&text, ""));
        map.insert(key.to_ascii_lowercase(), value.to_string());
    }
    format!("{map:?}")
}

/// The tool's config map, read in-process, equals git's.
#[track_caller]
fn assert_config_as_git(sb: &Sandbox, cwd: &Path, env: Env) -> String {
    let trace = traced(sb, cwd, env, None);
    assert_eq!(
        trace.map,
        git_config_map(sb, cwd, env),
        "in {}",
        cwd.display()
    );
    assert_eq!(trace.config, "in-process");
    trace.map
}

#[test]
fn config_layers_includes_and_command_line_read_as_git_reads_them() {
    let sb = Sandbox::new();
    let repo = committed(&sb, "repo");
    let linked = sb.root.join("linked");
    sb.git(
        &repo,
        &[
            "worktree",
            "add",
            "-q",
            "-b",
            "feature/x",
            linked.to_str().unwrap(),
        ],
    );
    let system = sb.root.join("system.gitconfig");
    fs::write(
        &system,
        "[checkpoint]\n\tcompression = 5\n\tmaxFileSize = 1k\n\tfromSystem = yes\n",
    )
    .unwrap();
    fs::write(
        sb.home.join(".gitconfig"),
        format!(
            "[checkpoint]\n\tmaxFileSize = 2k ; a comment\n\tquoted = \"  a \\\"b\\\" # c \"\n\
         [include]\n\tpath = included.inc\n\
         [includeIf \"gitdir:{root}/repo/\"]\n\tpath = ~/by-home.inc\n\
         [includeIf \"gitdir:**/worktrees/linked\"]\n\tpath = linked-only.inc\n\
         [includeIf \"gitdir/i:**/REPO/.GIT\"]\n\tpath = icase.inc\n\
         [includeIf \"onbranch:feature/\"]\n\tpath = feature.inc\n\
         [includeIf \"onbranch:main\"]\n\tpath = main.inc\n\
         [includeIf \"nosuchcondition:x\"]\n\tpath = never.inc\n\
         [core]\n\tpager = less -R\n",
            root = sb.root.display()
        ),
    )
    .unwrap();
    for (name, text) in [
        (
            "included.inc",
            "[checkpoint \"gc\"]\n\tkeep = 7\n[checkpoint.GC]\n\tkeepDaily = 3\n",
        ),
        ("by-home.inc", "[checkpoint]\n\tbyHome = 1\n"),
        ("linked-only.inc", "[checkpoint]\n\tlinkedOnly = 1\n"),
        ("icase.inc", "[checkpoint]\n\ticase = 1\n"),
        ("feature.inc", "[checkpoint]\n\tdefaultBranch = feat\n"),
        ("main.inc", "[checkpoint]\n\tdefaultBranch = on-main\n"),
        ("never.inc", "[checkpoint]\n\tnever = 1\n"),
    ] {
        fs::write(sb.home.join(name), text).unwrap();
    }
    let local = repo.join(".git/config");
    let mut text = fs::read_to_string(&local).unwrap();
    text.push_str(
        "[checkpoint]\n\tlocal = a\\\n   continued\n\tflag\n\tempty =\n\
         [extensions]\n\tworktreeConfig = true\n\
         [include]\n\tpath = ../local.inc\n",
    );
    fs::write(&local, text).unwrap();
    fs::write(repo.join("local.inc"), "[checkpoint]\n\tcompression = 9\n").unwrap();
    fs::write(
        repo.join(".git/worktrees/linked/config.worktree"),
        "[checkpoint]\n\tworktreeOnly = 1\n\tcompression = 11\n",
    )
    .unwrap();
    fs::write(
        repo.join(".git/config.worktree"),
        "[checkpoint]\n\tmainWorktree = 1\n",
    )
    .unwrap();
    let env = [
        ("GIT_CONFIG_SYSTEM", system.to_str().unwrap()),
        ("GIT_CONFIG_COUNT", "2"),
        ("GIT_CONFIG_KEY_0", "checkpoint.fromCount"),
        ("GIT_CONFIG_VALUE_0", "count"),
        ("GIT_CONFIG_KEY_1", "checkpoint.lockTimeout"),
        ("GIT_CONFIG_VALUE_1", "3"),
        (
            "GIT_CONFIG_PARAMETERS",
            "'checkpoint.lockTimeout'='4' 'Checkpoint.Sub.Key'='it'\\''s' 'checkpoint.bare' 'checkpoint.old=v'",
        ),
    ];
    let env = Env {
        set: &env,
        unset: &["GIT_CONFIG_NOSYSTEM"],
    };
    let main_map = assert_config_as_git(&sb, &repo.join("sub"), env);
    let linked_map = assert_config_as_git(&sb, &linked, env);
    // The files above were all read, each where git reads it.
    for key in [
        "fromsystem",
        "byhome",
        "icase",
        "local",
        "fromcount",
        "sub.key",
        "gc.keepdaily",
        "old",
    ] {
        assert!(
            main_map.contains(&format!("\"checkpoint.{key}\"")),
            "{key}: {main_map}"
        );
    }
    assert!(
        main_map.contains("\"checkpoint.defaultbranch\": \"on-main\""),
        "{main_map}"
    );
    assert!(
        main_map.contains("\"checkpoint.mainworktree\""),
        "{main_map}"
    );
    assert!(
        main_map.contains("\"checkpoint.locktimeout\": \"4\""),
        "{main_map}"
    );
    assert!(!main_map.contains("never"), "{main_map}");
    assert!(
        linked_map.contains("\"checkpoint.linkedonly\""),
        "{linked_map}"
    );
    assert!(
        linked_map.contains("\"checkpoint.defaultbranch\": \"feat\""),
        "{linked_map}"
    );
    assert!(
        linked_map.contains("\"checkpoint.compression\": \"11\""),
        "{linked_map}"
    );
    // And the values take effect: the store's first branch is the configured one.
    let mut cmd = sb.bin_cmd(&linked, &["save", "--json", "-m", "one"]);
    env.apply(&mut cmd);
    // A valid level: 11 is out of range for a save.
    cmd.env("GIT_CONFIG_PARAMETERS", "'checkpoint.compression'='3'");
    let out = run_cmd(cmd, DEFAULT_TIMEOUT);
    assert_eq!(out.code, 0, "{out}");
    assert!(out.stdout.contains("\"branch\": \"feat\""), "{out}");
}

#[test]
fn xdg_and_home_config_without_git_config_global() {
    let sb = Sandbox::new();
    let repo = committed(&sb, "repo");
    fs::create_dir_all(sb.home.join(".config/git")).unwrap();
    fs::write(
        sb.home.join(".config/git/config"),
        "[checkpoint]\n\txdg = 1\n\tboth = xdg\n",
    )
    .unwrap();
    fs::write(
        sb.home.join(".gitconfig"),
        "[checkpoint]\n\thome = 1\n\tboth = home\n",
    )
    .unwrap();
    let env = Env {
        set: &[],
        unset: &["GIT_CONFIG_GLOBAL"],
    };
    let map = assert_config_as_git(&sb, &repo, env);
    assert!(map.contains("\"checkpoint.both\": \"home\""), "{map}");
    assert!(map.contains("\"checkpoint.xdg\""), "{map}");
}

#[test]
fn conditions_the_reader_does_not_know_are_left_to_git() {
    let sb = Sandbox::new();
    let repo = committed(&sb, "repo");
    fs::write(
        sb.home.join(".gitconfig"),
        "[includeIf \"hasconfig:remote.*.url:https://example.com/**\"]\n\tpath = x.inc\n[checkpoint]\n\tk = v\n",
    )
    .unwrap();
    let trace = traced(&sb, &repo, Env::default(), None);
    assert_eq!(trace.config, "git");
    assert_eq!(trace.map, git_config_map(&sb, &repo, Env::default()));
}

/// The HEAD commit recorded with a new checkpoint, as `log --json` shows it.
fn recorded_head(sb: &Sandbox, dir: &Path, msg: &str) -> Option<String> {
    let out = sb.ok_in(dir, &["save", "--json", "--allow-empty", "-m", msg]);
    let saved: serde_json::Value = serde_json::from_str(&out.stdout).expect("json");
    let id = id_of(&saved).unwrap_or_else(|| panic!("no checkpoint made: {saved}"));
    let log = sb.ok_in(dir, &["log", "--json"]);
    let log: serde_json::Value = serde_json::from_str(&log.stdout).expect("json");
    let entry = log
        .as_array()
        .expect("array")
        .iter()
        .find(|c| id_of(c).as_deref() == Some(id.as_str()))
        .expect("saved checkpoint in log")
        .clone();
    entry["git_head"].as_str().map(str::to_string)
}

#[test]
fn head_commit_from_loose_packed_detached_and_unborn_refs() {
    let sb = Sandbox::new();
    let dir = sb.init_repo("repo");
    fs::write(dir.join("a.txt"), "a\n").unwrap();
    assert_eq!(recorded_head(&sb, &dir, "unborn"), None);
    sb.git(&dir, &["add", "-A"]);
    sb.git(&dir, &["commit", "-q", "-m", "first"]);
    let first = sb.git(&dir, &["rev-parse", "HEAD"]).trim().to_string();
    assert_eq!(
        recorded_head(&sb, &dir, "loose").as_deref(),
        Some(first.as_str())
    );
    sb.git(&dir, &["pack-refs", "--all"]);
    assert!(!dir.join(".git/refs/heads/main").exists());
    assert_eq!(
        recorded_head(&sb, &dir, "packed").as_deref(),
        Some(first.as_str())
    );
    sb.git(&dir, &["commit", "-q", "--allow-empty", "-m", "second"]);
    let second = sb.git(&dir, &["rev-parse", "HEAD"]).trim().to_string();
    assert_eq!(
        recorded_head(&sb, &dir, "loose again").as_deref(),
        Some(second.as_str())
    );
    sb.git(&dir, &["checkout", "-q", "--detach", "HEAD~1"]);
    assert_eq!(
        recorded_head(&sb, &dir, "detached").as_deref(),
        Some(first.as_str())
    );
    // A packed branch on an annotated tag (git refuses to make one, a hand-edited file
    // can): git peels it to the commit, and so must the tool.
    sb.git(&dir, &["tag", "-a", "-m", "t", "v1", &second]);
    let tag = sb.git(&dir, &["rev-parse", "v1"]).trim().to_string();
    sb.git(&dir, &["pack-refs", "--all"]);
    let packed = dir.join(".git/packed-refs");
    let text = fs::read_to_string(&packed).unwrap();
    // In sorted place: git searches the file.
    let text = text.replace(
        " refs/heads/main\n",
        &format!(" refs/heads/main\n{tag} refs/heads/odd\n^{second}\n"),
    );
    fs::write(&packed, text).unwrap();
    assert_eq!(sb.git(&dir, &["rev-parse", "odd^{commit}"]).trim(), second);
    sb.git(&dir, &["symbolic-ref", "HEAD", "refs/heads/odd"]);
    assert_eq!(
        recorded_head(&sb, &dir, "peeled").as_deref(),
        Some(second.as_str())
    );
}

/// A directory holding a `git` that logs each call to `log` and runs the real git.
fn logging_git(sb: &Sandbox) -> (PathBuf, PathBuf) {
    let real = std::env::split_paths(&std::env::var_os("PATH").expect("PATH"))
        .map(|d| d.join("git"))
        .find(|p| p.is_file())
        .expect("git on PATH");
    let bin = sb.root.join("logging-bin");
    fs::create_dir_all(&bin).unwrap();
    let log = sb.root.join("git-calls.log");
    let script = bin.join("git");
    fs::write(
        &script,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{}'\nexec '{}' \"$@\"\n",
            log.display(),
            real.display()
        ),
    )
    .unwrap();
    fs::set_permissions(&script, fs::Permissions::from_mode(0o755)).unwrap();
    (bin, log)
}

#[test]
fn hot_path_commands_start_no_git_process() {
    let repo = Repo::new();
    repo.write("a.txt", b"a\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "first"]);
    let linked = repo.sb.root.join("linked");
    repo.git(&["worktree", "add", "-q", linked.to_str().unwrap()]);
    let (bin, log) = logging_git(&repo.sb);
    let path = std::env::join_paths(
        std::iter::once(bin.clone())
            .chain(std::env::split_paths(&std::env::var_os("PATH").unwrap())),
    )
    .unwrap();
    // The wrapper itself works: a git call through this PATH is logged.
    let mut probe = Command::new("git");
    probe.arg("--version").env("PATH", &path);
    assert_eq!(run_cmd(probe, DEFAULT_TIMEOUT).code, 0);
    assert!(fs::read_to_string(&log).unwrap().contains("--version"));
    fs::remove_file(&log).unwrap();
    for dir in [repo.dir.clone(), linked.clone()] {
        fs::write(dir.join("first-save.txt"), "x\n").unwrap();
        let runs: [&[&str]; 6] = [
            &["save", "-m", "with changes"],
            &["save", "-m", "no changes"],
            &["status"],
            &["log"],
            &["diff"],
            &["save", "-m", "again"],
        ];
        for (i, args) in runs.iter().enumerate() {
            if i == 5 {
                fs::write(dir.join("a.txt"), "changed\n").unwrap();
            }
            let mut cmd = repo.sb.bin_cmd(&dir, args);
            cmd.env("PATH", &path);
            let out = run_cmd(cmd, DEFAULT_TIMEOUT);
            assert_eq!(out.code, 0, "{args:?} in {}\n{out}", dir.display());
            let calls = fs::read_to_string(&log).unwrap_or_default();
            assert!(
                calls.is_empty(),
                "{args:?} in {} ran git:\n{calls}",
                dir.display()
            );
        }
    }
}

#[test]
fn reftable_and_sha256_repositories_record_gits_head() {
    let sb = Sandbox::new();
    for (name, format) in [
        ("reftable", "--ref-format=reftable"),
        ("sha256", "--object-format=sha256"),
    ] {
        let dir = sb.root.join(name);
        fs::create_dir_all(&dir).unwrap();
        sb.git(&dir, &["init", "-q", "-b", "main", format]);
        fs::write(dir.join("a.txt"), "a\n").unwrap();
        sb.git(&dir, &["add", "-A"]);
        sb.git(&dir, &["commit", "-q", "-m", "first"]);
        let head = sb.git(&dir, &["rev-parse", "HEAD"]).trim().to_string();
        assert_finds_as_git(&sb, &dir, Env::default());
        assert_eq!(
            recorded_head(&sb, &dir, name).as_deref(),
            Some(head.as_str()),
            "{name}"
        );
    }
}

/// Whether this process runs as root (only root can make a repository another user owns).
fn is_root() -> bool {
    let out = Command::new("id").arg("-u").output().expect("id -u");
    String::from_utf8_lossy(&out.stdout).trim() == "0"
}

#[test]
fn repository_owned_by_another_user_is_refused_as_git_refuses_it() {
    if !is_root() {
        eprintln!("skipped: only root can give a repository to another user");
        return;
    }
    let sb = Sandbox::new();
    let dir = committed(&sb, "repo");
    let chown = Command::new("chown")
        .args(["-R", "nobody"])
        .arg(&dir)
        .status()
        .expect("chown");
    assert!(chown.success());
    let out = sb.run_in(&dir, &["status"]);
    assert_ne!(out.code, 0, "{out}");
    assert!(out.stderr.contains("dubious ownership"), "{out}");
    // With git's exception for it, the tool works there too.
    fs::write(
        sb.home.join(".gitconfig"),
        format!("[safe]\n\tdirectory = {}\n", dir.display()),
    )
    .unwrap();
    sb.ok_in(&dir, &["status"]);
}
