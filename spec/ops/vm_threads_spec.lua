-- vm_threads_spec.lua - the vectorised transcendentals (exp, erf, sigmoid,
-- GELU and the gradients of GELU and SiLU) split over threads from a
-- sixteenth of the copy kernels' bar (src/core/iter.h CELL_ITER_COST_VM):
-- the same values at 1 and 2 threads, on lengths around that bar and on
-- strided views.
local H = require "helpers"
local cell = H.cell

local at = require("helpers.threads").at

describe("vectorised transcendentals over threads", function()
  for _, n in ipairs({ 65535, 65536, 200003 }) do
    it("give the same values at 1 and 2 threads (" .. n .. " elements)", function()
      local x = cell.randn({ n }) * 3
      local g = cell.randn({ n })
      local fns = {
        exp = function() return x:exp() end,
        erf = function() return x:erf() end,
        sigmoid = function() return x:sigmoid() end,
        gelu = function() return cell.ops.gelu(x) end,
        gelu_grad = function() return cell.grad(function(t) return (cell.ops.gelu(t) * g):sum() end)(x) end,
        silu_grad = function() return cell.grad(function(t) return (cell.ops.silu(t) * g):sum() end)(x) end,
        strided = function() return cell.ops.gelu(x:reshape({ -1, 1 }):expand({ n, 2 }):select(2, 2)) end,
      }
      for name, f in pairs(fns) do
        local a, b = at(1, f), at(2, f)
        H.assert_close(b, a:totable(), 0, name)
      end
    end)
  end
end)
