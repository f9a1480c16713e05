-- transformer_spec.lua - nn.TransformerEncoderLayer, TransformerEncoder,
-- TransformerDecoderLayer, TransformerDecoder and Transformer against
-- torch.nn's with the same weights copied by name (fixtures from
-- spec/fixtures/gen_attention.py): outputs and gradients for inputs and
-- every parameter, masks, key padding, norm_first, batch_first both ways,
-- activations; parameter names, copies of the given layer, and misuse.
local H = require "helpers"
local cell = H.cell
local nn = cell.nn
local FX = require "fixtures.attention_fixtures"
local LC = require "helpers.layer_case"

local f64 = cell.float64

local function with_dtype(o)
  local t = {}
  for k, v in pairs(o) do t[k] = v end
  t.dtype = f64
  return t
end

local function build(c)
  local o = with_dtype(c.opts)
  if c.cls == "TransformerEncoderLayer" or c.cls == "TransformerDecoderLayer" then
    return nn[c.cls](c.d_model, c.nhead, o)
  elseif c.cls == "TransformerEncoder" then
    local norm = c.norm and nn.LayerNorm({ c.d_model }, { epsilon = 1e-5, dtype = f64 }) or nil
    return nn.TransformerEncoder(nn.TransformerEncoderLayer(c.d_model, c.nhead, o), c.num_layers, norm)
  elseif c.cls == "TransformerDecoder" then
    return nn.TransformerDecoder(nn.TransformerDecoderLayer(c.d_model, c.nhead, o), c.num_layers)
  end
  o.d_model, o.nhead = c.d_model, c.nhead
  o.num_encoder_layers, o.num_decoder_layers = c.num_encoder_layers, c.num_decoder_layers
  return nn.Transformer(o)
end

describe("nn Transformer layers", function()
  for _, c in ipairs(FX.transformer) do
    it("match torch.nn (" .. c.name .. ")", function()
      LC.check(build(c.ctor), c, 1e-8)
    end)
  end

  it("copy the given layer num_layers times, starting from its values, with PyTorch's names", function()
    local layer = nn.TransformerEncoderLayer(8, 2, { dim_feedforward = 16 })
    local enc = nn.TransformerEncoder(layer, 3)
    local names = {}
    for n in enc:parameters_and_names() do names[#names + 1] = n end
    assert.are.equal(36, #names)
    assert.are.equal("layers.0.self_attn.in_proj_weight", names[1])
    assert.are.equal("layers.2.norm2.beta", names[36])
    H.assert_close(enc.layers[3].linear1.weight, layer.linear1.weight:totable(), 0)
    -- copies, not the same Parameters
    cell.no_grad(function() enc.layers[1].linear1.weight:fill_(0) end)
    assert.is_true(layer.linear1.weight:abs():sum():item() > 0)
    assert.is_true(enc.layers[2].linear1.weight:abs():sum():item() > 0)
  end)

  it("take an activation function or Cell", function()
    local x = cell.randn({ 3, 2, 8 })
    local a = nn.TransformerEncoderLayer(8, 2, { dim_feedforward = 16, activation = function(t) return t:relu() end })
    local b = nn.TransformerEncoderLayer(8, 2, { dim_feedforward = 16 })
    LC.load(b, (function()
      local t = {}
      for n, p in a:parameters_and_names() do t[n] = p:totable() end
      return t
    end)())
    H.assert_close(a(x), b(x):totable(), 1e-6)
    local c = nn.TransformerEncoderLayer(8, 2, { dim_feedforward = 16, activation = nn.GELU() })
    assert.are.same({ 3, 2, 8 }, c(x).shape)
  end)

  it("make the causal mask with generate_square_subsequent_mask", function()
    local m = nn.Transformer.generate_square_subsequent_mask(3)
    H.assert_close(m, { { 0, -math.huge, -math.huge }, { 0, 0, -math.huge }, { 0, 0, 0 } }, 0)
  end)

  it("train: a Transformer's loss falls under AdamW-free plain SGD steps", function()
    cell.set_seed(1)
    local t = nn.Transformer({ d_model = 8, nhead = 2, num_encoder_layers = 1, num_decoder_layers = 1,
      dim_feedforward = 16, dropout = 0, batch_first = true })
    local src, tgt = cell.randn({ 4, 5, 8 }), cell.randn({ 4, 3, 8 })
    local params = t:trainable_params()
    local function loss() return (t(src, tgt) - tgt):square():mean() end
    local first = loss():item()
    for _ = 1, 30 do
      local g = cell.grad(loss, { weights = params })()
      cell.no_grad(function()
        for i, p in ipairs(params) do p:sub_(g[i] * 0.05) end
      end)
    end
    assert.is_true(loss():item() < first * 0.8, "loss " .. first .. " -> " .. loss():item())
  end)

  describe("errors", function()
    it("in the constructors", function()
      H.expect_error(function() nn.TransformerEncoderLayer(10, 3) end, "ValueError", "divisible")
      H.expect_error(function() nn.TransformerEncoderLayer(8, 2, { activation = "tanh" }) end, "ValueError",
        "'activation' must be 'relu', 'gelu'")
      H.expect_error(function() nn.TransformerEncoderLayer(8, 2, { dropout = 2 }) end, "ValueError", "dropout")
      H.expect_error(function() nn.TransformerEncoderLayer(8, 2, { layer_norm_eps = 0 }) end, "ValueError",
        "layer_norm_eps")
      H.expect_error(function() nn.TransformerEncoderLayer(8, 2, { norm_first = "yes" }) end, "TypeError",
        "norm_first")
      H.expect_error(function() nn.TransformerEncoderLayer(8, 2, { nheads = 2 }) end, "TypeError", "nheads")
      H.expect_error(function() nn.TransformerEncoder(nn.Dense(2, 2), 2) end, "TypeError",
        "must be a TransformerEncoderLayer")
      H.expect_error(function() nn.TransformerDecoder(nn.TransformerEncoderLayer(8, 2), 2) end, "TypeError",
        "must be a TransformerDecoderLayer")
      H.expect_error(function() nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2), 0) end, "ValueError",
        "num_layers")
      H.expect_error(function() nn.TransformerEncoder(nn.TransformerEncoderLayer(8, 2), 1, 3) end, "TypeError",
        "norm")
    end)
    it("in the forward", function()
      local t = nn.Transformer({ d_model = 8, nhead = 2, num_encoder_layers = 1, num_decoder_layers = 1,
        dim_feedforward = 16 })
      H.expect_error(function() t(cell.randn({ 5, 2, 8 }), cell.randn({ 3, 3, 8 })) end, "RuntimeError",
        "batch number")
      H.expect_error(function() t(cell.randn({ 5, 2, 6 }), cell.randn({ 3, 2, 6 })) end, "RuntimeError",
        "d_model (8)")
      H.expect_error(function() t(cell.randn({ 5, 2, 8 }), cell.randn({ 3, 2, 8 }), { src_mask = cell.zeros({ 4, 4 }) })
      end, "ValueError", "attn_mask must have shape")
      local l = nn.TransformerEncoderLayer(8, 2, { dim_feedforward = 16 })
      H.expect_error(function() l(cell.randn({ 5, 2, 8 }), { mask = 1 }) end, "TypeError", "mask")
      H.expect_error(function() l("x") end, "TypeError", "src")
    end)
  end)
end)
