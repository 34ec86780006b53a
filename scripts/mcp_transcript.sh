#!/bin/bash
# Makes the transcript in docs/mcp.md, for real: a repository where an agent made three
# steps (and left some unsaved work), then an MCP client session, raw JSON-RPC on the
# server's stdin, that undoes the last two, reads the operation log, undoes that restore
# and redoes it. Prints each request, each answer's
# structured content (what Claude Code and Codex hand the model, as they hand it:
# compact JSON) and its text (what other clients show), and the worktree before, after
# each undo and redo, and at the end.
# Usage: scripts/mcp_transcript.sh [path/to/git-checkpoint]
set -e
BIN=$(realpath "${1:-target/debug/git-checkpoint}")
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T"
git init -q -b main demo
cd demo
export GIT_CONFIG_NOSYSTEM=1 HOME=$T
printf 'fn main() {}\n' > main.rs; "$BIN" save -q -m "start"
printf 'fn main() { parse(); }\n' > main.rs; printf 'fn parse() {}\n' > parser.rs
"$BIN" save -q -m "add the parser"
printf 'fn main() { parse(); render(); }\n' > main.rs; printf 'fn render() {}\n' > render.rs
"$BIN" save -q -m "add the renderer"
printf 'broken\n' > render.rs
echo "## worktree before: $(ls | tr '\n' ' ')"
requests=(
'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"transcript","version":"1.0"}}}'
'{"jsonrpc":"2.0","method":"notifications/initialized"}'
'{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_checkpoints","arguments":{"limit":3}}}'
'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"restore","arguments":{"rev":"@~2","dry_run":true}}}'
'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"restore","arguments":{"rev":"@~2"}}}'
'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"op_log","arguments":{"limit":1}}}'
'{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"undo","arguments":{}}}'
'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"redo","arguments":{}}}'
)
# One request at a time, each answered before the next is sent, as a model works.
coproc SERVER { "$BIN" mcp 2>/dev/null; }
for request in "${requests[@]}"; do
    echo "--> $request"
    printf '%s\n' "$request" >&"${SERVER[1]}"
    case $request in *'"id"'*) ;; *) continue ;; esac
    read -r answer <&"${SERVER[0]}"
    python3 -c '
import json, sys
answer = json.loads(sys.argv[1])
result = answer.get("result", {})
if "content" in result:
    structured = json.dumps(result.get("structuredContent"), separators=(",", ":"))
    print("<-- isError=%s, structuredContent (%d bytes):" % (result.get("isError", False), len(structured)))
    print("    " + structured)
    print("    text:")
    print("\n".join("    " + line for line in result["content"][0]["text"].splitlines()))
else:
    print("<-- " + json.dumps({"protocolVersion": result.get("protocolVersion"), "serverInfo": result.get("serverInfo")}))
' "$answer"
    case $request in
        *'"name":"undo"'* | *'"name":"redo"'*) echo "## worktree now: $(ls | tr '\n' ' ')";;
    esac
done
exec {SERVER[1]}>&-
wait
echo "## worktree after: $(ls | tr '\n' ' ')"
echo "## main.rs: $(cat main.rs)"
