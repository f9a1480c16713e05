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
# Where mpicc reports MPI's flags the rock holds cell.communication's MPI
# layer too (cell/comm_mpi.so), and check_rock loads it.
CELL_HAVE_MPI=0
if mpicc --showme:link >/dev/null 2>&1; then CELL_HAVE_MPI=1; fi
export CELL_HAVE_MPI

# The README's two commands, as written (plus --tree): Lua 5.4, then LuaJIT
# through LuaRocks' 5.1 tree (Debian's default), into the same tree; each
# installs its own executable (cell, cell-luajit) and neither replaces the
# other's files.
build_rock() { # LUA_VERSION
  echo "rock-check: luarocks --lua-version=$1 make $rockspec into $tree"
  (cd "$src" && MAKEFLAGS="-j$ncpu" luarocks --lua-version="$1" make --tree "$tree" \
    "$rockspec" $blas_var) >"$tmp/build-$1.log" 2>&1 || {
    cat "$tmp/build-$1.log" >&2
    fail "luarocks --lua-version=$1 make"
  }
}

# require "cell" from the tree under interpreter $2 (LuaRocks' Lua $1),
# the tree's executable $3, and rocks/installed_spec.lua under busted. Only
# the tree's paths (and the system's), never the checkout's.
check_rock() ( # LUA_VERSION INTERPRETER EXECUTABLE
  unset LUA_PATH LUA_CPATH LUA_PATH_5_4 LUA_CPATH_5_4 LUA_INIT LUA_INIT_5_4
  eval "$(luarocks --lua-version="$1" --tree "$tree" path)"
  cd "$tmp"
  CELL_TREE="$tree" "$2" -e '
local tree = assert(os.getenv("CELL_TREE"))
local cell = require "cell"
local function inside(p) return p and p:sub(1, #tree) == tree end
local function search(name, path) -- package.searchpath is 5.2+
  for t in path:gmatch("[^;]+") do
    local f = t:gsub("?", (name:gsub("%.", "/")))
    local h = io.open(f) if h then h:close() return f end
  end
end
assert(inside(search("cell", package.path)), "cell.lua is not the rock'"'"'s")
assert(inside(search("cell.core", package.cpath)), "cell.core is not the rock'"'"'s")
local z = cell.zeros({ 2 })
assert(z:numel() == 2 and z:sum():item() == 0, "cell.zeros({2}) is wrong")
assert(tostring(z):find("Tensor(shape=[2], dtype=Float32", 1, true), tostring(z))
if os.getenv("CELL_HAVE_MPI") == "1" then -- the Makefile builds the MPI layer where mpicc is
  assert(inside(search("cell.comm_mpi", package.cpath)), "cell.comm_mpi is not in the rock")
  assert(type(require("cell.comm_mpi").init) == "function", "cell.comm_mpi has no init")
end
' || fail "require \"cell\" from the tree under $2"
  out=$("$tree/bin/$3" -e 'print((require "cell").ones({ 3 }):sum():item())') ||
    fail "$tree/bin/$3"
  [ "$out" = "3.0" ] || [ "$out" = "3" ] || fail "$tree/bin/$3 printed '$out', not 3"
  ver=$("$tree/bin/$3" -v) || fail "$tree/bin/$3 -v"
  case "$3:$ver" in
    cell-luajit:*LuaJIT*|cell:*"Lua 5.4"*) ;;
    *) fail "$tree/bin/$3 -v says '$ver'" ;;
  esac
  # A spec that requires cell from the tree, run by busted from outside
  # any checkout (busted itself is the system's).
  cp "$root/rocks/installed_spec.lua" "$tmp/installed_spec.lua"
  echo "rock-check: running rocks/installed_spec.lua under $2 against the tree"
  CELL_TREE="$tree" "$2" /usr/bin/busted "$tmp/installed_spec.lua" >"$tmp/spec-$1.log" 2>&1 || {
    cat "$tmp/spec-$1.log" >&2
    fail "installed_spec.lua under $2"
  }
)

build_rock 5.4
check_rock 5.4 lua5.4 cell
have_luajit=""
if command -v luajit >/dev/null 2>&1 && [ -f /usr/include/luajit-2.1/luajit.h ]; then have_luajit=1; fi
if [ -n "$have_luajit" ]; then
  build_rock 5.1
  check_rock 5.1 luajit cell-luajit
  check_rock 5.4 lua5.4 cell # still there, still Lua 5.4's
else
  echo "rock-check: no LuaJIT (luajit, libluajit-5.1-dev): the 5.1 rock is not checked"
fi

# `make install` for both Luas into one prefix: two executables, two
# modules, one set of Lua files.
prefix="$tmp/prefix"
for lua in lua5.4 luajit; do
  [ "$lua" = lua5.4 ] || [ -n "$have_luajit" ] || continue
  (cd "$src" && make -j"$ncpu" install LUA=$lua PREFIX="$prefix") >"$tmp/install-$lua.log" 2>&1 || {
    cat "$tmp/install-$lua.log" >&2
    fail "make install LUA=$lua"
  }
done
[ -x "$prefix/bin/cell" ] || fail "make install: no $prefix/bin/cell"
ver=$("$prefix/bin/cell" -v) || fail "$prefix/bin/cell -v"
case "$ver" in *"Lua 5.4"*) ;; *) fail "make install LUA=luajit replaced bin/cell: '$ver'" ;; esac
if [ -n "$have_luajit" ]; then
  ver=$("$prefix/bin/cell-luajit" -v) || fail "make install LUA=luajit: $prefix/bin/cell-luajit -v"
  case "$ver" in *LuaJIT*) ;; *) fail "$prefix/bin/cell-luajit -v says '$ver'" ;; esac
fi

# The embedding examples against that prefix, as a host project builds
# them (examples/embed/Makefile): the binaries land under build/, nothing
# is left beside the sources.
before=$(ls "$src/examples/embed")
(cd "$src" && PKG_CONFIG_PATH="$prefix/lib/pkgconfig" make -C examples/embed) >"$tmp/embed.log" 2>&1 || {
  cat "$tmp/embed.log" >&2
  fail "make -C examples/embed"
}
[ "$(ls "$src/examples/embed")" = "$before" ] || fail "make -C examples/embed left files in examples/embed/"
[ -x "$src/build/installed-embed/game_loop" ] || fail "make -C examples/embed: no build/installed-embed/game_loop"
out=$("$src/build/installed-embed/lua5.4/host") || fail "build/installed-embed/lua5.4/host"
case "$out" in *"misuse 1: "*"TypeError: host.gain: expected a Tensor, got string (bad argument #1)"*) ;; *) fail "build/installed-embed/lua5.4/host printed: $out" ;; esac

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
