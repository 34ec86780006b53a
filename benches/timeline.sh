#!/usr/bin/env bash
# Times the timeline commands on a generated history: 200 checkpoints on 5 live
# branches plus lines left behind by restores, in a worktree of 400 files (1.6 MB).
#
#   benches/timeline.sh            # release build, median of 10 runs per command
#   benches/timeline.sh DIR        # the same, keeping the generated repository in DIR
#
# Prints the history's shape, the first 30 lines of `log --graph --all`, and a table of
# median wall-clock times. Uses only bash, git and coreutils.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
bin="${CARGO_TARGET_DIR:-$PWD/target}/release/git-checkpoint"

if [ $# -gt 0 ]; then
  work=$1
  mkdir -p "$work"
  work=$(cd "$work" && pwd)
else
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
fi
export HOME="$work/home" GIT_CONFIG_NOSYSTEM=1
unset GIT_PAGER PAGER
mkdir -p "$HOME" "$work/repo"
cd "$work/repo"
git init -q -b main

# 20 directories of 20 files, about 4 KiB of source-like text each.
for d in $(seq -w 1 20); do
  mkdir -p "src/mod$d"
  for f in $(seq -w 1 20); do
    for l in $(seq 1 100); do
      printf '    let value_%s_%s = compute(input_%s, %s);\n' "$d" "$l" "$f" "$((l * 31))"
    done >"src/mod$d/file$f.rs"
  done
done

n=0
ck() { "$bin" -q "$@"; }
# One agent step: edit two files, sometimes add or delete one, then save.
step() {
  n=$((n + 1))
  local d=$(((n * 7) % 20 + 1)) f=$(((n * 13) % 20 + 1))
  printf -v d '%02d' "$d"
  printf -v f '%02d' "$f"
  local file="src/mod$d/file$f.rs"
  [ -f "$file" ] || seq 1 100 >"$file"
  sed -i "$(((n % 90) + 5))s/.*/    let step_$n = edited($n);/" "$file"
  echo "// step $n" >>"src/mod$d/file01.rs"
  if ((n % 10 == 0)); then echo "new file $n" >"src/mod$d/added$n.rs"; fi
  if ((n % 15 == 0)); then rm -f "src/mod$d/file20.rs"; fi
  ck save -m "step $n on $1" --meta step="$n"
}
steps() { for _ in $(seq 1 "$2"); do step "$1"; done; }

start=$(date +%s%N)
steps main 60
ck fork main~45 -b fork-1
steps fork-1 35
ck switch main
steps main 20
ck fork fork-1~20 -b fork-2
steps fork-2 30
ck switch main
ck restore main~5            # the last 5 on main become an unnamed line
steps main 15
ck fork main~30 -b fork-3
steps fork-3 20
ck switch fork-1
steps fork-1 10
ck fork main~2 -b fork-4
steps fork-4 10
generated=$((($(date +%s%N) - start) / 1000000))

total=$("$bin" log --all --json | grep -c '"short_id"')
echo "history: $total checkpoints; branches: $("$bin" branch --json | grep '"name"' | cut -d'"' -f4 | tr '\n' ' ')"
echo "generated in ${generated} ms ($n saves, 4 forks, 3 switches, 1 restore)"
echo
echo "first 30 lines of: git checkpoint log --graph --all"
"$bin" log --graph --all >"$work/graph.txt"
head -n 30 "$work/graph.txt"
echo "($(wc -l <"$work/graph.txt") lines in all)"
echo

# Median of 10 runs, in milliseconds.
median_ms() {
  local times=()
  for _ in $(seq 1 10); do
    local t0 t1
    t0=$(date +%s%N)
    "$@" >/dev/null
    t1=$(date +%s%N)
    times+=($(((t1 - t0) / 1000)))
  done
  printf '%s\n' "${times[@]}" | sort -n | sed -n 5p | awk '{ printf "%.1f", $1 / 1000 }'
}

oldest=$("$bin" log --all --json | grep '"id"' | tail -n 1 | cut -d'"' -f4)
row() {
  local label=$1
  shift
  printf '| %s | `git checkpoint %s` | %s ms |\n' "$label" "$*" "$(median_ms "$bin" "$@")"
}
echo "| case | command | median |"
echo "|---|---|---|"
row "current line" log
row "every checkpoint" log --all
row "every checkpoint, graph" log --graph --all
row "clean worktree" status
sed -i '1s/.*/edited/' src/mod01/file02.rs src/mod07/file11.rs src/mod13/file05.rs
row "3 files edited" status
row "3 files edited" diff
row "oldest to newest" diff "$oldest" @ --stat
row "newest, with its patch" show @
