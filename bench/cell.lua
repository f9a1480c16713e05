--- cell.lua - the cost of the Cell layer: calling a cell against calling
-- its construct directly (no hooks, one forward hook), and state_dict /
-- load_state_dict of a tree of 100 sub-cells holding 1,000 parameters.
-- Prints `name value unit` lines. Usage: lua5.4 bench/cell.lua [iterations]
local cell = require "cell"
local nn = cell.nn

local N = math.floor(tonumber(arg and arg[1]) or 1e6)
local REPS = 5

local function best_of(fn, n)
  fn(math.max(1, math.floor(n / 10)))
  local best = math.huge
  for _ = 1, REPS do
    collectgarbage()
    local t0 = cell.perf_counter()
    fn(n)
    best = math.min(best, cell.perf_counter() - t0)
  end
  return best
end

-- Call overhead: construct does a tensor add, so the figures are per call of
-- a realistic tiny cell; the overheads are the differences.
local Add = nn.Cell:extend("Add")
function Add:construct(x) return x + x end
local net = Add()
local x = cell.tensor({ 1, 2, 3, 4 })
local construct = Add.construct

local direct = best_of(function(n) for _ = 1, n do construct(net, x) end end, N) / N * 1e6
local called = best_of(function(n) for _ = 1, n do net(x) end end, N) / N * 1e6
net:register_forward_hook(function() end)
local hooked = best_of(function(n) for _ = 1, n do net(x) end end, N) / N * 1e6

print(("cell_construct_direct %.3f us/call"):format(direct))
print(("cell_call_no_hooks %.3f us/call"):format(called))
print(("cell_call_one_forward_hook %.3f us/call"):format(hooked))
print(("cell_call_overhead_no_hooks %.3f us (target <= 1.5)"):format(called - direct))
print(("cell_call_overhead_one_hook %.3f us (target <= 3)"):format(hooked - direct))

-- state_dict of 100 sub-cells x 10 parameters of 16 floats each.
local Block = nn.Cell:extend("Block")
function Block:init()
  for i = 1, 10 do self["p" .. i] = cell.Parameter(cell.zeros({ 16 }), "p" .. i) end
end
local Tree = nn.Cell:extend("Tree")
function Tree:init()
  for i = 1, 100 do self["b" .. i] = Block() end
end
local tree = Tree()
local sd = tree:state_dict()
assert(sd:len() == 1000)
local K = 50
local t_save = best_of(function(n) for _ = 1, n do tree:state_dict() end end, K) / K * 1e3
local t_load = best_of(function(n) for _ = 1, n do tree:load_state_dict(sd) end end, K) / K * 1e3
print(("cell_state_dict_1000_params_ms %.3f ms (target < 2)"):format(t_save))
print(("cell_load_state_dict_1000_params_ms %.3f ms (target < 5)"):format(t_load))
