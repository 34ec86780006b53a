#!/usr/bin/env bash
# A full restore into an emptied worktree against its durable floor, `cp -a` of the same
# files followed by `sync -f` (syncfs of the copy's filesystem), in one run, pair by pair:
# each run times every command in turn, on an idle filesystem and right after another
# process wrote DIRTY_MB of data to the same filesystem without syncing it (what a
# restore's barrier may have to wait for). Prints each median and the median of the
# ratios taken run by run, to the floor measured in the same run and case.
#
# Usage:
#   benches/restore.sh <dir>     copy the files git sees in <dir> and measure
# Options (environment): RUNS (default 10), BIN (default target/release/git-checkpoint),
# BEFORE (a second build to measure beside BIN, e.g. the main branch's), DIRTY_MB
# (default 60), TMPDIR (where the copies go: the filesystem measured).
set -euo pipefail

source "$(dirname "$0")/common.sh"
runs=${RUNS:-10}
dirty_mb=${DIRTY_MB:-60}

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
work=$scratch/work
mkdir -p "$work"
src=$(cd "${1:?directory}" && pwd)
if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  (cd "$src" && git ls-files -z -c -o --exclude-standard | xargs -0 cp -a --parents -t "$work" 2>/dev/null || true)
else
  cp -a "$src/." "$work/"
fi
# The files alone, the source of the copies.
cp -a "$work" "$scratch/files"

git -C "$work" init -q -b main
export GIT_CONFIG_NOSYSTEM=1 HOME=$scratch
"$bin" -C "$work" -q save -m base
base_id=$("$bin" -C "$work" log --json -n 1 | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')
echo "tree: $(basename "$src"), $(find "$scratch/files" -type f | wc -l) files, $(du -sm "$scratch/files" | cut -f1) MB; $runs runs; other process's dirty data: $dirty_mb MB" >&2

python3 - "$scratch" "$runs" "$dirty_mb" "$base_id" "$bin" "${BEFORE:-}" <<'PY'
import os, shutil, statistics, subprocess, sys, time

scratch, runs, dirty_mb, base_id, after, before = sys.argv[1:]
runs, dirty_mb = int(runs), int(dirty_mb)
work, files, copy = (os.path.join(scratch, n) for n in ("work", "files", "copy"))
other = os.path.join(scratch, "other-process-data")

def empty_worktree():
    for name in os.listdir(work):
        if name != ".git":
            path = os.path.join(work, name)
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            else:
                os.remove(path)

def empty_copy():
    shutil.rmtree(copy, ignore_errors=True)
    os.mkdir(copy)

def restore(binary):
    return [binary, "-C", work, "-q", "restore", base_id, "--no-save"]

entries = sorted(os.listdir(files))
copy_cmd = ["sh", "-c", 'cp -a -t "$0" "$@" && sync -f "$0"', copy] + [os.path.join(files, e) for e in entries]
commands = [("git-checkpoint", empty_worktree, restore(after))]
if before:
    commands.append(("before", empty_worktree, restore(before)))
commands.append(("cp -a + sync -f", empty_copy, copy_cmd))

times = {}
for run in range(runs + 1):  # the first run warms up and is not counted
    for dirty in (False, True):
        for name, prepare, cmd in commands:
            prepare()
            if os.path.exists(other):
                os.remove(other)
            os.sync()
            if dirty:
                # Another process's writes, left for the kernel to flush when it will.
                subprocess.run(["dd", "if=/dev/urandom", f"of={other}", "bs=1M",
                                f"count={dirty_mb}", "status=none"], check=True)
            start = time.perf_counter()
            subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            took = time.perf_counter() - start
            if run > 0:
                times.setdefault((name, dirty), []).append(took)

def ms(s):
    return f"{s * 1e3:.1f} ms"

floor = "cp -a + sync -f"
print(f"| command | idle filesystem | ratio to {floor} | {dirty_mb} MB of another process's dirty data | ratio to {floor} |")
print("|---|---|---|---|---|")
for name, _, _ in commands:
    cells = []
    for dirty in (False, True):
        mine, base = times[(name, dirty)], times[(floor, dirty)]
        ratio = statistics.median(a / b for a, b in zip(mine, base))
        cells += [ms(statistics.median(mine)), f"{ratio:.2f}x"]
    print(f"| {name} | " + " | ".join(cells) + " |")
PY
