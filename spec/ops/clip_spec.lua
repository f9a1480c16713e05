-- clip_spec.lua - cell.ops.clip_by_norm, clip_by_global_norm and
-- clip_by_value: against torch.nn.utils.clip_grad_norm_ and MindSpore's
-- formulas written with torch (spec/fixtures/gen_clip.py), hand values,
-- gradients through the clipping, and the errors for misuse.
local cell = require "cell"
local H = require "helpers"

local FX = require "fixtures.clip_fixtures"
local unpack = table.unpack or unpack

local function xs(dt)
  local out = {}
  for i, v in ipairs(FX.x) do out[i] = cell.tensor(v, dt) end
  return out
end

--- The gradients of sum_i sum(out_i * w_i) with respect to the inputs.
local function grads_through(clip, dt)
  local w = {}
  for i, v in ipairs(FX.w) do w[i] = cell.tensor(v, dt) end
  return cell.grad(function(a, b, c)
    local out = clip({ a, b, c })
    local s = (out[1] * w[1]):sum()
    for i = 2, #out do s = s + (out[i] * w[i]):sum() end
    return s
  end, { 1, 2, 3 })(unpack(xs(dt)))
end

describe("cell.ops.clip_by_norm", function()
  for _, d in ipairs({ { cell.float64, 1e-10 }, { cell.float32, 1e-5 } }) do
    local dt, tol = d[1], d[2]
    for _, c in ipairs(FX.by_norm) do
      local p = c.inf and math.huge or c.norm_type
      it(("as clip_grad_norm_, norm_type %s, max_norm %s, %s"):format(tostring(p), c.max_norm, dt.name),
        function()
          local out = cell.ops.clip_by_norm(xs(dt), c.max_norm, p)
          assert.are.equal(#FX.x, #out)
          for i = 1, #out do
            assert.are.equal(dt, out[i].dtype)
            H.assert_close(out[i], c.out[i], tol, "tensor " .. i)
          end
          local one = cell.ops.clip_by_norm(cell.tensor(FX.x[1], dt), c.max_norm, p)
          assert.is_true(cell.is_tensor(one))
          H.assert_close(one, c.single, tol, "a single tensor")
          local g = grads_through(function(l) return cell.ops.clip_by_norm(l, c.max_norm, p) end, dt)
          for i = 1, #g do H.assert_close(g[i], c.grads[i], tol * 10, "gradient " .. i) end
        end)
    end
  end

  it("MindSpore's documented example", function()
    local x = cell.tensor({ { 0.8748, 0.1425, 0.0076 }, { 0.7721, 0.4084, 0.0552 }, { 4.6376, 0.2914, 2.1120 } })
    H.assert_close(cell.ops.clip_by_norm(x, 1), { { 0.16650201, 0.02712224, 0.00144652 },
      { 0.14695495, 0.07773139, 0.0105063 }, { 0.8826814, 0.0554626, 0.40198016 } }, 1e-5)
  end)

  it("by hand: a 3-4-5 vector clipped to norm 1, and left alone under the bound", function()
    local v = cell.tensor({ 3.0, 4.0 }, cell.float64)
    H.assert_close(cell.ops.clip_by_norm(v, 1.0), { 0.6 / (1 + 2e-7), 0.8 / (1 + 2e-7) }, 1e-12)
    H.assert_close(cell.ops.clip_by_norm(v, 10.0), { 3.0, 4.0 }, 0)
  end)

  it("error_if_nonfinite", function()
    local bad = { cell.tensor({ 1.0, 0 / 0 }), cell.tensor({ 2.0 }) }
    H.expect_error(function() return cell.ops.clip_by_norm(bad, 1.0, 2.0, true) end, "RuntimeError",
      "clip_by_norm", "total norm", "nan")
    local out = cell.ops.clip_by_norm(bad, 1.0)
    assert.are.equal(2, #out)
  end)

  it("misuse", function()
    H.expect_error(function() return cell.ops.clip_by_norm({ cell.ones({ 2 }), "g" }, 1.0) end,
      "TypeError", "clip_by_norm", "x[2] must be a Tensor", "string")
    H.expect_error(function() return cell.ops.clip_by_norm(3, 1.0) end, "TypeError", "clip_by_norm", "x")
    H.expect_error(function() return cell.ops.clip_by_norm({}, 1.0) end, "ValueError", "at least one Tensor")
    H.expect_error(function() return cell.ops.clip_by_norm(cell.ones({ 2 }), -1) end, "ValueError",
      "max_norm must be at least 0", "-1")
    H.expect_error(function() return cell.ops.clip_by_norm(cell.ones({ 2 }), "1") end, "TypeError",
      "max_norm must be a number")
    H.expect_error(function() return cell.ops.clip_by_norm(cell.ones({ 2 }), 1, 0) end, "ValueError",
      "norm_type must be greater than 0")
    H.expect_error(function() return cell.ops.clip_by_norm({ cell.tensor({ 1, 2 }, cell.int32) }, 1) end,
      "TypeError", "x[1] must be a floating-point Tensor")
  end)
end)

describe("cell.ops.clip_by_global_norm", function()
  for _, d in ipairs({ { cell.float64, 1e-10 }, { cell.float32, 1e-5 } }) do
    local dt, tol = d[1], d[2]
    for _, c in ipairs(FX.by_global_norm) do
      it(("clip_norm %s, %s: x * clip_norm / max(global norm, clip_norm)"):format(c.clip_norm, dt.name), function()
        local out = cell.ops.clip_by_global_norm(xs(dt), c.clip_norm)
        for i = 1, #out do H.assert_close(out[i], c.out[i], tol, "tensor " .. i) end
        local g = grads_through(function(l) return cell.ops.clip_by_global_norm(l, c.clip_norm) end, dt)
        for i = 1, #g do H.assert_close(g[i], c.grads[i], tol * 10, "gradient " .. i) end
      end)
    end
  end

  it("MindSpore's documented example (clip_norm defaults to 1)", function()
    local x1 = cell.tensor({ { 2, 3 }, { 1, 2 } })
    local x2 = cell.tensor({ { 1, 4 }, { 3, 1 } })
    local out = cell.ops.clip_by_global_norm({ x1, x2 })
    H.assert_close(out[1], { { 0.298142403, 0.447213590 }, { 0.149071202, 0.298142403 } }, 1e-6)
    H.assert_close(out[2], { { 0.149071202, 0.596284807 }, { 0.447213590, 0.149071202 } }, 1e-6)
  end)

  it("use_norm: a given global norm (a number or a one-element Tensor)", function()
    local x = { cell.tensor({ 3.0, 4.0 }, cell.float64) }
    H.assert_close(cell.ops.clip_by_global_norm(x, 2.0, 10.0)[1], { 0.6, 0.8 }, 1e-12)
    H.assert_close(cell.ops.clip_by_global_norm(x, 2.0, cell.tensor({ 1.0 }, cell.float64))[1], { 3.0, 4.0 }, 1e-12)
  end)

  it("misuse", function()
    H.expect_error(function() return cell.ops.clip_by_global_norm(cell.ones({ 2 }), 1.0) end, "TypeError",
      "clip_by_global_norm", "a list of Tensors", "Tensor")
    H.expect_error(function() return cell.ops.clip_by_global_norm({ cell.ones({ 2 }), 7 }, 1.0) end,
      "TypeError", "x[2] must be a Tensor", "number")
    H.expect_error(function() return cell.ops.clip_by_global_norm({ cell.ones({ 2 }) }, -1.0) end,
      "ValueError", "clip_norm must be greater than 0", "-1")
    H.expect_error(function() return cell.ops.clip_by_global_norm({ cell.ones({ 2 }) }, 0) end,
      "ValueError", "clip_norm must be greater than 0")
    H.expect_error(function() return cell.ops.clip_by_global_norm({ cell.ones({ 2 }) }, 1.0, cell.ones({ 2 })) end,
      "TypeError", "use_norm", "[2]")
    H.expect_error(function() return cell.ops.clip_by_global_norm({ cell.ones({ 2 }) }, 1.0, "x") end,
      "TypeError", "use_norm must be a number")
  end)
end)

describe("cell.ops.clip_by_value", function()
  it("numbers as bounds, and min above max gives max", function()
    local x = cell.tensor({ -2.0, -0.5, 0.5, 3.0 })
    H.assert_close(cell.ops.clip_by_value(x, -1, 1), { -1.0, -0.5, 0.5, 1.0 }, 0)
    H.assert_close(cell.ops.clip_by_value(x, nil, 0), { -2.0, -0.5, 0.0, 0.0 }, 0)
    H.assert_close(cell.ops.clip_by_value(x, 0), { 0.0, 0.0, 0.5, 3.0 }, 0)
    H.assert_close(cell.ops.clip_by_value(x, 2, 1), { 1.0, 1.0, 1.0, 1.0 }, 0)
  end)

  it("tensor bounds that broadcast, integer tensors, and a list", function()
    local x = cell.tensor({ { 1, 5 }, { -3, 8 } })
    local lo = cell.tensor({ 0, 6 })
    local hi = cell.tensor({ { 2 }, { 7 } })
    H.assert_close(cell.ops.clip_by_value(x, lo, hi), { { 1, 2 }, { 0, 7 } }, 0)
    local xi = cell.tensor({ -5, 0, 5 }, cell.int32)
    local r = cell.ops.clip_by_value(xi, -1, 1)
    H.assert_values(r, { -1, 0, 1 }, "int32")
    local l = cell.ops.clip_by_value({ cell.tensor({ 4.0 }), cell.tensor({ -4.0 }) }, -1, 1)
    H.assert_close(l[1], { 1.0 }, 0)
    H.assert_close(l[2], { -1.0 }, 0)
  end)

  it("gradient: 1 inside the bounds (bounds included, as torch.clamp), 0 outside", function()
    local g = cell.grad(function(x) return cell.ops.clip_by_value(x, -1, 1):sum() end)(
      cell.tensor({ -2.0, -1.0, 0.5, 1.0, 3.0 }))
    H.assert_close(g, { 0, 1, 1, 1, 0 }, 0)
  end)

  it("gradient with Tensor bounds: x's whole at a bound, a bound's only where x is past it (torch.clamp)", function()
    -- torch.clamp(x, lo, hi).sum().backward() with x = [0, 1, 0.5, -1, 2], lo = 0, hi = 1:
    -- x.grad [1, 1, 1, 0, 0], lo.grad [0, 0, 0, 1, 0], hi.grad [0, 0, 0, 0, 1]
    local g = cell.grad(function(x, lo, hi) return x:clamp(lo, hi):sum() end, { 1, 2, 3 })(
      cell.tensor({ 0, 1, 0.5, -1, 2 }), cell.zeros({ 5 }), cell.ones({ 5 }))
    H.assert_close(g[1], { 1, 1, 1, 0, 0 }, 0)
    H.assert_close(g[2], { 0, 0, 0, 1, 0 }, 0)
    H.assert_close(g[3], { 0, 0, 0, 0, 1 }, 0)
    local gm = cell.grad(function(x, hi) return cell.ops.clip_by_value(x, 1, hi):sum() end, { 1, 2 })(
      cell.tensor({ 0.5, 2 }), cell.tensor({ 0, 0 })) -- min above max: max, and its gradient
    H.assert_close(gm[1], { 0, 0 }, 0)
    H.assert_close(gm[2], { 1, 1 }, 0)
  end)

  it("misuse", function()
    H.expect_error(function() return cell.ops.clip_by_value(cell.ones({ 2 })) end, "ValueError",
      "clip_by_value", "cannot both be nil")
    H.expect_error(function() return cell.ops.clip_by_value("x", 0, 1) end, "TypeError", "x", "string")
    H.expect_error(function() return cell.ops.clip_by_value({ cell.ones({ 1 }), true }, 0, 1) end,
      "TypeError", "x[2] must be a Tensor", "boolean")
    H.expect_error(function() return cell.ops.clip_by_value(cell.ones({ 2 }), "0", 1) end, "TypeError",
      "clip_value_min must be a number, a Tensor or nil")
    H.expect_error(function() return cell.ops.clip_by_value(cell.ones({ 2 }), 0, cell.tensor({ true })) end,
      "TypeError", "clip_value_max", "bool")
    H.expect_error(function() return cell.ops.clip_by_value(cell.tensor({ true }), 0, 1) end,
      "TypeError", "x must be a numeric Tensor")
  end)
end)
