-- initializer_structured_spec.lua - the structured initializers of
-- cell.init (MindSpore 2.x's Orthogonal, Dirac, Sparse, VarianceScaling):
-- checked by structure (W W^T = gain^2 I, a Dirac kernel's convolution is
-- the identity, the count of zeros in each column) and statistically (the
-- variance scale / n and the bounds), usable as classes and by name in
-- Dense and Conv weight_init, with their exact error texts.
local H = require "helpers"
local cell = require "cell"
local nn = cell.nn
local I = cell.init

local function err(fn)
  local msg = H.caller_error("initializer_structured_spec%.lua", fn)
  H.still_works()
  return msg
end

--- The largest |m - k * I| for a square m.
local function off_identity(m, k)
  return (m:astype(cell.float64) - cell.eye(m.shape[1], cell.float64) * k):abs():max():item()
end

describe("cell.init.Orthogonal", function()
  it("has rows (or columns) orthonormal times gain: W W^T = gain^2 I for rows <= cols", function()
    cell.set_seed(3)
    for _, c in ipairs({ { { 3, 7 }, 1 }, { { 7, 3 }, 1 }, { { 16, 16 }, 2 }, { { 4, 2, 3, 3 }, 0.5 } }) do
      local shape, gain = c[1], c[2]
      local w = I.Orthogonal(gain)(shape, cell.float64)
      assert.are.same(shape, w.shape)
      local m = w:reshape({ shape[1], -1 })
      local rows, cols = m.shape[1], m.shape[2]
      local g = rows <= cols and m:matmul(m:transpose(1, 2)) or m:transpose(1, 2):matmul(m)
      assert.is_true(off_identity(g, gain * gain) < 1e-12, table.concat(shape, "x"))
    end
    local w = I.Orthogonal()({ 32, 32 })
    assert.are.equal(cell.float32, w.dtype)
    assert.is_true(off_identity(w:matmul(w:transpose(1, 2)), 1) < 1e-5)
  end)

  it("is not a fixed matrix, and is reproducible under set_seed", function()
    cell.set_seed(5)
    local a = I.Orthogonal()({ 4, 4 }):totable()
    local b = I.Orthogonal()({ 4, 4 }):totable()
    cell.set_seed(5)
    assert.are.same(a, I.Orthogonal()({ 4, 4 }):totable())
    assert.are_not.same(a, b)
  end)

  it("is the 'orthogonal' of Dense's weight_init and of cell.initializer", function()
    local d = nn.Dense(6, 4, { weight_init = "orthogonal" })
    assert.is_true(off_identity(d.weight:matmul(d.weight:transpose(1, 2)), 1) < 1e-5)
    local p = cell.Parameter(cell.initializer(I.Orthogonal { gain = 3 }, { 2, 5 }), "w")
    p:init_data()
    assert.is_true(off_identity(p:matmul(p:transpose(1, 2)), 9) < 1e-4)
    assert.are.equal("Orthogonal(gain=1)", tostring(I.Orthogonal()))
  end)

  it("needs at least 2 dimensions and a number gain", function()
    assert.are.equal("ValueError: For Orthogonal initializer, the dimension of the initialized tensor should be "
      .. "no less than 2, but got 1.", err(function() cell.initializer("orthogonal", { 3 }) end))
    assert.are.equal("TypeError: For 'Orthogonal', the argument 'gain' must be a number, but got string.",
      err(function() I.Orthogonal("2") end))
  end)
end)

describe("cell.init.Dirac", function()
  it("makes a 2-D convolution that passes its input through ('same' padding)", function()
    local conv = nn.Conv2d(3, 3, 3, { pad_mode = "same", weight_init = "dirac" })
    local x = cell.randn({ 2, 3, 5, 5 })
    H.assert_close(conv(x), x:totable(), 0)
    local w = I.Dirac()({ 3, 3, 3, 3 }):totable()
    assert.are.equal(1, w[2][2][2][2])
    assert.are.equal(0, w[2][1][2][2])
    assert.are.equal(0, w[2][2][1][2])
  end)

  it("puts the centre at size // 2 (0-based) in 3-D and 5-D kernels", function()
    local w = I.Dirac()({ 2, 2, 4 }):totable()
    assert.are.same({ { { 0, 0, 1, 0 }, { 0, 0, 0, 0 } }, { { 0, 0, 0, 0 }, { 0, 0, 1, 0 } } }, w)
    local v = I.Dirac()({ 1, 1, 2, 3, 2 }, cell.float64)
    assert.are.equal(1, v:sum():item())
    assert.are.equal(1, v:totable()[1][1][2][2][2])
    local conv1 = nn.Conv1d(2, 2, 3, { pad_mode = "same", weight_init = "dirac" })
    local x = cell.randn({ 1, 2, 6 })
    H.assert_close(conv1(x), x:totable(), 0)
  end)

  it("with groups repeats the identity in each block of output channels", function()
    -- {4, 3, 1, 1}, 2 groups: out channels 1, 2 and again 3, 4 take inputs 1, 2
    local w = I.Dirac(2)({ 4, 3, 1, 1 }):reshape({ 4, 3 }):totable()
    assert.are.same({ { 1, 0, 0 }, { 0, 1, 0 }, { 1, 0, 0 }, { 0, 1, 0 } }, w)
    -- a grouped convolution: each group passes its own channels through
    local conv = nn.Conv2d(4, 4, 3, { pad_mode = "same", group = 2, weight_init = I.Dirac { groups = 2 } })
    local x = cell.randn({ 1, 4, 4, 4 })
    H.assert_close(conv(x), x:totable(), 0)
    -- more outputs than inputs: the extra channels stay zero
    local wide = I.Dirac()({ 3, 2, 1 }):reshape({ 3, 2 }):totable()
    assert.are.same({ { 1, 0 }, { 0, 1 }, { 0, 0 } }, wide)
  end)

  it("takes 3- to 5-D shapes whose first size groups divides, and an integer groups >= 1", function()
    assert.are.equal("ValueError: For Dirac initializer, only support to initialize tensor with dimension of 3, 4 "
      .. "or 5, but got 2.", err(function() cell.initializer("dirac", { 3, 3 }) end))
    assert.are.equal("ValueError: For Dirac initializer, the first dimension of the initialized tensor must be "
      .. "divisible by groups, but got first dimension 3, groups 2.",
      err(function() cell.initializer(I.Dirac(2), { 3, 3, 3 }) end))
    assert.are.equal("ValueError: For 'Dirac', the argument 'groups' must be an integer not less than 1, but got 0.",
      err(function() I.Dirac(0) end))
    assert.are.equal("ValueError: For 'Dirac', the argument 'groups' must be an integer not less than 1, but got 1.5.",
      err(function() I.Dirac { groups = 1.5 } end))
  end)
end)

describe("cell.init.Sparse", function()
  it("zeros ceil(sparsity * rows) entries of every column; the rest N(0, sigma^2)", function()
    cell.set_seed(11)
    local w = I.Sparse(0.25, 2)({ 10, 2000 })
    local zeros = w:eq(0):sum(1) -- per column
    assert.are.equal(3, zeros:min():item()) -- ceil(2.5)
    assert.are.equal(3, zeros:max():item())
    -- the non-zero entries: 7 of 10 per column, sd 2
    local nz = w:masked_select(w:ne(0)):astype(cell.float64)
    assert.are.equal(14000, nz:numel())
    assert.is_true(math.abs(nz:std():item() - 2) < 0.05, "sd " .. nz:std():item())
    assert.is_true(math.abs(nz:mean():item()) < 0.06)
    -- which rows are zeroed differs between columns
    local rows = w:eq(0):astype(cell.float32):sum(2):totable()
    local differ = false
    for i = 2, #rows do if rows[i] ~= rows[1] then differ = true end end
    assert.is_true(differ)
  end)

  it("keeps every entry at sparsity 0 and zeros all at 1; default sigma 0.01", function()
    local w = I.Sparse { sparsity = 0 }({ 50, 40 })
    assert.are.equal(0, w:eq(0):sum():item())
    assert.is_true(math.abs(w:astype(cell.float64):std():item() - 0.01) < 0.001)
    assert.are.equal(0, I.Sparse(1)({ 4, 3 }):abs():sum():item())
    assert.are.equal("Sparse(sparsity=0.5, sigma=0.01)", tostring(I.Sparse(0.5)))
  end)

  it("is a Dense weight_init object (by name it needs sparsity)", function()
    local d = nn.Dense(5, 8, { weight_init = I.Sparse(0.5) })
    local zeros = d.weight:eq(0):sum(1) -- {8, 5}: ceil(0.5 * 8) = 4 zeros in each column
    assert.are.equal(4, zeros:min():item())
    assert.are.equal(4, zeros:max():item())
  end)

  it("rejects a missing or out-of-range sparsity, a negative sigma and a shape not 2-D", function()
    assert.are.equal("TypeError: Sparse() missing the required argument 'sparsity'",
      err(function() cell.initializer("sparse", { 3, 3 }) end))
    assert.are.equal("ValueError: For 'Sparse', the argument 'sparsity' must be in [0, 1], but got 1.5.",
      err(function() I.Sparse(1.5) end))
    assert.are.equal("ValueError: For 'Sparse', the argument 'sigma' must be non-negative, but got -1.",
      err(function() I.Sparse(0.1, -1) end))
    assert.are.equal("ValueError: For Sparse initializer, the dimension of the initialized tensor should be 2, but "
      .. "got 3.", err(function() cell.initializer(I.Sparse(0.1), { 2, 2, 2 }) end))
  end)
end)

describe("cell.init.VarianceScaling", function()
  local BIG = { 400, 500 } -- fan_in 500, fan_out 400

  it("has variance scale / fan for each distribution and mode", function()
    cell.set_seed(2)
    for _, c in ipairs({ { "fan_in", 500 }, { "fan_out", 400 }, { "fan_avg", 450 } }) do
      for _, dist in ipairs({ "uniform", "truncated_normal", "untruncated_normal" }) do
        local w = I.VarianceScaling { scale = 3, mode = c[1], distribution = dist }(BIG, cell.float64)
        local want = 3 / c[2]
        local var = w:var():item()
        assert.is_true(math.abs(var / want - 1) < 0.02, c[1] .. " " .. dist .. ": var " .. var .. " want " .. want)
        local top = w:abs():max():item()
        if dist == "uniform" then
          assert.is_true(top <= math.sqrt(3 * want) and top > 0.999 * math.sqrt(3 * want))
        elseif dist == "truncated_normal" then
          local s = math.sqrt(want) / 0.87962566103423978
          assert.is_true(top <= 2 * s and top > 1.99 * s)
        else
          assert.is_true(top > 3.5 * math.sqrt(want)) -- 200,000 untruncated draws reach past 3.5 sd
        end
      end
    end
  end)

  it("defaults to scale 1, fan_in, truncated_normal; a convolution's fan counts its kernel", function()
    local v = I.VarianceScaling()
    assert.are.equal("VarianceScaling(scale=1, mode='fan_in', distribution='truncated_normal')", tostring(v))
    local w = v({ 64, 16, 5, 5 }, cell.float64) -- fan_in 400
    assert.is_true(math.abs(w:var():item() * 400 - 1) < 0.05)
    local conv = nn.Conv2d(16, 8, 3, { weight_init = "variance_scaling" })
    assert.is_true(conv.weight:abs():max():item() <= 2 * math.sqrt(1 / 144) / 0.87962566103423978 + 1e-6)
    assert.is_true(cell.initializer("VarianceScaling", { 2, 2 }).init.mode == "fan_in")
  end)

  it("rejects a scale not above 0, an unknown mode or distribution, a 1-D shape", function()
    assert.are.equal("ValueError: For VarianceScaling initializer, scale must be greater than 0, but got 0.",
      err(function() I.VarianceScaling(0) end))
    assert.are.equal("ValueError: For VarianceScaling initializer, mode must be fan_in, fan_out or fan_avg, but got "
      .. "fan_sum.", err(function() I.VarianceScaling { mode = "fan_sum" } end))
    assert.are.equal("ValueError: For VarianceScaling initializer, distribution must be uniform, truncated_normal "
      .. "or untruncated_normal, but got normal.", err(function() I.VarianceScaling(1, "fan_in", "normal") end))
    assert.are.equal("ValueError: 'fan_in' and 'fan_out' can not be computed for tensor with fewer than 2 "
      .. "dimensions, but got dimensions 1.", err(function() cell.initializer("variancescaling", { 5 }) end))
  end)
end)

describe("cell.init", function()
  it("has every initializer of MindSpore 2.x's mindspore.common.initializer", function()
    for _, name in ipairs({ "Initializer", "TruncatedNormal", "Normal", "Uniform", "HeUniform", "HeNormal",
      "XavierUniform", "XavierNormal", "One", "Zero", "Constant", "Identity", "Sparse", "Dirac", "Orthogonal",
      "VarianceScaling" }) do
      assert.is_table(I[name], name)
    end
  end)
end)
