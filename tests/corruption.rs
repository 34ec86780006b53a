//! A damaged store (flipped bytes anywhere in the file, or a truncated file): every
//! command ends with a clear error or a correct result, never a panic, a hang, or
//! wrong bytes written to the worktree.

mod common;

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
    let mut refused = 0;
    for how in cases {
        fs::write(repo.store_path(), &pristine).unwrap();
        damage(&repo.store_path(), how);
        for args in [
            vec!["log", "--all"],
            vec!["restore", "@", "--dry-run"],
            vec!["restore", first.as_str(), "--no-save"],
            vec!["save", "--allow-empty", "-m", "on a damaged store"],
        ] {
            let out = repo.run(&args);
            assert_no_panic(&out, &format!("{how:?} {args:?}"));
            if out.code != 0 {
                refused += 1;
                let error = out.stderr.trim();
                assert!(
                    error.starts_with("error:") || error.starts_with("fatal:"),
                    "{how:?} {args:?}: unclear failure\n{out}"
                );
            } else if args.last() == Some(&"--no-save") {
                // Whatever restore wrote must be the real checkpoint, byte for byte.
                common::assert_snap_eq(&first_snap, &repo.snapshot(), &format!("{how:?}"));
            }
        }
        // Put the worktree back for the next case.
        fs::write(repo.store_path(), &pristine).unwrap();
        repo.ok(&["restore", &first, "--no-save"]);
    }
    // The damage must actually have been noticed somewhere.
    assert!(refused > 10, "only {refused} commands noticed the damage");
}
