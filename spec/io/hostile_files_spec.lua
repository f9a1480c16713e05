-- hostile_files_spec.lua - the file readers and writers (src/io) against what
-- a hostile user or a crash leaves: FIFOs and other non-files (refused, never
-- waited on), headers built to exhaust memory (refused by a bound in
-- proportion to the file), temporaries of killed saves (removed by the next
-- save), permissions (kept) and symbolic links (followed) on save.
local H = require "helpers"
local cell = H.cell
local core = cell.core

local function q(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end

--- A fresh, empty folder for one test; removed with everything in it.
local function with_dir(fn)
  local base = os.tmpname()
  os.remove(base)
  assert(os.execute("mkdir -p " .. q(base)))
  local ok, err = pcall(fn, base)
  os.execute("rm -rf " .. q(base))
  if not ok then error(err, 0) end
end

local listing = H.listing

local function read_all(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

local function write_all(path, s)
  local f = assert(io.open(path, "wb"))
  f:write(s)
  f:close()
end

local function mode_of(path)
  local out = H.run("stat -c %a " .. q(path))
  return (out:gsub("%s+$", ""))
end

--- The 8-byte little-endian length of n.
local function u64(n)
  local b = {}
  for i = 1, 8 do
    b[i] = string.char(n % 256)
    n = math.floor(n / 256)
  end
  return table.concat(b)
end

describe("files that are not regular files", function()
  -- In a child process with a time limit: the old readers opened a FIFO
  -- before looking at it and waited for a writer forever.
  it("are refused at once, FIFOs included, by every reader (ValueError naming the path)", function()
    with_dir(function(dir)
      local fifo = dir .. "/pipe.safetensors"
      assert(os.execute("mkfifo " .. q(fifo)))
      local script = dir .. "/probe.lua"
      write_all(script, ([[
local cell = require "cell"
local function try(f, ...) local ok, e = pcall(f, ...); print(ok and "LOADED" or e) end
try(cell.load_checkpoint, %q)
try(cell.core.safetensors_load, %q)
try(cell.core.idx_load, %q)
try(cell.core.safetensors_load, "/dev/zero")
]]):format(fifo, fifo, fifo))
      local out, err, rc = H.run("timeout 20 " .. os.getenv("CELL_LUA") .. " " .. q(script) .. " </dev/null")
      assert.are.equal(0, rc, "the readers waited on the FIFO (or failed): " .. out .. err)
      local lines = {}
      for line in out:gmatch("[^\n]+") do lines[#lines + 1] = line end
      assert.is_truthy(lines[1]:find("ValueError: safetensors: " .. fifo .. ": not a regular file (a FIFO)", 1, true),
        lines[1])
      assert.is_truthy(lines[2]:find("ValueError: safetensors: " .. fifo .. ": not a regular file (a FIFO)", 1, true),
        lines[2])
      assert.is_truthy(lines[3]:find("ValueError: idx: " .. fifo .. ": not a regular file (a FIFO)", 1, true),
        lines[3])
      assert.is_truthy(lines[4]:find("ValueError: safetensors: /dev/zero: not a regular file (a character device)",
        1, true), lines[4])
    end)
  end)

  it("core.file_kind tells them apart without opening them", function()
    with_dir(function(dir)
      assert(os.execute("mkfifo " .. q(dir .. "/p")))
      write_all(dir .. "/f", "x")
      assert.are.equal("fifo", core.file_kind(dir .. "/p"))
      assert.are.equal("file", core.file_kind(dir .. "/f"))
      assert.are.equal("directory", core.file_kind(dir))
      assert.are.equal("other", core.file_kind("/dev/null"))
      assert.is_nil(core.file_kind(dir .. "/none"))
    end)
  end)
end)

describe("safetensors headers built to exhaust memory", function()
  -- n zero-size tensors: the header alone is small, but each tensor costs
  -- its header, storage and name in memory.
  local function many_empty(path, n)
    local parts = {}
    for i = 1, n do
      parts[i] = ('"t%07d":{"dtype":"F32","shape":[0],"data_offsets":[0,0]}'):format(i)
    end
    local h = "{" .. table.concat(parts, ",") .. "}"
    h = h .. string.rep(" ", (8 - #h % 8) % 8)
    write_all(path, u64(#h) .. h)
    return 8 + #h
  end

  it("are refused when loading would take more than 4 times the file plus 64 MiB", function()
    with_dir(function(dir)
      local path = dir .. "/many.safetensors"
      local size = many_empty(path, 300000) -- 17 MB: 300,000 tensors would take ~280 MB
      local bound = 4 * size + 64 * 1024 * 1024
      H.expect_error(function() core.safetensors_load(path) end, "ValueError", "safetensors: " .. path .. ": ",
        ("loading it would take more than %d bytes of memory (300000 tensors: "):format(bound),
        ("the bound is 4 times the file's %d bytes plus 67108864"):format(size))
      H.still_works()
    end)
  end)

  it("are read when within the bound", function()
    with_dir(function(dir)
      local path = dir .. "/some.safetensors"
      many_empty(path, 20000)
      local names, ts = core.safetensors_load(path)
      assert.are.equal(20000, #names)
      assert.are.equal("t0020000", names[20000])
      H.assert_shape(ts[20000], { 0 })
    end)
  end)
end)

describe("saving over an existing checkpoint", function()
  it("keeps the file's permissions (a private checkpoint stays private)", function()
    with_dir(function(dir)
      local path = dir .. "/w.safetensors"
      core.safetensors_save(path, { "w" }, { cell.ones({ 2 }) })
      local default = mode_of(path)
      write_all(dir .. "/plain", "x")
      assert.are.equal(mode_of(dir .. "/plain"), default, "a new file gets the umask's default")
      os.execute("chmod 600 " .. q(path))
      core.safetensors_save(path, { "w" }, { cell.zeros({ 3 }) })
      assert.are.equal("600", mode_of(path))
      os.execute("chmod 640 " .. q(path))
      cell.save_checkpoint({ { name = "w", data = cell.ones({ 1 }) } }, path)
      assert.are.equal("640", mode_of(path))
      local _, ts = core.safetensors_load(path)
      H.assert_values(ts[1], { 1 })
    end)
  end)

  it("replaces a symbolic link's target and keeps the link", function()
    with_dir(function(dir)
      os.execute("mkdir " .. q(dir .. "/real"))
      local target = dir .. "/real/w.safetensors"
      core.safetensors_save(target, { "old" }, { cell.ones({ 2 }) })
      os.execute("ln -s real/w.safetensors " .. q(dir .. "/link.safetensors"))  -- relative
      os.execute("ln -s " .. q(dir .. "/link.safetensors") .. " " .. q(dir .. "/link2.safetensors")) -- a chain
      core.safetensors_save(dir .. "/link2.safetensors", { "new" }, { cell.zeros({ 3 }) })
      local _, _, rc = H.run("test -L " .. q(dir .. "/link.safetensors") .. " && test -L " .. q(dir .. "/link2.safetensors"))
      assert.are.equal(0, rc, "the links were replaced")
      assert.are.same({ "new" }, (core.safetensors_load(target)))
      assert.are.same({ "link.safetensors", "link2.safetensors", "real" }, listing(dir))
      assert.are.same({ "w.safetensors" }, listing(dir .. "/real"))
      -- a dangling link names the file to create
      os.execute("ln -s real/fresh.safetensors " .. q(dir .. "/dangling.safetensors"))
      core.safetensors_save(dir .. "/dangling.safetensors", { "x" }, { cell.ones({ 1 }) })
      assert.are.same({ "x" }, (core.safetensors_load(dir .. "/real/fresh.safetensors")))
    end)
  end)

  it("removes the temporary files of savers that were killed, and only those", function()
    with_dir(function(dir)
      local path = dir .. "/w.safetensors"
      local dead = tonumber((H.run("sh -c 'echo $$'")))
      local stale = ("w.safetensors.tmp.%d.7"):format(dead)
      -- pid 1 always runs: its saver may still be writing
      local live, other = "w.safetensors.tmp.1.3", "w.safetensors.tmp.notes"
      for _, name in ipairs { stale, live, other, "v.safetensors.tmp." .. dead .. ".1" } do
        write_all(dir .. "/" .. name, string.rep("x", 1000))
      end
      core.safetensors_save(path, { "w" }, { cell.ones({ 2 }) })
      assert.are.same({ "v.safetensors.tmp." .. dead .. ".1", "w.safetensors", live, other }, listing(dir))
    end)
  end)
end)
