"""einsum.py - torch.einsum on the batched contractions of bench/einsum.lua
(float32, best mean wall time after a warm-up), with CELL_BENCH_THREADS
threads when set. Prints torch_einsum_bmm_ms and torch_einsum_attention_ms."""
import os
import sys
import time

import torch

threads = int(os.environ.get("CELL_BENCH_THREADS", "0") or 0)
if threads > 0:
    torch.set_num_threads(threads)
torch.set_grad_enabled(False)
ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 20
torch.manual_seed(1)
a, b = torch.randn(32, 128, 128), torch.randn(32, 128, 128)
q, k = torch.randn(8, 8, 128, 64), torch.randn(8, 8, 128, 64)


def best_ms(fn):
    fn()
    best = float("inf")
    for _ in range(3):
        t0 = time.perf_counter()
        for _ in range(ROUNDS):
            fn()
        best = min(best, (time.perf_counter() - t0) / ROUNDS)
    return best * 1e3


print("torch_einsum_bmm_ms %.3f ms" % best_ms(lambda: torch.einsum("bij,bjk->bik", a, b)))
print("torch_einsum_attention_ms %.3f ms" % best_ms(lambda: torch.einsum("bhqd,bhkd->bhqk", q, k)))
