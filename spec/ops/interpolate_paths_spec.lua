-- interpolate_paths_spec.lua - cell.ops.interpolate's two drivers (src/ops/
-- interpolate.c: the separable passes with tap-major tables and the
-- transposed W table of the backward, and the direct K x K loop taken when
-- the separable scratch would be too large) on random shapes and sizes in
-- float64: the forward against a reference written here from PyTorch's
-- coordinate rules, the backward against the forward as its adjoint
-- (<interp(x), g> = <x, interp'(g)>), and a strided output gradient (read
-- through its strides, arriving through a transpose) against a contiguous
-- one.
local cell = require "cell"

local ops = cell.ops
local f64 = cell.float64

-- The taps of one axis: for each output position o, a list of
-- {input position (1-based), weight}, by PyTorch's rules (no scale_factor).
local function taps(mode, align, n_in, n_out)
  local res = {}
  local scale
  if align then
    scale = n_out > 1 and (n_in - 1) / (n_out - 1) or 0
  else
    scale = n_in / n_out
  end
  local function clamp(i) return math.max(0, math.min(n_in - 1, i)) + 1 end
  for o = 0, n_out - 1 do
    if mode == "nearest" then
      res[o + 1] = { { clamp(math.floor(o * scale)), 1 } } -- exact for the integer ratios used
    elseif mode == "cubic" then
      local src = align and scale * o or scale * (o + 0.5) - 0.5
      local i0 = math.floor(src)
      local t = src - i0
      local A = -0.75
      local function c1(x) return ((A + 2) * x - (A + 3)) * x * x + 1 end
      local function c2(x) return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A end
      res[o + 1] = { { clamp(i0 - 1), c2(t + 1) }, { clamp(i0), c1(t) }, { clamp(i0 + 1), c1(1 - t) },
        { clamp(i0 + 2), c2(2 - t) } }
    else
      local src = align and scale * o or scale * (o + 0.5) - 0.5
      if src < 0 then src = 0 end
      local i0 = math.floor(src)
      local l = src - i0
      res[o + 1] = { { clamp(i0), 1 - l }, { clamp(i0 + 1), l } }
    end
  end
  return res
end

-- Reference forward of x (a nested table N x C x H x W) to oh x ow.
local function reference(x, mode, align, oh, ow)
  local h, w = #x[1][1], #x[1][1][1]
  local axis_mode = mode == "bicubic" and "cubic" or mode == "nearest" and "nearest" or "linear"
  local th = taps(axis_mode, align, h, oh)
  local tw = taps(axis_mode, align, w, ow)
  local out = {}
  for n = 1, #x do
    out[n] = {}
    for c = 1, #x[n] do
      local plane, o = x[n][c], {}
      for i = 1, oh do
        o[i] = {}
        for j = 1, ow do
          local acc = 0
          for _, a in ipairs(th[i]) do
            local row = 0
            for _, b in ipairs(tw[j]) do row = row + b[2] * plane[a[1]][b[1]] end
            acc = acc + a[2] * row
          end
          o[i][j] = acc
        end
      end
      out[n][c] = o
    end
  end
  return out
end

local function max_diff(a, b)
  local ta, tb = a:reshape({ -1 }):totable(), b:reshape({ -1 }):totable()
  assert.are.equal(#tb, #ta, "element count")
  local m = 0
  for i = 1, #ta do m = math.max(m, math.abs(ta[i] - tb[i])) end
  return m
end

local function dot(a, b) return (a * b):sum():item() end

-- The gradient reaching the backward through a transpose (a strided
-- output gradient: columns oh apart) against the same gradient contiguous.
local function strided_gap(x, opts, oh, ow)
  local n, c = x.shape[1], x.shape[2]
  local gt = cell.randn({ n, c, ow, oh }, f64)
  local a = cell.grad(function(t) return (ops.interpolate(t, opts):transpose(3, 4) * gt):sum() end)(x)
  local gc = gt:transpose(3, 4):contiguous()
  local b = cell.grad(function(t) return (ops.interpolate(t, opts) * gc):sum() end)(x)
  return max_diff(a, b)
end

local function case_label(shape, mode, align, oh, ow)
  return ("%s %s align=%s -> %dx%d"):format(table.concat(shape, "x"), mode, tostring(align), oh, ow)
end

describe("interpolate's drivers", function()
  it("agree with the reference and are their own adjoint on random shapes", function()
    math.randomseed(5)
    cell.set_seed(5)
    local modes = { "bilinear", "bicubic", "nearest" }
    for trial = 1, 40 do
      local mode = modes[(trial - 1) % 3 + 1]
      local align = mode ~= "nearest" and trial % 2 == 0
      local n, c = math.random(1, 2), math.random(1, 3)
      local h, w = math.random(1, 9), math.random(1, 9)
      local oh, ow
      if mode == "nearest" then -- integer ratios, where float32 coordinates are exact
        oh = h * math.random(1, 3)
        ow = math.random(1, 2) == 1 and w * math.random(1, 3) or w
      else
        oh, ow = math.random(1, 17), math.random(1, 17)
      end
      local x = cell.randn({ n, c, h, w }, f64)
      local opts = { size = { oh, ow }, mode = mode, align_corners = mode ~= "nearest" and align or nil }
      local what = case_label({ n, c, h, w }, mode, align, oh, ow)
      local y = ops.interpolate(x, opts)
      local want = cell.tensor(reference(x:totable(), mode, align, oh, ow), f64)
      assert.is_true(max_diff(y, want) < 1e-12, what .. ": forward")
      local g = cell.randn({ n, c, oh, ow }, f64)
      local gx = cell.grad(function(t) return (ops.interpolate(t, opts) * g):sum() end)(x)
      local lhs, rhs = dot(y, g), dot(x, gx)
      assert.is_true(math.abs(lhs - rhs) <= 1e-10 * (1 + math.abs(lhs)), what .. ": adjoint")
      local ones = cell.grad(function(t) return ops.interpolate(t, opts):sum() end)(x)
      local ones_mat = cell.grad(function(t) return (ops.interpolate(t, opts) * cell.ones({ n, c, oh, ow }, f64)):sum() end)(x)
      assert.are.equal(0, max_diff(ones, ones_mat), what .. ": gradient of the sum")
      assert.are.equal(0, strided_gap(x, opts, oh, ow), what .. ": strided gradient")
    end
  end)

  it("take the direct loop when the separable scratch would be large, with the same results", function()
    cell.set_seed(8)
    -- H 2000 -> 2 and W 2 -> 300: the scratch (H x OW) is far larger than input and output
    local x = cell.randn({ 1, 2, 2000, 2 }, f64)
    for _, mode in ipairs { "bilinear", "bicubic" } do
      for _, align in ipairs { false, true } do
        local opts = { size = { 2, 300 }, mode = mode, align_corners = align }
        local what = case_label({ 1, 2, 2000, 2 }, mode, align, 2, 300)
        local y = ops.interpolate(x, opts)
        local want = cell.tensor(reference(x:totable(), mode, align, 2, 300), f64)
        assert.is_true(max_diff(y, want) < 1e-12, what .. ": forward")
        local g = cell.randn({ 1, 2, 2, 300 }, f64)
        local gx = cell.grad(function(t) return (ops.interpolate(t, opts) * g):sum() end)(x)
        local lhs, rhs = dot(y, g), dot(x, gx)
        assert.is_true(math.abs(lhs - rhs) <= 1e-10 * (1 + math.abs(lhs)), what .. ": adjoint")
        local ones = cell.grad(function(t) return ops.interpolate(t, opts):sum() end)(x)
        assert.is_true(math.abs(ones:sum():item() - 1200) < 1e-9, what .. ": weights sum to 1 per output")
        assert.are.equal(0, strided_gap(x, opts, 2, 300), what .. ": strided gradient")
      end
    end
  end)

  it("resize 3-D inputs (linear) through the same driver", function()
    cell.set_seed(9)
    local x = cell.randn({ 2, 3, 7 }, f64)
    for _, len in ipairs { 1, 3, 7, 20 } do
      local opts = { size = { len }, mode = "linear" }
      local y = ops.interpolate(x, opts)
      local want = cell.tensor(reference(x:reshape({ 2, 3, 1, 7 }):totable(), "bilinear", false, 1, len), f64)
      assert.is_true(max_diff(y:reshape({ 2, 3, 1, len }), want) < 1e-12, "linear 7 -> " .. len)
      local g = cell.randn({ 2, 3, len }, f64)
      local gx = cell.grad(function(t) return (ops.interpolate(t, opts) * g):sum() end)(x)
      assert.is_true(math.abs(dot(y, g) - dot(x, gx)) < 1e-10, "linear adjoint 7 -> " .. len)
    end
  end)
end)
