#!/usr/bin/env bash
# Times `log` on a long history: N checkpoints (10,000 unless given) of a worktree shaped
# like git's source tree at its root (500 files and 40 directories beside each other,
# 1,300 files in all), each save editing one file, as an agent's steps do.
#
#   benches/log_10k.sh DIR [N]    # builds the history in DIR once, then measures
#   BUILD_ONLY=1 benches/log_10k.sh DIR [N]    # only builds it
#
# The history is kept in DIR and reused by later runs (building it takes a few minutes).
# Prints hyperfine's table for the JSON list, the text list, the first screen of the
# text list through a pipe (`| head -n 40`), `-n 10` and the graph of every checkpoint.
set -euo pipefail
source "$(dirname "$0")/common.sh"
[ $# -ge 1 ] || { echo "usage: $0 DIR [N]" >&2; exit 2; }
n=${2:-10000}
mkdir -p "$1"
work=$(cd "$1" && pwd)
export HOME="$work/home" GIT_CONFIG_NOSYSTEM=1
unset GIT_PAGER PAGER
mkdir -p "$HOME"

if [ ! -f "$work/repo/.git/checkpoint/store.redb" ]; then
  rm -rf "$work/repo"
  mkdir -p "$work/repo"
  cd "$work/repo"
  git init -q -b main
  for f in $(seq 1 500); do
    for l in $(seq 1 20); do echo "root file $f line $l"; done >"file$f.c"
  done
  for d in $(seq 1 40); do
    mkdir -p "dir$d"
    for f in $(seq 1 20); do
      for l in $(seq 1 20); do echo "file $f of $d line $l"; done >"dir$d/file$f.c"
    done
  done
  start=$(date +%s)
  for i in $(seq 1 "$n"); do
    # Mostly files at the root (git's tree changes there most), one save in four deeper.
    if ((i % 4 == 0)); then
      echo "step $i" >>"dir$((i % 40 + 1))/file$((i % 20 + 1)).c"
    else
      echo "step $i" >>"file$((i % 500 + 1)).c"
    fi
    "$bin" -q save -m "step $i"
  done
  echo "built $n checkpoints in $(($(date +%s) - start)) s"
fi

# BUILD_ONLY=1: only build the history (benches/browse_first_screen.sh reuses it).
[ -z "${BUILD_ONLY:-}" ] || exit 0
cd "$work/repo"
echo "checkpoints: $("$bin" log --all --json | grep -c '"short_id"')"
hyperfine -N --warmup 2 --runs "${RUNS:-10}" \
  -n 'log --json' "$bin log --json" \
  -n 'log' "$bin log" \
  -n 'log -n 10' "$bin log -n 10" \
  -n 'log --graph --all' "$bin log --graph --all"
hyperfine --warmup 2 --runs "${RUNS:-10}" \
  -n 'log | head -n 40' "$bin log | head -n 40"
