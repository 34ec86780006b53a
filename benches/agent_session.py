"""Replays a Claude Code session through the hooks `hooks install claude` wrote, and
times every hook run, with `git status` and `git rev-parse HEAD` timed on the same tree
after each one (benches/agent_session.sh prepares the tree and calls this twice: without
a watcher and with one).

Usage: python3 benches/agent_session.py <worktree> <label> <out.json>
Environment: CALLS (tool calls, default 60), PROMPT_EVERY (default 5), SEED (default 25),
HOOK_CONFIG (extra `git -c` settings for the hook runs, space-separated key=value).

The session: a prompt every PROMPT_EVERY tool calls; before each tool call 1 to 3 files
are edited (a deterministic pseudo-random choice: SEED and the label): one existing file
is an `Edit`, a new file a `Write`, several files one `Bash` call (`sed -i ...`), as the
agent's own tools would make them. Each turn ends with `Stop`. Every event is sent the way
Claude Code sends it: to each hook command registered for it in the project's
`.claude/settings.local.json` whose matcher matches the tool, with the documented JSON
on stdin (code.claude.com/docs/en/hooks) and the transcript appended to first. Events
with no hook of ours (today `PreToolUse` and `Stop`) cost the agent nothing and are only
counted. A hook must exit 0 with nothing on stderr, or the replay stops.
"""
import json
import os
import random
import re
import shlex
import statistics
import subprocess
import sys
import time

work, label, out = sys.argv[1], sys.argv[2], sys.argv[3]
calls = int(os.environ.get("CALLS", "60"))
prompt_every = int(os.environ.get("PROMPT_EVERY", "5"))
rng = random.Random(f"{os.environ.get('SEED', '25')}-{label}")

settings = json.load(open(os.path.join(work, ".claude", "settings.local.json")))
hooks = settings.get("hooks", {})
env = dict(os.environ)
extra = os.environ.get("HOOK_CONFIG", "").split()
if extra:
    # GIT_CONFIG_PARAMETERS is how `git -c` hands settings to the commands it runs.
    # git reads each entry single-quoted whatever it holds (shlex.quote leaves a plain
    # `key=value` bare, which git refuses as "bogus format").
    env["GIT_CONFIG_PARAMETERS"] = " ".join("'" + kv.replace("'", "'\\''") + "'" for kv in extra)

session = f"bench-{label}-{rng.randrange(1 << 32):08x}"
transcript_dir = os.path.join(os.environ["HOME"], ".claude", "projects", "-bench")
os.makedirs(transcript_dir, exist_ok=True)
transcript = os.path.join(transcript_dir, f"{session}.jsonl")

# Files a tool may edit: the tracked text files, in a fixed order.
tracked = subprocess.run(["git", "-C", work, "ls-files", "-z"], capture_output=True, check=True).stdout
candidates = sorted(
    n.decode() for n in tracked.split(b"\0")
    if n and not n.startswith(b".claude/")
    and os.path.isfile(os.path.join(work, n.decode())) and not os.path.islink(os.path.join(work, n.decode()))
)

timings = {"hook": [], "hook_prompt": [], "hook_tool": [], "status": [], "rev_parse": []}
not_hooked = {}


def timed(argv, stdin=None):
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=work, input=stdin, capture_output=True, env=env)
    took = time.perf_counter() - start
    return took, done


def handlers(event, tool=None):
    """The commands Claude Code would run for `event` (and `tool`)."""
    found = []
    for group in hooks.get(event, []):
        matcher = group.get("matcher")
        if tool is not None and matcher not in (None, "", "*") and not re.fullmatch(matcher, tool):
            continue
        found += [h["command"] for h in group.get("hooks", []) if h.get("type") == "command"]
    return found


def send(payload, kind):
    payload.update(session_id=session, transcript_path=transcript, cwd=work, permission_mode="default")
    with open(transcript, "a") as log:
        log.write(json.dumps(payload) + "\n")
    commands = handlers(payload["hook_event_name"], payload.get("tool_name"))
    if not commands:
        not_hooked[payload["hook_event_name"]] = not_hooked.get(payload["hook_event_name"], 0) + 1
        return
    for command in commands:
        took, done = timed(shlex.split(command), json.dumps(payload).encode())
        if done.returncode != 0 or done.stderr:
            sys.exit(f"hook {command!r} on {payload['hook_event_name']}: exit {done.returncode}: "
                     f"{done.stderr.decode(errors='replace')}")
        timings["hook"].append(took)
        timings[kind].append(took)
        # The floors, on the same tree, at the same moment. `--no-optional-locks`: a
        # status that rewrote the index would tell a watcher the index changed.
        timings["status"].append(timed(["git", "--no-optional-locks", "-c", "core.untrackedCache=false",
                                        "status", "--porcelain"])[0])
        timings["rev_parse"].append(timed(["git", "rev-parse", "HEAD"])[0])


def edit(rel, stamp):
    path = os.path.join(work, rel)
    with open(path, "rb") as f:
        data = f.read()
    # Replace one line in the middle, as an edit does, or append to a tiny file.
    lines = data.split(b"\n")
    at = len(lines) // 2
    lines[at] = f"// edited by the agent, {stamp}".encode()
    with open(path, "wb") as f:
        f.write(b"\n".join(lines))


tool_ids = 0
prompts = 0
for call in range(calls):
    if call % prompt_every == 0:
        if call:
            send({"hook_event_name": "Stop", "stop_hook_active": False}, "hook_prompt")
        prompts += 1
        send({"hook_event_name": "UserPromptSubmit", "prompt": f"step {prompts}: change a few files"}, "hook_prompt")
    tool_ids += 1
    use_id = f"toolu_{label}_{tool_ids:03}"
    count = rng.choice([1, 1, 2, 3])
    stamp = f"{label} {call} {time.time_ns()}"
    if count == 1 and rng.random() < 0.2:
        rel = f"agent_{label}/new_{call}.txt"
        name, tool_input = "Write", {"file_path": os.path.join(work, rel), "content": stamp + "\n"}
        send({"hook_event_name": "PreToolUse", "tool_name": name, "tool_use_id": use_id, "tool_input": tool_input}, "hook_tool")
        os.makedirs(os.path.join(work, os.path.dirname(rel)), exist_ok=True)
        with open(os.path.join(work, rel), "w") as f:
            f.write(stamp + "\n")
    else:
        files = rng.sample(candidates, count)
        if count == 1:
            name = "Edit"
            tool_input = {"file_path": os.path.join(work, files[0]), "old_string": "x", "new_string": stamp}
        else:
            name = "Bash"
            tool_input = {"command": "sed -i ... " + " ".join(shlex.quote(f) for f in files)}
        send({"hook_event_name": "PreToolUse", "tool_name": name, "tool_use_id": use_id, "tool_input": tool_input}, "hook_tool")
        for rel in files:
            edit(rel, stamp)
    send({"hook_event_name": "PostToolUse", "tool_name": name, "tool_use_id": use_id,
          "tool_input": tool_input, "tool_response": {}}, "hook_tool")
send({"hook_event_name": "Stop", "stop_hook_active": False}, "hook_prompt")


def q(values, p):
    return statistics.quantiles(values, n=100, method="inclusive")[p - 1] if len(values) > 1 else values[0]


summary = {k: {"n": len(v), "p50": q(v, 50), "p90": q(v, 90)} for k, v in timings.items() if v}
summary["not_hooked"] = not_hooked
json.dump({"label": label, "summary": summary, "raw": timings}, open(out, "w"))
print(f"{label}: {len(timings['hook'])} hook runs, median {summary['hook']['p50'] * 1e3:.1f} ms "
      f"(p90 {summary['hook']['p90'] * 1e3:.1f}); git status {summary['status']['p50'] * 1e3:.1f} ms, "
      f"rev-parse {summary['rev_parse']['p50'] * 1e3:.1f} ms; events without our hook: {not_hooked}",
      file=sys.stderr)
