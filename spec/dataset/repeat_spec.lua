-- repeat_spec.lua - repeat_() / repeat_(-1), the endless repeat
-- (lua/cell/dataset/pipeline.lua): iterators that never end, take(n)
-- after it ending, get_dataset_size and get_repeat_count as MindSpore's,
-- Model-style epochs from one stream, and the errors.
local H = require "helpers"
local cell = H.cell
local D = cell.dataset

local function err(fn, ...) return H.caller_error("repeat_spec%.lua", fn, ...) end

local function three() return D.TensorDataset({ cell.arange(1, 4, 1, cell.int64), column_names = { "x" } }) end

--- The first n values of an iterator (breaking out of it).
local function first_n(it, n)
  local out = {}
  for x in it do
    out[#out + 1] = x:reshape({ -1 }):totable()[1]
    if #out == n then break end
  end
  return out
end

describe("repeat_ without a count (or -1)", function()
  it("repeats for ever: an iterator that does not end", function()
    assert.are.same({ 1, 2, 3, 1, 2, 3, 1, 2, 3, 1 }, first_n(three():repeat_():create_tuple_iterator(), 10))
    assert.are.same({ 1, 2, 3, 1, 2, 3, 1 }, first_n(three():repeat_(-1):create_tuple_iterator(), 7))
    -- 1000 rows from 3: the loop only ends by the break
    local n = 0
    for _ in three():repeat_():create_tuple_iterator() do
      n = n + 1
      if n == 1000 then break end
    end
    assert.are.equal(1000, n)
  end)

  it("reports MindSpore's sizes: one pass, and a repeat count of -1", function()
    local r = three():repeat_()
    assert.are.equal(3, r:get_dataset_size())
    assert.are.equal(-1, r:get_repeat_count())
    assert.are.equal(-1, three():repeat_(2):repeat_():get_repeat_count())
    assert.are.equal(2, three():repeat_():batch(2):get_dataset_size())
  end)

  it("ends after take(n), which has n rows", function()
    local t = three():repeat_():take(8)
    assert.are.equal(8, t:get_dataset_size())
    local got = {}
    for x in t:create_tuple_iterator() do got[#got + 1] = x:item() end
    assert.are.same({ 1, 2, 3, 1, 2, 3, 1, 2 }, got)
    -- and a batch after it
    local b = three():repeat_():take(5):batch(2)
    local sizes = {}
    for x in b:create_tuple_iterator() do sizes[#sizes + 1] = x.shape[1] end
    assert.are.same({ 2, 2, 1 }, sizes)
  end)

  it("shuffles each repetition anew, the same way every run for a seed", function()
    D.config.set_seed(5)
    local a = first_n(three():shuffle(3):repeat_():create_tuple_iterator(), 12)
    local b = first_n(three():shuffle(3):repeat_():create_tuple_iterator(), 12)
    assert.are.same(a, b)
    for k = 0, 3 do
      local pass = { a[3 * k + 1], a[3 * k + 2], a[3 * k + 3] }
      table.sort(pass)
      assert.are.same({ 1, 2, 3 }, pass)
    end
    local differ = false
    for k = 1, 3 do differ = differ or a[3 * k + 1] ~= a[1] or a[3 * k + 2] ~= a[2] end
    assert.is_true(differ)
    D.config.set_seed(0)
  end)

  it("gives each(epoch) get_dataset_size() rows per epoch from one stream (how Model trains on it)", function()
    local r = three():repeat_():batch(2)
    local got = {}
    for e = 1, 3 do
      for x in r:each(e) do got[#got + 1] = table.concat(x:totable(), ",") end
      got[#got + 1] = "|"
    end
    assert.are.same({ "1,2", "3,1", "|", "2,3", "1,2", "|", "3,1", "2,3", "|" }, got)
    -- epoch 1 starts the stream again
    local again = {}
    for x in r:each(1) do again[#again + 1] = table.concat(x:totable(), ",") end
    assert.are.same({ "1,2", "3,1" }, again)
  end)

  it("trains a Model for whole epochs over it", function()
    local pulled = 0
    local x, y = cell.randn({ 6, 2 }), cell.randn({ 6, 1 })
    local ds = D.TensorDataset({ x, y }):map(function(v)
      pulled = pulled + 1
      return v
    end):repeat_():batch(3)
    local net = cell.nn.Dense(2, 1)
    local model = cell.train.Model(net, cell.nn.MSELoss(), cell.nn.SGD(net:trainable_params(), 0.01))
    model:train(3, ds, { progress = false })
    -- 3 epochs of 2 batches of 3 rows, and no more
    assert.are.equal(18, pulled)
  end)

  it("ends an endless repeat of nothing instead of spinning", function()
    local n = 0
    for _ in D.GeneratorDataset({}, { "x" }):repeat_():create_tuple_iterator() do n = n + 1 end
    assert.are.equal(0, n)
  end)

  it("refuses a count of 0 or below -1, and split of an endless dataset", function()
    assert.are.equal("ValueError: repeat_: count must be -1 (endless) or positive, but got 0",
      err(function() three():repeat_(0) end))
    assert.are.equal("ValueError: repeat_: count must be -1 (endless) or positive, but got -2",
      err(function() three():repeat_(-2) end))
    assert.are.equal("TypeError: repeat_: count must be an integer, but got 1.5", err(function() three():repeat_(1.5) end))
    assert.are.equal("ValueError: split: the dataset is endless (an endless repeat_ with no take after it); split "
      .. "needs its rows", err(function() three():repeat_():split({ 0.5, 0.5 }) end))
    assert.are.equal(2, #three():repeat_():take(4):split({ 2, 2 }))
  end)
end)
