#!/usr/bin/env bash
# Times `browse`'s first screen on a long history: benches/log_10k.sh's (each save
# editing one file of a 1,300-file tree), REAL real saves (100 unless given), extended to
# N checkpoints (10,000 unless given) by examples/extend_history.rs, which writes records
# taking the real ones' trees in turn, with an agent session every 40 steps (10,000 real
# saves take hours on a loaded machine; the list's cost is in the records, not the trees).
# tmux runs a shell on a pseudo-terminal of 120 by 40; each run types
# `git-checkpoint browse`, presses Enter, and polls `tmux capture-pane` until the screen
# shows the list and the selected checkpoint's record (its `Date:` line); the time from
# the Enter to that screen is the run's. Prints every run and the median, then, as the
# peer, hyperfine's time for `log -n 20` on the same store.
#
#   benches/browse_first_screen.sh DIR [N]    # BIN=... measures another binary
#
# The history is kept in DIR and reused.
set -euo pipefail
source "$(dirname "$0")/common.sh"
[ $# -ge 1 ] || { echo "usage: $0 DIR [N]" >&2; exit 2; }
n=${2:-10000}
runs=${RUNS:-7}
mkdir -p "$1"
work=$(cd "$1" && pwd)
command -v tmux >/dev/null || { apt-get update -qq && apt-get install -y -qq tmux; }
BUILD_ONLY=1 BIN="$bin" "$here/benches/log_10k.sh" "$work" "${REAL:-100}"
export HOME="$work/home" GIT_CONFIG_NOSYSTEM=1
cd "$work/repo"
count() { "$bin" log --all --json | grep -c '"short_id"'; }
if [ "$(count)" -lt "$n" ]; then
  (cd "$here" && cargo run --quiet --release --example extend_history -- \
    "$work/repo" "$n")
fi
echo "checkpoints: $(count)"

socket="$work/tmux.socket"
t() { tmux -S "$socket" -f /dev/null "$@"; }
trap 't kill-server 2>/dev/null || true' EXIT
t kill-server 2>/dev/null || true
PS1='ready$ ' TERM=xterm-256color t new-session -d -x 120 -y 40 -c "$work/repo" bash --norc --noprofile
until t capture-pane -p | grep -q 'ready\$'; do sleep 0.05; done

ms() { echo $(($(date +%s%N) / 1000000)); }
times=()
for i in $(seq 1 "$runs"); do
  t send-keys "clear" Enter
  until [ "$(t capture-pane -p | grep -c 'ready\$')" = 1 ]; do sleep 0.02; done
  t send-keys -l "$bin browse"
  start=$(ms)
  t send-keys Enter
  until screen=$(t capture-pane -p) && [[ $screen == *"Checkpoints ("* && $screen == *"Date:"* ]]; do :; done
  took=$(($(ms) - start))
  times+=("$took")
  echo "run $i: $took ms"
  t send-keys q
  until [ "$(t display-message -p '#{alternate_on}')" = 0 ]; do sleep 0.02; done
done
median=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}')
echo "browse, first screen: median $median ms of $runs runs"
hyperfine -N --warmup 2 --runs "${RUNS:-10}" -n 'log -n 20' "$bin log -n 20"
