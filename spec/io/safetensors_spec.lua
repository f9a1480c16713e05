-- safetensors_spec.lua - cell.core.safetensors_save / safetensors_load (src/io):
-- round trips of every dtype, the byte-exact layout of a file cell writes
-- (checked by hand in Python by spec/fixtures/gen_safetensors.py, and read
-- again here by its --check mode when a python3 is around), files written
-- by hand and from PyTorch tensors' bytes, every malformed fixture, the
-- atomic save, and the binding's argument checks.
local H = require "helpers"
local cell = H.cell
local core = cell.core
local FX = require "fixtures.safetensors_fixtures"
local case = require "fixtures.cell_written_case"

local DIR = "spec/fixtures/safetensors/"

local function read_all(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("*a")
  f:close()
  return s
end

local function exists(path)
  local f = io.open(path, "rb")
  if f then f:close() end
  return f ~= nil
end

--- A fresh, empty folder for one test; removed with everything in it.
local function with_dir(fn)
  local base = os.tmpname()
  os.remove(base)
  assert(os.execute("mkdir -p '" .. base .. "'"))
  local ok, err = pcall(fn, base)
  os.execute("rm -rf '" .. base .. "'")
  if not ok then error(err, 0) end
end

local listing = H.listing

local ST_DTYPE = { F32 = "float32", F64 = "float64", F16 = "float16", BF16 = "bfloat16", I8 = "int8",
  U8 = "uint8", I16 = "int16", I32 = "int32", I64 = "int64", BOOL = "bool" }

--- t holds the fixture entry e: {dtype =, shape =, values = (row-major)}.
local function holds(t, e, what)
  assert.are.equal(ST_DTYPE[e.dtype], t.dtype.name, what .. " dtype")
  H.assert_shape(t, e.shape, what)
  local got = H.flatten(t:totable())
  if #e.shape == 0 then got = { t:item() } end
  assert.are.equal(#e.values, #got, what .. " size")
  for i, v in ipairs(e.values) do
    assert.are.equal(v, got[i], ("%s[%d]"):format(what, i))
  end
end

describe("safetensors round trips", function()
  it("keeps every dtype's values, the order of names and the metadata", function()
    with_dir(function(dir)
      local names, tensors, meta = case(cell)
      local path = dir .. "/all.safetensors"
      core.safetensors_save(path, names, tensors, meta)
      local n2, t2, m2 = core.safetensors_load(path)
      assert.are.same(names, n2)
      assert.are.same(meta, m2)
      for i = 1, #names do
        assert.are.equal(tensors[i].dtype, t2[i].dtype, names[i])
        H.assert_shape(t2[i], tensors[i].shape, names[i])
        assert.is_true(t2[i]:is_contiguous(), names[i])
        if tensors[i]:numel() > 0 then H.assert_values(t2[i], tensors[i]:totable(), nil, names[i]) end
      end
    end)
  end)

  it("round-trips special float values and extreme integers", function()
    with_dir(function(dir)
      local path = dir .. "/special.safetensors"
      local inf, nan = math.huge, 0 / 0
      local f = cell.tensor({ inf, -inf, nan, -0.0, 1e-45, 3.4028234663852886e38 })
      local d = cell.tensor({ 1e308, 5e-324, -inf, nan }, cell.float64)
      local h = cell.tensor({ 65504, -65504, 6e-8, inf }, cell.float16)
      local i = cell.tensor({ -9223372036854775807 - 1, 9223372036854775807 }, cell.int64)
      core.safetensors_save(path, { "f", "d", "h", "i" }, { f, d, h, i })
      local _, t = core.safetensors_load(path)
      local ft, dt = t[1]:totable(), t[2]:totable()
      assert.are.equal(inf, ft[1])
      assert.are.equal(-inf, ft[2])
      assert.is_true(ft[3] ~= ft[3])
      assert.are.equal(-inf, 1 / ft[4]) -- -0 keeps its sign
      assert.are.equal(1.401298464324817e-45, ft[5]) -- float32's smallest subnormal
      assert.are.equal(3.4028234663852886e38, ft[6])
      assert.are.equal(5e-324, dt[2])
      assert.is_true(dt[4] ~= dt[4])
      assert.are.same(h:totable(), t[3]:totable())
      assert.are.equal(i[1], t[4][1])
      assert.are.equal(i[2], t[4][2])
    end)
  end)

  it("writes exactly the committed file, which Python parsed by hand", function()
    with_dir(function(dir)
      local names, tensors, meta = case(cell)
      local path = dir .. "/cell_written.safetensors"
      core.safetensors_save(path, names, tensors, meta)
      assert.are.equal(read_all(DIR .. "cell_written.safetensors"), read_all(path))
    end)
  end)

  it("writes what a hand-written Python reader reads back (when python3 is installed)", function()
    local py = io.popen("command -v python3 2>/dev/null"):read("*l")
    if not py or py == "" then
      pending("no python3 on PATH")
      return
    end
    with_dir(function(dir)
      local names, tensors, meta = case(cell)
      local path = dir .. "/checked.safetensors"
      core.safetensors_save(path, names, tensors, meta)
      local p = io.popen("python3 spec/fixtures/gen_safetensors.py --check '" .. path .. "' 2>&1")
      local lines = {}
      for line in p:lines() do lines[#lines + 1] = line end
      p:close()
      local function hex(s) return (s:gsub(".", function(c) return ("%02x"):format(c:byte()) end)) end
      local keys = {}
      for k in pairs(meta) do keys[#keys + 1] = k end
      table.sort(keys)
      local mparts = {}
      for _, k in ipairs(keys) do mparts[#mparts + 1] = hex(k) .. "=" .. hex(meta[k]) end
      local want = { "meta|" .. table.concat(mparts, ",") }
      for i, t in ipairs(tensors) do
        local vals = {}
        for k, v in ipairs(H.flatten(t:numel() > 0 and t:totable() or {})) do
          if type(v) == "boolean" then vals[k] = v and "1" or "0"
          elseif t.dtype.is_floating_point then vals[k] = ("%.17g"):format(v)
          else vals[k] = ("%d"):format(v) end
        end
        if t.ndim == 0 then vals = { ("%.17g"):format(t:item()) } end
        want[#want + 1] = ("%s|%s|%s|%s"):format(hex(names[i]),
          ({ float32 = "F32", float64 = "F64", float16 = "F16", bfloat16 = "BF16", int8 = "I8", uint8 = "U8", int16 = "I16",
            int32 = "I32", int64 = "I64", bool = "BOOL" })[t.dtype.name], table.concat(t.shape, ","),
          table.concat(vals, ","))
      end
      assert.are.same(want, lines)
    end)
  end)
end)

describe("safetensors files from elsewhere", function()
  for _, which in ipairs { "hand_written", "torch_bytes" } do
    it("reads " .. which .. ".safetensors: names in the header's order, values, metadata", function()
      local fx = FX[which]
      local names, tensors, meta = core.safetensors_load(DIR .. which .. ".safetensors")
      if which == "hand_written" then assert.are.same(fx.order, names) end
      assert.are.same(fx.metadata, meta)
      assert.are.equal(#fx.order, #names)
      local seen = {}
      for i, name in ipairs(names) do
        holds(tensors[i], fx.tensors[name], which .. "." .. name)
        seen[name] = true
      end
      for name in pairs(fx.tensors) do assert.is_true(seen[name], name) end
    end)
  end

  it("lists a PyTorch file's tensors in its data order (larger dtypes first)", function()
    local names = core.safetensors_load(DIR .. "torch_bytes.safetensors")
    assert.are.same(FX.torch_bytes.order, names)
  end)
end)

describe("malformed safetensors files", function()
  local bad = {}
  for name in pairs(FX.bad) do bad[#bad + 1] = name end
  table.sort(bad)
  for _, name in ipairs(bad) do
    it("refuses bad_" .. name .. " with a ValueError naming the file and the fault", function()
      local path = DIR .. "bad_" .. name .. ".safetensors"
      H.expect_error(function() core.safetensors_load(path) end, "ValueError",
        "safetensors: " .. path .. ": ", FX.bad[name])
    end)
  end

  it("has a fixture for each fault the brief lists", function()
    for _, name in ipairs { "truncated", "header_huge", "header_past_end", "not_json", "overlap", "bad_dtype",
      "outside", "duplicate", "size_mismatch" } do
      assert.is_truthy(FX.bad[name], name)
    end
    assert.are.equal("tensor 'w' has data_offsets [0, 12] but shape (2, 3) of F32 needs 24 bytes", FX.bad.size_mismatch)
  end)

  it("names a missing file, and a folder", function()
    H.expect_error(function() core.safetensors_load("no/such/file.safetensors") end, "ValueError",
      "safetensors: no/such/file.safetensors: cannot open: No such file or directory")
    H.expect_error(function() core.safetensors_load("spec") end, "ValueError", "safetensors: spec: not a regular file")
  end)
end)

describe("atomic safetensors saves", function()
  it("replaces an existing file whole, leaving no temporary file", function()
    with_dir(function(dir)
      local path = dir .. "/w.safetensors"
      core.safetensors_save(path, { "big" }, { cell.ones({ 1000, 100 }) })
      core.safetensors_save(path, { "small" }, { cell.tensor({ 1, 2 }) })
      assert.are.same({ "w.safetensors" }, listing(dir))
      local names, t = core.safetensors_load(path)
      assert.are.same({ "small" }, names)
      H.assert_values(t[1], { 1, 2 })
      -- {"small":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}} is 58 bytes, padded to 64
      assert.are.equal(8 + 64 + 8, #read_all(path))
    end)
  end)

  it("fails cleanly in a missing folder, creating nothing", function()
    with_dir(function(dir)
      H.expect_error(function() core.safetensors_save(dir .. "/no/x.safetensors", { "w" }, { cell.ones({ 2 }) }) end,
        "RuntimeError", "safetensors: " .. dir .. "/no/x.safetensors: cannot create a file in its folder: "
        .. "No such file or directory")
      assert.are.same({}, listing(dir))
    end)
  end)

  it("fails cleanly in a read-only folder, leaving the old file", function()
    with_dir(function(dir)
      local path = dir .. "/ro/w.safetensors"
      os.execute("mkdir '" .. dir .. "/ro'")
      core.safetensors_save(path, { "w" }, { cell.ones({ 2 }) })
      local before = read_all(path)
      os.execute("chmod 555 '" .. dir .. "/ro'")
      local probe = io.open(dir .. "/ro/probe", "w")
      if probe then -- root writes anyway: use /proc, which nobody may write
        probe:close()
        os.remove(dir .. "/ro/probe")
        H.expect_error(function() core.safetensors_save("/proc/w.safetensors", { "w" }, { cell.ones({ 2 }) }) end,
          "RuntimeError", "safetensors: /proc/w.safetensors: cannot create a file in its folder")
      else
        H.expect_error(function() core.safetensors_save(path, { "w" }, { cell.zeros({ 3 }) }) end,
          "RuntimeError", "cannot create a file in its folder: Permission denied")
      end
      os.execute("chmod 755 '" .. dir .. "/ro'")
      assert.are.equal(before, read_all(path))
      assert.are.same({ "w.safetensors" }, listing(dir .. "/ro"))
    end)
  end)

  it("does not replace a folder", function()
    with_dir(function(dir)
      os.execute("mkdir '" .. dir .. "/d.safetensors'")
      H.expect_error(function() core.safetensors_save(dir .. "/d.safetensors", { "w" }, { cell.ones({ 2 }) }) end,
        "RuntimeError", "cannot replace the file: Is a directory")
      assert.are.same({ "d.safetensors" }, listing(dir))
    end)
  end)

  it("stops when interrupted, leaving the old file", function()
    with_dir(function(dir)
      local path = dir .. "/w.safetensors"
      core.safetensors_save(path, { "w" }, { cell.ones({ 4 }) })
      local before = read_all(path)
      core._interrupt(true)
      local ok, err = pcall(core.safetensors_save, path, { "w" }, { cell.zeros({ 4 }) })
      core._interrupt(false)
      assert.is_false(ok)
      assert.is_truthy(err:find("KeyboardInterrupt: safetensors: " .. path .. ": saving interrupted", 1, true), err)
      assert.are.equal(before, read_all(path))
      assert.are.same({ "w.safetensors" }, listing(dir))
    end)
  end)
end)

describe("safetensors argument checks", function()
  local path = os.tmpname()
  after_each(function() os.remove(path) end)

  it("refuses bad names before touching the file", function()
    local t = cell.ones({ 2 })
    os.remove(path)
    H.expect_error(function() core.safetensors_save(path, { "w", "w" }, { t, t }) end, "ValueError",
      "tensor name 'w' appears twice")
    H.expect_error(function() core.safetensors_save(path, { "" }, { t }) end, "ValueError", "tensor 1 has an empty name")
    H.expect_error(function() core.safetensors_save(path, { "__metadata__" }, { t }) end, "ValueError",
      "the name '__metadata__' is reserved for the metadata")
    H.expect_error(function() core.safetensors_save(path, { "a\255" }, { t }) end, "ValueError",
      "tensor name 'a\255' is not valid UTF-8")
    H.expect_error(function() core.safetensors_save(path, { "a\0b" }, { t }) end, "ValueError",
      "a tensor name must not contain a NUL byte")
    assert.is_false(exists(path))
  end)

  it("checks the lists and the metadata", function()
    local t = cell.ones({ 2 })
    H.expect_error(function() core.safetensors_save(path, { "a", "b" }, { t }) end, "ValueError", "2 names but 1 tensors")
    H.expect_error(function() core.safetensors_save(path, { "a" }, { 5 }) end, "TypeError",
      "tensor 1 ('a') is not a Tensor but a number")
    H.expect_error(function() core.safetensors_save(path, { 5 }, { t }) end, "TypeError", "a tensor name must be a string")
    H.expect_error(function() core.safetensors_save(path, "a", { t }) end, "TypeError", "expected a list of names")
    H.expect_error(function() core.safetensors_save(path, { "a" }, { t }, { k = 1 }) end, "TypeError",
      "metadata maps strings to strings, got a string key and a number value")
    H.expect_error(function() core.safetensors_save(nil, { "a" }, { t }) end, "TypeError", "path must be a string")
    H.expect_error(function() core.safetensors_load(42) end, "TypeError", "path must be a string")
  end)

  it("sorts metadata keys, so saves are reproducible", function()
    local t = cell.ones({ 1 })
    core.safetensors_save(path, { "w" }, { t }, { zeta = "1", alpha = "2", mid = "3" })
    assert.is_truthy(read_all(path):find('{"__metadata__":{"alpha":"2","mid":"3","zeta":"1"}', 9, true))
  end)
end)

describe("core.isatty", function()
  it("tells whether a standard descriptor is a terminal", function()
    for fd = 0, 2 do assert.are.equal("boolean", type(core.isatty(fd))) end
  end)

  it("refuses other descriptors", function()
    H.expect_error(function() core.isatty(3) end, "ValueError", "expected a descriptor 0 (stdin), 1 (stdout) or 2 (stderr), got 3")
    H.expect_error(function() core.isatty("stdout") end, "TypeError", "expected an integer")
  end)
end)
