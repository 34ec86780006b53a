#!/usr/bin/env bash
# Times `browse` on a big checkpoint: a first save of 50 MB (50 files of 1 MB of random
# text, 650,000 lines of diff), in tmux (120 by 40), RUNS times (5 unless given):
#
# - first screen: from the Enter on `git-checkpoint browse`, with the big save the
#   newest (so selected), until the screen shows the list and the record's `Date:`;
# - j to record: with a small save on top, from `j` (selecting the big save) until its
#   record (`Files:  50`) shows;
# - j, q to quit: from `j` then `q` typed at once until browse has left the screen.
#
#   benches/browse_big_checkpoint.sh DIR    # BIN=... measures another binary
#
# Prints each run and the medians. The repositories are kept in DIR and reused.
set -euo pipefail
source "$(dirname "$0")/common.sh"
[ $# -ge 1 ] || { echo "usage: $0 DIR" >&2; exit 2; }
runs=${RUNS:-5}
mkdir -p "$1"
work=$(cd "$1" && pwd)
command -v tmux >/dev/null || { apt-get update -qq && apt-get install -y -qq tmux; }
export HOME="$work/home" GIT_CONFIG_NOSYSTEM=1
mkdir -p "$HOME"
if [ ! -d "$work/top/.git" ]; then
  rm -rf "$work/big" "$work/top"
  mkdir -p "$work/big" && cd "$work/big" && git init -q -b main
  python3 - <<'EOF'
import os, random
random.seed(7)
os.makedirs("data", exist_ok=True)
letters = "abcdefghijklmnopqrstuvwxyz "
for i in range(50):
    with open(f"data/f{i:02}.txt", "w") as f:
        f.write("".join("%08x %s\n" % (random.getrandbits(32), "".join(random.choice(letters) for _ in range(70))) for _ in range(13000)))
EOF
  "$bin" save -q -m "first save, 50 MB"
  cp -r "$work/big" "$work/top"
  cd "$work/top" && echo small >small.txt && "$bin" save -q -m "a small save"
fi

socket="$work/tmux.socket"
t() { tmux -S "$socket" -f /dev/null "$@"; }
trap 't kill-server 2>/dev/null || true' EXIT
ms() { echo $(($(date +%s%N) / 1000000)); }
quit() { until [ "$(t display-message -p '#{alternate_on}')" = 0 ]; do :; done; }
start_shell() {
  t kill-server 2>/dev/null || true
  PS1='ready$ ' TERM=xterm-256color t new-session -d -x 120 -y 40 -c "$1" bash --norc --noprofile
  until t capture-pane -p | grep -q 'ready\$'; do sleep 0.05; done
}
browse() {
  t send-keys "clear" Enter
  until [ "$(t capture-pane -p | grep -c 'ready\$')" = 1 ]; do sleep 0.02; done
  t send-keys -l "$bin browse"
  start=$(ms)
  t send-keys Enter
  until screen=$(t capture-pane -p) && [[ $screen == *"Checkpoints ("* && $screen == *"Date:"* ]]; do :; done
}
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

first=()
start_shell "$work/big"
for i in $(seq 1 "$runs"); do
  browse
  first+=($(($(ms) - start)))
  t send-keys q
  quit
done
record=() both=()
start_shell "$work/top"
for i in $(seq 1 "$runs"); do
  browse
  start=$(ms)
  t send-keys j
  until [[ $(t capture-pane -p) == *"Files:  50"* ]]; do :; done
  record+=($(($(ms) - start)))
  t send-keys k
  until [[ $(t capture-pane -p) == *"Files:  51"* ]]; do :; done
  start=$(ms)
  t send-keys j q
  quit
  both+=($(($(ms) - start)))
done
echo "first screen, the 50 MB save selected: ${first[*]} ms (median $(median "${first[@]}"))"
echo "j to its record: ${record[*]} ms (median $(median "${record[@]}"))"
echo "j, q to quit: ${both[*]} ms (median $(median "${both[@]}"))"
