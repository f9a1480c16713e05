--- cell: a deep-learning framework for Lua on a C engine.
-- `local cell = require "cell"` gives tensors, dtypes and the engine's
-- settings; submodules (`cell.ops`, later `cell.nn`, ...) load on first use.
-- OpenMP's wait policy (idle workers sleep), set before cell.core loads
-- OpenMP: src/lua/ompenv/ompenv.c. Where that module is absent (the cell
-- executable sets it itself) nothing changes.
pcall(require, "cell.ompenv")
local core = require "cell.core"
require "cell.errors" -- errors from here on blame the user's line
local tensor = require "cell.tensor"

tensor.install(core.Tensor, core) -- before the copy: it wraps some of core's functions
local cell = {}
for k, v in pairs(core) do
  if k:sub(1, 1) ~= "_" then cell[k] = v end
end
cell.core = core
cell.OrderedDict = require "cell.ordered_dict"
require("cell.index_ops").install(core.Tensor) -- addmm, outer

local autograd = require "cell.autograd"
for _, k in ipairs { "grad", "value_and_grad", "no_grad", "enable_grad", "checkpoint" } do
  cell[k] = autograd[k]
end

local parameter = require "cell.parameter"
local initializer = require "cell.initializer"
for _, k in ipairs { "Parameter", "ParameterTuple", "is_parameter", "is_parameter_tuple" } do
  cell[k] = parameter[k]
end
cell.initializer = initializer.initializer
cell.is_initializer = initializer.is_initializer
--- The initializer classes: cell.init.Normal{sigma = 0.02}, cell.init.HeUniform(), ...
cell.init = {}
for _, k in ipairs { "Initializer", "Zero", "One", "Constant", "Normal", "Uniform", "TruncatedNormal",
  "XavierUniform", "XavierNormal", "HeUniform", "HeNormal", "Identity", "Orthogonal", "Dirac", "Sparse",
  "VarianceScaling" } do
  cell.init[k] = initializer[k]
end

--- Checkpoints (safetensors files): save_checkpoint, load_checkpoint, load_param_into_net.
local serialization = require "cell.serialization"
for _, k in ipairs { "save_checkpoint", "load_checkpoint", "load_param_into_net" } do
  cell[k] = serialization[k]
end

--- Data-parallel training: set_auto_parallel_context{parallel_mode = "data_parallel", ...}
-- (cell.parallel_context, loaded on first use).
for _, k in ipairs { "set_auto_parallel_context", "get_auto_parallel_context", "reset_auto_parallel_context" } do
  cell[k] = function(...) return require("cell.parallel_context")[k](...) end
end

--- cell.kwargs{name = value}: keyword arguments for a cell call, passed last.
cell.kwargs = require("cell.nn.call").kwargs

--- Submodules load lazily, so `require "cell"` stays cheap. A load that
-- fails (out of memory, any error) leaves nothing behind: the next access
-- tries again.
local lazy = require "cell.lazy"
local submodules = { ops = true, nn = true, dataset = true, train = true, communication = true, amp = true }
setmetatable(cell, {
  __index = function(t, k)
    if submodules[k] then
      local ok, mod = lazy.require("cell." .. k)
      if not ok then require("cell.errors").raise(lazy.message("cell." .. k .. " is not available", mod)) end
      rawset(t, k, mod)
      return mod
    end
    return nil
  end,
})

--- cell.set_device("GPU" [, id]) loads the GPU module (cell.cuda) on first
-- use, as MindSpore's set_device needs no import; cell.cuda then replaces
-- this function with its own (which says when there is no CUDA device).
do
  local plain_set_device = cell.set_device
  function cell.set_device(name, ...)
    if type(name) == "string" and name:match("^GPU") and not package.loaded["cell.cuda"] then
      local ok, err = pcall(require, "cell.cuda")
      if not ok then
        require("cell.errors").raise(("RuntimeError: set_device: device '%s' needs the GPU module cell.cuda, "
          .. "which did not load (build it with `make cuda` where the CUDA toolkit is): %s")
          :format(name, (tostring(err):match("^[^\n]*"))))
      end
      return cell.set_device(name, ...)
    end
    return plain_set_device(name, ...)
  end
end

--- CELL_DEVICE=<name>[:<id>] at load makes that device the default
-- (cell.set_device); TEST registers the tests' device first, which only a
-- build run with CELL_TEST_DEVICE=1 offers (make test-device).
local default_device = os.getenv("CELL_DEVICE")
if default_device and default_device ~= "" then
  local name, id = default_device:match("^([^:]+):?(%d*)$")
  if name == "TEST" and core._register_test_device then core._register_test_device() end
  cell.set_device(name or default_device, tonumber(id) or 0)
end

--- Loading cell leaves some 400 KB of permanent Lua objects (functions,
-- metatables, docs). Under Lua 5.4's generational collector that growth
-- makes the next major collection a "bad" one (little is freed), after
-- which Lua 5.4.0-5.4.5 waits until the heap has doubled again before it
-- collects at all (5.4.6 sets a minor-collection debt instead). Every
-- tensor made in that window stays allocated: bench/rss_loop.lua's loop
-- held 100 dead 4 KB tensors before its first collection, against 37 in
-- steady state. So when the collector is generational, finish loading as
-- 5.4.6 would: one full collection that makes the library's objects old
-- (minor collections then never traverse them), and a debt that makes the
-- next collection a minor one. An incremental collector and LuaJIT's are
-- left alone.
if _VERSION == "Lua 5.4" and collectgarbage("incremental") == "generational" then
  collectgarbage("generational")
  -- the pause may have left a debt as low as minus the heap; twice the heap
  -- makes it positive, so this step runs, and it is a minor collection
  collectgarbage("step", 2 * math.ceil(collectgarbage("count")))
end

return cell
