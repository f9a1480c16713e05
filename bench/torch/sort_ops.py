"""sort_ops.py - PyTorch's side of bench/sort_ops.lua: sort of 1000 rows of
1000 float32 (and of one line of 1e6), topk (k = 10) of the rows, logsumexp
of the rows; wall clock, best of 5 after a warm-up, with CELL_BENCH_THREADS
threads when set.
Prints `torch_<op> X ms` lines."""
import os
import time

import torch

REPS = 5
threads = int(os.environ.get("CELL_BENCH_THREADS", "0") or 0)
if threads > 0:
    torch.set_num_threads(threads)
torch.set_grad_enabled(False)
torch.manual_seed(0)
m = torch.randn(1000, 1000)
v = torch.randn(1000000)


def bench(fn):
    fn()
    best = float("inf")
    for _ in range(REPS):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best * 1e3


print(f"torch_sort_rows_1000x1000 {bench(lambda: torch.sort(m, dim=1, stable=True)):.3f} ms")
print(f"torch_sort_1e6 {bench(lambda: torch.sort(v, dim=0, stable=True)):.3f} ms")
print(f"torch_topk10_rows_1000x1000 {bench(lambda: torch.topk(m, 10, 1)):.3f} ms")
print(f"torch_logsumexp_rows_1000x1000 {bench(lambda: torch.logsumexp(m, 1)):.3f} ms")
