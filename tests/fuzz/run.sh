#!/bin/sh
# tests/fuzz/run.sh SECONDS TARGET - run one libFuzzer target built by
# `make fuzz` (build-fuzz/fuzz_TARGET) for SECONDS, seeded with the committed
# fixtures of its format and its dictionary where there is one. New inputs go
# to build-fuzz/corpus-TARGET, a crash to build-fuzz/crash-*; a crash fails
# the run and prints the end of the target's log. make fuzz runs the targets
# a processor each.
set -u
secs=$1 t=$2
seeds=spec/fixtures/$(echo "$t" | sed 's/_gz$//')
dict=
[ -f "tests/fuzz/$t.dict" ] && dict=-dict=tests/fuzz/$t.dict
mkdir -p "build-fuzz/corpus-$t"
log=build-fuzz/fuzz_$t.log
# shellcheck disable=SC2086
ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 "build-fuzz/fuzz_$t" $dict \
  -max_total_time="$secs" -print_final_stats=1 -artifact_prefix=build-fuzz/ \
  "build-fuzz/corpus-$t" "$seeds" 2>"$log" || {
  echo "fuzz_$t: FAILED after at most $secs s; the end of $log:"
  tail -40 "$log"
  exit 1
}
echo "fuzz_$t: $secs s: $(grep -E '^stat::(number_of_executed_units|peak_rss_mb)' "$log" | tr '\n' ' ')"
