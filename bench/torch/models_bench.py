"""models_bench.py - PyTorch's side of bench/models.lua: one training step
(forward, backward, optimizer) of the six networks of the model suite, each
at 1 and at 2 threads (taking turns), float32, best mean wall time after a
warm-up:
MLP 784-256-10 (batch 64, Adam), LeNet-5 (batch 64, Adam), the CIFAR-size
CNN (batch 32, Momentum), the tiny GPT (batch 16, AdamW), the LSTM language
model (batch 16, Adam) and batch-1 MLP inference (in us). Prints
`torch_model_<name>_t<threads>_ms` (`_us` for infer),
`torch_model_<cnn|gpt>_scaling_t2_over_t1` and `torch_model_peak_rss_mib`.
Arguments name the models to run (default: all six); CELL_BENCH_MODEL_THREADS
(default "1 2") the thread counts. The networks and the step are
models.py's."""
import os
import resource
import sys

import torch

import timing
from models import CNN, LeNet5, gpt_step, lstm_step, mlp, mnist_step, train_step

REPS, CALLS = 5, 20


def build_cnn():
    net = CNN()
    return train_step(net, torch.optim.SGD(net.parameters(), 0.01, momentum=0.9), torch.rand(32, 3, 32, 32),
                      torch.randint(0, 10, (32,)))


def build_infer():
    net = mlp().eval()
    x = torch.rand(1, 784)

    def infer():
        with torch.no_grad():
            return net(x)

    return infer


BUILDERS = {"mlp": lambda: mnist_step(mlp()), "lenet": lambda: mnist_step(LeNet5()), "cnn": build_cnn, "gpt": gpt_step, "lstm": lstm_step,
            "infer": build_infer}

THREADS = [int(t) for t in os.environ.get("CELL_BENCH_MODEL_THREADS", "1 2").split()]
wanted = sys.argv[1:] or list(BUILDERS)
for name in wanted:
    if name not in BUILDERS:
        sys.exit(f"models_bench.py: unknown model '{name}' (known: {' '.join(BUILDERS)})")
for name in wanted:
    torch.manual_seed(1)
    fn = BUILDERS[name]()
    # The thread counts take turns, as in bench/models.lua.
    calls = 2000 if name == "infer" else CALLS
    ms = {th: float("inf") for th in THREADS}
    for _ in range(REPS):
        for th in THREADS:
            torch.set_num_threads(th)
            ms[th] = min(ms[th], timing.bench_ms(fn, 1, calls))
    for th in THREADS:
        if name == "infer":
            print(f"torch_model_infer_t{th}_us {ms[th] * 1e3:.3f} us")
        else:
            print(f"torch_model_{name}_t{th}_ms {ms[th]:.4f} ms")
    if name in ("cnn", "gpt") and 1 in ms and 2 in ms:
        print(f"torch_model_{name}_scaling_t2_over_t1 {ms[2] / ms[1]:.3f} x")
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"torch_model_peak_rss_mib {peak:.1f} MiB")
