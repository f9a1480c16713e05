-- ops_spec.lua - tensor ops (src/lua/lops.c, src/lua/lcreate.c,
-- lua/cell/tensor.lua, lua/cell/ops.lua): elementwise arithmetic with
-- broadcasting, math, comparisons, selection, reductions, linear algebra
-- and shape ops. Small cases are checked by hand; larger ones against
-- spec/fixtures/ops_fixtures.lua (made by spec/fixtures/gen_ops.py).
local H = require "helpers"
local cell = require "cell"
local FX = H.fixtures()

local assert_close, assert_values, assert_shape = H.assert_close, H.assert_values, H.assert_shape

local function wrap(dt, v)
  if dt == "int8" then return (v + 128) % 256 - 128 end
  if dt == "uint8" then return v % 256 end
  return v
end

local function is_int(dt) return dt == "int8" or dt == "uint8" or dt == "int32" or dt == "int64" end

-- --- binary arithmetic: op x dtype x shape -------------------------------------

local shapes = {
  { { 2, 3 }, { 2, 3 } },
  { { 2, 3 }, { 3 } },
  { { 2, 1 }, { 1, 3 } },
  { { 3 }, {} },
  { {}, { 2, 2 } },
  { { 2, 1, 3 }, { 4, 1 } },
  { { 4 }, { 1 } },
}

local arith = {
  { name = "add", sym = function(a, b) return a + b end, ref = function(x, y) return x + y end },
  { name = "sub", sym = function(a, b) return a - b end, ref = function(x, y) return x - y end },
  { name = "mul", sym = function(a, b) return a * b end, ref = function(x, y) return x * y end },
  { name = "div", sym = function(a, b) return a / b end, ref = function(x, y) return x / y end, nonzero = true },
  { name = "pow", sym = function(a, b) return a ^ b end, ref = function(x, y) return x ^ y end, small_exp = true },
  { name = "maximum", ref = function(x, y) return math.max(x, y) end },
  { name = "minimum", ref = function(x, y) return math.min(x, y) end },
}

local arith_dtypes = { "float32", "float64", "float16", "bfloat16", "int8", "uint8", "int32", "int64" }

local function operands(op, dt, sa, sb)
  local alo, ahi = -3, 3
  local blo, bhi = -2, 4
  if dt == "uint8" then alo, blo = 0, 0 end
  if op.nonzero then blo, bhi = 1, 4 end
  if op.small_exp then blo, bhi = 0, 3 end
  return H.pattern(sa, alo, ahi, 5), H.pattern(sb, blo, bhi, 3)
end

describe("binary arithmetic with broadcasting", function()
  for _, op in ipairs(arith) do
    for _, dt in ipairs(arith_dtypes) do
      for _, sh in ipairs(shapes) do
        local sa, sb = sh[1], sh[2]
        local label = ("%s %s %s %s"):format(op.name, dt, H.shape_str(sa), H.shape_str(sb))
        it(label, function()
          local da, db = operands(op, dt, sa, sb)
          local a, b = cell.tensor(da, cell[dt]), cell.tensor(db, cell[dt])
          local out_dt = (op.name == "div" and is_int(dt)) and "float32" or dt
          local expected = H.ref_binary(da, db, function(x, y)
            local v = op.ref(x, y)
            if is_int(out_dt) then v = wrap(dt, v) end
            return v
          end)
          local r = a[op.name](a, b)
          assert.are.equal(out_dt, r.dtype.name, label .. " dtype")
          assert_close(r, expected, nil, label)
          if op.sym then assert_close(op.sym(a, b), expected, nil, label .. " (operator)") end
          -- the same op on non-contiguous operands gives the same values
          if #sa == 2 and sa[1] > 1 and sa[2] > 1 then
            local at = cell.tensor(H.transpose2(da), cell[dt]):transpose(1, 2)
            assert_close(a[op.name](at, b), expected, nil, label .. " (transposed a)")
          end
        end)
      end
    end
  end

  it("bool add is or, mul is and", function()
    local a, b = cell.tensor({ true, true, false, false }), cell.tensor({ true, false, true, false })
    assert_values(a + b, { true, true, true, false }, "bool")
    assert_values(a * b, { true, false, false, false }, "bool")
  end)

  it("promotes mixed dtypes", function()
    local cases = {
      { "int32", "float32", "float32" }, { "int64", "int32", "int64" }, { "float32", "float64", "float64" },
      { "int8", "uint8", "int16" }, { "bool", "int32", "int32" }, { "float16", "bfloat16", "float32" },
      { "uint8", "int64", "int64" }, { "float16", "float32", "float32" }, { "int64", "float16", "float16" },
      { "bool", "float64", "float64" },
    }
    for _, c in ipairs(cases) do
      local a = cell.tensor({ 1, 2 }, cell[c[1]])
      local b = cell.tensor({ 3, 1 }, cell[c[2]])
      local r = a + b
      assert.are.equal(c[3], r.dtype.name, c[1] .. " + " .. c[2])
      assert.are.equal(c[3], (b + a).dtype.name, c[2] .. " + " .. c[1])
      if c[1] == "bool" then
        assert_values(r, { 4, 2 }, nil, c[1] .. " + " .. c[2])
      else
        assert_values(r, { 4, 3 }, nil, c[1] .. " + " .. c[2])
      end
    end
    assert.are.equal("float32", (cell.tensor({ 1 }, cell.int32) / cell.tensor({ 2 }, cell.int64)).dtype.name)
  end)

  it("maximum and minimum propagate NaN", function()
    local nan = 0 / 0
    local a, b = cell.tensor({ nan, 1, 2 }), cell.tensor({ 1, nan, 3 })
    local mx, mn = a:maximum(b):totable(), a:minimum(b):totable()
    assert.is_true(mx[1] ~= mx[1] and mx[2] ~= mx[2])
    assert.are.equal(3, mx[3])
    assert.is_true(mn[1] ~= mn[1] and mn[2] ~= mn[2])
    assert.are.equal(2, mn[3])
  end)

  it("float division by zero gives inf and nan", function()
    local r = cell.tensor({ 1, -1, 0 }) / cell.tensor({ 0, 0, 0 })
    local v = r:totable()
    assert.are.equal(math.huge, v[1])
    assert.are.equal(-math.huge, v[2])
    assert.is_true(v[3] ~= v[3])
  end)
end)

describe("tensor and number", function()
  local t = cell.tensor({ { 1, 2 }, { 3, 4 } })

  it("works on both sides of every operator", function()
    assert_values(t + 1, { { 2, 3 }, { 4, 5 } }, "float32")
    assert_values(1 + t, { { 2, 3 }, { 4, 5 } }, "float32")
    assert_values(t - 1, { { 0, 1 }, { 2, 3 } })
    assert_values(10 - t, { { 9, 8 }, { 7, 6 } })
    assert_values(t * 2, { { 2, 4 }, { 6, 8 } })
    assert_values(2 * t, { { 2, 4 }, { 6, 8 } })
    assert_values(t / 2, { { 0.5, 1 }, { 1.5, 2 } })
    assert_values(12 / t, { { 12, 6 }, { 4, 3 } })
    assert_values(t ^ 2, { { 1, 4 }, { 9, 16 } })
    assert_values(2 ^ t, { { 2, 4 }, { 8, 16 } })
    assert_values(-t, { { -1, -2 }, { -3, -4 } })
    assert_values(t:add(1), { { 2, 3 }, { 4, 5 } })
    assert_values(t:sub(0.5), { { 0.5, 1.5 }, { 2.5, 3.5 } })
    assert_values(t:mul(-1), { { -1, -2 }, { -3, -4 } })
    assert_values(t:div(4), { { 0.25, 0.5 }, { 0.75, 1 } })
    assert_close(t:pow(0.5), { { 1, math.sqrt(2) }, { math.sqrt(3), 2 } })
  end)

  it("keeps the tensor's dtype unless the number needs a float", function()
    local i = cell.tensor({ 1, 2, 3 }, cell.int32)
    assert_values(i + 1, { 2, 3, 4 }, "int32")
    assert_values(2 * i, { 2, 4, 6 }, "int32")
    assert_values(10 - i, { 9, 8, 7 }, "int32")
    assert_values(i + 1.5, { 2.5, 3.5, 4.5 }, "float32")
    assert_values(i / 2, { 0.5, 1, 1.5 }, "float32")
    assert_values(i ^ 2, { 1, 4, 9 }, "int32")
    local d = cell.tensor({ 1, 2 }, cell.float64)
    assert_values(d * 2.5, { 2.5, 5 }, "float64")
    assert_values(cell.tensor({ 1, 2 }, cell.float16) + 1.5, { 2.5, 3.5 }, "float16")
    assert_values(cell.tensor({ true, false }) + 1, { 2, 1 }, "int64")
    assert_values(cell.tensor({ 250 }, cell.uint8) + 10, { 4 }, "uint8")
  end)

  it("an integer tensor to a negative integer number is PyTorch's RuntimeError, not truncated to 0", function()
    -- torch 1.13: torch.tensor([1, 2, 3]) ** -1 raises "RuntimeError: Integers to negative integer powers
    -- are not allowed."; ** -0.5 and a float tensor ** -1 are computed
    local i = cell.tensor({ 1, 2, 3 }, cell.int64)
    local msg = "RuntimeError: pow: Integers to negative integer powers are not allowed (Int64 tensor ^ -1); "
      .. "convert the tensor to a floating-point dtype first"
    local function err(fn) return H.caller_error("ops_spec%.lua", fn) end
    -- (the operator's error: LuaJIT reports metamethod errors from their own frame, so no caller check)
    H.expect_error(function() return i ^ -1 end, "RuntimeError", msg:match("^RuntimeError: (.*)$"))
    assert.are.equal(msg, err(function() i:pow(-1) end))
    assert.are.equal(msg, err(function() cell.ops.pow(i, -1) end))
    assert.are.equal(msg, err(function() i:pow_(-1) end))
    assert_values(i, { 1, 2, 3 }, "int64") -- left as it was
    H.expect_error(function() return cell.tensor({ 2 }, cell.uint8) ^ -2 end, "RuntimeError",
      "pow: Integers to negative integer powers are not allowed (UInt8 tensor ^ -2)")
    H.expect_error(function() return cell.tensor({ true }) ^ -1 end, "RuntimeError", "(Bool tensor ^ -1)")
    assert_values(i ^ 0, { 1, 1, 1 }, "int64")
    assert_close(i ^ -0.5, { 1, 0.7071067690849304, 0.5773502588272095 })
    assert_close(i:float() ^ -1, { 1, 0.5, 0.3333333432674408 })
    assert_values(2 ^ cell.tensor({ 1, 2 }, cell.int64), { 2, 4 }, "int64") -- a tensor exponent is left as it was
  end)

  it("in-place forms update and return the tensor", function()
    local a = cell.tensor({ 1, 2, 3 })
    local r = a:add_(1)
    assert.are.equal(a, r)
    assert_values(a, { 2, 3, 4 })
    a:mul_(cell.tensor({ 2 }))
    assert_values(a, { 4, 6, 8 })
    a:sub_(cell.tensor({ 1, 2, 3 }))
    assert_values(a, { 3, 4, 5 })
    a:div_(2)
    assert_values(a, { 1.5, 2, 2.5 })
    a:pow_(2)
    assert_values(a, { 2.25, 4, 6.25 })
    a:fill_(7)
    assert_values(a, { 7, 7, 7 })
    a:zero_()
    assert_values(a, { 0, 0, 0 })
    a:copy_(cell.tensor({ 9, 8, 7 }, cell.int64))
    assert_values(a, { 9, 8, 7 }, "float32")
    a:copy_(cell.tensor({ 1 }))
    assert_values(a, { 1, 1, 1 })
    local i = cell.tensor({ 1, 2 }, cell.int64)
    i:add_(cell.tensor({ 3, 4 }, cell.int32))
    assert_values(i, { 4, 6 }, "int64")
    local m = cell.zeros({ 2, 3 })
    m:add_(cell.tensor({ 1, 2, 3 }))
    assert_values(m, { { 1, 2, 3 }, { 1, 2, 3 } })
    local e = cell.tensor({ 0, 1 })
    e:exp_()
    assert_close(e, { 1, math.exp(1) })
  end)

  it("in-place ops on a view write through to the base", function()
    local m = cell.ones({ 3, 3 })
    m[2]:mul_(5)
    m[{ {}, 3 }]:add_(1)
    assert_values(m, { { 1, 1, 2 }, { 5, 5, 6 }, { 1, 1, 2 } })
  end)
end)

-- --- unary math -------------------------------------------------------------------

describe("unary math", function()
  local x, p = FX.unary_x, FX.unary_p
  local float_tol = { float32 = 1e-5, float64 = 1e-12, float16 = 3e-3, bfloat16 = 2e-2 }
  local function strided(data, dt)
    -- the values as a non-contiguous column of an n x 2 tensor
    local rows = {}
    for i = 1, #data do rows[i] = { data[i], 0 } end
    return cell.tensor(rows, cell[dt]):select(2, 1)
  end
  for _, set in ipairs({ { x, FX.unary }, { p, FX.unary_pos } }) do
    local input, refs = set[1], set[2]
    local names = {}
    for name in pairs(refs) do names[#names + 1] = name end
    table.sort(names)
    for _, name in ipairs(names) do
      for _, dt in ipairs(H.float_dtypes) do
        it(("%s %s"):format(name, dt), function()
          local tol = float_tol[dt]
          local t = cell.tensor(input, cell[dt])
          local r = t[name](t)
          assert.are.equal(dt, r.dtype.name)
          assert_close(r, refs[name], tol, name .. " " .. dt)
          assert_close(strided(input, dt)[name](strided(input, dt)), refs[name], tol, name .. " " .. dt .. " strided")
          -- a 2-D shape: the first 12 (or 6) values as a matrix
          local n = #input - #input % 2
          local flat, want = {}, {}
          for i = 1, n do flat[i], want[i] = input[i], refs[name][i] end
          local m = cell.tensor(flat, cell[dt]):reshape({ 2, n / 2 })
          assert_close(m[name](m), H.nest({ 2, n / 2 }, want), tol, name .. " " .. dt .. " 2-D")
        end)
      end
    end
  end

  it("rounds half to even", function()
    assert_values(cell.tensor({ -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.4, 0.6 }):round(),
      { -2, -2, 0, 0, 2, 2, 0, 1 }, "float32")
  end)

  it("math on integer tensors gives float32; abs, neg, sign, relu keep the dtype", function()
    local i = cell.tensor({ -2, 0, 3 }, cell.int32)
    assert_close(i:exp(), { math.exp(-2), 1, math.exp(3) })
    assert.are.equal("float32", i:exp().dtype.name)
    assert.are.equal("float32", cell.tensor({ 1, 4 }, cell.int64):sqrt().dtype.name)
    assert_close(cell.tensor({ 1, 4 }, cell.int64):sqrt(), { 1, 2 })
    assert.are.equal("float32", i:sigmoid().dtype.name)
    assert_values(i:abs(), { 2, 0, 3 }, "int32")
    assert_values(i:neg(), { 2, 0, -3 }, "int32")
    assert_values(-i, { 2, 0, -3 }, "int32")
    assert_values(i:sign(), { -1, 0, 1 }, "int32")
    assert_values(i:relu(), { 0, 0, 3 }, "int32")
    assert_values(i:floor(), { -2, 0, 3 }, "int32")
    assert_values(cell.tensor({ -5, 7 }, cell.int8):abs(), { 5, 7 }, "int8")
  end)

  it("special values", function()
    local r = cell.tensor({ 0, -1, 1 }):log():totable()
    assert.are.equal(-math.huge, r[1])
    assert.is_true(r[2] ~= r[2])
    assert.are.equal(0, r[3])
    assert_close(cell.tensor({ -100, 100 }):sigmoid(), { 0, 1 })
    assert_close(cell.tensor({ -100, 100 }):silu(), { 0, 100 })
    assert_close(cell.tensor({ 0, 4 }):rsqrt(), { math.huge, 0.5 })
    assert_values(cell.tensor({ -0.0, 0.0, -3, 2 }):sign(), { 0, 0, -1, 1 })
  end)

  it("logical_not, logical_and, logical_or", function()
    local a, b = cell.tensor({ true, true, false, false }), cell.tensor({ true, false, true, false })
    assert_values(a:logical_and(b), { true, false, false, false }, "bool")
    assert_values(a:logical_or(b), { true, true, true, false }, "bool")
    assert_values(a:logical_not(), { false, false, true, true }, "bool")
    local f = cell.tensor({ 0, 2, -1 })
    assert_values(f:logical_not(), { true, false, false }, "bool")
    assert_values(f:logical_and(cell.tensor({ 1, 1, 0 })), { false, true, false }, "bool")
    assert_values(f:logical_or(0), { false, true, true }, "bool")
  end)
end)

-- --- comparisons -------------------------------------------------------------------

describe("comparisons", function()
  local cmps = {
    { "eq", function(x, y) return x == y end }, { "ne", function(x, y) return x ~= y end },
    { "lt", function(x, y) return x < y end }, { "le", function(x, y) return x <= y end },
    { "gt", function(x, y) return x > y end }, { "ge", function(x, y) return x >= y end },
  }
  local dts = { "float32", "float64", "float16", "int8", "uint8", "int32", "int64" }
  local cshapes = { { { 2, 3 }, { 2, 3 } }, { { 2, 3 }, { 3 } }, { { 3, 1 }, { 1, 2 } }, { { 4 }, {} } }
  for _, c in ipairs(cmps) do
    for _, dt in ipairs(dts) do
      for _, sh in ipairs(cshapes) do
        local label = ("%s %s %s %s"):format(c[1], dt, H.shape_str(sh[1]), H.shape_str(sh[2]))
        it(label, function()
          local da, db = H.pattern(sh[1], 0, 3, 5), H.pattern(sh[2], 0, 3, 3)
          local a, b = cell.tensor(da, cell[dt]), cell.tensor(db, cell[dt])
          local r = a[c[1]](a, b)
          assert.are.equal("bool", r.dtype.name)
          assert_values(r, H.ref_binary(da, db, c[2]), "bool", label)
          -- against a number
          assert_values(a[c[1]](a, 2), H.map(da, function(v) return c[2](v, 2) end), "bool", label .. " vs 2")
        end)
      end
    end
  end

  it("compare across dtypes and against fractional numbers", function()
    local i = cell.tensor({ 1, 2, 3 }, cell.int32)
    assert_values(i:gt(1.5), { false, true, true }, "bool")
    assert_values(i:eq(cell.tensor({ 1, 2.5, 3 })), { true, false, true }, "bool")
    assert_values(cell.tensor({ true, false }):eq(cell.tensor({ true, true })), { true, false }, "bool")
    local nan = 0 / 0
    assert_values(cell.tensor({ nan, 1 }):eq(cell.tensor({ nan, 1 })), { false, true })
    assert_values(cell.tensor({ nan, 1 }):ne(cell.tensor({ nan, 1 })), { true, false })
  end)
end)

-- --- where, masked_fill, clamp -----------------------------------------------------

describe("where, masked_fill, clamp", function()
  it("where selects with broadcasting", function()
    local cond = cell.tensor({ { true, false, true }, { false, false, true } })
    local a = cell.tensor({ { 1, 2, 3 }, { 4, 5, 6 } })
    local b = cell.tensor({ -1, -2, -3 })
    assert_values(cell.where(cond, a, b), { { 1, -2, 3 }, { -1, -2, 6 } }, "float32")
    local c1 = cell.tensor({ { true }, { false } })
    assert_values(cell.where(c1, a, b), { { 1, 2, 3 }, { -1, -2, -3 } })
  end)

  it("where takes numbers on either side", function()
    local cond = cell.tensor({ true, false, true })
    local a = cell.tensor({ 1, 2, 3 }, cell.int32)
    local r = cell.where(cond, a, 0)
    assert_values(r, { 1, 0, 3 }, "int32")
    assert_values(cell.where(cond, 9, a), { 9, 2, 9 }, "int32")
    assert_values(cell.where(cond, a, 0.5), { 1, 0.5, 3 }, "float32")
    assert_values(cell.where(cond, 1, -1), { 1, -1, 1 })
    assert_values(cell.where(cond, cell.tensor({ 1, 2, 3 }, cell.float64), a), { 1, 2, 3 }, "float64")
  end)

  it("masked_fill", function()
    local a = cell.tensor({ { 1, 2, 3 }, { 4, 5, 6 } })
    assert_values(a:masked_fill(a:gt(3), 0), { { 1, 2, 3 }, { 0, 0, 0 } }, "float32")
    assert_values(a:masked_fill(cell.tensor({ true, false, true }), -1), { { -1, 2, -1 }, { -1, 5, -1 } })
    local i = cell.tensor({ 1, 2, 3 }, cell.int64)
    assert_values(i:masked_fill(cell.tensor({ false, true, false }), 7), { 1, 7, 3 }, "int64")
    assert_values(a, { { 1, 2, 3 }, { 4, 5, 6 } }) -- not in place
  end)

  it("clamp with min, max, or both", function()
    local a = cell.tensor({ -3, -1, 0, 2, 5 })
    assert_values(a:clamp(-1, 2), { -1, -1, 0, 2, 2 }, "float32")
    assert_values(a:clamp(0), { 0, 0, 0, 2, 5 })
    assert_values(a:clamp(nil, 1), { -3, -1, 0, 1, 1 })
    assert_values(a:clamp(-0.5, 0.5), { -0.5, -0.5, 0, 0.5, 0.5 })
    local i = cell.tensor({ -3, 0, 9 }, cell.int32)
    assert_values(i:clamp(-1, 4), { -1, 0, 4 }, "int32")
    assert_values(cell.tensor({ { 1, 9 }, { 5, -5 } }, cell.float64):clamp(0, 6), { { 1, 6 }, { 5, 0 } }, "float64")
  end)

  it("clamp takes {min =, max =}", function()
    local a = cell.tensor({ -3, -1, 0, 2, 5 })
    assert_values(a:clamp { min = -1, max = 2 }, { -1, -1, 0, 2, 2 })
    assert_values(a:clamp { max = 1 }, { -3, -1, 0, 1, 1 })
    assert_values(cell.ops.clamp(a, { min = 0 }), { 0, 0, 0, 2, 5 })
    assert.are.equal("TypeError: clamp() got an unexpected keyword argument 'lo'",
      H.caller_error("ops_spec%.lua", function() a:clamp { lo = 1 } end))
  end)
end)

-- --- reductions --------------------------------------------------------------------

describe("reductions", function()
  local R = FX.reduce
  local inputs = {
    { "contiguous", function(dt) return cell.tensor(FX.m, cell[dt]) end },
    { "transposed view", function(dt) return cell.tensor(FX.mt, cell[dt]):transpose(1, 2) end },
  }
  local tols = { float32 = 2e-5, float64 = 1e-12 }

  -- {label, function(t) return result end, expected}
  local cases = {
    { "sum()", function(t) return t:sum() end, R.sum },
    { "sum(1)", function(t) return t:sum(1) end, R.sum_d1 },
    { "sum(2)", function(t) return t:sum(2) end, R.sum_d2 },
    { "sum(-1)", function(t) return t:sum(-1) end, R.sum_d2 },
    { "sum(-2)", function(t) return t:sum(-2) end, R.sum_d1 },
    { "sum(2, true)", function(t) return t:sum(2, true) end, R.sum_d2_keep },
    { "sum{dim=2, keepdim=true}", function(t) return t:sum { dim = 2, keepdim = true } end, R.sum_d2_keep },
    { "sum({1, 2})", function(t) return t:sum({ 1, 2 }) end, R.sum },
    { "sum({-1, 1})", function(t) return t:sum({ -1, 1 }) end, R.sum },
    { "mean()", function(t) return t:mean() end, R.mean },
    { "mean(1)", function(t) return t:mean(1) end, R.mean_d1 },
    { "mean(-1)", function(t) return t:mean(-1) end, R.mean_d2 },
    { "prod()", function(t) return t:prod() end, R.prod },
    { "prod(1)", function(t) return t:prod(1) end, R.prod_d1 },
    { "prod(2)", function(t) return t:prod(2) end, R.prod_d2 },
    { "var() has ddof 0", function(t) return t:var() end, R.var0 },
    { "var(1)", function(t) return t:var(1) end, R.var0_d1 },
    { "var(-1)", function(t) return t:var(-1) end, R.var0_d2 },
    { "var(2, true)", function(t) return t:var(2, true) end, R.var0_d2_keep },
    { "var{ddof=1}", function(t) return t:var { ddof = 1 } end, R.var1 },
    { "var{dim=1, ddof=1}", function(t) return t:var { dim = 1, ddof = 1 } end, R.var1_d1 },
    { "var(2, {ddof=1, keepdim=true})", function(t) return t:var(2, { ddof = 1, keepdim = true }) end, R.var1_d2_keep },
    { "var(2, 1) (MindSpore's positional ddof)", function(t) return t:var(2, 1) end, R.var1_d2 },
    { "var(2, 1, true)", function(t) return t:var(2, 1, true) end, R.var1_d2_keep },
    { "std()", function(t) return t:std() end, R.std0 },
    { "std(1)", function(t) return t:std(1) end, R.std0_d1 },
    { "std(2)", function(t) return t:std(2) end, R.std0_d2 },
    { "std{ddof=1}", function(t) return t:std { ddof = 1 } end, R.std1 },
    { "std{dim=-1, ddof=1}", function(t) return t:std { dim = -1, ddof = 1 } end, R.std1_d2 },
    { "std(1, 1) (positional ddof)", function(t) return t:std(1, 1) end, R.std1_d1 },
    { "norm()", function(t) return t:norm() end, R.norm2 },
    { "norm(2, 2)", function(t) return t:norm(2, 2) end, R.norm2_d2 },
    { "norm(2, 1, true)", function(t) return t:norm(2, 1, true) end, R.norm2_d1_keep },
    { "norm{p=2, dim=1, keepdim=true}", function(t) return t:norm { p = 2, dim = 1, keepdim = true } end, R.norm2_d1_keep },
    { "norm(1)", function(t) return t:norm(1) end, R.norm1 },
    { "norm(1, 1)", function(t) return t:norm(1, 1) end, R.norm1_d1 },
    { "norm(3)", function(t) return t:norm(3) end, R.norm3 },
    { "norm(3, -1)", function(t) return t:norm(3, -1) end, R.norm3_d2 },
    { "norm(inf)", function(t) return t:norm(math.huge) end, R.norminf },
    { "norm{p=inf, dim=2}", function(t) return t:norm { p = math.huge, dim = 2 } end, R.norminf_d2 },
    { "cumsum(1)", function(t) return t:cumsum(1) end, R.cumsum_d1 },
    { "cumsum(2)", function(t) return t:cumsum(2) end, R.cumsum_d2 },
    { "cumsum(-1)", function(t) return t:cumsum(-1) end, R.cumsum_d2 },
    { "max()", function(t) return t:max() end, R.max },
    { "min()", function(t) return t:min() end, R.min },
    { "max(1) values", function(t) return (t:max(1)) end, R.max_d1 },
    { "max(1) indices", function(t) return select(2, t:max(1)) end, R.max_d1_idx, "int64" },
    { "max(2) values", function(t) return (t:max(2)) end, R.max_d2 },
    { "max(-1) indices", function(t) return select(2, t:max(-1)) end, R.max_d2_idx, "int64" },
    { "min(1) values", function(t) return (t:min(1)) end, R.min_d1 },
    { "min(1) indices", function(t) return select(2, t:min(1)) end, R.min_d1_idx, "int64" },
    { "min(2) indices", function(t) return select(2, t:min(2)) end, R.min_d2_idx, "int64" },
    { "argmax()", function(t) return t:argmax() end, R.argmax, "int64" },
    { "argmin()", function(t) return t:argmin() end, R.argmin, "int64" },
    { "argmax(1)", function(t) return t:argmax(1) end, R.argmax_d1, "int64" },
    { "argmax(-1)", function(t) return t:argmax(-1) end, R.argmax_d2, "int64" },
    { "argmin(2)", function(t) return t:argmin(2) end, R.argmin_d2, "int64" },
  }

  for _, input in ipairs(inputs) do
    for _, dt in ipairs({ "float32", "float64" }) do
      for _, c in ipairs(cases) do
        local label = ("%s on a %s %s"):format(c[1], dt, input[1])
        it(label, function()
          local t = input[2](dt)
          local r = c[2](t)
          local want_dt = c[4] or dt
          assert.are.equal(want_dt, r.dtype.name, label .. " dtype")
          assert_close(r, c[3], c[4] and 0 or tols[dt], label)
        end)
      end
    end
  end

  it("max and min along a dimension return values and 1-based indices", function()
    local t = cell.tensor({ { 3, 9, 1 }, { 7, 2, 8 } })
    local v, i = t:max(2)
    assert_values(v, { 9, 8 }, "float32")
    assert_values(i, { 2, 3 }, "int64")
    v, i = t:min(1)
    assert_values(v, { 3, 2, 1 })
    assert_values(i, { 1, 2, 1 }, "int64")
    v, i = t:max(1, true)
    assert_values(v, { { 7, 9, 8 } })
    assert_values(i, { { 2, 1, 2 } })
    v, i = t:max { dim = -1, keepdim = true }
    assert_values(v, { { 9 }, { 8 } })
    assert_values(i, { { 2 }, { 3 } })
    -- ties: the first position
    v, i = cell.tensor({ 5, 1, 5, 5 }):max(1)
    assert_values(v, 5)
    assert_values(i, 1)
    assert_values(cell.tensor({ 2, 0, 0, 2 }):argmin(), 2, "int64")
    assert_values(cell.tensor({ { 1, 4 }, { 4, 1 } }):argmax(), 2, "int64")
    assert_values(cell.tensor({ { 1, 4 }, { 4, 1 } }):argmax(1, true), { { 2, 1 } }, "int64")
  end)

  it("reduces integer and bool tensors with MindSpore's result dtypes", function()
    local i = cell.tensor({ { 1, 2, 3 }, { 4, 5, 6 } }, cell.int32)
    assert_values(i:sum(), 21, "int64")
    assert_values(i:sum(1), { 5, 7, 9 }, "int64")
    assert_values(i:prod(2), { 6, 120 }, "int64")
    assert_values(i:mean(), 3.5, "float32")
    assert_values(i:mean(2), { 2, 5 }, "float32")
    assert_values(i:max(), 6, "int32")
    local v, idx = i:min(2)
    assert_values(v, { 1, 4 }, "int32")
    assert_values(idx, { 1, 1 }, "int64")
    assert_values(i:argmax(2), { 3, 3 }, "int64")
    assert_close(i:var(), 35 / 12)
    assert.are.equal("float32", i:var().dtype.name)
    assert_values(i:cumsum(2), { { 1, 3, 6 }, { 4, 9, 15 } }, "int64")
    assert_values(cell.tensor({ 100, 100, 100 }, cell.int8):sum(), 300, "int64")
    local b = cell.tensor({ { true, false, true }, { true, true, true } })
    assert_values(b:sum(), 5, "int64")
    assert_values(b:all(), false, "bool")
    assert_values(b:all(2), { false, true }, "bool")
    assert_values(b:any(1), { true, true, true }, "bool")
    assert_values(b:all(1, true), { { true, false, true } }, "bool")
    assert_values(cell.tensor({ 0, 0.5 }):any(), true, "bool")
    assert_values(cell.tensor({ 0, 0.5 }):all(), false, "bool")
    assert_values(cell.tensor({ 1.5, 2 }, cell.float16):sum(), 3.5, "float16")
  end)

  it("sum and mean of an empty dimension", function()
    local e = cell.zeros({ 0, 3 })
    assert_values(e:sum(1), { 0, 0, 0 })
    assert_values(e:sum(), 0)
    assert_values(e:prod(1), { 1, 1, 1 })
  end)

  it("var and std by hand", function()
    local t = cell.tensor({ 1, 2, 3, 4 })
    assert_close(t:var(), 1.25)
    assert_close(t:var { ddof = 1 }, 5 / 3)
    assert_close(t:std(), math.sqrt(1.25))
    assert_close(t:std { ddof = 1 }, math.sqrt(5 / 3))
    assert_close(cell.tensor({ { 1, 3 }, { 5, 11 } }):var(1), { 4, 16 })
    assert_close(cell.tensor({ 7 }):var(), 0)
  end)

  it("reduction options: MindSpore's keepdims and keep_dims, PyTorch's correction and unbiased; "
    .. "an unknown option is an error, not ignored", function()
    local m = cell.tensor({ { 1, 5, 3 }, { 4, 2, 6 } })
    assert_shape(m:argmax { axis = 2, keepdims = true }, { 2, 1 })
    assert_shape(m:sum { axis = 2, keepdims = true }, { 2, 1 })
    assert_shape(m:mean { axis = 1, keep_dims = true }, { 1, 3 })
    assert_shape((m:max { axis = 2, keepdims = true }), { 2, 1 })
    assert_shape(m:var(2, { keepdims = true }), { 2, 1 })
    local t = cell.tensor({ 1, 2, 3, 4 })
    assert_close(t:var { correction = 1 }, 5 / 3)
    assert_close(t:var { unbiased = true }, 5 / 3)
    assert_close(t:var { unbiased = false }, 1.25)
    assert_close(t:std { correction = 0 }, math.sqrt(1.25))
    assert_values(m:sum({}), 21)
    local function err(fn) return H.caller_error("ops_spec%.lua", fn) end
    local known = "(the options are dim or axis, keepdim, keep_dims or keepdims, dtype, and for var and std ddof, correction "
      .. "or unbiased, for norm p or ord)"
    assert.are.equal("TypeError: sum: unexpected option 'dims' " .. known .. " (bad argument #1)",
      err(function() m:sum { dims = 2 } end))
    assert.are.equal("TypeError: mean: unexpected option 'keep' " .. known .. " (bad argument #2)",
      err(function() m:mean(2, { keep = true }) end))
    assert.are.equal("TypeError: sum: keepdims must be a boolean, got number (bad argument #1)",
      err(function() m:sum { dim = 2, keepdims = 1 } end))
    assert.are.equal("TypeError: var: unbiased must be a boolean, got number (bad argument #1)",
      err(function() t:var { unbiased = 1 } end))
  end)

  it("norm and cumsum by hand", function()
    assert_close(cell.tensor({ 3, -4 }):norm(), 5)
    assert_close(cell.tensor({ 3, -4 }):norm(1), 7)
    assert_close(cell.tensor({ 3, -4 }):norm(math.huge), 4)
    assert_close(cell.tensor({ { 3, 4 }, { 6, 8 } }):norm(2, 2), { 5, 10 })
    assert_values(cell.tensor({ 1, 2, 3, 4 }):cumsum(1), { 1, 3, 6, 10 })
    assert_values(cell.tensor({ { 1, 2 }, { 3, 4 } }):cumsum(1), { { 1, 2 }, { 4, 6 } })
  end)

  it("norm of negative order: (sum |x|^p)^(1/p), 0 when an element is 0, with PyTorch's gradients", function()
    local unpack = table.unpack or unpack
    local function norm_and_grad(x, ...)
      local args = { n = select("#", ...), ... }
      local v = x:norm(unpack(args, 1, args.n))
      local g = cell.grad(function(a) return a:norm(unpack(args, 1, args.n)):sum() end)(x)
      return v, g
    end
    -- torch.norm(torch.tensor([1., 2, 4]), -1) and its backward (torch 1.13)
    local v, g = norm_and_grad(cell.tensor({ 1, 2, 4 }), -1)
    assert_close(v, 0.5714285969734192)
    assert_close(g, { 0.3265306353569031, 0.08163265883922577, 0.020408164709806442 })
    -- torch.norm(torch.tensor([1., -2, 4]), -2)
    v, g = norm_and_grad(cell.tensor({ 1, -2, 4 }), -2)
    assert_close(v, 0.8728715777397156)
    assert_close(g, { 0.6650450229644775, -0.08313062787055969, 0.010391328483819962 })
    -- torch.norm(torch.tensor([0., 2, 4]), -1): 0, and a zero gradient
    v, g = norm_and_grad(cell.tensor({ 0, 2, 4 }), -1)
    assert_values(v, 0)
    assert_values(g, { 0, 0, 0 })
    -- twice differentiable: grad of grad(norm(x, -1)).sum() at [1, 2, 4] (torch.autograd.grad, create_graph)
    local gg = cell.grad(function(a) return cell.grad(function(b) return b:norm(-1) end)(a):sum() end)
    assert_close(gg(cell.tensor({ 1, 2, 4 })), { -0.16326528787612915, 0.04081633687019348, 0.02040816657245159 })
    -- torch.norm(torch.tensor([[1., 2], [4, 0]]), -2, dim=1)
    v, g = norm_and_grad(cell.tensor({ { 1, 2 }, { 4, 0 } }), -2, 2)
    assert_close(v, { 0.8944271802902222, 0 })
    assert_close(g, { { 0.7155417203903198, 0.08944271504878998 }, { 0, 0 } })
    -- torch.norm(torch.tensor([[1., 2], [4, 3]]), -0.5, dim=0, keepdim=True)
    v, g = norm_and_grad(cell.tensor({ { 1, 2 }, { 4, 3 } }), { p = -0.5, dim = 1, keepdim = true })
    assert_close(v, { { 0.4444444477558136, 0.606123149394989 } })
    assert_close(g, { { 0.29629629850387573, 0.16683851182460785 }, { 0.03703703731298447, 0.09081538021564484 } })
    -- torch.linalg.vector_norm(torch.zeros(0), -1): "cannot compute the -1 norm on an empty tensor"
    H.expect_error(function() return cell.zeros({ 0, 3 }):norm(-1, 1) end, "ValueError",
      "norm: cannot compute the -1 norm over zero elements (input of shape [0, 3]): the operation has no identity")
    assert_values(cell.zeros({ 0, 3 }):norm(-1, 2), {}) -- no row: nothing to reduce
  end)

  it("norm 'fro' (Frobenius): the 2-norm over all elements or the given dims, with PyTorch's gradients", function()
    local x = cell.tensor({ { 1, -2, 3 }, { 4, 5, -6 } })
    -- torch.norm(x, 'fro') and torch.norm(x, 'fro', dim=1) with their backward (torch 1.13)
    assert_close(x:norm("fro"), 9.539392471313477)
    assert_close(cell.ops.norm(x, "fro"), 9.539392471313477)
    assert_close(x:norm { p = "fro" }, 9.539392471313477)
    assert_close(x:norm { ord = "fro" }, 9.539392471313477)
    assert_close(cell.grad(function(a) return a:norm("fro") end)(x),
      { { 0.10482847690582275, -0.2096569538116455, 0.31448543071746826 },
        { 0.419313907623291, 0.5241423845291138, -0.6289708614349365 } })
    assert_close(x:norm("fro", 2), { 3.7416574954986572, 8.774964332580566 })
    assert_close(cell.grad(function(a) return a:norm("fro", 2):sum() end)(x),
      { { 0.26726123690605164, -0.5345224738121033, 0.8017836809158325 },
        { 0.4558423161506653, 0.5698028802871704, -0.6837634444236755 } })
    -- torch.norm(arange(1., 9).reshape(2, 2, 2), 'fro', dim=(0, 2))
    local y = cell.arange(1, 9):astype(cell.float32):reshape({ 2, 2, 2 })
    assert_close(y:norm("fro", { 1, 3 }), { 8.124038696289062, 11.747340202331543 })
    assert_close(cell.grad(function(a) return a:norm("fro", { 1, 3 }):sum() end)(y),
      { { { 0.12309148907661438, 0.24618297815322876 }, { 0.2553769648075104, 0.34050261974334717 } },
        { { 0.6154574155807495, 0.7385489344596863 }, { 0.5958795547485352, 0.6810052394866943 } } })
    local function err(fn) return H.caller_error("ops_spec%.lua", fn) end
    assert.are.equal("ValueError: norm: the only string order is 'fro', but got 'fra' (bad argument #1)",
      err(function() x:norm("fra") end))
    assert.are.equal("NotImplementedError: norm: the nuclear norm ('nuc') is not supported; p is a number or 'fro' "
      .. "(bad argument #1)", err(function() x:norm("nuc") end))
    assert.are.equal("TypeError: norm: the order p must be a number or 'fro', got boolean (bad argument #1)",
      err(function() x:norm { p = true } end))
  end)

  it("cumsum without a dim runs over the flattened tensor (MindSpore's Tensor.cumsum(axis=None))", function()
    local x = cell.tensor({ { 1, 2, 3 }, { 4, 5, 6 } })
    -- torch.tensor([[1., 2, 3], [4, 5, 6]]).flatten().cumsum(0) (torch 1.13)
    assert_values(x:cumsum(), { 1, 3, 6, 10, 15, 21 })
    assert_values(cell.ops.cumsum(x), { 1, 3, 6, 10, 15, 21 })
    assert_values(x:cumsum { dtype = cell.float64 }, { 1, 3, 6, 10, 15, 21 }, "float64")
    assert_values(x:cumsum(nil, cell.int32), { 1, 3, 6, 10, 15, 21 }, "int32")
    assert_values(cell.tensor(3):cumsum(), { 3 })
    assert_values(x:transpose(1, 2):cumsum(), { 1, 5, 7, 12, 15, 21 }) -- in the view's order
    -- the gradient of (x.flatten().cumsum(0) * [1..6]).sum(), torch 1.13
    local w = cell.tensor({ 1, 2, 3, 4, 5, 6 })
    assert_values(cell.grad(function(a) return (a:cumsum() * w):sum() end)(x), { { 21, 20, 18 }, { 15, 11, 6 } })
  end)

  it("var and std take MindSpore's boolean ddof (true is 1, false is 0)", function()
    local x = cell.tensor({ { 1, 2, 3 }, { 4, 5, 7 } })
    -- torch.var(x, unbiased=True), torch.var(x, 1, unbiased=True), torch.std(x, unbiased=True),
    -- torch.var(x, unbiased=False), torch.var(x, 1, True, True) (torch 1.13)
    assert_close(x:var { ddof = true }, 4.666666507720947)
    assert_close(cell.ops.var(x, { dim = 2, ddof = true }), { 1, 2.3333332538604736 })
    assert_close(x:std { ddof = true }, 2.1602468490600586)
    assert_close(x:var { ddof = false }, 3.8888888359069824)
    assert_close(x:var(2, true, true), { { 1 }, { 2.3333332538604736 } }) -- var(axis, ddof, keepdims)
    assert_shape(x:var(2, true), { 2, 1 }) -- one boolean after the dims stays keepdim
    local function err(fn) return H.caller_error("ops_spec%.lua", fn) end
    assert.are.equal("TypeError: var: ddof must be an integer or a boolean, but got string (bad argument #1)",
      err(function() x:var { ddof = "1" } end))
    assert.are.equal("TypeError: var: correction must be an integer, but got boolean (bad argument #1)",
      err(function() x:var { correction = true } end))
  end)

  describe("on a 3-D tensor", function()
    local R3 = FX.reduce3
    local cases3 = {
      { "sum({1, 3})", function(t) return t:sum({ 1, 3 }) end, R3.sum_d13 },
      { "sum({1, 3}, true)", function(t) return t:sum({ 1, 3 }, true) end, R3.sum_d13_keep },
      { "sum{dim={-3, -1}, keepdim=true}", function(t) return t:sum { dim = { -3, -1 }, keepdim = true } end, R3.sum_d13_keep },
      { "mean(-1)", function(t) return t:mean(-1) end, R3.mean_dm1 },
      { "var({1, 2})", function(t) return t:var({ 1, 2 }) end, R3.var0_d12 },
      { "std{dim=-1, ddof=1}", function(t) return t:std { dim = -1, ddof = 1 } end, R3.std1_dm1 },
      { "norm(2, -2)", function(t) return t:norm(2, -2) end, R3.norm2_dm2 },
      { "cumsum(2)", function(t) return t:cumsum(2) end, R3.cumsum_d2 },
      { "cumsum(-1)", function(t) return t:cumsum(-1) end, R3.cumsum_dm1 },
      { "prod(3)", function(t) return t:prod(3) end, R3.prod_d3 },
      { "max(2) values", function(t) return (t:max(2)) end, R3.max_d2 },
      { "max(2) indices", function(t) return select(2, t:max(2)) end, R3.max_d2_idx, "int64" },
      { "argmax(-1)", function(t) return t:argmax(-1) end, R3.argmax_dm1, "int64" },
      { "argmin(1, true)", function(t) return t:argmin(1, true) end, R3.argmin_d1_keep, "int64" },
    }
    local function permuted(dt)
      -- the same values, as a non-contiguous view: permute a contiguous
      -- [4, 2, 3] copy back to [2, 3, 4]
      local c = cell.tensor(FX.t3, cell[dt]):permute(3, 1, 2):contiguous()
      return c:permute(2, 3, 1)
    end
    for _, dt in ipairs({ "float32", "float64" }) do
      for _, c in ipairs(cases3) do
        it(("%s %s"):format(c[1], dt), function()
          local want_dt = c[4] or dt
          local tol = c[4] and 0 or (dt == "float32" and 2e-5 or 1e-12)
          local r = c[2](cell.tensor(FX.t3, cell[dt]))
          assert.are.equal(want_dt, r.dtype.name)
          assert_close(r, c[3], tol, c[1])
          local p = permuted(dt)
          assert.is_false(p:is_contiguous())
          assert_close(c[2](p), c[3], tol, c[1] .. " (permuted view)")
        end)
      end
    end
  end)

  describe("on a long vector", function()
    local L = FX.long
    local data = {}
    for k = 1, L.n do data[k] = ((k - 1) * 7919 % 1009 - 504) / 256 end
    for _, dt in ipairs({ "float32", "float64" }) do
      it("sum, mean, var, norm, max, argmax, cumsum " .. dt, function()
        local tol = dt == "float32" and 1e-5 or 1e-10
        local t = cell.tensor(data, cell[dt])
        assert_close(t:sum(), L.sum, tol * 100, "sum")
        assert_close(t:mean(), L.mean, tol, "mean")
        assert_close(t:var(), L.var0, tol, "var")
        assert_close(t:norm(), L.norm2, tol, "norm")
        assert_close(t:max(), L.max, 0, "max")
        assert_values(t:argmax(), L.argmax, "int64", "argmax")
        local cs = t:cumsum(1)
        assert_close(cs[L.n], L.cumsum_last, tol * 100, "cumsum")
        -- the same through a strided view of a 2 x n tensor
        local two = cell.stack({ t, t * 0 }, 2) -- [n, 2]
        local col = two:select(2, 1)
        assert.is_false(col:is_contiguous())
        assert_close(col:sum(), L.sum, tol * 100, "strided sum")
        assert_values(col:argmax(), L.argmax, "int64", "strided argmax")
      end)
    end
  end)
end)

-- --- linear algebra -----------------------------------------------------------------

describe("linear algebra", function()
  local tols = { float32 = 1e-5, float64 = 1e-12 }
  for _, dt in ipairs({ "float32", "float64" }) do
    local D = cell[dt]
    local tol = tols[dt]
    describe(dt, function()
      it("matmul 5x7 by 7x3", function()
        local a, b = cell.tensor(FX.matmul.a, D), cell.tensor(FX.matmul.b, D)
        local r = a:matmul(b)
        assert.are.equal(dt, r.dtype.name)
        assert_close(r, FX.matmul.out, tol)
        assert_close(a:mm(b), FX.matmul.out, tol)
        assert_close(cell.ops.matmul(a, b), FX.matmul.out, tol)
      end)

      it("matmul of transposed views", function()
        local at = cell.tensor(FX.matmul_t.at, D):transpose(1, 2)
        local bt = cell.tensor(FX.matmul_t.bt, D):transpose(1, 2)
        local a, b = cell.tensor(FX.matmul.a, D), cell.tensor(FX.matmul.b, D)
        assert_close(at:matmul(bt), FX.matmul_t.out, tol)
        assert_close(at:matmul(b), FX.matmul_t.out, tol)
        assert_close(a:matmul(bt), FX.matmul_t.out, tol)
        assert_close(at:mm(bt), FX.matmul_t.out, tol)
      end)

      it("matmul 33x40 by 40x20", function()
        local a, b = cell.tensor(FX.matmul_big.a, D), cell.tensor(FX.matmul_big.b, D)
        assert_close(a:matmul(b), FX.matmul_big.out, tol * 10)
        local at = cell.tensor(H.transpose2(FX.matmul_big.a), D):transpose(1, 2)
        assert_close(at:matmul(b), FX.matmul_big.out, tol * 10)
      end)

      it("batched matmul broadcasts batch dims: [2,1,3,4] @ [3,4,2]", function()
        local a, b = cell.tensor(FX.matmul_batched.a, D), cell.tensor(FX.matmul_batched.b, D)
        local r = a:matmul(b)
        assert_shape(r, { 2, 3, 3, 2 })
        assert_close(r, FX.matmul_batched.out, tol)
      end)

      it("matmul [2,3,4] @ [4,5] and bmm [2,3,4] @ [2,4,5]", function()
        local p = cell.tensor(FX.matmul_3d_2d.a, D)
        assert_close(p:matmul(cell.tensor(FX.matmul_3d_2d.b, D)), FX.matmul_3d_2d.out, tol)
        local q = cell.tensor(FX.bmm.b, D)
        assert_close(p:bmm(q), FX.bmm.out, tol)
        assert_close(p:matmul(q), FX.bmm.out, tol)
      end)

      it("1-D operands", function()
        local v = cell.tensor(FX.matmul_vec_mat.a, D)
        local r = v:matmul(cell.tensor(FX.matmul_vec_mat.b, D))
        assert_shape(r, { 3 })
        assert_close(r, FX.matmul_vec_mat.out, tol)
        r = cell.tensor(FX.matmul_mat_vec.a, D):matmul(cell.tensor(FX.matmul_mat_vec.b, D))
        assert_shape(r, { 5 })
        assert_close(r, FX.matmul_mat_vec.out, tol)
        r = cell.tensor(FX.matmul_vec_batched.a, D):matmul(cell.tensor(FX.matmul_vec_batched.b, D))
        assert_shape(r, { 3, 4 })
        assert_close(r, FX.matmul_vec_batched.out, tol)
        local d = cell.tensor(FX.dot.a, D):dot(cell.tensor(FX.dot.b, D))
        assert_shape(d, {})
        assert_close(d, FX.dot.out, tol)
        local m = cell.tensor(FX.dot.a, D):matmul(cell.tensor(FX.dot.b, D))
        assert_shape(m, {})
        assert_close(m, FX.dot.out, tol)
      end)
    end)
  end

  it("by hand, with integer and mixed dtypes", function()
    local a = cell.tensor({ { 1, 2 }, { 3, 4 } }, cell.int32)
    local b = cell.tensor({ { 5, 6 }, { 7, 8 } }, cell.int32)
    assert_values(a:matmul(b), { { 19, 22 }, { 43, 50 } }, "int32")
    assert_values(a:matmul(cell.tensor({ { 1 }, { 0.5 } })), { { 2 }, { 5 } }, "float32")
    assert_values(cell.tensor({ 1, 2, 3 }, cell.int64):dot(cell.tensor({ 4, 5, 6 }, cell.int64)), 32, "int64")
    assert_values(cell.tensor({ { 1, 2, 3 } }):matmul(cell.tensor({ { 1 }, { 1 }, { 1 } })), { { 6 } })
    assert_values(cell.zeros({ 2, 0 }):matmul(cell.zeros({ 0, 3 })), { { 0, 0, 0 }, { 0, 0, 0 } })
  end)
end)

-- --- shape ops -------------------------------------------------------------------------

describe("shape ops", function()
  local a = cell.tensor({ { 1, 2 }, { 3, 4 } })
  local b = cell.tensor({ { 5, 6 }, { 7, 8 } })

  it("cat", function()
    assert_values(cell.cat({ a, b }), { { 1, 2 }, { 3, 4 }, { 5, 6 }, { 7, 8 } }, "float32")
    assert_values(cell.cat({ a, b }, 1), { { 1, 2 }, { 3, 4 }, { 5, 6 }, { 7, 8 } })
    assert_values(cell.cat({ a, b }, 2), { { 1, 2, 5, 6 }, { 3, 4, 7, 8 } })
    assert_values(cell.cat({ a, b }, -1), { { 1, 2, 5, 6 }, { 3, 4, 7, 8 } })
    assert_values(cell.cat({ a, cell.tensor({ { 9, 10 } }), b }, 1), { { 1, 2 }, { 3, 4 }, { 9, 10 }, { 5, 6 }, { 7, 8 } })
    assert_values(cell.cat({ a:transpose(1, 2), b }, 2), { { 1, 3, 5, 6 }, { 2, 4, 7, 8 } })
    assert_values(cell.cat({ cell.tensor({ 1, 2 }, cell.int64), cell.tensor({ 3 }, cell.int64) }), { 1, 2, 3 }, "int64")
    assert_values(cell.ops.concat({ a, b }, 2), { { 1, 2, 5, 6 }, { 3, 4, 7, 8 } })
    assert_values(cell.cat({ a }), a:totable())
  end)

  it("cell.ops has MindSpore's other names of the same functions, and the creation functions", function()
    local x, y = cell.tensor({ 1, 2, 3 }), cell.tensor({ 2, 2, 2 })
    assert_values(cell.ops.equal(x, y), { false, true, false }, "bool")
    assert_values(cell.ops.not_equal(x, y), { true, false, true }, "bool")
    assert_values(cell.ops.less(x, y), { true, false, false }, "bool")
    assert_values(cell.ops.less_equal(x, y), { true, true, false }, "bool")
    assert_values(cell.ops.greater(x, y), { false, false, true }, "bool")
    assert_values(cell.ops.greater_equal(x, y), { false, true, true }, "bool")
    assert_values(cell.ops.cast(cell.tensor({ 1.7, -1.7 }), cell.int32), { 1, -1 }, "int32")
    assert_shape(cell.ops.swapaxes(cell.ones({ 2, 3, 4 }), 1, 3), { 4, 3, 2 })
    assert_shape(cell.ops.swapdims(cell.ones({ 2, 3 }), -1, 1), { 3, 2 })
    assert_values(cell.ops.clip(cell.tensor({ -2, 0.5, 3 }), -1, 1), { -1, 0.5, 1 })
    assert_values(cell.ops.floor_div(cell.tensor({ -7, 7 }), 2), { -4, 3 })
    assert_values(cell.ops.floor_mod(cell.tensor({ -7, 7 }), 2), { 1, 1 })
    assert_values(cell.ops.zeros_like(x), { 0, 0, 0 })
    assert_values(cell.ops.ones_like(x), { 1, 1, 1 })
    assert_values(cell.ops.full_like(x, 7), { 7, 7, 7 })
    assert_values(cell.ops.linspace(0, 1, 3), { 0, 0.5, 1 })
    assert_shape(cell.ops.rand({ 2, 3 }), { 2, 3 })
    assert_shape(cell.ops.randn({ 4 }), { 4 })
    assert_shape(cell.ops.randint(0, 5, { 3 }), { 3 })
    assert_shape(cell.ops.empty({ 2 }), { 2 })
  end)

  it("stack", function()
    local s = cell.stack({ a, b })
    assert_shape(s, { 2, 2, 2 })
    assert_values(s, { { { 1, 2 }, { 3, 4 } }, { { 5, 6 }, { 7, 8 } } })
    assert_values(cell.stack({ a, b }, 2), { { { 1, 2 }, { 5, 6 } }, { { 3, 4 }, { 7, 8 } } })
    assert_values(cell.stack({ a, b }, 3), { { { 1, 5 }, { 2, 6 } }, { { 3, 7 }, { 4, 8 } } })
    assert_values(cell.stack({ a, b }, -1), { { { 1, 5 }, { 2, 6 } }, { { 3, 7 }, { 4, 8 } } })
    assert_values(cell.stack({ cell.tensor({ 1, 2 }), cell.tensor({ 3, 4 }), cell.tensor({ 5, 6 }) }), { { 1, 2 }, { 3, 4 }, { 5, 6 } })
  end)

  it("split by size or sections, and chunk", function()
    local t = cell.arange(10):reshape({ 5, 2 })
    local parts = t:split(2)
    assert.are.equal(3, #parts)
    assert_values(parts[1], { { 0, 1 }, { 2, 3 } })
    assert_values(parts[2], { { 4, 5 }, { 6, 7 } })
    assert_values(parts[3], { { 8, 9 } })
    parts = t:split({ 1, 4 }, 1)
    assert.are.equal(2, #parts)
    assert_values(parts[1], { { 0, 1 } })
    assert_shape(parts[2], { 4, 2 })
    parts = t:split(1, 2)
    assert.are.equal(2, #parts)
    assert_values(parts[2], { { 1 }, { 3 }, { 5 }, { 7 }, { 9 } })
    parts = t:split(1, -1)
    assert.are.equal(2, #parts)
    local c = cell.arange(6):chunk(3)
    assert.are.equal(3, #c)
    assert_values(c[3], { 4, 5 })
    c = cell.arange(5):chunk(2)
    assert.are.equal(2, #c)
    assert_values(c[1], { 0, 1, 2 })
    assert_values(c[2], { 3, 4 })
    c = t:chunk(2, 2)
    assert_values(c[1], { { 0 }, { 2 }, { 4 }, { 6 }, { 8 } })
    -- the pieces are views
    parts = t:split(2)
    parts[1]:fill_(-1)
    assert_values(t[1], { -1, -1 })
  end)

  it("gather with 1-based indices", function()
    local t = cell.tensor({ { 1, 2 }, { 3, 4 } })
    assert_values(t:gather(2, cell.tensor({ { 1, 1 }, { 2, 1 } }, cell.int64)), { { 1, 1 }, { 4, 3 } }, "float32")
    assert_values(t:gather(1, cell.tensor({ { 1, 2 }, { 2, 1 } }, cell.int64)), { { 1, 4 }, { 3, 2 } })
    assert_values(t:gather(-1, cell.tensor({ { 2 }, { 1 } }, cell.int32)), { { 2 }, { 3 } })
    local m = cell.arange(12):reshape({ 3, 4 })
    assert_values(m:gather(2, cell.tensor({ { 4, 1 }, { 2, 2 }, { 3, 4 } }, cell.int64)), { { 3, 0 }, { 5, 5 }, { 10, 11 } }, "int64")
    assert_values(m:gather(1, cell.tensor({ { 3, 1, 2, 3 } }, cell.int64)), { { 8, 1, 6, 11 } })
  end)

  it("scatter with 1-based indices, out of place", function()
    local src = cell.arange(1, 11):reshape({ 2, 5 }):float()
    local z = cell.zeros({ 3, 5 })
    local r = z:scatter(1, cell.tensor({ { 1, 2, 3, 1 } }, cell.int64), src)
    assert_values(r, { { 1, 0, 0, 4, 0 }, { 0, 2, 0, 0, 0 }, { 0, 0, 3, 0, 0 } }, "float32")
    assert_values(z, { { 0, 0, 0, 0, 0 }, { 0, 0, 0, 0, 0 }, { 0, 0, 0, 0, 0 } })
    local z2 = cell.zeros({ 2, 4 })
    assert_values(z2:scatter(2, cell.tensor({ { 2 }, { 4 } }, cell.int64), cell.tensor({ { 9 }, { 8 } })),
      { { 0, 9, 0, 0 }, { 0, 0, 0, 8 } })
    assert_values(z2:scatter(-1, cell.tensor({ { 1, 3 } }, cell.int32), cell.tensor({ { 5, 6 } })),
      { { 5, 0, 6, 0 }, { 0, 0, 0, 0 } })
  end)

  it("index_select with 1-based indices", function()
    local m = cell.arange(12):reshape({ 3, 4 })
    assert_values(m:index_select(1, cell.tensor({ 3, 1 }, cell.int64)), { { 8, 9, 10, 11 }, { 0, 1, 2, 3 } }, "int64")
    assert_values(m:index_select(2, cell.tensor({ 2, 2, 4 }, cell.int64)), { { 1, 1, 3 }, { 5, 5, 7 }, { 9, 9, 11 } })
    assert_values(m:index_select(-1, cell.tensor({ 1 }, cell.int32)), { { 0 }, { 4 }, { 8 } })
    assert_values(m:transpose(1, 2):index_select(1, cell.tensor({ 4 }, cell.int64)), { { 3, 7, 11 } })
  end)

  it("tile", function()
    local v = cell.tensor({ 1, 2, 3 })
    assert_values(v:tile({ 2 }), { 1, 2, 3, 1, 2, 3 })
    local m = cell.tensor({ { 1, 2 }, { 3, 4 } })
    assert_values(m:tile({ 2, 1 }), { { 1, 2 }, { 3, 4 }, { 1, 2 }, { 3, 4 } })
    assert_values(m:tile({ 1, 2 }), { { 1, 2, 1, 2 }, { 3, 4, 3, 4 } })
    assert_values(cell.tensor({ 1, 2 }):tile({ 2, 2 }), { { 1, 2, 1, 2 }, { 1, 2, 1, 2 } })
    assert_values(m:tile(2, 2), { { 1, 2, 1, 2 }, { 3, 4, 3, 4 }, { 1, 2, 1, 2 }, { 3, 4, 3, 4 } })
  end)

  it("repeat_interleave", function()
    assert_values(cell.tensor({ 1, 2, 3 }):repeat_interleave(2), { 1, 1, 2, 2, 3, 3 })
    local m = cell.tensor({ { 1, 2 }, { 3, 4 } })
    assert_values(m:repeat_interleave(2), { 1, 1, 2, 2, 3, 3, 4, 4 })
    assert_values(m:repeat_interleave(2, 1), { { 1, 2 }, { 1, 2 }, { 3, 4 }, { 3, 4 } })
    assert_values(m:repeat_interleave(3, 2), { { 1, 1, 1, 2, 2, 2 }, { 3, 3, 3, 4, 4, 4 } })
    assert_values(m:repeat_interleave(2, -1), { { 1, 1, 2, 2 }, { 3, 3, 4, 4 } })
  end)

  it("repeat_interleave with one count per element: a list or an integer Tensor (MindSpore's repeats)", function()
    local m = cell.tensor({ { 1, 2 }, { 3, 4 } })
    -- torch 1.13: m.repeat_interleave(torch.tensor([1, 2]), dim=1), (torch.tensor([2, 0]), dim=0),
    -- (torch.tensor([0, 1, 2, 3])) and (torch.tensor([2]), dim=0)
    assert_values(m:repeat_interleave({ 1, 2 }, 2), { { 1, 2, 2 }, { 3, 4, 4 } })
    assert_values(cell.ops.repeat_interleave(m, { 1, 2 }, 2), { { 1, 2, 2 }, { 3, 4, 4 } })
    assert_values(m:repeat_interleave({ 1, 2 }, { dim = 2 }), { { 1, 2, 2 }, { 3, 4, 4 } })
    assert_values(m:repeat_interleave(cell.tensor({ 2, 0 }, cell.int64), 1), { { 1, 2 }, { 1, 2 } })
    assert_values(m:repeat_interleave(cell.tensor({ 0, 1, 2, 3 }, cell.int32)), { 2, 3, 3, 4, 4, 4 })
    assert_values(m:repeat_interleave({ 2 }, 1), { { 1, 2 }, { 1, 2 }, { 3, 4 }, { 3, 4 } })
    assert_values(m:repeat_interleave(cell.tensor(2, cell.int64), -1), { { 1, 1, 2, 2 }, { 3, 3, 4, 4 } })
    assert_shape(m:repeat_interleave({ 0, 0 }, 2), { 2, 0 })
    -- the gradient sums the copies back: d/dm (m.repeat_interleave(torch.tensor([1, 2]), dim=1) * w).sum()
    local w = cell.tensor({ { 1, 2, 3 }, { 4, 5, 6 } })
    assert_values(cell.grad(function(a) return (a:repeat_interleave({ 1, 2 }, 2) * w):sum() end)(m),
      { { 1, 5 }, { 4, 11 } })
    local function err(fn) return H.caller_error("ops_spec%.lua", fn) end
    -- PyTorch: "repeats must have the same size as input along dim", "repeats can not be negative"
    assert.are.equal("ValueError: repeat_interleave: repeats has 3 counts but dimension 2 has size 2 "
      .. "(give one count per element, or one for all)", err(function() m:repeat_interleave({ 1, 2, 3 }, 2) end))
    assert.are.equal("ValueError: repeat_interleave: repeats has 2 counts but dimension 1 has size 4 "
      .. "(give one count per element, or one for all)", err(function() m:repeat_interleave({ 1, 2 }) end))
    assert.are.equal("ValueError: repeat_interleave: repeats must be non-negative, got -1 at position 2",
      err(function() m:repeat_interleave({ 1, -1 }, 1) end))
    assert.are.equal("ValueError: repeat_interleave: repeats must be non-negative, got -2 at position 1",
      err(function() m:repeat_interleave(cell.tensor({ -2 }, cell.int64), 1) end))
    assert.are.equal("TypeError: repeat_interleave: repeats must hold integers, but got 1.5 at position 1",
      err(function() m:repeat_interleave({ 1.5, 1 }, 1) end))
    assert.are.equal("TypeError: repeat_interleave: a Tensor of repeats must have an integer dtype, but got Float32",
      err(function() m:repeat_interleave(cell.tensor({ 1, 2 }), 1) end))
    assert.are.equal("ValueError: repeat_interleave: a Tensor of repeats must be 0-D or 1-D, but got shape [1, 2]",
      err(function() m:repeat_interleave(cell.tensor({ { 1, 2 } }, cell.int64), 1) end))
  end)

  it("pad", function()
    local m = cell.tensor({ { 1, 2 }, { 3, 4 } })
    assert_values(m:pad({ 1, 1 }), { { 0, 1, 2, 0 }, { 0, 3, 4, 0 } })
    assert_values(m:pad({ 1, 0, 0, 1 }, 9), { { 9, 1, 2 }, { 9, 3, 4 }, { 9, 9, 9 } })
    assert_values(m:pad({ 0, 0, 1, 0 }), { { 0, 0 }, { 1, 2 }, { 3, 4 } })
    assert_values(cell.tensor({ 1, 2, 3, 4 }):pad({ -1, -1 }), { 2, 3 })
    assert_values(cell.tensor({ 1, 2 }, cell.int32):pad({ 2, 0 }, 7), { 7, 7, 1, 2 }, "int32")
  end)

  it("pad takes MindSpore's mode and value, positionally or as options", function()
    local m = cell.tensor({ { 1, 2, 3 }, { 4, 5, 6 } })
    assert_values(cell.ops.pad(m, { 1, 0 }, "constant", 7), { { 7, 1, 2, 3 }, { 7, 4, 5, 6 } })
    assert_values(m:pad({ 0, 1 }, { value = 5 }), { { 1, 2, 3, 5 }, { 4, 5, 6, 5 } })
    assert_values(m:pad({ 1, 0 }, { mode = "constant" }), { { 0, 1, 2, 3 }, { 0, 4, 5, 6 } })
    -- by hand, as torch.nn.functional.pad's modes
    assert_values(m:pad({ 2, 1 }, "reflect"), { { 3, 2, 1, 2, 3, 2 }, { 6, 5, 4, 5, 6, 5 } })
    assert_values(m:pad({ 1, 1, 1, 0 }, { mode = "replicate" }),
      { { 1, 1, 2, 3, 3 }, { 1, 1, 2, 3, 3 }, { 4, 4, 5, 6, 6 } })
    assert_values(cell.tensor({ 1, 2, 3 }):pad({ 1, 2 }, "circular"), { 3, 1, 2, 3, 1, 2 })
    local g = cell.grad(function(a) return a:pad({ 1, 1 }, "reflect"):sum() end)(cell.tensor({ 1, 2, 3 }))
    assert_values(g, { 1, 3, 1 })
    local function err(fn) return H.caller_error("ops_spec%.lua", fn) end
    assert.are.equal("ValueError: pad: mode must be 'constant', 'reflect', 'replicate' or 'circular', but got 'wrap'",
      err(function() m:pad({ 1, 1 }, "wrap") end))
    assert.are.equal("ValueError: pad: a value is only used in mode 'constant', but mode is 'reflect'",
      err(function() m:pad({ 1, 1 }, "reflect", 3) end))
    assert.are.equal("TypeError: pad() got an unexpected keyword argument 'fill'",
      err(function() m:pad({ 1, 1 }, { fill = 3 }) end))
    assert.are.equal("ValueError: pad: pads must be (before, after) pairs for at most the 2 dimensions of the input, "
      .. "but got 1 numbers", err(function() m:pad({ 1 }, "reflect") end))
  end)
end)

describe("cell.ops", function()
  it("has functional forms of the tensor methods", function()
    local a, b = cell.tensor({ 1, 2 }), cell.tensor({ 3, 4 })
    assert_values(cell.ops.add(a, b), { 4, 6 })
    assert_values(cell.ops.mul(a, 2), { 2, 4 })
    assert_values(cell.ops.exp(cell.tensor({ 0 })), { 1 })
    assert_values(cell.ops.sum(a), 3)
    assert_values(cell.ops.where(a:gt(1), a, b), { 3, 2 })
    assert_values(cell.ops.cat({ a, b }), { 1, 2, 3, 4 })
    assert_values(cell.ops.stack({ a, b }), { { 1, 2 }, { 3, 4 } })
  end)
end)
