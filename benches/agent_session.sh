#!/usr/bin/env bash
# What an agent's step costs: a Claude Code session replayed through the real hook
# (`hooks install claude`, then `git checkpoint hooks run claude` with the payloads Claude
# Code sends; benches/agent_session.py), 60 tool calls each after editing 1 to 3 files, a
# prompt every 5 calls, once without a watcher and once with `watch --daemon` running.
# `git status` and `git rev-parse HEAD` are timed on the same tree after every hook run.
# Prints a Markdown table: hook run median and p90, the floors, and the ratios the
# goals are stated in (watched median <= 10x rev-parse, p90 <= 2x median; unwatched
# median <= 1.0x git status).
#
# Usage:
#   benches/agent_session.sh <dir>                 copy the files git sees in <dir>
#   benches/agent_session.sh --synthetic <files>   a generated tree (benches/synthetic_tree.py)
# Options (environment): BIN (default target/release/git-checkpoint), CALLS (60),
# PROMPT_EVERY (5), SEED, NICE (default 10: the replay runs under `nice -n $NICE`),
# HOOK_CONFIG (space-separated key=value settings for the hook runs, e.g. the key that
# keeps a build from starting a watcher itself in the unwatched run), TMPDIR.
set -euo pipefail

source "$(dirname "$0")/common.sh"

scratch=$(mktemp -d)
cleanup() {
  [ -d "$scratch/work/.git" ] && "$bin" -C "$scratch/work" watch --stop >/dev/null 2>&1 || true
  rm -rf "$scratch"
}
trap cleanup EXIT
work=$scratch/work
mkdir -p "$work"

if [ "${1:-}" = "--synthetic" ]; then
  files=${2:?number of files}
  python3 "$here/benches/synthetic_tree.py" "$work" "$files"
  label="synthetic"
else
  src=$(cd "${1:?directory or --synthetic N}" && pwd)
  if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    (cd "$src" && git ls-files -z -c -o --exclude-standard | xargs -0 cp -a --parents -t "$work" 2>/dev/null || true)
  else
    cp -a "$src/." "$work/"
  fi
  label=$(basename "$src")
fi

export GIT_CONFIG_NOSYSTEM=1 HOME=$scratch
git config --global user.email bench@example.invalid
git config --global user.name bench
git config --global gc.auto 0
# `git checkpoint` in the hook command finds this binary.
mkdir -p "$scratch/bin"
ln -s "$bin" "$scratch/bin/git-checkpoint"
export PATH=$scratch/bin:$PATH

# The project as a user has it: every file committed, the hooks installed (install
# makes the first save, a one-off the session's hooks do not pay for).
git -C "$work" init -q -b main
git -C "$work" add -A
git -C "$work" commit -qm tree
(cd "$work" && git checkpoint hooks install claude >/dev/null)
nfiles=$(git -C "$work" ls-files | wc -l)
"$bin" -C "$work" -q save -m base
echo "tree: $label, $nfiles files; $bin" >&2

nice=${NICE:-10}
checkpoints() { "$bin" -C "$work" log --all --json | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))'; }
replay() { # label: replays the session, and checks that every hook run made its checkpoint
  local before after
  before=$(checkpoints)
  nice -n "$nice" python3 "$here/benches/agent_session.py" "$work" "$1" "$scratch/$1.json"
  after=$(checkpoints)
  python3 -c 'import json,sys; n = json.load(open(sys.argv[1]))["summary"]["hook"]["n"]; made = int(sys.argv[3]) - int(sys.argv[2]); sys.exit(None if made == n else f"{n} hook runs made {made} checkpoints")' \
    "$scratch/$1.json" "$before" "$after"
}
pidfile=$(git -C "$work" rev-parse --absolute-git-dir)/checkpoint/watch/pid

"$bin" -C "$work" watch --stop >/dev/null 2>&1 || true
replay unwatched
if [ -e "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
  echo "warning: a watcher was running after the unwatched replay (started by a hook?);" \
    "set HOOK_CONFIG to the key that turns that off" >&2
fi

"$bin" -C "$work" watch --daemon
# The first save after the watcher starts walks, to record what the watcher vouches for.
"$bin" -C "$work" -q save -m watched
replay watched
"$bin" -C "$work" watch --stop >/dev/null

python3 - "$scratch" "$label" "$nfiles" <<'PY'
import json, sys
scratch, label, nfiles = sys.argv[1:4]
u = json.load(open(f"{scratch}/unwatched.json"))["summary"]
w = json.load(open(f"{scratch}/watched.json"))["summary"]
ms = lambda s: f"{s * 1e3:.1f} ms"
# The floors of both runs together: the machine is the same, the tree nearly so.
raw = lambda k: json.load(open(f"{scratch}/unwatched.json"))["raw"][k] + json.load(open(f"{scratch}/watched.json"))["raw"][k]
import statistics
status = statistics.median(raw("status"))
rev = statistics.median(raw("rev_parse"))
print("| tree | hook, no watcher: median (p90) | hook, watcher running: median (p90) | `git status` | `git rev-parse HEAD` |"
      " watched / rev-parse (≤ 10) | watched p90 / median (≤ 2) | unwatched / `git status` (≤ 1.0) |")
print("|---|---|---|---|---|---|---|---|")
print(f"| {label}, {int(nfiles):,} files | {ms(u['hook']['p50'])} ({ms(u['hook']['p90'])}) "
      f"| {ms(w['hook']['p50'])} ({ms(w['hook']['p90'])}) | {ms(status)} | {ms(rev)} "
      f"| {w['hook']['p50'] / rev:.1f}× | {w['hook']['p90'] / w['hook']['p50']:.2f}× "
      f"| {u['hook']['p50'] / status:.2f}× |")
print()
print(f"{u['hook']['n']} hook runs a replay ({u['hook_tool']['n']} after tool calls, "
      f"{u['hook_prompt']['n']} on prompts); events with no hook of ours: {u['not_hooked']}. "
      f"Tool-call hooks alone: no watcher {ms(u['hook_tool']['p50'])}, "
      f"watcher {ms(w['hook_tool']['p50'])}; prompt hooks: {ms(u['hook_prompt']['p50'])}, "
      f"{ms(w['hook_prompt']['p50'])}.")
PY
