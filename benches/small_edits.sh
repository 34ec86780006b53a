#!/usr/bin/env bash
# Store size under small edits (issue 15): a copy of a source tree, then N saves (1,000
# by default), each after appending a line to 3 of its C files; the same edits committed
# to a shadow git repository (`git add -A && git commit` with its own git dir and the same
# worktree). Prints, in bytes:
#   - after the first save: our store, the shadow repository after `git gc`, and restic's
#     repository (when restic is on PATH; otherwise it says so);
#   - after the N saves: our store, the shadow repository loose, and after `git gc`.
# Sizes are bytes allocated on disk (`du -B1`: redb's file is sparse, and loose objects
# take whole blocks); our store's file length (`ls -l`) is printed as well.
#
# Usage: benches/small_edits.sh -t tree [-n saves] [-w work-dir] [-k] [-g]
#   -t  the tree to copy (required; its .git is left out), e.g. a clone of git's source
#   -w  where to work (default a new temporary directory, removed at the end unless -k)
#   -g  also run `git checkpoint gc` (which recompresses the chunks into large solid
#       blocks) after the first save and after the N saves, and print the store after it
# BIN picks the binary to measure (default: the release build, built when missing).
set -euo pipefail

saves=1000
tree=
work=
keep=
upkeep=
while getopts n:t:w:kg opt; do
  case $opt in
    n) saves=$OPTARG ;;
    t) tree=$OPTARG ;;
    w) work=$OPTARG ;;
    k) keep=1 ;;
    g) upkeep=1 ;;
    *) sed -n 12,17p "$0"; exit 2 ;;
  esac
done
[ -n "$tree" ] || { sed -n 12,17p "$0" >&2; exit 2; }
source "$(dirname "$0")/common.sh"
if [ -z "$work" ]; then
  work=$(mktemp -d)
  [ -n "$keep" ] || trap 'rm -rf "$work"' EXIT
fi
export TZ=UTC GIT_CONFIG_NOSYSTEM=1 HOME="$work/home"
mkdir -p "$HOME" "$work/tree"
git config --global user.name bench
git config --global user.email bench@example.invalid
git config --global init.defaultBranch main
git config --global gc.auto 0 # "loose" means loose: no automatic gc during the commits

(cd "$tree" && tar --exclude=./.git -cf - .) | (cd "$work/tree" && tar -xf -)
cd "$work/tree"
git init -q
mapfile -t files < <(find . -path ./.git -prune -o -type f -name '*.c' -print | sort)
[ "${#files[@]}" -gt 0 ] || { echo "no C files under $tree" >&2; exit 1; }
sleep 2 # past the racy window of the filesystem clock, as a tree at rest would be

shadow() { git --git-dir="$work/$1" --work-tree="$work/tree" "${@:2}"; }
shadow_commit() {
  shadow "$1" add -A
  shadow "$1" commit -q --allow-empty -m "$2"
}
bytes() { du -s -B1 "$1" | cut -f1; }
store=$(git rev-parse --absolute-git-dir)/checkpoint/store.redb

echo "tree: $tree (${#files[@]} C files), $saves saves, binary $bin"
t0=$(date +%s.%N)
"$bin" save -q -m "first"
t1=$(date +%s.%N)
first_store=$(bytes "$store")
git init -q --bare "$work/first.git"
shadow_commit first.git first
shadow first.git gc -q
first_git=$(bytes "$work/first.git/objects")
awk -v a="$t0" -v b="$t1" 'BEGIN { printf "first save: %.2f s\n", b - a }'
echo "first save: store $first_store (file length $(stat -c %s "$store")), shadow git after gc $first_git" \
  "($(awk -v a="$first_store" -v b="$first_git" 'BEGIN { printf "%.2f", a / b }')x)"
if command -v restic >/dev/null; then
  RESTIC_PASSWORD=bench restic init -q --repo "$work/restic" >/dev/null
  RESTIC_PASSWORD=bench restic backup -q --repo "$work/restic" --exclude .git . >/dev/null
  first_restic=$(bytes "$work/restic")
  echo "first save: restic $first_restic" \
    "(store $(awk -v a="$first_store" -v b="$first_restic" 'BEGIN { printf "%.2f", a / b }')x restic)"
else
  echo "first save: restic is not installed; no restic figure"
fi
if [ -n "$upkeep" ]; then
  t0=$(date +%s.%N)
  "$bin" gc >/dev/null
  first_kept=$(bytes "$store")
  awk -v a="$t0" -v b="$(date +%s.%N)" -v s="$first_kept" -v g="$first_git" -v r="${first_restic:-0}" \
    'BEGIN { printf "first save, after gc (%.2f s): store %d (%.2fx shadow git", b - a, s, s / g;
             if (r > 0) printf ", %.2fx restic", s / r; print ")" }'
fi

git init -q --bare "$work/shadow.git"
shadow_commit shadow.git first
t0=$(date +%s.%N)
for i in $(seq 1 "$saves"); do
  for k in 0 1 2; do
    f=${files[$(( (i * 7919 + k * 104729) % ${#files[@]} ))]}
    printf '/* edit %d.%d */\n' "$i" "$k" >> "$f"
  done
  "$bin" save -q -m "edit $i"
  shadow_commit shadow.git "edit $i"
done
awk -v a="$t0" -v b="$(date +%s.%N)" -v n="$saves" \
  'BEGIN { printf "%d saves (and shadow commits): %.1f s\n", n, b - a }'
ours=$(bytes "$store")
loose=$(bytes "$work/shadow.git/objects")
shadow shadow.git gc -q
packed=$(bytes "$work/shadow.git/objects")
echo "after $saves saves: store $ours (file length $(stat -c %s "$store")), shadow git loose $loose, after gc $packed" \
  "($(awk -v a="$ours" -v b="$packed" 'BEGIN { printf "%.2f", a / b }')x)"
echo "per save: store $(( (ours - first_store) / saves )) bytes"
if [ -n "$upkeep" ]; then
  t0=$(date +%s.%N)
  "$bin" gc >/dev/null
  kept=$(bytes "$store")
  awk -v a="$t0" -v b="$(date +%s.%N)" -v s="$kept" -v g="$packed" -v n="$saves" \
    'BEGIN { printf "after %d saves and gc (%.2f s): store %d (%.2fx shadow git after gc)\n", n, b - a, s, s / g }'
fi
"$bin" stats | head -8
