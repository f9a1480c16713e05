-- embed_spec.lua - the C embedding API, through the two programs of
-- examples/embed/ (built by `make`, into <build>/embed/ and
-- <build>/<lua>/embed/):
-- - game_loop, the pure-C inference path: it loads a checkpoint saved
--   here by cell.save_checkpoint, and its logits must equal the module's
--   own forward of the same input; no allocation may reach the OS after
--   warm-up; bad files and bad usage are clean errors;
-- - host, a C program that opens cell in its own lua_State
--   (cell_openlibs), hands Lua a wrapped host buffer (cell_push_tensor) and
--   a C function (cell_check_tensor, cell_lua_error), and reads back what
--   Lua returns.
local H = require "helpers"
local cell = H.cell
local nn = cell.nn

local LUA = H.LUA

local build_dir = H.build_dir
local BUILD = build_dir()
local GAME = BUILD .. "/embed/game_loop"
local HOST = BUILD .. "/" .. LUA .. "/embed/host"


local function quote(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

local run = H.run

local function exists(path)
  local f = io.open(path, "rb")
  if f then f:close() end
  return f ~= nil
end

local MLP = nn.Cell:extend("MLP")
function MLP:init(sizes)
  self.fc1 = nn.Dense(sizes[1], sizes[2])
  self.relu = nn.ReLU()
  self.fc2 = nn.Dense(sizes[2], sizes[3])
end
function MLP:construct(x) return self.fc2(self.relu(self.fc1(x))) end

--- The frame input game_loop draws at frame f: a bar sweeping across 28 x 28.
local function frame_input(f)
  local v = {}
  for i = 0, 783 do v[i + 1] = 0.5 + 0.5 * math.sin(0.2 * (i % 28 + f)) end
  return cell.tensor({ v })
end

describe("examples/embed/game_loop (C inference, no Lua)", function()
  local ckpt

  setup(function()
    assert(exists(GAME), GAME .. " is not built (run make)")
    cell.set_seed(11)
    ckpt = os.tmpname() .. ".safetensors"
  end)

  teardown(function() os.remove(ckpt) end)

  it("computes the module's logits from the saved checkpoint, allocating nothing from the OS", function()
    local net = MLP({ 784, 256, 10 })
    cell.save_checkpoint(net, ckpt)
    local steps = 300
    local out, err, rc = run(quote(GAME) .. " " .. quote(ckpt) .. " " .. steps)
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("fc1 [784 -> 256] fc2 [256 -> 10]", 1, true), out)
    local logits = {}
    for v in out:match("logits at the last step:([^\n]*)"):gmatch("%S+") do logits[#logits + 1] = tonumber(v) end
    assert.are.equal(10, #logits)
    local want = cell.no_grad(function() return net(frame_input(steps - 1)) end)
    H.assert_close(cell.tensor({ logits }), want:totable(), 1e-5)
    assert.truthy(out:find("allocations after warm-up: 0 reached the OS", 1, true), out)
    assert.truthy(out:find("0 bytes more in use", 1, true), out)
    local p50, p99 = out:match("p50 ([%d.]+) us, p99 ([%d.]+) us")
    assert.is_true(tonumber(p50) > 0 and tonumber(p99) >= tonumber(p50), out)
    local _, best = want:max(2)
    assert.truthy(out:find("class " .. tostring(best:item()) .. " of 10", 1, true), out)
  end)

  it("chains layers by their sizes, whatever the names", function()
    local net = nn.Cell:extend("Odd")
    function net:init()
      self.z_last = nn.Dense(32, 10)
      self.a_first = nn.Dense(784, 32)
    end
    local odd = net()
    cell.save_checkpoint(odd, ckpt)
    local out, err, rc = run(quote(GAME) .. " " .. quote(ckpt) .. " 5")
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("a_first [784 -> 32] z_last [32 -> 10]", 1, true), out)
  end)

  it("reports a missing file, a model it cannot run and bad usage, with no crash", function()
    local _, err, rc = run(quote(GAME) .. " /nonexistent/model.safetensors 5")
    assert.are.equal(1, rc)
    assert.truthy(err:find("ValueError: safetensors: /nonexistent/model.safetensors", 1, true), err)

    cell.save_checkpoint(MLP({ 100, 8, 2 }), ckpt)
    _, err, rc = run(quote(GAME) .. " " .. quote(ckpt) .. " 5")
    assert.are.equal(1, rc)
    assert.truthy(err:find("no Dense layer takes 784 inputs", 1, true), err)

    local d = cell.OrderedDict()
    d["fc.weight"] = cell.randn({ 4, 784 }, cell.float64)
    d["fc.bias"] = cell.zeros({ 4 }, cell.float64)
    cell.save_checkpoint(d, ckpt)
    _, err, rc = run(quote(GAME) .. " " .. quote(ckpt) .. " 5")
    assert.are.equal(1, rc)
    assert.truthy(err:find("TypeError: model: .*not Float32"), err)

    local f = assert(io.open(ckpt, "wb"))
    f:write("\255\255\255\255\255\255\255\127 not a checkpoint")
    f:close()
    _, err, rc = run(quote(GAME) .. " " .. quote(ckpt) .. " 5")
    assert.are.equal(1, rc)
    assert.truthy(err:find("ValueError: safetensors:", 1, true), err)

    _, err, rc = run(quote(GAME))
    assert.are.equal(2, rc)
    assert.truthy(err:find("usage: game_loop CHECKPOINT", 1, true), err)
    _, err, rc = run(quote(GAME) .. " " .. quote(ckpt) .. " 0")
    assert.are.equal(2, rc)
    assert.truthy(err:find("STEPS must be a positive number", 1, true), err)
  end)
end)

-- #cpu: left out of make test-device. The host pushes its own (CPU) memory
-- as tensors, so under CELL_DEVICE=TEST its script would mix them with
-- tensors on the test device, which is a ValueError by design.
describe("examples/embed/host (cell_openlibs, push and check tensors) #cpu", function()
  -- The host finds the Lua files through CELL_LUA_DIR, not LUA_PATH.
  local env = "env -u LUA_PATH -u LUA_PATH_5_4 -u LUA_INIT -u LUA_INIT_5_4 "
  local lua_dir = "lua"

  setup(function() assert(exists(HOST), HOST .. " is not built (run make)") end)

  it("runs a Lua brain on the host's own memory and reads its answer in place", function()
    local out, err, rc = run(env .. "CELL_LUA_DIR=" .. quote(lua_dir) .. " " .. quote(HOST))
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("opened: cell " .. cell.version, 1, true), out)
    -- w @ (2 * sensors), relu: sensors {0.5, 0.25, 1, 2}, then sensors[1] = 1.5.
    assert.truthy(out:find("frame 1: action 1 6 0\n", 1, true), out)
    assert.truthy(out:find("frame 2: action 3 6 0\n", 1, true), out)
    assert.truthy(out:find("misuse 1: [^\n]*TypeError: host%.gain: expected a Tensor, got string %(bad argument #1%)"), out)
    assert.truthy(out:find("misuse 2: [^\n]*ValueError: mul: shapes %[2%] and %[3%] cannot be broadcast"), out)
    assert.truthy(out:find("closed: release callback ran 1 time\n", 1, true), out)
  end)

  it("leaves a package.path that already finds cell as it is", function()
    local out, err, rc = run("env -u CELL_LUA_DIR LUA_PATH=" .. quote("lua/?.lua;lua/?/init.lua;;")
      .. " " .. quote(HOST))
    assert.are.equal(0, rc, err)
    assert.truthy(out:find("closed: release callback ran 1 time", 1, true), out)
  end)

  it("says where it looked when it cannot find the Lua files", function()
    local _, err, rc = run(env .. "CELL_LUA_DIR=/nonexistent/share " .. quote(HOST))
    assert.are.equal(1, rc)
    assert.truthy(err:find("cell_openlibs: cannot find cell's Lua files", 1, true), err)
    assert.truthy(err:find("/nonexistent/share", 1, true), err)
    assert.truthy(err:find("set CELL_LUA_DIR", 1, true), err)
  end)

  if LUA == "luajit" then
    it("lets a LuaJIT script read the host's memory through cell.ffi, bound to the host's own engine", function()
      local script = os.tmpname() .. ".lua"
      local f = assert(io.open(script, "wb"))
      f:write([[
local cell = ...
local F = require "cell.ffi"
return {
  think = function(s)
    local p = F.ptr(s) -- the host's float sensors[4], no copy
    local t = cell.zeros({ 3 })
    t[1] = p[0] + p[3]
    t[2] = (F.C == require("ffi").C) and 1 or 0 -- the symbols are the executable's
    return t
  end,
  misuse = function() return "-", "-" end,
}
]])
      f:close()
      local out, err, rc = run(env .. "CELL_LUA_DIR=" .. quote(lua_dir) .. " " .. quote(HOST) .. " " .. quote(script))
      os.remove(script)
      assert.are.equal(0, rc, err)
      assert.truthy(out:find("frame 1: action 2.5 1 0\n", 1, true), out)
      assert.truthy(out:find("frame 2: action 3.5 1 0\n", 1, true), out)
    end)
  end

  it("reports an error in the host's script, and what a wrong result is", function()
    local script = os.tmpname() .. ".lua"
    local f = assert(io.open(script, "wb"))
    f:write("local cell = ...\nreturn { think = function(s) return cell.zeros({ 2 }) + s end }\n")
    f:close()
    local _, err, rc = run(env .. "CELL_LUA_DIR=" .. quote(lua_dir) .. " " .. quote(HOST) .. " " .. quote(script))
    assert.are.equal(1, rc)
    assert.truthy(err:find("host: think: .*ValueError: add: shapes %[2%] and %[4%] cannot be broadcast"), err)
    f = assert(io.open(script, "wb"))
    f:write("return { think = function(s) return 42 end }\n")
    f:close()
    _, err, rc = run(env .. "CELL_LUA_DIR=" .. quote(lua_dir) .. " " .. quote(HOST) .. " " .. quote(script))
    assert.are.equal(1, rc)
    assert.truthy(err:find("think did not return a contiguous float32 tensor", 1, true), err)
    os.remove(script)
  end)
end)
