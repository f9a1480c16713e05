--- cell.dataset.config: the settings every pipeline starts from, as
-- MindSpore's mindspore.dataset.config.
--
--     cell.dataset.config.set_seed(42)                 -- shuffles and random transforms
--     cell.dataset.config.set_num_parallel_workers(4)  -- worker threads of a pipeline
--     cell.dataset.config.set_prefetch_size(16)        -- outputs queued ahead
--
-- A pipeline reads the seed when it is built (each dataset op keeps the
-- seed current at its creation). Written in the Lua subset shared by Lua
-- 5.4 and LuaJIT 2.1.
local raise = require("cell.errors").raise
local type_name = require("cell.util.types").type_name

local M = {}

local state = { seed = 0, workers = 2, prefetch = 16 }

local function check_int(what, v, lo, hi)
  if type(v) ~= "number" or v ~= math.floor(v) or v ~= v then
    raise(("TypeError: config.%s: the value must be an integer, but got %s")
      :format(what, type(v) == "number" and tostring(v) or type_name(v)))
  end
  if v < lo or v > hi then
    raise(("ValueError: config.%s: the value must be in [%d, %d], but got %s"):format(what, lo, hi, tostring(v)))
  end
  return v
end

function M.set_seed(seed) state.seed = check_int("set_seed", seed, 0, 4294967295) end
function M.get_seed() return state.seed end
function M.set_num_parallel_workers(n) state.workers = check_int("set_num_parallel_workers", n, 0, 64) end
function M.get_num_parallel_workers() return state.workers end
function M.set_prefetch_size(n) state.prefetch = check_int("set_prefetch_size", n, 1, 65536) end
function M.get_prefetch_size() return state.prefetch end

return M
