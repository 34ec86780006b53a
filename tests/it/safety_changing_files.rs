//! A file rewritten over and over while a save reads it is stored as it stood at one
//! moment, or left out with a warning: never as a torn mix of versions that a read
//! stitched together. (A writer stalled half way, e.g. throttled by the kernel, really
//! leaves the file holding a mix for a while; a save may store that, as it stood.)

use crate::common;
use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::Repo;

const LEN: usize = 4 << 20;
const SAVES: usize = 6;
const STEADY: &[u8] = b"steady\n";
/// The rest between versions in the test where the file holds still at times: many
/// times what a save takes to read the file twice, short enough that saves often meet
/// a write.
const REST_MS: u64 = 100;
/// Batches of saves the test where the file holds still at times runs at most, waiting
/// for one save to meet a write. A save meets one by chance, and rarely on a fast
/// machine: on CI, with 200 ms rests, sixty saves in a row met none. The loop stops at
/// the first batch that met one.
const MAX_BATCHES: usize = 40;
/// What a save says when it leaves `busy.bin` out (src/save.rs, `scan_one`).
const LEFT_OUT_WARNING: &str =
    "warning: busy.bin kept changing while it was read; left out of this checkpoint";

/// A write of a version that took this long may have left the file holding a mix of
/// it and the version before (the writer was stalled half way); one that was faster
/// cannot have: a save stores a file only once two whole reads of it agree, and two
/// reads, chunked and hashed, of 4 MiB take longer than this (about 10 ms in a debug
/// build).
const STALL: Duration = Duration::from_millis(1);

/// The byte every position of version `n` holds (never 0, the initial content).
fn byte_of(n: u64) -> u8 {
    (n % 255) as u8 + 1
}

/// A write of one version that took at least [`STALL`].
struct SlowWrite {
    version: u64,
    started: Instant,
    finished: Instant,
}

/// Sets its flag when dropped, however the test ends.
struct SetOnDrop(Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// What one save did with `busy.bin`.
struct Round {
    id: String,
    /// Whether the checkpoint holds `busy.bin` (by its `files` count).
    stored: bool,
    /// Versions the writer completed while the save ran.
    rewrites: u64,
    /// When the save ran.
    started: Instant,
    finished: Instant,
}

/// Saves [`SAVES`] times while a thread rewrites `busy.bin` in place, each version one
/// repeated byte, resting `pause_ms` between versions. Checks every save: it stored the
/// file (and said nothing about it) or left it out (and warned, naming it); and every
/// stored version, restored, is a state the file held still in. Returns what each save
/// did.
fn saves_while_rewriting(pause_ms: u64) -> Vec<Round> {
    let repo = Repo::new();
    repo.write("steady.txt", STEADY);
    let path = repo.p("busy.bin");
    std::fs::write(&path, vec![0u8; LEN]).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    // Dropped before `repo`: a failing test stops the writer before its sandbox goes.
    let _stop_writer = SetOnDrop(stop.clone());
    let versions_done = Arc::new(AtomicU64::new(0));
    let slow_writes = Arc::new(Mutex::new(Vec::<SlowWrite>::new()));
    let writer = {
        let stop = stop.clone();
        let versions_done = versions_done.clone();
        let slow_writes = slow_writes.clone();
        let path = path.clone();
        std::thread::spawn(move || {
            let mut version = 1u64;
            while !stop.load(Ordering::Relaxed) {
                let content = vec![byte_of(version); LEN];
                // In place, without truncating, in one write: a reader can meet a mix of
                // this version and the last, but the file holds one only while this
                // write runs, which is timed.
                let Ok(mut file) = std::fs::OpenOptions::new().write(true).open(&path) else {
                    // Only a test that failed, its sandbox removed, has lost the file.
                    assert!(stop.load(Ordering::Relaxed), "cannot open busy.bin");
                    break;
                };
                let started = Instant::now();
                file.write_all(&content).unwrap();
                let finished = Instant::now();
                if finished - started >= STALL {
                    slow_writes.lock().unwrap().push(SlowWrite {
                        version,
                        started,
                        finished,
                    });
                }
                versions_done.fetch_add(1, Ordering::SeqCst);
                version += 1;
                std::thread::sleep(Duration::from_millis(pause_ms));
            }
        })
    };
    // Let the writer get going before the first save starts.
    while versions_done.load(Ordering::SeqCst) < 2 {
        std::thread::sleep(Duration::from_millis(1));
    }

    let mut rounds = Vec::new();
    for round in 0..SAVES {
        let before = versions_done.load(Ordering::SeqCst);
        let started = Instant::now();
        let out = repo.run(&[
            "save",
            "--allow-empty",
            "--json",
            "-m",
            &format!("round {round}"),
        ]);
        let finished = Instant::now();
        let rewrites = versions_done.load(Ordering::SeqCst) - before;
        assert_eq!(out.code, 0, "save {round} failed\n{out}");
        let saved = common::parse_json(&out, "save");
        let id = common::id_of(&saved).unwrap();
        let stored = match saved["files"].as_u64() {
            Some(2) => true,
            Some(1) => false,
            _ => panic!("save {round}: expected 1 or 2 files: {saved}"),
        };
        let warned = out.stderr.lines().any(|line| line == LEFT_OUT_WARNING);
        if stored {
            assert!(
                !warned,
                "save {round} stored busy.bin yet warned it was left out\n{out}"
            );
            assert_eq!(
                saved["bytes"].as_u64(),
                Some((STEADY.len() + LEN) as u64),
                "save {round}: {saved}"
            );
        } else {
            assert!(
                warned,
                "save {round} left busy.bin out without the warning naming it\n{out}"
            );
        }
        // No other file was left out or complained about.
        for line in out.stderr.lines() {
            assert!(
                line == LEFT_OUT_WARNING || !line.starts_with("warning:"),
                "save {round}: unexpected warning\n{out}"
            );
        }
        rounds.push(Round {
            id,
            stored,
            rewrites,
            started,
            finished,
        });
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    let slow_writes = slow_writes.lock().unwrap();

    for (round, r) in rounds.iter().enumerate() {
        let id = &r.id;
        let _ = std::fs::remove_file(&path);
        repo.ok(&["restore", id, "--no-save"]);
        match std::fs::read(&path) {
            Ok(content) => {
                assert!(
                    r.stored,
                    "{id}: restore wrote busy.bin, which the save left out"
                );
                assert_eq!(content.len(), LEN, "{id}: a truncated version was stored");
                if let Some(at) = content.iter().position(|&b| b != content[0]) {
                    // Not one version. Only a write stalled half way, while this save
                    // ran, leaves the file holding still in a mix: the newer version
                    // from the start, the one before it from some offset on.
                    let (first, then) = (content[0], content[at]);
                    let stall = slow_writes.iter().find(|w| {
                        byte_of(w.version) == first
                            && byte_of(w.version - 1) == then
                            && w.started < r.finished
                            && w.finished > r.started
                    });
                    let two_parts = content[at..].iter().all(|&b| b == then);
                    match stall {
                        Some(w) if two_parts => eprintln!(
                            "save {round}: the write of version {} stalled ({:?}), and the \
                             save stored the mix it left, as it stood",
                            w.version,
                            w.finished - w.started
                        ),
                        _ => panic!(
                            "save {round} ({id}) stored a torn mix of versions: byte {first} at \
                             offset 0, byte {then} at offset {at}; {}",
                            if two_parts {
                                "no write of the newer one stalled during the save"
                            } else {
                                "more than two parts"
                            }
                        ),
                    }
                }
            }
            Err(e) => {
                assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
                assert!(
                    !r.stored,
                    "{id}: the save stored busy.bin, the restore did not write it"
                );
            }
        }
        assert_eq!(repo.read("steady.txt"), STEADY);
    }
    rounds
}

#[test]
fn a_file_rewritten_without_pause_is_never_stored_torn() {
    let rounds = saves_while_rewriting(0);
    let stored = rounds.iter().filter(|r| r.stored).count();
    let rewrites: Vec<u64> = rounds.iter().map(|r| r.rewrites).collect();
    eprintln!("{stored} of {SAVES} saves stored a version; versions written during each save: {rewrites:?}");
    // The race was real: the writer wrote whole new versions while every save ran (at
    // least two, so one began and ended inside the save) ...
    for (round, r) in rounds.iter().enumerate() {
        assert!(
            r.rewrites >= 2,
            "save {round}: the writer completed only {} versions while it ran, so the save may \
             never have met the file changing",
            r.rewrites
        );
    }
    // ... and so busy it never held still for some save. (A save stores the file only if
    // two reads in a row agree, which a writer that never pauses allows only if it is
    // descheduled across both: not for every one of the saves.)
    assert!(
        stored < SAVES,
        "every save stored busy.bin although it was rewritten without pause: {rewrites:?}"
    );
}

#[test]
fn a_file_rewritten_with_pauses_is_stored_whole_when_it_holds_still() {
    // Rests far longer than a save takes to read the file twice (~10 ms; a few times that
    // on a loaded machine), so that some save finds it holding still. A save this short
    // meets a write only by chance, so batches of saves go on, up to a bound, until some
    // save ran while a version was written.
    let mut rounds = Vec::new();
    for _ in 0..MAX_BATCHES {
        rounds.extend(saves_while_rewriting(REST_MS));
        if rounds.iter().any(|r| r.rewrites >= 1) {
            break;
        }
    }
    let stored = rounds.iter().filter(|r| r.stored).count();
    let rewrites: Vec<u64> = rounds.iter().map(|r| r.rewrites).collect();
    eprintln!(
        "{stored} of {} saves stored a version; versions written during each save: {rewrites:?}",
        rounds.len()
    );
    assert!(
        stored >= 1,
        "no save ever stored the file, though it rested {REST_MS} ms at a time"
    );
    // Rewritten during the saves, not only between them.
    assert!(
        rewrites.iter().sum::<u64>() >= 1,
        "the writer never wrote while a save ran: {rewrites:?}"
    );
}
