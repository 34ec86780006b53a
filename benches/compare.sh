#!/usr/bin/env bash
# Compares git-checkpoint with the shadow-git-repository approach (a separate git dir
# whose work tree is the project, `git add -A && git commit`, as Roo-Code and Cline do),
# and with restic when it is installed, on one tree, in one run, with medians from
# hyperfine. Prints a Markdown table of times, ratios and store sizes (the disk space
# each store occupies, as `du` counts it; a redb file is longer than the space it uses).
#
# Usage:
#   benches/compare.sh <dir>                 copy the files git sees in <dir> and measure
#   benches/compare.sh --synthetic <files>   measure a generated tree of that many files
# Options (environment): RUNS (default 10), BIN (default target/release/git-checkpoint).
# Needs hyperfine and python3; installs hyperfine with apt-get when missing.
set -euo pipefail

source "$(dirname "$0")/common.sh"
runs=${RUNS:-10}

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
work=$scratch/work
mkdir -p "$work"

if [ "${1:-}" = "--synthetic" ]; then
  files=${2:?number of files}
  python3 "$here/benches/synthetic_tree.py" "$work" "$files"
  label="synthetic tree"
else
  src=$(cd "${1:?directory}" && pwd)
  if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    (cd "$src" && git ls-files -z -c -o --exclude-standard | xargs -0 cp -a --parents -t "$work" 2>/dev/null || true)
  else
    cp -a "$src/." "$work/"
  fi
  label=$(basename "$src")
fi

git -C "$work" init -q -b main
# The regular files git sees (symlinks, including links to directories, left out), for
# the `cat` floor and the size.
(cd "$work" && git ls-files -z -o --exclude-standard) | python3 -c '
import os, sys
root, names = sys.argv[1], sys.stdin.buffer.read().split(b"\0")
keep = [n for n in names if n and os.path.isfile(os.path.join(root.encode(), n))
        and not os.path.islink(os.path.join(root.encode(), n))]
sys.stdout.buffer.write(b"\0".join(os.path.join(root.encode(), n) for n in keep))
' "$work" > "$scratch/regular"
nfiles=$(python3 -c 'import sys; d = open(sys.argv[1], "rb").read(); print(len(d.split(b"\0")) if d else 0)' "$scratch/regular")
nbytes=$(xargs -0 -a "$scratch/regular" cat | wc -c)
echo "tree: $label, $nfiles files, $((nbytes / 1000000)) MB; $runs runs each" >&2

shadow=$scratch/shadow.git
export GIT_CONFIG_NOSYSTEM=1 HOME=$scratch
git config --global user.email bench@example.invalid
git config --global user.name bench
# A background auto-gc would race the resets between runs and skew the timings.
git config --global gc.auto 0
sg="git --git-dir=$shadow --work-tree=$work"
gc="$bin -C $work -q"
export RESTIC_PASSWORD=bench RESTIC_REPOSITORY=$scratch/restic
# restic backs up the worktree's files, as a save does: not `.git`, which holds our store.
restic_backup="restic backup -q --exclude $work/.git $work"

# A deterministic list of files to edit and delete, and fresh content for every run.
git -C "$work" ls-files -o --exclude-standard | awk 'NR % 7 == 3 && n++ < 15' > "$scratch/victims"
cat > "$scratch/mutate.sh" <<SH
#!/usr/bin/env bash
# 10 edits, 5 adds, 5 deletes, with content that differs on every call.
cd "$work"
stamp=\$(date +%s%N)
for f in \$(head -10 "$scratch/victims"); do echo "edit \$stamp" >> "\$f"; done
for i in 1 2 3 4 5; do echo "added \$stamp \$i" > "added_\$i.txt"; done
for f in \$(tail -5 "$scratch/victims"); do rm -f "\$f"; done
SH
cat > "$scratch/empty.sh" <<SH
#!/usr/bin/env bash
find "$work" -mindepth 1 -maxdepth 1 ! -name .git -exec rm -rf {} +
SH
chmod +x "$scratch/mutate.sh" "$scratch/empty.sh"

results=$scratch/results
mkdir -p "$results"
measure() { # name, prepare, command...
  local name=$1 prepare=$2
  shift 2
  hyperfine --style none --runs "$runs" --warmup 1 --prepare "$prepare" \
    --export-json "$results/$name.json" "$@" >/dev/null
}

# First save.
measure first "sync" \
  -n "git-checkpoint" "rm -rf $work/.git/checkpoint; $gc save" \
  -n "shadow git" "rm -rf $shadow; git init -q --bare $shadow; $sg config core.bare false; $sg add -A && $sg commit -qm first" \
  -n "cat every file" "xargs -0 -a $scratch/regular cat > /dev/null"
if command -v restic >/dev/null; then
  measure first-restic "rm -rf $scratch/restic; restic init -q" \
    -n "restic" "$restic_backup"
fi
# Name the base states for the later resets.
rm -rf "$work/.git/checkpoint" "$shadow"
$gc save -m base
git init -q --bare "$shadow"
$sg config core.bare false
$sg add -A && $sg commit -qm base && $sg tag base
base_id=$($bin -C "$work" log --json -n 1 | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')
# Puts the worktree back to the base checkpoint and the shadow repo's base commit.
reset_base="$gc restore $base_id --no-save; $sg reset -q --hard base; $sg clean -qfd"
store_first=$(du -s -B1 "$work/.git/checkpoint" | cut -f1)
shadow_loose=$(du -s -B1 "$shadow" | cut -f1)
git --git-dir="$shadow" gc -q
shadow_packed=$(du -s -B1 "$shadow" | cut -f1)
restic_size=""
if command -v restic >/dev/null; then
  rm -rf "$scratch/restic"; restic init -q; $restic_backup >/dev/null
  restic_size=$(du -s -B1 "$scratch/restic" | cut -f1)
fi

# Saves with nothing changed. The floor is `git status` of the shadow repository, where
# every file is tracked, so it lstat()s them all as a save must.
measure unchanged "true" \
  -n "git-checkpoint" "$gc save" \
  -n "shadow git" "$sg add -A && ($sg diff --cached --quiet || $sg commit -qm x)" \
  -n "git status" "$sg -c core.untrackedCache=false status --porcelain"
if command -v restic >/dev/null; then
  measure unchanged-restic "true" -n "restic" "$restic_backup"
fi

# Saves after 10 edits, 5 adds, 5 deletes.
measure edits "$reset_base; $scratch/mutate.sh" \
  -n "git-checkpoint" "$gc save" \
  -n "shadow git" "$sg add -A && $sg commit -qm step" \
  -n "git status" "$sg -c core.untrackedCache=false status --porcelain"

# Restoring those 20 files.
measure restore20 "$reset_base; $scratch/mutate.sh" \
  -n "git-checkpoint" "$gc restore $base_id --no-save" \
  -n "shadow git" "$sg reset -q --hard base && $sg clean -qfd"

# Full restore into an emptied worktree.
measure full "$scratch/empty.sh; sync" \
  -n "git-checkpoint" "$gc restore $base_id --no-save" \
  -n "shadow git" "$sg reset -q --hard base" 
# The worktree's files only: `.git` holds the store, which a restore does not copy.
# A restore ends with a filesystem sync, which `cp -a` does not do: `cp -a` followed by
# `sync -f` (syncfs of the copy's file system) is the durable floor it is held to.
copy_all="find $work -mindepth 1 -maxdepth 1 ! -name .git -exec cp -a -t $scratch/copy {} +"
measure full-cp "rm -rf $scratch/copy; mkdir $scratch/copy; sync" \
  -n "cp -a" "$copy_all" \
  -n "cp -a + sync -f" "$copy_all && sync -f $scratch/copy"

# The same saves with a watcher running (`watch --daemon`): nothing changed, and the
# 10 edits, 5 adds, 5 deletes on top of the last save (no restore in between, which
# would make the next save walk). The first save after the watcher starts walks and
# records the token the measured saves ask about.
# (Builds without `watch` leave these rows empty.)
if $bin watch --help >/dev/null 2>&1; then
  $gc restore "$base_id" --no-save
  $gc watch --daemon
  trap '$gc watch --stop >/dev/null 2>&1 || true; rm -rf "$scratch"' EXIT
  "$scratch/mutate.sh"; $gc save
  measure unchanged-watched "true" \
    -n "git-checkpoint" "$gc save" \
    -n "git status" "$sg -c core.untrackedCache=false status --porcelain"
  measure edits-watched "$scratch/mutate.sh" \
    -n "git-checkpoint" "$gc save" \
    -n "git status" "$sg -c core.untrackedCache=false status --porcelain"
  $gc watch --stop
fi

python3 - "$results" "$store_first" "$shadow_loose" "$shadow_packed" "$restic_size" <<'PY'
import json, os, sys
results, store, loose, packed, restic = sys.argv[1:6]
def med(name):
    path = os.path.join(results, name + ".json")
    if not os.path.exists(path):
        return {}
    return {r["command"]: r["median"] for r in json.load(open(path))["results"]}
t = {k: med(k) for k in ["first", "first-restic", "unchanged", "unchanged-restic", "edits", "restore20", "full", "full-cp", "unchanged-watched", "edits-watched"]}
def f(x): return "—" if x is None else f"{x*1000:.1f} ms" if x < 1 else f"{x:.2f} s"
def ratio(a, b): return "—" if a is None or b is None else f"{a/b:.2f}×"
g = lambda k: t[k].get("git-checkpoint")
s = lambda k: t[k].get("shadow git")
print("| operation | git-checkpoint | shadow git | ratio | restic | floor | ratio to floor |")
print("|---|---|---|---|---|---|---|")
print(f"| first save | {f(g('first'))} | {f(s('first'))} | {ratio(g('first'), s('first'))} | {f(t['first-restic'].get('restic'))} | cat: {f(t['first'].get('cat every file'))} | {ratio(g('first'), t['first'].get('cat every file'))} |")
print(f"| save, nothing changed | {f(g('unchanged'))} | {f(s('unchanged'))} | {ratio(g('unchanged'), s('unchanged'))} | {f(t['unchanged-restic'].get('restic'))} | git status: {f(t['unchanged'].get('git status'))} | {ratio(g('unchanged'), t['unchanged'].get('git status'))} |")
print(f"| save after 10 edits, 5 adds, 5 deletes | {f(g('edits'))} | {f(s('edits'))} | {ratio(g('edits'), s('edits'))} | | git status: {f(t['edits'].get('git status'))} | {ratio(g('edits'), t['edits'].get('git status'))} |")
print(f"| save, nothing changed, watcher running | {f(g('unchanged-watched'))} | | | | git status: {f(t['unchanged-watched'].get('git status'))} | {ratio(g('unchanged-watched'), t['unchanged-watched'].get('git status'))} |")
print(f"| save after 10 edits, 5 adds, 5 deletes, watcher running | {f(g('edits-watched'))} | | | | git status: {f(t['edits-watched'].get('git status'))} | {ratio(g('edits-watched'), t['edits-watched'].get('git status'))} |")
print(f"| restore those 20 files | {f(g('restore20'))} | {f(s('restore20'))} | {ratio(g('restore20'), s('restore20'))} | | | |")
print(f"| full restore into an emptied tree | {f(g('full'))} | {f(s('full'))} | {ratio(g('full'), s('full'))} | | cp -a: {f(t['full-cp'].get('cp -a'))} | {ratio(g('full'), t['full-cp'].get('cp -a'))} |")
durable = t['full-cp'].get('cp -a + sync -f')
print(f"| full restore, against the durable floor | | | | | cp -a + sync -f: {f(durable)} | {ratio(g('full'), durable)} |")
mib = lambda b: f"{int(b)/1048576:.1f} MiB" if b else "—"
print(f"| store size after the first save | {mib(store)} | {mib(loose)} loose, {mib(packed)} packed | {ratio(int(store), int(packed))} of packed | {mib(restic)} | | |")
PY
