//! Every way to name a checkpoint, and every way to get it wrong: one clear line on
//! stderr and the documented exit code, never a panic.

use crate::common;
use common::claude::ClaudeSession;
use common::{assert_no_panic, Repo};

/// Resolves `rev` through `show --json` and returns the full id.
fn resolve(repo: &Repo, rev: &str) -> String {
    repo.json_of(&["show", rev])["id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Runs `show <rev>` expecting failure with `code` and a one-line error holding `text`.
fn fails(repo: &Repo, rev: &str, code: i32, text: &str) {
    let out = repo.run(&["show", rev]);
    assert_eq!(out.code, code, "{rev}: {out}");
    assert_no_panic(&out, rev);
    assert!(out.stdout.is_empty(), "{rev}: {out}");
    assert_eq!(out.stderr.lines().count(), 1, "{rev}: {out}");
    assert!(out.stderr.contains(text), "{rev}: wanted {text:?}: {out}");
}

#[test]
fn each_revision_form_names_the_right_checkpoint() {
    let repo = Repo::new();
    let mut ids = Vec::new();
    for i in 0..4 {
        repo.write("f.txt", format!("{i}\n").as_bytes());
        ids.push(repo.save_forced(&format!("c{i}")));
    }
    repo.ok(&["fork", &ids[1], "-b", "side"]);
    repo.write("g.txt", b"side\n");
    let side = repo.save_forced("s");
    repo.ok(&["switch", "main"]);

    // A full id, and prefixes of 4, 7 and 31 digits (4 only where no other id shares it).
    for id in &ids {
        assert_eq!(resolve(&repo, id), *id);
        assert_eq!(resolve(&repo, &id[..7]), *id);
        assert_eq!(resolve(&repo, &id[..31]), *id);
        assert_eq!(resolve(&repo, &id[..7].to_uppercase()), *id);
        if ids
            .iter()
            .chain([&side])
            .filter(|o| o[..4] == id[..4])
            .count()
            == 1
        {
            assert_eq!(resolve(&repo, &id[..4]), *id);
        }
    }
    // Branch names, @, and ~N after each of them.
    assert_eq!(resolve(&repo, "main"), ids[3]);
    assert_eq!(resolve(&repo, "side"), side);
    assert_eq!(resolve(&repo, "@"), ids[3]);
    assert_eq!(resolve(&repo, "@~1"), ids[2]);
    assert_eq!(resolve(&repo, "@~"), ids[2]);
    assert_eq!(resolve(&repo, "@~~"), ids[1]);
    assert_eq!(resolve(&repo, "@~1~2"), ids[0]);
    assert_eq!(resolve(&repo, "@~3"), ids[0]);
    assert_eq!(resolve(&repo, "main~2"), ids[1]);
    assert_eq!(resolve(&repo, "side~1"), ids[1]);
    assert_eq!(resolve(&repo, &format!("{}~1", &side[..7])), ids[1]);
    assert_eq!(resolve(&repo, &format!("{}~0", ids[2])), ids[2]);
    // The same revisions work in every command that takes one.
    let out = repo.ok(&["diff", "@~1", "@", "--name-only"]);
    assert_eq!(out.stdout, "f.txt\n");
    repo.ok(&["restore", "--dry-run", "side~1"]);
}

#[test]
fn bad_revisions_fail_with_one_clear_line_and_exit_1() {
    let repo = Repo::new();
    // An empty store has no current checkpoint.
    fails(&repo, "@", 1, "no checkpoint yet");
    repo.write("f.txt", b"1\n");
    let root = repo.save_forced("root");
    repo.write("f.txt", b"2\n");
    let tip = repo.save_forced("tip");

    fails(&repo, "nosuch", 1, "unknown revision 'nosuch'");
    fails(
        &repo,
        "@~2",
        1,
        &format!("reaches past checkpoint {}", &root[..7]),
    );
    fails(&repo, "@~99", 1, "which has no parent");
    fails(&repo, "main~18446744073709551615", 1, "reaches past");
    fails(&repo, "@~x", 1, "'~' must be followed by a number");
    fails(&repo, "@~-1", 1, "'~' must be followed by a number");
    fails(&repo, "~1", 1, "malformed revision '~1'");
    fails(&repo, "abc", 1, "an id prefix needs 4 to 32 hex digits");
    fails(
        &repo,
        &format!("{tip}0"),
        1,
        "an id prefix needs 4 to 32 hex digits",
    );
    // A well-formed prefix that matches nothing.
    let unused = (0..=0xffffu32)
        .map(|n| format!("{n:04x}"))
        .find(|p| !root.starts_with(p.as_str()) && !tip.starts_with(p.as_str()))
        .unwrap();
    fails(&repo, &unused, 1, &format!("unknown revision '{unused}'"));
    fails(&repo, "feature/x", 1, "unknown revision 'feature/x'");
    // Usage errors are exit 2, as with clap everywhere.
    let out = repo.run(&["show", "@", "--stat", "--name-status"]);
    assert_eq!(out.code, 2, "{out}");
}

#[test]
fn an_ambiguous_prefix_lists_the_candidates() {
    use common::raw_store::{self, CHECKPOINTS};
    use redb::ReadableDatabase;
    let repo = Repo::new();
    repo.write("f.txt", b"1\n");
    let real = repo.save_forced("real");
    // Two more records under ids that share the prefix abcd: copies of the real record,
    // so that each resolves to something showable once it is unambiguous.
    let path = repo.p(".git/checkpoint/store.redb");
    {
        let db = raw_store::open(&path);
        let bytes = {
            let read = db.begin_read().unwrap();
            let table = read.open_table(CHECKPOINTS).unwrap();
            let key = u128::from_str_radix(&real, 16).unwrap();
            let value = redb::ReadableTable::get(&table, key).unwrap().unwrap();
            let bytes = value.value().to_vec();
            bytes
        };
        let txn = db.begin_write().unwrap();
        {
            let mut table = txn.open_table(CHECKPOINTS).unwrap();
            for key in [0xabcd123451u128 << 88, 0xabcd123452u128 << 88] {
                table.insert(key, bytes.as_slice()).unwrap();
            }
        }
        txn.commit().unwrap();
    }
    let first = format!("abcd123451{}", "0".repeat(22));
    let second = format!("abcd123452{}", "0".repeat(22));
    // One line for the error, then one per candidate: its short id (unique, so it can
    // be given as it is), date and message.
    let date = repo.json_of(&["show", &real])["time"]
        .as_str()
        .unwrap()
        .to_string();
    for prefix in ["abcd", "abcd12345"] {
        let out = repo.run(&["show", prefix]);
        assert_eq!(out.code, 1, "{out}");
        assert_no_panic(&out, prefix);
        let lines: Vec<&str> = out.stderr.lines().collect();
        assert_eq!(
            lines,
            [
                format!("error: ambiguous revision '{prefix}': it matches 2 checkpoints"),
                format!("hint:   abcd123451  {}Z  real", &date[..19]),
                format!("hint:   abcd123452  {}Z  real", &date[..19]),
            ],
            "{out}"
        );
    }
    assert_eq!(resolve(&repo, "abcd123451"), first);
    assert_eq!(resolve(&repo, "abcd123452"), second);
    // Short ids grow until unique: these two share 9 digits, so they print with 10.
    let listed = repo.json_of(&["log", "--all"]);
    let shorts: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["short_id"].as_str().unwrap())
        .collect();
    assert!(shorts.contains(&"abcd123451"), "{shorts:?}");
    assert!(shorts.contains(&"abcd123452"), "{shorts:?}");
    assert!(shorts.contains(&&real[..7]), "{shorts:?}");
}

/// A session prefix two sessions share lists both, by id, first prompt and date; so
/// does a tool call prefix two calls share.
#[test]
fn an_ambiguous_session_or_tool_call_lists_the_candidates() {
    let repo = Repo::new();
    repo.write("f.txt", b"1\n");
    repo.save("start");
    let mut one = ClaudeSession::new(&repo, "4f2a9c1d-0000-4000-8000-000000000001");
    one.prompt("fix the parser");
    one.write("a.txt", b"a\n");
    one.write("b.txt", b"b\n");
    let two = ClaudeSession::new(&repo, "4f2b0000-0000-4000-8000-000000000002");
    two.prompt("write the docs");
    let out = repo.run(&["show", "4f2:prompt1"]);
    assert_eq!(out.code, 1, "{out}");
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert_eq!(
        lines[0], "error: ambiguous revision '4f2': it matches 2 sessions",
        "{out}"
    );
    for (line, (id, prompt)) in lines[1..].iter().zip([
        ("4f2a9c1d-0000-4000-8000-000000000001", "fix the parser"),
        ("4f2b0000-0000-4000-8000-000000000002", "write the docs"),
    ]) {
        assert!(line.starts_with(&format!("hint:   {id}  20")), "{out}");
        assert!(line.ends_with(&format!("  claude: {prompt}")), "{out}");
    }
    // The tool calls of session one are toolu_4f2a_1 and toolu_4f2a_2.
    let out = repo.run(&["show", "4f2a:toolu_4f2a"]);
    assert_eq!(out.code, 1, "{out}");
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert_eq!(
        lines[0], "error: ambiguous revision 'toolu_4f2a': it matches 2 tool calls",
        "{out}"
    );
    assert!(lines[1].starts_with("hint:   toolu_4f2a_1  20"), "{out}");
    assert!(lines[1].ends_with("  after Write: a.txt"), "{out}");
}

/// A revision that names nothing says where the ids are listed.
#[test]
fn an_unknown_revision_says_where_ids_are_listed() {
    let repo = Repo::new();
    repo.write("f.txt", b"1\n");
    repo.save("one");
    for rev in ["nosuch", "abcd1234", "nosuch~2", "feature/x"] {
        fails(&repo, rev, 1, &format!("unknown revision '{rev}'"));
        let out = repo.run(&["show", rev]);
        assert!(
            out.stderr.contains(
                "'git checkpoint log --all' lists every checkpoint, 'git checkpoint sessions' every agent session"
            ),
            "{rev}: {out}"
        );
    }
}

#[test]
fn outside_a_worktree_is_exit_128() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(common::BIN)
        .args(["show", "@"])
        .current_dir(dir.path())
        .env("HOME", dir.path())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CEILING_DIRECTORIES", dir.path().parent().unwrap())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(128));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("fatal:"));
}
