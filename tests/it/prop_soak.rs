//! Long soak runs, ignored by default so that they never show as a silent `ok`. Opt in
//! with the size in `GIT_CHECKPOINT_SOAK`:
//! `GIT_CHECKPOINT_SOAK=1000000 cargo test --release --test it soak -- --ignored --nocapture`
//! saves and restores a tree of that many empty files. Run with `--ignored` (or
//! `--include-ignored`) but without the variable, the test fails and says so.

use crate::common;
use std::time::Duration;

use common::{run_cmd, Repo};

/// A million files take minutes, not the one minute other tests allow a command.
const SOAK_TIMEOUT: Duration = Duration::from_secs(1800);

#[test]
#[ignore = "a soak run: GIT_CHECKPOINT_SOAK=<files> cargo test --release --test it soak -- --ignored"]
fn a_tree_of_many_empty_files_saves_and_restores() {
    let setting = std::env::var("GIT_CHECKPOINT_SOAK");
    let Some(count) = setting
        .as_deref()
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    else {
        panic!(
            "the soak test was asked for but GIT_CHECKPOINT_SOAK is {setting:?}: set it to \
             the number of files, e.g. GIT_CHECKPOINT_SOAK=1000000"
        );
    };
    let repo = Repo::new();
    for i in 0..count {
        let dir = repo.p(format!("d{:03}/e{:03}", i % 1000, (i / 1000) % 1000));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::File::create(dir.join(format!("f{i}"))).unwrap();
    }
    let started = std::time::Instant::now();
    let out = run_cmd(
        repo.sb
            .bin_cmd(&repo.dir, &["save", "--json", "-m", "many files"]),
        SOAK_TIMEOUT,
    );
    assert_eq!(out.code, 0, "{out}");
    let id = common::id_of(&common::parse_json(&out, "save")).unwrap();
    eprintln!("saved {count} files in {:?}", started.elapsed());
    let saved = repo.log_json(false);
    assert_eq!(saved[0]["files"].as_u64(), Some(count as u64));

    for i in 0..1000 {
        std::fs::remove_dir_all(repo.p(format!("d{i:03}"))).ok();
    }
    let started = std::time::Instant::now();
    let out = run_cmd(
        repo.sb.bin_cmd(&repo.dir, &["restore", &id, "--no-save"]),
        SOAK_TIMEOUT,
    );
    assert_eq!(out.code, 0, "{out}");
    eprintln!("restored {count} files in {:?}", started.elapsed());
    let restored = walk_count(&repo.dir);
    assert_eq!(restored, count);
}

fn walk_count(dir: &std::path::Path) -> usize {
    let mut n = 0;
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        if entry.file_name() == ".git" {
            continue;
        }
        if entry.file_type().unwrap().is_dir() {
            n += walk_count(&entry.path());
        } else {
            n += 1;
        }
    }
    n
}
