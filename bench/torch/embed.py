"""embed.py - PyTorch's batch-1 forward of the same MLP, the side-by-side of
examples/embed/game_loop.c and bench/embed.lua: model(x) under
torch.no_grad(), torch.set_num_threads(1), the same checkpoint (read here by
hand: 8-byte little-endian header length, JSON header, raw little-endian
data), the same input and the same clock discipline (a monotonic clock
around each step, after a warm-up).

    /usr/bin/python3 bench/torch/embed.py CHECKPOINT [STEPS]

Prints `torch_p50 X us`, `torch_p99 X us`."""
import json
import math
import struct
import sys
import time

import numpy as np
import torch

WARMUP = 200


def load_safetensors(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    dtypes = {"F32": np.float32, "F64": np.float64}
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, end = e["data_offsets"]
        a = np.frombuffer(data[b:end], dtype=dtypes[e["dtype"]]).reshape(e["shape"])
        out[name] = torch.from_numpy(a.copy())
    return out


def chain(params, n_in=784):
    """The Dense layers chained from n_in inputs by their sizes."""
    layers, want = [], n_in
    while True:
        nxt = [k[: -len("weight")] for k, v in params.items()
               if k.endswith("weight") and v.dim() == 2 and v.shape[1] == want]
        if not nxt:
            return layers
        w, b = params[nxt[0] + "weight"], params[nxt[0] + "bias"]
        lin = torch.nn.Linear(w.shape[1], w.shape[0])
        with torch.no_grad():
            lin.weight.copy_(w)
            lin.bias.copy_(b)
        layers.append(lin)
        want = w.shape[0]


def main():
    path = sys.argv[1]
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 10000
    torch.set_num_threads(1)
    layers = chain(load_safetensors(path))
    mods = []
    for i, lin in enumerate(layers):
        mods.append(lin)
        if i + 1 < len(layers):
            mods.append(torch.nn.ReLU())
    model = torch.nn.Sequential(*mods).eval()
    x = torch.tensor([[0.5 + 0.5 * math.sin(0.2 * (i % 28)) for i in range(784)]],
                     dtype=torch.float32)
    lat = []
    clock = time.perf_counter_ns
    with torch.no_grad():
        for i in range(WARMUP + steps):
            t0 = clock()
            model(x)
            t1 = clock()
            if i >= WARMUP:
                lat.append((t1 - t0) / 1000.0)
    lat.sort()
    print("torch_p50 %.3f us" % lat[len(lat) // 2])
    print("torch_p99 %.3f us" % lat[(len(lat) * 99) // 100])


if __name__ == "__main__":
    main()
