//! A save's peak memory does not grow with the number of files in the worktree
//! (docs/design.md, "Save", memory): the walk is scanned directory by directory, so a
//! tree twice as large costs a save about what the smaller one did. The test compares a
//! save of `2N` files with one of `N`, so that it is about growth, not about what the
//! program, its threads and its bounded buffers take whatever the tree.

use std::time::Duration;

use crate::common;

use common::Repo;

/// Files in the smaller tree; the larger has twice as many. Enough that the store of
/// the smaller one already fills the pages the store keeps in memory (16 MiB, about
/// 45,000 files' worth): below that, each file more adds its pages there too.
const FILES: usize = 60_000;
/// Files a directory holds, as a source tree's do.
const PER_DIR: usize = 50;
/// At most how much more a save of the larger tree may peak at, per file more: a save
/// that held an entry for every file took 380 to 540 bytes a file more here (its walk,
/// stat cache matches and file list); one that holds nothing per file, under 150 (what
/// grows is the store's pages read, where the smaller store does not fill its cache).
const BYTES_PER_FILE_MORE: u64 = 250;

/// A worktree of `files` small files, `PER_DIR` to a directory.
fn tree_of(files: usize) -> Repo {
    let repo = Repo::new();
    for dir in 0..files.div_ceil(PER_DIR) {
        let path = repo.p(format!("d{:03}/e{}", dir % 97, dir));
        std::fs::create_dir_all(&path).unwrap();
        for file in 0..PER_DIR.min(files - dir * PER_DIR) {
            let name = path.join(format!("file{file}.rs"));
            std::fs::write(name, format!("fn f{dir}_{file}() {{}}\n")).unwrap();
        }
    }
    repo
}

/// The peak resident memory, in bytes, of `git checkpoint save` in `repo`.
fn peak_of_save(repo: &Repo, msg: &str) -> u64 {
    let (out, peak) =
        common::run_measuring_peak(repo.sb.bin_cmd(&repo.dir, &["-q", "save", "-m", msg]), None);
    assert_eq!(out.code, 0, "{out}");
    peak
}

#[test]
fn a_saves_peak_memory_does_not_grow_with_the_number_of_files() {
    let small = tree_of(FILES);
    let large = tree_of(2 * FILES);
    // Past the stat cache's racy margin, so that the first saves vouch for every file
    // and the save with nothing changed reads none (a file it reads, a look holds).
    std::thread::sleep(Duration::from_secs(3));
    let first = [peak_of_save(&small, "first"), peak_of_save(&large, "first")];
    // Every file vouched for by the stat cache: the look finds nothing to save.
    let unchanged = [peak_of_save(&small, "none"), peak_of_save(&large, "none")];
    // One file more: the look, then the save, which stores one tree per level.
    small.write("one.txt", b"one\n");
    large.write("one.txt", b"one\n");
    let one_change = [peak_of_save(&small, "one"), peak_of_save(&large, "one")];
    let bound = BYTES_PER_FILE_MORE * FILES as u64;
    for (what, [n, two_n]) in [
        ("a first save", first),
        ("a save with nothing changed", unchanged),
        ("a save of one change", one_change),
    ] {
        eprintln!("{what}: {} KiB, {} KiB", n >> 10, two_n >> 10);
        let more = two_n.saturating_sub(n);
        assert!(
            more <= bound,
            "{what} peaked at {} KiB for {FILES} files and {} KiB for twice as many: \
             {} bytes a file more, where at most {BYTES_PER_FILE_MORE} may be",
            n >> 10,
            two_n >> 10,
            more / FILES as u64,
        );
    }
}
