//! `checkpoint.*` settings from git's config, and files over `checkpoint.maxFileSize`.

use crate::common;
use common::*;
use serde_json::Value;

fn skipped_paths(checkpoint: &Value) -> Vec<String> {
    checkpoint["skipped"]
        .as_array()
        .unwrap_or_else(|| panic!("no skipped array: {checkpoint}"))
        .iter()
        .map(|s| s["path"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn local_config_beats_global_for_two_keys() {
    let sb = Sandbox::new();
    // The sandbox points GIT_CONFIG_GLOBAL at $HOME/.gitconfig.
    let global = sb.home.join(".gitconfig");
    std::fs::write(
        &global,
        "[checkpoint]\n\tmaxFileSize = 1k\n\tdefaultBranch = global-line\n",
    )
    .unwrap();

    // Only the global values apply here.
    let plain = sb.init_repo("plain");
    let run = |dir: &std::path::Path, args: &[&str]| sb.ok_in(dir, args);
    std::fs::write(plain.join("mid.bin"), vec![7u8; 5000]).unwrap();
    std::fs::write(plain.join("small.txt"), b"hi").unwrap();
    let saved = parse_json(&run(&plain, &["save", "--json"]), "save");
    assert_eq!(skipped_paths(&saved), ["mid.bin"], "{saved}");
    assert_eq!(saved["branch"], "global-line", "{saved}");
    assert_eq!(saved["files"], 1);

    // The repository's own config wins.
    let local = sb.init_repo("local");
    sb.git(&local, &["config", "checkpoint.maxFileSize", "10k"]);
    sb.git(
        &local,
        &["config", "checkpoint.defaultBranch", "local-line"],
    );
    std::fs::write(local.join("mid.bin"), vec![7u8; 5000]).unwrap();
    let saved = parse_json(&run(&local, &["save", "--json"]), "save");
    assert_eq!(skipped_paths(&saved), Vec::<String>::new(), "{saved}");
    assert_eq!(saved["branch"], "local-line", "{saved}");
    assert_eq!(saved["files"], 1);
    let log = run(&local, &["log"]);
    assert!(log.stdout.contains("HEAD -> local-line"), "{log}");
}

#[test]
fn bad_config_values_are_clear_errors() {
    let r = Repo::new();
    r.write("a", b"1");
    for (key, value) in [
        ("checkpoint.maxFileSize", "lots"),
        ("checkpoint.compression", "99"),
        ("checkpoint.lockTimeout", "soon"),
        ("checkpoint.lockTimeout", "1e20"),
        ("checkpoint.lockTimeout", "-1"),
        ("checkpoint.lockTimeout", "NaN"),
        ("checkpoint.defaultBranch", "has space"),
    ] {
        r.git(&["config", key, value]);
        let out = r.run(&["save"]);
        assert_eq!(out.code, 1, "{key}={value}: {out}");
        let first = out.stderr.lines().next().unwrap_or_default();
        assert!(
            first.contains(&format!("bad config value '{value}' for {key}")),
            "{key}: {out}"
        );
        r.git(&["config", "--unset", key]);
    }
    r.ok(&["save"]);
}

/// A bad `checkpoint.maxFileSize` fails the save that needs it, with the config error,
/// but looking at the worktree and the timeline still works (with a warning).
#[test]
fn a_bad_max_file_size_fails_save_but_not_status_log_or_diff() {
    let r = Repo::new();
    r.write("a.txt", b"one\n");
    r.save("first");
    r.write("a.txt", b"two\n");
    r.git(&["config", "checkpoint.maxFileSize", "lots"]);
    let out = r.run(&["save"]);
    assert_eq!(out.code, 1, "{out}");
    assert!(
        out.stderr
            .contains("error: bad config value 'lots' for checkpoint.maxFileSize"),
        "{out}"
    );
    let status = r.ok(&["status"]);
    assert_eq!(status.stdout, "M a.txt\n", "{status}");
    assert!(status.stderr.contains("checkpoint.maxFileSize"), "{status}");
    let diff = r.ok(&["diff"]);
    assert!(diff.stdout.contains("+two"), "{diff}");
    let log = r.ok(&["log"]);
    assert!(log.stdout.contains("HEAD -> main"), "{log}");
    assert_eq!(r.log_json(true).len(), 1);
}

/// `checkpoint.defaultBranch` follows the rules of `git checkpoint branch -m`, with
/// the same reason, so the config cannot make a branch that the command would refuse
/// (one that reads as a checkpoint id, or as a revision range).
#[test]
fn the_default_branch_follows_the_branch_command_rules() {
    let r = Repo::new();
    r.write("a", b"1");
    r.save("first");
    for name in ["abcd", "HEAD", "a..b", "x.lock"] {
        let refused = r.run(&["branch", "-m", "main", name]);
        assert_eq!(refused.code, 1, "{name}: {refused}");
        let reason = refused
            .stderr
            .trim()
            .trim_start_matches("error: ")
            .to_string();
        assert!(reason.contains("is not a valid branch name"), "{refused}");

        let fresh = Repo::new();
        fresh.write("a", b"1");
        fresh.git(&["config", "checkpoint.defaultBranch", name]);
        let out = fresh.run(&["save"]);
        assert_eq!(out.code, 1, "{name}: {out}");
        assert!(
            out.stderr.contains("checkpoint.defaultBranch") && out.stderr.contains(&reason),
            "{name}: expected the reason {reason:?}\n{out}"
        );
        assert!(!fresh.store_path().exists() || fresh.run(&["log", "--json"]).code != 0);
    }
}

#[test]
fn large_files_are_skipped_recorded_and_left_alone_by_restore() {
    let r = Repo::new();
    r.git(&["config", "checkpoint.maxFileSize", "4k"]);
    let big = pseudo_random(20_000, 1);
    r.write("data/big.bin", &big);
    r.write("src/main.rs", b"fn main() {}\n");

    let out = r.ok(&["save", "-m", "one"]);
    assert!(
        out.stderr
            .contains("warning: skipped data/big.bin (19.5 KiB): larger than checkpoint.maxFileSize (4.0 KiB)"),
        "{out}"
    );
    let log = r.log_json(false);
    assert_eq!(skipped_paths(&log[0]), ["data/big.bin"]);
    assert_eq!(log[0]["skipped"][0]["size"], 20_000);
    assert_eq!(log[0]["files"], 1);
    let one = r.current();

    // The big file changes, a small one too; restoring "one" puts the small one back
    // and leaves the big one exactly as it is now.
    let big2 = pseudo_random(30_000, 2);
    r.write("data/big.bin", &big2);
    r.write("src/main.rs", b"fn main() { changed() }\n");
    let out = r.ok(&["restore", &one]);
    assert!(
        out.stdout.contains("Left data/big.bin untouched"),
        "restore must say so: {out}"
    );
    assert_eq!(r.read("src/main.rs"), b"fn main() {}\n");
    assert_eq!(r.read("data/big.bin"), big2);

    // --json names it too.
    let v = r.json(&["restore", &one, "--json"]);
    assert_eq!(v["untouched"], serde_json::json!(["data/big.bin"]), "{v}");
}

#[test]
fn restore_never_deletes_or_overwrites_a_file_a_checkpoint_skipped() {
    let r = Repo::new();
    r.git(&["config", "checkpoint.maxFileSize", "1k"]);
    r.write("keep.txt", b"k");
    let big = pseudo_random(5_000, 3);
    r.write("big.bin", &big);
    // "skipping": big.bin is not in its tree.
    let skipping = r.save("big skipped");

    // With the limit off, the same file is captured...
    r.git(&["config", "checkpoint.maxFileSize", "0"]);
    r.write("keep.txt", b"k2");
    let captured = r.save("big captured");
    let log = r.log_json(false);
    assert_eq!(skipped_paths(&log[0]), Vec::<String>::new());
    assert_eq!(log[0]["files"], 2);

    // ...and restoring the checkpoint that skipped it must not delete it: it was never
    // part of that checkpoint, only too large to be saved.
    let plan = r.ok(&["restore", &skipping, "--dry-run"]);
    assert!(!plan.stdout.contains("delete big.bin"), "{plan}");
    r.ok(&["restore", &skipping]);
    assert_eq!(r.read("big.bin"), big);
    assert_eq!(r.read("keep.txt"), b"k");

    // The other way round: captured small, now over the limit. Restoring the old
    // checkpoint must not overwrite the big version, which no checkpoint holds.
    r.git(&["config", "checkpoint.maxFileSize", "1k"]);
    let bigger = pseudo_random(8_000, 4);
    r.write("big.bin", &bigger);
    let out = r.ok(&["restore", &captured]);
    assert!(out.stdout.contains("Left big.bin untouched"), "{out}");
    assert_eq!(r.read("big.bin"), bigger);
    assert_eq!(r.read("keep.txt"), b"k2");

    // A limit of 0 turns skipping off entirely.
    r.git(&["config", "checkpoint.maxFileSize", "0"]);
    let saved = r.save_json(&["-m", "all"]);
    assert_eq!(skipped_paths(&saved), Vec::<String>::new(), "{saved}");
}

#[test]
fn files_at_the_limit_are_kept() {
    let r = Repo::new();
    r.git(&["config", "checkpoint.maxFileSize", "2k"]);
    r.write("exact.bin", &vec![1u8; 2048]);
    r.write("over.bin", &vec![1u8; 2049]);
    let saved = r.save_json(&[]);
    assert_eq!(skipped_paths(&saved), ["over.bin"], "{saved}");
    assert_eq!(saved["files"], 1);
}
