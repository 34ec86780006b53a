#!/usr/bin/env bash
# Mutation testing of the safety-critical code with cargo-mutants: every mutant that
# survives the tests gets a test that kills it, or a line in mutants-allowed.md saying
# why it cannot matter.
#
#   scripts/mutants.sh small       every mutant of the small files (codec, tree, stat
#                                  cache), with the unit tests and the integration tests
#                                  that read and write records
#   scripts/mutants.sh sample K N  shard K of N (round-robin over the mutants, so a fixed
#                                  sample spread over every file) of the larger files:
#                                  restore and its worktree writer, pack, gc and its
#                                  sweep, walk and its ignore handling; whole test suite
#   scripts/mutants.sh list        how many mutants each of those files has
#
# Needs cargo-mutants (`cargo install cargo-mutants --locked`); uses cargo-nextest when it
# is installed. Runs in place with the existing target directory (each mutant is an
# incremental build), so run it in a clean checkout of its own, for example a
# `git worktree add`, never in one you are editing. Results: mutants.out/ (outcomes.json,
# caught.txt, missed.txt, timeout.txt, unviable.txt).
set -euo pipefail
cd "$(dirname "$0")/.."

small=(src/format/codec.rs src/model/tree.rs src/model/stat_cache.rs)
large=(src/ops/restore/mod.rs src/ops/restore/plan.rs src/ops/restore/preflight.rs
  src/ops/restore/apply.rs src/worktree/dir.rs src/storage/pack/read.rs src/storage/pack/write.rs src/storage/pack/sweep.rs src/ops/gc/plan.rs
  src/ops/gc/apply.rs src/ops/gc/auto.rs src/storage/reach.rs src/worktree/walk/mod.rs
  src/worktree/walk/found.rs src/worktree/walk/rules.rs src/worktree/walk/parallel.rs
  src/worktree/walk/cache_use.rs src/worktree/walk/tracked.rs src/worktree/walk/paths.rs)
# A renamed or moved file would silently leave its mutants untested: refuse instead.
for f in "${small[@]}" "${large[@]}"; do
  [ -f "$f" ] || { echo "$0: $f does not exist; update the lists in this script" >&2; exit 2; }
done
# The tests that exercise records on disk: the unit tests of the record modules and the
# integration modules that read and write records (test-name filters, one binary), enough
# to catch a codec, tree or stat-cache mutant in seconds instead of the whole suite.
small_tests=(--lib --test it -- format:: model:: storage:: safety_crafted_store::
  safety_damaged_store:: cmd_verify:: roundtrip_trees:: cmd_save:: cmd_restore:: cmd_gc::
  safety_crash:: safety_changing_files:: safety_hostile_store::)

files() { for f in "$@"; do printf -- '--file\0%s\0' "$f"; done; }
test_tool=cargo
command -v cargo-nextest >/dev/null 2>&1 && test_tool=nextest
common=(--in-place --baseline skip --test-tool "$test_tool" --timeout 600)

case "${1:-}" in
  small)
    mapfile -d '' file_args < <(files "${small[@]}")
    for arg in "${small_tests[@]}"; do common+=(--cargo-test-arg "$arg"); done
    exec cargo mutants "${common[@]}" "${file_args[@]}"
    ;;
  sample)
    [ $# -eq 3 ] || { echo "usage: $0 sample K N" >&2; exit 2; }
    mapfile -d '' file_args < <(files "${large[@]}")
    exec cargo mutants "${common[@]}" --sharding round-robin --shard "$2/$3" "${file_args[@]}"
    ;;
  list)
    for f in "${small[@]}" "${large[@]}"; do
      printf '%-20s %s\n' "$f" "$(cargo mutants --list --file "$f" | wc -l)"
    done
    ;;
  *)
    sed -n '2,20p' "$0" >&2
    exit 2
    ;;
esac
