-- to_float_spec.lua - Cell:to_float casting Parameters as well as inputs
-- (float32 masters, gradients through the cast), and optimizers taking
-- float16/bfloat16 Parameters with float32 master copies and state.
local H = require "helpers"
local cell = H.cell
local nn = cell.nn

local function err(fn, ...) return H.caller_error("to_float_spec%.lua", fn, ...) end

describe("Cell:to_float", function()
  it("makes a Dense compute in float16, weights included; the Parameters stay float32", function()
    local d = nn.Dense(2, 2, cell.tensor({ { 1, 2 }, { 3, 4 } }), cell.tensor({ 0.1, 0 }))
    assert.are.equal(d, d:to_float(cell.float16))
    local y = d(cell.tensor({ { 1, 0.5 } }))
    assert.are.equal(cell.float16, y.dtype)
    -- 1 + 1 + 0.1 = 2.1 -> 2.099609375 in float16; 3 + 2 = 5
    H.assert_close(y:astype(cell.float32), { { 2.099609375, 5 } }, 0)
    assert.are.equal(cell.float32, d.weight.dtype)
    assert.are.equal(cell.float32, d.bias.dtype)
    assert.is_true(d:get_flags().fp16)
  end)

  it("sends float32 gradients to the master Parameters through the cast", function()
    local d = nn.Dense(2, 1, cell.tensor({ { 1, 2 } }), cell.tensor({ 0 })):to_float(cell.bfloat16)
    local x = cell.tensor({ { 3, -1 }, { 0.5, 2 } })
    local g = cell.grad(function(v) return d(v):astype(cell.float32):sum() end, nil, d:trainable_params())(x)
    assert.are.equal(cell.float32, g[1].dtype)
    H.assert_close(g[1], { { 3.5, 1 } }, 0) -- sum of the rows of x
    H.assert_close(g[2], { 2 }, 0)
  end)

  it("reaches the cells below; a sub-cell may go back to float32", function()
    local seq = nn.SequentialCell({ nn.Dense(3, 4), nn.LayerNorm({ 4 }), nn.Dense(4, 2) })
    seq:to_float(cell.bfloat16)
    assert.are.equal(cell.bfloat16, seq(cell.randn({ 2, 3 })).dtype)
    seq[3]:to_float(cell.float32)
    assert.are.equal(cell.float32, seq(cell.randn({ 2, 3 })).dtype)
  end)

  it("reads the masters again after a call that raised", function()
    local d = nn.Dense(2, 2):to_float(cell.float16)
    assert.is_false(pcall(d, cell.ones({ 3, 5 })))
    assert.are.equal(cell.float32, d.weight.dtype)
    assert.are.equal(cell.float16, d(cell.ones({ 1, 2 })).dtype)
  end)

  it("names a dtype that is not a float16/bfloat16/float32", function()
    assert.are.equal("ValueError: For 'to_float', the argument 'dst_type' must be float32, float16 or bfloat16, "
      .. "but got Int32.", err(function() nn.Dense(1, 1):to_float(cell.int32) end))
  end)
end)

describe("optimizers with float16/bfloat16 Parameters", function()
  it("update them through a float32 master: SGD by hand", function()
    local p = cell.Parameter(cell.tensor({ 1, 2, 3 }):astype(cell.bfloat16), "weight")
    local opt = nn.SGD({ p }, 0.1)
    opt({ cell.tensor({ 1, 1, 1 }):astype(cell.bfloat16) })
    assert.are.equal(cell.bfloat16, p.dtype)
    -- 0.9, 1.9, 2.9 rounded to bfloat16
    H.assert_close(p:astype(cell.float32), { 0.8984375, 1.8984375, 2.90625 }, 0)
    assert.are.equal(p, opt.parameters[1])
  end)

  it("keep the small updates bfloat16 alone would round away", function()
    -- above 256 bfloat16 steps by 2, so 256 + 0.5 rounds back to 256 and a
    -- bfloat16-only update never moves; the float32 master goes 256.5, 257
    -- (a tie: to even, 256), 257.5, 258
    local p = cell.Parameter(cell.tensor({ 256 }):astype(cell.bfloat16), "w")
    local opt = nn.SGD({ p }, 1)
    local want = { 256, 256, 258, 258 }
    for i = 1, 4 do
      opt({ cell.tensor({ -0.5 }) })
      H.assert_close(p:astype(cell.float32), { want[i] }, 0, "step " .. i)
    end
  end)

  it("keep float32 state (Momentum, Adam) and a float16 Parameter's gradient may be float16", function()
    for _, make in ipairs({
      function(ps) return nn.Momentum(ps, 0.1, 0.9) end,
      function(ps) return nn.Adam(ps, 0.1) end,
    }) do
      local p = cell.Parameter(cell.tensor({ 1, -1 }):astype(cell.float16), "w")
      local q = cell.Parameter(cell.tensor({ 1, -1 }), "w")
      local o16, o32 = make({ p }), make({ q })
      for _ = 1, 3 do
        o16({ cell.tensor({ 0.5, 0.25 }):astype(cell.float16) })
        o32({ cell.tensor({ 0.5, 0.25 }) })
      end
      H.assert_close(p:astype(cell.float32), q:tolist(), 1e-3)
      for _, st in ipairs(o16:untrainable_params()) do
        if st.name ~= "global_step" and st.dtype.is_floating_point then assert.are.equal(cell.float32, st.dtype) end
      end
    end
  end)

  it("take a value written into the Parameter between steps (a loaded checkpoint)", function()
    local p = cell.Parameter(cell.tensor({ 1, 2 }):astype(cell.bfloat16), "w")
    local opt = nn.SGD({ p }, 1)
    opt({ cell.tensor({ 0.5, 0.5 }) })
    H.assert_close(p:astype(cell.float32), { 0.5, 1.5 }, 0)
    p:set_data(cell.tensor({ 10, 20 }):astype(cell.bfloat16))
    opt({ cell.tensor({ 1, 1 }) })
    H.assert_close(p:astype(cell.float32), { 9, 19 }, 0)
  end)

  it("still refuse integer Parameters", function()
    assert.are.equal("TypeError: For 'SGD', the parameter 'n' is Int32; optimizers update float32, float64, "
      .. "float16 and bfloat16 parameters.",
      err(function() nn.SGD({ cell.Parameter(cell.tensor({ 1 }, cell.int32), "n") }, 0.1) end))
  end)
end)
