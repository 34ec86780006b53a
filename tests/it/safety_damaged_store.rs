//! A damaged store (flipped bytes anywhere in the file, or a truncated file): every
//! command ends with a clear error or a correct result, never a panic, a hang, or
//! wrong bytes written to the worktree.

use crate::common;
use std::fs;

use common::{assert_no_panic, pseudo_random, Repo};

#[derive(Debug, Clone, Copy)]
enum Damage {
    Flip { at_percent: u64 },
    Truncate { to_percent: u64 },
}

fn damage(path: &std::path::Path, how: Damage) {
    let mut bytes = fs::read(path).unwrap();
    match how {
        Damage::Flip { at_percent } => {
            let at = (bytes.len() as u64 * at_percent / 100) as usize;
            let end = (at + 512).min(bytes.len());
            for b in &mut bytes[at..end] {
                *b ^= 0x5a;
            }
        }
        Damage::Truncate { to_percent } => {
            bytes.truncate((bytes.len() as u64 * to_percent / 100) as usize);
        }
    }
    fs::write(path, bytes).unwrap();
}

/// Removes every file of the worktree (not `.git`), so that a restore has to write, and
/// so read, every chunk of its checkpoint.
fn empty_worktree(repo: &Repo) {
    for entry in fs::read_dir(&repo.dir).unwrap() {
        let entry = entry.unwrap();
        if entry.file_name() != ".git" {
            common::remove_any(&entry.path());
        }
    }
}

#[test]
fn damaged_stores_give_clear_errors_and_never_wrong_bytes() {
    let repo = Repo::new();
    for i in 0..12 {
        repo.write(
            format!("src/f{i}.txt"),
            format!("file {i}\n").repeat(200).as_bytes(),
        );
    }
    repo.write("blob.bin", &pseudo_random(600_000, 7));
    let first = repo.save("first");
    let first_snap = repo.snapshot();
    repo.write("src/f1.txt", b"changed\n");
    repo.save("second");
    let pristine = fs::read(repo.store_path()).unwrap();

    let mut cases: Vec<Damage> = (1..20)
        .map(|i| Damage::Flip { at_percent: i * 5 })
        .collect();
    cases.extend([0, 1, 10, 50, 90].map(|p| Damage::Truncate { to_percent: p }));
    // Flips that `verify --read-data` traces to `first`, and flips whose restore of
    // `first` was refused.
    let (mut flips_damaging_first, mut flips_refused) = (0, 0);
    for how in cases {
        fs::write(repo.store_path(), &pristine).unwrap();
        damage(&repo.store_path(), how);
        let verified = repo.run(&["verify", "--read-data", "--json"]);
        assert_no_panic(&verified, &format!("{how:?} verify"));
        let first_damaged = verified.code != 0
            && serde_json::from_str::<serde_json::Value>(&verified.stdout).map_or(true, |v| {
                !v["opened"].as_bool().unwrap_or(false)
                    || v["affected_checkpoints"]
                        .as_array()
                        .is_some_and(|a| a.iter().any(|id| id == first.as_str()))
            });
        // The store is damaged again for the commands (verify may have repaired it).
        fs::write(repo.store_path(), &pristine).unwrap();
        damage(&repo.store_path(), how);
        empty_worktree(&repo);
        let mut restored = false;
        for args in [
            vec!["log", "--all"],
            vec!["restore", "@", "--dry-run"],
            vec!["restore", first.as_str(), "--no-save"],
            vec!["save", "--allow-empty", "-m", "on a damaged store"],
        ] {
            let out = repo.run(&args);
            assert_no_panic(&out, &format!("{how:?} {args:?}"));
            let is_restore = args.last() == Some(&"--no-save");
            if out.code != 0 {
                let error = out.stderr.trim();
                assert!(
                    error.starts_with("error:") || error.starts_with("fatal:"),
                    "{how:?} {args:?}: unclear failure\n{out}"
                );
            } else if is_restore {
                // Whatever restore wrote must be the real checkpoint, byte for byte.
                common::assert_snap_eq(&first_snap, &repo.snapshot(), &format!("{how:?}"));
                restored = true;
            }
        }
        if first_damaged {
            assert!(
                !restored,
                "{how:?}: verify found damage in {first}, yet its restore succeeded\n{}",
                verified.stdout
            );
        }
        if matches!(how, Damage::Flip { .. }) {
            flips_damaging_first += usize::from(first_damaged);
            flips_refused += usize::from(!restored);
        }
    }
    // The flips must really have hit data the restores read, and been refused for it.
    assert!(
        flips_damaging_first >= 5 && flips_refused >= flips_damaging_first,
        "{flips_damaging_first} flips damaged the first checkpoint, {flips_refused} restores refused"
    );
}
