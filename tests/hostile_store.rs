//! Records crafted through the library with names that would escape the worktree or
//! write into a `.git`: restore must refuse them and write nothing anywhere.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use git_checkpoint::chunk::encode_chunk;
use git_checkpoint::codec;
use git_checkpoint::dag::Checkpoint;
use git_checkpoint::store::{Store, BRANCHES, CHECKPOINTS, CHUNKS, TREES};
use git_checkpoint::tree::{Entry, Node, Tree};

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

/// Writes a checkpoint whose root holds `dir_name/evil.txt`, or `evil.txt` under
/// `file_name` directly, and points the `evil` branch at it.
fn plant(store_path: &Path, dir_name: Option<&[u8]>, file_name: &[u8]) {
    let store = Store::open(store_path, Duration::from_secs(5), &mut || {}).unwrap();
    let content = b"planted by a hostile store\n";
    let chunk = store.hasher.id(content);
    let file = Node::File {
        size: content.len() as u64,
        executable: false,
        chunks: vec![chunk.0],
    };
    let txn = store.db.begin_write().unwrap();
    {
        let mut chunks = txn.open_table(CHUNKS).unwrap();
        chunks
            .insert(chunk.0, encode_chunk(content, 3).as_slice())
            .unwrap();
        let mut trees = txn.open_table(TREES).unwrap();
        let mut put = |tree: Tree| {
            let bytes = codec::encode(&tree);
            let id = store.hasher.id(&bytes);
            trees.insert(id.0, bytes.as_slice()).unwrap();
            id.0
        };
        let leaf = Entry {
            name: file_name.to_vec(),
            node: file,
        };
        let root = match dir_name {
            Some(dir) => {
                let inner = put(Tree {
                    entries: vec![leaf],
                });
                put(Tree {
                    entries: vec![Entry {
                        name: dir.to_vec(),
                        node: Node::Dir { tree: inner },
                    }],
                })
            }
            None => put(Tree {
                entries: vec![leaf],
            }),
        };
        let record = Checkpoint {
            tree: root,
            parents: vec![],
            time_ns: 1,
            message: "hostile".into(),
            branch: None,
            git_head: None,
            git_branch: None,
            meta: vec![],
            attachments: vec![],
            files: 1,
            bytes: content.len() as u64,
        };
        let bytes = codec::encode(&record);
        let id = store.hasher.id(&bytes);
        txn.open_table(CHECKPOINTS)
            .unwrap()
            .insert(id.0, bytes.as_slice())
            .unwrap();
        txn.open_table(BRANCHES)
            .unwrap()
            .insert("evil", id.0)
            .unwrap();
    }
    txn.commit().unwrap();
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
