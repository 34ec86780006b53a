//! The operation log through the MCP server: a tool call's operation is recorded as
//! that call, and the `undo`, `redo` and `op_log` tools answer what the commands answer.

use crate::common;

use common::mcp::*;
use common::*;
use serde_json::json;

/// Three checkpoints of `a.txt` ("1", "2", "3", each step adding `stepN.txt`), and
/// `scratch.txt` unsaved in the worktree.
fn three_steps() -> Repo {
    let r = Repo::new();
    for n in 1..=3 {
        r.write("a.txt", format!("{n}\n").as_bytes());
        r.write(format!("step{n}.txt"), b"x\n");
        r.save(&format!("step {n}"));
    }
    r.write("scratch.txt", b"unsaved\n");
    r
}

#[test]
fn an_mcp_tool_calls_operation_is_recorded_as_that_call() {
    let r = three_steps();
    runtime().block_on(async {
        let client = connect(&r.sb, &r.dir, &["mcp"]).await;
        ok(&call(&client, "restore", json!({"rev": "@~2"})).await);
        client.cancel().await.unwrap();
    });
    let log = r.json(&["op", "log", "--json"]);
    assert_eq!(
        log[0]["invocation"],
        json!({"type": "mcp", "tool": "restore", "arguments": r#"{"rev":"@~2"}"#}),
        "{log:#}"
    );
    let text = r.ok(&["op", "log"]).stdout;
    assert!(
        text.contains(r#"      mcp restore {"rev":"@~2"}"#),
        "{text}"
    );
}
