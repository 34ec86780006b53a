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
    // Each candidate by the shortest id that names it alone.
    assert!(stderr.contains("\nhint:   abcdef011  "), "{stderr}");
    assert!(stderr.contains("\nhint:   abcdef012  "), "{stderr}");
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
        assert_eq!(out.code, common::EXIT_REFUSED, "{args:?}: {out}");
        assert!(out.stderr.contains("filesystems take at most 255"), "{out}");
        common::assert_snap_eq(&before, &repo.snapshot(), &format!("{args:?}"));
    }
    let status = repo.json(&["status", "--json"]);
    assert!(status["interrupted_restore"].is_null(), "{status}");
}

/// Finding 15 (issue 34): a zip-bomb checkpoint a remote can send. Its records are
/// consistent: 200 files of 500 MiB, each listing one stored chunk of 252 KiB over and
/// over (the 200 directories share one subtree), 97.7 GiB in all from a store of a few
/// hundred kilobytes. `show`, `show --stat` and `diff --stat` must not expand it: they
/// finish (under a generous timeout, not a timing assertion), show the recorded sizes,
/// and say that the content was not expanded.
#[test]
fn show_of_a_checkpoint_that_expands_to_97_gib_reads_only_the_recorded_sizes() {
    let repo = common::Repo::new();
    repo.write("keep.txt", b"keep\n");
    let base = repo.save("base");
    let file_size = plant_expanding_checkpoint(&repo.store_path(), &base, 200);
    assert_eq!(200 * file_size, 104_870_707_200, "97.7 GiB in all");
    for args in [
        &["show", "huge"][..],
        &["show", "--stat", "huge"],
        &["diff", &base, "huge", "--stat"],
    ] {
        let out = common::run_cmd(
            repo.sb.bin_cmd(&repo.dir, args),
            std::time::Duration::from_secs(180),
        );
        assert_eq!(out.code, 0, "{args:?}: {out}");
        assert!(
            out.stdout.contains("not expanded"),
            "{args:?} does not say the content was not expanded:\n{}",
            &out.stdout[out.stdout.len().saturating_sub(2000)..]
        );
        assert!(
            out.stdout.contains(&file_size.to_string()),
            "{args:?} does not show the recorded size:\n{}",
            &out.stdout[..out.stdout.len().min(2000)]
        );
    }
}

/// Plants a checkpoint on top of `parent` (branch `huge`) whose root holds `dirs`
/// directories `dNNN`, all the same stored subtree with one file `f.bin` that lists one
/// all-NUL chunk of the largest size 2032 times: just under git's big-file threshold,
/// which would leave it unread anyway. Returns the file's size.
fn plant_expanding_checkpoint(store_path: &Path, parent: &str, dirs: usize) -> u64 {
    use git_checkpoint::format::chunk::encode_chunk;
    use git_checkpoint::model::tree::{Entry, Node, Tree};
    let hasher = raw_store::hasher(store_path);
    let max = hasher.params().max;
    let content = vec![0u8; max];
    let chunk = hasher.chunk_id(&content);
    let file_size = 2032 * max as u64;
    let db = raw_store::open(store_path);
    let txn = db.begin_write().unwrap();
    {
        txn.open_table(raw_store::CHUNKS)
            .unwrap()
            .insert(chunk.0, encode_chunk(&content, 3).as_slice())
            .unwrap();
        let mut trees = txn.open_table(raw_store::TREES).unwrap();
        let mut put = |tree: Tree| {
            let bytes = codec::encode(&tree);
            let id = hasher.tree_id(&bytes);
            trees.insert(id.0, bytes.as_slice()).unwrap();
            id
        };
        let inner = put(Tree {
            entries: vec![Entry {
                name: b"f.bin".to_vec(),
                node: Node::File {
                    size: file_size,
                    executable: false,
                    chunks: vec![chunk; 2032],
                },
            }],
        });
        let root = put(Tree {
            entries: (0..dirs)
                .map(|i| Entry {
                    name: format!("d{i:03}").into_bytes(),
                    node: Node::Dir { tree: inner },
                })
                .collect(),
        });
        let record = Checkpoint {
            tree: root,
            parents: vec![git_checkpoint::CheckpointId(
                u128::from_str_radix(parent, 16).unwrap(),
            )],
            time_ns: 2,
            message: "expands to 97.7 GiB".into(),
            files: dirs as u64,
            bytes: dirs as u64 * file_size,
            ..Checkpoint::default()
        };
        let bytes = codec::encode(&record);
        let id = hasher.checkpoint_id(&bytes);
        txn.open_table(CHECKPOINTS)
            .unwrap()
            .insert(id.0, bytes.as_slice())
            .unwrap();
        txn.open_table(raw_store::BRANCHES)
            .unwrap()
            .insert("huge", id.0)
            .unwrap();
    }
    txn.commit().unwrap();
    file_size
}
