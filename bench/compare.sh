#!/bin/sh
# compare.sh OLD_REV NEW_REV - the benchmarks of two revisions side by side.
#
# Checks both revisions out in temporary git worktrees, builds each
# (`make all` and the matmul benchmark), and runs their benchmarks
# CELL_BENCH_REPEAT times (default 5), alternating between the two (old,
# new, new, old, old, new, ...) so that a slow spell of the machine falls
# on both alike; each tree runs this checkout's bench/run.sh over its own
# benchmark scripts. Prints one line per benchmark: the median of each
# side, the unit, new / old, and the change counted so that a positive
# percentage is worse (slower for times, lower for GFLOP/s and other
# rates); lines worse by more than CELL_BENCH_TOLERANCE percent (default 5)
# are marked "!". Lines only one side has show "-" for the other.
#
#   sh bench/compare.sh a3224fa^1 HEAD   # before and after a merge
#
# CELL_BENCH_ONLY (default: all but torch) and CELL_BENCH_ITERS pass on to
# run.sh; CELL_BENCH_KEEP=1 keeps the temporary folder (builds, each run's
# lines) and prints where it is. Run it on a quiet machine: it measures
# time. Exits 1 when a revision does not build or a benchmark fails (a
# benchmark script the old revision lacks is skipped, not a failure).
set -u

if [ $# -ne 2 ]; then
  echo "usage: sh bench/compare.sh OLD_REV NEW_REV" >&2
  exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 2
old=$(git rev-parse --verify --quiet "$1^{commit}") || { echo "compare: no revision '$1'" >&2; exit 2; }
new=$(git rev-parse --verify --quiet "$2^{commit}") || { echo "compare: no revision '$2'" >&2; exit 2; }
REPEAT=${CELL_BENCH_REPEAT:-5}
case "$REPEAT" in '' | *[!0-9]* | 0) echo "compare: CELL_BENCH_REPEAT must be a positive integer, got '$REPEAT'" >&2; exit 2 ;; esac
TOL=${CELL_BENCH_TOLERANCE:-5}
export CELL_BENCH_ONLY="${CELL_BENCH_ONLY:-small_ops matmul memory autograd cells train}"
JOBS=$(nproc 2>/dev/null || echo 1)

work=$(mktemp -d)
cleanup() {
  for side in old new; do
    [ -d "$work/$side" ] && git -C "$root" worktree remove --force "$work/$side" >/dev/null 2>&1
  done
  if [ "${CELL_BENCH_KEEP:-}" = 1 ]; then echo "compare: kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for side in old new; do
  eval rev=\$$side
  echo "compare: $side = $(git log -1 --format='%h %s' "$rev" | cut -c1-72)" >&2
  git worktree add --detach --quiet "$work/$side" "$rev" || exit 1
  cp bench/run.sh bench/median.awk "$work/$side/bench/" || exit 1
  echo "compare: building $side (log: $work/$side.build.log)" >&2
  if ! (cd "$work/$side" && make -j"$JOBS" --no-print-directory all build/bench_matmul) >"$work/$side.build.log" 2>&1; then
    tail -20 "$work/$side.build.log" >&2
    echo "compare: $side ($rev) does not build" >&2
    exit 1
  fi
done

# One run of a side's benchmarks: its lines in $work/<side>.<i>.txt.
failed=0
bench() {
  echo "compare: run $2 of $REPEAT: $1" >&2
  if ! (cd "$work/$1" && env -u LUA_PATH -u LUA_CPATH CELL_BENCH_REPEAT=1 sh bench/run.sh) >"$work/$1.run.log" 2>&1; then
    grep 'FAILED' "$work/$1.run.log" >&2
    failed=1
  fi
  cp "$work/$1/build/bench.txt" "$work/$1.$2.txt" 2>/dev/null || : >"$work/$1.$2.txt"
}
i=1
while [ "$i" -le "$REPEAT" ]; do
  if [ $((i % 2)) -eq 1 ]; then bench old "$i"; bench new "$i"; else bench new "$i"; bench old "$i"; fi
  i=$((i + 1))
done

for side in old new; do
  i=1
  while [ "$i" -le "$REPEAT" ]; do cat "$work/$side.$i.txt"; i=$((i + 1)); done |
    awk -f bench/median.awk >"$work/$side.median.txt"
done

echo "# medians of $REPEAT runs: old $(git rev-parse --short "$old"), new $(git rev-parse --short "$new")"
awk -v tol="$TOL" '
FNR == 1 { side++ }
{
  k = $1
  if (!(k in seen)) { seen[k] = 1; order[++n] = k; unit[k] = $3 }
  v[side, k] = $2
}
END {
  printf "%-42s %12s %12s %-9s %7s %8s\n", "benchmark", "old", "new", "unit", "new/old", "change"
  for (j = 1; j <= n; j++) {
    k = order[j]
    o = ((1, k) in v) ? v[1, k] : "-"
    w = ((2, k) in v) ? v[2, k] : "-"
    r = ""; c = ""; mark = ""
    if (o != "-" && w != "-" && o + 0 != 0) {
      r = sprintf("%.3f", w / o)
      u = unit[k]
      if (u ~ /\/s$/) ch = (o / w - 1) * 100       # a rate: lower is worse
      else if (u == "x" || u == "threads") ch = "" # a ratio or a setting: no direction
      else ch = (w / o - 1) * 100                  # a time, a size, a count: higher is worse
      if (ch != "") { c = sprintf("%+.1f%%", ch); if (ch > tol) mark = " !" }
    }
    printf "%-42s %12s %12s %-9s %7s %8s%s\n", k, o, w, unit[k], r, c, mark
  }
}' "$work/old.median.txt" "$work/new.median.txt"
exit "$failed"
