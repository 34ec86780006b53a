//! A file rewritten over and over while a save reads it is stored as one real version of
//! itself, or left out with a warning: never as a torn mix of two versions.

mod common;

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use common::Repo;

const LEN: usize = 4 << 20;

/// Saves six times while a thread rewrites `busy.bin` in place, each version one
/// repeated byte, resting `pause_ms` between versions; returns how many saves stored a
/// version of it, after checking that every stored version is whole.
fn saves_while_rewriting(pause_ms: u64) -> usize {
    let repo = Repo::new();
    repo.write("steady.txt", b"steady\n");
    let path = repo.p("busy.bin");
    std::fs::write(&path, vec![0u8; LEN]).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let stop = stop.clone();
        let path = path.clone();
        std::thread::spawn(move || {
            let mut version = 1u8;
            while !stop.load(Ordering::Relaxed) {
                let mut file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
                for _ in 0..16 {
                    file.write_all(&vec![version; LEN / 16]).unwrap();
                }
                version = version.wrapping_add(1).max(1);
                std::thread::sleep(std::time::Duration::from_millis(pause_ms));
            }
        })
    };
    let mut ids = Vec::new();
    for round in 0..6 {
        let out = repo.ok(&[
            "save",
            "--allow-empty",
            "--json",
            "-m",
            &format!("round {round}"),
        ]);
        ids.push(common::id_of(&common::parse_json(&out, "save")).unwrap());
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();

    let mut stored_versions = 0;
    for id in &ids {
        let _ = std::fs::remove_file(&path);
        repo.ok(&["restore", id, "--no-save"]);
        match std::fs::read(&path) {
            Ok(content) => {
                stored_versions += 1;
                assert_eq!(content.len(), LEN, "{id}: a truncated version was stored");
                assert!(
                    content.iter().all(|&b| b == content[0]),
                    "{id}: a torn mix of versions was stored"
                );
            }
            // Left out because it never held still: allowed, and said at save time.
            Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::NotFound),
        }
        assert_eq!(repo.read("steady.txt"), b"steady\n");
    }
    stored_versions
}

#[test]
fn a_file_rewritten_without_pause_is_never_stored_torn() {
    let stored = saves_while_rewriting(0);
    eprintln!("{stored} of 6 saves stored a version");
}

#[test]
fn a_file_rewritten_with_pauses_is_stored_whole_when_it_holds_still() {
    let stored = saves_while_rewriting(40);
    assert!(
        stored >= 1,
        "no save ever stored the file, though it rested 40 ms at a time"
    );
}
