//! Stores crafted through the library: records with names that would escape the
//! worktree or write into a `.git` (restore must refuse them and write nothing), and
//! checkpoint ids chosen to share prefixes (revisions must report the ambiguity).

use crate::common;
use std::path::Path;
use std::process::Command;

use common::raw_store::{self, plant, CHECKPOINTS};
use git_checkpoint::format::codec;
use git_checkpoint::model::Checkpoint;

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}");
}

fn listing(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            // The store's own files change on every open; everything else must not.
            if p.ends_with("checkpoint") {
                continue;
            }
            out.push(p.display().to_string());
            if e.file_type().unwrap().is_dir() {
                stack.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn unsafe_stored_names_are_refused_and_nothing_is_written() {
    let cases: [(Option<&[u8]>, &[u8]); 7] = [
        (None, b".."),
        (Some(b".."), b"evil.txt"),
        (None, b"a/b"),
        (Some(b".git"), b"config"),
        (Some(b".GIT"), b"evil.txt"),
        (None, b""),
        (None, b"."),
    ];
    for (dir_name, file_name) in cases {
        let outer = tempfile::tempdir().unwrap();
        let work = outer.path().join("work");
        std::fs::create_dir(&work).unwrap();
        git(&work, &["init", "-q", "-b", "main"]);
        std::fs::write(work.join("keep.txt"), b"keep").unwrap();
        let bin = env!("CARGO_BIN_EXE_git-checkpoint");
        let saved = Command::new(bin)
            .args(["-q", "save"])
            .current_dir(&work)
            .env("HOME", outer.path())
            .status()
            .unwrap();
        assert!(saved.success());
        plant(
            &work.join(".git/checkpoint/store.redb"),
            dir_name,
            file_name,
        );
        let before = listing(outer.path());
        let out = Command::new(bin)
            .args(["restore", "evil"])
            .current_dir(&work)
            .env("HOME", outer.path())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(1),
            "{dir_name:?}/{file_name:?}: {stderr}"
        );
        assert!(stderr.contains("unsafe stored name"), "{stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        assert_eq!(listing(outer.path()), before, "{dir_name:?}/{file_name:?}");
        assert_eq!(std::fs::read(work.join("keep.txt")).unwrap(), b"keep");
    }
}

/// Copies the store's only checkpoint record under each of `ids`.
fn clone_checkpoint(store_path: &Path, ids: &[u128]) {
    let db = raw_store::open(store_path);
    let txn = db.begin_write().unwrap();
    {
        let mut table = txn.open_table(CHECKPOINTS).unwrap();
        let record = {
            let mut all = redb::ReadableTable::iter(&table).unwrap();
            let (_, value) = all.next().unwrap().unwrap();
            value.value().to_vec()
        };
        for &id in ids {
            table.insert(id, record.as_slice()).unwrap();
        }
    }
    txn.commit().unwrap();
}

#[test]
fn shared_prefixes_are_reported_and_short_ids_grow_to_stay_unique() {
    let outer = tempfile::tempdir().unwrap();
    let work = outer.path().join("work");
    std::fs::create_dir(&work).unwrap();
    git(&work, &["init", "-q", "-b", "main"]);
    std::fs::write(work.join("a.txt"), b"a").unwrap();
    let bin = env!("CARGO_BIN_EXE_git-checkpoint");
    let run = |args: &[&str]| {
        Command::new(bin)
            .args(args)
            .current_dir(&work)
            .env("HOME", outer.path())
            .output()
            .unwrap()
    };
    assert!(run(&["-q", "save"]).status.success());
    let a = 0xabcd_ef01_1000_0000_0000_0000_0000_0000u128;
    let b = 0xabcd_ef01_2000_0000_0000_0000_0000_0000u128;
    clone_checkpoint(&work.join(".git/checkpoint/store.redb"), &[a, b]);

    let out = run(&["restore", "abcd", "--dry-run"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("ambiguous"), "{stderr}");
    assert!(stderr.contains(&format!("{a:032x}")), "{stderr}");
    assert!(stderr.contains(&format!("{b:032x}")), "{stderr}");
    // One more digit tells them apart.
    let out = run(&["restore", "abcdef011", "--dry-run", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(plan["target"], format!("{a:032x}"));
    // Abbreviations are as long as it takes: these two share eight digits.
    let out = run(&["log", "--all", "--json"]);
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let short_of = |id: u128| {
        list.as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == format!("{id:032x}"))
            .map(|c| c["short_id"].as_str().unwrap().to_string())
            .unwrap()
    };
    assert_eq!(short_of(a), "abcdef011");
    assert_eq!(short_of(b), "abcdef012");
}

/// A parent cycle (record A names its own child B as parent): revisions that walk
/// ancestry stop with an error instead of looping, and verify names the cycle.
#[test]
fn a_parent_cycle_is_an_error_never_a_hang() {
    let repo = common::Repo::new();
    repo.write("a.txt", b"a\n");
    let a = repo.save("a");
    repo.write("a.txt", b"b\n");
    let b = repo.save("b");
    {
        let db = raw_store::open(&repo.store_path());
        let txn = db.begin_write().unwrap();
        {
            let mut table = txn.open_table(CHECKPOINTS).unwrap();
            let key = u128::from_str_radix(&a, 16).unwrap();
            let bytes = redb::ReadableTable::get(&table, key)
                .unwrap()
                .unwrap()
                .value()
                .to_vec();
            let mut record: Checkpoint = codec::decode(&bytes, "a").unwrap();
            record.parents = vec![git_checkpoint::CheckpointId(
                u128::from_str_radix(&b, 16).unwrap(),
            )];
            table
                .insert(key, codec::encode(&record).as_slice())
                .unwrap();
        }
        txn.commit().unwrap();
    }
    for rev in ["@~1000000", "@~18446744073709551615"] {
        for args in [vec!["show", rev], vec!["restore", rev, "--dry-run"]] {
            let out = repo.run(&args);
            assert_eq!(out.code, 1, "{args:?}: {out}");
            assert!(out.stderr.contains("parent cycle"), "{args:?}: {out}");
            // A damaged store's error says where to see the whole damage.
            assert!(
                out.stderr.contains("'git checkpoint verify' names"),
                "{args:?}: {out}"
            );
        }
    }
    repo.ok(&["log", "--all"]);
    let out = repo.run(&["verify"]);
    assert_eq!(out.code, 1, "{out}");
    assert!(out.stderr.contains("parent cycle"), "{out}");
    assert!(
        !out.stderr.contains("'git checkpoint verify' names"),
        "{out}"
    );
}

/// Chunking parameters come from the store's meta table: out-of-range ones (a zero
/// minimum that FastCDC asserts against, a maximum that would size every decompression
/// buffer) are a clear error from every command, and verify names them.
#[test]
fn out_of_range_chunking_parameters_are_refused() {
    use git_checkpoint::format::chunk::ChunkParams;
    let default = ChunkParams::default();
    for params in [
        ChunkParams { min: 0, ..default },
        ChunkParams {
            max: 1 << 40,
            ..default
        },
        ChunkParams { avg: 8, ..default },
        ChunkParams {
            min: 200_000,
            avg: 100_000,
            max: 258_048,
        },
    ] {
        let repo = common::Repo::new();
        repo.write("a.txt", b"a\n");
        repo.save("a");
        {
            let db = raw_store::open(&repo.store_path());
            let txn = db.begin_write().unwrap();
            txn.open_table(raw_store::META)
                .unwrap()
                .insert("chunking", codec::encode(&params).as_slice())
                .unwrap();
            txn.commit().unwrap();
        }
        repo.write("a.txt", b"changed\n");
        for args in [
            &["save"][..],
            &["log"],
            &["restore", "@", "--no-save"],
            &["verify"],
        ] {
            let out = repo.run(args);
            assert_eq!(out.code, 1, "{params:?} {args:?}: {out}");
            assert!(
                out.stderr.contains("chunking parameters"),
                "{params:?} {args:?}: {out}"
            );
        }
    }
}

/// A stored name longer than any filesystem takes: the restore refuses it before it
/// deletes anything, instead of failing half-way with the worktree half changed.
#[test]
fn a_name_too_long_for_the_filesystem_is_refused_before_any_change() {
    let repo = common::Repo::new();
    repo.write("keep.txt", b"keep\n");
    repo.save("keep");
    plant(&repo.store_path(), None, &[b'n'; 300]);
    let before = repo.snapshot();
    for args in [&["restore", "evil", "--dry-run"][..], &["restore", "evil"]] {
        let out = repo.run(args);
        assert_eq!(out.code, 1, "{args:?}: {out}");
        assert!(out.stderr.contains("filesystems take at most 255"), "{out}");
        common::assert_snap_eq(&before, &repo.snapshot(), &format!("{args:?}"));
    }
    let status = repo.json(&["status", "--json"]);
    assert!(status["interrupted_restore"].is_null(), "{status}");
}
