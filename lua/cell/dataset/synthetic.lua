--- cell.dataset.synthetic: a small, learnable stand-in for Fashion-MNIST
-- with the same layout, for machines without the data and for tests.
--
--     local ds = cell.dataset.synthetic(512, {seed = 1})
--     ds.images   -- float32 {512, 1, 28, 28} in [0, 1]
--     ds.labels   -- int64 {512}, 1..10
--     ds.classes  -- Fashion-MNIST's class names
--
-- Class c is a bright round blob at its own place on a 28 x 28 grid
-- (shifted up to 2 pixels per image), under uniform noise: a small MLP or
-- CNN learns it in an epoch. The same (n, seed) gives the same tensors on
-- every run and under Lua 5.4 and LuaJIT alike; the engine's random
-- generator (cell.set_seed) is neither used nor disturbed.
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local raise = require("cell.errors").raise
local core = require "cell.core"
local fashion = require "cell.dataset.fashion_mnist"
local args_util = require "cell.util.args"

local M = {}

--- Blob centres (row, column) of the ten classes.
local CENTRES = {
  { 7, 7 }, { 7, 14 }, { 7, 21 }, { 14, 7 }, { 14, 14 }, { 14, 21 }, { 21, 7 }, { 21, 14 }, { 21, 21 }, { 3, 3 },
}
local SIGMA = 3.0
local NOISE = 0.15

--- Park and Miller's minimal standard generator: exact in doubles and in
-- Lua 5.4 integers alike, so both hosts draw the same numbers.
local MOD = 2147483647
local function generator(seed)
  local state = (math.floor(seed) % (MOD - 1)) + 1
  return function()
    state = (16807 * state) % MOD
    return state
  end
end
M.generator = generator

local type_name = require("cell.util.types").type_name

local OPTIONS = { "seed", "num_shards", "shard_id" }

--- synthetic(n [, {seed = 0, num_shards =, shard_id =}]) -> {images, labels, classes}.
function M.synthetic(n, opts)
  if type(n) ~= "number" or n ~= math.floor(n) or n == math.huge or n == -math.huge then
    raise(("TypeError: synthetic: n must be an integer, but got %s"):format(type_name(n)))
  end
  if n < 1 then raise(("ValueError: synthetic: n must be positive, but got %s"):format(tostring(n))) end
  -- The images take n * 784 float32s (6.6 GB at the bound), built from Lua lists of n.
  if n > 2097152 then
    raise(("ValueError: synthetic: n must be at most 2097152 (2^21 images), but got %s"):format(tostring(n)))
  end
  if opts ~= nil and (type(opts) ~= "table" or getmetatable(opts) ~= nil) then
    raise(("TypeError: synthetic: the options must be a table, but got %s"):format(type_name(opts)))
  end
  opts = args_util.named("synthetic", OPTIONS, 2, opts == nil and 0 or 1, opts)
  local seed = opts.seed
  local shards = require "cell.dataset.batches"
  local num_shards, shard_id = shards.check_shards("synthetic", opts.num_shards, opts.shard_id)
  if seed == nil then seed = 0 end
  if type(seed) ~= "number" or seed ~= math.floor(seed) or seed < 0 then
    raise(("TypeError: synthetic: seed must be a non-negative integer, but got %s")
      :format(type(seed) == "number" and tostring(seed) or type_name(seed)))
  end
  local rand = generator(seed * 7919 + n)
  local labels, rows, cols, phase = {}, {}, {}, {}
  for i = 1, n do
    local c = rand() % 10 + 1
    labels[i] = c
    rows[i] = CENTRES[c][1] + rand() % 5 - 2
    cols[i] = CENTRES[c][2] + rand() % 5 - 2
    phase[i] = (rand() % 100000) / 10
  end
  local f32 = core.float32
  local r = core.tensor(rows, f32):reshape({ n, 1, 1, 1 })
  local c = core.tensor(cols, f32):reshape({ n, 1, 1, 1 })
  local y = core.arange(0, 28, 1, f32):reshape({ 1, 1, 28, 1 })
  local x = core.arange(0, 28, 1, f32):reshape({ 1, 1, 1, 28 })
  local blob = (((y - r) ^ 2 + (x - c) ^ 2) * (-0.5 / (SIGMA * SIGMA))):exp()
  -- Noise: the fractional part of a fast-oscillating sine of (image phase
  -- + pixel position), uniform enough in [0, 1) for a stand-in.
  local pixel = core.arange(0, 784, 1, f32):reshape({ 1, 1, 28, 28 }) * 12.9898
  local s = ((core.tensor(phase, f32):reshape({ n, 1, 1, 1 }) + pixel):sin() * 43758.5453)
  local noise = (s - s:floor()) * (2 * NOISE) - NOISE
  local classes = {}
  for i, name in ipairs(fashion.CLASSES) do classes[i] = name end
  return shards.shard_dataset({
    images = (blob + noise):clamp(0, 1),
    labels = core.tensor(labels, core.int64),
    classes = classes,
  }, num_shards, shard_id)
end

return M
