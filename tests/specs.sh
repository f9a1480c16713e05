#!/bin/sh
# tests/specs.sh - run spec files with busted, SPEC_JOBS files at a time.
#
#   sh tests/specs.sh LUA [busted options] [files or directories]
#
# Each spec file runs in its own busted process, as it would alone (no spec
# may lean on another file having run first), taken from one queue by
# SPEC_JOBS workers (default: the number of processors), so the suite's wall
# time is about its CPU time over the cores. Directories (default: spec) are
# searched for the files whose name contains the pattern (busted's
# --pattern, default _spec; a plain string here). A line per file says how
# it went and how long it took; the whole log of a file that failed is
# printed after them; the last line sums them as busted does. The exit
# status is non-zero when any file failed. SPEC_JOBS=1 runs the files one
# after another. SPEC_PRELOAD is given to busted's processes alone as
# LD_PRELOAD (make asan: the sanitizers' runtimes, which the uninstrumented
# interpreter needs, kept out of this script's sh, xargs and awk, whose own
# leaks are not ours).
set -u

# Worker mode (what xargs runs): one file, its log, one line of results.
if [ "${1:-}" = --one ]; then
  lua=$2 work=$3 f=$4
  shift 4
  log="$work/$(echo "$f" | tr '/' '_').log"
  start=$(date +%s.%N)
  run_busted() {
    if [ -n "${SPEC_PRELOAD:-}" ]; then
      LD_PRELOAD=$SPEC_PRELOAD "$lua" /usr/bin/busted -o plainTerminal "$@" "$f" > "$log" 2>&1
    else
      "$lua" /usr/bin/busted -o plainTerminal "$@" "$f" > "$log" 2>&1
    fi
  }
  run_busted "$@"
  rc=$?
  # LeakSanitizer's own crash at exit, while it stops the threads to scan
  # them ("Tracer caught signal 11" reading a thread's dynamic TLS; about
  # one run in seven of a file whose dataset workers are threads, under
  # make asan), is the tool failing, not a leak: it reports none. That run
  # is made once more, so a leak it would have reported is still reported.
  if [ "$rc" -ne 0 ] && grep -q 'LeakSanitizer has encountered a fatal error' "$log" &&
    ! grep -q 'ERROR: LeakSanitizer: detected memory leaks' "$log"; then
    run_busted "$@"
    rc=$?
  fi
  secs=$(echo "$start $(date +%s.%N)" | awk '{ printf "%.1f", $2 - $1 }')
  sum=$(grep -E '^[0-9]+ success(es)? / [0-9]+ failures? / [0-9]+ errors? / [0-9]+ pending' "$log" | tail -n 1)
  # No summary: busted died (a crash, os.exit); an error even if it exited 0.
  if [ -z "$sum" ]; then
    sum="0 successes / 0 failures / 1 error / 0 pending"
    [ "$rc" -ne 0 ] || rc=1
  fi
  if [ "$rc" -eq 0 ]; then mark=ok; else mark=FAIL; fi
  line=$(printf '%-4s %6ss  %s  %s' "$mark" "$secs" "$f" "${sum%% :*}")
  echo "$line"
  echo "$line" >> "$work/results"
  # A failed file's log, whole, in a file of its own (two workers may fail
  # at once); printed after every file has run.
  [ "$rc" -eq 0 ] || { echo "---- $f (exit $rc) ----"; cat "$log"; } > "$log.failed"
  exit 0
fi

lua=${1:?usage: sh tests/specs.sh LUA [busted options] [files or directories]}
shift
pattern=_spec
roots=
opts=
for a in "$@"; do
  case $a in
    --pattern=*) pattern=${a#--pattern=} ;;
    -*) opts="$opts $a" ;;
    *) roots="$roots $a" ;;
  esac
done
[ -n "$roots" ] || roots=spec
case $pattern in
  *[]^\$%.[*+?\(\)-]*) echo "tests/specs.sh: give --pattern a plain string, not the Lua pattern '$pattern'" >&2; exit 2 ;;
esac

jobs=${SPEC_JOBS:-$(nproc 2>/dev/null || echo 1)}
work=$(mktemp -d "${TMPDIR:-/tmp}/cell-specs.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT TERM

# The longest files first (15 to 40 s each on 2 cores; the rest take
# under 10 s), so that no worker is left with one of them at the end; the
# rest in name order.
slow="spec/ops/threads_ew_spec.lua spec/hardening/misuse_spec.lua spec/ops/threads_rows_spec.lua
  spec/examples_spec.lua spec/ops/threads_linear_spec.lua spec/ops/threads_spec.lua spec/ops/threads_gemm_spec.lua"
for r in $roots; do
  if [ -d "$r" ]; then find "$r" -name "*$pattern*.lua" -type f; else echo "$r"; fi
done | sort -u > "$work/all"
for s in $slow; do echo "$s"; done > "$work/slow"
{ grep -Fx -f "$work/slow" "$work/all"; grep -Fvx -f "$work/slow" "$work/all"; } > "$work/queue"
n=$(wc -l < "$work/queue")
[ "$n" -gt 0 ] || { echo "tests/specs.sh: no file under$roots has '$pattern' in its name" >&2; exit 2; }

began=$(date +%s)
# xargs hands each worker the next file as it becomes free. The options
# are words without spaces (busted's --flag=value form).
# shellcheck disable=SC2086
tr '\n' '\0' < "$work/queue" | xargs -0 -I{} -P "$jobs" sh "$0" --one "$lua" "$work" {} $opts
wall=$(( $(date +%s) - began ))

for failed in "$work"/*.log.failed; do [ -f "$failed" ] && cat "$failed"; done
touch "$work/results"
awk -v n="$n" -v wall="$wall" -v jobs="$jobs" '
  { s += $4; f += $7; e += $10; p += $13 }
  END {
    printf "%d successes / %d failures / %d errors / %d pending : %d files in %d s on %d processes\n", s, f, e, p, n, wall, jobs
    exit (f + e > 0 || NR != n) ? 1 : 0
  }' "$work/results" || exit 1
! grep -q '^FAIL' "$work/results"
