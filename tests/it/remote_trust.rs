//! Issue 21, what a remote may do to a store and what a push may publish: a remote's
//! times never decide what gc removes of local history, a fetched checkpoint never
//! answers a local session revision, every push runs the secret guard over everything
//! new it publishes (tracked files whose content is not the index's, attachments), a
//! dropped checkpoint's secret does not travel in its descendants' old commits, and a
//! push goes only to a remote the user named. Remotes are bare repositories; hostile
//! commits are made with git plumbing as an attacker would.

use crate::common;

use std::path::{Path, PathBuf};

use common::{Out, Repo, EXIT_REFUSED};

/// A repository with a bare remote `name` beside it (no branches on it yet).
fn add_remote(repo: &Repo, name: &str) -> PathBuf {
    let bare = repo.sb.root.join(format!("{name}.git"));
    repo.sb.git(
        &repo.sb.root,
        &["init", "-q", "--bare", bare.to_str().unwrap()],
    );
    repo.git(&["remote", "add", name, bare.to_str().unwrap()]);
    bare
}

/// Runs the binary with extra environment, TZ fixed to UTC so days are calendar days.
#[track_caller]
fn run_at(repo: &Repo, time: &str, args: &[&str]) -> Out {
    let mut cmd = repo.sb.bin_cmd(&repo.dir, args);
    cmd.env("TZ", "UTC").env("GIT_CHECKPOINT_NOW", time);
    let out = common::run_cmd(cmd, common::DEFAULT_TIMEOUT);
    common::assert_no_panic(&out, &format!("{args:?}"));
    assert_eq!(out.code, 0, "{args:?} at {time}\n{out}");
    out
}

/// Saves with the clock at `time` (RFC 3339) and returns the new checkpoint's id.
#[track_caller]
fn save_at(repo: &Repo, time: &str, message: &str, extra: &[&str]) -> String {
    let mut args = vec!["save", "--json", "--allow-empty", "-m", message];
    args.extend_from_slice(extra);
    let out = run_at(repo, time, &args);
    let v = common::parse_json(&out, "save");
    common::id_of(&v).unwrap_or_else(|| panic!("no checkpoint made: {v}"))
}

/// Whether the store still holds checkpoint `id`.
fn exists(repo: &Repo, id: &str) -> bool {
    repo.run(&["show", id]).code == 0
}

/// An attacker's commit on `bare`: a tree holding `files`, `parent` if any, and the
/// trailers of a checkpoint saved at `time_ns` with `meta` (as `src/remote/message.rs`
/// writes them). Returns its id.
fn forge(
    repo: &Repo,
    bare: &Path,
    parent: Option<&str>,
    files: &[(&str, &[u8])],
    time_ns: i128,
    meta: &[(&str, &str)],
) -> String {
    let mut listing = String::new();
    for (name, content) in files {
        let out = common::run_cmd_with_input(
            repo.sb
                .git_cmd(bare, &["hash-object", "-w", "--stdin", "-t", "blob"]),
            Some(content),
            common::DEFAULT_TIMEOUT,
        );
        assert_eq!(out.code, 0, "{out}");
        listing.push_str(&format!("100644 blob {}\t{name}\n", out.stdout.trim()));
    }
    let tree = common::run_cmd_with_input(
        repo.sb.git_cmd(bare, &["mktree"]),
        Some(listing.as_bytes()),
        common::DEFAULT_TIMEOUT,
    );
    assert_eq!(tree.code, 0, "{tree}");
    let mut message = format!(
        "forged {time_ns}\n\nCheckpoint-Id: {:032x}\nCheckpoint-Time: {time_ns}\n",
        time_ns as u128 ^ 0xabcdef
    );
    for (key, value) in meta {
        message.push_str(&format!("Checkpoint-Meta: {key} {value}\n"));
    }
    let mut args = vec!["commit-tree", tree.stdout.trim()];
    if let Some(parent) = parent {
        args.extend(["-p", parent]);
    }
    let commit = common::run_cmd_with_input(
        repo.sb.git_cmd(bare, &args),
        Some(message.as_bytes()),
        common::DEFAULT_TIMEOUT,
    );
    assert_eq!(commit.code, 0, "{commit}");
    commit.stdout.trim().to_string()
}

/// Nanoseconds since the epoch of an RFC 3339 UTC time `YYYY-MM-DDTHH:MM:SSZ`.
fn ns(date: &str) -> i128 {
    let out = std::process::Command::new("date")
        .args(["-u", "-d", date, "+%s"])
        .output()
        .unwrap();
    let secs: i128 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    secs * 1_000_000_000
}

/// Whether bare repository `bare` holds a blob with exactly `content`.
fn has_blob(repo: &Repo, bare: &Path, content: &[u8]) -> bool {
    let sha = common::run_cmd_with_input(
        repo.sb.git_cmd(bare, &["hash-object", "--stdin"]),
        Some(content),
        common::DEFAULT_TIMEOUT,
    );
    let check = repo
        .sb
        .git_cmd(bare, &["cat-file", "-e", sha.stdout.trim()]);
    common::run_cmd(check, common::DEFAULT_TIMEOUT).code == 0
}

/// The commit `refs/checkpoints/<branch>` names on `bare`, if any.
fn remote_tip(repo: &Repo, bare: &Path, branch: &str) -> Option<String> {
    let cmd = repo.sb.git_cmd(
        bare,
        &[
            "rev-parse",
            "-q",
            "--verify",
            &format!("refs/checkpoints/{branch}"),
        ],
    );
    let out = common::run_cmd(cmd, common::DEFAULT_TIMEOUT);
    (out.code == 0).then(|| out.stdout.trim().to_string())
}

// Finding 2: a remote's times never out-rank local history in retention.

#[test]
fn fetched_checkpoints_from_the_future_never_make_the_automatic_gc_remove_local_ones() {
    let repo = Repo::new();
    let bare = add_remote(&repo, "origin");
    let mut local = Vec::new();
    for n in 0..6 {
        repo.write("work.txt", format!("step {n}\n").as_bytes());
        local.push(save_at(
            &repo,
            &format!("2026-03-0{}T10:00:00Z", n + 1),
            &format!("s{n}"),
            &[],
        ));
    }
    // Five commits dated 2100, as a remote with a hostile (or skewed) clock sends them.
    let mut parent: Option<String> = None;
    for n in 0..5 {
        let sha = forge(
            &repo,
            &bare,
            parent.as_deref(),
            &[("evil.txt", format!("evil {n}\n").as_bytes())],
            ns(&format!("2100-01-0{}T00:00:00Z", n + 1)),
            &[],
        );
        parent = Some(sha);
    }
    repo.sb.git(
        &bare,
        &[
            "update-ref",
            "refs/checkpoints/evil",
            parent.as_deref().unwrap(),
        ],
    );
    repo.ok(&["fetch", "origin"]);
    repo.git(&["config", "checkpoint.gc.keep", "3"]);
    repo.write("work.txt", b"step 6\n");
    local.push(save_at(&repo, "2026-03-07T10:00:00Z", "s6", &[]));
    for id in &local[4..] {
        assert!(
            exists(&repo, id),
            "the automatic gc (keep 3) removed local checkpoint {id}, one of the 3 newest the victim saved"
        );
    }
    assert!(
        !exists(&repo, &local[0]),
        "keep 3 still applies to local ones"
    );
}

#[test]
fn keep_within_and_keep_daily_measure_local_history_by_local_times_only() {
    let repo = Repo::new();
    let bare = add_remote(&repo, "origin");
    let mut local = Vec::new();
    for day in 1..=4 {
        repo.write("work.txt", format!("day {day}\n").as_bytes());
        local.push(save_at(
            &repo,
            &format!("2026-03-0{day}T10:00:00Z"),
            "work",
            &[],
        ));
    }
    // A teammate's checkpoints: one dated just before the gc runs, three in the future
    // on three different days.
    let mut parent = forge(
        &repo,
        &bare,
        None,
        &[("t", b"0")],
        ns("2026-03-20T11:00:00Z"),
        &[],
    );
    for day in 1..=3 {
        parent = forge(
            &repo,
            &bare,
            Some(&parent),
            &[("t", format!("{day}").as_bytes())],
            ns(&format!("2100-01-0{day}T00:00:00Z")),
            &[],
        );
    }
    repo.sb
        .git(&bare, &["update-ref", "refs/checkpoints/mate", &parent]);
    repo.ok(&["fetch", "origin"]);

    // Measured from the local newest (2026-03-04), all four are within 4 days of it.
    run_at(
        &repo,
        "2026-03-20T12:00:00Z",
        &["gc", "--keep-within", "4d"],
    );
    for id in &local {
        assert!(
            exists(&repo, id),
            "gc --keep-within 4d removed local checkpoint {id}: measured from a fetched time"
        );
    }
    // The newest of each of the last 3 local days stays, whatever days a remote claims.
    run_at(&repo, "2026-03-20T12:00:00Z", &["gc", "--keep-daily", "3"]);
    for id in &local[1..] {
        assert!(
            exists(&repo, id),
            "gc --keep-daily 3 removed local checkpoint {id}: fetched days took the buckets"
        );
    }
    assert!(!exists(&repo, &local[0]), "keep-daily 3 still applies");
}

// Finding 3: the secret guard runs on every push, over everything new.

#[test]
fn a_fast_forward_push_is_checked_like_a_first_one() {
    let repo = Repo::new();
    let bare = add_remote(&repo, "origin");
    repo.write("code.rs", b"fn main() {}\n");
    repo.save("clean");
    repo.ok(&["push", "origin"]);
    let first = remote_tip(&repo, &bare, "main").expect("first push");

    let key = b"AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE\n";
    repo.write(".env", key);
    repo.write(
        "id_ed25519",
        b"-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----\n",
    );
    repo.save("oops");
    let refused = repo.run(&["push", "origin"]);
    assert_eq!(
        refused.code, EXIT_REFUSED,
        "a fast-forward push published .env and id_ed25519 unchecked\n{refused}"
    );
    assert!(refused.stderr.contains(".env"), "{refused}");
    assert!(refused.stderr.contains("id_ed25519"), "{refused}");
    assert_eq!(
        remote_tip(&repo, &bare, "main").as_deref(),
        Some(first.as_str())
    );
    assert!(!has_blob(&repo, &bare, key));
}

#[test]
fn a_tracked_file_whose_checkpointed_content_is_not_the_index_is_scanned() {
    let repo = Repo::new();
    let bare = add_remote(&repo, "origin");
    // A committed test fixture that looks like a key: git publishes it anyway.
    let fixture =
        b"-----BEGIN RSA PRIVATE KEY-----\nnot a real key\n-----END RSA PRIVATE KEY-----\n";
    repo.write("tests/fixture.pem", fixture);
    repo.write("config.py", b"TOKEN = None\n");
    repo.git(&["add", "-A"]);
    repo.git(&["commit", "-q", "-m", "base"]);
    let token = b"TOKEN = 'ghp_0123456789abcdefghijklmnopqrstuvwxyzAB'\n";
    repo.write("config.py", token);
    repo.save("uncommitted token");
    let refused = repo.run(&["push", "origin"]);
    assert_eq!(
        refused.code, EXIT_REFUSED,
        "an uncommitted token in tracked config.py went out\n{refused}"
    );
    assert!(refused.stderr.contains("config.py"), "{refused}");
    assert!(
        !refused.stderr.contains("fixture.pem"),
        "the index's own content is not the guard's business: {refused}"
    );
    assert!(!has_blob(&repo, &bare, token));
    repo.ok(&["push", "origin", "--allow", "config.py"]);
    assert!(has_blob(&repo, &bare, token));
}

#[test]
fn attachments_are_scanned_before_they_are_published() {
    let repo = Repo::new();
    let bare = add_remote(&repo, "origin");
    repo.write("code.rs", b"fn main() {}\n");
    let transcript = repo.sb.root.join("transcript.jsonl");
    let leaked = b"{\"tool_output\":\"ANTHROPIC_API_KEY=sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789\"}\n";
    std::fs::write(&transcript, leaked).unwrap();
    repo.ok(&[
        "save",
        "-m",
        "agent",
        "--attach",
        transcript.to_str().unwrap(),
    ]);
    let refused = repo.run(&["push", "origin"]);
    assert_eq!(
        refused.code, EXIT_REFUSED,
        "an attachment holding an API key was published unscanned\n{refused}"
    );
    assert!(refused.stderr.contains("transcript.jsonl"), "{refused}");
    assert!(!has_blob(&repo, &bare, leaked));
    repo.ok(&["push", "origin", "--allow", "transcript.jsonl"]);
    assert!(has_blob(&repo, &bare, leaked));
}

#[test]
fn dropping_the_checkpoint_the_guard_names_keeps_its_secret_off_the_remote() {
    let repo = Repo::new();
    let backup = add_remote(&repo, "backup");
    let public = add_remote(&repo, "origin");
    repo.write("code.rs", b"fn main() {}\n");
    repo.save("clean");
    let secret = b"DATABASE_PASSWORD=hunter2-correct-horse\n";
    repo.write(".env", secret);
    let holding = repo.save("with .env");
    repo.remove(".env");
    repo.write("code.rs", b"fn main() { work(); }\n");
    repo.save("more work");
    // A private backup, on purpose with the secret: this exports every checkpoint.
    repo.ok(&["push", "backup", "--allow", ".env"]);
    assert!(has_blob(&repo, &backup, secret));

    let refused = repo.run(&["push", "origin"]);
    assert_eq!(refused.code, EXIT_REFUSED, "{refused}");
    assert!(refused.stderr.contains(".env"), "{refused}");
    assert!(refused.stderr.contains("drop"), "{refused}");
    // The guard's own advice.
    repo.ok(&["drop", &holding]);
    let dry = repo.json(&["push", "origin", "--dry-run", "--json"]);
    assert_eq!(
        dry["exported"], 1,
        "the re-linked child is exported again: {dry}"
    );
    repo.ok(&["push", "origin"]);
    assert!(
        !has_blob(&repo, &public, secret),
        "after dropping the checkpoint holding .env, the push still published it (the descendant kept its old commit)"
    );
    let tip = remote_tip(&repo, &public, "main").unwrap();
    let count = repo.sb.git(&public, &["rev-list", "--count", &tip]);
    assert_eq!(
        count.trim(),
        "2",
        "the dropped checkpoint is not in the history"
    );
}

#[test]
fn a_checkpoint_gc_removes_never_travels_in_old_commits_and_pushes_stay_fast_forwards() {
    let repo = Repo::new();
    let _backup = add_remote(&repo, "backup");
    let public = add_remote(&repo, "origin");
    repo.write("code.rs", b"fn main() {}\n");
    let base = repo.save("base");
    repo.ok(&["push", "origin"]);
    let secret = b"API_SECRET=hunter2-from-a-retention-test\n";
    repo.write(".env", secret);
    repo.save("with .env");
    repo.remove(".env");
    repo.write("code.rs", b"fn main() { more(); }\n");
    repo.save("more");
    repo.ok(&["push", "backup", "--allow", ".env"]);
    // Retention removes the checkpoint holding .env; its child is re-linked to base.
    repo.ok(&["pin", &base]);
    repo.ok(&["gc", "--keep", "1"]);
    repo.ok(&["push", "origin"]);
    assert!(
        !has_blob(&repo, &public, secret),
        "a checkpoint gc removed reached the remote inside its child's old commit"
    );
    // Re-linking what the remote already has does not make the next push a rewrite.
    repo.write("code.rs", b"fn main() { again(); }\n");
    repo.save("again");
    repo.ok(&["push", "origin"]);
    repo.ok(&["gc", "--keep", "1"]);
    repo.write("code.rs", b"fn main() { last(); }\n");
    repo.save("last");
    let pushed = repo.run(&["push", "origin"]);
    assert_eq!(pushed.code, 0, "a push after a gc was refused\n{pushed}");
    assert!(pushed.stdout.contains("fast-forward"), "{pushed}");
}

// Finding 5: a push goes only where the user said.

#[test]
fn push_to_a_remote_never_named_is_refused_with_the_command_to_run() {
    let repo = Repo::new();
    let bare = add_remote(&repo, "origin");
    repo.write("untracked.txt", b"private notes\n");
    repo.save("work");
    let refused = repo.run(&["push"]);
    assert_eq!(
        refused.code, 1,
        "a bare push published to origin, a remote the user never named\n{refused}"
    );
    assert!(
        refused.stderr.contains("git checkpoint push origin"),
        "{refused}"
    );
    assert!(refused.stderr.contains("checkpoint.remote"), "{refused}");
    assert_eq!(remote_tip(&repo, &bare, "main"), None);
    assert!(!has_blob(&repo, &bare, b"private notes\n"));
    let dry = repo.run(&["push", "--dry-run"]);
    assert_eq!(dry.code, 1, "{dry}");

    repo.ok(&["push", "origin"]);
    assert!(remote_tip(&repo, &bare, "main").is_some());
    repo.write("untracked.txt", b"more notes\n");
    repo.save("more");
    repo.git(&["config", "checkpoint.remote", "origin"]);
    repo.ok(&["push"]);
    assert!(has_blob(&repo, &bare, b"more notes\n"));
}

// Finding 7: session revisions are local.

#[test]
fn a_fetched_checkpoint_never_answers_a_local_session_revision() {
    let repo = Repo::new();
    let bare = add_remote(&repo, "origin");
    let session = "5e55a0e1-aaaa-bbbb-cccc-000000000001";
    let meta = |kind: &str, prompt: &str| {
        vec![
            "--meta".to_string(),
            "agent=claude".to_string(),
            "--meta".to_string(),
            format!("session={session}"),
            "--meta".to_string(),
            format!("kind={kind}"),
            "--meta".to_string(),
            format!("prompt={prompt}"),
        ]
    };
    repo.write("app.txt", b"victim 1\n");
    let args = meta("prompt", "1");
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    save_at(&repo, "2026-03-01T10:00:00Z", "before prompt 1: a", &refs);
    repo.write("app.txt", b"victim 2\n");
    let args = meta("prompt", "2");
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let mine = save_at(&repo, "2026-03-01T11:00:00Z", "before prompt 2: b", &refs);
    repo.ok(&["push", "origin"]);
    // The attacker read the session id off the victim's push and forges an earlier
    // "prompt 2" of it.
    let sha = forge(
        &repo,
        &bare,
        None,
        &[("app.txt", b"attacker\n")],
        ns("2026-03-01T10:30:00Z"),
        &[
            ("agent", "claude"),
            ("session", session),
            ("kind", "prompt"),
            ("prompt", "2"),
        ],
    );
    repo.sb
        .git(&bare, &["update-ref", "refs/checkpoints/trap", &sha]);
    repo.ok(&["fetch", "origin"]);
    let named = repo.id(&format!("{}:prompt2", &session[..8]));
    assert_eq!(
        named, mine,
        "a fetched checkpoint answered the local session revision"
    );
    repo.write("app.txt", b"scratch\n");
    repo.ok(&["restore", &format!("{session}:prompt2")]);
    assert_eq!(repo.read("app.txt"), b"victim 2\n");
    // Naming the remote reaches its checkpoints.
    let theirs = repo.id(&format!("origin:{session}:prompt2"));
    assert_ne!(theirs, mine);
    repo.ok(&["restore", "--no-save", &format!("origin:{session}:prompt2")]);
    assert_eq!(repo.read("app.txt"), b"attacker\n");
}
