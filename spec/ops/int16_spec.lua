-- int16_spec.lua - the int16 dtype end to end (src/core/dtype.[ch], every
-- kernel's dtype switch, the binding, safetensors, Parameter): PyTorch's
-- promotion lattice for every pair of dtypes, wrap-around on overflow,
-- casts, reductions, indexing, creation, printing and files, against
-- PyTorch 1.13 (spec/fixtures/gen_math.py).
local cell = require "cell"
local H = require "helpers"
local fx = require "fixtures.math_fixtures"

local ALL = { "bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64" }

describe("int16", function()
  it("is a dtype like the others: cell.int16, its name, size and shorthand", function()
    assert.are.equal("Int16", tostring(cell.int16))
    assert.are.equal("int16", cell.int16.name)
    assert.are.equal(2, cell.int16.itemsize)
    assert.is_false(cell.int16.is_floating_point)
    local t = cell.tensor({ 1.7, -2 }):short()
    assert.are.equal(cell.int16, t.dtype)
    H.assert_values(t, { 1, -2 }, "int16")
    assert.are.equal(cell.int16, cell.zeros({ 2 }, "int16").dtype)
    assert.are.equal(cell.int16, cell.ones({ 1 }, "Int16").dtype)
  end)

  describe("promotion", function()
    it("follows PyTorch's lattice for every pair of dtypes", function()
      local wrong = {}
      for _, a in ipairs(ALL) do
        for _, b in ipairs(ALL) do
          local want = fx.promote[a][b]
          local got = (cell.ones({ 1 }, cell[a]) + cell.ones({ 1 }, cell[b])).dtype.name
          if a == "bool" and b == "bool" then want = "bool" end
          if got ~= want then wrong[#wrong + 1] = a .. " + " .. b .. ": " .. got .. ", PyTorch " .. want end
        end
      end
      assert.are.same({}, wrong)
    end)
    it("gives int16 for uint8 with int8, as MindSpore and PyTorch", function()
      local r = cell.tensor({ 200, 1 }, cell.uint8) + cell.tensor({ -100, -2 }, cell.int8)
      H.assert_values(r, { 100, -1 }, "int16")
    end)
    it("keeps int16 against an integer number and goes to float32 with a fraction", function()
      assert.are.equal(cell.int16, (cell.ones({ 1 }, cell.int16) + 100000).dtype)
      assert.are.equal(cell.float32, (cell.ones({ 1 }, cell.int16) + 0.5).dtype)
      assert.are.equal(cell.int64, (cell.tensor({ true }) + 1).dtype)
    end)
  end)

  describe("arithmetic wraps around as PyTorch", function()
    local c = fx.int16
    local function x() return cell.tensor(c.x, cell.int16) end
    it("add, sub, mul, neg, abs, square, pow", function()
      H.assert_values(x() + 1, c.add1, "int16", "+ 1")
      H.assert_values(x() - 2, c.sub2, "int16", "- 2")
      H.assert_values(x() * 3, c.mul3, "int16", "* 3")
      H.assert_values(-x(), c.neg, "int16", "neg")
      H.assert_values(x():abs(), c.abs, "int16", "abs")
      H.assert_values(x():square(), c.square, "int16", "square")
      H.assert_values(x() * x(), c.mul_self, "int16", "x * x")
      H.assert_values(x() ^ 2, c.pow2, "int16", "pow")
      H.assert_values(x() + 100000, (cell.tensor(c.x, cell.int64) + 100000):astype(cell.int16):totable(),
        "int16", "a number that does not fit")
      H.assert_values(x() + cell.tensor({ 255, 1, 2, 3, 4, 5 }, cell.uint8), c.plus_uint8, "int16", "+ uint8")
    end)
    it("in place on strided views", function()
      local t = cell.tensor({ { 32767, 1 }, { -32768, 2 } }, cell.int16):transpose(1, 2)
      t:add_(1)
      H.assert_values(t, { { -32768, -32767 }, { 2, 3 } }, "int16")
    end)
    it("floor_divide, remainder, true division and math functions", function()
      H.assert_values(x():floor_divide(7), c.floor_divide_7, "int16")
      H.assert_values(x():remainder(7), c.remainder_7, "int16")
      local d = x() / 2
      assert.are.equal(cell.float32, d.dtype)
      H.assert_close(d, c.div2, 1e-6)
      assert.are.equal(c.exp_dtype, x():exp().dtype.name)
      H.assert_values(x():maximum(cell.tensor({ 0 }, cell.int16)), { 32767, 0, 1000, 0, 0, 181 }, "int16")
      H.assert_values(x():gt(0), { true, false, true, false, false, true }, "bool")
      H.assert_values(x():clamp(-10, 10), { 10, -10, 10, -5, 0, 10 }, "int16")
    end)
    it("reductions: sum and cumsum in int64, prod, max, min, argmax, mean", function()
      assert.are.equal(c.sum, x():sum():item())
      assert.are.equal(cell.int64, x():sum().dtype)
      H.assert_values(x():cumsum(1), c.cumsum, "int64")
      assert.are.equal(c.prod, x():narrow(1, 3, 2):prod():item())
      assert.are.equal(c.max, x():max():item())
      assert.are.equal(c.min, x():min():item())
      assert.are.equal(cell.int16, x():max().dtype)
      assert.are.equal(1, x():argmax():item())
      H.assert_close(x():mean(), c.mean, 1e-6)
      H.assert_shape(cell.zeros({ 0, 2 }, cell.int16):sum(1), { 2 })
    end)
  end)

  describe("conversion", function()
    it("casts to and from every dtype, wrapping integers as C and PyTorch do", function()
      local c = fx.int16
      local x = cell.tensor(c.x, cell.int16)
      H.assert_values(x:astype(cell.int8), c.to_int8, "int8")
      H.assert_values(x:astype(cell.uint8), c.to_uint8, "uint8")
      H.assert_values(x:float(), c.to_float32, "float32")
      H.assert_values(cell.tensor({ 40000, -40000, 65535, 70000 }, cell.int32):astype(cell.int16), c.from_int32, "int16")
      for _, dn in ipairs(ALL) do
        local back = cell.tensor({ 1, 0 }, cell.int16):astype(cell[dn]):astype(cell.int16)
        H.assert_values(back, { 1, 0 }, "int16", dn)
      end
    end)
    it("reads numbers, totable, item and indexing as integers", function()
      local t = cell.tensor({ { 1, -2 }, { 300, 4 } }, cell.int16)
      assert.are.same({ { 1, -2 }, { 300, 4 } }, t:totable())
      assert.are.equal(300, t[{ 2, 1 }]:item())
      assert.are.equal(math.type and "integer" or "number", math.type and math.type(t[2][1]) or type(t[2][1]))
      t[{ 1, 2 }] = 40000
      assert.are.equal(-25536, t[{ 1, 2 }]:item())
      t[2] = cell.tensor({ 7, 8 }, cell.int16)
      assert.are.same({ { 1, -25536 }, { 7, 8 } }, t:totable())
    end)
    it("prints as MindSpore prints integers", function()
      local s = tostring(cell.tensor({ -32768, 5 }, cell.int16))
      assert.is_truthy(s:find("dtype=Int16", 1, true))
      assert.is_truthy(s:find("-32768", 1, true))
    end)
  end)

  describe("creation and indexing ops", function()
    it("zeros, ones, full, arange, eye, randint (range checked)", function()
      H.assert_values(cell.full({ 2 }, 3, cell.int16), { 3, 3 }, "int16")
      H.assert_values(cell.arange(0, 4, 1, cell.int16), { 0, 1, 2, 3 }, "int16")
      H.assert_values(cell.eye(2, 2, cell.int16), { { 1, 0 }, { 0, 1 } }, "int16")
      local r = cell.randint(-5, 5, { 100 }, cell.int16)
      assert.are.equal(cell.int16, r.dtype)
      assert.is_true(r:min():item() >= -5 and r:max():item() < 5)
      H.expect_error(function() return cell.randint(0, 40000, { 2 }, cell.int16) end, "ValueError",
        "randint: range [0, 40000) does not fit in Int16 (values must lie in [-32768, 32767])")
    end)
    it("gather, index_select, cat, where, masked_fill, and int16 indices", function()
      local x = cell.tensor({ 10, 20, 30 }, cell.int16)
      local i = cell.tensor({ 3, 1 }, cell.int16)
      H.assert_values(x:index_select(1, i), { 30, 10 }, "int16")
      H.assert_values(x:gather(1, i), { 30, 10 }, "int16")
      H.assert_values(cell.tensor({ 1.5, 2.5, 3.5 }):index_select(1, i), { 3.5, 1.5 }, "float32")
      H.assert_values(cell.cat({ x, cell.tensor({ 1 }, cell.int8) }), { 10, 20, 30, 1 }, "int16")
      H.assert_values(cell.where(cell.tensor({ true, false, true }), x, cell.tensor({ 0 }, cell.uint8)),
        { 10, 0, 30 }, "int16")
      H.assert_values(x:masked_fill(cell.tensor({ false, true, false }), -1), { 10, -1, 30 }, "int16")
    end)
  end)

  describe("Parameter and files", function()
    it("ranks between uint8 and int32 in Parameter:set_data's implicit conversions", function()
      local p = cell.Parameter(cell.zeros({ 2 }, cell.int32), "p")
      p:set_data(cell.ones({ 2 }, cell.int16))
      assert.are.equal(cell.int32, p.dtype)
      local q = cell.Parameter(cell.zeros({ 2 }, cell.int16), "q")
      q:set_data(cell.ones({ 2 }, cell.uint8))
      H.expect_error(function() q:set_data(cell.ones({ 2 }, cell.int32)) end, "TypeError",
        "Current dtype is Int16, and incoming is Int32")
    end)
    it("round-trips through safetensors as I16", function()
      local path = os.tmpname()
      local t = cell.tensor({ { -32768, 32767 }, { 0, -1 } }, cell.int16)
      cell.core.safetensors_save(path, { "w" }, { t })
      local f = assert(io.open(path, "rb"))
      local bytes = f:read("*a")
      f:close()
      assert.is_truthy(bytes:find('"dtype":"I16"', 1, true))
      local names, tensors = cell.core.safetensors_load(path)
      os.remove(path)
      assert.are.same({ "w" }, names)
      H.assert_values(tensors[1], t:totable(), "int16")
    end)
  end)
end)
