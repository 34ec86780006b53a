//! A file that cannot be read fails the save with its path named, unless
//! `--skip-unreadable`, which records it on the checkpoint; restore leaves it alone.
//! Root reads everything, so as root the binary runs as `nobody` through setpriv(1).
//!
//! As root without setpriv the test FAILS, unless it is skipped knowingly by setting
//! `GIT_CHECKPOINT_TEST_SKIP_UNREADABLE=<reason>` (the scheme every test that depends on
//! the machine follows: `GIT_CHECKPOINT_TEST_SKIP_<NAME>=<reason>`, see
//! `common::skip_only_if_allowed`). The variable only allows a skip; where setpriv
//! exists the test runs regardless.

use crate::common;
use std::os::unix::fs::PermissionsExt;

use common::{open_up, parse_json, run_unprivileged as run, Repo};

#[test]
fn unreadable_files_fail_the_save_unless_skipped_and_restore_leaves_them() {
    let repo = Repo::new();
    if !common::prepare_unprivileged(&repo) {
        return;
    }
    repo.write("ok.txt", b"readable\n");
    repo.write("secret.txt", b"cannot be read\n");
    open_up(&repo.sb.root);
    std::fs::set_permissions(repo.p("secret.txt"), std::fs::Permissions::from_mode(0o000)).unwrap();

    let out = run(&repo, &["save", "-m", "fails"]);
    assert_eq!(out.code, 1, "{out}");
    assert!(
        out.stderr.contains("secret.txt"),
        "the path must be named\n{out}"
    );
    assert!(out.stderr.contains("ermission denied"), "{out}");
    assert!(
        out.stderr.contains("--skip-unreadable"),
        "the way past it is not named\n{out}"
    );

    let out = run(
        &repo,
        &["save", "--json", "--skip-unreadable", "-m", "skips"],
    );
    assert_eq!(out.code, 0, "{out}");
    let saved = parse_json(&out, "save");
    assert_eq!(saved["files"], 1, "{saved}");
    assert_eq!(saved["skipped"][0]["path"], "secret.txt", "{saved}");
    assert_eq!(saved["skipped"][0]["reason"], "unreadable", "{saved}");
    let id = saved["id"].as_str().unwrap().to_string();

    // A restore to that checkpoint neither deletes nor rewrites the unreadable file.
    std::fs::write(repo.p("ok.txt"), b"changed\n").unwrap();
    open_up(&repo.p("ok.txt"));
    let out = run(&repo, &["restore", &id, "--no-save"]);
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(repo.read("ok.txt"), b"readable\n");
    assert_eq!(
        std::fs::read(repo.p("secret.txt")).unwrap(),
        b"cannot be read\n",
        "restore touched the file no checkpoint holds"
    );
}
