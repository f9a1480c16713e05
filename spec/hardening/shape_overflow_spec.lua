-- shape_overflow_spec.lua - sizes that overflow 64-bit arithmetic are a
-- ValueError naming the shape, at every entry point that makes or computes a
-- shape (src/core/shape_check.c: cell_shape_numel_checked). A shape is
-- refused when the product of its sizes, zeros counted as 1, exceeds
-- 2^60 - 1 (so element counts, contiguous strides and byte counts all fit);
-- a shape within that bound but too big for memory stays a MemoryError.
local H = require "helpers"
local cell = require "cell"
local core = require "cell.core"

local MAX = "1152921504606846975" -- 2^60 - 1
local TOO_LARGE = "is too large: the product of its sizes (zeros counted as 1) must be at most " .. MAX

-- The exact message, with Lua's position prefix (if any) removed.
local function fails_with(fn, text)
  local msg = H.expect_error(fn, (text:match("^(%a+):")))
  msg = msg:gsub("^[^:]*:%d+: ", "")
  assert.are.equal(text, msg)
end

local P62 = 2 ^ 62
local P59 = 2 ^ 59
local P40 = 2 ^ 40
-- (2^32 + 1)(2^32 - 1) = 2^64 - 1, so this shape's sizes multiply to
-- 16 modulo 2^64: a wrapped count that matches a 16-element tensor.
local WRAPS_TO_16 = { 4294967297, 4294967295, 4294967297, 4294967295, 16 }
local WRAPS_STR = "[4294967297, 4294967295, 4294967297, 4294967295, 16]"

describe("shape overflow", function()
  describe("views", function()
    it("reshape to a shape whose count wraps around to the element count", function()
      fails_with(function() return cell.zeros({ 4, 4 }):reshape(WRAPS_TO_16) end,
        "ValueError: reshape: shape " .. WRAPS_STR .. " " .. TOO_LARGE)
    end)

    it("view to a shape whose count wraps around", function()
      fails_with(function() return cell.zeros({ 4, 4 }):view(WRAPS_TO_16) end,
        "ValueError: view: shape " .. WRAPS_STR .. " " .. TOO_LARGE)
    end)

    it("reshape of an empty tensor to huge sizes, with -1", function()
      fails_with(function() return cell.zeros({ 0 }):reshape({ P62, P62, -1 }) end,
        "ValueError: reshape: shape [4611686018427387904, 4611686018427387904, -1] " .. TOO_LARGE)
    end)

    it("reshape of an empty tensor to sizes whose strides overflow", function()
      fails_with(function() return cell.zeros({ 0 }):reshape({ 0, P62, P62 }) end,
        "ValueError: reshape: shape [0, 4611686018427387904, 4611686018427387904] " .. TOO_LARGE)
    end)

    it("expand to sizes whose product overflows", function()
      fails_with(function() return cell.ones({ 1, 1 }):expand({ P62, P62 }) end,
        "ValueError: expand: shape [4611686018427387904, 4611686018427387904] " .. TOO_LARGE)
    end)

    it("a slice whose step is near 2^63 takes one element", function()
      -- (stop - start) + step passes 2^63 here.
      local t = cell.full({ 1 }, 7):expand({ 2 ^ 58 })
      local s = t[{ { 2, 2 ^ 58, 9e18 } }]
      assert.are.same({ 1 }, s.shape)
      assert.are.equal(7, s[1])
    end)

    it("still reshapes, views and expands within the bound", function()
      assert.are.same({ 2, 8 }, cell.zeros({ 4, 4 }):reshape({ 2, -1 }).shape)
      assert.are.same({ 0, 5 }, cell.zeros({ 0 }):reshape({ 0, 5 }).shape)
      local e = cell.ones({ 1 }):expand({ P59 })
      assert.are.equal(P59, e:numel())
    end)
  end)

  describe("results computed from inputs", function()
    local function huge(n) return cell.ones({ 1 }):expand({ n }) end

    it("broadcasting two operands", function()
      local a = cell.ones({ 1, 1 }):expand({ P40, 1 })
      local b = cell.ones({ 1, 1 }):expand({ 1, P40 })
      fails_with(function() return a + b end,
        "ValueError: add: shape [1099511627776, 1099511627776] " .. TOO_LARGE)
    end)

    it("matmul's broadcast batch dimensions", function()
      local a = cell.ones({ 1, 1, 1, 1 }):expand({ P40, 1, 1, 1 })
      local b = cell.ones({ 1, 1, 1, 1 }):expand({ 1, P40, 1, 1 })
      fails_with(function() return a:matmul(b) end,
        "ValueError: matmul: shape [1099511627776, 1099511627776] " .. TOO_LARGE)
    end)

    it("mm's result", function()
      local a = cell.ones({ 1, 1 }):expand({ P40, 1 })
      local b = cell.ones({ 1, 1 }):expand({ 1, P40 })
      fails_with(function() return a:mm(b) end,
        "ValueError: matmul: shape [1099511627776, 1099511627776] " .. TOO_LARGE)
    end)

    it("cat", function()
      fails_with(function() return cell.cat({ huge(P59), huge(P59) }) end,
        "ValueError: cat: concatenating shapes [576460752303423488] and [576460752303423488] "
        .. "(and the rest) gives a size above " .. MAX)
    end)

    it("stack", function()
      fails_with(function() return cell.stack({ huge(P59), huge(P59) }) end,
        "ValueError: stack: shape [2, 576460752303423488] " .. TOO_LARGE)
    end)

    it("tile", function()
      fails_with(function() return cell.ones({ 2 }):tile({ P62 }) end,
        "ValueError: tile: tiling shape [2] by [4611686018427387904] gives a size above " .. MAX)
    end)

    it("repeat_interleave", function()
      fails_with(function() return cell.ones({ 2 }):repeat_interleave(P62) end,
        "ValueError: repeat_interleave: 4611686018427387904 repeats of shape [2] give a size above " .. MAX)
    end)

    it("pad", function()
      fails_with(function() return cell.ones({ 4 }):pad({ P62, P62 }) end,
        "ValueError: pad: padding (4611686018427387904, 4611686018427387904) of a size 4 in shape [4] "
        .. "gives a size above " .. MAX)
    end)

    it("conv2d's output", function()
      local x = cell.ones({ 1, 1, 1, 1 }):expand({ 1, 1, 2 ^ 30, 2 ^ 29 })
      local w = cell.ones({ 1, 1, 1, 1 }):expand({ 2 ^ 29, 1, 1, 1 })
      fails_with(function() return cell.ops.conv2d(x, w) end,
        "ValueError: conv2d: input (1, 1, 1073741824, 536870912) with weight (536870912, 1, 1, 1) "
        .. "gives an output (1, 536870912, 1073741824, 536870912) (or an unfolded input) too large for a tensor")
    end)
  end)

  describe("creation", function()
    local big = { P62, P62 }
    local BIG = "[4611686018427387904, 4611686018427387904]"
    for _, name in ipairs({ "zeros", "ones", "empty", "rand", "randn" }) do
      it(name .. " with sizes whose product overflows", function()
        local op = (name == "rand" or name == "randn") and name or "tensor"
        fails_with(function() return cell[name](big) end, "ValueError: " .. op .. ": shape " .. BIG .. " " .. TOO_LARGE)
      end)
    end

    it("full, with a zero size beside the huge ones", function()
      fails_with(function() return cell.full({ 0, P62, P62 }, 1) end,
        "ValueError: tensor: shape [0, 4611686018427387904, 4611686018427387904] " .. TOO_LARGE)
    end)

    it("randint", function()
      fails_with(function() return cell.randint(0, 5, big) end,
        "ValueError: randint: shape " .. BIG .. " " .. TOO_LARGE)
    end)

    it("eye", function()
      fails_with(function() return cell.eye(P40) end,
        "ValueError: eye: shape [1099511627776, 1099511627776] " .. TOO_LARGE)
    end)

    it("linspace", function()
      fails_with(function() return cell.linspace(0, 1, P62) end,
        "ValueError: linspace: shape [4611686018427387904] " .. TOO_LARGE)
    end)

    it("arange", function()
      fails_with(function() return cell.arange(0, P62) end,
        "ValueError: arange: start=0, stop=4.61169e+18, step=1 gives 4.61169e+18 elements, "
        .. "more than a tensor can hold (" .. MAX .. ")")
    end)

    it("a shape within the bound that memory cannot hold is a MemoryError", function()
      H.expect_error(function() return cell.zeros({ 2 ^ 30, 2 ^ 28 }) end, "MemoryError",
        "[1073741824, 268435456]")
    end)
  end)

  describe("files", function()
    local function write(path, bytes)
      local f = assert(io.open(path, "wb"))
      f:write(bytes)
      f:close()
    end

    -- 8-byte little-endian length, then the JSON header.
    local function safetensors(header)
      local n, le = #header, {}
      for i = 1, 8 do
        le[i] = string.char(n % 256)
        n = math.floor(n / 256)
      end
      return table.concat(le) .. header
    end

    it("a safetensors entry of shape [0, 2^53, 2^53, 2^53]", function()
      local path = os.tmpname()
      write(path, safetensors('{"w":{"dtype":"F32","shape":[0,9007199254740992,9007199254740992,'
        .. '9007199254740992],"data_offsets":[0,0]}}'))
      fails_with(function() return core.safetensors_load(path) end,
        "ValueError: safetensors: " .. path .. ": tensor 'w' has shape (0, 9007199254740992, "
        .. "9007199254740992, 9007199254740992) of F32, too large for any file")
      os.remove(path)
    end)

    it("an IDX header of sizes [0, 2^32 - 1, 2^32 - 1]", function()
      local path = os.tmpname()
      write(path, "\0\0\8\3" .. "\0\0\0\0" .. "\255\255\255\255" .. "\255\255\255\255")
      fails_with(function() return core.idx_load(path) end,
        "ValueError: idx: " .. path .. ": sizes (0, 4294967295, 4294967295) are too large")
      os.remove(path)
    end)
  end)
end)
