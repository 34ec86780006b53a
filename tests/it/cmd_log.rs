//! `log`'s options and what it prints: metadata filters (`--meta`) and ages told by the
//! tool's clock.

use crate::common;
use common::{log_ids, Repo};

#[test]
fn meta_filters_the_log_and_all_pairs_must_match() {
    let repo = Repo::new();
    let save = |content: &[u8], meta: &[&str]| {
        repo.write("f.txt", content);
        let mut args = vec!["save", "-m", "step"];
        for m in meta {
            args.extend(["--meta", m]);
        }
        repo.json_of(&args)["id"].as_str().unwrap().to_string()
    };
    let a = save(b"1", &["session=s1", "msg=1"]);
    let b = save(b"2", &["session=s1", "msg=2"]);
    let _c = save(b"3", &["session=s2", "msg=3"]);
    let d = save(b"4", &["session=s1", "msg=4", "tool=edit"]);
    assert_eq!(
        log_ids(&repo, &["--meta", "session=s1"]),
        [d.clone(), b.clone(), a.clone()]
    );
    assert_eq!(
        log_ids(&repo, &["--meta", "session=s1", "--meta", "msg=2"]),
        [b.as_str()]
    );
    assert_eq!(log_ids(&repo, &["--meta", "tool=edit"]), [d.as_str()]);
    assert!(log_ids(&repo, &["--meta", "session=s3"]).is_empty());
    assert!(log_ids(&repo, &["--meta", "session=s1", "--meta", "msg=3"]).is_empty());
    // The graph joins each match to its nearest matching ancestor, skipping c.
    let graph = repo.ok(&["log", "--graph", "--meta", "session=s1"]).stdout;
    let lines: Vec<&str> = graph.lines().collect();
    assert_eq!(lines.len(), 3, "{graph}");
    assert!(lines.iter().all(|l| l.starts_with("* ")), "{graph}");
    // A malformed filter is a usage error.
    let out = repo.run(&["log", "--meta", "novalue"]);
    assert_eq!(out.code, 2, "{out}");
}

/// `log` and `show` tell ages by the one clock the rest of the tool uses, so a test clock
/// (`GIT_CHECKPOINT_NOW`) set three days after a save makes them say so.
#[test]
fn ages_follow_the_tools_clock() {
    let repo = Repo::new();
    repo.write("a.txt", b"a\n");
    let out = repo.run_env(
        &["save", "-m", "old"],
        &[("GIT_CHECKPOINT_NOW", "2026-01-01T12:00:00Z")],
    );
    assert_eq!(out.code, 0, "{out}");
    for args in [&["log"][..], &["show", "@"]] {
        let out = repo.run_env(args, &[("GIT_CHECKPOINT_NOW", "2026-01-04T12:00:00Z")]);
        assert_eq!(out.code, 0, "{out}");
        assert!(out.stdout.contains("3 days ago"), "{args:?}: {out}");
    }
}
