#!/usr/bin/env bash
# Retention on a real source tree: 500 checkpoints of a copy of a Python standard
# library (lib/python3.x without site-packages and __pycache__), 5 files edited between
# saves, one save every 20 minutes of synthetic time (GIT_CHECKPOINT_NOW). Measures the
# cost checkpoint.gc.* adds to a save that does not exceed the policy, then
# `gc --keep 10`: the time it takes and the bytes it gives back.
#
# Usage: benches/gc-500.sh <python-lib-dir> [work-dir]
# Builds the release binary with the test-hooks feature (for GIT_CHECKPOINT_NOW).
set -euo pipefail

src=${1:?usage: benches/gc-500.sh <python-lib-dir> [work-dir]}
work=${2:-$(mktemp -d)}
bin=$(cd "$(dirname "$0")/.." && pwd)/target/release/git-checkpoint
(cd "$(dirname "$0")/.." && cargo build --release --quiet --features test-hooks)
export TZ=UTC GIT_CONFIG_NOSYSTEM=1 HOME="$work/home"
mkdir -p "$HOME" "$work/tree"
cd "$work/tree"
(cd "$src" && tar --exclude=site-packages --exclude=__pycache__ -cf - .) | tar -xf -
git init -q -b main
mapfile -t files < <(find . -path ./.git -prune -o -type f -name '*.py' -print | sort)
sleep 2 # let the copy settle past the racy-git window, as a real tree would be

seconds() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

start=$(date -u -d 2026-01-01T00:00:00Z +%s)
t0=$(date +%s.%N)
for i in $(seq 0 499); do
  for k in 0 1 2 3 4; do
    f=${files[$(( (i * 7919 + k * 104729) % ${#files[@]} ))]}
    printf '# edit %d.%d\n' "$i" "$k" >> "$f"
  done
  GIT_CHECKPOINT_NOW=$(date -u -d "@$(( start + i * 1200 ))" +%Y-%m-%dT%H:%M:%SZ) \
    "$bin" save -q -m "step $i"
done
echo "500 saves: $(seconds "$t0" "$(date +%s.%N)") s"

echo "--- save cost of checkpoint.gc.* when not exceeded (20 saves each, one edit each)"
for config in none keep keepWithin; do
  case $config in
    keep) git config checkpoint.gc.keep 100000 ;;
    keepWithin) git config --unset checkpoint.gc.keep; git config checkpoint.gc.keepWithin 1y ;;
  esac
  s0=$(date +%s.%N)
  for i in $(seq 1 20); do
    printf '# bench %s %d\n' "$config" "$i" >> "${files[0]}"
    "$bin" save -q
  done
  awk -v a="$s0" -v b="$(date +%s.%N)" -v c="$config" \
    'BEGIN { printf "%s: %.1f ms per save\n", c, (b - a) * 50 }'
done
git config --unset checkpoint.gc.keepWithin

echo "--- before gc"
# Whole output to a file first: `head` closing the pipe early would fail the script.
"$bin" stats > "$work/stats.txt"
head -6 "$work/stats.txt"
echo "--- gc --keep 10 --dry-run"
/usr/bin/time -f "%e s, %M KiB max RSS" "$bin" gc --keep 10 --dry-run | tail -2
echo "--- gc --keep 10"
/usr/bin/time -f "%e s, %M KiB max RSS" "$bin" gc --keep 10 | tail -3
echo "--- verify --read-data"
/usr/bin/time -f "%e s" "$bin" verify --read-data

echo "--- saves that go one over checkpoint.gc.keep=10"
git config checkpoint.gc.keep 10
for i in 1 2 3; do
  printf '# over %d\n' "$i" >> "${files[1]}"
  /usr/bin/time -f "%e s" "$bin" save
done
