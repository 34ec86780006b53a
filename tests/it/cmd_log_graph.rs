//! `log --graph` pictures of typical histories, as snapshots (ids and ages replaced, so
//! they are stable), each also checked to show every checkpoint exactly once.

use crate::common;
use common::Repo;

/// `log --graph --all` with each line's id and age taken out: what is left is the
/// graph, the labels, the message (unique per checkpoint here) and the change summary.
/// Also checks that each checkpoint's short id is on exactly one line, a node line.
fn graph(repo: &Repo) -> String {
    let out = repo.ok(&["log", "--graph", "--all"]).stdout;
    let ids: Vec<String> = repo
        .json_of(&["log", "--all"])
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["short_id"].as_str().unwrap().to_string())
        .collect();
    let mut shown = Vec::new();
    let mut normalised = String::new();
    for line in out.lines() {
        let start = line
            .find(|c: char| !"*|/\\ ".contains(c))
            .unwrap_or(line.len());
        let (lanes, rest) = line.split_at(start);
        if lanes.contains('*') {
            shown.push(rest.split(' ').next().unwrap().to_string());
        } else {
            assert!(rest.is_empty(), "text on a connecting row:\n{out}");
        }
        let rest = match rest.find(" ago  ") {
            Some(age_end) => &rest[age_end + " ago  ".len()..],
            None => rest,
        };
        // Messages such as "before restore to <id>" name checkpoints too.
        let rest = ids
            .iter()
            .fold(rest.to_string(), |r, id| r.replace(id.as_str(), "<id>"));
        normalised += lanes;
        normalised += &rest;
        normalised += "\n";
    }
    // Every checkpoint on exactly one node row, and nothing else on one.
    let mut sorted_ids = ids.clone();
    sorted_ids.sort();
    shown.sort();
    assert_eq!(shown, sorted_ids, "{out}");
    normalised
}

/// Saves `message` with content that makes the change summary predictable.
fn step(repo: &Repo, message: &str) -> String {
    repo.write(format!("{message}.txt"), message.as_bytes());
    repo.save_forced(message)
}

#[test]
fn linear_history() {
    let repo = Repo::new();
    for i in 1..=6 {
        step(&repo, &format!("m{i}"));
    }
    insta::assert_snapshot!("linear", graph(&repo));
}

#[test]
fn fork_off_an_old_checkpoint() {
    let repo = Repo::new();
    let mut ids = Vec::new();
    for i in 1..=6 {
        ids.push(step(&repo, &format!("m{i}")));
    }
    repo.ok(&["fork", &ids[1], "-b", "exp"]);
    step(&repo, "e1");
    step(&repo, "e2");
    insta::assert_snapshot!("fork_off_an_old_checkpoint", graph(&repo));
}

#[test]
fn three_live_branches() {
    let repo = Repo::new();
    let a1 = step(&repo, "a1");
    let a2 = step(&repo, "a2");
    step(&repo, "a3");
    repo.ok(&["fork", &a1, "-b", "b"]);
    step(&repo, "b1");
    step(&repo, "b2");
    repo.ok(&["fork", &a2, "-b", "c"]);
    step(&repo, "c1");
    repo.ok(&["switch", "main"]);
    step(&repo, "a4");
    repo.ok(&["switch", "b"]);
    step(&repo, "b3");
    insta::assert_snapshot!("three_live_branches", graph(&repo));
}

#[test]
fn restore_and_continue() {
    let repo = Repo::new();
    step(&repo, "m1");
    let m2 = step(&repo, "m2");
    step(&repo, "m3");
    step(&repo, "m4");
    // Unsaved work: the restore saves it first, on top of m4.
    repo.write("m4.txt", b"unsaved");
    repo.ok(&["restore", &m2]);
    step(&repo, "n1");
    step(&repo, "n2");
    insta::assert_snapshot!("restore_and_continue", graph(&repo));
}

#[test]
fn without_all_only_the_current_line_is_drawn() {
    let repo = Repo::new();
    let m1 = step(&repo, "m1");
    step(&repo, "m2");
    repo.ok(&["fork", &m1, "-b", "side"]);
    step(&repo, "s1");
    let out = repo.ok(&["log", "--graph"]).stdout;
    assert_eq!(out.lines().count(), 2, "{out}");
    assert!(out.lines().all(|l| l.starts_with("* ")), "{out}");
    assert!(!out.contains("m2"), "{out}");
    // -n cuts the list after graph ordering.
    let out = repo.ok(&["log", "--graph", "--all", "-n", "2"]).stdout;
    assert_eq!(out.matches('*').count(), 2, "{out}");
}
