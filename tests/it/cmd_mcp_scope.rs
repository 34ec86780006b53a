//! Which worktree an MCP server may touch: the one it was started for (`-C`, else the
//! client's roots, else its working directory) and the client's declared roots, nothing
//! else, whatever `repo` a tool call names; and a read never creates a store. Driven by
//! rmcp's own client over the real binary's stdio.

use crate::common;
use std::path::{Path, PathBuf};

use common::mcp::*;
use common::*;
use serde_json::json;

/// A repository that never used git-checkpoint, beside the sandbox's own, holding a
/// secret: what an agent confined to the other worktree must not read.
fn bystander(sb: &Sandbox, name: &str) -> PathBuf {
    let dir = sb.init_repo(name);
    std::fs::write(dir.join("secrets.env"), "db_password=hunter2\n").unwrap();
    dir
}

/// Whether the worktree at `dir` has a store (or anything of ours in its git dir).
fn has_store(dir: &Path) -> bool {
    dir.join(".git/checkpoint").exists()
}

/// The display form of a directory as the server names it.
fn shown(dir: &Path) -> String {
    dir.display().to_string()
}

#[test]
fn repo_outside_the_served_worktree_is_refused_and_nothing_is_created_there() {
    let r = Repo::new();
    r.write("a.txt", b"1\n");
    r.save("one");
    std::fs::create_dir_all(r.p("sub")).unwrap();
    let other = bystander(&r.sb, "other");
    r.symlink("link-to-other", &other);
    let served = r.dir.to_str().unwrap().to_string();
    runtime().block_on(async {
        let client = connect(&r.sb, &r.sb.root, &["-C", &served, "mcp", "--read-only"]).await;
        for repo in [other.to_str().unwrap(), "../other", "link-to-other", "/"] {
            for tool in ["diff", "list_checkpoints", "show", "list_sessions"] {
                let refused = tool_error(&call(&client, tool, json!({ "repo": repo })).await);
                assert!(
                    refused.starts_with("error: ") && refused.contains(&served),
                    "{tool} with repo {repo}: the error names the allowed worktree: {refused}"
                );
                assert!(!refused.contains("hunter2"), "{refused}");
            }
        }
        // The worktree it serves, or a directory inside it, is fine.
        for repo in [served.as_str(), "sub", "."] {
            let listed = ok(&call(&client, "list_checkpoints", json!({ "repo": repo })).await);
            assert_eq!(listed["checkpoints"].as_array().unwrap().len(), 1, "{repo}");
        }
        client.cancel().await.unwrap();

        // Writing tools are refused just the same.
        let client = connect(&r.sb, &r.sb.root, &["-C", &served, "mcp"]).await;
        let saved = call(
            &client,
            "save",
            json!({"repo": "../other", "message": "escaped"}),
        )
        .await;
        assert!(tool_error(&saved).contains(&served));
        let restored = call(&client, "restore", json!({"repo": other, "rev": "@"})).await;
        assert!(tool_error(&restored).contains(&served));
        client.cancel().await.unwrap();
    });
    assert!(
        !has_store(&other),
        "a store was created in the other repository"
    );
    assert_eq!(r.log_ids(true).len(), 1);
}

#[test]
fn repo_may_name_one_of_the_clients_roots_and_nothing_else() {
    let r = Repo::new();
    r.write("a.txt", b"1\n");
    r.save("in the first root");
    let second = r.sb.init_repo("second");
    std::fs::create_dir_all(second.join("deep/er")).unwrap();
    r.sb.ok_in(
        &second,
        &["save", "-m", "in the second root", "--allow-empty"],
    );
    let third = bystander(&r.sb, "third");
    let roots = [file_uri(&r.dir), file_uri(&second)];
    runtime().block_on(async {
        // Started in `/`: the first root is the default, the second may be named.
        let client = connect_with_roots(&r.sb, Path::new("/"), &["mcp"], &roots).await;
        let first = ok(&call(&client, "list_checkpoints", json!({})).await);
        assert_eq!(first["checkpoints"][0]["message"], "in the first root");
        for repo in [second.clone(), second.join("deep/er")] {
            let listed = ok(&call(&client, "list_checkpoints", json!({ "repo": repo })).await);
            assert_eq!(listed["checkpoints"][0]["message"], "in the second root");
        }
        let refused = tool_error(&call(&client, "diff", json!({ "repo": third })).await);
        assert!(
            refused.contains(&shown(&r.dir)) && refused.contains(&shown(&second)),
            "the error names every allowed root: {refused}"
        );
        assert!(!refused.contains("hunter2"), "{refused}");
        client.cancel().await.unwrap();

        // With -C, the client's roots are still allowed beside it; nothing else is.
        let served = r.dir.to_str().unwrap();
        let client = connect_with_roots(
            &r.sb,
            Path::new("/"),
            &["-C", served, "mcp", "--read-only"],
            &roots[1..],
        )
        .await;
        let listed = ok(&call(&client, "list_checkpoints", json!({ "repo": second })).await);
        assert_eq!(listed["checkpoints"][0]["message"], "in the second root");
        let refused = tool_error(&call(&client, "show", json!({ "repo": third })).await);
        assert!(refused.contains(served), "{refused}");
        client.cancel().await.unwrap();
    });
    assert!(
        !has_store(&third),
        "a store was created in the third repository"
    );
}

#[test]
fn outside_a_worktree_every_call_is_a_tool_error_and_repo_cannot_leave() {
    let r = Repo::new();
    r.write("a.txt", b"1\n");
    r.save("one");
    let elsewhere = r.sb.root.join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    runtime().block_on(async {
        let client = connect(&r.sb, &elsewhere, &["mcp"]).await;
        let refused = tool_error(&call(&client, "list_checkpoints", json!({})).await);
        assert!(
            refused.contains("not a git repository") && refused.contains("-C"),
            "{refused}"
        );
        // Naming a worktree it was not started for does not help.
        let refused =
            tool_error(&call(&client, "list_checkpoints", json!({ "repo": r.dir })).await);
        assert!(refused.contains(&shown(&elsewhere)), "{refused}");
        client.cancel().await.unwrap();
        // -C names it for every call.
        let dir = r.dir.to_str().unwrap();
        let client = connect(&r.sb, &elsewhere, &["-C", dir, "mcp"]).await;
        ok(&call(&client, "list_checkpoints", json!({})).await);
        client.cancel().await.unwrap();
    });
}

#[test]
fn a_read_never_creates_a_store() {
    let r = Repo::new();
    r.write("a.txt", b"not saved yet\n");
    runtime().block_on(async {
        for args in [vec!["mcp", "--read-only"], vec!["mcp"]] {
            let client = connect(&r.sb, &r.dir, &args).await;
            let listed = call(&client, "list_checkpoints", json!({})).await;
            assert_eq!(ok(&listed)["checkpoints"], json!([]));
            assert!(
                text(&listed).contains("No checkpoints yet"),
                "{}",
                text(&listed)
            );
            let sessions = call(&client, "list_sessions", json!({})).await;
            assert_eq!(ok(&sessions)["sessions"], json!([]));
            for tool in ["show", "diff"] {
                let answer = tool_error(&call(&client, tool, json!({})).await);
                assert!(answer.contains("no checkpoints yet"), "{tool}: {answer}");
            }
            client.cancel().await.unwrap();
            assert!(
                !has_store(&r.dir),
                "{args:?}: a read created {}",
                r.store_path().display()
            );
        }
    });
}
