-- summary_spec.lua - cell.nn.summary and Cell:summary: the rows (each
-- cell, indented by depth, with its output shape and own parameter counts)
-- and totals counted by hand, several inputs, a shared parameter counted
-- once, the training flags put back, and bad arguments.
local H = require "helpers"
local cell = H.cell
local nn = cell.nn

local function err(fn, ...) return H.caller_error("summary_spec%.lua", fn, ...) end

local function lines(s)
  local out = {}
  for l in s:gmatch("([^\n]*)\n") do out[#out + 1] = l end
  return out
end

--- The cells of a row: label, shape, params, trainable.
local function row(l)
  local label, shape, p, t = l:match("^(%s*%S.-)%s%s+(%S.-)%s%s+([%d,]+)%s+([%d,]+)$")
  return { label, shape, p, t }
end

describe("cell.nn.summary", function()
  it("lists each cell with its output shape and parameter counts, then the totals", function()
    cell.set_seed(1)
    local net = nn.SequentialCell { nn.SequentialCell { nn.Dense(3, 40), nn.ReLU() }, nn.Dense(40, 2) }
    net[2].bias.requires_grad = false
    net:set_train(true)
    local text = nn.summary(net, { 5, 3 }, { print = false })
    local l = lines(text)
    assert.are.equal(13, #l)
    assert.is_truthy(l[1]:find("^%-+$"))
    assert.is_truthy(l[2]:find("^Layer %(type%)%s+Output Shape%s+Param #%s+Trainable #$"), l[2])
    assert.is_truthy(l[3]:find("^=+$"))
    assert.are.same({ "(SequentialCell)", "(5, 2)", "0", "0" }, row(l[4]))
    assert.are.same({ "  0 (SequentialCell)", "(5, 40)", "0", "0" }, row(l[5]))
    assert.are.same({ "    0.0 (Dense)", "(5, 40)", "160", "160" }, row(l[6])) -- 3*40 + 40
    assert.are.same({ "    0.1 (ReLU)", "(5, 40)", "0", "0" }, row(l[7]))
    assert.are.same({ "  1 (Dense)", "(5, 2)", "82", "80" }, row(l[8]))       -- 40*2 + 2, bias frozen
    assert.is_truthy(l[9]:find("^=+$"))
    assert.are.equal("Total params: 242", l[10])
    assert.are.equal("Trainable params: 240", l[11])
    assert.are.equal("Non-trainable params: 2", l[12])
    assert.are.equal(l[1], l[13])
    assert.are.equal(#l[1], #l[2])
    -- the flags are put back, and nothing was recorded
    assert.is_true(net.training)
    assert.is_true(net[1][1].training)
    assert.are.equal(text, net:summary({ input_shape = { 5, 3 }, print = false }))
  end)

  it("separates thousands, takes several inputs and counts a shared parameter once", function()
    local Two = nn.Cell:extend("Two")
    function Two:init()
      self.a = nn.Dense(1000, 10)
      self.b = nn.Dense(1000, 10)
      self.b.weight = self.a.weight
    end
    function Two:construct(x, y) return self.a(x) + self.b(y), self.a(x) end
    local net = Two()
    local text = net:summary({ { 2, 1000 }, { 2, 1000 } }, { print = false })
    local l = lines(text)
    assert.are.same({ "(Two)", "[(2, 10), (2, 10)]", "0", "0" }, row(l[4]))
    assert.are.same({ "  a (Dense)", "(2, 10)", "10,010", "10,010" }, row(l[5]))
    assert.are.same({ "  b (Dense)", "(2, 10)", "10,010", "10,010" }, row(l[6]))
    assert.is_truthy(text:find("\nTotal params: 10,020\n", 1, true), text)
    -- an int64 input through dtype, and an uncalled cell shown with "-"
    local Emb = nn.Cell:extend("Emb")
    function Emb:init()
      self.e = nn.Embedding(10, 4)
      self.unused = nn.Dense(4, 4)
    end
    function Emb:construct(x) return self.e(x) end
    local t = lines(nn.summary(Emb(), { 3 }, { dtype = cell.int64, print = false }))
    assert.are.same({ "  e (Embedding)", "(3, 4)", "40", "40" }, row(t[5]))
    assert.are.same({ "  unused (Dense)", "-", "20", "20" }, row(t[6]))
  end)

  it("prints the table unless print = false", function()
    local old = io.write
    local got = {}
    io.write = function(...) for _, s in ipairs { ... } do got[#got + 1] = s end end
    local ok, text = pcall(function() return nn.Dense(2, 2):summary({ 1, 2 }) end)
    io.write = old
    assert.is_true(ok, text)
    assert.are.equal(text, table.concat(got))
    assert.is_truthy(text:find("(Dense)", 1, true))
  end)

  it("names bad arguments and a failing forward, leaving no hook behind", function()
    local net = nn.Dense(3, 2)
    assert.are.equal("TypeError: For 'summary', the 'net' must be a Cell, but got number.", err(function() nn.summary(3, { 1 }) end))
    assert.are.equal("TypeError: For 'summary', the 'input_shape' is missing: give the shape of one input, such as {1, 3, 32, 32}.",
      err(function() net:summary() end))
    assert.are.equal("ValueError: For 'summary', the 'input_shape' must be a shape (a list of integers >= 0), a list of "
      .. "shapes or Tensors, but got a table of other values.", err(function() net:summary({ 1.5, 3 }) end))
    assert.are.equal("TypeError: For 'summary', the 'dtype' must be a dtype, but got string.",
      err(function() net:summary({ 1, 3 }, { dtype = "float" }) end))
    local msg = err(function() net:summary({ 1, 4 }) end)
    assert.is_truthy(msg:find("^ValueError: For 'Dense'"), msg)
    local calls = 0
    net:register_forward_hook(function() calls = calls + 1 end)
    net(cell.ones({ 1, 3 }))
    assert.are.equal(1, calls)
    H.still_works()
  end)
end)
