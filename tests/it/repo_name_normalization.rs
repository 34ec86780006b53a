//! Names in another Unicode normalization than they were written in (docs/design.md
//! invariant 28): on a filesystem that ignores normalization (APFS, HFS+, which hands
//! every name back in NFD), the walk takes each name it lists in NFC, as git's
//! `core.precomposeUnicode` does, so a file written as `café` in NFC and listed as
//! `cafe` + U+0301 is the same file to `status`, `diff` and a save, not a deletion beside
//! an addition.
//!
//! Only such a filesystem can show that: on Linux's own, the NFC name does not find a
//! file listed in NFD, and no kernel here mounts one that would (no `CONFIG_UNICODE`,
//! and FUSE's NTFS does not fold normalization). So the test of the promise runs where
//! the probe finds normalization ignored (a Mac: `cargo test --test it
//! repo_name_normalization`), and fails elsewhere unless
//! `GIT_CHECKPOINT_TEST_SKIP_NORMALIZATION_INSENSITIVE_FS=<reason>` says why; the other
//! holds here, through the probe's seam: a name whose NFC form finds nothing is kept as
//! listed, so a wrong setting never drops a file from a save.

use git_checkpoint::worktree::names::probe;

use crate::common::{self, Repo};

const NFC: &str = "caf\u{e9}.txt";
const NFD: &str = "cafe\u{301}.txt";

#[test]
fn where_normalization_is_ignored_a_name_listed_in_nfd_is_the_file_saved_in_nfc() {
    let repo = Repo::new();
    let rules = probe(&repo.dir).unwrap();
    if !rules.ignores_normalization {
        common::skip_only_if_allowed(
            "NORMALIZATION_INSENSITIVE_FS",
            "the worktree's filesystem tells NFC and NFD names apart (run it on a Mac)",
        );
        return;
    }
    repo.write(NFC, b"written in NFC\n");
    repo.save("composed");
    // As HFS+ hands it back, or as a tool that writes NFD names leaves it.
    repo.remove(NFC);
    repo.write(NFD, b"written in NFC\n");
    let status = repo.ok(&["status"]);
    assert_eq!(status.stdout, "", "no phantom change: {status}");
    let saved = repo.save_json(&["-m", "again"]);
    assert!(common::id_of(&saved).is_none(), "nothing changed: {saved}");
    let listed = repo.ok(&["show", "@", "--name-only"]).stdout;
    assert!(!listed.contains(NFD), "{listed}");
}

#[test]
fn a_name_whose_nfc_form_finds_nothing_is_kept_as_listed() {
    // The probe's seam says normalization is ignored; Linux's filesystem does not
    // ignore it, as a wrong `core.precomposeUnicode` would say of an exFAT drive.
    let repo = Repo::new();
    repo.write(NFD, b"decomposed\n");
    repo.write("plain.txt", b"plain\n");
    let env = [("GIT_CHECKPOINT_NAMES_PROBE", "normalization")];
    let out = repo.run_env(&["save", "-m", "both"], &env);
    assert_eq!(out.code, 0, "{out}");
    let out = repo.run_env(&["status"], &env);
    assert_eq!(out.stdout, "", "{out}");
    repo.remove(NFD);
    let out = repo.run_env(&["restore", "@"], &env);
    assert_eq!(out.code, 0, "{out}");
    assert_eq!(repo.read(NFD), b"decomposed\n");
}
