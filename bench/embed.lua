--- embed.lua - batch-1 forward of an MLP from a checkpoint, from Lua: the
-- side-by-side of examples/embed/game_loop.c (the C path) and
-- bench/torch/embed.py. Under LuaJIT, also through the FFI (cell.ffi: the
-- engine's C functions called directly on handles).
--
--   lua5.4 bench/embed.lua CHECKPOINT [STEPS]     (or luajit)
--
-- Prints `name value unit` lines: <host>_<path>_p50, _p99 (microseconds
-- per step) and _os_allocs_per_step, where host is lua54 or luajit and path
-- is `net` (the Cell: net(x) under no_grad, parameters loaded with
-- load_param_into_net), `ops` (the same forward as tensor ops on the
-- loaded tensors) or `ffi`. Every path runs under no_grad (the loaded
-- Parameters require grad). Timing: a monotonic clock around each step,
-- after a warm-up; one thread, as the C example.
local cell = require "cell"
local nn = cell.nn
local core = cell.core

local path = assert(arg[1], "usage: embed.lua CHECKPOINT [STEPS]")
local steps = tonumber(arg[2] or "10000")
local warmup = 200
local host = (type(jit) == "table") and "luajit" or "lua54"

cell.set_num_threads(1)

local params = cell.load_checkpoint(path)
-- The Dense layers, chained from 784 inputs by their sizes (as game_loop does).
local layers, want = {}, 784
local found = true
while found do
  found = false
  for _, name in ipairs(params:keys()) do
    local w = params[name]
    local prefix = name:match("^(.*)weight$")
    if prefix and w.ndim == 2 and w.shape[2] == want then
      layers[#layers + 1] = { prefix = prefix:gsub("%.$", ""), w = w, b = params[prefix .. "bias"] }
      want = w.shape[1]
      found = true
      break
    end
  end
end
assert(#layers >= 1, path .. ": no Dense layer takes 784 inputs")

local x = cell.zeros({ 1, 784 })
for i = 1, 784 do x[1][i] = 0.5 + 0.5 * math.sin(0.2 * ((i - 1) % 28)) end

local function percentile(sorted, q) return sorted[math.floor(#sorted * q) + 1] end

--- Time fn over the steps; print the lines for this path.
local function measure(name, fn)
  local lat = {}
  local stats0
  for i = 1, warmup + steps do
    if i == warmup + 1 then stats0 = cell.memory_stats() end
    local t0 = core.perf_counter()
    fn()
    local t1 = core.perf_counter()
    if i > warmup then lat[#lat + 1] = (t1 - t0) * 1e6 end
  end
  local stats1 = cell.memory_stats()
  table.sort(lat)
  local os_allocs = stats1.os_allocations - stats0.os_allocations
  print(("%s_%s_p50 %.3f us"):format(host, name, percentile(lat, 0.5)))
  print(("%s_%s_p99 %.3f us"):format(host, name, percentile(lat, 0.99)))
  print(("%s_%s_os_allocs_per_step %.4f count"):format(host, name, os_allocs / steps))
end

-- 1. The Cell, as a Lua user writes it.
local MLP = nn.Cell:extend("MLP")
function MLP:init()
  self.layers = {}
  for i, l in ipairs(layers) do
    local d = nn.Dense(l.w.shape[2], l.w.shape[1])
    self:insert_child_to_cell("l" .. i, d)
    self.layers[i] = d
  end
  self.relu = nn.ReLU()
end
function MLP:construct(h)
  for i, d in ipairs(self.layers) do
    h = d(h)
    if i < #self.layers then h = self.relu(h) end
  end
  return h
end
local net = MLP()
for i, l in ipairs(layers) do
  net.layers[i].weight:set_data(l.w)
  net.layers[i].bias:set_data(l.b)
end
local y_net
cell.no_grad(measure, "net", function() y_net = net(x) end)

-- 2. The same forward as tensor ops.
local wts = {}
for i, l in ipairs(layers) do wts[i] = l.w:transpose(1, 2) end
local y_ops
cell.no_grad(measure, "ops", function()
  local h = x
  for i, l in ipairs(layers) do
    h = h:matmul(wts[i]) + l.b
    if i < #layers then h = h:relu() end
  end
  y_ops = h
end)
assert((y_ops - y_net):abs():max():item() < 1e-5, "net and ops disagree")

-- 3. LuaJIT: through the FFI, as a LuaJIT game would call the engine.
if host == "luajit" then
  local ffi = require "ffi"
  local F = require "cell.ffi"
  local C = F.C
  local box = ffi.new("cell_tensor *[1]")
  local hx = F.handle(x)
  local hw, hb = {}, {}
  for i, l in ipairs(layers) do
    hw[i] = F.handle(wts[i])
    hb[i] = F.handle(l.b)
  end
  local n = #layers
  local last
  cell.no_grad(measure, "ffi", function()
    local h = hx
    for i = 1, n do
      F.check(C.cell_op_matmul(h, hw[i], box))
      if i > 1 then C.cell_tensor_release(h) end
      h = box[0]
      F.check(C.cell_op_binary_(C.CELL_OP_ADD, h, hb[i]))
      if i < n then F.check(C.cell_op_unary_(C.CELL_OP_RELU, h)) end
    end
    if last then C.cell_tensor_release(last) end
    last = h
  end)
  local y_ffi = F.tensor(last)
  assert((y_ffi - y_net):abs():max():item() < 1e-5, "ffi and net disagree")
end
