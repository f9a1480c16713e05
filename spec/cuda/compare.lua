-- compare.lua - the GPU specs' comparison of a GPU result with the CPU's,
-- and their runner (spec/cuda/*_cuda.lua; not a spec itself).
local luassert = require "luassert"

local M = {}

--- The numbers of a nested table, in order.
function M.flat(t, out)
  out = out or {}
  if type(t) ~= "table" then
    out[#out + 1] = t
    return out
  end
  for _, v in ipairs(t) do M.flat(v, out) end
  return out
end

--- |gpu - cpu| <= atol + rtol |cpu| everywhere (NaN matches NaN, an
-- infinity the same infinity; booleans equal), same shape and dtype.
function M.close(gpu, cpu, rtol, atol)
  luassert.are.equal(cpu.dtype, gpu.dtype, "dtypes differ")
  luassert.are.same(cpu.shape, gpu.shape)
  local g, c = M.flat(gpu:move_to("CPU"):totable()), M.flat(cpu:totable())
  luassert.are.equal(#c, #g, "element counts differ")
  for i = 1, #c do
    local a, b = g[i], c[i]
    if type(a) == "boolean" then
      luassert.are.equal(b, a)
    elseif a ~= b and not (a ~= a and b ~= b) then -- equal (infinities too) or both NaN pass
      assert(math.abs(a - b) <= atol + rtol * math.abs(b), ("element %d: GPU %.17g, CPU %.17g"):format(i, a, b))
    end
  end
end

--- Inside a describe: one `it` per case ({name =, f =}), each after
-- cell.set_seed(seed); without a GPU, one `it` that prints how many specs
-- `what` skipped (and why) instead of passing silently. The spec passes
-- its `it` and `before_each` (busted gives them to spec files only).
function M.run(cases, seed, what, it, before_each)
  local cell, cuda = require "cell", require "cell.cuda"
  if not cuda.is_available() then
    it("is skipped: no GPU", function()
      print(("\ncuda: skipped %d %s: no GPU (%s)"):format(#cases, what or "specs", cuda.unavailable_reason()))
      luassert.is_true(#cases > 0)
      luassert.is_string(cuda.unavailable_reason())
    end)
    return
  end
  before_each(function() cell.set_seed(seed) end)
  for _, c in ipairs(cases) do it(c.name, c.f) end
end

return M
