-- cell.cuda on any machine where the module was built (make test-cuda):
-- it loads, reports whether a GPU is there, and without one refuses the
-- GPU device with a RuntimeError naming CUDA's reason.
local cell = require "cell"
local cuda = require "cell.cuda"

describe("cell.cuda", function()
  it("loads and answers is_available and device_count consistently", function()
    assert.is_boolean(cuda.is_available())
    local n = cuda.device_count()
    assert.is_true(math.type == nil or math.type(n) == "integer")
    assert.are.equal(cuda.is_available(), n > 0)
    if n == 0 then
      assert.is_string(cuda.unavailable_reason())
      assert.is_true(#cuda.unavailable_reason() > 0)
    else
      assert.is_nil(cuda.unavailable_reason())
    end
  end)

  it("loads twice into one process without registering twice", function()
    package.loaded["cell.cuda"] = nil
    local again = require "cell.cuda"
    assert.are.equal(cuda.device_count(), again.device_count())
    package.loaded["cell.cuda"] = cuda
  end)

  it("type-checks set_allow_tf32", function()
    local ok, err = pcall(cuda.set_allow_tf32, "yes")
    assert.is_false(ok)
    assert.is_truthy(tostring(err):find("TypeError: cell.cuda.set_allow_tf32: expected a boolean, got string", 1, true),
      tostring(err))
    ok, err = pcall(cuda.memory_allocated, "0")
    assert.is_false(ok)
    assert.is_truthy(tostring(err):find("TypeError: cell.cuda: device must be an integer, got string", 1, true),
      tostring(err))
  end)

  it("has a reference entry in docs/reference/cuda.md for every function", function()
    local f = assert(io.open("docs/reference/cuda.md"))
    local page = f:read("*a")
    f:close()
    local missing = {}
    for name in pairs(cuda) do
      if not page:find("### `cell.cuda." .. name .. "`", 1, true) then missing[#missing + 1] = name end
    end
    table.sort(missing)
    assert.are.same({}, missing)
  end)

  if not cuda.is_available() then
    describe("without a GPU", function()
      local reason = cuda.unavailable_reason()
      local function expect_no_gpu(f)
        local ok, err = pcall(f)
        assert.is_false(ok)
        err = tostring(err)
        assert.is_truthy(err:find("RuntimeError: no CUDA device: ", 1, true), err)
        assert.is_truthy(err:find(reason, 1, true), err)
      end

      it("refuses cell.set_device('GPU') and keeps the CPU the default", function()
        expect_no_gpu(function() cell.set_device("GPU") end)
        expect_no_gpu(function() cell.set_device("GPU", 0) end)
        expect_no_gpu(function() cell.core.set_device("GPU:1") end)
        assert.are.equal("CPU", (cell.get_device()))
      end)

      it("refuses t:move_to('GPU') and still moves to the CPU", function()
        local t = cell.ones { 2, 3 }
        expect_no_gpu(function() return t:move_to("GPU") end)
        expect_no_gpu(function() return t:move_to("GPU", 0) end)
        assert.are.equal(t, t:move_to("CPU"))
      end)

      it("passes other device names through to the engine", function()
        local ok, err = pcall(cell.set_device, "GPX")
        assert.is_false(ok)
        assert.is_falsy(tostring(err):find("CUDA", 1, true), tostring(err))
        assert.is_truthy(tostring(err):find("ValueError", 1, true), tostring(err))
      end)

      it("refuses the memory functions and synchronize", function()
        for _, name in ipairs { "synchronize", "memory_allocated", "max_memory_allocated", "memory_reserved",
          "memory_stats", "empty_cache", "reset_peak_memory_stats", "get_allow_tf32" } do
          expect_no_gpu(function() cuda[name]() end)
        end
        expect_no_gpu(function() cuda.set_allow_tf32(true) end)
      end)
    end)
  else
    describe("with a GPU", function()
      it("refuses a device number past the last", function()
        local ok, err = pcall(cuda.memory_allocated, cuda.device_count())
        assert.is_false(ok)
        assert.is_truthy(tostring(err):find("ValueError: cell.cuda: device", 1, true), tostring(err))
      end)
    end)
  end
end)
