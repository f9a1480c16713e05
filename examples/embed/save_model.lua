--- save_model.lua - the checkpoint examples/embed/game_loop runs, when the
-- training example's own (bin/cell examples/mlp.lua saves
-- build/demo/mlp.safetensors) is not at hand: an MLP 784-256-10 of nn.Dense
-- layers (the training example's shapes and names), seeded, saved with
-- cell.save_checkpoint. Its weights are untrained: the loop's timing and
-- allocations do not depend on them.
--
--   cell examples/embed/save_model.lua [OUT]   (default build/embed/mlp.safetensors)
local cell = require "cell"
local nn = cell.nn

local out = arg and arg[1] or "build/embed/mlp.safetensors"

local MLP = nn.Cell:extend("MLP")
function MLP:init()
  self.fc1 = nn.Dense(784, 256)
  self.relu = nn.ReLU()
  self.fc2 = nn.Dense(256, 10)
end
function MLP:construct(x) return self.fc2(self.relu(self.fc1(x))) end

cell.set_seed(2024)
cell.save_checkpoint(MLP(), out)
print("saved " .. out)
