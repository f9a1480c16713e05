"""interpolate.py - PyTorch's side of bench/interpolate.lua: F.interpolate,
bilinear, 16x3x64x64 -> 128x128 in float32, the forward under
torch.no_grad() and forward + backward of the output's sum; best mean wall
time of several repetitions after a warm-up, with CELL_BENCH_THREADS
threads when set. Prints `torch_interpolate_bilinear_ms` and
`torch_interpolate_bilinear_fwd_bwd_ms`."""
import os

import torch
import torch.nn.functional as F

import timing

threads = int(os.environ.get("CELL_BENCH_THREADS", "0") or 0)
if threads > 0:
    torch.set_num_threads(threads)
torch.manual_seed(1)

REPS, CALLS = 7, 10  # as bench/interpolate.lua
x = torch.randn(16, 3, 64, 64)
xg = x.clone().requires_grad_(True)


def forward():
    with torch.no_grad():
        return F.interpolate(x, size=(128, 128), mode="bilinear", align_corners=False)


def fwd_bwd():
    xg.grad = None
    F.interpolate(xg, size=(128, 128), mode="bilinear", align_corners=False).sum().backward()
    return xg.grad


print("torch_interpolate_bilinear_ms %.4f ms" % timing.bench_ms(forward, REPS, CALLS))
print("torch_interpolate_bilinear_fwd_bwd_ms %.4f ms" % timing.bench_ms(fwd_bwd, REPS, CALLS))
