#!/usr/bin/env bash
# A watched save after the git commands an agent runs (issue 37): a copy of a source
# tree, committed to git and saved, with the watcher running; then, for each of an edit,
# `git add`, `git commit`, `git checkout -- <paths>` and `git stash` of a few files, the
# save right after it is timed (hyperfine, the command run again before each timed run
# with --prepare), beside `git rev-parse HEAD` in the same tree as the yardstick. Prints
# each save's median, rev-parse's median and their ratio, and whether the save walked
# the whole tree (its trace).
#
# Usage: benches/watched_git.sh [-n runs] [-g glob] [-w work-dir] [-k] <tree>
#   <tree> the tree to copy (its .git is left out)
#   -n     timed runs of each save (default 15)
#   -g     the files edited and handed to git are the first 3 this matches (default '*.c')
#   -w     where to work (default a new temporary directory, removed at the end unless -k)
# BIN picks the binary to measure (default: the release build, built when missing).
set -euo pipefail

runs=15
glob='*.c'
work=
keep=
while getopts n:g:w:k opt; do
  case $opt in
    n) runs=$OPTARG ;;
    g) glob=$OPTARG ;;
    w) work=$OPTARG ;;
    k) keep=1 ;;
    *) sed -n 10,15p "$0"; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -eq 1 ] || { sed -n 10,15p "$0"; exit 2; }
tree=$(cd "$1" && pwd)
source "$(dirname "$0")/common.sh"
command -v jq >/dev/null || { apt-get update -qq && apt-get install -y -qq jq; }
if [ -z "$work" ]; then
  work=$(mktemp -d)
fi
export TZ=UTC GIT_CONFIG_NOSYSTEM=1 HOME="$work/home"
mkdir -p "$HOME" "$work/tree"
git config --global user.name bench
git config --global user.email bench@example.invalid
git config --global init.defaultBranch main
git config --global gc.auto 0
# Saves run by hand here, never by an agent's hook.
git config --global checkpoint.autoWatch false

(cd "$tree" && tar --exclude=./.git -cf - .) | (cd "$work/tree" && tar -xf -)
cd "$work/tree"
cleanup() {
  "$bin" watch --stop >/dev/null 2>&1 || true
  if [ -z "$keep" ]; then rm -rf "$work"; fi
}
trap cleanup EXIT
git init -q
git add -A
git commit -q -m start
mapfile -t files < <(git ls-files "$glob" | head -3)
[ "${#files[@]}" -eq 3 ] || { echo "fewer than 3 files match $glob under $tree" >&2; exit 1; }
sleep 2 # past the racy window of the filesystem clock, as a tree at rest would be
"$bin" save -q -m first
"$bin" watch --daemon >/dev/null
# The first save after the watcher starts walks, and records the base.
echo "// primer" >>"${files[0]}"
"$bin" save -q -m primer

save="$bin save -q -m timed"
# What runs before each timed save: a script per step, so that hyperfine runs it
# without a shell of its own, as it runs the save.
edit="for f in ${files[*]}; do echo \"// \$RANDOM\" >>\$f; done"
absorb="'$bin' save -q -m edited"
write_step() { printf 'set -e\ncd %q\n%s\n' "$work/tree" "$2" >"$work/$1.sh"; }
write_step edit "$edit"
write_step add "$edit; $absorb; git add ${files[*]}"
write_step commit "$edit; $absorb; git add ${files[*]}; $absorb; git commit -q -m c"
write_step checkout "$edit; $absorb; git checkout -- ${files[*]}"
write_step stash "git stash drop -q 2>/dev/null || true; $edit; $absorb; git stash -q"
echo "tree: $tree ($(git ls-files | wc -l) files), $runs runs, binary $bin"
printf '%-9s %12s %14s %7s  %s\n' after "save (ms)" "rev-parse (ms)" ratio "the save walked"
for step in edit add commit checkout stash; do
  out="$work/$step.json"
  hyperfine -N --runs "$runs" --warmup 2 --export-json "$out" \
    --prepare "bash $work/$step.sh" "$save" \
    --prepare true "git rev-parse HEAD" >/dev/null
  median() { jq -r ".results[$1].median * 1000" "$out"; }
  s=$(median 0)
  r=$(median 1)
  # Once more, traced, to tell whether the save walked the whole tree.
  bash "$work/$step.sh" >/dev/null
  trace=$(GIT_CHECKPOINT_TRACE=1 $save 2>&1)
  walked=no
  if grep -qE 'ms  walk$' <<<"$trace"; then walked=yes; fi
  printf '%-9s %12.1f %14.2f %7.1f  %s\n' "$step" "$s" "$r" "$(echo "$s / $r" | bc -l)" "$walked"
done
