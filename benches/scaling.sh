#!/usr/bin/env bash
# How git-checkpoint's costs grow with the tree: generated source trees of several sizes
# (benches/synthetic_tree.py), each operation timed with hyperfine (medians) beside
# `git status` and `cat` of every file on the same tree as floors; saves after edits with
# and without a watcher; peak memory (`/usr/bin/time`, maximum resident set) of the first
# save, a save with nothing changed and a watched save after a one-line edit. Prints two
# Markdown tables (times; store and memory); a step that grows linearly keeps its
# "per 1k files" column flat. Each size's row is also printed to stderr when it is done.
#
# Usage: benches/scaling.sh [files ...]      (default: 10000 100000 300000; 1000000 on request)
# Options (environment): RUNS (default 3), BIN (default target/release/git-checkpoint),
# TMPDIR (where the trees go), NICE (default 10: measured commands run under `nice`),
# MEMORY_ONLY=1 (no timings: the store and the three peak memory figures, one save each),
# GENERATOR (default benches/synthetic_tree.py; benches/synthetic_tree_fast.py writes a tree
# of the same shape in minutes rather than hours, for the 300k and 1M rows), TREES=dir (keep
# each generated tree, committed, as dir/tree-<files> and measure it again on the next run:
# its store is removed first; the edits of the earlier runs stay, a few files in 300,000).
#
# Disk: a generated file averages 10.8 KB, so a size needs about 18 KB a file while it is
# measured (the files, their blocks, git's index and trees, our store): 5.4 GB at 300,000
# files, 18 GB at 1,000,000. A size that does not fit in the free space of TMPDIR's file
# system, with 2 GB to spare, is skipped with a message. Each tree is removed once measured.
set -euo pipefail

source "$(dirname "$0")/common.sh"
runs=${RUNS:-3}
nice=${NICE:-10}
memory_only=${MEMORY_ONLY:-}
[ -x /usr/bin/time ] || { apt-get update -qq && apt-get install -y -qq time; }
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(10000 100000 300000)

scratch=$(mktemp -d)
generator=${GENERATOR:-$here/benches/synthetic_tree.py}
keep=${TREES:-}
work=
cleanup() {
  [ -n "$work" ] && [ -d "$work/.git" ] && "$bin" -C "$work" watch --stop >/dev/null 2>&1
  rm -rf "$scratch"
}
trap cleanup EXIT
export GIT_CONFIG_NOSYSTEM=1 HOME=$scratch
git config --global user.email bench@example.invalid
git config --global user.name bench
git config --global gc.auto 0

median() { # hyperfine json -> median seconds of the first command
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["results"][0]["median"])' "$1"
}
peak_kib() { # command... -> its maximum resident set in KiB
  nice -n "$nice" /usr/bin/time -f %M "$@" 2>&1 >/dev/null | tail -1
}

rows=$scratch/rows
: > "$rows"
for files in "${sizes[@]}"; do
  need=$((files * 18 * 1024 + 2 * 1024 * 1024 * 1024))
  free=$(df --output=avail -B1 "$scratch" | tail -1)
  if [ "$free" -lt "$need" ]; then
    echo "skipping $files files: they need about $((need >> 30)) GiB on $(df --output=target "$scratch" | tail -1), $((free >> 30)) GiB free" >&2
    continue
  fi
  echo "$files files: about $((need >> 30)) GiB needed, $((free >> 30)) GiB free" >&2
  work=${keep:-$scratch}/tree-$files
  if [ -n "$keep" ] && [ -e "$work/.git/HEAD" ] && git -C "$work" rev-parse -q --verify HEAD >/dev/null; then
    echo "measuring the kept tree $work again" >&2
    "$bin" -C "$work" watch --stop >/dev/null 2>&1 || true
    rm -rf "$work/.git/checkpoint"
  else
    rm -rf "$work"
    mkdir -p "$work"
    python3 "$generator" "$work" "$files"
    git -C "$work" init -q -b main
    # Every file tracked and committed, so that `git status` lstat()s them all as a save
    # must. The blobs are hashed into the index but not written (`--info-only`): status
    # compares the index with HEAD's trees and never reads a blob, and that spares the
    # disk a second, compressed copy of the tree.
    (cd "$work" && git ls-files -z -o | git update-index -z --add --info-only --stdin)
    git -C "$work" update-ref HEAD "$(git -C "$work" commit-tree -m tree "$(git -C "$work" write-tree --missing-ok)")"
  fi
  find "$work" -path "$work/.git" -prune -o -type f -print0 > "$scratch/regular"
  mb=$(xargs -0 -a "$scratch/regular" cat | wc -c | awk '{printf "%.0f", $1 / 1e6}')
  gc="$bin -C $work -q"
  git -C "$work" ls-files | awk 'NR % 7 == 3 && n++ < 15' > "$scratch/victims"
  cat > "$scratch/mutate.sh" <<SH
#!/usr/bin/env bash
# 10 edits, 5 adds, 5 deletes, with content that differs on every call.
cd "$work"
stamp=\$(date +%s%N)
for f in \$(head -10 "$scratch/victims"); do echo "edit \$stamp" >> "\$f"; done
for i in 1 2 3 4 5; do echo "added \$stamp \$i" > "added_\$i.txt"; done
for f in \$(tail -5 "$scratch/victims"); do rm -f "\$f"; done
SH
  cat > "$scratch/one-line.sh" <<SH
#!/usr/bin/env bash
echo "edit \$(date +%s%N)" >> "$work/\$(head -1 "$scratch/victims")"
SH
  chmod +x "$scratch/mutate.sh" "$scratch/one-line.sh"
  # The whole-tree steps run once more as warm-up only on the smaller trees.
  heavy_warmup=$((files > 100000 ? 0 : 1))
  t() { # [hyperfine options] command -> median seconds (W: warm-up runs, default 1)
    hyperfine --style none --runs "$runs" --warmup "${W:-1}" --export-json "$scratch/t.json" "$@" >/dev/null
    median "$scratch/t.json"
  }
  n() { echo "nice -n $nice $*"; }

  first=0 cat_all=0 unchanged=0 status=0 edits=0 restore20=0 full=0
  [ -n "$memory_only" ] ||
    first=$(W=$heavy_warmup t --prepare "rm -rf $work/.git/checkpoint; sync" "$(n "$gc save")")
  [ -n "$memory_only" ] || cat_all=$(t "$(n "xargs -0 -a $scratch/regular cat")")
  rm -rf "$work/.git/checkpoint"
  peak_first=$(peak_kib $gc save -m base)
  base=$($bin -C "$work" log --json -n 1 | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')
  store=$(du -s -B1 "$work/.git/checkpoint" | cut -f1)
  peak_unchanged=$(peak_kib $gc save)
  if [ -z "$memory_only" ]; then
    unchanged=$(t "$(n "$gc save")")
    status=$(t "$(n "git -C $work -c core.untrackedCache=false status --porcelain")")
    edits=$(t --prepare "$gc restore $base --no-save; $scratch/mutate.sh" "$(n "$gc save")")
    restore20=$(t --prepare "$gc restore $base --no-save; $scratch/mutate.sh" "$(n "$gc restore $base --no-save")")
    full=$(W=$heavy_warmup t --prepare "$gc restore $base --no-save; find $work -mindepth 1 -maxdepth 1 ! -name .git -exec rm -rf {} +; sync" \
      "$(n "$gc restore $base --no-save")")
  fi

  # With a watcher: the first save after it starts walks and records what it vouches
  # for; the measured saves follow edits made on top of the last save (a restore in
  # between would make the next save walk). Builds without `watch` leave these empty.
  edits_watched=0 one_watched=0 peak_one_watched=0
  if $bin watch --help >/dev/null 2>&1; then
    $gc restore "$base" --no-save
    $gc watch --daemon
    "$scratch/mutate.sh"; $gc save
    if [ -z "$memory_only" ]; then
      edits_watched=$(t --prepare "$scratch/mutate.sh" "$(n "$gc save")")
      one_watched=$(t --prepare "$scratch/one-line.sh" "$(n "$gc save")")
    fi
    "$scratch/one-line.sh"
    peak_one_watched=$(peak_kib $gc save)
    $gc watch --stop >/dev/null
  fi
  row="$files $mb $first $cat_all $unchanged $status $edits $edits_watched $one_watched $restore20 $full $store $peak_first $peak_unchanged $peak_one_watched"
  echo "$row" >> "$rows"
  echo "row: $row" >&2
  [ -n "$keep" ] || rm -rf "$work"
  work=
done

python3 - "$rows" <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
def ms(s):
    s = float(s)
    return "—" if s == 0 else f"{s * 1e3:,.0f} ms" if s < 1 else f"{s:.2f} s" if s < 10 else f"{s:.1f} s"
def per_k(s, files): return "" if float(s) == 0 else f" ({float(s) * 1e3 / (int(files) / 1000):,.1f} ms)"
mib = lambda kib: "—" if int(kib) == 0 else f"{int(kib) / 1024:.0f} MiB"
print("| files | MB | first save (per 1k files) | `cat` | nothing changed (per 1k) | `git status` | 20 changes saved "
      "| 20 changes saved, watcher | one-line edit saved, watcher | 20 files restored | full restore (per 1k) |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for (files, mb, first, cat, unch, status, edits, edits_w, one_w, r20, full, *_rest) in rows:
    print(f"| {int(files):,} | {int(mb):,} | {ms(first)}{per_k(first, files)} | {ms(cat)} | {ms(unch)}{per_k(unch, files)} "
          f"| {ms(status)} | {ms(edits)} | {ms(edits_w)} | {ms(one_w)} | {ms(r20)} | {ms(full)}{per_k(full, files)} |")
print()
print("| files | store | peak memory: first save | nothing changed | one-line edit, watcher |")
print("|---|---|---|---|---|")
for (files, *_times, store, pf, pu, pw) in rows:
    print(f"| {int(files):,} | {int(store) / 2**20:,.0f} MiB | {mib(pf)} | {mib(pu)} | {mib(pw)} |")
PY
