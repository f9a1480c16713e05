#!/bin/sh
# run.sh - every benchmark, then the ratios that compare them. Each line is
# `name value unit`; the lines are also kept in $BUILD/bench.txt. Invoked by
# `make bench` (which builds the module and $BUILD/bench_matmul and sets
# LUA_PATH, LUA_CPATH, BUILD and CELL_LUA); runs standalone from a built tree.
# CELL_BENCH_THREADS (default: all cores) is the thread count of every
# matmul; CELL_BENCH_ITERS (default 1e6) the loop length of the Lua and
# PyTorch small-op benchmarks; CELL_BENCH_PYTHON (default /usr/bin/python3,
# Debian's, where python3-torch installs) the Python for the PyTorch side.
set -u

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
BUILD=${BUILD:-build}
LUA_BIN=${CELL_LUA:-lua5.4}
case "$LUA_BIN" in luajit*) luadir=luajit ;; *) luadir=lua5.4 ;; esac
export LUA_PATH="${LUA_PATH:-lua/?.lua;lua/?/init.lua;;}"
export LUA_CPATH="${LUA_CPATH:-$BUILD/$luadir/?.so;;}"
CELL_BENCH_THREADS=${CELL_BENCH_THREADS:-$(nproc 2>/dev/null || echo 1)}
export CELL_BENCH_THREADS
ITERS=${CELL_BENCH_ITERS:-1000000}
PYTHON=${CELL_BENCH_PYTHON:-/usr/bin/python3}

results="$BUILD/bench.txt"
mkdir -p "$BUILD"
: >"$results"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT INT TERM
failed=0

# Run one benchmark: show its lines and keep them; a failure is reported
# and the others still run.
run() {
  if "$@" >"$tmp"; then
    cat "$tmp"
    cat "$tmp" >>"$results"
  else
    cat "$tmp"
    echo "bench: FAILED: $*" >&2
    failed=1
  fi
}

echo "# small ops ($LUA_BIN, $ITERS iterations)"
run "$LUA_BIN" bench/small_ops.lua "$ITERS"

echo "# matmul ($CELL_BENCH_THREADS threads)"
if [ ! -x "$BUILD/bench_matmul" ]; then
  make --no-print-directory BUILD="$BUILD" "$BUILD/bench_matmul" >&2 || failed=1
fi
run "$BUILD/bench_matmul"

echo "# memory"
run "$LUA_BIN" bench/rss_loop.lua 1000000

echo "# autograd ($LUA_BIN, MLP 784-256-10 batch 64; 1e5 small value_and_grad steps)"
run "$LUA_BIN" bench/autograd.lua 100000

echo "# cells ($LUA_BIN: call overhead; state_dict of 1,000 parameters in 100 sub-cells)"
run "$LUA_BIN" bench/cell.lua "$ITERS"

echo "# training steps ($LUA_BIN: MLP and LeNet-5 at batch 64, an LSTM LM, Adam)"
run "$LUA_BIN" bench/train.lua

echo "# ordering ops ($LUA_BIN: sort, topk, logsumexp of 1e6 float32)"
run "$LUA_BIN" bench/sort_ops.lua
echo "# einsum ($LUA_BIN: batched contractions, float32)"
run "$LUA_BIN" bench/einsum.lua
echo "# interpolate ($LUA_BIN: bilinear 16x3x64x64 -> 128x128, float32)"
run "$LUA_BIN" bench/interpolate.lua

echo "# PyTorch"
if "$PYTHON" -c 'import torch' >/dev/null 2>&1; then
  run "$PYTHON" bench/torch/small_ops.py "$ITERS"
  run "$PYTHON" bench/torch/matmul.py
  run "$PYTHON" bench/torch/autograd.py
  run "$PYTHON" bench/torch/cell_state.py 200000
  run "$PYTHON" bench/torch/train.py
  run "$PYTHON" bench/torch/sort_ops.py
  run "$PYTHON" bench/torch/einsum.py
  run "$PYTHON" bench/torch/interpolate.py
  if [ -d /usr/share/datasets/fashion-mnist ]; then run "$PYTHON" bench/torch/fashion_lenet.py 1; fi
else
  echo "torch: not available, skipped"
fi

# Every ratio is oriented so that above 1 favours cell: times (us/op) are
# other over cell, throughputs (GFLOP/s) cell over other.
echo "# ratios"
awk '
function ratio(name, num, den) {
  if ((num in v) && (den in v) && v[den] > 0)
    printf "%s %.3f x\n", name, v[num] / v[den]
}
NF >= 2 && $2 ~ /^[0-9.eE+-]+$/ { v[$1] = $2 + 0 }
END {
  ratio("ratio_add_small_torch_over_cell", "torch_add_small", "lua_add_small")
  ratio("ratio_add_inplace_torch_over_cell", "torch_add_inplace_small", "lua_add_inplace_small")
  ratio("ratio_matmul_256_cell_over_openblas", "cell_matmul_f32_256", "openblas_sgemm_f32_256")
  ratio("ratio_matmul_1024_cell_over_openblas", "cell_matmul_f32_1024", "openblas_sgemm_f32_1024")
  ratio("ratio_matmul_2048_cell_over_openblas", "cell_matmul_f32_2048", "openblas_sgemm_f32_2048")
  ratio("ratio_matmul_256_cell_over_torch", "cell_matmul_f32_256", "torch_matmul_f32_256")
  ratio("ratio_matmul_1024_cell_over_torch", "cell_matmul_f32_1024", "torch_matmul_f32_1024")
  ratio("ratio_matmul_2048_cell_over_torch", "cell_matmul_f32_2048", "torch_matmul_f32_2048")
  ratio("ratio_mlp_fwd_bwd_torch_over_cell", "torch_mlp_fwd_bwd_ms", "cell_mlp_fwd_bwd_ms")
  ratio("ratio_train_step_mlp_torch_over_cell", "torch_train_step_mlp_ms", "cell_train_step_mlp_ms")
  ratio("ratio_train_step_lenet_torch_over_cell", "torch_train_step_lenet_ms", "cell_train_step_lenet_ms")
  ratio("ratio_train_step_lstm_lm_torch_over_cell", "torch_train_step_lstm_lm_ms", "cell_train_step_lstm_lm_ms")
  ratio("ratio_lenet_epoch_torch_over_cell", "torch_lenet_epoch_s", "cell_lenet_epoch_s")
  ratio("ratio_interpolate_bilinear_torch_over_cell", "torch_interpolate_bilinear_ms", "cell_interpolate_bilinear_ms")
  ratio("ratio_interpolate_bilinear_fwd_bwd_torch_over_cell", "torch_interpolate_bilinear_fwd_bwd_ms",
    "cell_interpolate_bilinear_fwd_bwd_ms")
  ratio("ratio_state_dict_torch_over_cell", "torch_state_dict_1000_params_ms", "cell_state_dict_1000_params_ms")
  ratio("ratio_sort_rows_torch_over_cell", "torch_sort_rows_1000x1000", "cell_sort_rows_1000x1000")
  ratio("ratio_sort_1e6_torch_over_cell", "torch_sort_1e6", "cell_sort_1e6")
  ratio("ratio_topk10_rows_torch_over_cell", "torch_topk10_rows_1000x1000", "cell_topk10_rows_1000x1000")
  ratio("ratio_logsumexp_rows_torch_over_cell", "torch_logsumexp_rows_1000x1000", "cell_logsumexp_rows_1000x1000")
  ratio("ratio_einsum_bmm_torch_over_cell", "torch_einsum_bmm_ms", "cell_einsum_bmm_ms")
  ratio("ratio_einsum_attention_torch_over_cell", "torch_einsum_attention_ms", "cell_einsum_attention_ms")
  ratio("ratio_load_state_dict_torch_over_cell", "torch_load_state_dict_1000_params_ms",
    "cell_load_state_dict_1000_params_ms")
}' "$results" >"$tmp"
cat "$tmp"
cat "$tmp" >>"$results"

exit "$failed"
