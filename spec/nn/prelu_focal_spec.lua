-- prelu_focal_spec.lua - two of MindSpore's details, by hand: nn.PReLU's
-- slope is the attribute w holding a Parameter named "a" (renamed to its
-- attribute path inside a network), and nn.FocalLoss with reduction "none"
-- returns MindSpore's shapes, {N} for class-id labels (the mean over the
-- spatial positions) and {N, C} for per-class targets.
local cell = require "cell"
local nn = cell.nn

local f64 = cell.float64
local LN2 = math.log(2)

local function close(t, want, what)
  local got = t:totable()
  local function walk(x, y, path)
    if type(y) == "table" then
      assert.are.equal(#y, #x, what .. path .. ": length")
      for i = 1, #y do walk(x[i], y[i], path .. "[" .. i .. "]") end
    else
      assert.is_true(math.abs(x - y) < 1e-12, ("%s%s: got %.17g, expected %.17g"):format(what, path, x, y))
    end
  end
  walk(got, want, "")
end

describe("nn.PReLU's Parameter", function()
  it("is the attribute w named a, and takes the attribute path in a network", function()
    local p = nn.PReLU(2, { 0.1, 0.2 })
    assert.are.equal("a", p.w.name)
    assert.are.same({ 2 }, p.w.shape)
    local Net = nn.Cell:extend("PReLUNet")
    function Net:init() self.act = nn.PReLU() end
    function Net:construct(x) return self.act(x) end
    local names = {}
    for name, q in Net():parameters_and_names() do names[#names + 1] = name .. "=" .. q.name end
    assert.are.same({ "act.w=act.w" }, names)
  end)
end)

describe("nn.FocalLoss with reduction none", function()
  -- uniform logits over 2 classes: p = 1/2, log p = -ln 2; with gamma 2 the
  -- loss of a class is -(1/2)^2 * (-ln 2) = ln(2) / 4
  it("gives {N} for class ids with {N, C} logits", function()
    local l = nn.FocalLoss{ reduction = "none" }(cell.zeros({ 3, 2 }, f64), cell.tensor({ { 1 }, { 2 }, { 2 } }, cell.int64))
    assert.are.same({ 3 }, l.shape)
    close(l, { LN2 / 4, LN2 / 4, LN2 / 4 }, "ids 2-D")
  end)

  it("gives {N} for class ids with {N, C, H, W} logits: the mean over H and W", function()
    -- sample 1: logits favour class 1 at one position (p = e/(e+1)) and are uniform at the other
    local logits = cell.zeros({ 2, 2, 1, 2 }, f64)
    logits[1][1][1][1] = 1
    local labels = cell.ones({ 2, 1, 1, 2 }, cell.int64)
    local l = nn.FocalLoss{ reduction = "none" }(logits, labels)
    assert.are.same({ 2 }, l.shape)
    local p = math.exp(1) / (math.exp(1) + 1)
    local first = -(1 - p) ^ 2 * math.log(p)
    close(l, { (first + LN2 / 4) / 2, LN2 / 4 }, "ids 4-D")
  end)

  it("gives {N, C} for per-class targets, weighted per class", function()
    local targets = cell.tensor({ { 1, 0 }, { 0.5, 0.5 } }, f64)
    local l = nn.FocalLoss{ reduction = "none" }(cell.zeros({ 2, 2 }, f64), targets)
    assert.are.same({ 2, 2 }, l.shape)
    close(l, { { LN2 / 4, 0 }, { LN2 / 8, LN2 / 8 } }, "per-class")
    local w = nn.FocalLoss{ weight = cell.tensor({ 1, 3 }, f64), reduction = "none" }
    close(w(cell.zeros({ 2, 2 }, f64), targets), { { LN2 / 4, 0 }, { LN2 / 8, 3 * LN2 / 8 } }, "weighted")
    local t4 = cell.zeros({ 1, 2, 2, 2 }, f64)
    t4[1][2]:fill_(1)
    local l4 = nn.FocalLoss{ reduction = "none" }(cell.zeros({ 1, 2, 2, 2 }, f64), t4)
    assert.are.same({ 1, 2 }, l4.shape)
    close(l4, { { 0, LN2 / 4 } }, "per-class 4-D")
  end)

  it("reduces those by mean and sum", function()
    local x, y = cell.zeros({ 3, 2 }, f64), cell.tensor({ { 1 }, { 2 }, { 2 } }, cell.int64)
    close(nn.FocalLoss()(x, y), LN2 / 4, "mean")
    close(nn.FocalLoss{ reduction = "sum" }(x, y), 3 * LN2 / 4, "sum")
  end)
end)
