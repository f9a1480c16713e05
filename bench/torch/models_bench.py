"""models_bench.py - PyTorch's side of bench/models.lua: one training step
(forward, backward, optimizer) of the six networks of the model suite, each
at 1 and at 2 threads, float32, best mean wall time after a warm-up:
MLP 784-256-10 (batch 64, Adam), LeNet-5 (batch 64, Adam), the CIFAR-size
CNN (batch 32, Momentum), the tiny GPT (batch 16, AdamW), the LSTM language
model (batch 16, Adam) and batch-1 MLP inference (in us). Prints
`torch_model_<name>_t<threads>_ms` (`_us` for infer),
`torch_model_<cnn|gpt>_scaling_t2_over_t1` and `torch_model_peak_rss_mib`.
Arguments name the models to run (default: all six); CELL_BENCH_MODEL_THREADS
(default "1 2") the thread counts."""
import os
import resource
import sys

import torch
from torch import nn

import timing
from models import LeNet5

REPS, CALLS = 5, 20
loss_fn = nn.CrossEntropyLoss()


def train_step(net, opt, x, y, loss=loss_fn):
    def step():
        opt.zero_grad()
        out = loss(net(x), y)
        out.backward()
        opt.step()
        return out

    return step


def mlp_net():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))


def build_mlp():
    net = mlp_net()
    return train_step(net, torch.optim.Adam(net.parameters(), 1e-3), torch.rand(64, 1, 28, 28),
                      torch.randint(0, 10, (64,)))


def build_lenet():
    net = LeNet5()
    return train_step(net, torch.optim.Adam(net.parameters(), 1e-3), torch.rand(64, 1, 28, 28),
                      torch.randint(0, 10, (64,)))


class CNN(nn.Module):
    """bench/models.lua's CIFAR-size CNN (convolutions without bias, as
    cell's Conv2d defaults)."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(32)
        self.pool = nn.MaxPool2d(2, 2)
        self.fc = nn.Linear(32 * 8 * 8, 10)

    def forward(self, x):
        x = self.pool(torch.relu(self.bn1(self.conv1(x))))
        x = self.pool(torch.relu(self.bn2(self.conv2(x))))
        return self.fc(torch.flatten(x, 1))


def build_cnn():
    net = CNN()
    return train_step(net, torch.optim.SGD(net.parameters(), 0.01, momentum=0.9), torch.rand(32, 3, 32, 32),
                      torch.randint(0, 10, (32,)))


V, T, D, H, L, B = 40, 32, 64, 4, 2, 16


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(V, D)
        self.pos = nn.Embedding(T, D)
        block = nn.TransformerEncoderLayer(D, H, 4 * D, 0.0, activation="gelu", batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(block, L, nn.LayerNorm(D), enable_nested_tensor=False)
        self.head = nn.Linear(D, V)
        self.register_buffer("positions", torch.arange(T))
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(T))

    def forward(self, x):
        return self.head(self.blocks(self.tok(x) + self.pos(self.positions), mask=self.mask)).reshape(-1, V)


def build_gpt():
    net = GPT()
    return train_step(net, torch.optim.AdamW(net.parameters(), 1e-3), torch.randint(0, V, (B, T)),
                      torch.randint(0, V, (B * T,)))


class CharLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(64, 128)
        self.lstm = nn.LSTM(128, 128, batch_first=True)
        self.head = nn.Linear(128, 64)

    def forward(self, ids):
        return self.head(self.lstm(self.embed(ids))[0].reshape(-1, 128))


def build_lstm():
    net = CharLM()
    return train_step(net, torch.optim.Adam(net.parameters(), 1e-3), torch.randint(0, 64, (16, 32)),
                      torch.randint(0, 64, (16 * 32,)))


def build_infer():
    net = mlp_net().eval()
    x = torch.rand(1, 784)

    def infer():
        with torch.no_grad():
            return net(x)

    return infer


BUILDERS = {"mlp": build_mlp, "lenet": build_lenet, "cnn": build_cnn, "gpt": build_gpt, "lstm": build_lstm,
            "infer": build_infer}

THREADS = [int(t) for t in os.environ.get("CELL_BENCH_MODEL_THREADS", "1 2").split()]
wanted = sys.argv[1:] or list(BUILDERS)
for name in wanted:
    if name not in BUILDERS:
        sys.exit(f"models_bench.py: unknown model '{name}' (known: {' '.join(BUILDERS)})")
for name in wanted:
    torch.manual_seed(1)
    fn = BUILDERS[name]()
    ms = {}
    for th in THREADS:
        torch.set_num_threads(th)
        if name == "infer":
            ms[th] = timing.bench_ms(fn, REPS, 2000)
            print(f"torch_model_infer_t{th}_us {ms[th] * 1e3:.3f} us")
        else:
            ms[th] = timing.bench_ms(fn, REPS, CALLS)
            print(f"torch_model_{name}_t{th}_ms {ms[th]:.4f} ms")
    if name in ("cnn", "gpt") and 1 in ms and 2 in ms:
        print(f"torch_model_{name}_scaling_t2_over_t1 {ms[2] / ms[1]:.3f} x")
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"torch_model_peak_rss_mib {peak:.1f} MiB")
