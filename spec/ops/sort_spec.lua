-- sort_spec.lua - the ordering and rearranging ops (src/lua/lsort.c,
-- src/ops/sort.c, scan.c, triangle.c, src/autograd/rules_sort.c): sort,
-- argsort, topk, median, unique, cumprod, logsumexp, amax / amin, tril /
-- triu, flip, roll, diag and trace. Forward and backward against PyTorch
-- (spec/fixtures/sort_fixtures.lua, made by spec/fixtures/gen_sort.py) in
-- float64 and float32, contiguous and transposed; the other dtypes, NaN,
-- zero-size tensors, large inputs and every error by hand.
local H = require "helpers"
local cell = require "cell"
local FX = require "fixtures.sort_fixtures"

local unpack = table.unpack or unpack
local assert_close, assert_values, assert_shape = H.assert_close, H.assert_values, H.assert_shape
local expect_error = H.expect_error
local nan, inf = 0 / 0, math.huge

local function call(c, x) return x[c.op](x, unpack(c.args, 1, c.nargs)) end

describe("ordering ops against PyTorch", function()
  for _, c in ipairs(FX) do
    for _, d in ipairs { { cell.float64, 1e-10 }, { cell.float32, 2e-5 } } do
      local dt, tol = d[1], d[2]
      it(c.name .. " (" .. tostring(dt) .. ")", function()
        local leaf = cell.tensor(c.x, dt)
        local function view(l) return c.t and l:transpose(1, 2) or l end
        local x = view(leaf)
        if c.t then assert.is_false(x:is_contiguous()) end
        local outs = { call(c, x) }
        assert.are.equal(#c.outs, #outs, "number of results")
        for k, want in ipairs(c.outs) do
          if c.kinds[k] == "index" then
            assert_values(outs[k], want, "int64", "result " .. k)
          else
            assert.are.equal(dt, outs[k].dtype)
            assert_close(outs[k], want, tol, "result " .. k)
          end
        end
        if c.grad then
          local sens = cell.tensor(c.sens, dt)
          local g = cell.grad(function(l) return ((call(c, view(l))) * sens):sum() end)(leaf)
          assert.are.equal(dt, g.dtype)
          assert_close(g, c.grad, tol * 10, "gradient")
        end
      end)
    end
  end

  it("has every method as cell.ops.<name>", function()
    for _, name in ipairs { "sort", "argsort", "topk", "median", "unique", "cumprod", "logsumexp", "amax",
      "amin", "tril", "triu", "flip", "roll", "diag", "trace" } do
      assert.are.equal(cell.Tensor[name] or cell.core.Tensor[name], cell.ops[name], name)
    end
    local v, i = cell.ops.sort(cell.tensor({ 3, 1, 2 }), 1, true)
    assert_values(v, { 3, 2, 1 })
    assert_values(i, { 1, 3, 2 }, "int64")
  end)
end)

describe("ordering ops on every dtype", function()
  local ints = { "int8", "uint8", "int32", "int64" }
  it("sort, argsort, topk, median and unique keep integer values exact", function()
    for _, name in ipairs(ints) do
      local dt = cell[name]
      local x = cell.tensor({ { 5, 1, 7, 1 }, { 0, 9, 3, 3 } }, dt)
      local v, i = x:sort(2)
      assert_values(v, { { 1, 1, 5, 7 }, { 0, 3, 3, 9 } }, name)
      assert_values(i, { { 2, 4, 1, 3 }, { 1, 3, 4, 2 } }, "int64")
      assert_values(x:argsort(2, true), { { 3, 1, 2, 4 }, { 2, 3, 4, 1 } }, "int64")
      local tv, ti = x:topk(2, 1, false)
      assert_values(tv, { { 0, 1, 3, 1 }, { 5, 9, 7, 3 } }, name)
      assert_values(ti, { { 2, 1, 2, 1 }, { 1, 2, 1, 2 } }, "int64")
      assert_values(x:median(), 3, name)
      local mv, mi = x:median(2)
      assert_values(mv, { 1, 3 }, name)
      assert_values(mi, { 4, 3 }, "int64") -- ties ranked by position: the lower median is the second 1
      local u, inv, cnt = x:unique { return_inverse = true, return_counts = true }
      assert_values(u, { 0, 1, 3, 5, 7, 9 }, name)
      assert_values(inv, { { 4, 2, 5, 2 }, { 1, 6, 3, 3 } }, "int64")
      assert_values(cnt, { 1, 2, 2, 1, 1, 1 }, "int64")
    end
  end)

  it("sorts int64 beyond 2^53 and negative integers exactly", function()
    local x = cell.tensor({ 3, -2, 1 }, cell.int64) * 1000000000000000000 + cell.tensor({ 1, 0, 3 }, cell.int64)
    local v = x:sort()
    assert.are.equal(-2000000000000000000, v[1])
    assert.are.equal(1000000000000000003, v[2])
    assert_values(x:argsort(), { 2, 3, 1 }, "int64")
  end)

  it("sorts bool, float16 and bfloat16", function()
    local b = cell.tensor({ true, false, true, false })
    local v, i = b:sort()
    assert_values(v, { false, false, true, true }, "bool")
    assert_values(i, { 2, 4, 1, 3 }, "int64")
    for _, name in ipairs { "float16", "bfloat16" } do
      local h = cell.tensor({ 0.5, -1, 2, 0.25 }, cell[name])
      local hv, hi = h:sort(1, true)
      assert_values(hv, { 2, 0.5, 0.25, -1 }, name)
      assert_values(hi, { 3, 1, 4, 2 }, "int64")
      assert_values(h:topk(1), { 2 }, name)
      assert_close(h:logsumexp(1), math.log(math.exp(0.5) + math.exp(-1) + math.exp(2) + math.exp(0.25)), 1e-2)
      assert.are.equal(name, h:cumprod(1).dtype.name)
    end
  end)

  it("cumprod of integers and bool gives int64; logsumexp of integers gives float32", function()
    assert_values(cell.tensor({ 2, 3, 4 }, cell.int32):cumprod(1), { 2, 6, 24 }, "int64")
    assert_values(cell.tensor({ true, true, false }):cumprod(1), { 1, 1, 0 }, "int64")
    assert_values(cell.tensor({ 2, 3 }, cell.uint8):cumprod(1, { dtype = cell.float64 }), { 2, 6 }, "float64")
    local l = cell.tensor({ 1, 2 }, cell.int64):logsumexp(1)
    assert.are.equal(cell.float32, l.dtype)
    assert_close(l, math.log(math.exp(1) + math.exp(2)), 1e-6)
  end)

  it("tril, triu, flip, roll, diag and trace move integers and bool unchanged", function()
    for _, name in ipairs { "int8", "uint8", "int32", "int64", "bool", "float16", "bfloat16" } do
      local dt = cell[name]
      local m = cell.tensor({ { 1, 0, 1 }, { 1, 1, 0 } }, dt)
      local x = cell.tensor({ { 1, 1, 1 }, { 1, 1, 1 } }, dt)
      local function v(t)
        if name == "bool" then
          local o = {}
          for i, row in ipairs(t) do
            o[i] = {}
            for j, e in ipairs(row) do o[i][j] = e ~= 0 end
          end
          return o
        end
        return t
      end
      assert_values(x:tril(), v { { 1, 0, 0 }, { 1, 1, 0 } }, name)
      assert_values(x:triu(1), v { { 0, 1, 1 }, { 0, 0, 1 } }, name)
      assert_values(m:flip(2), v { { 1, 0, 1 }, { 0, 1, 1 } }, name)
      assert_values(m:roll(1, 2), v { { 1, 1, 0 }, { 0, 1, 1 } }, name)
      assert_values(m:diag(1), name == "bool" and { false, false } or { 0, 0 }, name)
    end
    assert_values(cell.tensor({ { 1, 2 }, { 3, 4 } }, cell.int32):trace(), 5, "int64")
    assert_values(cell.tensor({ { 1, 2 }, { 3, 4 } }, cell.int8):amax(2), { 2, 4 }, "int8")
    assert_values(cell.tensor({ { 1, 2 }, { 3, 4 } }, cell.int64):amin(), 1, "int64")
  end)
end)

describe("NaN and infinities", function()
  it("sort NaN as the largest value, as PyTorch", function()
    local x = cell.tensor({ 2, nan, -0.0, 0, 1 })
    local v, i = x:sort()
    assert_values(i, { 3, 4, 5, 1, 2 }, "int64")
    assert.is_true(v[5] ~= v[5])
    local dv, di = x:sort(1, true)
    assert_values(di, { 2, 1, 5, 3, 4 }, "int64") -- -0 and 0 are equal: their order is kept
    assert.is_true(dv[1] ~= dv[1])
    local tv, ti = cell.tensor({ 2, nan, 1 }):topk(2)
    assert_values(ti, { 2, 1 }, "int64")
    assert.are.equal(2, tv[2])
  end)

  it("median of a line with NaN is NaN at the first NaN; unique keeps each NaN", function()
    local v, i = cell.tensor({ 1, nan, 2, nan }):median(1)
    assert.is_true(v:item() ~= v:item())
    assert.are.equal(2, i:item())
    local u, c = cell.tensor({ 1, nan, nan, 0 }):unique { return_counts = true }
    assert_close(u, { 0, 1, nan, nan })
    assert_values(c, { 1, 1, 1, 1 }, "int64")
  end)

  it("logsumexp with infinities and huge values", function()
    assert_close(cell.tensor({ { 1000, 1000 }, { -inf, -inf } }, cell.float64):logsumexp(2),
      { 1000 + math.log(2), -inf }, 1e-12)
    assert_close(cell.tensor({ inf, 1 }):logsumexp(1), inf)
    assert_close(cell.tensor({ -1e4, -1e4 }):logsumexp(1), -1e4 + math.log(2), 1e-6)
  end)
end)

describe("zero-size tensors", function()
  local e = cell.zeros({ 2, 0 })
  it("sort, argsort and topk keep the shape; topk with k = 0", function()
    local v, i = e:sort(2)
    assert_shape(v, { 2, 0 })
    assert_shape(i, { 2, 0 })
    assert_shape(e:argsort(1), { 2, 0 })
    local tv, ti = cell.ones({ 3, 4 }):topk(0)
    assert_shape(tv, { 3, 0 })
    assert_shape(ti, { 3, 0 })
    assert_shape((e:topk(2, 1)), { 2, 0 })
  end)
  it("cumprod, flip, roll, tril, triu keep the shape", function()
    for _, t in ipairs { e:cumprod(2), e:flip(2), e:roll(1), e:roll(2, 2), e:tril(), e:triu(), cell.zeros({ 0, 3 }):flip({ 1, 2 }) } do
      assert.are.equal(0, t:numel())
    end
    assert_shape(e:cumprod(1), { 2, 0 })
  end)
  it("logsumexp over nothing is -inf; median of nothing is NaN; unique of nothing is empty", function()
    assert_close(e:logsumexp(2), { -inf, -inf })
    assert_shape(e:logsumexp(1), { 0 })
    local m = e:median()
    assert.is_true(m:item() ~= m:item())
    assert_shape(e:unique(), { 0 })
    assert_shape(cell.zeros({ 0 }):diag(), { 0, 0 })
    assert_shape(e:diag(), { 0 })
    assert_close(e:trace(), 0)
  end)
  it("gradients through zero-size inputs are zero-size", function()
    local g = cell.grad(function(x) return x:sort(2):sum() + x:cumprod(1):sum() + x:flip(2):sum() end)(cell.zeros({ 2, 0 }, cell.float64))
    assert_shape(g, { 2, 0 })
  end)
end)

describe("large inputs", function()
  local function check_sorted(x, dim, desc)
    local v, i = x:sort(dim, desc)
    assert_close(v, x:gather(dim, i):totable(), 0, "values are the input at the indices")
    local n = x.shape[dim]
    local a, b = v:narrow(dim, 1, n - 1), v:narrow(dim, 2, n - 1)
    local bad = desc and b:gt(a) or a:gt(b)
    assert.are.equal(0, bad:sum():item(), "in order")
    local st = i:float():sort(dim) -- a permutation of 1..n on every line
    local want = cell.arange(1, n + 1):float()
    if dim == 1 and x.ndim == 2 then want = want:reshape({ n, 1 }) end
    assert.are.equal(0, (st - want):abs():sum():item(), "indices are a permutation")
  end
  it("sorts long lines (radix) and many lines (in parallel)", function()
    cell.set_seed(3)
    check_sorted(cell.randn({ 20000 }), 1, false)
    check_sorted(cell.randn({ 300, 400 }), 2, true)
    check_sorted(cell.randn({ 300, 400 }, cell.float64), 1, false)
    check_sorted(cell.randint(-50, 50, { 200, 500 }), 2, false) -- many ties: stable
    local x = cell.randint(-3, 3, { 5000 })
    local _, i = x:sort()
    local xs = x:gather(1, i)
    local same = xs:narrow(1, 1, 4999):eq(xs:narrow(1, 2, 4999))
    local later = i:narrow(1, 2, 4999):gt(i:narrow(1, 1, 4999))
    assert.are.equal(same:sum():item(), same:logical_and(later):sum():item(), "equal keys keep their order")
  end)
  it("topk agrees with sort on large lines", function()
    cell.set_seed(4)
    local x = cell.randn({ 64, 5000 }, cell.float64)
    local tv, ti = x:topk(17, 2)
    local sv, si = x:sort(2, true)
    assert_close(tv, sv:narrow(2, 1, 17):totable(), 0)
    assert_values(ti, si:narrow(2, 1, 17):totable(), "int64")
    local lv = x:topk(9, 2, false)
    assert_close(lv, x:sort(2):narrow(2, 1, 9):totable(), 0)
  end)
  it("topk breaks ties toward the earlier element, as a stable descending sort", function()
    cell.set_seed(6)
    local x = cell.randint(-5, 5, { 8, 400 })
    local tv, ti = x:topk(10, 2)
    local sv, si = x:sort(2, true)
    assert_values(ti, si:narrow(2, 1, 10):totable(), "int64")
    assert_values(tv, sv:narrow(2, 1, 10):totable())
    local _, ai = x:topk(300, 2, false) -- the selection path (k close to the size)
    assert_values(ai, x:argsort(2):narrow(2, 1, 300):totable(), "int64")
  end)
  it("float32 logsumexp agrees with float64 over a wide range", function()
    cell.set_seed(7)
    local x = cell.randn({ 50, 700 }, cell.float64) * 30
    local want = x:logsumexp(2):totable()
    assert_close(x:float():logsumexp(2), want, 2e-6)
    assert_close(x:float():logsumexp(1), x:logsumexp(1):totable(), 2e-6)
  end)
  it("median and logsumexp of large inputs", function()
    cell.set_seed(5)
    local x = cell.randn({ 70, 1001 }, cell.float64)
    local mv = x:median(2)
    assert_close(mv, x:sort(2):narrow(2, 501, 1):squeeze(2):totable(), 0)
    local l = x:logsumexp(2)
    assert_close(l, (x - x:amax(2, true)):exp():sum(2):log():add(x:amax(2)):totable(), 1e-12)
  end)
end)

describe("extreme arguments", function()
  it("rolls by shifts near the integer limits, forward and backward", function()
    local big = math.maxinteger or 2 ^ 53
    local x = cell.tensor({ 1, 2, 3, 4, 5 }, cell.float64)
    assert_values(x:roll(big), x:roll(big % 5):totable())
    local g = cell.grad(function(t) return (t:roll(-big, 1) * cell.tensor({ 1, 2, 3, 4, 5 }, cell.float64)):sum() end)(x)
    assert_values(g, cell.tensor({ 1, 2, 3, 4, 5 }, cell.float64):roll(big % 5):totable())
  end)
  it("keeps tril / triu and diag offsets past the sizes in range", function()
    assert_values(cell.ones({ 2, 2 }):tril(1000), { { 1, 1 }, { 1, 1 } })
    assert_values(cell.ones({ 2, 2 }):triu(-1000), { { 1, 1 }, { 1, 1 } })
    assert_values(cell.ones({ 2, 2 }):tril(-1000), { { 0, 0 }, { 0, 0 } })
    assert_shape(cell.ones({ 2, 3 }):diag(7), { 0 })
    assert_shape(cell.ones({ 2, 3 }):diag(-7), { 0 })
  end)
end)

describe("cumprod's gradient with zeros", function()
  it("matches the product rule where one or two zeros sit in a line", function()
    local x = cell.tensor({ { 2, 0, 3, 4 }, { 0, 5, 0, 2 }, { 1, 2, 3, 0 } }, cell.float64)
    local g = cell.grad(function(t) return t:cumprod(2):sum() end)(x)
    -- d/dx_i sum_j prod_{k<=j} x_k, by hand
    assert_close(g, { { 1, 2 + 6 + 24, 0, 0 }, { 1 + 5 + 0 + 0, 0, 0, 0 }, { 1 + 2 + 6 + 0, 1 + 3 + 0, 2 + 0, 6 } }, 1e-12)
  end)
end)

describe("options after a positional dimension", function()
  it("sort / argsort (dim, {descending =}), median / amax (dim, {keepdim =}), MindSpore's keepdims", function()
    local m = cell.tensor({ { 1, 5, 3 }, { 4, 2, 6 } })
    local v, i = m:sort(2, { descending = true })
    assert_values(v, { { 5, 3, 1 }, { 6, 4, 2 } })
    assert_values(i, { { 2, 3, 1 }, { 3, 1, 2 } }, "int64")
    assert_values(m:argsort(1, { descending = true }), { { 2, 1, 2 }, { 1, 2, 1 } }, "int64")
    local mv, mi = m:median(2, { keepdim = true })
    assert_values(mv, { { 3 }, { 4 } })
    assert_values(mi, { { 3 }, { 1 } }, "int64")
    assert_shape((m:median { dim = 1, keepdims = true }), { 1, 3 })
    assert_shape(m:amax(2, { keepdims = true }), { 2, 1 })
    assert_shape(m:logsumexp { dim = 2, keepdims = true }, { 2, 1 })
    expect_error(function() m:sort(2, { dim = 1 }) end, "TypeError", "dim given twice")
    expect_error(function() m:median(2, { dim = 1 }) end, "TypeError", "unknown option 'dim'")
    expect_error(function() m:sort(2, { descend = true }) end, "TypeError", "unknown option 'descend'")
  end)
end)

describe("errors of the ordering ops", function()
  local m = function() return cell.tensor({ { 1, 2, 3 }, { 4, 5, 6 } }) end
  local cases = {
    { "sort dim 3 of a 2-D tensor", function() return m():sort(3) end, "IndexError", "dimension 3", "2-D" },
    { "sort with a string dim", function() return m():sort("x") end, "TypeError" },
    { "sort descending not a boolean", function() return m():sort(1, 1) end, "TypeError", "descending", "boolean" },
    { "sort with an unknown option", function() return m():sort { dims = 1 } end, "TypeError", "unknown option 'dims'" },
    { "argsort dim 0", function() return m():argsort(0) end, "IndexError", "dimension 0" },
    { "topk k larger than the dimension", function() return m():topk(4) end, "ValueError", "k = 4", "size 3" },
    { "topk negative k", function() return m():topk(-1) end, "ValueError", "k = -1" },
    { "topk k not an integer", function() return m():topk(1.5) end, "TypeError" },
    { "topk largest not a boolean", function() return m():topk(1, 1, "yes") end, "TypeError", "largest" },
    { "median along a size-0 dimension", function() return cell.zeros({ 2, 0 }):median(2) end, "IndexError", "size 0", "[2, 0]" },
    { "median of an empty integer tensor", function() return cell.zeros({ 0 }, cell.int32):median() end, "ValueError", "Int32", "no NaN" },
    { "median keepdim not a boolean", function() return m():median(1, 2) end, "TypeError", "keepdim" },
    { "unique with an unknown option", function() return m():unique { dim = 1 } end, "TypeError", "unknown option 'dim'" },
    { "unique return_counts not a boolean", function() return m():unique { return_counts = 1 } end, "TypeError", "return_counts" },
    { "cumprod without a dim", function() return m():cumprod() end, "TypeError" },
    { "cumprod dim 3", function() return m():cumprod(3) end, "IndexError", "dimension 3" },
    { "cumprod with a bad dtype", function() return m():cumprod(1, { dtype = "float" }) end, "TypeError" },
    { "logsumexp repeated dims", function() return m():logsumexp({ 1, 1 }) end, "ValueError", "dimension 0", "more than once" },
    { "logsumexp dim out of range", function() return m():logsumexp(-3) end, "IndexError", "dimension -3" },
    { "amax repeated dims", function() return m():amax({ 2, -1 }) end, "ValueError", "more than once" },
    { "amax over a size-0 dimension", function() return cell.zeros({ 0, 3 }):amax(1) end, "ValueError", "zero elements", "[0, 3]" },
    { "amin of an empty tensor", function() return cell.zeros({ 0 }):amin() end, "ValueError", "zero elements" },
    { "tril of a 1-D tensor", function() return cell.ones({ 3 }):tril() end, "ValueError", "tril", "at least 2 dimensions", "[3]" },
    { "triu of a 0-D tensor", function() return cell.tensor(1):triu() end, "ValueError", "triu", "[]" },
    { "tril diagonal not an integer", function() return m():tril(0.5) end, "TypeError" },
    { "flip without dims", function() return m():flip() end, "TypeError", "flip" },
    { "flip repeated dims", function() return m():flip({ 1, -2 }) end, "ValueError", "dimension 1", "more than once" },
    { "flip dim 3", function() return m():flip(3) end, "IndexError", "dimension 3" },
    { "roll shifts and dims of different lengths", function() return m():roll({ 1, 2 }, { 1 }) end, "ValueError", "2 shifts", "1 dims" },
    { "roll several shifts without dims", function() return m():roll({ 1, 2 }) end, "ValueError", "one shift", "got 2" },
    { "roll with a string shift", function() return m():roll("1") end, "TypeError", "shifts" },
    { "roll dim out of range", function() return m():roll(1, 5) end, "IndexError", "dimension 5" },
    { "diag of a 3-D tensor", function() return cell.ones({ 2, 2, 2 }):diag() end, "ValueError", "1-D or 2-D", "[2, 2, 2]" },
    { "diag with an offset past any size", function() return cell.ones({ 2 }):diag(math.mininteger or -2 ^ 62) end, "ValueError", "diag", "offset" },
    { "trace of a 1-D tensor", function() return cell.ones({ 3 }):trace() end, "ValueError", "trace", "[3]" },
    { "sort of a non-tensor", function() return cell.ops.sort({ 1, 2 }) end, "TypeError" },
  }
  for _, c in ipairs(cases) do
    it(c[1], function() expect_error(c[2], c[3], unpack(c, 4)) end)
  end
end)
