#!/usr/bin/env bash
# How git-checkpoint's costs grow with the tree: generated source trees of several sizes
# (benches/synthetic_tree.py), each operation of benches/compare.sh timed with hyperfine
# (medians), beside `git status` and `cat` of every file on the same tree as floors, plus
# the peak memory of the first save. Prints a Markdown table; a step that grows linearly
# keeps its "per 1k files" column flat.
#
# Usage: benches/scaling.sh [files ...]      (default: 10000 100000 300000)
# Options (environment): RUNS (default 3), BIN (default target/release/git-checkpoint),
# TMPDIR (where the trees go; 300k files take about 2 GB).
set -euo pipefail

source "$(dirname "$0")/common.sh"
runs=${RUNS:-3}
[ -x /usr/bin/time ] || { apt-get update -qq && apt-get install -y -qq time; }
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(10000 100000 300000)

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
export GIT_CONFIG_NOSYSTEM=1 HOME=$scratch
git config --global user.email bench@example.invalid
git config --global user.name bench

median() { # hyperfine json -> median seconds of the first command
  python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["results"][0]["median"])' "$1"
}

rows=$scratch/rows
: > "$rows"
for files in "${sizes[@]}"; do
  work=$scratch/tree-$files
  mkdir -p "$work"
  python3 "$here/benches/synthetic_tree.py" "$work" "$files"
  git -C "$work" init -q -b main
  git -C "$work" add -A
  git -C "$work" commit -qm tree
  find "$work" -path "$work/.git" -prune -o -type f -print0 > "$scratch/regular"
  mb=$(xargs -0 -a "$scratch/regular" cat | wc -c | awk '{printf "%.0f", $1 / 1e6}')
  gc="$bin -C $work -q"
  git -C "$work" ls-files | awk 'NR % 7 == 3 && n++ < 15' > "$scratch/victims"
  cat > "$scratch/mutate.sh" <<SH
#!/usr/bin/env bash
cd "$work"
stamp=\$(date +%s%N)
for f in \$(head -10 "$scratch/victims"); do echo "edit \$stamp" >> "\$f"; done
for i in 1 2 3 4 5; do echo "added \$stamp \$i" > "added_\$i.txt"; done
for f in \$(tail -5 "$scratch/victims"); do rm -f "\$f"; done
SH
  chmod +x "$scratch/mutate.sh"
  t() { hyperfine --style none --runs "$runs" --warmup 1 --export-json "$scratch/t.json" "$@" >/dev/null; median "$scratch/t.json"; }

  first=$(t --prepare "rm -rf $work/.git/checkpoint; sync" "$gc save")
  cat_all=$(t "xargs -0 -a $scratch/regular cat")
  rm -rf "$work/.git/checkpoint"
  peak=$(/usr/bin/time -f %M $gc save -m base 2>&1 >/dev/null | tail -1)
  base=$($bin -C "$work" log --json -n 1 | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["id"])')
  unchanged=$(t "$gc save")
  status=$(t "git -C $work -c core.untrackedCache=false status --porcelain")
  edits=$(t --prepare "$gc restore $base --no-save; $scratch/mutate.sh" "$gc save")
  restore20=$(t --prepare "$gc restore $base --no-save; $scratch/mutate.sh" "$gc restore $base --no-save")
  full=$(t --prepare "$gc restore $base --no-save; find $work -mindepth 1 -maxdepth 1 ! -name .git -exec rm -rf {} +" \
    "$gc restore $base --no-save")
  store=$(du -s -B1 "$work/.git/checkpoint" | cut -f1)
  echo "$files $mb $first $cat_all $unchanged $status $edits $restore20 $full $store $peak" >> "$rows"
  rm -rf "$work"
done

python3 - "$rows" <<'PY'
import sys
rows = [l.split() for l in open(sys.argv[1]) if l.strip()]
def ms(s): return f"{float(s) * 1e3:,.0f} ms" if float(s) < 10 else f"{float(s):.1f} s"
def per_k(s, files): return f"{float(s) * 1e3 / (int(files) / 1000):.2f} ms"
print("| files | MB | first save (per 1k files) | `cat` | nothing changed (per 1k) | `git status` | 20 changes saved | 20 files restored | full restore (per 1k) | store | peak memory, first save |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for files, mb, first, cat, unch, status, edits, r20, full, store, peak in rows:
    print(f"| {int(files):,} | {mb} | {ms(first)} ({per_k(first, files)}) | {ms(cat)} | {ms(unch)} ({per_k(unch, files)}) "
          f"| {ms(status)} | {ms(edits)} | {ms(r20)} | {ms(full)} ({per_k(full, files)}) "
          f"| {int(store) / 2**20:.0f} MiB | {int(peak) / 1024:.0f} MiB |")
PY
