"""models.py - the networks of the side-by-side benchmarks in PyTorch, as
the Lua benchmarks build them (examples/lib/models.lua, bench/models.lua,
bench/gpt.lua): LeNet-5 with batch norm after each convolution (28x28
inputs, first convolution padded to keep the size), the MLP 784-256-10, the
CIFAR-size CNN, the tiny GPT and the LSTM language model; and train_step,
the one training step (forward, loss, backward, optimizer) every PyTorch
benchmark times."""
import torch
from torch import nn

loss_fn = nn.CrossEntropyLoss()


def train_step(net, opt, x, y, loss=loss_fn):
    """A function that runs one step of net on (x, y) with opt and returns
    the loss."""

    def step():
        opt.zero_grad()
        out = loss(net(x), y)
        out.backward()
        opt.step()
        return out

    return step


def mlp():
    """The MLP 784-256-10 (inputs of any shape with 784 elements a row)."""
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))


def mnist_step(net):
    """net's training step (Adam 1e-3) on a random batch of 64 28x28
    images and their labels: the MLP's and LeNet-5's."""
    return train_step(net, torch.optim.Adam(net.parameters(), 1e-3), torch.rand(64, 1, 28, 28),
                      torch.randint(0, 10, (64,)))


class LeNet5(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.bn1 = nn.BatchNorm2d(6)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.bn2 = nn.BatchNorm2d(16)
        self.pool = nn.MaxPool2d(2, 2)
        self.fc1 = nn.Linear(400, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(torch.relu(self.bn1(self.conv1(x))))
        x = self.pool(torch.relu(self.bn2(self.conv2(x))))
        x = torch.flatten(x, 1)
        return self.fc3(torch.relu(self.fc2(torch.relu(self.fc1(x)))))


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


# The tiny GPT: vocabulary, context, width, heads, blocks, batch.
GPT_V, GPT_T, GPT_D, GPT_H, GPT_L, GPT_B = 40, 32, 64, 4, 2, 16


class GPT(nn.Module):
    """bench/gpt.lua's tiny GPT: 2 pre-norm blocks with feed-forward 4 * D
    and GELU, causal mask, no dropout. Returns the logits as (B * T, V)
    rows, as the loss takes them."""

    def __init__(self):
        super().__init__()
        V, T, D, H, L = GPT_V, GPT_T, GPT_D, GPT_H, GPT_L
        self.tok = nn.Embedding(V, D)
        self.pos = nn.Embedding(T, D)
        block = nn.TransformerEncoderLayer(D, H, 4 * D, 0.0, activation="gelu", batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(block, L, nn.LayerNorm(D), enable_nested_tensor=False)
        self.head = nn.Linear(D, V)
        self.register_buffer("positions", torch.arange(T))
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(T))

    def forward(self, x):
        return self.head(self.blocks(self.tok(x) + self.pos(self.positions), mask=self.mask)).reshape(-1, GPT_V)


def gpt_step():
    """The tiny GPT's training step (AdamW 1e-3) on a random batch of
    GPT_B sequences and their next tokens."""
    net = GPT()
    x = torch.randint(0, GPT_V, (GPT_B, GPT_T))
    y = torch.randint(0, GPT_V, (GPT_B * GPT_T,))
    return train_step(net, torch.optim.AdamW(net.parameters(), 1e-3), x, y)


class CharLM(nn.Module):
    """The LSTM language model of bench/train.lua and bench/models.lua:
    vocab 64, hidden 128; logits as (B * T, 64) rows."""

    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(64, 128)
        self.lstm = nn.LSTM(128, 128, batch_first=True)
        self.head = nn.Linear(128, 64)

    def forward(self, ids):
        return self.head(self.lstm(self.embed(ids))[0].reshape(-1, 128))


def lstm_step():
    """The LSTM language model's training step (Adam 1e-3) on a random
    batch of 16 sequences of 32 and their next characters."""
    net = CharLM()
    return train_step(net, torch.optim.Adam(net.parameters(), 1e-3), torch.randint(0, 64, (16, 32)),
                      torch.randint(0, 64, (16 * 32,)))
