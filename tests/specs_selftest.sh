#!/bin/sh
# tests/specs_selftest.sh LUA - tests/specs.sh must fail when a spec file
# fails, errors at load or dies without a summary, and pass a passing one:
# make test runs the suite through it, so a runner that hid a failure would
# hide it from CI. Runs a few throw-away spec files in a temporary folder.
set -u
lua=${1:-lua5.4}
here=$(cd "$(dirname "$0")" && pwd)
d=$(mktemp -d "${TMPDIR:-/tmp}/cell-specs-selftest.XXXXXX") || exit 1
trap 'rm -rf "$d"' EXIT
fail() { echo "specs_selftest: $*" >&2; cat "$d/out" >&2; exit 1; }
printf 'describe("p", function() it("a", function() end) it("b", function() end) end)\n' > "$d/pass_spec.lua"
printf 'describe("f", function() it("a", function() assert.equal(1, 2) end) end)\n' > "$d/fail_spec.lua"
printf 'error("at load")\n' > "$d/load_spec.lua"
printf 'describe("d", function() it("a", function() os.exit(3) end) end)\n' > "$d/exit_spec.lua"

(cd "$d" && sh "$here/specs.sh" "$lua" pass_spec.lua) > "$d/out" 2>&1 || fail "a passing file failed"
grep -q '^2 successes / 0 failures / 0 errors / 0 pending : 1 files' "$d/out" || fail "a passing file: wrong sum"
for f in fail load exit; do
  (cd "$d" && sh "$here/specs.sh" "$lua" pass_spec.lua "${f}_spec.lua") > "$d/out" 2>&1 && fail "${f}_spec.lua passed"
  grep -q "^FAIL .*${f}_spec.lua" "$d/out" || fail "${f}_spec.lua: no FAIL line"
  grep -q "^---- ${f}_spec.lua" "$d/out" || fail "${f}_spec.lua: its log was not printed"
done
(cd "$d" && SPEC_JOBS=1 sh "$here/specs.sh" "$lua" .) > "$d/out" 2>&1 && fail "a folder with failing files passed"
grep -q ': 4 files in .* on 1 processes' "$d/out" || fail "SPEC_JOBS=1 on a folder: wrong count"
# LeakSanitizer's own fatal error at exit: run once more (here the second
# run passes); the same error twice, or a leak report, still fails.
printf '%s\n' 'local m = os.getenv("SELFTEST_DIR") .. "/crashed_once"' \
  'describe("c", function() it("a", function()' \
  '  local f = io.open(m) if f then f:close() return end' \
  '  io.open(m, "w"):close() io.stderr:write("==1==LeakSanitizer has encountered a fatal error.\\n") os.exit(1)' \
  'end) end)' > "$d/tool_once_spec.lua"
(cd "$d" && SELFTEST_DIR=$d sh "$here/specs.sh" "$lua" tool_once_spec.lua) > "$d/out" 2>&1 ||
  fail "a file whose first run LeakSanitizer crashed, and whose second passed, failed"
printf '%s\n' 'describe("c", function() it("a", function()' \
  '  io.stderr:write("==1==LeakSanitizer has encountered a fatal error.\\n") os.exit(1)' \
  'end) end)' > "$d/tool_always_spec.lua"
printf '%s\n' 'describe("c", function() it("a", function()' \
  '  io.stderr:write("==1==ERROR: LeakSanitizer: detected memory leaks\\n==1==LeakSanitizer has encountered a fatal error.\\n")' \
  '  os.exit(1)' \
  'end) end)' > "$d/leak_spec.lua"
for f in tool_always leak; do
  (cd "$d" && sh "$here/specs.sh" "$lua" "${f}_spec.lua") > "$d/out" 2>&1 && fail "${f}_spec.lua passed"
  grep -q "^FAIL .*${f}_spec.lua" "$d/out" || fail "${f}_spec.lua: no FAIL line"
done
echo "specs_selftest: tests/specs.sh passes what passes and fails the rest"
