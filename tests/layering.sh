#!/bin/sh
# layering.sh - the engine's layers point one way. Every `#include "..."`
# of src/<layer>/*.c and *.h is resolved (beside the file, then include/)
# and may name only its own layer, a lower one, or a public header:
#
#   core < backend < ops < autograd < io < lua < repl
#
# src/comm (cell.communication's MPI module) sits beside the binding: like
# it, it may use only the public headers of include/ (it needs none).
# src/cuda (the cell.cuda GPU module) sits there too, and fills a device
# table: it may include the device layer's headers (src/ops/device.h), and
# src/comm/tensor_buf.h (its NCCL layer reads tensors as the MPI module does).
#
# (src/ops dispatches to src/backend, which includes core only.) Besides:
# no Lua header (lua.h, lauxlib.h, lualib.h, luajit.h, include/cell_lua.h)
# in the engine folders, which build libcell without Lua; and the binding
# (src/lua) uses the public API of include/ only, no engine header.
# Prints each offending line and exits 1; run by `make test`.
# Usage: sh tests/layering.sh [ROOT]
set -u
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || exit 2

rank() {
  case "$1" in
  core) echo 1 ;; backend) echo 2 ;; ops) echo 3 ;; autograd) echo 4 ;;
  io) echo 5 ;; lua | comm | cuda) echo 6 ;; repl) echo 7 ;; *) echo 0 ;;
  esac
}

bad=0
checked=0
for f in src/*/*.c src/*/*.h; do
  [ -f "$f" ] || continue
  checked=$((checked + 1))
  dir=$(dirname "$f")
  layer=$(basename "$dir")
  r=$(rank "$layer")
  [ "$r" = 0 ] && { echo "layering: $f: src/$layer is not a known layer (add it to tests/layering.sh)"; bad=1; continue; }
  # "name" or <name> after #include, with the line number.
  grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*["<]' "$f" |
    sed 's/^\([0-9]*\):[[:space:]]*#[[:space:]]*include[[:space:]]*\(["<]\)\([^">]*\).*/\1 \2 \3/' >"${TMPDIR:-/tmp}/layering.$$"
  while read -r line kind name; do
    if [ "$kind" = '"' ]; then where="$f:$line: #include \"$name\""; else where="$f:$line: #include <$name>"; fi
    case "$(basename "$name")" in
    lua.h | lauxlib.h | lualib.h | luajit.h | luaconf.h | cell_lua.h)
      if [ "$r" -lt 6 ]; then echo "layering: $where: a Lua header in the engine (src/$layer)"; bad=1; fi
      continue ;;
    esac
    [ "$kind" = '"' ] || continue
    target=""
    if [ -f "$dir/$name" ]; then
      target=$(cd "$(dirname "$dir/$name")" && pwd)/$(basename "$name")
    elif [ -f "include/$name" ]; then
      continue # the public API: any layer may use it
    else
      echo "layering: $where: not found beside the file nor in include/"; bad=1; continue
    fi
    case "$target" in
    "$root"/src/*/*) tlayer=$(basename "$(dirname "$target")") ;;
    "$root"/include/*) continue ;;
    *) echo "layering: $where: outside src/ and include/"; bad=1; continue ;;
    esac
    [ "$tlayer" = "$layer" ] && continue
    tr=$(rank "$tlayer")
    if [ "$layer" = lua ] || [ "$layer" = comm ]; then
      echo "layering: $where: src/$layer uses only the public API in include/"; bad=1
    elif [ "$tr" = 0 ] || [ "$tr" -gt "$r" ]; then
      echo "layering: $where: src/$layer may not include src/$tlayer (a higher layer)"; bad=1
    fi
  done <"${TMPDIR:-/tmp}/layering.$$"
  rm -f "${TMPDIR:-/tmp}/layering.$$"
done
[ "$checked" -gt 0 ] || { echo "layering: no sources under $root/src"; exit 2; }
if [ "$bad" != 0 ]; then
  echo "layering: FAILED (order: core < backend < ops < autograd < io < lua < repl)"
  exit 1
fi
echo "layering: ok ($checked files)"
