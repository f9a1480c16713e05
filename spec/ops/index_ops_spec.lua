-- index_ops_spec.lua - einsum, addmm, outer, masked_select, masked_scatter,
-- nonzero, meshgrid and one_hot (lua/cell/einsum.lua, lua/cell/index_ops.lua,
-- src/ops/masked.c, src/autograd/rules_index.c, src/lua/lindex.c): forward
-- values and gradients against PyTorch 1.13 (spec/fixtures/gen_index.py) in
-- float32 and float64, on contiguous and strided inputs, zero-size tensors,
-- float64 gradient checks, and every misuse.
local cell = require "cell"
local H = require "helpers"
local fx = require "fixtures.index_fixtures"

local ops = cell.ops
local unpack = table.unpack or unpack
local tols = { { "float64", 1e-12 }, { "float32", 1e-5 } }

local function tensor(v, dt) return cell.tensor(v, cell.float64):astype(cell[dt]) end

--- A strided view with t's values (every other element of a stacked pair),
-- through which gradients reach t.
local function strided(t)
  if t.ndim == 0 then return t end
  local v = cell.stack({ t, t * 2 }, t.ndim + 1):select(t.ndim + 1, 1)
  assert(not v:is_contiguous())
  return v
end

--- out = fn(leaves...) and the gradients of sum(out * sens) for every leaf.
local function with_grads(fn, inputs, sens, dt)
  local n = #inputs
  local positions = {}
  for k = 1, n do positions[k] = k end
  local out = fn(unpack(inputs, 1, n))
  local g = cell.grad(function(...) return (fn(...) * tensor(sens, dt)):sum() end, positions)(unpack(inputs, 1, n))
  if n == 1 and cell.is_tensor(g) then g = { g } end
  return out, g
end

--- Central differences of sum(fn(...) * w) in input k (float64, small inputs).
local function gradcheck(fn, inputs, w)
  local n = #inputs
  local positions = {}
  for k = 1, n do positions[k] = k end
  local function f(...) return (fn(...) * w):sum() end
  local analytic = cell.grad(f, positions)(unpack(inputs, 1, n))
  if n == 1 and cell.is_tensor(analytic) then analytic = { analytic } end
  for k = 1, n do
    local x = inputs[k]
    local flat = H.flatten(x:totable())
    local num = {}
    for e = 1, #flat do
      local d = {}
      for j = 1, #flat do d[j] = j == e and 1e-6 or 0 end
      local dt = cell.tensor(d, cell.float64):reshape(x.shape)
      local args_p, args_m = {}, {}
      for j = 1, n do args_p[j], args_m[j] = inputs[j], inputs[j] end
      args_p[k], args_m[k] = x + dt, x - dt
      num[e] = (f(unpack(args_p, 1, n)):item() - f(unpack(args_m, 1, n)):item()) / 2e-6
    end
    H.assert_close(analytic[k]:reshape({ #flat }), num, 1e-5, "gradient of input " .. k)
  end
end

describe("einsum", function()
  for name, c in pairs(fx.einsum) do
    for _, tc in ipairs(tols) do
      local dt, tol = tc[1], tc[2]
      for _, layout in ipairs { "contiguous", "strided" } do
        it(name .. " '" .. c.eq .. "' in " .. dt .. " (" .. layout .. ")", function()
          local ins = {}
          for k, v in ipairs(c.inputs) do
            ins[k] = tensor(v, dt)
            H.assert_shape(ins[k], c.shapes[k])
          end
          local fn = function(...)
            local xs = { ... }
            if layout == "strided" then
              for k = 1, #xs do xs[k] = strided(xs[k]) end
            end
            return ops.einsum(c.eq, unpack(xs, 1, #c.inputs))
          end
          local out, g = with_grads(fn, ins, c.sens, dt)
          assert.are.equal(cell[dt], out.dtype)
          H.assert_shape(out, c.out_shape)
          H.assert_close(out, c.out, tol, "output")
          for k = 1, #ins do H.assert_close(g[k], c.grads[k], tol, "gradient " .. k) end
        end)
      end
    end
  end

  it("takes the operands as a list too", function()
    local c = fx.einsum.bmm
    local a, b = tensor(c.inputs[1], "float64"), tensor(c.inputs[2], "float64")
    H.assert_close(ops.einsum(c.eq, { a, b }), c.out, 1e-12)
    H.assert_close(ops.einsum(" b i j , b j k -> b i k ", a, b), c.out, 1e-12, "spaces")
  end)

  it("passes a float64 gradient check", function()
    for _, name in ipairs { "bmm", "attention", "diag", "trace", "ellipsis", "chain", "broadcast1", "implicit" } do
      local c = fx.einsum[name]
      local ins = {}
      for k, v in ipairs(c.inputs) do ins[k] = tensor(v, "float64") end
      gradcheck(function(...) return ops.einsum(c.eq, ...) end, ins, tensor(c.sens, "float64"))
    end
  end)

  it("handles zero-size dimensions", function()
    local a, b = cell.zeros({ 2, 3, 0 }), cell.zeros({ 2, 0, 4 })
    local r = ops.einsum("bij,bjk->bik", a, b)
    H.assert_shape(r, { 2, 3, 4 })
    H.assert_close(r:abs():sum(), 0, 0)
    H.assert_shape(ops.einsum("bij,bjk->bik", cell.zeros({ 0, 3, 2 }), cell.zeros({ 0, 2, 4 })), { 0, 3, 4 })
    H.assert_shape(ops.einsum("i,j->ij", cell.zeros({ 0 }), cell.ones({ 3 })), { 0, 3 })
    H.assert_close(ops.einsum("ij->", cell.zeros({ 0, 3 })), 0, 0)
    local x = cell.zeros({ 0, 2 }):requires_grad_(true)
    local g = cell.grad(function(t) return ops.einsum("ij,jk->ik", t, cell.ones({ 2, 3 })):sum() end)(x)
    H.assert_shape(g, { 0, 2 })
  end)

  it("keeps integer dtypes", function()
    local r = ops.einsum("ij,jk->ik", cell.tensor({ { 1, 2 }, { 3, 4 } }, cell.int64), cell.tensor({ { 1 }, { 1 } }, cell.int64))
    H.assert_values(r, { { 3 }, { 7 } }, "int64")
  end)

  it("rejects bad equations and operands with named errors", function()
    local a, b = cell.ones({ 2, 3 }), cell.ones({ 3, 4 })
    H.expect_error(function() return ops.einsum("ij,jk", a) end, "ValueError",
      "einsum: the equation 'ij,jk' names 2 operand(s) but 1 tensor(s) were given")
    H.expect_error(function() return ops.einsum("i#,jk", a, b) end, "ValueError", "invalid subscript '#'")
    H.expect_error(function() return ops.einsum("ijk,jk", a, b) end, "ValueError",
      "operand 1 has 2 dimension(s) but its subscripts 'ijk' name 3")
    H.expect_error(function() return ops.einsum("ij,ik", a, b) end, "ValueError",
      "subscript 'i' has size 3 in operand 2 but 2 in operand 1")
    H.expect_error(function() return ops.einsum("ij,jk->iz", a, b) end, "ValueError",
      "the output subscript 'z' does not appear in the inputs")
    H.expect_error(function() return ops.einsum("ij,jk->ii", a, b) end, "ValueError",
      "the output subscript 'i' appears more than once")
    H.expect_error(function() return ops.einsum("......", a) end, "ValueError", "more than one '...'")
    H.expect_error(function() return ops.einsum("i..j", a) end, "ValueError", "a '.' that is not part of '...'")
    H.expect_error(function() return ops.einsum("ij->j->i", a) end, "ValueError", "more than one '->'")
    H.expect_error(function() return ops.einsum("ij-j", a) end, "ValueError", "not part of '->'")
    H.expect_error(function() return ops.einsum("ij,jk->i,k", a, b) end, "ValueError", "the output 'i,k' has a ','")
    H.expect_error(function() return ops.einsum("ii", cell.ones({ 2, 3 })) end, "ValueError",
      "subscript 'i' is repeated in operand 1 with sizes 2 and 3")
    H.expect_error(function() return ops.einsum("ij...k", a) end, "ValueError",
      "operand 1 has 2 dimension(s) but its subscripts name 3")
  end)

  it("names the wrong types", function()
    H.expect_error(function() return ops.einsum(3, cell.ones({ 2 })) end, "TypeError", "einsum: the equation must be a string")
    H.expect_error(function() return ops.einsum("i,i", cell.ones({ 2 }), "x") end, "TypeError", "einsum", "operand 2")
    H.expect_error(function() return ops.einsum("i") end, "ValueError", "einsum: no operands")
  end)
end)

describe("addmm and outer", function()
  for _, tc in ipairs(tols) do
    local dt, tol = tc[1], tc[2]
    it("addmm with beta and alpha in " .. dt, function()
      local c = fx.addmm
      local ins = { tensor(c.input, dt), tensor(c.mat1, dt), tensor(c.mat2, dt) }
      local out, g = with_grads(function(i, a, b) return ops.addmm(i, strided(a), b, { beta = 0.5, alpha = 2 }) end,
        ins, c.sens, dt)
      H.assert_close(out, c.out, tol)
      for k = 1, 3 do H.assert_close(g[k], c.grads[k], tol, "gradient " .. k) end
      H.assert_close(ins[1]:addmm(ins[2], ins[3], 0.5, 2), c.out, tol, "method, positional beta and alpha")
    end)
    it("addmm broadcasting its input in " .. dt, function()
      local c = fx.addmm_broadcast
      local ins = { tensor(c.input, dt), tensor(c.mat1, dt), tensor(c.mat2, dt) }
      local out, g = with_grads(ops.addmm, ins, c.sens, dt)
      H.assert_close(out, c.out, tol)
      for k = 1, 3 do H.assert_close(g[k], c.grads[k], tol, "gradient " .. k) end
    end)
    it("outer in " .. dt, function()
      local c = fx.outer
      local out, g = with_grads(function(x, y) return strided(x):outer(y) end, { tensor(c.x, dt), tensor(c.y, dt) },
        c.sens, dt)
      H.assert_close(out, c.out, tol)
      H.assert_close(g[1], c.grads[1], tol)
      H.assert_close(g[2], c.grads[2], tol)
    end)
  end

  it("addmm with beta = 0 ignores NaN in input", function()
    local r = ops.addmm(cell.full({ 2, 2 }, 0 / 0), cell.eye(2), cell.eye(2), { beta = 0 })
    H.assert_close(r, { { 1, 0 }, { 0, 1 } }, 0)
  end)

  it("pass a float64 gradient check", function()
    local c = fx.addmm
    gradcheck(function(i, a, b) return ops.addmm(i, a, b, { beta = 0.5, alpha = 2 }) end,
      { tensor(c.input, "float64"), tensor(c.mat1, "float64"), tensor(c.mat2, "float64") }, tensor(c.sens, "float64"))
    gradcheck(ops.outer, { tensor(fx.outer.x, "float64"), tensor(fx.outer.y, "float64") },
      tensor(fx.outer.sens, "float64"))
  end)

  it("handle zero-size tensors", function()
    H.assert_shape(ops.outer(cell.zeros({ 0 }), cell.ones({ 4 })), { 0, 4 })
    H.assert_shape(ops.addmm(cell.zeros({ 2, 3 }), cell.zeros({ 2, 0 }), cell.zeros({ 0, 3 })), { 2, 3 })
  end)

  it("reject misuse with named errors", function()
    local i, a, b = cell.ones({ 2, 3 }), cell.ones({ 2, 4 }), cell.ones({ 4, 3 })
    H.expect_error(function() return ops.addmm(i, cell.ones({ 4 }), b) end, "ValueError",
      "addmm: mat1 and mat2 must be 2-D, got shapes [4] and [4, 3]")
    H.expect_error(function() return ops.addmm(i, a, cell.ones({ 3, 3 })) end, "ValueError",
      "addmm: shapes [2, 4] and [3, 3] cannot be multiplied")
    H.expect_error(function() return ops.addmm(cell.ones({ 4 }), a, b) end, "ValueError",
      "addmm: input of shape [4] does not broadcast to the product's shape [2, 3]")
    H.expect_error(function() return ops.addmm(i, a, b, { gamma = 1 }) end, "TypeError", "addmm: unknown option 'gamma'")
    H.expect_error(function() return ops.addmm(i, a, b, "2") end, "TypeError", "addmm: beta must be a number")
    H.expect_error(function() return ops.addmm(i, a, b, 1, {}) end, "TypeError", "addmm: alpha must be a number")
    H.expect_error(function() return ops.addmm(i, a) end, "TypeError", "addmm", "mat2")
    H.expect_error(function() return ops.outer(cell.ones({ 2, 2 }), cell.ones({ 2 })) end, "ValueError",
      "outer: both tensors must be 1-D, got shapes [2, 2] and [2]")
    H.expect_error(function() return ops.outer(cell.ones({ 2 }), 3) end, "TypeError", "outer", "vec2")
  end)
end)

describe("masked_select, masked_scatter and nonzero", function()
  for _, tc in ipairs(tols) do
    local dt, tol = tc[1], tc[2]
    for _, name in ipairs { "masked_select", "masked_select_broadcast" } do
      it(name .. " in " .. dt, function()
        local c = fx[name]
        local mask = cell.tensor(c.mask)
        for _, view in ipairs { false, true } do
          local out, g = with_grads(function(x) return (view and strided(x) or x):masked_select(mask) end,
            { tensor(c.x, dt) }, c.sens, dt)
          assert.are.equal(cell[dt], out.dtype)
          H.assert_close(out, c.out, tol)
          H.assert_close(g[1], c.grad, tol)
        end
      end)
    end
    for _, name in ipairs { "masked_scatter", "masked_scatter_broadcast" } do
      it(name .. " in " .. dt, function()
        local c = fx[name]
        local mask = cell.tensor(c.mask)
        for _, view in ipairs { false, true } do
          local out, g = with_grads(function(x, s) return ops.masked_scatter(view and strided(x) or x, mask, s) end,
            { tensor(c.x, dt), tensor(c.src, dt) }, c.sens, dt)
          H.assert_close(out, c.out, tol)
          H.assert_close(g[1], c.grads[1], tol, "input gradient")
          H.assert_close(g[2], c.grads[2], tol, "source gradient")
        end
      end)
    end
  end

  it("masked_select and masked_scatter pass a float64 gradient check", function()
    local c = fx.masked_scatter
    local mask = cell.tensor(c.mask)
    gradcheck(function(x) return x:masked_select(mask) end, { tensor(c.x, "float64") },
      tensor(fx.masked_select.sens, "float64"))
    gradcheck(function(x, s) return x:masked_scatter(mask, s) end, { tensor(c.x, "float64"), tensor(c.src, "float64") },
      tensor(c.sens, "float64"))
  end)

  it("nonzero gives 1-based positions, as a matrix or a tuple", function()
    for _, name in ipairs { "nonzero", "nonzero3" } do
      local c = fx[name]
      for _, dt in ipairs { "float32", "float64", "int32", "int64" } do
        local x = tensor(c.x, dt)
        H.assert_values(x:nonzero(), c.out, "int64")
        H.assert_values(strided(x):nonzero(), c.out, "int64")
        local cols = ops.nonzero(x, { as_tuple = true })
        assert.are.equal(x.ndim, #cols)
        for d = 1, x.ndim do
          local want = {}
          for r = 1, #c.out do want[r] = c.out[r][d] end
          H.assert_values(cols[d], want, "int64")
        end
        assert.are.equal(x.ndim, #x:nonzero(true))
      end
    end
    H.assert_values(cell.tensor({ true, false, true }):nonzero(), { { 1 }, { 3 } }, "int64")
    H.assert_values(cell.tensor({ 0 / 0, 0, -0.0 }):nonzero(), { { 1 } }, "int64") -- NaN counts, -0 does not
  end)

  it("handle zero-size tensors and masks that select nothing", function()
    H.assert_shape(cell.zeros({ 3, 2 }):nonzero(), { 0, 2 })
    H.assert_shape(cell.zeros({ 0, 2 }):nonzero(), { 0, 2 })
    H.assert_shape(cell.zeros({ 2, 0 }):masked_select(cell.zeros({ 2, 0 }, cell.bool)), { 0 })
    local x = cell.tensor({ 1, 2, 3 }, cell.float64):requires_grad_(true)
    local none = cell.tensor({ false, false, false })
    H.assert_shape(x:masked_select(none), { 0 })
    H.assert_values(x:masked_scatter(none, cell.zeros({ 0 }, cell.float64)), { 1, 2, 3 })
    local g = cell.grad(function(t) return t:masked_scatter(none, cell.zeros({ 0 }, cell.float64)):sum() end)(x)
    H.assert_close(g, { 1, 1, 1 }, 0)
    -- the source is not changed and the input not written in place
    local src = cell.tensor({ 9, 8 })
    local a = cell.zeros({ 3 })
    local r = a:masked_scatter(cell.tensor({ true, false, true }), src)
    H.assert_values(r, { 9, 0, 8 })
    H.assert_values(a, { 0, 0, 0 })
  end)

  it("keep every dtype", function()
    for _, dt in ipairs { "int8", "uint8", "int32", "int64", "float16", "bfloat16", "bool" } do
      local x = cell.tensor({ 1, 0, 1 }, cell[dt])
      local m = cell.tensor({ true, false, true })
      assert.are.equal(cell[dt], x:masked_select(m).dtype)
      assert.are.equal(cell[dt], x:masked_scatter(m, cell.tensor({ 0, 1 }, cell[dt])).dtype)
    end
  end)

  it("reject misuse with named errors", function()
    local x = cell.ones({ 2, 3 })
    H.expect_error(function() return x:masked_select(cell.ones({ 2, 3 })) end, "TypeError",
      "masked_select: the mask must be a Bool tensor, got Float32")
    H.expect_error(function() return x:masked_select(cell.ones({ 4 }, cell.bool)) end, "ValueError", "masked_select")
    H.expect_error(function() return x:masked_select({ true }) end, "TypeError")
    H.expect_error(function() return x:masked_scatter(cell.ones({ 2, 3 }, cell.bool), cell.ones({ 5 })) end,
      "ValueError", "masked_scatter: the mask (shape [2, 3]) selects 6 elements but the source (shape [5]) has only 5")
    H.expect_error(function() return x:masked_scatter(cell.ones({ 3 }, cell.bool), cell.ones({ 6 }, cell.float64)) end,
      "TypeError", "masked_scatter: the source must have the input's dtype Float32, got Float64")
    H.expect_error(function() return x:masked_scatter(cell.ones({ 3 }), cell.ones({ 6 })) end, "TypeError",
      "masked_scatter: the mask must be a Bool tensor")
    H.expect_error(function() return x:masked_scatter(cell.ones({ 3 }, cell.bool)) end, "TypeError")
    H.expect_error(function() return x:nonzero({ as_tuple = 1 }) end, "TypeError", "nonzero: as_tuple must be a boolean")
    H.expect_error(function() return x:nonzero({ tuple = true }) end, "TypeError", "nonzero: unknown option 'tuple'")
    H.expect_error(function() return x:nonzero(3) end, "TypeError", "nonzero: expected an options table")
  end)
end)

describe("meshgrid", function()
  local a, b, c = cell.tensor({ 1, 2, 3 }), cell.tensor({ 4, 5 }), cell.tensor({ 6, 7, 8, 9 })
  it("indexes 'xy' by default, as MindSpore", function()
    local g = ops.meshgrid(a, b, c)
    assert.are.equal(3, #g)
    for k = 1, 3 do H.assert_close(g[k], fx.meshgrid_xy[k], 0) end
    g = ops.meshgrid({ a, b, c })
    for k = 1, 3 do H.assert_close(g[k], fx.meshgrid_xy[k], 0, "as a list") end
  end)
  it("indexes 'ij' on request", function()
    local g = ops.meshgrid(a, b, c, { indexing = "ij" })
    for k = 1, 3 do H.assert_close(g[k], fx.meshgrid_ij[k], 0) end
    g = ops.meshgrid({ a, b, c }, { indexing = "ij" })
    for k = 1, 3 do H.assert_close(g[k], fx.meshgrid_ij[k], 0, "as a list") end
  end)
  it("differentiates through its views, takes 0-D and zero-size inputs", function()
    local x = cell.tensor({ 1, 2, 3 }, cell.float64):requires_grad_(true)
    local g = cell.grad(function(t) return ops.meshgrid(t, cell.ones({ 2 }, cell.float64))[1]:sum() end)(x)
    H.assert_close(g, { 2, 2, 2 }, 0)
    local m = ops.meshgrid(cell.tensor(5), cell.ones({ 2 }), { indexing = "ij" })
    H.assert_shape(m[1], { 1, 2 })
    H.assert_shape(ops.meshgrid(cell.zeros({ 0 }), b)[1], { 2, 0 })
    H.assert_shape(ops.meshgrid(strided(a))[1], { 3 })
  end)
  it("rejects misuse with named errors", function()
    H.expect_error(function() return ops.meshgrid(a, b, { indexing = "yx" }) end, "ValueError",
      "meshgrid: indexing must be 'xy' or 'ij', got 'yx'")
    H.expect_error(function() return ops.meshgrid(a, b, { indexing = 1 }) end, "TypeError", "meshgrid: indexing must be a string")
    H.expect_error(function() return ops.meshgrid(a, b, { order = "ij" }) end, "TypeError", "meshgrid: unknown option 'order'")
    H.expect_error(function() return ops.meshgrid(a, cell.ones({ 2, 2 })) end, "ValueError",
      "meshgrid: input 2 must be 0-D or 1-D, got shape [2, 2]")
    H.expect_error(function() return ops.meshgrid() end, "ValueError", "meshgrid: expected at least one tensor")
    H.expect_error(function() return ops.meshgrid(a, "b") end, "TypeError", "meshgrid", "input 2")
  end)
end)

describe("one_hot", function()
  local c = fx.one_hot
  it("puts on_value at each 1-based class id", function()
    local idx = cell.tensor(c.indices, cell.int64)
    H.assert_values(ops.one_hot(idx, 4), c.out, "int64")
    H.assert_values(ops.one_hot(idx:astype(cell.int32), 4), c.out, "int64")
    H.assert_values(ops.one_hot(strided(idx), 4), c.out, "int64")
    H.assert_values(ops.one_hot(idx, 4, 1, 0, 1), fx.one_hot_axis1, "int64")
    H.assert_values(ops.one_hot(idx, 4, 1, 0, 2), fx.one_hot_axis2, "int64")
    H.assert_values(ops.one_hot(idx, 4, 1, 0, -2), fx.one_hot_axis2, "int64")
    local f = ops.one_hot(idx, 4, 0.5, -1)
    assert.are.equal(cell.float32, f.dtype)
    H.assert_close(f, H.map(c.out, function(v) return v == 1 and 0.5 or -1 end), 0)
  end)
  it("takes 0-D tensors as values, with gradients", function()
    local idx = cell.tensor({ 1, 3, 3 }, cell.int64)
    local on, off = cell.tensor(2.0, cell.float64), cell.tensor(-1.0, cell.float64)
    local y = ops.one_hot(idx, 3, on, off)
    assert.are.equal(cell.float64, y.dtype)
    local g = cell.grad(function(a, b) return ops.one_hot(idx, 3, a, b):sum() end, { 1, 2 })(on, off)
    H.assert_close(g[1], 3, 0)
    H.assert_close(g[2], 6, 0)
  end)
  it("handles zero-size indices and depth 0", function()
    H.assert_shape(ops.one_hot(cell.zeros({ 0 }, cell.int64), 3), { 0, 3 })
    H.assert_shape(ops.one_hot(cell.zeros({ 2, 0 }, cell.int64), 3, 1, 0, 1), { 3, 2, 0 })
    H.assert_shape(ops.one_hot(cell.zeros({ 0 }, cell.int64), 0), { 0, 0 })
  end)
  it("rejects misuse with named errors", function()
    local idx = cell.tensor({ 1, 2 }, cell.int64)
    H.expect_error(function() return ops.one_hot(cell.tensor({ 0, 1 }, cell.int64), 3) end, "IndexError",
      "one_hot: class id 0 is out of range 1 to 3 (class ids are 1-based)")
    H.expect_error(function() return ops.one_hot(cell.tensor({ 4 }, cell.int64), 3) end, "IndexError",
      "class id 4 is out of range 1 to 3")
    H.expect_error(function() return ops.one_hot(cell.tensor({ 1.0 }), 3) end, "TypeError",
      "one_hot: indices must be an integer tensor, got Float32")
    H.expect_error(function() return ops.one_hot(idx, 2.5) end, "TypeError", "one_hot: depth must be an integer")
    H.expect_error(function() return ops.one_hot(idx, -1) end, "ValueError", "one_hot: depth must be >= 0, got -1")
    H.expect_error(function() return ops.one_hot(idx, 3, "1") end, "TypeError",
      "one_hot: on_value must be a number or a 0-D tensor")
    H.expect_error(function() return ops.one_hot(idx, 3, 1, cell.ones({ 2 })) end, "ValueError",
      "one_hot: off_value must be a number or a 0-D tensor, got shape [2]")
    H.expect_error(function() return ops.one_hot(idx, 3, 1, 0, 3) end, "ValueError",
      "one_hot: axis must be in [-2, 2] and not 0 for a 1-D input, got 3")
    H.expect_error(function() return ops.one_hot(idx, 3, 1, 0, 0) end, "ValueError", "one_hot: axis")
    H.expect_error(function() return ops.one_hot(idx, 3, 1, 0, 1.5) end, "TypeError", "one_hot: axis must be an integer")
    H.expect_error(function() return ops.one_hot({ 1 }, 3) end, "TypeError", "one_hot", "indices")
  end)
end)
