#!/bin/sh
# check.sh - build the rock from a clean copy of the sources into a temporary
# tree, offline, and check that `require "cell"` and the `cell` executable
# work from it. Exits nonzero on any failure. Run from anywhere:
# `sh rocks/check.sh` (or `make rock-check`).
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
rockspec=cell-scm-1.rockspec
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cell-rock.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
src="$tmp/src"
tree="$tmp/tree"
mkdir -p "$src" "$tree"

fail() { echo "rock-check: FAILED: $*" >&2; exit 1; }

# A copy of what a source rock would hold, so the rock is built from
# scratch and the checkout's build/ and bin/ are neither used nor touched.
if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  (cd "$root" && git ls-files -z --cached --others --exclude-standard |
    tar --null -T - --ignore-failed-read -cf - 2>/dev/null) | tar -C "$src" -xf -
else
  (cd "$root" && tar --exclude=./build --exclude=./build-asan --exclude=./bin --exclude=./.git -cf - .) |
    tar -C "$src" -xf -
fi
[ -f "$src/$rockspec" ] || fail "$rockspec not found in $root"

# LuaRocks looks for cblas.h in <prefix>/include only; Debian and Ubuntu
# keep it in the multiarch directory.
blas_var=""
if [ ! -f /usr/include/cblas.h ] && [ ! -f /usr/local/include/cblas.h ]; then
  for d in "/usr/include/$(cc -dumpmachine 2>/dev/null || echo none)" /usr/include/openblas; do
    if [ -f "$d/cblas.h" ]; then blas_var="OPENBLAS_INCDIR=$d"; break; fi
  done
fi

ncpu=$(nproc 2>/dev/null || echo 2)
echo "rock-check: building $rockspec into $tree"
(cd "$src" && MAKEFLAGS="-j$ncpu" luarocks --lua-version 5.4 make --tree "$tree" \
  "$rockspec" $blas_var) >"$tmp/build.log" 2>&1 || {
  cat "$tmp/build.log" >&2
  fail "luarocks make"
}

# Only the tree's paths (and the system's), never the checkout's.
unset LUA_PATH_5_4 LUA_CPATH_5_4 LUA_INIT LUA_INIT_5_4
eval "$(luarocks --lua-version 5.4 --tree "$tree" path)"
cd "$tmp"

CELL_TREE="$tree" lua5.4 -e '
local tree = assert(os.getenv("CELL_TREE"))
local cell = require "cell"
local function inside(p) return p and p:sub(1, #tree) == tree end
assert(inside(package.searchpath("cell", package.path)), "cell.lua is not the rock'"'"'s")
assert(inside(package.searchpath("cell.core", package.cpath)), "cell.core is not the rock'"'"'s")
local z = cell.zeros({ 2 })
assert(z:numel() == 2 and z:sum():item() == 0, "cell.zeros({2}) is wrong")
assert(tostring(z):find("Tensor(shape=[2], dtype=Float32", 1, true), tostring(z))
' || fail "require \"cell\" from the tree"

out=$("$tree/bin/cell" -e 'print((require "cell").ones({ 3 }):sum():item())') ||
  fail "$tree/bin/cell"
[ "$out" = "3.0" ] || [ "$out" = "3" ] || fail "$tree/bin/cell printed '$out', not 3"

# A spec that requires cell from the tree, run by busted from outside any
# checkout (busted itself is the system's).
cp "$root/rocks/installed_spec.lua" "$tmp/installed_spec.lua"
echo "rock-check: running rocks/installed_spec.lua against the tree"
CELL_TREE="$tree" lua5.4 /usr/bin/busted "$tmp/installed_spec.lua" >"$tmp/spec.log" 2>&1 || {
  cat "$tmp/spec.log" >&2
  fail "installed_spec.lua"
}

# `luarocks test` (the rockspec's test = busted), offline. LuaRocks wants
# busted as a rock in one of its trees; Debian's lua-busted is not one, so
# a stand-in rock whose `busted` runs the system's is installed in the
# tree first. The rest is what a user's `luarocks test` does: busted in the
# checkout, against the module `luarocks make` built there. Only the
# installed spec runs here (the suite runs in CI through make test).
mkdir -p "$tmp/shim"
printf '#!/bin/sh\nexec lua5.4 /usr/bin/busted "$@"\n' >"$tmp/shim/busted"
cat >"$tmp/shim/busted-0-0.rockspec" <<'EOF'
rockspec_format = "3.0"
package = "busted"
version = "0-0"
source = { url = "git+file:///dev/null" }
description = { summary = "rocks/check.sh: the system's busted, for an offline luarocks test" }
build = { type = "builtin", modules = {}, install = { bin = { busted = "busted" } } }
EOF
cat >"$tmp/luarocks-config.lua" <<EOF
rocks_trees = { { name = "rock-check", root = "$tree" } }
EOF
export LUAROCKS_CONFIG="$tmp/luarocks-config.lua"
(cd "$tmp/shim" && luarocks --lua-version 5.4 make --tree "$tree" busted-0-0.rockspec) \
  >"$tmp/shim.log" 2>&1 || { cat "$tmp/shim.log" >&2; fail "the busted stand-in rock"; }
echo "rock-check: luarocks test"
(cd "$src" && unset LUA_PATH LUA_CPATH && luarocks --lua-version 5.4 test "$rockspec" -- \
  rocks/installed_spec.lua) >"$tmp/test.log" 2>&1 || {
  cat "$tmp/test.log" >&2
  fail "luarocks test"
}
grep -Eq "[1-9][0-9]* successes / 0 failures / 0 errors" "$tmp/test.log" || { cat "$tmp/test.log" >&2; fail "luarocks test ran no spec"; }

echo "rock-check: ok"
