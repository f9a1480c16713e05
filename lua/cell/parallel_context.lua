--- cell.parallel_context: MindSpore's auto-parallel context, the switch
-- that makes TrainOneStepCell and cell.train.Model train data-parallel:
--
--     cell.communication.init()
--     cell.set_auto_parallel_context{parallel_mode = "data_parallel", gradients_mean = true}
--
-- Only "stand_alone" (the default) and "data_parallel" are built. The
-- training layer asks `distributed()` (data-parallel with more than one
-- rank) and `rank()` (0 without cell.communication) without loading MPI.
-- Written in the Lua subset shared by Lua 5.4 and LuaJIT 2.1.
local raise = require("cell.errors").raise
local type_name = require("cell.util.types").type_name

local M = {}

local DEFAULTS = { parallel_mode = "stand_alone", gradients_mean = false, device_num = 1, global_rank = 0,
  parameter_broadcast = true }
local MODES = { stand_alone = true, data_parallel = true, semi_auto_parallel = false, auto_parallel = false,
  hybrid_parallel = false }

local ctx = {}
local function reset()
  ctx = {}
  for k, v in pairs(DEFAULTS) do ctx[k] = v end
  ctx.device_num_set, ctx.global_rank_set = false, false
end
reset()

local function check_int(key, v)
  if type(v) ~= "number" or v ~= math.floor(v) or v < 0 or v == math.huge then
    raise(("TypeError: set_auto_parallel_context: %s must be a non-negative integer, but got %s")
      :format(key, type(v) == "number" and tostring(v) or type_name(v)))
  end
end

--- set_auto_parallel_context{parallel_mode =, gradients_mean =, device_num =,
-- global_rank =, parameter_broadcast =}.
function M.set_auto_parallel_context(opts)
  if type(opts) ~= "table" or getmetatable(opts) ~= nil then
    raise(("TypeError: set_auto_parallel_context: expected a table of options, but got %s"):format(type_name(opts)))
  end
  for k, v in pairs(opts) do
    if DEFAULTS[k] == nil then
      raise(("ValueError: set_auto_parallel_context: unknown option '%s' (known: device_num, global_rank, "
        .. "gradients_mean, parallel_mode, parameter_broadcast)"):format(tostring(k)))
    end
    if k == "parallel_mode" then
      if type(v) ~= "string" or MODES[v] == nil then
        raise(("ValueError: set_auto_parallel_context: parallel_mode must be 'stand_alone' or 'data_parallel', "
          .. "but got %s"):format(type(v) == "string" and ("'" .. v .. "'") or type_name(v)))
      end
      if not MODES[v] then
        raise(("NotImplementedError: set_auto_parallel_context: parallel_mode '%s' is not built; "
          .. "'data_parallel' is"):format(v))
      end
    elseif k == "gradients_mean" or k == "parameter_broadcast" then
      if type(v) ~= "boolean" then
        raise(("TypeError: set_auto_parallel_context: %s must be a boolean, but got %s"):format(k, type_name(v)))
      end
    else
      check_int(k, v)
    end
  end
  for k, v in pairs(opts) do
    ctx[k] = v
    if k == "device_num" then ctx.device_num_set = true end
    if k == "global_rank" then ctx.global_rank_set = true end
  end
end

--- get_auto_parallel_context(key): one option's value.
function M.get_auto_parallel_context(key)
  if type(key) ~= "string" or DEFAULTS[key] == nil then
    raise(("ValueError: get_auto_parallel_context: unknown option %s (known: device_num, global_rank, "
      .. "gradients_mean, parallel_mode, parameter_broadcast)"):format(type(key) == "string" and ("'" .. key .. "'")
      or type_name(key)))
  end
  if key == "device_num" and not ctx.device_num_set then return M.size() end
  if key == "global_rank" and not ctx.global_rank_set then return M.rank() end
  return ctx[key]
end

--- reset_auto_parallel_context(): every option back to its default.
function M.reset_auto_parallel_context() reset() end

local function comm()
  local B = package.loaded["cell.communication.backend"]
  if B and B.initialized() then return B.state end
  return nil
end

--- This process's world rank (0 without cell.communication).
function M.rank()
  local st = comm()
  return st and st.rank or 0
end
--- The world size (1 without cell.communication).
function M.size()
  local st = comm()
  return st and st.size or 1
end
--- Whether training is data-parallel over more than one rank.
function M.distributed()
  return ctx.parallel_mode == "data_parallel" and comm() ~= nil
end
function M.get(key) return ctx[key] end

return M
