-- rnn_float32_spec.lua - the float32 time loops of nn.RNN (tanh), LSTM
-- and GRU (src/ops/rnn.c, whose float tanh is a rational approximation)
-- against the float64 loops on the same weights and inputs, at a
-- tolerance a few float32 roundings wide (tighter than the fixture specs
-- of rnn_spec.lua); and tanh itself, read through a one-unit RNN, against
-- Lua's math over the whole range (tiny, moderate, saturated, infinite).
local H = require "helpers"
local cell = H.cell
local nn = cell.nn

local f32, f64 = cell.float32, cell.float64

local function pair(kind, opts)
  cell.set_seed(21)
  local o64 = { dtype = f64 }
  for k, v in pairs(opts or {}) do o64[k] = v end
  local n64 = nn[kind](6, 12, o64)
  local o32 = { dtype = f32 }
  for k, v in pairs(opts or {}) do o32[k] = v end
  local n32 = nn[kind](6, 12, o32)
  for _, p in ipairs(n64:trainable_params()) do
    local name = p.name:match("([^%.]+)$")
    n32[name]:set_data(p:astype(f32))
  end
  return n64, n32
end

describe("float32 recurrent loops", function()
  for _, kind in ipairs { "RNN", "LSTM", "GRU" } do
    it(kind .. " matches the float64 loop to float32 rounding, forward and backward", function()
      local n64, n32 = pair(kind)
      local x = cell.randn({ 9, 3, 6 }, f64) * 2
      local y64, y32 = (n64(x)), (n32(x:astype(f32)))
      H.assert_shape(y32, { 9, 3, 12 })
      H.assert_close(y32, y64:totable(), 2e-6, "output")
      local r = cell.randn({ 9, 3, 12 }, f64)
      local g64 = cell.grad(function(xx) return ((n64(xx)) * r):sum() end)(x)
      local g32 = cell.grad(function(xx) return ((n32(xx)) * r:astype(f32)):sum() end)(x:astype(f32))
      H.assert_close(g32, g64:totable(), 2e-5, "gradient of x")
    end)
  end

  it("reads tanh to within a few float32 roundings everywhere", function()
    local net = nn.RNN(1, 1, { dtype = f32 })
    net.weight_ih_l0:set_data(cell.ones({ 1, 1 }))
    net.weight_hh_l0:set_data(cell.zeros({ 1, 1 }))
    net.bias_ih_l0:set_data(cell.zeros({ 1 }))
    net.bias_hh_l0:set_data(cell.zeros({ 1 }))
    local xs = { 0, 1e-39, -1e-36, 1e-30, -3e-5, 3.9e-4, 4.1e-4, 0.01, -0.3, 0.5493, 1, -2.5, 4, 5.759, 7.9, -8, 9.5, 20, 1e30,
      math.huge, -math.huge }
    local want = {}
    for i, v in ipairs(xs) do
      local e = v == math.huge and 1 or v == -math.huge and -1 or (math.exp(2 * v) - 1) / (math.exp(2 * v) + 1)
      if math.abs(v) < 1e-3 then e = v - v * v * v / 3 end
      if math.abs(v) > 20 then e = v > 0 and 1 or -1 end
      want[i] = { { e } }
    end
    local y = (net(cell.tensor(xs, f32):reshape({ #xs, 1, 1 })))
    local got = y:totable()
    for i, v in ipairs(xs) do
      local e, g = want[i][1][1], got[i][1][1]
      local scale = math.max(math.abs(e), 1e-38)
      assert.is_true(math.abs(g - e) <= 8 * 2 ^ -24 * scale + 1e-45,
        ("tanh(%g): expected %.9g, got %.9g"):format(v, e, g))
    end
  end)
end)
