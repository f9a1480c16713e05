-- idx_spec.lua - cell.core.idx_load (src/io/idx.c): every IDX type, gzip'd
-- and plain, the conversion option, every malformed fixture, and spot
-- checks of the installed Fashion-MNIST against Python's gzip + struct
-- reading of the same files (spec/fixtures/gen_idx.py).
local H = require "helpers"
local cell = H.cell
local core = cell.core
local FX = require "fixtures.idx_fixtures"

local DIR = "spec/fixtures/idx/"
local FASHION = "/usr/share/datasets/fashion-mnist/"

local DTYPES = { u8 = "uint8", i8 = "int8", i16 = "int16", i32 = "int32", f32 = "float32", f64 = "float64" }

local function installed()
  local f = io.open(FASHION .. "train-labels-idx1-ubyte.gz", "rb")
  if f then f:close() end
  return f ~= nil
end

describe("idx_load on good files", function()
  local kinds = {}
  for k in pairs(FX.good) do kinds[#kinds + 1] = k end
  table.sort(kinds)
  for _, kind in ipairs(kinds) do
    for _, suffix in ipairs { "", ".gz" } do
      it(("reads good_%s.idx%s (big-endian %s)"):format(kind, suffix, kind), function()
        local e = FX.good[kind]
        local t = core.idx_load(DIR .. "good_" .. kind .. ".idx" .. suffix)
        H.assert_shape(t, e.shape)
        H.assert_values(t:reshape({ -1 }), e.values, DTYPES[kind])
      end)
    end
  end

  it("converts and scales in one pass when asked", function()
    local t = core.idx_load(DIR .. "good_u8.idx.gz", cell.float32, 1 / 255)
    H.assert_shape(t, { 3, 2, 2 })
    local want = {}
    for i, v in ipairs(FX.good.u8.values) do want[i] = v / 255 end
    H.assert_close(t:reshape({ -1 }), want, 1e-7)
    assert.are.equal("float32", t.dtype.name)
    H.assert_values(core.idx_load(DIR .. "good_i16.idx", cell.int64):reshape({ -1 }), FX.good.i16.values, "int64")
    H.assert_close(core.idx_load(DIR .. "good_f64.idx", cell.float64, 2), { 2 * math.pi }, 1e-15)
  end)

  it("refuses a scale for an integer dtype, and bad dtypes", function()
    H.expect_error(function() core.idx_load(DIR .. "good_u8.idx", cell.int32, 0.5) end, "ValueError",
      "idx: a scale (0.5) needs a floating-point dtype, not Int32")
    H.expect_error(function() core.idx_load(DIR .. "good_u8.idx", "nonsense") end, "TypeError", "unknown dtype 'nonsense'")
    H.expect_error(function() core.idx_load(42) end, "TypeError", "path must be a string")
  end)
end)

describe("idx_load on malformed files", function()
  local names = {}
  for k in pairs(FX.bad) do names[#names + 1] = k end
  table.sort(names)
  for _, name in ipairs(names) do
    it("refuses " .. name .. " with a ValueError naming the file and the fault", function()
      local path = DIR .. name
      H.expect_error(function() core.idx_load(path) end, "ValueError", "idx: " .. path .. ": ", FX.bad[name])
    end)
  end

  it("names a missing file and a folder", function()
    H.expect_error(function() core.idx_load(DIR .. "nope.gz") end, "ValueError",
      "idx: " .. DIR .. "nope.gz: cannot open: No such file or directory")
    H.expect_error(function() core.idx_load("spec") end, "ValueError", "idx: spec: not a regular file")
  end)
end)

describe("idx_load on the installed Fashion-MNIST", function()
  for _, split in ipairs { "train", "t10k" } do
    it("matches Python's reading of the " .. split .. " files", function()
      if not installed() or not FX.fashion then
        pending("Fashion-MNIST is not installed (apt-get install dataset-fashion-mnist)")
        return
      end
      local fx = FX.fashion[split]
      local images = core.idx_load(FASHION .. split .. "-images-idx3-ubyte.gz")
      local labels = core.idx_load(FASHION .. split .. "-labels-idx1-ubyte.gz")
      H.assert_shape(images, { fx.n, 28, 28 })
      H.assert_shape(labels, { fx.n })
      assert.are.equal("uint8", images.dtype.name)
      for _, e in ipairs(fx.labels) do assert.are.equal(e[2] - 1, labels[e[1]], "label " .. e[1]) end
      for _, e in ipairs(fx.pixels) do
        assert.are.equal(e[4], images[e[1]][e[2]][e[3]], ("pixel %d, %d, %d"):format(e[1], e[2], e[3]))
      end
      for _, e in ipairs(fx.sums) do
        assert.are.equal(e[2], images[e[1]]:sum():item(), "sum of image " .. e[1])
      end
      for c = 1, 10 do
        assert.are.equal(fx.label_counts[c], labels:eq(c - 1):sum():item(), "images of class " .. c)
      end
    end)
  end
end)
