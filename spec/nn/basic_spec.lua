-- basic_spec.lua - cell.nn.Flatten and cell.nn.Embedding: 1-based
-- dimensions and ids, MindSpore's parameter name, default initialiser and
-- extend_repr, padding_idx, lookups checked by hand, and every error.
local H = require "helpers"
local cell = H.cell
local nn = cell.nn

local function err(fn, ...) return H.caller_error("basic_spec%.lua", fn, ...) end

describe("nn.Flatten", function()
  local x = cell.arange(1, 25):reshape({ 2, 3, 4 })

  it("keeps dimension 1 (the batch) by default, as MindSpore's start_dim = 1", function()
    local y = nn.Flatten()(x)
    H.assert_shape(y, { 2, 12 })
    H.assert_close(y[2], H.flatten(x[2]:totable()))
    assert.are.equal("Flatten()", tostring(nn.Flatten()))
    assert.are.same({}, nn.Flatten():state_dict():keys())
  end)

  it("takes 1-based and negative start_dim and end_dim", function()
    H.assert_shape(nn.Flatten(1)(x), { 24 })
    H.assert_shape(nn.Flatten(1, 2)(x), { 6, 4 })
    H.assert_shape(nn.Flatten { start_dim = -2 }(x), { 2, 12 })
    H.assert_shape(nn.Flatten(2, -2)(x), { 2, 3, 4 })
    H.assert_shape(nn.Flatten(1)(cell.tensor(5)), { 1 })
    H.assert_close(nn.Flatten(1, -1)(x), H.flatten(x:totable()))
  end)

  it("gives a 0-D or 1-D input back as 1-D with the default dimensions, as MindSpore's ops.flatten", function()
    -- MindSpore: start_dim == 1 and end_dim == -1 (2 and -1 here) on rank 0 or 1 is reshape(input, (-1,))
    local v = cell.tensor({ 1, 2, 3 })
    local y = nn.Flatten()(v)
    H.assert_shape(y, { 3 })
    H.assert_close(y, { 1, 2, 3 })
    H.assert_shape(nn.Flatten { start_dim = 2, end_dim = -1 }(v), { 3 })
    y = nn.Flatten()(cell.tensor(5))
    H.assert_shape(y, { 1 })
    H.assert_close(y, { 5 })
    -- other dimensions are checked against max(rank, 1), and the result is 1-D
    H.assert_shape(nn.Flatten(1, -1)(v), { 3 })
    H.assert_shape(nn.Flatten(-1)(cell.tensor(5)), { 1 })
    H.expect_error(function() nn.Flatten(3)(v) end, "ValueError", "must be in range [-1, -1] or [1, 1] for an input "
      .. "of shape (3,)")
    H.expect_error(function() nn.Flatten(2, 1)(v) end, "ValueError", "'start_dim' (2) and 'end_dim' (1)")
  end)

  it("rejects bad dimensions, naming the input's shape", function()
    assert.are.equal("ValueError: For 'Flatten', 'start_dim' (4) and 'end_dim' (-1) must be in range [-3, -1] or "
      .. "[1, 3] for an input of shape (2, 3, 4).", err(function() local y = nn.Flatten(4)(x) return y end))
    H.expect_error(function() nn.Flatten(3, 2)(x) end, "ValueError", "'start_dim' (3) must come before 'end_dim' (2)")
    H.expect_error(function() nn.Flatten(0) end, "ValueError", "1-based")
    H.expect_error(function() nn.Flatten(1.5) end, "TypeError", "'start_dim' must be an integer, but got 1.5")
    H.expect_error(function() nn.Flatten(1, "x") end, "TypeError", "'end_dim' must be an integer, but got string")
    H.expect_error(function() nn.Flatten { start = 1 } end, "TypeError", "unexpected keyword argument 'start'")
  end)
end)

describe("nn.Embedding", function()
  it("has embedding_table {vocab, size} drawn from Normal(0.01) by default", function()
    cell.set_seed(5)
    local e = nn.Embedding(200, 50)
    assert.are.same({ 200, 50 }, e.embedding_table.shape)
    assert.are.equal("embedding_table", e.embedding_table.name)
    assert.are.equal("Float32", tostring(e.embedding_table.dtype))
    local std = e.embedding_table:std():item()
    assert.is_true(std > 0.009 and std < 0.011, "std " .. std)
    assert.are.same({ "embedding_table" }, e:state_dict():keys())
  end)

  it("prints MindSpore's extend_repr text", function()
    assert.are.equal("Embedding(vocab_size=4, embedding_size=2, use_one_hot=false, embedding_table=Parameter "
      .. "(name=embedding_table, shape=(4, 2), dtype=Float32, requires_grad=true), dtype=Int32, padding_idx=nil)",
      tostring(nn.Embedding(4, 2)))
    assert.truthy(nn.Embedding(4, 2, { padding_idx = 2, use_one_hot = true, dtype = cell.int64 }):extend_repr()
      :find("use_one_hot=true, .*dtype=Int64, padding_idx=2$"))
  end)

  it("zeroes the padding_idx row (1-based) when the table is made", function()
    local e = nn.Embedding(3, 2, { embedding_table = "ones", padding_idx = 2 })
    H.assert_close(e.embedding_table, { { 1, 1 }, { 0, 0 }, { 1, 1 } })
  end)

  describe("lookup", function()
    local table_ = cell.tensor({ { 1, 2 }, { 3, 4 }, { 5, 6 } })

    it("maps 1-based ids of any shape to rows", function()
      local e = nn.Embedding(3, 2, { embedding_table = table_ })
      H.assert_close(e(cell.tensor({ 3, 1 }, cell.int32)), { { 5, 6 }, { 1, 2 } })
      local y = e(cell.tensor({ { 1, 2 }, { 2, 3 } }, cell.int64))
      H.assert_shape(y, { 2, 2, 2 })
      H.assert_close(y[2], { { 3, 4 }, { 5, 6 } })
      local one_hot = nn.Embedding(3, 2, { embedding_table = table_, use_one_hot = true })
      H.assert_close(one_hot(cell.tensor({ 2 }, cell.int32)), { { 3, 4 } })
    end)

    it("passes gradients to the table rows that were used", function()
      local e = nn.Embedding(3, 2, { embedding_table = table_ })
      local g = cell.grad(function() return e(cell.tensor({ 1, 3, 1 }, cell.int32)):sum() end, nil,
        { e.embedding_table })()
      H.assert_close(g[1], { { 2, 2 }, { 0, 0 }, { 1, 1 } })
    end)

    it("rejects float ids and ids outside 1..vocab_size", function()
      local e = nn.Embedding(3, 2)
      assert.are.equal("TypeError: For 'Embedding', the ids must be an integer Tensor, but got a Float32 Tensor.",
        err(function() local y = e(cell.tensor({ 1.0 })) return y end))
      H.expect_error(function() e(cell.tensor({ 4 }, cell.int32)) end, "IndexError", "4")
      H.expect_error(function() e(cell.tensor({ 0 }, cell.int32)) end, "IndexError", "0")
      H.expect_error(function() e(3) end, "TypeError", "number")
    end)
  end)

  it("rejects bad arguments", function()
    H.expect_error(function() nn.Embedding(0, 2) end, "ValueError", "'vocab_size' must be a positive integer")
    H.expect_error(function() nn.Embedding(2, "a") end, "TypeError", "'embedding_size'")
    H.expect_error(function() nn.Embedding(2, 2, 1) end, "TypeError", "'use_one_hot' must be a boolean")
    H.expect_error(function() nn.Embedding(2, 2, { dtype = cell.float32 }) end, "TypeError",
      "'dtype' (of the ids) must be an integer dtype, but got Float32")
    assert.are.equal("ValueError: For 'Embedding', the 'padding_idx' must be in range [1, 2] (1-based), but got 0.",
      err(function() local e = nn.Embedding(2, 2, { padding_idx = 0 }) return e end))
    H.expect_error(function() nn.Embedding(2, 2, { padding_idx = 1.5 }) end, "TypeError", "'padding_idx'")
    H.expect_error(function() nn.Embedding(2, 2, { embedding_table = cell.ones({ 2, 3 }) }) end, "ValueError",
      "'embedding_table' shape must be (2, 2), but got (2, 3)")
    H.expect_error(function() nn.Embedding(2, 2, { embedding_table = "nope" }) end, "ValueError", "'nope'")
  end)
end)
