//! What `hooks install` and `mcp install` write into a worktree is the agent's set-up,
//! not the user's work: no checkpoint holds it and no restore takes it away (an agent's
//! own `restore @~2` must not remove its hooks or its MCP server). Every agent the
//! binary knows is tried, as `hooks install --help` lists them, so an agent added
//! later is covered without touching this test.

use crate::common;
use std::collections::BTreeSet;

use common::mcp::*;
use common::*;
use serde_json::json;

/// Every agent `hooks install` takes, read from the binary's own list of values.
fn every_agent(r: &Repo) -> Vec<String> {
    let out = r.run(&["hooks", "install", "no-such-agent"]);
    let list = out
        .stderr
        .split_once("[possible values: ")
        .and_then(|(_, rest)| rest.split_once(']'))
        .map(|(list, _)| list.to_string())
        .unwrap_or_else(|| panic!("no list of agents in:\n{out}"));
    let agents: Vec<String> = list.split(", ").map(str::to_string).collect();
    assert!(agents.len() >= 6, "{agents:?}");
    agents
}

/// The worktree's files (as `path=content`) that are new since `before`.
fn new_files(r: &Repo, before: &BTreeSet<String>) -> BTreeSet<String> {
    r.files()
        .into_iter()
        .filter(|f| !before.contains(f))
        .collect()
}

#[test]
fn every_file_an_install_writes_is_exempt_from_checkpoints_and_restores() {
    let names = every_agent(&Repo::new());
    for agent in &names {
        let r = Repo::new();
        r.write("a.txt", b"the user's work\n");
        let first = r.save("before any install");
        let before: BTreeSet<String> = r.files().into_iter().collect();
        // Every scope a worktree has; an agent without one refuses, and that is fine.
        for args in [
            vec!["hooks", "install", agent],
            vec!["hooks", "install", agent, "--shared"],
            vec!["mcp", "install", agent],
        ] {
            r.run(&args);
        }
        let written = new_files(&r, &before);
        r.write("a.txt", b"more work\n");
        r.save("after the installs");
        for checkpoint in r.log_ids(true) {
            let shown = r.json(&["show", &checkpoint, "--json"]);
            for change in shown["changes"].as_array().unwrap() {
                let path = change["path"].as_str().unwrap();
                assert!(
                    !written.iter().any(|f| f.starts_with(&format!("{path}="))),
                    "{agent}: checkpoint {checkpoint} holds {path}, which an install wrote"
                );
            }
        }
        r.ok(&["restore", &first]);
        assert_eq!(r.read_string("a.txt"), "the user's work\n", "{agent}");
        let kept = r.files();
        for file in &written {
            assert!(
                kept.contains(file),
                "{agent}: restoring an earlier checkpoint changed {file:?}"
            );
        }
    }
    // The test tried at least the files every agent's installs write.
    assert!(names.iter().any(|n| n == "claude"), "{names:?}");
}

#[test]
fn the_agents_own_restore_keeps_its_mcp_server() {
    let r = Repo::new();
    r.write("a.txt", b"1\n");
    r.save("one");
    r.write("a.txt", b"2\n");
    r.save("two");
    r.ok(&["mcp", "install", "claude"]);
    let registration = r.read(".mcp.json");
    r.write("a.txt", b"3\n");
    r.save("three");
    runtime().block_on(async {
        let client = connect(&r.sb, &r.dir, &["mcp"]).await;
        ok(&call(&client, "restore", json!({"rev": "@~2"})).await);
        client.cancel().await.unwrap();
    });
    assert_eq!(r.read_string("a.txt"), "1\n");
    assert_eq!(r.read(".mcp.json"), registration);
}
