//! Criterion benchmarks: the stages of a save (chunking, hashing, compression, tree
//! building) and end-to-end save and restore through the library on generated trees.
//!
//! Run with `cargo bench --bench core`. For comparisons against a shadow git
//! repository, use `benches/compare.sh`.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use git_checkpoint::format::chunk::{encode_chunk, ChunkParams, Hasher};
use git_checkpoint::git::Repo;
use git_checkpoint::model::tree::{self, Node, PendingTrees};
use git_checkpoint::ops::restore::{restore, RestoreOptions};
use git_checkpoint::ops::save::{save, SaveOptions};
use git_checkpoint::ops::workspace::Workspace;
use git_checkpoint::settings::Settings;

fn pseudo_random(len: usize, mut state: u64) -> Vec<u8> {
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

/// Text that compresses like source code: repeated identifiers with varying numbers.
fn source_like(len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len);
    let mut i = 0u64;
    while out.len() < len {
        out.extend_from_slice(
            format!(
                "    let value_{i} = compute(input_{}, {});\n",
                i % 97,
                i * 31
            )
            .as_bytes(),
        );
        i += 1;
    }
    out.truncate(len);
    out
}

fn stages(c: &mut Criterion) {
    let hasher = Hasher::new([9; 32], ChunkParams::default());
    let random = pseudo_random(8 << 20, 1);
    let text = source_like(8 << 20);

    let mut group = c.benchmark_group("stages");
    group.throughput(Throughput::Bytes(random.len() as u64));
    group.bench_function("chunk+hash 8MiB", |b| {
        b.iter(|| {
            let mut n = 0u128;
            hasher.for_each_chunk(&random, |piece| n ^= hasher.chunk_id(piece).0);
            n
        })
    });
    group.bench_function("hash 8MiB", |b| b.iter(|| hasher.chunk_id(&random)));
    group.bench_function("zstd-3 source 8MiB", |b| {
        b.iter(|| {
            text.chunks(64 << 10)
                .map(|piece| encode_chunk(piece, 3).len())
                .sum::<usize>()
        })
    });
    group.bench_function("zstd-3 random 8MiB", |b| {
        b.iter(|| {
            random
                .chunks(64 << 10)
                .map(|piece| encode_chunk(piece, 3).len())
                .sum::<usize>()
        })
    });
    group.finish();

    let mut group = c.benchmark_group("tree-build");
    for files in [1_000usize, 10_000, 100_000] {
        let list: Vec<(Vec<u8>, Node)> = {
            let mut v: Vec<_> = (0..files)
                .map(|i| {
                    (
                        format!("dir{:03}/sub{:02}/file{i:06}.rs", i % 200, i % 17).into_bytes(),
                        Node::File {
                            size: i as u64,
                            executable: false,
                            chunks: vec![git_checkpoint::ChunkId(i as u128)],
                        },
                    )
                })
                .collect();
            v.sort_by(|a, b| a.0.cmp(&b.0));
            v
        };
        group.throughput(Throughput::Elements(files as u64));
        group.bench_with_input(BenchmarkId::from_parameter(files), &list, |b, list| {
            // `build` uses up its list: each iteration builds from a fresh copy, as a
            // save builds from the list its scan made.
            b.iter_batched(
                || list.clone(),
                |mut list| {
                    let built = tree::build(&hasher, &mut list, &mut PendingTrees::new());
                    built.expect("the list is sorted").0
                },
                criterion::BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .status()
        .expect("git runs");
    assert!(status.success(), "git {args:?}");
}

/// A worktree of `files` source-like files of 1-16 KiB in nested directories.
fn generated_worktree(files: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    git(dir.path(), &["init", "-q", "-b", "main"]);
    for i in 0..files {
        let path = dir
            .path()
            .join(format!("d{:02}/e{:02}/f{i}.rs", i % 50, i % 7));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let len = 1024 + (i * 7919) % (15 * 1024);
        std::fs::write(&path, source_like(len + i % 13)).unwrap();
    }
    dir
}

fn end_to_end(c: &mut Criterion) {
    let mut group = c.benchmark_group("end-to-end");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(10));
    for files in [1_000usize, 5_000] {
        let work = generated_worktree(files);
        let repo = Repo::discover(work.path()).unwrap();
        let store_path = repo.store_path();
        let workspace = Workspace::new(repo.clone(), Default::default());
        let options = SaveOptions::new(
            "bench".into(),
            Settings {
                compression: Ok(3).into(),
                ..Settings::default()
            },
        );
        group.bench_with_input(BenchmarkId::new("first save", files), &files, |b, _| {
            b.iter(|| {
                let _ = std::fs::remove_file(&store_path);
                let store = workspace.open_store(&mut || {}).unwrap();
                save(&repo, &store, &options).unwrap()
            })
        });
        let store = workspace.open_store(&mut || {}).unwrap();
        group.bench_with_input(BenchmarkId::new("unchanged save", files), &files, |b, _| {
            b.iter(|| save(&repo, &store, &options).unwrap())
        });
        group.bench_with_input(
            BenchmarkId::new("restore 20 files", files),
            &files,
            |b, _| {
                b.iter(|| {
                    for i in 0..20 {
                        let path =
                            work.path()
                                .join(format!("d{:02}/e{:02}/f{i}.rs", i % 50, i % 7));
                        std::fs::write(path, b"edited").unwrap();
                    }
                    let options = RestoreOptions {
                        no_save: true,
                        ..RestoreOptions::default()
                    };
                    restore(&repo, &store, "@", &options).unwrap()
                })
            },
        );
    }
    group.finish();
}

criterion_group!(benches, stages, end_to_end);
criterion_main!(benches);
