-- math_spec.lua - the elementwise math of issue 13 (src/ops/unary.c,
-- binary.c, unary_param.c; rules in src/autograd/rules_math.c,
-- rules_binary.c, rules_math_param.c) against PyTorch 1.13
-- (spec/fixtures/gen_math.py): forward and backward in float32 and
-- float64, special values (NaN, +-inf, -0, domain edges), strided views,
-- zero-size tensors, dtypes, in-place forms and every misuse's error.
-- The float64 gradient checks are in spec/helpers/cases_math.lua.
local cell = require "cell"
local H = require "helpers"
local fx = require "fixtures.math_fixtures"

local FLOATS = { { "float32", cell.float32, 1e-5 }, { "float64", cell.float64, 1e-10 } }

local function transpose(rows)
  local out = {}
  for j = 1, #rows[1] do
    out[j] = {}
    for i = 1, #rows do out[j][i] = rows[i][j] end
  end
  return out
end

--- The same values as a contiguous tensor and as a transposed view.
local function layouts(rows, dt)
  return {
    { "contiguous", cell.tensor(rows, dt) },
    { "strided", cell.tensor(transpose(rows), dt):transpose(1, 2) },
  }
end

--- Every zero expected has the sign it should (1/0 vs 1/-0).
local function assert_zero_signs(got, expected, what)
  local g, e = H.flatten(got:totable()), H.flatten(expected)
  for k = 1, #e do
    if e[k] == 0 then
      assert.are.equal(1 / e[k], 1 / g[k], (what or "") .. ": sign of zero at " .. k)
    end
  end
end

local function grad_of(fn, ...)
  return cell.grad(fn, #{ ... } > 1 and { 1, 2 } or 1)(...)
end

describe("elementwise math", function()
  describe("unary ops against PyTorch", function()
    for name, c in pairs(fx.unary) do
      for _, d in ipairs(FLOATS) do
        local dn, dt, tol = d[1], d[2], d[3]
        for _, lay in ipairs(layouts(c.x, dt)) do
          it(name .. " (" .. dn .. ", " .. lay[1] .. "): values and gradient", function()
            local x = lay[2]
            local out = x[name](x)
            assert.are.equal(dt, out.dtype)
            H.assert_close(out, c[dn].out, tol, name)
            assert_zero_signs(out, c[dn].out, name)
            local sens = cell.tensor(c.sens, dt)
            local g = grad_of(function(v) return (v[name](v) * sens):sum() end, x)
            assert.are.equal(dt, g.dtype)
            H.assert_close(g, c[dn].grad, tol, name .. " gradient")
          end)
        end
        it(name .. "_ (" .. dn .. ") updates in place and returns the tensor", function()
          local x = cell.tensor(c.x, dt)
          local view = cell.tensor(transpose(c.x), dt):transpose(1, 2)
          assert.are.equal(x, x[name .. "_"](x))
          assert.are.equal(view, view[name .. "_"](view))
          H.assert_close(x, c[dn].out, tol)
          H.assert_close(view, c[dn].out, tol)
        end)
      end
      it(name .. " is cell.ops." .. name .. ", and works on zero-size tensors", function()
        assert.are.equal(cell.Tensor[name], cell.ops[name])
        local z = cell.zeros({ 0, 3 }, cell.float64)
        H.assert_shape(cell.ops[name](z), { 0, 3 })
        local g = cell.grad(function(v) return v[name](v):sum() end)(z)
        H.assert_shape(g, { 0, 3 })
      end)
      it(name .. " gives PyTorch's dtype for every input dtype", function()
        for dn, want in pairs(fx.unary_dtypes[name]) do
          local out = cell.tensor({ 1, 0 }, cell[dn])[name](cell.tensor({ 1, 0 }, cell[dn]))
          assert.are.equal(want, out.dtype.name, name .. " of " .. dn)
        end
      end)
    end

    it("square keeps integer dtypes and wraps as PyTorch", function()
      H.assert_values(cell.tensor({ 3, -4, 200 }, cell.int16):square(), { 9, 16, -25536 }, "int16")
      H.assert_values(cell.tensor({ 16, -12 }, cell.int8):square(), { 0, -112 }, "int8")
      H.assert_values(cell.tensor({ true, false }):square(), { 1, 0 }, "int64")
    end)

    it("refuses in place a result its tensor cannot hold (TypeError)", function()
      H.expect_error(function() return cell.tensor({ 1, 2 }, cell.int32):erf_() end, "TypeError",
        "erf_: result type Float32 cannot be stored in a Int32 tensor")
      H.expect_error(function() return cell.tensor({ 1, 2 }, cell.int64):reciprocal_() end, "TypeError",
        "reciprocal_: result type Float32 cannot be stored in a Int64 tensor")
    end)

    it("refuses a non-tensor receiver (TypeError)", function()
      H.expect_error(function() return cell.ops.erf("x") end, "TypeError")
      H.expect_error(function() return cell.ops.tan(3) end, "TypeError")
    end)
  end)

  describe("isnan, isinf, isfinite", function()
    for _, d in ipairs(FLOATS) do
      it("match PyTorch on special values (" .. d[1] .. ")", function()
        local x = cell.tensor(fx.predicates.x, cell.float64):astype(d[2])
        for _, p in ipairs { "isnan", "isinf", "isfinite" } do
          H.assert_values(x[p](x), fx.predicates[p], "bool", p)
          H.assert_values(cell.ops[p](x), fx.predicates[p], "bool", p)
        end
      end)
    end
    it("work on strided views, integers, bool and zero-size tensors", function()
      local x = cell.tensor({ { 1, 0 / 0 }, { 1 / 0, 2 } }):transpose(1, 2)
      H.assert_values(x:isnan(), { { false, false }, { true, false } }, "bool")
      H.assert_values(x:isinf(), { { false, true }, { false, false } }, "bool")
      for _, dn in ipairs { "int8", "uint8", "int16", "int32", "int64", "bool" } do
        local t = cell.tensor({ 1, 0 }, cell[dn])
        H.assert_values(t:isnan(), { false, false }, "bool", dn)
        H.assert_values(t:isinf(), { false, false }, "bool", dn)
        H.assert_values(t:isfinite(), { true, true }, "bool", dn)
      end
      H.assert_shape(cell.zeros({ 2, 0 }):isfinite(), { 2, 0 })
      H.assert_values(cell.tensor({ 1 / 0, 1 }, cell.float16):isinf(), { true, false }, "bool")
    end)
    it("are not differentiable: no graph is recorded", function()
      local x = cell.tensor({ 1, 0 / 0 }):requires_grad_(true)
      assert.is_nil(x:isnan().grad_fn)
    end)
  end)

  describe("binary ops against PyTorch", function()
    for name, c in pairs(fx.binary) do
      for _, d in ipairs(FLOATS) do
        local dn, dt, tol = d[1], d[2], d[3]
        it(name .. " (" .. dn .. "): values, signed zeros and gradients", function()
          local la, lb = layouts(c.a, dt), layouts(c.b, dt)
          for k = 1, 2 do
            local a, b = la[k][2], lb[k][2]
            local out = a[name](a, b)
            assert.are.equal(dt, out.dtype)
            H.assert_close(out, c[dn].out, tol, name .. " " .. la[k][1])
            assert_zero_signs(out, c[dn].out, name)
            H.assert_close(cell.ops[name](a, b), c[dn].out, tol)
            local sens = cell.tensor(c.sens, dt)
            local g = grad_of(function(u, v) return (u[name](u, v) * sens):sum() end, a, b)
            if c[dn].ga then
              H.assert_close(g[1], c[dn].ga, tol, name .. " gradient of a")
              H.assert_close(g[2], c[dn].gb, tol, name .. " gradient of b")
            else -- floor_divide: a step function, zero gradients (MindSpore's FloorDiv)
              H.assert_close(g[1], cell.zeros(a.shape, dt):totable(), 0)
              H.assert_close(g[2], cell.zeros(b.shape, dt):totable(), 0)
            end
          end
        end)
        it(name .. "_ (" .. dn .. ") updates in place", function()
          local a, b = cell.tensor(c.a, dt), cell.tensor(c.b, dt)
          assert.are.equal(a, a[name .. "_"](a, b))
          H.assert_close(a, c[dn].out, tol)
        end)
      end
    end

    for _, name in ipairs { "atan2", "remainder", "fmod" } do
      it(name .. " broadcasts, and sums the gradient back to each shape", function()
        local c = fx.broadcast
        local a, b = cell.tensor(c.a, cell.float64), cell.tensor(c.b, cell.float64)
        H.assert_close(a[name](a, b), c[name].out, 1e-12)
        local sens = cell.tensor(c.sens, cell.float64)
        local g = grad_of(function(u, v) return (u[name](u, v) * sens):sum() end, a, b)
        H.assert_close(g[1], c[name].ga, 1e-12)
        H.assert_close(g[2], c[name].gb, 1e-12)
        assert.are.equal(name:sub(1, 1):upper(), a:requires_grad_(true)[name](a, b).grad_fn:sub(1, 1))
      end)
    end

    it("work on zero-size tensors", function()
      local z = cell.zeros({ 0, 3 }, cell.float64)
      for _, name in ipairs { "atan2", "remainder", "fmod", "floor_divide", "logical_xor" } do
        H.assert_shape(z[name](z, cell.ones({ 3 }, cell.float64)), { 0, 3 })
      end
      H.assert_shape(cell.zeros({ 0 }, cell.int64):remainder(cell.zeros({ 0 }, cell.int64)), { 0 })
    end)

    it("atan2 of integers gives float32", function()
      local r = cell.tensor({ 1, -1 }, cell.int32):atan2(cell.tensor({ 0, 0 }, cell.int16))
      assert.are.equal(cell.float32, r.dtype)
      H.assert_close(r, { math.pi / 2, -math.pi / 2 }, 1e-6)
    end)
  end)

  describe("integer remainder, fmod and floor_divide", function()
    for _, dn in ipairs { "int64", "int32", "int16", "int8", "uint8" } do
      it("match PyTorch in " .. dn .. " (every sign; numbers on the right)", function()
        local c = fx.int_div[dn]
        local a, b = cell.tensor(c.a, cell[dn]), cell.tensor(c.b, cell[dn])
        local name = cell[dn].name
        H.assert_values(a:remainder(b), c.remainder, name, "remainder")
        H.assert_values(a:fmod(b), c.fmod, name, "fmod")
        H.assert_values(a:floor_divide(b), c.floor_divide, name, "floor_divide")
        H.assert_values(a:remainder(3), c.remainder_3, name, "remainder 3")
        H.assert_values(a:floor_divide(3), c.floor_divide_3, name, "floor_divide 3")
        local f = a:remainder(2.5)
        assert.are.equal(cell.float32, f.dtype)
        H.assert_close(f, c.remainder_2_5, 1e-6)
      end)
    end

    it("wrap INT64_MIN // -1 instead of trapping", function()
      local m = cell.tensor({ -9223372036854775807 - 1 }, cell.int64)
      H.assert_values(m:floor_divide(-1), { -9223372036854775807 - 1 }, "int64")
      H.assert_values(m:remainder(-1), { 0 }, "int64")
      H.assert_values(m:fmod(-1), { 0 }, "int64")
    end)

    it("refuse an integer division by zero with a ValueError, changing nothing", function()
      local a = cell.tensor({ 5, 6 }, cell.int64)
      for _, name in ipairs { "remainder", "fmod", "floor_divide" } do
        H.expect_error(function() return a[name](a, cell.tensor({ 1, 0 }, cell.int64)) end, "ValueError",
          name .. ": integer division by zero (the divisor, a Int64 tensor, holds a 0)")
        H.expect_error(function() return a[name](a, 0) end, "ValueError", "integer division by zero")
        H.expect_error(function() return a[name .. "_"](a, cell.tensor({ 0 }, cell.int16)) end, "ValueError",
          "integer division by zero")
      end
      H.assert_values(a, { 5, 6 }, "int64")
      H.still_works()
    end)

    it("refuse bool operands (TypeError), as PyTorch; atan2 takes them as float32", function()
      local t = cell.tensor({ true, false })
      for _, name in ipairs { "remainder", "fmod", "floor_divide" } do
        H.expect_error(function() return t[name](t, t) end, "TypeError", name .. ": not supported for Bool tensors")
      end
      H.assert_close(t:atan2(t), { math.pi / 4, 0 }, 1e-6)
    end)

    it("refuse a float result in place on an integer tensor (TypeError)", function()
      H.expect_error(function() return cell.tensor({ 5 }, cell.int32):remainder_(2.5) end, "TypeError",
        "remainder_: result type Float32 cannot be stored in a Int32 tensor")
    end)
  end)

  describe("logical_xor", function()
    it("matches PyTorch across dtypes and gives bool", function()
      local a = cell.tensor(fx.logical_xor.a, cell.float64)
      local b = cell.tensor(fx.logical_xor.b, cell.int64)
      H.assert_values(a:logical_xor(b), fx.logical_xor.out, "bool")
      H.assert_values(cell.ops.logical_xor(a, a), fx.logical_xor.self, "bool")
      H.assert_values(a:logical_xor(1), { true, false, false, true }, "bool")
    end)
    it("in place stores 0/1 in the tensor's own dtype, as PyTorch", function()
      local t = cell.tensor({ true, false })
      t:logical_xor_(cell.tensor({ true, true }))
      H.assert_values(t, { false, true }, "bool")
      local f = cell.tensor({ 1, 2 })
      f:logical_xor_(cell.tensor({ 1, 0 }))
      H.assert_values(f, { 0, 1 }, "float32")
      H.expect_error(function() return t:logical_xor_("x") end, "TypeError")
    end)
  end)

  describe("lerp", function()
    local c = fx.lerp
    for _, d in ipairs(FLOATS) do
      local dn, dt, tol = d[1], d[2], d[3]
      it("matches PyTorch with a tensor weight, broadcasting (" .. dn .. ")", function()
        local s, e, w = cell.tensor(c.start, dt), cell.tensor(c.stop, dt), cell.tensor(c.weight, dt)
        H.assert_close(s:lerp(e, w), c[dn].out, tol)
        H.assert_close(cell.ops.lerp(cell.tensor(transpose(c.start), dt):transpose(1, 2), e, w), c[dn].out, tol)
        local sens = cell.tensor(c.sens, dt)
        local g = cell.grad(function(a, b, x) return (a:lerp(b, x) * sens):sum() end, { 1, 2, 3 })(s, e, w)
        H.assert_close(g[1], c[dn].gs, tol, "start")
        H.assert_close(g[2], c[dn].ge, tol, "end")
        H.assert_close(g[3], c[dn].gw, tol, "weight")
      end)
      it("matches PyTorch with a number weight (" .. dn .. ")", function()
        local s, e = cell.tensor(c.start, dt), cell.tensor(c.stop, dt)
        H.assert_close(s:lerp(e, 0.625), c[dn].out_scalar, tol)
        local sens = cell.tensor(c.sens, dt)
        local g = cell.grad(function(a, b) return (a:lerp(b, 0.625) * sens):sum() end, { 1, 2 })(s, e)
        H.assert_close(g[1], c[dn].gs_scalar, tol, "start")
        H.assert_close(g[2], c[dn].ge_scalar, tol, "end")
      end)
    end
    it("lerp_ updates in place and returns the tensor", function()
      local s = cell.tensor(c.start, cell.float64)
      assert.are.equal(s, s:lerp_(cell.tensor(c.stop, cell.float64), 0.625))
      H.assert_close(s, c.float64.out_scalar, 1e-12)
    end)
    it("works on zero-size tensors", function()
      H.assert_shape(cell.zeros({ 0, 2 }):lerp(cell.ones({ 2 }), 0.5), { 0, 2 })
    end)
    it("names each misuse", function()
      local f32, f64 = cell.ones({ 2 }), cell.ones({ 2 }, cell.float64)
      H.expect_error(function() return f32:lerp(f64, 0.5) end, "TypeError",
        "lerp: expected end of dtype Float32 (start's), got Float64")
      H.expect_error(function() return f32:lerp(f32, f64) end, "TypeError",
        "lerp: expected weight of dtype Float32 (start's), got Float64")
      H.expect_error(function() return cell.ones({ 2 }, cell.int32):lerp(cell.ones({ 2 }, cell.int32), 0.5) end,
        "TypeError", "lerp: start must be a float tensor, got Int32")
      H.expect_error(function() return f32:lerp(cell.ones({ 3 }), 0.5) end, "ValueError", "lerp")
      H.expect_error(function() return f32:lerp(f32, "x") end, "TypeError",
        "lerp: weight must be a Tensor or a number, got string")
      H.expect_error(function() return f32:lerp(nil, 0.5) end, "TypeError")
      H.expect_error(function() return cell.ones({ 2 }):lerp_(cell.ones({ 3, 2 }), 0.5) end, "ValueError",
        "lerp_: the result's shape differs from the shape of the tensor updated in place")
    end)
  end)

  describe("nan_to_num", function()
    local c = fx.nan_to_num
    for _, d in ipairs { { "float32", 1e-6 }, { "float64", 1e-12 }, { "float16", 1e-3 }, { "bfloat16", 1e-2 } } do
      local dn, tol = d[1], d[2]
      it("matches PyTorch's defaults and options (" .. dn .. ")", function()
        local x = cell.tensor(c.x, cell.float64):astype(cell[dn])
        local want = c[dn]
        H.assert_close(x:nan_to_num(), want.default, tol, "default")
        H.assert_close(x:nan_to_num(7), want.nan_only, tol, "nan")
        H.assert_close(x:nan_to_num { nan = 7 }, want.nan_only, tol, "nan option")
        H.assert_close(x:nan_to_num(1, 2, -3), want.all, tol, "all")
        H.assert_close(cell.ops.nan_to_num(x, { nan = 1, posinf = 2, neginf = -3 }), want.all, tol, "all options")
        H.assert_close(x:nan_to_num(nil, 100), want.posinf_only, tol, "posinf")
        assert.are.equal(cell[dn], x:nan_to_num().dtype)
      end)
    end
    for _, d in ipairs(FLOATS) do
      it("passes the gradient where the input was finite (" .. d[1] .. ")", function()
        local x = cell.tensor(c.x, d[2])
        local sens = cell.tensor(c.sens, d[2])
        local g = cell.grad(function(v) return (v:nan_to_num() * sens):sum() end)(x)
        H.assert_close(g, c[d[1]].grad, d[3])
      end)
    end
    it("copies integer and bool tensors, and updates in place", function()
      local i = cell.tensor({ 1, -2 }, cell.int16)
      H.assert_values(i:nan_to_num(5), { 1, -2 }, "int16")
      H.assert_values(cell.tensor({ true }):nan_to_num(), { true }, "bool")
      local x = cell.tensor({ 0 / 0, 1 / 0, 3 })
      local v = x:view({ 3 })
      assert.are.equal(x, x:nan_to_num_(0, 9))
      H.assert_close(x, { 0, 9, 3 })
      H.assert_shape(cell.zeros({ 0 }):nan_to_num(), { 0 })
      H.assert_close(v, { 0, 9, 3 })
    end)
    it("names each misuse", function()
      local x = cell.ones({ 2 })
      H.expect_error(function() return x:nan_to_num("a") end, "TypeError",
        "nan_to_num: nan must be a number or nil, got string")
      H.expect_error(function() return x:nan_to_num { nan = "a" } end, "TypeError",
        "nan_to_num: nan must be a number, got string")
      H.expect_error(function() return x:nan_to_num { inf = 1 } end, "TypeError",
        "nan_to_num: unknown option 'inf' (the options are nan, posinf, neginf)")
    end)
  end)

  describe("cell.ops.softplus", function()
    local c = fx.softplus
    local opts = { default = nil, beta2 = { beta = 2 }, beta_half_thr1 = { beta = 0.5, threshold = 1 },
      neg_beta = { beta = -1 } }
    for _, d in ipairs(FLOATS) do
      local dn, dt, tol = d[1], d[2], d[3]
      for key in pairs(c[dn]) do
        it("matches PyTorch: " .. key .. " (" .. dn .. ")", function()
          local o = opts[key]
          for _, lay in ipairs(layouts(c.x, dt)) do
            local x = lay[2]
            H.assert_close(cell.ops.softplus(x, o), c[dn][key].out, tol, lay[1])
            local sens = cell.tensor(c.sens, dt)
            local g = cell.grad(function(v) return (cell.ops.softplus(v, o) * sens):sum() end)(x)
            H.assert_close(g, c[dn][key].grad, tol, lay[1] .. " gradient")
          end
        end)
      end
    end
    it("takes beta and threshold as positional numbers too", function()
      local x = cell.tensor(c.x, cell.float64)
      H.assert_close(cell.ops.softplus(x, 2), c.float64.beta2.out, 1e-12)
      H.assert_close(cell.ops.softplus(x, 0.5, 1), c.float64.beta_half_thr1.out, 1e-12)
      H.assert_shape(cell.ops.softplus(cell.zeros({ 0, 4 })), { 0, 4 })
    end)
    it("names each misuse", function()
      H.expect_error(function() return cell.ops.softplus(cell.ones({ 2 }, cell.int64)) end, "TypeError",
        "softplus: not supported for Int64 tensors (a float dtype is needed)")
      H.expect_error(function() return cell.ops.softplus(cell.ones({ 2 }), { beta = 0 }) end, "ValueError",
        "softplus: beta must be a nonzero number")
      H.expect_error(function() return cell.ops.softplus(cell.ones({ 2 }), { alpha = 1 }) end, "TypeError",
        "softplus: unknown option 'alpha' (the options are beta, threshold)")
      H.expect_error(function() return cell.ops.softplus(cell.ones({ 2 }), { beta = "x" }) end, "TypeError",
        "softplus: beta must be a number, got string")
      H.expect_error(function() return cell.ops.softplus("x") end, "TypeError")
    end)
  end)

  describe("Tensor:softmax and Tensor:log_softmax", function()
    local c = fx.softmax
    for _, d in ipairs(FLOATS) do
      local dn, dt, tol = d[1], d[2], d[3]
      for _, case in ipairs { { "softmax", "softmax_d1", 1 }, { "softmax", "softmax_last", nil },
        { "log_softmax", "log_softmax_d1", 1 }, { "log_softmax", "log_softmax_last", -1 } } do
        local m, key, dim = case[1], case[2], case[3]
        it(key .. " matches PyTorch (" .. dn .. ")", function()
          for _, lay in ipairs(layouts(c.x, dt)) do
            local x = lay[2]
            H.assert_close(x[m](x, dim), c[dn][key].out, tol, lay[1])
            H.assert_close(cell.ops[m](x, dim), c[dn][key].out, tol, lay[1] .. " cell.ops")
            local sens = cell.tensor(c.sens, dt)
            local g = cell.grad(function(v) return (v[m](v, dim) * sens):sum() end)(x)
            H.assert_close(g, c[dn][key].grad, tol, lay[1] .. " gradient")
          end
        end)
      end
    end
    it("names a dimension out of range (IndexError) and works on zero-size tensors", function()
      H.expect_error(function() return cell.ones({ 2, 3 }):softmax(3) end, "IndexError")
      H.expect_error(function() return cell.ones({ 2, 3 }):log_softmax("a") end, "TypeError")
      H.assert_shape(cell.zeros({ 0, 3 }):softmax(2), { 0, 3 })
    end)
  end)
end)
