#!/bin/sh
# embed.sh - batch-1 forward of the MLP 784-256-10, side by side: the C
# embedding path (examples/embed/game_loop), LuaJIT through the FFI and
# through the module, Lua 5.4 through the module, and PyTorch's model(x)
# under torch.no_grad(), all on one thread, one checkpoint, one input.
#
#   sh bench/embed.sh [CHECKPOINT]     (or `make bench-embed`)
#
# CHECKPOINT defaults to $CELL_EMBED_CKPT, else to the model the training
# example saved (build/demo/mlp.safetensors, from bin/cell examples/mlp.lua),
# else to a model saved here from a seeded nn.Dense 784-256-10 net (the same
# shapes: timing does not depend on the values). CELL_BENCH_STEPS (default 10000) is the
# number of timed steps; CELL_BENCH_PYTHON (default /usr/bin/python3) the
# Python with torch. Needs `make` (and `make LUA=luajit` for the LuaJIT
# rows: skipped when absent). Prints `name value unit` lines, then the
# table and the targets' checks; exits nonzero if a program failed.
set -u

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
BUILD=${BUILD:-build}
STEPS=${CELL_BENCH_STEPS:-10000}
PYTHON=${CELL_BENCH_PYTHON:-/usr/bin/python3}
LPATH="lua/?.lua;lua/?/init.lua;;"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/cell-embed.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
out="$tmp/lines"
: >"$out"
failed=0

run() {
  if "$@" >"$tmp/one" 2>"$tmp/err"; then
    grep -E '^[a-z0-9_]+ [0-9.eE+-]+ [a-z/]+$' "$tmp/one" | tee -a "$out"
  else
    cat "$tmp/one" "$tmp/err" >&2
    echo "bench-embed: FAILED: $*" >&2
    failed=1
  fi
}

ckpt=${1:-${CELL_EMBED_CKPT:-}}
# The training example's model (bin/cell examples/mlp.lua), when it was run.
if [ -z "$ckpt" ] && [ -f build/demo/mlp.safetensors ]; then ckpt=build/demo/mlp.safetensors; fi
if [ -z "$ckpt" ]; then
  ckpt="$tmp/mlp.safetensors"
  CKPT="$ckpt" LUA_PATH="$LPATH" LUA_CPATH="$BUILD/lua5.4/?.so;;" lua5.4 -e '
    local cell = require "cell"
    local nn = cell.nn
    cell.set_seed(1)
    local Net = nn.Cell:extend("MLP")
    function Net:init() self.fc1 = nn.Dense(784, 256); self.relu = nn.ReLU(); self.fc2 = nn.Dense(256, 10) end
    function Net:construct(x) return self.fc2(self.relu(self.fc1(x))) end
    cell.save_checkpoint(Net(), os.getenv("CKPT"))' || { echo "bench-embed: cannot write $ckpt" >&2; exit 1; }
fi
echo "# batch-1 MLP forward, $STEPS steps, 1 thread, checkpoint $ckpt"

run "$BUILD/embed/game_loop" "$ckpt" "$STEPS"
if [ -f "$BUILD/luajit/cell/core.so" ] && command -v luajit >/dev/null 2>&1; then
  run env LUA_PATH="$LPATH" LUA_CPATH="$BUILD/luajit/?.so;;" luajit bench/embed.lua "$ckpt" "$STEPS"
else
  echo "luajit: not built (make LUA=luajit), skipped"
fi
run env LUA_PATH="$LPATH" LUA_CPATH="$BUILD/lua5.4/?.so;;" lua5.4 bench/embed.lua "$ckpt" "$STEPS"
if "$PYTHON" -c 'import torch' >/dev/null 2>&1; then
  run "$PYTHON" bench/torch/embed.py "$ckpt" "$STEPS"
else
  echo "torch: not available, skipped"
fi

echo "# side by side (microseconds per step; OS allocations per step after warm-up)"
awk '
NF == 3 { v[$1] = $2 }
function row(label, key) {
  if ((key "_p50") in v)
    printf "%-34s %10.2f %10.2f %10s\n", label, v[key "_p50"], v[key "_p99"],
      ((key "_os_allocs_per_step") in v) ? sprintf("%.4f", v[key "_os_allocs_per_step"]) : "-"
}
END {
  printf "%-34s %10s %10s %10s\n", "path", "p50", "p99", "OS allocs"
  row("C (examples/embed/game_loop)", "embed_c")
  row("LuaJIT, FFI (cell.ffi)", "luajit_ffi")
  row("LuaJIT, module ops", "luajit_ops")
  row("LuaJIT, module nn.Cell", "luajit_net")
  row("Lua 5.4, module ops", "lua54_ops")
  row("Lua 5.4, module nn.Cell", "lua54_net")
  row("PyTorch model(x), no_grad", "torch")
  if (("embed_c_p50" in v) && ("torch_p50" in v)) {
    r = v["torch_p50"] / v["embed_c_p50"]
    printf "ratio_torch_over_c_p50 %.3f x (target >= 3: %s)\n", r, (r >= 3) ? "met" : "NOT met"
  }
  if ("embed_c_p50" in v) {
    r = v["embed_c_p99"] / v["embed_c_p50"]
    printf "ratio_c_p99_over_p50 %.3f x (target <= 2: %s)\n", r, (r <= 2) ? "met" : "NOT met"
    a = v["embed_c_os_allocs_per_step"] + 0
    printf "embed_c_os_allocs %.4f per step (target 0: %s)\n", a, (a == 0) ? "met" : "NOT met"
    if ("embed_spin_overrun_pct" in v)
      printf "machine noise: %.2f%% of busy waits of p50 length took over 2x p50%s\n",
        v["embed_spin_overrun_pct"], (v["embed_spin_overrun_pct"] > 1) ? \
        " (over 1%: p99 here measures the machine, not the code)" : ""
  }
}' "$out"

exit "$failed"
