//! Permission bits: a file's `0777` bits are kept and restored exactly (a key file at
//! `0600` does not come back `0644` after an agent rewrote it), never set-id bits;
//! `checkpoint.keepPermissions false` keeps only the executable bit, as git does.

use crate::common;
use std::os::unix::fs::PermissionsExt;

use common::Repo;

fn mode_of(repo: &Repo, rel: &str) -> u32 {
    std::fs::symlink_metadata(repo.p(rel))
        .unwrap()
        .permissions()
        .mode()
        & 0o7777
}

fn set_mode(repo: &Repo, rel: &str, mode: u32) {
    std::fs::set_permissions(repo.p(rel), std::fs::Permissions::from_mode(mode)).unwrap();
}

const MODES: [(&str, u32); 5] = [
    ("key.pem", 0o600),
    ("frozen.txt", 0o444),
    ("group.txt", 0o640),
    ("tool.sh", 0o700),
    ("plain.txt", 0o644),
];

fn files_with_modes(repo: &Repo) {
    for (name, mode) in MODES {
        repo.write(name, format!("{name}\n").as_bytes());
        set_mode(repo, name, mode);
    }
}

#[test]
fn permission_bits_are_restored_exactly() {
    let repo = Repo::new();
    files_with_modes(&repo);
    repo.write("setid.sh", b"#!/bin/sh\n");
    set_mode(&repo, "setid.sh", 0o4755);
    let first = repo.save("modes");
    // An agent rewrites them all world-writable, and changes one file's content too.
    for (name, _) in MODES {
        set_mode(&repo, name, 0o666);
    }
    repo.write("group.txt", b"rewritten\n");
    set_mode(&repo, "group.txt", 0o666);
    let diff = repo.ok(&["diff", "--", "key.pem"]).stdout;
    assert!(diff.contains("old mode 100600\nnew mode 100666"), "{diff}");
    let status = repo.ok(&["status"]).stdout;
    for (name, mode) in MODES {
        if mode != 0o666 {
            assert!(status.contains(&format!("M {name}")), "{name}: {status}");
        }
    }
    repo.ok(&["restore", &first]);
    for (name, mode) in MODES {
        assert_eq!(mode_of(&repo, name), mode, "{name}");
    }
    assert_eq!(repo.read("group.txt"), b"group.txt\n");
    // Set-id bits are never recorded, so never restored.
    repo.remove("setid.sh");
    repo.ok(&["restore", &first]);
    assert_eq!(
        mode_of(&repo, "setid.sh") & 0o7000,
        0,
        "a set-id bit was restored"
    );
    assert!(mode_of(&repo, "setid.sh") & 0o100 != 0);
}

#[test]
fn keep_permissions_false_keeps_only_the_executable_bit() {
    let repo = Repo::new();
    repo.git(&["config", "checkpoint.keepPermissions", "false"]);
    files_with_modes(&repo);
    let first = repo.save("modes");
    // What a new file gets here (the umask decides), with and without the x bits.
    repo.write("probe", b"");
    let plain = mode_of(&repo, "probe");
    repo.remove("probe");
    for (name, _) in MODES {
        repo.remove(name);
    }
    repo.ok(&["restore", &first]);
    for (name, mode) in MODES {
        assert_eq!(mode_of(&repo, name) & 0o666, plain & 0o666, "{name}");
        assert_eq!(
            mode_of(&repo, name) & 0o100 != 0,
            mode & 0o100 != 0,
            "{name}"
        );
    }
}
