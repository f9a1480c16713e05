-- errors_spec.lua - every error path of the tensor API (API.md, Conventions:
-- a Lua error whose message holds the MindSpore exception name and a colon,
-- then words naming the offending argument, value or shape). Each case pins
-- the name and key words, then checks that the process keeps working.
local H = require "helpers"
local cell = require "cell"

local expect_error = H.expect_error

local function m23() return cell.tensor({ { 1, 2, 3 }, { 4, 5, 6 } }) end
local function v3() return cell.tensor({ 1, 2, 3 }) end
local function i64(t) return cell.tensor(t, cell.int64) end

-- { label, function that must fail, exception name, key words... }
local cases = {
  -- mismatched shapes: ValueError naming both shapes
  { "add of [2, 3] and [4]", function() return m23():add(cell.ones({ 4 })) end, "ValueError", "[2, 3]", "[4]" },
  { "+ of [2, 3] and [4]", function() return m23() + cell.ones({ 4 }) end, "ValueError", "[2, 3]", "[4]" },
  { "- of [3, 2] and [2, 3]", function() return cell.ones({ 3, 2 }) - m23() end, "ValueError", "[3, 2]", "[2, 3]" },
  { "* of [2, 1, 3] and [4, 2]", function() return cell.ones({ 2, 1, 3 }) * cell.ones({ 4, 2 }) end, "ValueError", "[2, 1, 3]", "[4, 2]" },
  { "/ of [5] and [3]", function() return cell.ones({ 5 }) / v3() end, "ValueError", "[5]", "[3]" },
  { "eq of [2] and [3]", function() return cell.ones({ 2 }):eq(v3()) end, "ValueError", "[2]", "[3]" },
  { "maximum of [2] and [3]", function() return cell.ones({ 2 }):maximum(v3()) end, "ValueError", "[2]", "[3]" },
  { "matmul of [2, 3] and [4, 5]", function() return m23():matmul(cell.ones({ 4, 5 })) end, "ValueError", "[2, 3]", "[4, 5]" },
  { "matmul of [3] and [4]", function() return v3():matmul(cell.ones({ 4 })) end, "ValueError", "[3]", "[4]" },
  { "matmul of [2, 3] and [2]", function() return m23():matmul(cell.ones({ 2 })) end, "ValueError", "[2, 3]", "[2]" },
  { "matmul batch dims [2, 2, 3] and [3, 3, 4]", function() return cell.ones({ 2, 2, 3 }):matmul(cell.ones({ 3, 3, 4 })) end, "ValueError", "[2]", "[3]" },
  { "matmul of a 0-D tensor", function() return cell.tensor(1):matmul(v3()) end, "ValueError", "matmul" },
  { "mm of [2, 3] and [2, 3]", function() return m23():mm(m23()) end, "ValueError", "[2, 3]" },
  { "mm of 3-D operands", function() return cell.ones({ 1, 2, 2 }):mm(cell.ones({ 2, 2 })) end, "ValueError", "mm", "2-D" },
  { "bmm of [2, 3, 4] and [3, 4, 5]", function() return cell.ones({ 2, 3, 4 }):bmm(cell.ones({ 3, 4, 5 })) end, "ValueError", "[2, 3, 4]", "[3, 4, 5]" },
  { "bmm of 2-D operands", function() return m23():bmm(m23()) end, "ValueError", "bmm", "3-D" },
  { "dot of [3] and [4]", function() return v3():dot(cell.ones({ 4 })) end, "ValueError", "[3]", "[4]" },
  { "dot of 2-D operands", function() return m23():dot(m23()) end, "ValueError", "dot", "1-D" },
  { "where of [2] and [3]", function() return cell.where(cell.tensor({ true, false }), v3(), 0) end, "ValueError", "[2]", "[3]" },
  { "masked_fill with a [4] mask on [2, 3]", function() return m23():masked_fill(cell.tensor({ true, false, true, true }), 0) end, "ValueError", "[2, 3]", "[4]" },
  { "copy_ of [3] into [2, 2]", function() return cell.ones({ 2, 2 }):copy_(v3()) end, "ValueError", "[3]", "[2, 2]" },
  { "t[i] = tensor of a wrong shape", function() local t = m23(); t[1] = cell.ones({ 2 }) end, "ValueError", "[2]", "[3]" },
  { "add_ that would grow the tensor", function() return v3():add_(m23()) end, "ValueError", "[2, 3]", "[3]" },
  { "reshape [2, 3] into [4]", function() return m23():reshape({ 4 }) end, "ValueError", "[2, 3]", "[4]" },
  { "reshape with two -1", function() return m23():reshape({ -1, -1 }) end, "ValueError", "-1" },
  { "reshape to a negative size", function() return m23():reshape({ -2, -3 }) end, "ValueError", "-2" },
  { "expand [3] to [2, 4]", function() return v3():expand({ 2, 4 }) end, "ValueError", "[3]", "[2, 4]" },
  { "cat of [2, 2] and [3, 3]", function() return cell.cat({ cell.ones({ 2, 2 }), cell.ones({ 3, 3 }) }, 1) end, "ValueError", "[2, 2]", "[3, 3]" },
  { "cat of 1-D and 2-D", function() return cell.cat({ v3(), m23() }) end, "ValueError", "cat" },
  { "stack of [2] and [3]", function() return cell.stack({ cell.ones({ 2 }), v3() }) end, "ValueError", "[2]", "[3]" },
  { "cat of an empty list", function() return cell.cat({}) end, "ValueError", "cat", "empty" },
  { "stack of an empty list", function() return cell.stack({}) end, "ValueError", "stack", "empty" },
  { "split sections that do not sum to the size", function() return cell.ones({ 5 }):split({ 2, 2 }) end, "ValueError", "split", "5" },
  { "split size 0", function() return cell.ones({ 5 }):split(0) end, "ValueError", "split", "0" },
  { "chunk 0", function() return cell.ones({ 5 }):chunk(0) end, "ValueError", "chunk", "0" },
  { "permute with the wrong number of dims", function() return m23():permute(1) end, "ValueError", "permute", "2" },
  { "permute repeating a dim", function() return m23():permute(1, 1) end, "ValueError", "permute" },
  { "item of a [2, 3] tensor", function() return m23():item() end, "ValueError", "item", "[2, 3]" },
  { "max of an empty tensor", function() return cell.zeros({ 0 }):max() end, "ValueError", "max", "[0]" },
  { "argmax of an empty dim", function() return cell.zeros({ 2, 0 }):argmax(2) end, "ValueError", "argmax", "[2, 0]" },
  { "var with ddof < 0", function() return v3():var { ddof = -1 } end, "ValueError", "ddof", "-1" },
  { "arange with step 0", function() return cell.arange(0, 5, 0) end, "ValueError", "arange", "step" },
  { "randint with high <= low", function() return cell.randint(5, 5, { 2 }) end, "ValueError", "randint", "5" },
  { "slice step 0", function() return v3()[{ { 1, 3, 0 } }] end, "ValueError", "step", "0" },
  { "slice step < 0", function() return v3()[{ { 3, 1, -1 } }] end, "ValueError", "step", "-1" },
  { "flatten start after end", function() return cell.ones({ 2, 3, 4 }):flatten(3, 1) end, "ValueError", "flatten" },
  { "pad with an odd number of pads", function() return v3():pad({ 1 }) end, "ValueError", "pad" },
  { "gather with an index of other rank", function() return m23():gather(1, i64({ 1, 2 })) end, "ValueError", "gather" },
  { "scatter with src smaller than index", function() return cell.zeros({ 2, 2 }):scatter(1, i64({ { 1, 2 }, { 2, 1 } }), cell.ones({ 1, 1 })) end, "ValueError", "scatter" },
  { "index_select with a 2-D index", function() return m23():index_select(1, i64({ { 1 } })) end, "ValueError", "index_select" },
  { "view of a non-contiguous tensor", function() return m23():transpose(1, 2):view({ 6 }) end, "RuntimeError", "view" },

  -- wrong dtypes: TypeError
  { "where with a Float32 condition", function() return cell.where(v3(), v3(), v3()) end, "TypeError", "where", "Float32" },
  { "masked_fill with an Int64 mask", function() return v3():masked_fill(i64({ 1, 0, 1 }), 0) end, "TypeError", "masked_fill", "Int64" },
  { "matmul of Bool tensors", function() return cell.tensor({ { true } }):matmul(cell.tensor({ { true } })) end, "TypeError", "matmul", "Bool" },
  { "sub of Bool tensors", function() return cell.tensor({ true }) - cell.tensor({ false }) end, "TypeError", "sub", "Bool" },
  { "add_ of a float into an Int32 tensor", function() return cell.tensor({ 1 }, cell.int32):add_(1.5) end, "TypeError", "add_", "Float32", "Int32" },
  { "mul_ of a Float32 tensor into Int64", function() return i64({ 1 }):mul_(cell.tensor({ 2 })) end, "TypeError", "mul_", "Int64" },
  { "exp_ of an Int32 tensor", function() return cell.tensor({ 1 }, cell.int32):exp_() end, "TypeError", "exp_", "Int32" },
  { "add_ of an int into a Bool tensor", function() return cell.tensor({ true }):add_(1) end, "TypeError", "add_", "Bool" },
  { "clamp of a Bool tensor", function() return cell.tensor({ true }):clamp(0, 1) end, "TypeError", "clamp", "Bool" },
  { "gather with a Float32 index", function() return m23():gather(1, cell.tensor({ { 1, 1, 1 } })) end, "TypeError", "gather", "Float32" },
  { "scatter with a Float32 index", function() return m23():scatter(1, cell.tensor({ { 1, 1, 1 } }), m23()) end, "TypeError", "scatter", "Float32" },
  { "index_select with a Float32 index", function() return m23():index_select(1, cell.tensor({ 1 })) end, "TypeError", "index_select", "Float32" },
  { "rand with an integer dtype", function() return cell.rand({ 2 }, cell.int32) end, "TypeError", "rand", "Int32" },
  { "an unknown dtype name", function() return v3():astype("float99") end, "TypeError", "float99" },
  { "astype of a number", function() return v3():astype(3) end, "TypeError", "dtype", "number" },
  { "zeros with a list as dtype", function() return cell.zeros({ 2 }, { 1 }) end, "TypeError",
    "zeros: unknown option 'number' (the options are dtype)" },
  { "zeros with an unknown option", function() return cell.zeros({ 2 }, { dtyp = cell.int32 }) end, "TypeError",
    "zeros: unknown option 'dtyp' (the options are dtype)" },
  { "zeros with a bad dtype option", function() return cell.zeros({ 2 }, { dtype = 3 }) end, "TypeError",
    "zeros: expected a dtype (such as cell.float32), got number (bad argument #2)" },
  { "tensor from a table of keys", function() return cell.tensor({ a = 1 }) end, "TypeError", "sequence", "'a'" },
  { "permute with a repeated dimension, counted from 1", function() return cell.zeros({ 2, 3, 4 }):permute(1, 1, 2) end,
    "ValueError", "permute: dimension 1 appears more than once" },
  { "flatten with start after end, counted from 1", function() return cell.zeros({ 2, 3, 4 }):flatten(3, 1) end,
    "ValueError", "flatten: start dimension 3 is after end dimension 1" },
  { "stack of unequal shapes names the list's elements from 1", function()
    return cell.stack({ cell.zeros({ 2 }), cell.zeros({ 3 }) }) end, "ValueError", "[2] (element 1) and [3] (element 2)" },
  { "add with a positional scale (alpha is a keyword: {alpha = 2})", function()
    return cell.ones({ 2 }):add(cell.ones({ 2 }), 2) end, "TypeError", "expected one operand besides the tensor",
    "{alpha = ...}" },
  { "mul with a third argument", function() return cell.ops.mul(cell.ones({ 2 }), 2, 5) end, "TypeError",
    "mul: expected one operand besides the tensor, but got a number after it" },
  { "mul_ with a third argument", function() return cell.ones({ 2 }):mul_(2, 3) end, "TypeError", "mul_:" },
  { "Conv2d with a fractional channel count (MindSpore's check_positive_int: a TypeError)", function()
    return cell.nn.Conv2d(2.5, 3, 3) end, "TypeError", "'in_channels' must be an integer, but got 2.5" },
  { "Conv3d with a string channel count", function() return cell.nn.Conv3d(2, "4", 3) end, "TypeError",
    "'out_channels' must be an integer" },
  { "Embedding with a string size", function() return cell.nn.Embedding("a", 3) end, "TypeError",
    "'vocab_size' must be an integer, but got string" },
  { "masked_fill with a mask that does not broadcast says masked_fill", function()
    return cell.zeros({ 2, 3 }):masked_fill(cell.tensor({ true, false }), 1) end, "ValueError",
    "masked_fill: shapes [2] and [2, 3] cannot be broadcast" },

  -- bad argument types: TypeError naming what was given
  { "add of a string", function() return v3():add("x") end, "TypeError", "string" },
  { "+ of a table", function() return v3() + {} end, "TypeError", "table" },
  { "+ of a numeric string", function() return v3() + "1" end, "TypeError", "string" },
  { "a number + a string on the left", function() return "1" * v3() end, "TypeError", "string" },
  { "method called on a number", function() return cell.Tensor.add(1, 2) end, "TypeError", "Tensor", "number" },
  { "zeros of a string", function() return cell.zeros("abc") end, "TypeError", "abc" },
  { "zeros with a string size", function() return cell.zeros({ 2, "a" }) end, "TypeError", "shape", "string" },
  { "zeros with a fractional size", function() return cell.zeros({ 2.5 }) end, "TypeError", "2.5" },
  { "tensor of a function", function() return cell.tensor(print) end, "TypeError", "function" },
  { "tensor with a string leaf", function() return cell.tensor({ 1, "a" }) end, "TypeError", "string" },
  { "tensor with a nested string leaf", function() return cell.tensor({ { 1, 2 }, { 3, "x" } }) end, "TypeError", "string" },
  { "tensor with a userdata leaf", function() return cell.tensor({ 1, io.stdout }) end, "TypeError", "userdata" },
  { "sum over a string dim", function() return m23():sum("x") end, "TypeError", "string" },
  { "sum with a string keepdim", function() return m23():sum(1, "yes") end, "TypeError", "keepdim", "string" },
  { "transpose with a fractional dim", function() return m23():transpose(1.5, 2) end, "TypeError", "1.5" },
  { "reshape to a string", function() return m23():reshape("a") end, "TypeError", "string" },
  { "setting a field of a tensor", function() local t = v3(); t.foo = 1 end, "TypeError", "foo" },
  { "index by a boolean", function() return v3()[true] end, "TypeError", "boolean" },
  { "index entry of a string", function() return m23()[{ 1, "a" }] end, "TypeError", "string" },
  { "assigning a string", function() local t = v3(); t[1] = "s" end, "TypeError", "string" },
  { "assigning a table", function() local t = v3(); t[1] = {} end, "TypeError", "table" },
  { "cat of a non-tensor element", function() return cell.cat({ v3(), 1 }) end, "TypeError", "cat", "number" },
  { "cat of a tensor instead of a list", function() return cell.cat(v3()) end, "TypeError", "cat" },
  { "where with a string branch", function() return cell.where(cell.tensor({ true }), "a", 1) end, "TypeError", "string" },
  { "where with a number condition", function() return cell.where(1, v3(), v3()) end, "TypeError", "Tensor", "number" },
  { "clamp with a string bound", function() return v3():clamp("a") end, "TypeError", "string" },
  { "masked_fill with a string value", function() return v3():masked_fill(v3():gt(1), "x") end, "TypeError", "string" },
  { "fill_ with a string", function() return v3():fill_("x") end, "TypeError", "string" },
  { "pad with a number", function() return v3():pad(1) end, "TypeError", "pad" },
  { "linspace of a string", function() return cell.linspace("a", 1, 3) end, "TypeError", "string" },
  { "full_like with a string value", function() return cell.full_like(v3(), "x") end, "TypeError", "string" },
  { "randint with a fractional bound", function() return cell.randint(0.5, 2, { 2 }) end, "TypeError", "0.5" },
  { "gather with a table index", function() return m23():gather(1, { { 1 } }) end, "TypeError", "Tensor", "table" },
  { "matmul of a number", function() return m23():matmul(2) end, "TypeError", "Tensor", "number" },

  -- out-of-range indices and dims: IndexError
  { "v[4] of size 3", function() return v3()[4] end, "IndexError", "4", "3" },
  { "v[0] (indices count from 1)", function() return v3()[0] end, "IndexError", "0" },
  { "v[-4] of size 3", function() return v3()[-4] end, "IndexError", "-4", "3" },
  { "m[3] of a [2, 3] tensor", function() return m23()[3] end, "IndexError", "3", "2" },
  { "m[{1, 4}]", function() return m23()[{ 1, 4 }] end, "IndexError", "4", "3" },
  { "m[{1, 0}]", function() return m23()[{ 1, 0 }] end, "IndexError", "0" },
  { "too many indices", function() return m23()[{ 1, 2, 3 }] end, "IndexError", "too many" },
  { "indexing a 0-D tensor", function() return cell.tensor(1)[1] end, "IndexError", "0-D" },
  { "v[4] = 1", function() local t = v3(); t[4] = 1 end, "IndexError", "4" },
  { "m[{3, 1}] = 1", function() local t = m23(); t[{ 3, 1 }] = 1 end, "IndexError", "3" },
  { "sum(3) of a 2-D tensor", function() return m23():sum(3) end, "IndexError", "3" },
  { "sum(0) (dims count from 1)", function() return m23():sum(0) end, "IndexError", "0" },
  { "sum(-3) of a 2-D tensor", function() return m23():sum(-3) end, "IndexError", "-3" },
  { "sum({1, 3})", function() return m23():sum({ 1, 3 }) end, "IndexError", "3" },
  { "mean{dim = 5}", function() return m23():mean { dim = 5 } end, "IndexError", "5" },
  { "max(3)", function() return m23():max(3) end, "IndexError", "3" },
  { "argmax(-3)", function() return m23():argmax(-3) end, "IndexError", "-3" },
  { "var(3)", function() return m23():var(3) end, "IndexError", "3" },
  { "norm(2, 3)", function() return m23():norm(2, 3) end, "IndexError", "3" },
  { "cumsum(3)", function() return m23():cumsum(3) end, "IndexError", "3" },
  { "transpose(1, 3)", function() return m23():transpose(1, 3) end, "IndexError", "3" },
  { "permute(1, 3)", function() return m23():permute(1, 3) end, "IndexError", "3" },
  { "size(3)", function() return m23():size(3) end, "IndexError", "3" },
  { "stride(0)", function() return m23():stride(0) end, "IndexError", "0" },
  { "squeeze(3)", function() return m23():squeeze(3) end, "IndexError", "3" },
  { "unsqueeze(4) of a 2-D tensor", function() return m23():unsqueeze(4) end, "IndexError", "4" },
  { "flatten(1, 3)", function() return m23():flatten(1, 3) end, "IndexError", "3" },
  { "select(1, 3)", function() return m23():select(1, 3) end, "IndexError", "3", "2" },
  { "select(3, 1)", function() return m23():select(3, 1) end, "IndexError", "3" },
  { "narrow(2, 2, 5)", function() return m23():narrow(2, 2, 5) end, "IndexError", "5" },
  { "narrow(2, 5, 1)", function() return m23():narrow(2, 5, 1) end, "IndexError", "5" },
  { "cat along dim 3 of 2-D tensors", function() return cell.cat({ m23(), m23() }, 3) end, "IndexError", "3" },
  { "stack along dim 4 of 2-D tensors", function() return cell.stack({ m23(), m23() }, 4) end, "IndexError", "4" },
  { "gather index 3 in a dim of size 2", function() return m23():gather(1, i64({ { 1, 3, 1 } })) end, "IndexError", "3" },
  { "gather index 0 (indices count from 1)", function() return m23():gather(2, i64({ { 0 } })) end, "IndexError", "0" },
  { "gather along dim 3", function() return m23():gather(3, i64({ { 1 } })) end, "IndexError", "3" },
  { "index_select index 4 of size 3", function() return m23():index_select(2, i64({ 1, 4 })) end, "IndexError", "4" },
  { "index_select index 0", function() return m23():index_select(1, i64({ 0 })) end, "IndexError", "0" },
  { "scatter index 3 in a dim of size 2", function() return m23():scatter(1, i64({ { 3 } }), m23()) end, "IndexError", "3" },
  { "scatter index 0", function() return m23():scatter(2, i64({ { 0 } }), m23()) end, "IndexError", "0" },
  { "repeat_interleave along dim 3", function() return m23():repeat_interleave(2, 3) end, "IndexError", "3" },

  -- ragged and non-numeric nested tables
  { "a ragged table", function() return cell.tensor({ { 1, 2 }, { 3 } }) end, "ValueError", "ragged" },
  { "a row where a table was expected", function() return cell.tensor({ { 1, 2 }, 3 }) end, "ValueError", "ragged" },
  { "a table where a number was expected", function() return cell.tensor({ 1, { 2 } }) end, "ValueError", "ragged" },
  { "a ragged 3-D table", function() return cell.tensor({ { { 1 } }, { { 1, 2 } } }) end, "ValueError", "ragged" },
  { "an empty row then a full one", function() return cell.tensor({ {}, { 1 } }) end, "ValueError", "ragged" },

  -- negative sizes: ValueError naming the size
  { "zeros({2, -1})", function() return cell.zeros({ 2, -1 }) end, "ValueError", "-1" },
  { "ones({-3})", function() return cell.ones({ -3 }) end, "ValueError", "-3" },
  { "full({-1}, 2)", function() return cell.full({ -1 }, 2) end, "ValueError", "-1" },
  { "empty({-5})", function() return cell.empty({ -5 }) end, "ValueError", "-5" },
  { "rand({-1})", function() return cell.rand({ -1 }) end, "ValueError", "-1" },
  { "randn({3, -2})", function() return cell.randn({ 3, -2 }) end, "ValueError", "-2" },
  { "eye(-1)", function() return cell.eye(-1) end, "ValueError", "-1" },
  { "linspace with -2 points", function() return cell.linspace(0, 1, -2) end, "ValueError", "-2" },
  { "tile({-1})", function() return v3():tile({ -1 }) end, "ValueError", "-1" },
  { "repeat_interleave(-1)", function() return v3():repeat_interleave(-1) end, "ValueError", "-1" },

  -- sizes that cannot be allocated: MemoryError
  { "zeros({1e6, 1e6, 1e3})", function() return cell.zeros({ 1e6, 1e6, 1e3 }) end, "MemoryError", "[1000000, 1000000, 1000]" },
  { "empty({2^31, 2^31, 2^31}) overflows the element count", function() return cell.empty({ 2 ^ 31, 2 ^ 31, 2 ^ 31 }) end, "ValueError", "shape [2147483648, 2147483648, 2147483648] is too large" },
  { "ones({1e15}, float64)", function() return cell.ones({ 1e15 }, cell.float64) end, "MemoryError", "1000000000000000" },
  { "arange(0, 1e15)", function() return cell.arange(0, 1e15) end, "MemoryError", "[1000000000000000]" },
  { "expand then contiguous of a huge broadcast", function() return cell.ones({ 1 }):expand({ 1e8, 1e8 }):contiguous() end, "MemoryError", "[100000000, 100000000]" },
}

describe("errors", function()
  for _, c in ipairs(cases) do
    it(c[1] .. " -> " .. c[3], function()
      expect_error(c[2], c[3], H.unpack(c, 4))
    end)
  end

  it("a failed allocation leaks nothing", function()
    collectgarbage()
    collectgarbage()
    local before = cell.memory_stats().in_use
    for _ = 1, 20 do
      pcall(cell.zeros, { 1e6, 1e6, 1e3 })
      pcall(function() return cell.ones({ 2, 3 }):matmul(cell.ones({ 4, 5 })) end)
      pcall(function() return cell.tensor({ { 1, 2 }, { 3 } }) end)
      pcall(function() return cell.tensor({ 1, 2, "x" }) end)
    end
    collectgarbage()
    collectgarbage()
    local after = cell.memory_stats().in_use
    assert.is_true(after <= before, ("in_use grew from %d to %d bytes"):format(before, after))
  end)

  it("a freed tensor says so", function()
    local t = v3()
    t:free()
    assert.are.equal("Tensor(freed)", tostring(t))
    expect_error(function() return t:sum() end, "RuntimeError", "freed")
    expect_error(function() return t + 1 end, "RuntimeError", "freed")
  end)

  it("errors inside pcall leave the arguments untouched", function()
    local a = m23()
    pcall(function() return a:add_(cell.ones({ 4 })) end)
    pcall(function() a[{ 1, 9 }] = 5 end)
    pcall(function() a[1] = "x" end)
    assert.are.same({ { 1, 2, 3 }, { 4, 5, 6 } }, a:totable())
  end)

  it("many errors in a row do not disturb later results", function()
    for i = 1, 500 do
      local ok = pcall(function() return cell.ones({ i % 6 + 2 }) + cell.ones({ 8 }) end)
      assert.is_false(ok)
    end
    H.still_works()
    assert.are.same({ 2, 2 }, (cell.ones({ 2 }) + cell.ones({ 2 })):totable())
  end)
end)
