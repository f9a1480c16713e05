#!/bin/sh
# layout_names.sh - every function src/layout.ld names still exists. The
# linker script places functions by section name (.text.NAME, one section
# per function under -ffunction-sections), and a name that matches nothing
# is silently ignored: a renamed function would drop out of its group, and
# only a resident-memory figure would show it. So each name listed in an
# input-section list `*( ... )` must be defined by the engine's objects
# (nm), as itself or as a copy GCC made of it (NAME.part.0, NAME.isra.0,
# NAME.constprop.0: a static function inlined whole has no section of its
# own and must not be listed). Wildcard patterns (.text.*.resolver) and
# GCC's own subsections (.text.startup, .text.unlikely, .text.hot,
# .text.exit) are not function names and are skipped.
# Prints the missing names and exits 1; run by `make test`.
# --self-test first runs the check on a copy of LAYOUT.ld that names a
# function no object defines, and fails unless that copy fails, naming it.
# Usage: sh tests/layout_names.sh [--self-test] LAYOUT.ld OBJECT...
set -u
self_test=0
if [ "${1:-}" = --self-test ]; then
  self_test=1
  shift
fi
[ $# -ge 2 ] || { echo "usage: $0 [--self-test] LAYOUT.ld OBJECT..." >&2; exit 2; }
ld=$1
shift
if [ $self_test = 1 ]; then
  bogus=$(mktemp) || exit 2
  awk '!done && / : [{]$/ { print $0 " *(.text.cell_no_such_function)"; done = 1; next } { print }' "$ld" >"$bogus"
  out=$(sh "$0" "$bogus" "$@" 2>&1)
  rc=$?
  rm -f "$bogus"
  if [ $rc != 1 ] || ! echo "$out" | grep -qx '  cell_no_such_function'; then
    echo "layout_names.sh: --self-test: a copy naming cell_no_such_function did not fail (rc $rc): $out" >&2
    exit 1
  fi
fi
[ -r "$ld" ] || { echo "layout_names.sh: cannot read $ld" >&2; exit 2; }

syms=$(mktemp) || exit 2
trap 'rm -f "$syms"' EXIT
# defined code symbols: nm's types t and T (W for weak ones)
nm --defined-only "$@" 2>/dev/null | awk 'NF == 3 && $2 ~ /^[tTW]$/ { print $3 }' | sort -u >"$syms"
[ -s "$syms" ] || { echo "layout_names.sh: no function symbols in $*" >&2; exit 2; }

# the names: the tokens .text.NAME (NAME.* too) inside *( ... ) lists,
# comments dropped
names=$(perl -0pe 's{/\*.*?\*/}{}gs' "$ld" | grep -o '\*[^ ()]*([^)]*)' | sed 's/^[^(]*(//; s/)$//' |
  tr ' \t' '\n\n' | sed -n 's/^\.text\.\([A-Za-z_][A-Za-z0-9_]*\)\(\.\*\)\{0,1\}$/\1/p' | sort -u)

missing= checked=0
for n in $names; do
  case $n in startup | unlikely | hot | exit) continue ;; esac
  checked=$((checked + 1))
  if ! grep -qx -e "$n" -e "$n\.[A-Za-z0-9_.]*" "$syms"; then
    missing="$missing $n"
  fi
done
if [ -n "$missing" ]; then
  echo "layout_names.sh: $ld names functions the objects do not define (renamed or removed?):"
  for n in $missing; do echo "  $n"; done
  exit 1
fi
echo "layout_names.sh: the $checked function names of $ld are all defined"
