//! Attachments (`save --attach`, `attachment`): files kept beside a checkpoint, outside
//! its tree, come back byte for byte.

use crate::common;
use common::{log_ids, Repo};

#[test]
fn attachments_round_trip_byte_for_byte() {
    let repo = Repo::new();
    repo.write("f.txt", b"x\n");
    let outside = repo.scratch("attachments");
    // Every byte value, a NUL-heavy binary, something larger than one chunk, and an
    // empty file.
    let all_bytes: Vec<u8> = (0..=255u8).cycle().take(4096).collect();
    let mut state = 7u64;
    let big: Vec<u8> = (0..700_000)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 33) as u8
        })
        .collect();
    let files = [
        (
            "transcript.jsonl",
            b"{\"role\":\"user\"}\r\n{\"x\":\"\\u00e9\"}\n".to_vec(),
        ),
        ("bytes.bin", all_bytes),
        ("big.bin", big),
        ("empty", Vec::new()),
    ];
    let mut args = vec!["save".to_string(), "-m".into(), "with attachments".into()];
    for (name, bytes) in &files {
        let path = outside.join(name);
        std::fs::write(&path, bytes).unwrap();
        args.push("--attach".into());
        args.push(path.display().to_string());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let saved = repo.json_of(&args);
    let id = saved["id"].as_str().unwrap().to_string();
    let listed = saved["attachments"].as_array().unwrap();
    assert_eq!(listed.len(), 4);
    for ((name, bytes), json) in files.iter().zip(listed) {
        assert_eq!(json["name"], *name);
        assert_eq!(json["size"], bytes.len() as u64);
        let out = repo.ok(&["attachment", &id[..8], name]);
        assert!(out.stdout_raw == *bytes, "{name} differs");
    }
    // Attachments are outside the tree: the worktree is unchanged and has no copy.
    assert_eq!(repo.files(), ["f.txt=x\n"]);
    // show lists them.
    let shown = repo.ok(&["show", &id, "--stat"]).stdout;
    let listed = format!("transcript.jsonl ({} B)", files[0].1.len());
    assert!(shown.contains(&listed), "{shown}");
    assert!(shown.contains("big.bin (683.6 KiB)"), "{shown}");

    // A save with only an attachment still makes a checkpoint, so it is never lost.
    let note = outside.join("note.txt");
    std::fs::write(&note, b"second note\n").unwrap();
    let again = repo.json_of(&["save", "--attach", note.to_str().unwrap()]);
    assert!(again["id"].is_string(), "{again}");
    assert_eq!(
        repo.ok(&["attachment", "@", "note.txt"]).stdout_raw,
        b"second note\n"
    );

    // Unknown names list what there is; unreadable files fail before anything is saved.
    let out = repo.run(&["attachment", "@", "nope"]);
    assert_eq!(out.code, 1, "{out}");
    assert!(
        out.stderr
            .contains("has no attachment 'nope' (it has: note.txt)"),
        "{out}"
    );
    let before = log_ids(&repo, &["--all"]);
    let out = repo.run(&["save", "--attach", "/nonexistent/file"]);
    assert_eq!(out.code, 1, "{out}");
    assert!(out.stderr.contains("/nonexistent/file"), "{out}");
    assert_eq!(log_ids(&repo, &["--all"]), before);
}
