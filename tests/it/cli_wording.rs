//! Counts in what the commands print read as English: one thing is singular and any
//! other number plural ("1 prompt", "2 branches"), never "1 prompts" or "branch(es)",
//! and a session saved within a second is not said to have gone on "over 0 seconds".

use crate::common;
use common::claude::ClaudeSession;
use common::Repo;

/// `text` holds `want`.
#[track_caller]
fn says(text: &str, want: &str) {
    assert!(text.contains(want), "wanted {want:?} in:\n{text}");
}

#[test]
fn one_of_anything_is_singular() {
    // One checkpoint of one file on one branch: one tree, one chunk.
    let repo = Repo::new();
    repo.write("f.txt", b"1\n");
    repo.save("one");
    says(
        &repo.ok(&["verify"]).stdout,
        "Checked 1 checkpoint, 1 tree, 1 chunk",
    );
    says(&repo.ok(&["stats"]).stdout, "1 on 1 branch, 0 pinned");
    says(&repo.ok(&["stats"]).stdout, "(1 of 1 chunk, 1 tree)");
    says(
        &repo.ok(&["gc", "--keep", "1", "--dry-run"]).stdout,
        "Would remove 0 of 1 checkpoint",
    );

    // A session of one prompt, saved as one checkpoint.
    let claude = ClaudeSession::new(&repo, "4f2a9c1d-5e6f-4a0b-9c8d-7e6f5a4b3c2d");
    claude.prompt("fix the parser");
    let sessions = repo.ok(&["sessions"]).stdout;
    says(&sessions, "1 prompt, 1 checkpoint, last ");
    assert!(!sessions.contains(" over "), "{sessions}");
    let out = repo.run(&["show", "4f2a:prompt9"]);
    assert_eq!(out.code, 1, "{out}");
    says(&out.stderr, "(1 prompt recorded)");

    repo.write("f.txt", b"2\n");
    repo.save("two");
    says(
        &repo.ok(&["drop", "@", "--dry-run"]).stdout,
        "Would drop 1 checkpoint, ",
    );
    says(&repo.ok(&["stats"]).stdout, "3 on 1 branch, 0 pinned");
}
