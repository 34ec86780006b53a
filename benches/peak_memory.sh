#!/usr/bin/env bash
# What a save holds per file: the peak resident memory (`/usr/bin/time -f %M`) of a first
# save, a save with nothing changed and a watched save after a one-line edit, on trees of
# small files (benches/synthetic_tree_fast.py --small: the shape of the 1M-file tree in a
# tenth of its disk, every file tracked in git's index), for one build or several measured
# in turn on the same trees, and the growth per file between the first and the last size.
#
# Usage: benches/peak_memory.sh [files ...]      (default: 100000 300000)
# Options (environment): BINS (default target/release/git-checkpoint; several, space
# separated, are measured alternately), TREES (default $TMPDIR/peak-memory: each tree is
# kept there as small-<files> and measured again on the next run, its store removed first),
# RUNS (default 1: rounds over the builds).
#
# Disk: about 1.6 KB a file (the files' blocks, git's index, the store): 0.5 GB at 300,000.
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(100000 300000)
read -r -a bins <<<"${BINS:-$here/target/release/git-checkpoint}"
trees=${TREES:-${TMPDIR:-/tmp}/peak-memory}
runs=${RUNS:-1}
[ -x /usr/bin/time ] || { echo "needs /usr/bin/time (Debian package time)" >&2; exit 1; }
mkdir -p "$trees"
export HOME=$trees/home GIT_CONFIG_NOSYSTEM=1
mkdir -p "$HOME"
git config --global user.email bench@example.invalid
git config --global user.name bench

# A tree of $2 small files at $1, every file tracked and committed (info-only: git
# writes no blobs), made once.
make_tree() {
  [ -d "$1/.git" ] && return
  python3 "$here/benches/synthetic_tree_fast.py" "$1" "$2" --small
  (cd "$1" && git init -q -b main &&
    git ls-files -z -o | git update-index -z --add --info-only --stdin &&
    git update-ref HEAD "$(git commit-tree -m tree "$(git write-tree --missing-ok)")")
}

# The peak in KiB of `$bin $@`.
peak() { { /usr/bin/time -f %M "$@" >/dev/null; } 2>&1 | tail -1; }

# Prints "first unchanged watched" in KiB for build $1 on tree $2.
measure() {
  local bin=$1 t=$2 victim
  "$bin" -C "$t" watch --stop >/dev/null 2>&1 || true
  rm -rf "$t/.git/checkpoint"
  sync
  local first unchanged watched
  first=$(peak "$bin" -C "$t" -q save -m base)
  unchanged=$(peak "$bin" -C "$t" -q save)
  victim=$(cd "$t" && find d00 -type f -print -quit)
  "$bin" -C "$t" watch --daemon >/dev/null
  echo "x $(date +%s%N)" >>"$t/$victim"
  "$bin" -C "$t" -q save >/dev/null
  echo "y $(date +%s%N)" >>"$t/$victim"
  watched=$(peak "$bin" -C "$t" -q save)
  "$bin" -C "$t" watch --stop >/dev/null 2>&1 || true
  echo "$first $unchanged $watched"
}

declare -A at
for n in "${sizes[@]}"; do make_tree "$trees/small-$n" "$n"; done
echo "| files | build | first save | nothing changed | watched save |"
echo "|---|---|---|---|---|"
for _ in $(seq "$runs"); do
  for n in "${sizes[@]}"; do
    for bin in "${bins[@]}"; do
      read -r f u w < <(measure "$bin" "$trees/small-$n")
      at[$bin,$n]="$f $u $w"
      echo "| $n | $bin | $((f / 1024)) MiB | $((u / 1024)) MiB | $((w / 1024)) MiB |"
    done
  done
done
if [ ${#sizes[@]} -gt 1 ]; then
  lo=${sizes[0]} hi=${sizes[-1]}
  for bin in "${bins[@]}"; do
    read -r f0 u0 w0 <<<"${at[$bin,$lo]}"
    read -r f1 u1 w1 <<<"${at[$bin,$hi]}"
    per() { echo $((($2 - $1) * 1024 / (hi - lo))); }
    echo "$bin: bytes a file more from $lo to $hi files:" \
      "first $(per "$f0" "$f1"), nothing changed $(per "$u0" "$u1"), watched $(per "$w0" "$w1")"
  done
fi
