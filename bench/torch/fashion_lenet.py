"""fashion_lenet.py - PyTorch's side of the demo (examples/fashion_mnist.lua):
the same LeNet-5 with batch norm, Adam from 5e-3 with a per-step cosine
decay, batch 64 with shuffling, two epochs on
Fashion-MNIST read from the Debian package, then the test accuracy. Prints
`torch_lenet_epoch_s` (wall seconds per epoch, data already in memory) and
`torch_lenet_test_accuracy`. Usage: fashion_lenet.py [epochs] [data dir]"""
import gzip
import math
import os
import struct
import sys
import time

import torch
from torch import nn

from models import LeNet5

epochs = int(sys.argv[1]) if len(sys.argv) > 1 else 2
root = sys.argv[2] if len(sys.argv) > 2 else "/usr/share/datasets/fashion-mnist"
threads = int(os.environ.get("CELL_BENCH_THREADS", "0") or 0)
if threads > 0:
    torch.set_num_threads(threads)
torch.manual_seed(1)


def idx(name):
    with gzip.open(os.path.join(root, name)) as f:
        data = f.read()
    magic, = struct.unpack(">I", data[:4])
    ndim = magic & 0xFF
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return torch.frombuffer(bytearray(data[4 + 4 * ndim:]), dtype=torch.uint8).reshape(dims)


def load(kind):
    x = idx(f"{kind}-images-idx3-ubyte.gz").float().div_(255).unsqueeze(1)
    y = idx(f"{kind}-labels-idx1-ubyte.gz").long()
    return x, y


xtr, ytr = load("train")
xte, yte = load("t10k")
net = LeNet5()
opt = torch.optim.Adam(net.parameters(), 5e-3)
loss_fn = nn.CrossEntropyLoss()
total = epochs * ((len(ytr) + 63) // 64)
step = 0
t0 = time.perf_counter()
for epoch in range(epochs):
    perm = torch.randperm(len(ytr))
    net.train()
    for i in range(0, len(ytr), 64):
        for g in opt.param_groups:
            g["lr"] = 5e-3 * 0.5 * (1 + math.cos(math.pi * step / total))
        step += 1
        b = perm[i:i + 64]
        opt.zero_grad()
        loss = loss_fn(net(xtr[b]), ytr[b])
        loss.backward()
        opt.step()
secs = (time.perf_counter() - t0) / epochs
net.eval()
with torch.no_grad():
    acc = (net(xte).argmax(1) == yte).float().mean().item()
print(f"torch_lenet_epoch_s {secs:.2f} s")
print(f"torch_lenet_test_accuracy {acc:.4f}")
