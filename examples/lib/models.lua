--- examples/lib/models.lua - the networks the examples and benchmarks
-- train: LeNet-5 (with batch normalisation after each convolution) for
-- 28x28 images, the 784-256-10 perceptron, the benchmarks' CIFAR-size CNN
-- and their tiny GPT.
local cell = require "cell"
local nn = cell.nn

local M = {}

--- LeNet-5 for 28x28 inputs: the first convolution keeps the size (pad
-- "same"), so the second sees 14x14 and leaves 16 maps of 5x5.
M.LeNet5 = nn.Cell:extend("LeNet5")
function M.LeNet5:init(num_classes)
  self.conv1 = nn.Conv2d(1, 6, 5, { pad_mode = "same" })
  self.bn1 = nn.BatchNorm2d(6)
  self.conv2 = nn.Conv2d(6, 16, 5, { pad_mode = "valid" })
  self.bn2 = nn.BatchNorm2d(16)
  self.relu = nn.ReLU()
  self.pool = nn.MaxPool2d(2, 2)
  self.flatten = nn.Flatten()
  self.fc1 = nn.Dense(16 * 5 * 5, 120)
  self.fc2 = nn.Dense(120, 84)
  self.fc3 = nn.Dense(84, num_classes or 10)
end
function M.LeNet5:construct(x)
  x = self.pool(self.relu(self.bn1(self.conv1(x))))
  x = self.pool(self.relu(self.bn2(self.conv2(x))))
  x = self.flatten(x)
  x = self.relu(self.fc1(x))
  x = self.relu(self.fc2(x))
  return self.fc3(x)
end

--- The 784-256-10 perceptron (its checkpoint is what examples/embed runs).
M.MLP = nn.Cell:extend("MLP")
function M.MLP:init()
  self.flatten = nn.Flatten()
  self.fc1 = nn.Dense(784, 256)
  self.fc2 = nn.Dense(256, 10)
end
function M.MLP:construct(x) return self.fc2(self.fc1(self.flatten(x)):relu()) end

--- The benchmarks' CIFAR-size CNN (issue 15's row): for 3x32x32 inputs,
-- two 3x3 convolutions of 16 and 32 maps (pad "same"), each with batch
-- normalisation, ReLU and a 2x2 max-pool, then a Dense to 10 classes.
M.CifarCNN = nn.Cell:extend("CifarCNN")
function M.CifarCNN:init()
  self.conv1 = nn.Conv2d(3, 16, 3, { pad_mode = "same" })
  self.bn1 = nn.BatchNorm2d(16)
  self.conv2 = nn.Conv2d(16, 32, 3, { pad_mode = "same" })
  self.bn2 = nn.BatchNorm2d(32)
  self.relu = nn.ReLU()
  self.pool = nn.MaxPool2d(2, 2)
  self.flatten = nn.Flatten()
  self.fc = nn.Dense(32 * 8 * 8, 10)
end
function M.CifarCNN:construct(x)
  x = self.pool(self.relu(self.bn1(self.conv1(x))))
  x = self.pool(self.relu(self.bn2(self.conv2(x))))
  return self.fc(self.flatten(x))
end

--- The benchmarks' tiny GPT (issue 15's row): token and position
-- embeddings, L pre-norm Transformer encoder blocks under a causal mask
-- (GELU, feed-forward 4 D, no dropout), a final LayerNorm and a Dense head.
-- Inputs {B, T} token ids (1-based, up to V); outputs {B, T, V} logits.
M.TinyGPT = nn.Cell:extend("TinyGPT")
function M.TinyGPT:init(V, T, D, H, L)
  self.tok = nn.Embedding(V, D)
  self.pos = nn.Embedding(T, D)
  local block = nn.TransformerEncoderLayer(D, H, { dim_feedforward = 4 * D, dropout = 0, activation = "gelu",
    batch_first = true, norm_first = true })
  self.blocks = nn.TransformerEncoder(block, L, nn.LayerNorm({ D }))
  self.head = nn.Dense(D, V)
  -- a buffer (not saved), so net:move_to(device) moves it with the weights
  self:register_buffer("positions", cell.arange(1, T + 1, 1, cell.int64), false)
end
function M.TinyGPT:construct(x)
  return self.head(self.blocks(self.tok(x) + self.pos(self.positions), { is_causal = true }))
end

--- Cross-entropy over every position of {B, T, V} logits and {B, T} ids.
M.SeqLoss = nn.Cell:extend("SeqLoss")
function M.SeqLoss:init(V) self.V = V end
function M.SeqLoss:construct(logits, y)
  return cell.ops.cross_entropy(logits:reshape({ -1, self.V }), y:reshape({ -1 }))
end

return M
